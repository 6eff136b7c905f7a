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

"""Hold and the return home: what the robot reported, what it holds, and the way back.

:class:`Hold` owns the robot's feedback (the measured pose and its health, the last target
the driver applied, whether actuation failed), the pose measured at start, the last command
sent, and the wait: when it began and whether the starvation grace has run out. The hold
target is the last applied target, else the last command, else the measured pose, taken when
the hold begins and kept until a planned target is dispatched again: a hold re-sends it
unchanged. Kept, because the driver's reports lag the commands: a report of a command sent just
before the hold can arrive during it, and a target that followed the reports would step the arm
forward and back between the two. A pause for text work holds the last command instead
(:meth:`Hold.hold_last_command`): it interrupts motion that was going fine, and the applied
target, a cycle behind, would step the arm back.

:class:`ReturnHome` owns the shutdown: the outcome it ends in (STOPPED or FAULT), the
reason, and the return path, a straight line in joint space from the hold target to the
initial pose at `return_speed_rad_s` for the joint with the farthest to go (and at most
`max_step_rad` per control tick), ending exactly on the initial pose.
"""

import math

import numpy as np

from remote_inference_py.executor.config import ExecutorConfig


class Hold:
    """The robot's feedback, the hold target and the wait."""

    def __init__(self, joint_names):
        """Create with no feedback yet for the joints `joint_names` (in config order)."""
        self.joint_names = tuple(joint_names)
        self.measured = None
        self.measurement_ok = True
        self.applied = None
        self.actuation_failed = False
        self.initial_pose = None
        self.last_command = None
        self.held = None   # the hold target while holding, None while moving
        self.waiting_since = None

    def measure(self, positions):
        """Store a measured pose; return (it was finite, the event its health makes or '').

        A non-finite pose marks the measurement unhealthy (it is not stored) until a finite
        one arrives. A vector of the wrong length raises ValueError.
        """
        vector = self.joint_vector('measured pose', positions)
        problem = first_non_finite(vector, self.joint_names)
        if problem:
            return False, self.measurement_failed(f'{problem} in the measured pose')
        event = '' if self.measurement_ok else 'measurement healthy again'
        self.measurement_ok = True
        self.measured = vector
        return True, event

    def measurement_failed(self, reason: str) -> str:
        """Mark the measurement unhealthy; return the event ('' if it already was)."""
        event = f'measurement unhealthy: {reason}' if self.measurement_ok else ''
        self.measurement_ok = False
        return event

    def apply(self, positions) -> bool:
        """Store the target the driver applied; False (ignored) if not finite."""
        vector = self.joint_vector('applied target', positions)
        if first_non_finite(vector, self.joint_names):
            return False
        self.applied = vector
        return True

    @property
    def can_start(self) -> bool:
        """Return True when a healthy measured pose is known."""
        return self.measured is not None and self.measurement_ok

    def hold_target(self) -> np.ndarray:
        """Return the pose a hold keeps: last applied, else last command, else measured.

        While holding, the target taken when the hold began.
        """
        if self.held is not None:
            return self.held
        if self.applied is not None:
            return self.applied
        if self.last_command is not None:
            return self.last_command
        return self.measured

    def previous_command(self) -> np.ndarray:
        """Return the command the next one moves from."""
        return self.last_command if self.last_command is not None else self.hold_target()

    def hold_command(self) -> np.ndarray:
        """Return (and record as sent) the hold command: the hold target, unchanged."""
        if self.held is None:
            self.held = self.hold_target().copy()
        self.last_command = self.held.copy()
        return self.last_command

    def hold_last_command(self) -> None:
        """Hold the last command from now on (a pause: the arm was moving toward it).

        The driver's applied target lags the commands by its own cycle, so holding it would
        step the arm back; the last command is where the arm is going, and a hold must never
        go back. Before the first command the usual hold target is kept.
        """
        if self.last_command is not None:
            self.held = self.last_command.copy()

    def dispatched(self, command: np.ndarray) -> None:
        """Record `command` as sent: a planned target or a point on the way home; no hold."""
        self.held = None
        self.last_command = command

    def grace_expired(self, now: float, grace_s: float) -> bool:
        """Return True when the wait has lasted longer than `grace_s`."""
        return self.waiting_since is not None and now - self.waiting_since > grace_s

    def can_return(self, config: ExecutorConfig) -> bool:
        """Return True when a return home is configured and safe (healthy, started)."""
        return (config.return_to_initial_position and not self.actuation_failed
                and self.measurement_ok and self.initial_pose is not None)

    def joint_vector(self, what: str, positions) -> np.ndarray:
        """Return `positions` as a float vector; ValueError names `what` if the length is off."""
        vector = np.array(positions, dtype=np.float64).reshape(-1)
        if vector.shape != (len(self.joint_names),):
            raise ValueError(f'{what} has {vector.size} values but joint_names has '
                             f'{len(self.joint_names)}')
        return vector


class ReturnHome:
    """The shutdown in progress: its outcome, its reason, and the path to the initial pose."""

    def __init__(self, faulted: bool, reason: str):
        """Begin a shutdown for `reason` that ends in FAULT if `faulted`, else STOPPED."""
        self.faulted = faulted
        self.reason = reason
        self._path = None
        self._step = 0

    def fault(self, reason: str) -> str:
        """Fault during the return: it still ends home, but in FAULT; return the message."""
        self.faulted = True
        self.reason = reason
        return f'fault: {reason}; still returning to the initial position'

    def message(self, arrived: bool) -> str:
        """Return the state message of the shutdown, on the way or once home."""
        prefix = 'fault: ' if self.faulted else ''
        where = 'returned to' if arrived else 'returning to'
        return f'{prefix}{self.reason}; {where} the initial position'

    def next_command(self, hold: Hold, config: ExecutorConfig):
        """Return (the next point of the path home, True on the last, the event or '').

        The first call lays the path from `hold`'s hold target to its initial pose and
        returns the event describing it; the last point is exactly the initial pose.
        """
        event = ''
        if self._path is None:
            start, goal = hold.hold_target().copy(), hold.initial_pose
            delta = goal - start
            per_tick = min(config.return_speed_rad_s * config.tick_period, config.max_step_rad)
            distance = float(np.max(np.abs(delta)))
            steps = max(1, math.ceil(distance / per_tick - 1e-9))
            self._path = (start, goal, delta, steps)
            event = (f'returning to the initial position: {distance:.3f} rad at most, '
                     f'{steps} ticks ({steps * config.tick_period:.2f} s)')
        start, goal, delta, steps = self._path
        self._step += 1
        if self._step >= steps:
            return goal.copy(), True, event
        return start + delta * (self._step / steps), False, event


def first_non_finite(vector: np.ndarray, names) -> str:
    """Return "non-finite value for joint 'x'" for the first non-finite entry, else ''."""
    bad = np.flatnonzero(~np.isfinite(vector))
    return f"non-finite value for joint '{names[bad[0]]}'" if bad.size else ''
