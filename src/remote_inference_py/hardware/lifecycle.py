# Copyright 2026 remote_inference contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""The hardware runner's states and the ways between them: torque, fault, shutdown (no ROS).

Two parts of :class:`.runner.HardwareRunner`:

- :class:`CommandSlot` hands commands from the node's threads to the worker thread: the
  newest one waits in the slot (one arriving before the last was applied replaces it,
  counted as ``commands_superseded``), and so do a request to stop (the shutdown sequence)
  and one to quit at once. The worker thread waits on it for whichever comes first, or for
  its next read.
- :class:`Lifecycle` owns the state (``inactive``, ``active``, ``fault``, ``shutting_down``,
  ``finalized``) and every move between them with what it does to the arm: ``activate``
  switches torque on and starts applying commands, ``deactivate`` stops (the arm holds its
  last target), ``fault`` stops for good (the arm holds, or torque goes off with
  ``disable_torque_on_fault``), the shutdown keeps applying commands for up to
  ``shutdown_grace_s`` until none arrived for ``shutdown_quiet_s``, and closing the backend
  ends in ``finalized`` (torque off when asked). Every move drops the command waiting in the
  slot: a command validated for the state before is not applied in the one after.
"""

import threading
from typing import Optional, Tuple

import numpy as np

from remote_inference_py.hardware.backend import Backend, BackendError, BackendFault
from remote_inference_py.hardware.commands import CommandWatchdog, ShutdownTimer
from remote_inference_py.hardware.report import RunnerReport

STATES = ('inactive', 'active', 'fault', 'shutting_down', 'finalized')


class CommandSlot:
    """The newest command, a stop and a quit, waiting for the worker thread."""

    def __init__(self, report: RunnerReport):
        """Start empty; superseded commands are counted in ``report``."""
        self.cond = threading.Condition()
        self.report = report
        self._target: Optional[np.ndarray] = None
        self.last_arrival: Optional[float] = None
        self.shutdown_reason: Optional[str] = None
        self._shutdown_taken = False
        self._quit = False

    def put(self, target: np.ndarray, now: float) -> None:
        """Leave a validated target for the thread; it replaces one not applied yet."""
        with self.cond:
            if self._target is not None:
                self.report.counters['commands_superseded'] += 1
            self._target = target
            self.last_arrival = now
            self.cond.notify()

    def clear(self) -> None:
        """Drop the target waiting, if any."""
        with self.cond:
            self._target = None

    def request_shutdown(self, reason: str) -> None:
        """Ask the thread to start the shutdown sequence (the first reason is kept)."""
        with self.cond:
            if self.shutdown_reason is None:
                self.shutdown_reason = reason
            self.cond.notify()

    def request_quit(self) -> None:
        """Ask the thread to end at once."""
        with self.cond:
            self._quit = True
            self.cond.notify()

    def take_shutdown(self) -> Optional[str]:
        """Return the shutdown reason once, the first time after it was asked; else None."""
        with self.cond:
            if self.shutdown_reason is None or self._shutdown_taken:
                return None
            self._shutdown_taken = True
            return self.shutdown_reason

    def wait(self, until: float, clock) -> Tuple[bool, Optional[np.ndarray]]:
        """Wait until ``until`` (``clock`` time) or something to do; take the target.

        Return (quit, target): quit when asked to end at once, target the command waiting
        (None when none). A shutdown asked and not taken yet ends the wait too.
        """
        with self.cond:
            while not (self._quit or self._target is not None
                       or (self.shutdown_reason is not None and not self._shutdown_taken)):
                remaining = until - clock()
                if remaining <= 0:
                    break
                self.cond.wait(remaining)
            if self._quit:
                return True, None
            target, self._target = self._target, None
            return False, target


class Lifecycle:
    """The runner's state, torque, fault, shutdown and close (see the module doc)."""

    def __init__(self, backend: Backend, settings, sink, report: RunnerReport,
                 slot: CommandSlot, watchdog: CommandWatchdog):
        """Start ``inactive``; ``settings`` are the runner's (torque and shutdown choices)."""
        self.backend = backend
        self.settings = settings
        self.sink = sink
        self.report = report
        self.slot = slot
        self.watchdog = watchdog
        self.state = 'inactive'
        self.faulted = False
        self.close_problem = ''
        self.shutdown_timer: Optional[ShutdownTimer] = None
        self._closed = False

    def activate(self) -> None:
        """Switch torque on (holding the present pose) and start applying commands.

        Raises BackendError or BackendFault when torque cannot be switched on.
        """
        with self.slot.cond:
            if self.state == 'fault':
                raise BackendFault(f'cannot activate in fault: {self.report.message}')
            if self.state != 'inactive':
                return
        try:
            self.backend.set_torque(True)
        except BackendFault as error:
            self.fault(str(error))
            raise
        with self.slot.cond:
            self.watchdog.reset()
            self.slot.clear()
            self.state = 'active'
        self.sink.on_status()

    def deactivate(self) -> None:
        """Stop applying commands; the arm holds its last target (torque stays on)."""
        with self.slot.cond:
            if self.state != 'active':
                return
            self.state = 'inactive'
            self.slot.clear()
        self.sink.on_status()

    def set_torque(self, enabled: bool) -> None:
        """Switch torque on (holding the present pose) or off; raises BackendError/Fault."""
        if self.state in ('fault', 'finalized') and enabled:
            raise BackendFault(f'cannot enable torque in state {self.state}: '
                               f'{self.report.message}')
        try:
            self.backend.set_torque(enabled)
        except BackendFault as error:
            self.fault(str(error))
            raise
        finally:
            self.sink.on_status()
        with self.slot.cond:
            self.slot.clear()
            if enabled:
                self.watchdog.reset()

    def fault(self, message: str) -> None:
        """Stop for good: refuse commands, hold (or torque off), until closed and reopened."""
        with self.slot.cond:
            if self.state in ('fault', 'finalized'):
                return
            self.state = 'fault'
            self.slot.clear()
            self.faulted = True
        log = self.report.log
        log('error', f'fault: {message}; commands are refused until the driver is '
                     'cleaned up and configured again')
        if self.settings.disable_torque_on_fault:
            try:
                self.backend.set_torque(False)
                log('warning', 'torque switched off after the fault')
            except (BackendError, BackendFault) as error:
                log('error', f'could not switch torque off after the fault: {error}')
        else:
            log('warning', 'holding: the servos keep their last goal position')
        self.report.message = f'fault: {message}'
        self.sink.on_status()

    def begin_stopping(self, now: float, reason: str) -> bool:
        """Enter shutting_down (active) or finish at once; return False when finished."""
        with self.slot.cond:
            state = self.state
            self.shutdown_timer = ShutdownTimer(now, self.settings.shutdown_grace_s,
                                                self.settings.shutdown_quiet_s)
            if state == 'active':
                self.state = 'shutting_down'
        if state == 'active':
            self.report.log('info', f'stopping ({reason}): applying commands for up to '
                                    f'{self.settings.shutdown_grace_s:.1f} s until none '
                                    f'arrives for {self.settings.shutdown_quiet_s:.1f} s')
            self.sink.on_status()
            return True
        self.finish_stopping()
        return False

    def stopping_done(self, now: float) -> bool:
        """Return True when a started shutdown should stop applying commands now."""
        timer = self.shutdown_timer
        return timer is not None and (self.state != 'shutting_down'
                                      or timer.done(now, self.slot.last_arrival))

    def finish_stopping(self) -> None:
        """Hold the last target, close the backend (torque as configured) and say so."""
        torque = self.settings.disable_torque_on_shutdown
        self.report.log('info', 'stopped applying commands; holding the last target and '
                                f'closing the {self.backend.name} backend'
                                f'{" with torque off" if torque else " (torque stays on)"}')
        self.close_backend(torque)
        self.sink.on_finished()

    def close_backend(self, disable_torque: bool) -> str:
        """Close the backend once (torque off when asked); return any problem."""
        with self.slot.cond:
            if self._closed:
                return self.close_problem
            self._closed = True
        problem = self.backend.close(disable_torque)
        if problem:
            self.close_problem = problem
            self.report.log('error', f'closing the {self.backend.name} backend: {problem}')
        with self.slot.cond:
            self.state = 'finalized'
            if problem:
                self.report.message = problem
        self.sink.on_status()
        return problem
