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
"""

import dataclasses
import threading
import time
from typing import Callable, Dict, Optional, Sequence

import numpy as np

from remote_inference_py.hardware.backend import (
    Backend, BackendError, BackendFault, describe_counters)
from remote_inference_py.hardware.commands import (
    CommandGate, CommandLimits, CommandRejected, CommandWatchdog, REJECT_REASONS,
    ShutdownTimer)

STATES = ('inactive', 'active', 'fault', 'shutting_down', 'finalized')


@dataclasses.dataclass(frozen=True)
class RunnerSettings:
    """Timing and safety settings of the worker thread (see the module docstring)."""

    publish_rate_hz: float = 50.0
    command_timeout_s: float = 0.5
    shutdown_grace_s: float = 10.0
    shutdown_quiet_s: float = 0.5
    disable_torque_on_shutdown: bool = True
    disable_torque_on_fault: bool = False

    def __post_init__(self):
        """Validate the rates and durations."""
        if not self.publish_rate_hz > 0:
            raise ValueError(f'publish_rate_hz must be > 0, got {self.publish_rate_hz!r}')
        if not self.command_timeout_s > 0:
            raise ValueError(f'command_timeout_s must be > 0, got {self.command_timeout_s!r}')
        for field in ('shutdown_grace_s', 'shutdown_quiet_s'):
            if not getattr(self, field) >= 0:
                raise ValueError(f'{field} must be >= 0, got {getattr(self, field)!r}')


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


class Throttle:
    """Let a message through at most once per period per key."""

    def __init__(self, period_s: float = 1.0):
        """Allow one message per key every ``period_s``."""
        self.period_s = period_s
        self._last: Dict[str, float] = {}

    def ready(self, key: str, now: float) -> bool:
        """Return True (and remember ``now``) when a message for ``key`` may be logged."""
        last = self._last.get(key)
        if last is not None and now - last < self.period_s:
            return False
        self._last[key] = now
        return True


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
        self.settings = settings
        self.sink = sink or RunnerSink()
        self.log = logger
        self.clock = clock
        self._gate = CommandGate(limits)
        self._watchdog = CommandWatchdog(settings.command_timeout_s)
        self._cond = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._state = 'inactive'
        self._message = ''
        self._pending: Optional[np.ndarray] = None
        self._last_arrival: Optional[float] = None
        self._measured: Optional[np.ndarray] = None
        self._hold_target: Optional[np.ndarray] = None
        self._quit = False
        self._shutdown_reason: Optional[str] = None
        self._shutdown_timer: Optional[ShutdownTimer] = None
        self._closed = False
        self._throttle = Throttle()
        self.faulted = False
        self.close_problem = ''
        self.counters: Dict[str, int] = {
            'reads': 0, 'read_errors': 0, 'write_errors': 0, 'commands_applied': 0,
            'commands_clamped': 0, 'commands_superseded': 0, 'watchdog_holds': 0,
            'overruns': 0}
        self.rejected: Dict[str, int] = dict.fromkeys(REJECT_REASONS, 0)

    # State (read from any thread).

    @property
    def state(self) -> str:
        """One of :data:`STATES`."""
        return self._state

    @property
    def message(self) -> str:
        """The last error or notice (empty when none)."""
        return self._message

    @property
    def limits(self) -> CommandLimits:
        """The limits commands are checked and clamped against."""
        return self._gate.limits

    @property
    def torque_enabled(self) -> Optional[bool]:
        """Torque state of the backend (None when unknown)."""
        if self._state == 'finalized':
            return False
        return self.backend.torque_enabled

    @property
    def position_hold(self) -> bool:
        """True when re-sending the last applied target holds the arm now."""
        return (self.backend.position_hold and self.torque_enabled is True
                and self._state in ('active', 'shutting_down'))

    @property
    def measured(self) -> Optional[np.ndarray]:
        """The latest measured positions [rad] (None before the first read)."""
        return self._measured

    @property
    def hold_target(self) -> Optional[np.ndarray]:
        """The last applied target [rad] (None before the first command)."""
        return self._hold_target

    def _log(self, level: str, text: str) -> None:
        # One call per severity: rclpy's logger refuses two severities from one call site.
        log = self.log
        if log is None:
            return
        if level == 'info':
            log.info(text)
        elif level == 'warning':
            log.warning(text)
        elif level == 'error':
            log.error(text)
        else:
            log.fatal(text)

    def _set_message(self, text: str) -> None:
        changed = text != self._message
        self._message = text
        if changed:
            self.sink.on_status()

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
        with self._cond:
            if self._state == 'fault':
                raise BackendFault(f'cannot activate in fault: {self._message}')
            if self._state != 'inactive':
                return
        try:
            self.backend.set_torque(True)
        except BackendFault as error:
            self._fault(str(error))
            raise
        with self._cond:
            self._watchdog.reset()
            self._pending = None
            self._state = 'active'
        self.sink.on_status()

    def deactivate(self) -> None:
        """Stop applying commands; the arm holds its last target (torque stays on)."""
        with self._cond:
            if self._state != 'active':
                return
            self._state = 'inactive'
            self._pending = None
        self.sink.on_status()

    def set_torque(self, enabled: bool) -> None:
        """Switch torque on (holding the present pose) or off; raises BackendError/Fault."""
        if self._state in ('fault', 'finalized') and enabled:
            raise BackendFault(f'cannot enable torque in state {self._state}: {self._message}')
        try:
            self.backend.set_torque(enabled)
        except BackendFault as error:
            self._fault(str(error))
            raise
        finally:
            self.sink.on_status()
        with self._cond:
            self._pending = None
            if enabled:
                self._watchdog.reset()
                self._hold_target = None

    def update(self, settings: RunnerSettings, limits: CommandLimits) -> None:
        """Apply new live settings (validated already) from the next command on."""
        with self._cond:
            self.settings = settings
            self._gate = CommandGate(limits)
            if settings.command_timeout_s != self._watchdog.timeout_s:
                self._watchdog.timeout_s = settings.command_timeout_s

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
            target = parse(self._gate)
            state = self._state
            if state == 'fault':
                raise CommandRejected('fault', f'driver in fault ({self._message})')
            if state not in ('active', 'shutting_down'):
                raise CommandRejected('not_active', f'driver is {state}; command ignored')
            if self.backend.torque_enabled is not True:
                raise CommandRejected('torque_off', 'torque is off; call hardware/'
                                      'enable_torque first')
            if self._measured is None and self._gate.limits.max_relative_target > 0:
                raise CommandRejected('no_measurement', 'no joint position measured yet, so '
                                      'max_relative_target cannot be applied')
        except CommandRejected as rejection:
            self.rejected[rejection.reason] += 1
            self._set_message(f'command rejected ({rejection.reason}): {rejection}')
            raise
        with self._cond:
            if self._pending is not None:
                self.counters['commands_superseded'] += 1
            self._pending = target
            self._last_arrival = now
            self._cond.notify()

    def begin_shutdown(self, reason: str) -> None:
        """Start the shutdown sequence; returns at once (safe in a signal handler)."""
        with self._cond:
            if self._shutdown_reason is None:
                self._shutdown_reason = reason
            self._cond.notify()

    @property
    def finished(self) -> bool:
        """True once the backend is closed."""
        return self._state == 'finalized'

    @property
    def running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def close(self, disable_torque: bool, timeout_s: float = 5.0) -> str:
        """Stop the thread and close the backend (at once, no grace); return any problem."""
        with self._cond:
            self._quit = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        return self._close_backend(disable_torque)

    def _close_backend(self, disable_torque: bool) -> str:
        with self._cond:
            if self._closed:
                return self.close_problem
            self._closed = True
        problem = self.backend.close(disable_torque)
        if problem:
            self.close_problem = problem
            self._log('error', f'closing the {self.backend.name} backend: {problem}')
        with self._cond:
            self._state = 'finalized'
            if problem:
                self._message = problem
        self.sink.on_status()
        return problem

    def summary(self) -> str:
        """Return the counters as one line for the periodic log."""
        counters = {key: value for key, value in self.counters.items() if value}
        rejected = {key: value for key, value in self.rejected.items() if value}
        text = describe_counters(counters)
        if rejected:
            text += f'; rejected: {describe_counters(rejected)}'
        backend = self.backend.counters()
        if backend:
            text += f'; {self.backend.name}: {describe_counters(backend)}'
        return text

    # The worker thread.

    def _run(self) -> None:
        period = 1.0 / self.settings.publish_rate_hz
        next_read = self.clock()
        try:
            while True:
                with self._cond:
                    while not (self._quit or self._pending is not None
                               or (self._shutdown_reason is not None
                                   and self._shutdown_timer is None)):
                        remaining = next_read - self.clock()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                    if self._quit:
                        return
                    pending, self._pending = self._pending, None
                now = self.clock()
                if self._shutdown_reason is not None and self._shutdown_timer is None:
                    if not self._begin_stopping(now):
                        return
                if pending is not None and self._state in ('active', 'shutting_down'):
                    self._apply(pending, now)
                if now >= next_read:
                    if self._state != 'fault':
                        self._read(now)
                    period = 1.0 / self.settings.publish_rate_hz
                    next_read += period
                    if next_read <= now:
                        self.counters['overruns'] += 1
                        next_read = now + period
                if self._state == 'active' and self._watchdog.check(now):
                    self.counters['watchdog_holds'] += 1
                    self._log('info', f'no command for {self._watchdog.timeout_s:.2f} s: '
                                      'holding the last applied target')
                timer = self._shutdown_timer
                if timer is not None and (self._state != 'shutting_down'
                                          or timer.done(now, self._last_arrival)):
                    self._finish_stopping(now)
                    return
        except Exception as error:  # noqa: B902 - never leave the arm without a safe end
            self.faulted = True
            self._message = f'worker thread failed: {type(error).__name__}: {error}'
            try:
                self._log('fatal', f'hardware {self._message}; closing the backend')
            finally:
                self._close_backend(self.settings.disable_torque_on_shutdown)
                self.sink.on_finished()

    def _begin_stopping(self, now: float) -> bool:
        """Enter shutting_down (active) or finish at once; return False when finished."""
        with self._cond:
            state = self._state
            self._shutdown_timer = ShutdownTimer(now, self.settings.shutdown_grace_s,
                                                 self.settings.shutdown_quiet_s)
            if state == 'active':
                self._state = 'shutting_down'
        if state == 'active':
            self._log('info', f'stopping ({self._shutdown_reason}): applying commands for up '
                              f'to {self.settings.shutdown_grace_s:.1f} s until none arrives '
                              f'for {self.settings.shutdown_quiet_s:.1f} s')
            self.sink.on_status()
            return True
        self._finish_stopping(now)
        return False

    def _finish_stopping(self, now: float) -> None:
        torque = self.settings.disable_torque_on_shutdown
        self._log('info', 'stopped applying commands; holding the last target and closing '
                          f'the {self.backend.name} backend'
                          f'{" with torque off" if torque else " (torque stays on)"}')
        self._close_backend(torque)
        self.sink.on_finished()

    def _read(self, now: float) -> None:
        try:
            measurement = self.backend.read(now)
        except BackendFault as error:
            self._fault(str(error))
            return
        except BackendError as error:
            self.counters['read_errors'] += 1
            self._set_message(f'read failed: {error}')
            if self._throttle.ready('read', now):
                self._log('warning', f'{error} (read errors: {self.counters["read_errors"]})')
            return
        self.counters['reads'] += 1
        self._measured = measurement.positions
        if measurement.warning:
            self._set_message(measurement.warning)
            if self._throttle.ready('flags', now):
                self._log('warning', measurement.warning)
        self.sink.on_joint_state(measurement.positions, measurement.stamp)
        self.backend.poll(now)

    def _apply(self, target: np.ndarray, now: float) -> None:
        if self.backend.torque_enabled is not True:
            return
        clamped = self._gate.clamp(target, self._measured)
        try:
            applied = self.backend.write(clamped.target)
        except BackendFault as error:
            self._fault(str(error))
            return
        except BackendError as error:
            self.counters['write_errors'] += 1
            self._set_message(f'write failed: {error}')
            if self._throttle.ready('write', now):
                self._log('warning', f'{error} (write errors: {self.counters["write_errors"]})')
            return
        self._hold_target = applied
        self.counters['commands_applied'] += 1
        if clamped.clamped:
            self.counters['commands_clamped'] += 1
            if self._throttle.ready('clamp', now):
                parts = []
                if clamped.limited_joints:
                    parts.append(f'to the joint limits: {", ".join(clamped.limited_joints)}')
                if clamped.relative_joints:
                    parts.append(f'to max_relative_target '
                                 f'{self._gate.limits.max_relative_target} rad around the '
                                 f'measured position: {", ".join(clamped.relative_joints)}')
                self._log('info', f'command clamped {"; ".join(parts)} '
                                  f'(clamped commands: {self.counters["commands_clamped"]})')
        if self._watchdog.on_command(self._last_arrival or now):
            self._log('info', 'commands resumed after a watchdog hold')
        self.sink.on_applied(applied, self.clock())

    def _fault(self, message: str) -> None:
        with self._cond:
            if self._state in ('fault', 'finalized'):
                return
            self._state = 'fault'
            self._pending = None
            self.faulted = True
        self._log('error', f'fault: {message}; commands are refused until the driver is '
                           'cleaned up and configured again')
        if self.settings.disable_torque_on_fault:
            try:
                self.backend.set_torque(False)
                self._log('warning', 'torque switched off after the fault')
            except (BackendError, BackendFault) as error:
                self._log('error', f'could not switch torque off after the fault: {error}')
        else:
            self._log('warning', 'holding: the servos keep their last goal position')
        self._message = f'fault: {message}'
        self.sink.on_status()
