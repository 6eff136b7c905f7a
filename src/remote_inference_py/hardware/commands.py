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

"""Command validation, safety clamps, command watchdog and shutdown timing (no ROS).

The hardware interface node hands every incoming command to :class:`CommandGate`:

1. **Validation** (the whole command is rejected, nothing is applied, the arm keeps its last
   applied target): names matched by name, never by index; an unknown, duplicated or missing
   joint, a length mismatch, a non-finite value, or a value farther than
   ``limit_tolerance`` [rad] beyond a joint limit (an out-of-range value, for example degrees
   sent as radians) raises :class:`CommandRejected` with a reason code from
   :data:`REJECT_REASONS` and a message naming the joint.
2. **Clamping** (:meth:`CommandGate.clamp`): values within the tolerance beyond a limit are
   clamped to the limit; then each joint's target is clamped to ``measured +/-
   max_relative_target`` (LeRobot's ``max_relative_target``, relative to the measured
   position; 0 disables it); joint limits win over the relative clamp when the measured
   position itself lies outside the limits.

:class:`CommandWatchdog` notices when commands stop arriving while the arm is active (the
driver then holds the last applied target), and :class:`ShutdownTimer` decides when a stopping
driver may stop applying commands: after ``grace_s`` at most, or once no command has arrived
for ``quiet_s``, so an executor returning the arm to its initial position at the same time
can finish.
"""

import dataclasses
import math
from typing import Optional, Sequence, Tuple

import numpy as np

REJECT_REASONS: Tuple[str, ...] = (
    'unknown_joint', 'missing_joint', 'duplicate_joint', 'wrong_length', 'non_finite',
    'out_of_range', 'not_active', 'torque_off', 'fault', 'no_measurement')
"""Reason codes of rejected commands (also the keys of the node's rejection counters)."""


class CommandRejected(ValueError):
    """A command was refused as a whole; ``reason`` is one of :data:`REJECT_REASONS`."""

    def __init__(self, reason: str, message: str):
        """Store the reason code and the message naming the joint."""
        super().__init__(message)
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class CommandLimits:
    """What a command may ask for, per joint in ``joint_names`` order.

    ``lower`` and ``upper`` are the joint limits [rad]; ``max_relative_target`` [rad] bounds
    each target's distance from the measured position (0 disables it);
    ``limit_tolerance`` [rad] is how far beyond a limit a target is clamped instead of
    rejected as out of range.
    """

    joint_names: Tuple[str, ...]
    lower: Tuple[float, ...]
    upper: Tuple[float, ...]
    max_relative_target: float = 0.0
    limit_tolerance: float = 0.2

    def __post_init__(self):
        """Validate every field; errors name the joint or field."""
        names = tuple(self.joint_names)
        object.__setattr__(self, 'joint_names', names)
        object.__setattr__(self, 'lower', tuple(float(v) for v in self.lower))
        object.__setattr__(self, 'upper', tuple(float(v) for v in self.upper))
        if not names:
            raise ValueError('joint_names must name at least one joint')
        for index, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise ValueError(f'joint name {name!r} is not a non-empty string')
            if name in names[:index]:
                raise ValueError(f'joint {name!r} appears twice in joint_names')
        for field in ('lower', 'upper'):
            if len(getattr(self, field)) != len(names):
                raise ValueError(
                    f'{len(getattr(self, field))} {field} limits for {len(names)} joints '
                    f'({", ".join(names)})')
        for name, low, high in zip(names, self.lower, self.upper):
            if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
                raise ValueError(
                    f'joint {name!r}: limits [{low}, {high}] rad are not a finite interval')
        for field in ('max_relative_target', 'limit_tolerance'):
            value = getattr(self, field)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'{field} must be a finite value >= 0, got {value!r}')


@dataclasses.dataclass(frozen=True)
class Clamped:
    """A target after the safety clamps, and which joints the clamps changed."""

    target: np.ndarray
    limited_joints: Tuple[str, ...] = ()
    relative_joints: Tuple[str, ...] = ()

    @property
    def clamped(self) -> bool:
        """True when a clamp changed the target."""
        return bool(self.limited_joints or self.relative_joints)


class CommandGate:
    """Validate commands by name or in declared order, and clamp them for safety."""

    def __init__(self, limits: CommandLimits):
        """Use ``limits`` for every command."""
        self.limits = limits
        self._index = {name: i for i, name in enumerate(limits.joint_names)}
        self._lower = np.asarray(limits.lower, dtype=np.float64)
        self._upper = np.asarray(limits.upper, dtype=np.float64)

    @property
    def joint_names(self) -> Tuple[str, ...]:
        """Joint order of every returned target."""
        return self.limits.joint_names

    def from_names(self, names: Sequence[str], positions: Sequence[float]) -> np.ndarray:
        """Return the target of a by-name command in joint order, or raise CommandRejected."""
        names = list(names)
        if len(positions) != len(names):
            raise CommandRejected(
                'wrong_length',
                f'command has {len(names)} names but {len(positions)} positions')
        seen = set()
        for name in names:
            if name not in self._index:
                raise CommandRejected(
                    'unknown_joint',
                    f'unknown joint {name!r} in command; joints: '
                    f'{", ".join(self.joint_names)}')
            if name in seen:
                raise CommandRejected('duplicate_joint',
                                      f'joint {name!r} appears twice in command')
            seen.add(name)
        for name in self.joint_names:
            if name not in seen:
                raise CommandRejected('missing_joint', f'joint {name!r} missing from command')
        order = {name: i for i, name in enumerate(names)}
        target = np.array([positions[order[name]] for name in self.joint_names],
                          dtype=np.float64)
        self._check_values(target)
        return target

    def from_array(self, values: Sequence[float]) -> np.ndarray:
        """Return the target of a command given in declared joint order, or raise."""
        if len(values) != len(self.joint_names):
            raise CommandRejected(
                'wrong_length',
                f'command has {len(values)} values for {len(self.joint_names)} joints '
                f'({", ".join(self.joint_names)})')
        target = np.array(values, dtype=np.float64)
        self._check_values(target)
        return target

    def _check_values(self, target: np.ndarray) -> None:
        finite = np.isfinite(target)
        if not finite.all():
            name = self.joint_names[int(np.argmin(finite))]
            raise CommandRejected(
                'non_finite', f'joint {name!r} has a non-finite target '
                f'{target[self._index[name]]!r}')
        tolerance = self.limits.limit_tolerance
        outside = (target < self._lower - tolerance) | (target > self._upper + tolerance)
        if outside.any():
            index = int(np.argmax(outside))
            raise CommandRejected(
                'out_of_range',
                f'joint {self.joint_names[index]!r} target {target[index]:.4f} rad is out of '
                f'range [{self._lower[index]:.4f}, {self._upper[index]:.4f}] rad (tolerance '
                f'{tolerance} rad)')

    def clamp(self, target: np.ndarray, measured: Optional[np.ndarray]) -> Clamped:
        """Clamp a validated target to the joint limits and around the measured position."""
        target = np.asarray(target, dtype=np.float64)
        limited = np.clip(target, self._lower, self._upper)
        limited_mask = limited != target
        result = limited
        relative_mask = np.zeros(len(target), dtype=bool)
        step = self.limits.max_relative_target
        if step > 0 and measured is not None:
            measured = np.asarray(measured, dtype=np.float64)
            relative = np.clip(limited, measured - step, measured + step)
            relative_mask = relative != limited
            result = np.clip(relative, self._lower, self._upper)
        names = self.joint_names
        return Clamped(
            target=result,
            limited_joints=tuple(n for n, hit in zip(names, limited_mask) if hit),
            relative_joints=tuple(n for n, hit in zip(names, relative_mask) if hit))


class CommandWatchdog:
    """Notice when commands stop arriving; armed by the first command after arm()."""

    def __init__(self, timeout_s: float):
        """Trip after ``timeout_s`` without a command."""
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f'command timeout must be > 0 s, got {timeout_s!r}')
        self.timeout_s = float(timeout_s)
        self._last: Optional[float] = None
        self._holding = False
        self.trips = 0

    @property
    def holding(self) -> bool:
        """True after the watchdog tripped, until the next command."""
        return self._holding

    def reset(self) -> None:
        """Disarm: no command seen yet (on activation)."""
        self._last = None
        self._holding = False

    def on_command(self, now: float) -> bool:
        """Record a command at ``now``; return True when it ends a watchdog hold."""
        resumed = self._holding
        self._last = now
        self._holding = False
        return resumed

    def check(self, now: float) -> bool:
        """Return True exactly once when commands have stopped for the timeout."""
        if self._last is None or self._holding:
            return False
        if now - self._last >= self.timeout_s:
            self._holding = True
            self.trips += 1
            return True
        return False


class ShutdownTimer:
    """Decide when a stopping driver stops applying commands.

    Started at ``started``: done once ``grace_s`` has passed, or once no command has arrived
    for ``quiet_s`` (counted from the later of ``started`` and the last command).
    """

    def __init__(self, started: float, grace_s: float, quiet_s: float):
        """Start the timer."""
        self.started = float(started)
        self.grace_s = max(0.0, float(grace_s))
        self.quiet_s = max(0.0, float(quiet_s))

    def done(self, now: float, last_command: Optional[float]) -> bool:
        """Return True when commands should no longer be applied."""
        if now - self.started >= self.grace_s:
            return True
        quiet_since = self.started if last_command is None else max(self.started, last_command)
        return now - quiet_since >= self.quiet_s
