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

- :class:`FeetechBackend`: a :class:`~remote_inference_py.hardware.feetech.FeetechBus` plus a
  LeRobot :class:`~remote_inference_py.hardware.calibration.Calibration`. open() connects and
  pings every motor, writes LeRobot's SO-101 register settings, and writes the calibration
  file's homing offsets and position limits to motors that differ from it (what LeRobot does
  when the user accepts the calibration file on connect); the default calibration (no file)
  is never written. Targets are rounded to whole ticks, and write() returns the radians of
  the ticks actually written.
- :class:`SimBackend`: :class:`~remote_inference_py.hardware.sim.So101Sim`; read() steps the
  physics up to the present.

Errors: :class:`BackendError` is a failed operation that may succeed next cycle (already
retried and counted by the driver); :class:`BackendFault` is persistent (the bus refuses
further traffic) and puts the hardware interface in its fault state. open() raises
:class:`BackendOpenError` naming the port, motor or file.
"""

import abc
import dataclasses
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.hardware.calibration import Calibration, CalibrationError
from remote_inference_py.hardware.feetech import (
    BusFaultError, FeetechBus, FeetechBusConfig, FeetechError, ServoCommError,
    ServoStatusError)
from remote_inference_py.hardware.sim import FrameCallback, SimConfig, SimError, So101Sim

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


# Feetech.

@dataclasses.dataclass(frozen=True)
class FeetechSettings:
    """How to reach and drive one Feetech bus."""

    port: str
    joint_names: Tuple[str, ...]
    motor_ids: Tuple[int, ...]
    calibration_file: str = ''
    baudrate: int = 1_000_000
    retries: int = 2
    max_consecutive_failures: int = 3
    latency_timer_ms: float = 16.0
    configure_servos: bool = True


def load_calibration(settings: FeetechSettings) -> Calibration:
    """Return the calibration of the configured joints; errors name the file and motor."""
    if settings.calibration_file:
        calibration = Calibration.load(settings.calibration_file)
    else:
        calibration = Calibration.default_so101()
    for name, motor_id in zip(settings.joint_names, settings.motor_ids):
        if name not in calibration:
            raise CalibrationError(
                f'joint {name!r} is not in the calibration '
                f'{settings.calibration_file or "(default SO-101)"}; calibrated motors: '
                f'{", ".join(calibration.names)}')
        if calibration[name].id != motor_id:
            raise CalibrationError(
                f'joint {name!r}: motor id {motor_id} differs from id '
                f'{calibration[name].id} in the calibration '
                f'{settings.calibration_file or "(default SO-101)"}')
    return calibration


class FeetechBackend(Backend):
    """Feetech STS servos on one serial bus, through LeRobot's calibration."""

    name = 'feetech'

    def __init__(self, settings: FeetechSettings,
                 calibration: Optional[Calibration] = None):
        """Prepare the bus (nothing is opened yet); the calibration defaults to the file's."""
        super().__init__(settings.joint_names)
        self.settings = settings
        self.calibration = calibration if calibration is not None else load_calibration(
            settings)
        self.bus = None
        for index, name in enumerate(self.joint_names):
            self.lower[index], self.upper[index] = self.calibration.radian_limits(name)

    def open(self) -> None:
        """Connect, ping every motor, configure and check the calibration of the servos."""
        settings = self.settings
        try:
            config = FeetechBusConfig(
                port=settings.port, motors=tuple(zip(settings.joint_names, settings.motor_ids)),
                baudrate=settings.baudrate, retries=settings.retries,
                max_consecutive_failures=settings.max_consecutive_failures,
                latency_timer_ms=settings.latency_timer_ms)
        except ValueError as error:
            raise BackendOpenError(str(error)) from None
        bus = FeetechBus(config)
        try:
            bus.connect()
        except FeetechError as error:
            raise BackendOpenError(str(error)) from None
        try:
            if settings.configure_servos:
                bus.configure()
            if settings.calibration_file:
                self._sync_calibration(bus)
        except (FeetechError, ValueError) as error:
            try:
                bus.disconnect(disable_torque=False)
            except FeetechError:
                pass
            raise BackendOpenError(f'configuring the servos on {settings.port!r} failed: '
                                   f'{error}') from None
        self.bus = bus

    def _sync_calibration(self, bus) -> None:
        """Write the file's homing offsets and limits to motors that differ from it."""
        on_motors = bus.read_calibration()
        differing = [name for name in self.joint_names
                     if (on_motors[name].homing_offset, on_motors[name].range_min,
                         on_motors[name].range_max)
                     != (self.calibration[name].homing_offset, self.calibration[name].range_min,
                         self.calibration[name].range_max)]
        if not differing:
            return
        motors = {name: self.calibration[name] for name in self.joint_names}
        bus.write_calibration(Calibration(motors))
        self.warnings.append(
            f'wrote the calibration file {self.settings.calibration_file!r} to motor(s) '
            f'{", ".join(differing)} (homing offset and position limits differed)')

    def _require_bus(self):
        if self.bus is None:
            raise BackendFault(f'servo bus on {self.settings.port!r} is not open')
        return self.bus

    def read(self, now: float) -> Measurement:
        """Read every motor's position in one SYNC_READ and convert it to radians."""
        bus = self._require_bus()
        warning = ''
        before = time.monotonic()
        try:
            ticks = bus.read_positions()
        except ServoStatusError as error:
            ticks, warning = error.positions, str(error)
        except BusFaultError as error:
            raise BackendFault(str(error)) from None
        except ServoCommError as error:
            raise BackendError(str(error)) from None
        except FeetechError as error:
            raise BackendFault(str(error)) from None
        stamp = (before + time.monotonic()) / 2
        calibration = self.calibration
        positions = np.array([calibration.ticks_to_radians(name, ticks[name])
                              for name in self.joint_names])
        return Measurement(positions, stamp, warning)

    def write(self, target: np.ndarray) -> np.ndarray:
        """Write the goal positions (nearest ticks) in one SYNC_WRITE; return their radians."""
        bus = self._require_bus()
        calibration = self.calibration
        top = bus.table.max_position
        ticks = {name: int(min(top, max(0, calibration.radians_to_ticks(name, value))))
                 for name, value in zip(self.joint_names, target)}
        try:
            bus.write_goal_positions(ticks)
        except BusFaultError as error:
            raise BackendFault(str(error)) from None
        except ServoCommError as error:
            raise BackendError(str(error)) from None
        except FeetechError as error:
            raise BackendFault(str(error)) from None
        return np.array([calibration.ticks_to_radians(name, ticks[name])
                         for name in self.joint_names])

    def set_torque(self, enabled: bool) -> None:
        """Switch torque on (goal = present position first) or off on every motor."""
        bus = self._require_bus()
        try:
            if enabled:
                bus.enable_torque()
            else:
                bus.disable_torque()
        except BusFaultError as error:
            raise BackendFault(str(error)) from None
        except ServoStatusError as error:
            raise BackendError(str(error)) from None
        except FeetechError as error:
            raise BackendError(str(error)) from None

    @property
    def torque_enabled(self) -> Optional[bool]:
        """True when every motor has torque on, False when all are off, else None."""
        if self.bus is None:
            return False
        states = set(self.bus.torque_enabled.values())
        return states.pop() if len(states) == 1 else None

    def close(self, disable_torque: bool) -> str:
        """Disconnect (torque off first when asked); return the motors in doubt, or ''."""
        bus, self.bus = self.bus, None
        if bus is None:
            return ''
        try:
            bus.disconnect(disable_torque=disable_torque)
        except FeetechError as error:
            return str(error)
        return ''

    def counters(self) -> Dict[str, int]:
        """Return the non-zero bus counters: timeouts, checksum errors, retries, ..."""
        if self.bus is None:
            return {}
        return {key: value for key, value in self.bus.counters.as_dict().items() if value}


# Simulation.

CubePoseCallback = Callable[[np.ndarray, np.ndarray, float], None]
"""``on_cube_pose(position [m], quaternion wxyz, stamp)``."""


class SimBackend(Backend):
    """The MuJoCo SO-101 arm; its cameras and cube pose go to the given callbacks."""

    name = 'sim'

    def __init__(self, config: SimConfig, on_frame: Optional[FrameCallback] = None,
                 on_cube_pose: Optional[CubePoseCallback] = None,
                 cube_pose_rate_hz: float = 10.0):
        """Keep the sim settings; open() builds the model."""
        super().__init__(config.joint_names)
        self.config = config
        self.sim = None
        self._on_frame = on_frame
        self._on_cube_pose = on_cube_pose
        self._cube_period = 1.0 / cube_pose_rate_hz
        self._next_cube = 0.0
        self._stamp = 0.0

    def open(self) -> None:
        """Build the scene, start real-time stepping and the cameras."""
        try:
            sim = So101Sim(self.config, on_frame=self._on_frame)
            sim.start()
        except SimError as error:
            raise BackendOpenError(str(error)) from None
        self.lower, self.upper = sim.lower.copy(), sim.upper.copy()
        self.sim = sim
        self.notes.append(
            f'SO-101 simulation ready: cube at ({sim.cube_xy[0]:.3f}, {sim.cube_xy[1]:.3f}) m, '
            f'cameras {list(self.config.cameras) if self.config.render else "off"}')

    def _require_sim(self):
        if self.sim is None:
            raise BackendFault('the simulation is not running')
        return self.sim

    def read(self, now: float) -> Measurement:
        """Step the physics up to ``now`` and return the joint positions."""
        sim = self._require_sim()
        self._stamp = sim.advance(now)
        return Measurement(sim.positions(), self._stamp)

    def write(self, target: np.ndarray) -> np.ndarray:
        """Set the position actuators' targets; return them as applied."""
        return self._require_sim().set_targets(target)

    def set_torque(self, enabled: bool) -> None:
        """Power the actuators (holding the present pose) or switch them off."""
        self._require_sim().set_torque(enabled)

    @property
    def torque_enabled(self) -> Optional[bool]:
        """True while the simulated actuators are powered."""
        return self.sim is not None and self.sim.torque_enabled

    def poll(self, now: float) -> None:
        """Report the cube pose at its rate."""
        if self.sim is None or self._on_cube_pose is None or now < self._next_cube:
            return
        self._next_cube = max(self._next_cube + self._cube_period, now - self._cube_period)
        position, orientation = self.sim.cube_pose()
        self._on_cube_pose(position, orientation, self._stamp)

    def close(self, disable_torque: bool) -> str:
        """Stop the cameras and drop the simulation."""
        sim, self.sim = self.sim, None
        if sim is not None:
            sim.close()
        return ''

    def counters(self) -> Dict[str, int]:
        """Return frame and timing counters of the simulation."""
        sim = self.sim
        if sim is None:
            return {}
        counters = {'frames': sim.frames, 'late_frames': sim.late_frames,
                    'skipped_ms': int(sim.skipped_s * 1000)}
        return {key: value for key, value in counters.items() if value}


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
