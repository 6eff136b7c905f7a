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

"""Which commands may reach the arm, and how far (no ROS).

:class:`CommandSafety` is the part of :class:`.runner.HardwareRunner` that owns the command
checks, over :class:`~.commands.CommandGate` and :class:`~.commands.CommandWatchdog`:

- a command is validated in the caller's thread: its content by ``gate`` (names, length,
  finite values, joint limits), then :meth:`~CommandSafety.ready` checks that the driver may
  take it now: not in fault, active or shutting down, torque on, and a measured position to
  clamp around when ``max_relative_target`` is set. A refusal raises
  :class:`~.commands.CommandRejected` with its reason code;
- :meth:`~CommandSafety.clamp` clamps an accepted target to the joint limits and to
  ``max_relative_target`` around the latest measured position, and
  :meth:`~CommandSafety.describe` says which joints a clamp changed;
- the watchdog notices when commands stop arriving while the arm is active.

New limits and a new watchdog timeout apply from the next command on (:meth:`~.update`).
"""

from typing import Optional

import numpy as np

from remote_inference_py.hardware.commands import (
    Clamped, CommandGate, CommandLimits, CommandRejected, CommandWatchdog)

ACCEPTING = ('active', 'shutting_down')
"""The runner states in which commands are applied."""


class CommandSafety:
    """The command gate, the readiness checks, the clamps and the watchdog."""

    def __init__(self, limits: CommandLimits, command_timeout_s: float):
        """Check commands against ``limits``; hold after ``command_timeout_s`` of silence."""
        self.gate = CommandGate(limits)
        self.watchdog = CommandWatchdog(command_timeout_s)

    @property
    def limits(self) -> CommandLimits:
        """The limits commands are checked and clamped against."""
        return self.gate.limits

    def update(self, limits: CommandLimits, command_timeout_s: float) -> None:
        """Use new limits and watchdog timeout from the next command on."""
        self.gate = CommandGate(limits)
        if command_timeout_s != self.watchdog.timeout_s:
            self.watchdog.timeout_s = command_timeout_s

    def ready(self, state: str, fault_message: str, torque_enabled: Optional[bool],
              measured: Optional[np.ndarray]) -> None:
        """Raise CommandRejected unless the driver may take a valid command now.

        ``state`` is the runner's, ``fault_message`` its message (named in a fault's
        refusal), ``torque_enabled`` the backend's torque, ``measured`` the latest measured
        positions (None before the first read).
        """
        if state == 'fault':
            raise CommandRejected('fault', f'driver in fault ({fault_message})')
        if state not in ACCEPTING:
            raise CommandRejected('not_active', f'driver is {state}; command ignored')
        if torque_enabled is not True:
            raise CommandRejected('torque_off', 'torque is off; call hardware/'
                                  'enable_torque first')
        if measured is None and self.gate.limits.max_relative_target > 0:
            raise CommandRejected('no_measurement', 'no joint position measured yet, so '
                                  'max_relative_target cannot be applied')

    def clamp(self, target: np.ndarray, measured: Optional[np.ndarray]) -> Clamped:
        """Clamp a target to the joint limits and around the measured position."""
        return self.gate.clamp(target, measured)

    def describe(self, clamped: Clamped) -> str:
        """Say which joints a clamp changed, and to what (empty when none)."""
        parts = []
        if clamped.limited_joints:
            parts.append(f'to the joint limits: {", ".join(clamped.limited_joints)}')
        if clamped.relative_joints:
            parts.append(f'to max_relative_target '
                         f'{self.gate.limits.max_relative_target} rad around the '
                         f'measured position: {", ".join(clamped.relative_joints)}')
        return '; '.join(parts)
