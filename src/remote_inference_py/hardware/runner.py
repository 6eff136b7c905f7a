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

"""The hardware interface's worker thread over a backend (no ROS).

:class:`HardwareRunner` owns an open :class:`~remote_inference_py.hardware.backend.Backend`
and one thread that does all of its periodic I/O, so no ROS callback ever waits on the bus
or the physics:

- every ``1 / publish_rate_hz`` it reads the joint positions (the sim steps its physics up
  to the present first) and hands them to the sink;
- a command handed in by :meth:`HardwareRunner.command_by_name` or
  :meth:`HardwareRunner.command_in_order` is validated at once in the caller's thread
  (:class:`~remote_inference_py.hardware.commands.CommandGate`; a rejected command raises
  :class:`~remote_inference_py.hardware.commands.CommandRejected`, is counted and becomes the
  status message, and the arm keeps its last applied target), then applied by the thread as
  soon as it wakes: clamped to the joint limits and to ``max_relative_target`` around the
  latest measured position (at most one read period old), written, and reported to the sink
  as the applied target. When several commands arrive between two writes the newest wins
  (counted as ``superseded``).
- the command watchdog: while active, no command for ``command_timeout_s`` means the arm
  holds the last applied target (the servos keep their goal; logged once per hold);
- a persistent backend failure moves to ``fault``: no more bus traffic, the arm holds its
  last goal (or torque is switched off with ``disable_torque_on_fault``), commands are
  refused; only closing and reopening the backend (lifecycle cleanup + configure) clears it;
- :meth:`HardwareRunner.begin_shutdown` (safe from a signal handler): while active, keep
  applying commands for up to ``shutdown_grace_s`` until none has arrived for
  ``shutdown_quiet_s`` (an executor returns the arm to its initial pose at the same time),
  then hold and close the backend, torque off when ``disable_torque_on_shutdown``.

States: ``inactive`` (reading, commands refused), ``active``, ``fault``, ``shutting_down``,
``finalized`` (backend closed).

The runner is the composition of parts that each own one concern and are tested alone; it
keeps the worker thread itself (the read loop: read, apply, watchdog, end of a shutdown) and
the latest measured and applied positions:

- :class:`~.safety.CommandSafety`: the command checks, the clamps and the watchdog;
- :class:`~.lifecycle.CommandSlot`: the hand-off of the newest command, a stop and a quit to
  the worker thread;
- :class:`~.lifecycle.Lifecycle`: the states and the moves between them (torque, fault,
  shutdown, closing the backend);
- :class:`~.report.RunnerReport`: the status message, throttled log lines, the counters and
  the summary line.
"""

import threading
import time
from typing import Callable, Dict, Optional, Sequence

import numpy as np

from remote_inference_py.hardware.backend import Backend, BackendError, BackendFault
from remote_inference_py.hardware.commands import CommandLimits, CommandRejected
from remote_inference_py.hardware.config import RunnerSettings
from remote_inference_py.hardware.lifecycle import CommandSlot, Lifecycle, STATES  # noqa: F401
from remote_inference_py.hardware.report import RunnerReport, Throttle  # noqa: F401
from remote_inference_py.hardware.safety import ACCEPTING, CommandSafety


class RunnerSink:
    """Receives the runner's outputs; the node publishes them. Override what you need.

    on_joint_state and on_applied are called from the worker thread; on_status from any
    thread that changed the state, torque or message; on_finished once, after shutdown.
    """

    def on_joint_state(self, positions: np.ndarray, stamp: float) -> None:
        """Publish measured positions [rad] taken at monotonic time ``stamp``."""

    def on_applied(self, target: np.ndarray, stamp: float) -> None:
        """Publish the target [rad] applied at monotonic time ``stamp``."""

    def on_status(self) -> None:
        """Publish the new state, torque or message."""

    def on_finished(self) -> None:
        """Note that the shutdown sequence is complete and the backend closed."""


class HardwareRunner:
    """Read, publish, apply commands, watch for silence and stop safely, in one thread."""

    def __init__(self, backend: Backend, limits: CommandLimits,
                 settings: RunnerSettings = RunnerSettings(),
                 sink: Optional[RunnerSink] = None, logger=None,
                 clock: Callable[[], float] = time.monotonic):
        """Wrap an open backend; start() starts the thread in state ``inactive``."""
        if tuple(limits.joint_names) != tuple(backend.joint_names):
            raise ValueError(f'limits are for joints {list(limits.joint_names)}, the backend '
                             f'drives {list(backend.joint_names)}')
        self.backend = backend
        self.sink = sink or RunnerSink()
        self.log = logger
        self.clock = clock
        self.report = RunnerReport(self.sink.on_status, logger)
        self.safety = CommandSafety(limits, settings.command_timeout_s)
        self.slot = CommandSlot(self.report)
        self.lifecycle = Lifecycle(backend, settings, self.sink, self.report, self.slot,
                                   self.safety.watchdog)
        self._thread: Optional[threading.Thread] = None
        self._measured: Optional[np.ndarray] = None
        self._hold_target: Optional[np.ndarray] = None
        self.counters: Dict[str, int] = self.report.counters
        self.rejected: Dict[str, int] = self.report.rejected

    # State (read from any thread).

    @property
    def settings(self) -> RunnerSettings:
        """The timing and safety settings in use."""
        return self.lifecycle.settings

    @property
    def state(self) -> str:
        """One of :data:`STATES`."""
        return self.lifecycle.state

    @property
    def message(self) -> str:
        """The last error or notice (empty when none)."""
        return self.report.message

    @property
    def faulted(self) -> bool:
        """True once the runner went to fault (or its thread failed)."""
        return self.lifecycle.faulted

    @property
    def close_problem(self) -> str:
        """What went wrong closing the backend (empty when nothing did)."""
        return self.lifecycle.close_problem

    @property
    def limits(self) -> CommandLimits:
        """The limits commands are checked and clamped against."""
        return self.safety.limits

    @property
    def torque_enabled(self) -> Optional[bool]:
        """Torque state of the backend (None when unknown)."""
        if self.state == 'finalized':
            return False
        return self.backend.torque_enabled

    @property
    def position_hold(self) -> bool:
        """True when re-sending the last applied target holds the arm now."""
        return (self.backend.position_hold and self.torque_enabled is True
                and self.state in ACCEPTING)

    @property
    def measured(self) -> Optional[np.ndarray]:
        """The latest measured positions [rad] (None before the first read)."""
        return self._measured

    @property
    def hold_target(self) -> Optional[np.ndarray]:
        """The last applied target [rad] (None before the first command)."""
        return self._hold_target

    # Control (from the node's threads).

    def start(self) -> None:
        """Start the worker thread (reads at once; commands wait for activate())."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name='hardware-runner', daemon=True)
        self._thread.start()

    def activate(self) -> None:
        """Switch torque on (holding the present pose) and start applying commands.

        Raises BackendError or BackendFault when torque cannot be switched on.
        """
        self.lifecycle.activate()

    def deactivate(self) -> None:
        """Stop applying commands; the arm holds its last target (torque stays on)."""
        self.lifecycle.deactivate()

    def set_torque(self, enabled: bool) -> None:
        """Switch torque on (holding the present pose) or off; raises BackendError/Fault."""
        self.lifecycle.set_torque(enabled)
        if enabled:
            self._hold_target = None

    def update(self, settings: RunnerSettings, limits: CommandLimits) -> None:
        """Apply new live settings (validated already) from the next command on."""
        with self.slot.cond:
            self.lifecycle.settings = settings
            self.safety.update(limits, settings.command_timeout_s)

    def command_by_name(self, names: Sequence[str], positions: Sequence[float],
                        now: Optional[float] = None) -> None:
        """Validate a by-name command and queue it; raise CommandRejected when refused."""
        self._submit(lambda gate: gate.from_names(names, positions), now)

    def command_in_order(self, values: Sequence[float], now: Optional[float] = None) -> None:
        """Validate a command in joint order and queue it; raise CommandRejected if refused."""
        self._submit(lambda gate: gate.from_array(values), now)

    def _submit(self, parse, now: Optional[float]) -> None:
        now = self.clock() if now is None else now
        try:
            target = parse(self.safety.gate)
            self.safety.ready(self.state, self.message, self.backend.torque_enabled,
                              self._measured)
        except CommandRejected as rejection:
            self.report.reject(rejection)
            raise
        self.slot.put(target, now)

    def begin_shutdown(self, reason: str) -> None:
        """Start the shutdown sequence; returns at once (safe in a signal handler)."""
        self.slot.request_shutdown(reason)

    @property
    def finished(self) -> bool:
        """True once the backend is closed."""
        return self.state == 'finalized'

    @property
    def running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def close(self, disable_torque: bool, timeout_s: float = 5.0) -> str:
        """Stop the thread and close the backend (at once, no grace); return any problem."""
        self.slot.request_quit()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        return self.lifecycle.close_backend(disable_torque)

    def summary(self) -> str:
        """Return the counters as one line for the periodic log."""
        return self.report.summary(self.backend)

    # The worker thread.

    def _run(self) -> None:
        period = 1.0 / self.settings.publish_rate_hz
        next_read = self.clock()
        lifecycle, log = self.lifecycle, self.report.log
        try:
            while True:
                quit_now, pending = self.slot.wait(next_read, self.clock)
                if quit_now:
                    return
                now = self.clock()
                reason = self.slot.take_shutdown()
                if reason is not None and not lifecycle.begin_stopping(now, reason):
                    return
                if pending is not None and self.state in ACCEPTING:
                    self._apply(pending, now)
                if now >= next_read:
                    if self.state != 'fault':
                        self._read(now)
                    period = 1.0 / self.settings.publish_rate_hz
                    next_read += period
                    if next_read <= now:
                        self.counters['overruns'] += 1
                        next_read = now + period
                watchdog = self.safety.watchdog
                if self.state == 'active' and watchdog.check(now):
                    self.counters['watchdog_holds'] += 1
                    log('info', f'no command for {watchdog.timeout_s:.2f} s: '
                                'holding the last applied target')
                if lifecycle.stopping_done(now):
                    lifecycle.finish_stopping()
                    return
        except Exception as error:  # noqa: B902 - never leave the arm without a safe end
            lifecycle.faulted = True
            self.report.message = f'worker thread failed: {type(error).__name__}: {error}'
            try:
                log('fatal', f'hardware {self.message}; closing the backend')
            finally:
                lifecycle.close_backend(self.settings.disable_torque_on_shutdown)
                self.sink.on_finished()

    def _read(self, now: float) -> None:
        try:
            measurement = self.backend.read(now)
        except BackendFault as error:
            self.lifecycle.fault(str(error))
            return
        except BackendError as error:
            self.counters['read_errors'] += 1
            self.report.set_message(f'read failed: {error}')
            self.report.warn_throttled(
                'read', now, f'{error} (read errors: {self.counters["read_errors"]})')
            return
        self.counters['reads'] += 1
        self._measured = measurement.positions
        if measurement.warning:
            self.report.set_message(measurement.warning)
            self.report.warn_throttled('flags', now, measurement.warning)
        self.sink.on_joint_state(measurement.positions, measurement.stamp)
        self.backend.poll(now)

    def _apply(self, target: np.ndarray, now: float) -> None:
        if self.backend.torque_enabled is not True:
            return
        clamped = self.safety.clamp(target, self._measured)
        try:
            applied = self.backend.write(clamped.target)
        except BackendFault as error:
            self.lifecycle.fault(str(error))
            return
        except BackendError as error:
            self.counters['write_errors'] += 1
            self.report.set_message(f'write failed: {error}')
            self.report.warn_throttled(
                'write', now, f'{error} (write errors: {self.counters["write_errors"]})')
            return
        self._hold_target = applied
        self.counters['commands_applied'] += 1
        if clamped.clamped:
            self.counters['commands_clamped'] += 1
            if self.report.throttle.ready('clamp', now):
                self.report.log('info', f'command clamped {self.safety.describe(clamped)} '
                                        f'(clamped commands: '
                                        f'{self.counters["commands_clamped"]})')
        if self.safety.watchdog.on_command(self.slot.last_arrival or now):
            self.report.log('info', 'commands resumed after a watchdog hold')
        self.sink.on_applied(applied, self.clock())
