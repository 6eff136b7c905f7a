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

"""LeRobot-compatible servo calibration and the unit conversions built on it.

A calibration file is LeRobot's JSON: one object per motor name with ``id``, ``drive_mode``,
``homing_offset``, ``range_min`` and ``range_max`` (all integers, ticks for the last three),
so a user reuses the file ``lerobot-calibrate`` wrote for the same arm.

Three views of one servo position:

- **ticks**: the servo's ``Present_Position`` / ``Goal_Position`` (0..4095 on an STS3215;
  the homing offset is applied inside the servo, so ticks are already homed).
- **LeRobot normalized values**, computed exactly as LeRobot's ``MotorsBus._normalize`` and
  ``_unnormalize`` do: ``DEGREES`` is ``(ticks - mid) * 360 / 4095`` with
  ``mid = (range_min + range_max) / 2``, not clamped and without drive mode;
  ``RANGE_0_100`` clamps ticks to the calibrated range, maps it to 0..100 and mirrors it
  (``100 - x``) when ``drive_mode`` is 1; ``RANGE_M100_100`` likewise maps to -100..100 and
  negates. Back to ticks, LeRobot clamps the value to its range (not for degrees) and
  truncates toward zero with ``int()``.
- **SI radians** (REP 103), defined for every joint including the gripper as the DEGREES
  value in radians: ``radians = (ticks - mid) * 360 / 4095 * pi / 180``. Body joint radians
  are therefore exactly LeRobot's degrees times pi/180. Back to ticks, radians are rounded to
  the nearest tick, not truncated, so that ticks -> radians -> ticks is the identity and a
  hold target re-sent every tick cannot creep by one tick per cycle; a command given in
  LeRobot units can thus land one tick (0.088 deg) away from the tick LeRobot would write.
"""

import dataclasses
import enum
import json
import math
import os
from typing import Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from remote_inference_py.robot.control_table import STS3215
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

CALIBRATION_FIELDS: Tuple[str, ...] = (
    'id', 'drive_mode', 'homing_offset', 'range_min', 'range_max')
"""Fields of one motor in a LeRobot calibration file, in LeRobot's order."""

MAX_MOTOR_ID = 252
"""Largest servo id usable on a Feetech bus (253 is reserved, 254 broadcasts)."""

ArrayLike = Union[float, int, Sequence[float], np.ndarray]


class CalibrationError(ValueError):
    """A calibration file or entry is invalid; the message names the motor and field."""


class NormMode(str, enum.Enum):
    """LeRobot's normalization modes (``lerobot.motors.MotorNormMode``)."""

    DEGREES = 'degrees'
    RANGE_0_100 = 'range_0_100'
    RANGE_M100_100 = 'range_m100_100'


@dataclasses.dataclass(frozen=True)
class MotorCalibration:
    """Calibration of one servo, as in LeRobot's ``MotorCalibration``."""

    id: int
    drive_mode: int
    homing_offset: int
    range_min: int
    range_max: int

    def validate(self, name: str, resolution: int = STS3215.resolution) -> None:
        """Raise CalibrationError naming ``name`` and the field if a value is invalid."""
        def fail(field: str, problem: str):
            value = getattr(self, field)
            raise CalibrationError(
                f'motor {name!r}: field {field!r} = {value!r} {problem}')

        max_tick = resolution - 1
        homing_limit = STS3215['Homing_Offset'].max_value
        for field in CALIBRATION_FIELDS:
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                fail(field, 'must be an integer')
        if not 0 <= self.id <= MAX_MOTOR_ID:
            fail('id', f'out of 0..{MAX_MOTOR_ID}')
        if self.drive_mode not in (0, 1):
            fail('drive_mode', 'must be 0 or 1')
        if not -homing_limit <= self.homing_offset <= homing_limit:
            fail('homing_offset', f'out of -{homing_limit}..{homing_limit}')
        for field in ('range_min', 'range_max'):
            if not 0 <= getattr(self, field) <= max_tick:
                fail(field, f'out of 0..{max_tick}')
        if self.range_min >= self.range_max:
            fail('range_min', f'must be below range_max = {self.range_max}')

    @property
    def mid(self) -> float:
        """Middle of the calibrated range in ticks: the zero of degrees and radians."""
        return (self.range_min + self.range_max) / 2

    def to_dict(self) -> Dict[str, int]:
        """Return the LeRobot JSON object of this motor."""
        return {field: getattr(self, field) for field in CALIBRATION_FIELDS}


def _default_norm_modes(names: Iterable[str]) -> Dict[str, NormMode]:
    return {name: NormMode.RANGE_0_100 if name == 'gripper' else NormMode.DEGREES
            for name in names}


def _scalar_or_array(value: np.ndarray, like) -> Union[float, np.ndarray]:
    return float(value) if np.ndim(like) == 0 else value


class Calibration:
    """Calibration of every motor of an arm, with LeRobot's and SI conversions.

    ``norm_modes`` gives each motor's LeRobot normalization; by default the SO-101 follower's
    with ``use_degrees=True``: ``gripper`` in RANGE_0_100, every other motor in DEGREES.
    Conversion methods take a motor name and a scalar or numpy array of values.
    """

    def __init__(self, motors: Mapping[str, MotorCalibration],
                 norm_modes: Optional[Mapping[str, NormMode]] = None,
                 resolution: int = STS3215.resolution):
        """Validate and store the per-motor calibration (ordered as given)."""
        if not motors:
            raise CalibrationError('calibration has no motors')
        self._motors: Dict[str, MotorCalibration] = dict(motors)
        self._resolution = int(resolution)
        for name, motor in self._motors.items():
            if not isinstance(name, str) or not name:
                raise CalibrationError(f'calibration motor name {name!r} is not a string')
            try:
                motor.validate(name, self._resolution)
            except CalibrationError as error:
                raise CalibrationError(f'calibration: {error}') from None
        ids: Dict[int, str] = {}
        for name, motor in self._motors.items():
            if motor.id in ids:
                raise CalibrationError(
                    f'calibration: motor {name!r}: field {CALIBRATION_FIELDS[0]!r} = '
                    f'{motor.id} is also the id of motor {ids[motor.id]!r}')
            ids[motor.id] = name
        modes = _default_norm_modes(self._motors)
        for name, mode in (norm_modes or {}).items():
            self._require(name)
            modes[name] = NormMode(mode)
        self._norm_modes = modes

    # Construction and files.

    @classmethod
    def from_dict(cls, data: object, norm_modes: Optional[Mapping[str, NormMode]] = None,
                  source: str = 'calibration') -> 'Calibration':
        """Build a calibration from LeRobot's JSON structure (motor name -> fields)."""
        if not isinstance(data, Mapping):
            raise CalibrationError(
                f'{source}: expected an object of motor names, got {type(data).__name__}')
        motors = {}
        for name, entry in data.items():
            if not isinstance(entry, Mapping):
                raise CalibrationError(
                    f'{source}: motor {name!r} must be an object with fields '
                    f'{", ".join(CALIBRATION_FIELDS)}')
            missing = [field for field in CALIBRATION_FIELDS if field not in entry]
            if missing:
                raise CalibrationError(
                    f'{source}: motor {name!r} lacks field {missing[0]!r}')
            unknown = [field for field in entry if field not in CALIBRATION_FIELDS]
            if unknown:
                raise CalibrationError(
                    f'{source}: motor {name!r} has unknown field {unknown[0]!r}')
            motor = MotorCalibration(**{field: entry[field] for field in CALIBRATION_FIELDS})
            try:
                motor.validate(name)
            except CalibrationError as error:
                raise CalibrationError(f'{source}: {error}') from None
            motors[name] = motor
        if not motors:
            raise CalibrationError(f'{source}: no motors')
        return cls(motors, norm_modes)

    @classmethod
    def load(cls, path: Union[str, os.PathLike],
             norm_modes: Optional[Mapping[str, NormMode]] = None) -> 'Calibration':
        """Load a LeRobot calibration JSON file."""
        path = os.fspath(path)
        try:
            with open(path, encoding='utf-8') as stream:
                data = json.load(stream)
        except json.JSONDecodeError as error:
            raise CalibrationError(f'calibration file {path!r} is not valid JSON: {error}')
        return cls.from_dict(data, norm_modes, source=f'calibration file {path!r}')

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the calibration as LeRobot does (JSON, 4-space indent, motors in order)."""
        with open(os.fspath(path), 'w', encoding='utf-8') as stream:
            json.dump(self.to_dict(), stream, indent=4)
            stream.write('\n')

    def to_dict(self) -> Dict[str, Dict[str, int]]:
        """Return LeRobot's JSON structure."""
        return {name: motor.to_dict() for name, motor in self._motors.items()}

    @classmethod
    def default_so101(cls) -> 'Calibration':
        """Return the calibration used for an SO-101 when no calibration file is given.

        Motor ids 1..6 in LeRobot's joint order, drive mode 0, homing offset 0 and the full
        encoder range 0..4095 for every joint: 0 rad (0 deg) is tick 2047.5, the middle of
        the encoder, and gripper percent spans the whole turn (tick 0 is 0 %, 4095 is 100 %).
        Use it for simulation or an uncalibrated arm; a real arm should load its own file.
        """
        return cls({
            name: MotorCalibration(id=index + 1, drive_mode=0, homing_offset=0,
                                   range_min=0, range_max=STS3215.max_position)
            for index, name in enumerate(SO101_JOINT_NAMES)})

    # Access.

    def __eq__(self, other: object) -> bool:
        """Compare motors (in order) and normalization modes."""
        if not isinstance(other, Calibration):
            return NotImplemented
        return (list(self._motors.items()) == list(other._motors.items())
                and self._norm_modes == other._norm_modes)

    def __repr__(self) -> str:
        """Return a readable summary."""
        return f'Calibration({self.to_dict()!r})'

    def __getitem__(self, name: str) -> MotorCalibration:
        """Return the calibration of motor ``name`` (ValueError naming it when unknown)."""
        return self._require(name)

    def __contains__(self, name: object) -> bool:
        """Return True if motor ``name`` is calibrated."""
        return name in self._motors

    @property
    def names(self) -> Tuple[str, ...]:
        """Motor names in file order."""
        return tuple(self._motors)

    @property
    def ids(self) -> Dict[str, int]:
        """Motor ids by name."""
        return {name: motor.id for name, motor in self._motors.items()}

    @property
    def resolution(self) -> int:
        """Encoder ticks per turn (4096 on the STS3215)."""
        return self._resolution

    def norm_mode(self, name: str) -> NormMode:
        """Return the LeRobot normalization mode of motor ``name``."""
        self._require(name)
        return self._norm_modes[name]

    def _require(self, name: str) -> MotorCalibration:
        try:
            return self._motors[name]
        except (KeyError, TypeError):
            raise ValueError(
                f'motor {name!r} is not in the calibration; calibrated motors: '
                f'{", ".join(self._motors)}') from None

    # LeRobot normalization (bit-exact with MotorsBus._normalize / _unnormalize).

    def ticks_to_normalized(self, name: str, ticks: ArrayLike) -> Union[float, np.ndarray]:
        """Convert ticks to LeRobot's normalized value of motor ``name``, exactly as LeRobot."""
        motor = self._require(name)
        mode = self._norm_modes[name]
        value = np.asarray(ticks, dtype=np.float64)
        min_, max_ = float(motor.range_min), float(motor.range_max)
        if mode is NormMode.DEGREES:
            result = (value - motor.mid) * 360 / (self._resolution - 1)
        else:
            bounded = np.minimum(max_, np.maximum(min_, value))
            if mode is NormMode.RANGE_0_100:
                norm = ((bounded - min_) / (max_ - min_)) * 100
                result = 100 - norm if motor.drive_mode else norm
            else:
                norm = (((bounded - min_) / (max_ - min_)) * 200) - 100
                result = -norm if motor.drive_mode else norm
        return _scalar_or_array(result, ticks)

    def normalized_to_ticks(self, name: str, value: ArrayLike) -> Union[int, np.ndarray]:
        """Convert LeRobot's normalized value of motor ``name`` to ticks, exactly as LeRobot.

        Like LeRobot, the result is truncated toward zero (``int()``), not rounded.
        """
        result = np.trunc(self._normalized_to_fractional_ticks(name, value))
        if np.ndim(value) == 0:
            return int(result)
        return result.astype(np.int64)

    def _normalized_to_fractional_ticks(self, name: str, value: ArrayLike) -> np.ndarray:
        motor = self._require(name)
        mode = self._norm_modes[name]
        value = np.asarray(value, dtype=np.float64)
        min_, max_ = float(motor.range_min), float(motor.range_max)
        if mode is NormMode.DEGREES:
            return (value * (self._resolution - 1) / 360) + motor.mid
        if mode is NormMode.RANGE_0_100:
            value = 100 - value if motor.drive_mode else value
            bounded = np.minimum(100.0, np.maximum(0.0, value))
            return (bounded / 100) * (max_ - min_) + min_
        value = -value if motor.drive_mode else value
        bounded = np.minimum(100.0, np.maximum(-100.0, value))
        return ((bounded + 100) / 200) * (max_ - min_) + min_

    # SI radians.

    def ticks_to_radians(self, name: str, ticks: ArrayLike) -> Union[float, np.ndarray]:
        """Convert ticks to SI radians: LeRobot's DEGREES value of the motor times pi/180."""
        motor = self._require(name)
        value = np.asarray(ticks, dtype=np.float64)
        degrees = (value - motor.mid) * 360 / (self._resolution - 1)
        return _scalar_or_array(degrees * (math.pi / 180), ticks)

    def radians_to_fractional_ticks(self, name: str,
                                    radians: ArrayLike) -> Union[float, np.ndarray]:
        """Convert SI radians to (unrounded) ticks; the inverse of ticks_to_radians."""
        motor = self._require(name)
        degrees = np.asarray(radians, dtype=np.float64) * (180 / math.pi)
        return _scalar_or_array(degrees * (self._resolution - 1) / 360 + motor.mid, radians)

    def radians_to_ticks(self, name: str, radians: ArrayLike) -> Union[int, np.ndarray]:
        """Convert SI radians to the nearest tick (not clamped to any range)."""
        value = np.asarray(radians, dtype=np.float64)
        if not np.all(np.isfinite(value)):
            raise ValueError(f'motor {name!r}: position {radians!r} rad is not finite')
        ticks = np.rint(self.radians_to_fractional_ticks(name, value))
        if np.ndim(radians) == 0:
            return int(ticks)
        return ticks.astype(np.int64)

    def radian_limits(self, name: str) -> Tuple[float, float]:
        """Return the calibrated range of motor ``name`` in SI radians (low, high)."""
        motor = self._require(name)
        return (self.ticks_to_radians(name, motor.range_min),
                self.ticks_to_radians(name, motor.range_max))

    # Gripper percent in SI terms (used by the policy semantics).

    def radians_to_normalized(self, name: str, radians: ArrayLike) -> Union[float, np.ndarray]:
        """Convert SI radians to LeRobot's normalized value (through unrounded ticks)."""
        if self.norm_mode(name) is NormMode.DEGREES:
            degrees = np.asarray(radians, dtype=np.float64) * (180 / math.pi)
            return _scalar_or_array(degrees, radians)
        return self.ticks_to_normalized(name, self.radians_to_fractional_ticks(name, radians))

    def normalized_to_radians(self, name: str, value: ArrayLike) -> Union[float, np.ndarray]:
        """Convert LeRobot's normalized value to SI radians (through unrounded ticks).

        Applies LeRobot's clamping of RANGE values, but not its truncation to a whole tick.
        """
        if self.norm_mode(name) is NormMode.DEGREES:
            return _scalar_or_array(np.asarray(value, dtype=np.float64) * (math.pi / 180),
                                    value)
        ticks = self._normalized_to_fractional_ticks(name, value)
        return _scalar_or_array(self.ticks_to_radians(name, ticks), value)
