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

"""What the hardware interface drives: Feetech bus servos or the MuJoCo SO-101 (no ROS).

A :class:`Backend` works in SI units at its boundary: joint positions and targets are radians
in ``joint_names`` order, times are ``time.monotonic()`` seconds. Two implementations:

- ``feetech_backend.FeetechBackend``: a :class:`~remote_inference_py.hardware.feetech.FeetechBus`
  plus a LeRobot :class:`~remote_inference_py.robot.calibration.Calibration`. open() connects and
  pings every motor, writes LeRobot's SO-101 register settings, and writes the calibration
  file's homing offsets and position limits to motors that differ from it (what LeRobot does
  when the user accepts the calibration file on connect); the default calibration (no file)
  is never written. Targets are rounded to whole ticks, and write() returns the radians of
  the ticks actually written.
- ``sim_backend.SimBackend``: :class:`~remote_inference_py.hardware.sim.So101Sim`; read() steps
  the physics up to the present.

Each implementation lives in a module of its own that the hardware node imports only when that
backend is chosen, so ``backend:=sim`` never imports the servo SDK.

Errors: :class:`BackendError` is a failed operation that may succeed next cycle (already
retried and counted by the driver); :class:`BackendFault` is persistent (the bus refuses
further traffic) and puts the hardware interface in its fault state. open() raises
:class:`BackendOpenError` naming the port, motor or file.
"""

import abc
import dataclasses
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np


BACKENDS = ('feetech', 'sim')
"""Names accepted by the ``backend`` parameter."""


class BackendError(RuntimeError):
    """An operation failed this time (retried and counted already); try again next cycle."""


class BackendFault(RuntimeError):
    """The hardware failed persistently; no more reads or writes until it is reopened."""


class BackendOpenError(RuntimeError):
    """The hardware could not be opened; the message names the port, motor or file."""


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Joint positions [rad] measured at monotonic time ``stamp``; ``warning`` if flagged."""

    positions: np.ndarray
    stamp: float
    warning: str = ''


class Backend(abc.ABC):
    """Joint positions in, joint targets out, torque on and off; radians at the boundary."""

    name = ''
    position_hold = True
    """Re-sending the last applied target holds the arm in place."""

    def __init__(self, joint_names: Sequence[str]):
        """Store the joint order."""
        self.joint_names: Tuple[str, ...] = tuple(joint_names)
        self.lower = np.full(len(self.joint_names), -np.pi)
        self.upper = np.full(len(self.joint_names), np.pi)
        self.notes: List[str] = []
        """What open() did that an operator should know (logged by the node)."""
        self.warnings: List[str] = []
        """What open() changed on the hardware (logged as warnings)."""

    @abc.abstractmethod
    def open(self) -> None:
        """Connect (or build) the hardware and learn its joint limits."""

    @abc.abstractmethod
    def read(self, now: float) -> Measurement:
        """Measure the joint positions (the sim steps its physics up to ``now`` first)."""

    @abc.abstractmethod
    def write(self, target: np.ndarray) -> np.ndarray:
        """Apply a target [rad]; return the target as really applied (quantized)."""

    @abc.abstractmethod
    def set_torque(self, enabled: bool) -> None:
        """Switch torque on (holding the present position) or off."""

    @property
    @abc.abstractmethod
    def torque_enabled(self) -> Optional[bool]:
        """True or False, or None when unknown (some motors did not confirm)."""

    @abc.abstractmethod
    def close(self, disable_torque: bool) -> str:
        """Release the hardware; return a problem to report, or ''. Safe to call twice."""

    def poll(self, now: float) -> None:
        """Do periodic extra work after a read (the sim publishes its cube pose)."""

    def counters(self) -> Dict[str, int]:
        """Return error and retry counters for logs."""
        return {}


def check_limits(joint_names: Sequence[str], lower: Sequence[float], upper: Sequence[float],
                 hardware_lower: np.ndarray, hardware_upper: np.ndarray,
                 source: str) -> Tuple[np.ndarray, np.ndarray]:
    """Return configured limits after checking they lie within the hardware's range.

    Raises ValueError naming the joint when a configured limit is beyond what ``source``
    (the calibration or the model) allows, or when the lengths do not match.
    """
    names = list(joint_names)
    for label, values in (('joint_lower_limits', lower), ('joint_upper_limits', upper)):
        if len(values) != len(names):
            raise ValueError(f'{label} has {len(values)} values for {len(names)} joints '
                             f'({", ".join(names)})')
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    margin = 1e-9
    for index, name in enumerate(names):
        if not lower[index] < upper[index]:
            raise ValueError(f'joint {name!r}: lower limit {lower[index]} rad is not below the '
                             f'upper limit {upper[index]} rad')
        if lower[index] < hardware_lower[index] - margin:
            raise ValueError(f'joint {name!r}: joint_lower_limits {lower[index]:.4f} rad is '
                             f'below the {source} range [{hardware_lower[index]:.4f}, '
                             f'{hardware_upper[index]:.4f}] rad')
        if upper[index] > hardware_upper[index] + margin:
            raise ValueError(f'joint {name!r}: joint_upper_limits {upper[index]:.4f} rad is '
                             f'above the {source} range [{hardware_lower[index]:.4f}, '
                             f'{hardware_upper[index]:.4f}] rad')
    return lower, upper


def limits_source(backend: Backend) -> str:
    """Name where a backend's joint limits come from, for error messages."""
    return 'calibrated' if backend.name == 'feetech' else 'model'


def describe_counters(counters: Mapping[str, int]) -> str:
    """Format counters as ``name=value`` pairs (``none`` when empty)."""
    return ', '.join(f'{key}={value}' for key, value in counters.items()) or 'none'
