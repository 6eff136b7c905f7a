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

"""The Feetech backend: STS servos on one serial bus, through LeRobot's calibration (no ROS).

See :mod:`remote_inference_py.hardware.backend` for what a backend promises. The driver's
errors become the backend's in one place, :func:`backend_error`.
"""

import contextlib
import time
from typing import Dict, Optional

import numpy as np

from remote_inference_py.hardware.backend import (
    Backend, BackendError, BackendFault, BackendOpenError, Measurement)
from remote_inference_py.hardware.feetech import (
    BusFaultError, FeetechBus, FeetechBusConfig, FeetechError, ServoCommError,
    ServoStatusError)
from remote_inference_py.robot.calibration import Calibration, CalibrationError


def backend_error(error: FeetechError) -> RuntimeError:
    """
    Return the backend error a driver error becomes during operation (read, write, torque).

    - :class:`BusFaultError` (too many failed operations in a row; the bus refuses traffic
      until reset): :class:`BackendFault`.
    - any other :class:`ServoCommError` (a timeout, a corrupt reply or a port error that
      outlived its retries) and :class:`ServoStatusError` (a servo flags overload, overheat,
      voltage, ...): :class:`BackendError`, the runner holds and tries again next cycle.
    - :class:`TorqueDisableError` (torque not confirmed off on some motors after the retries)
      and every other :class:`FeetechError` (the bus is not connected, ...):
      :class:`BackendFault`; the motors' state is in doubt or the bus is gone, so the runner
      faults.

    The message is the driver's, which names the port, the operation and the motor.
    """
    if isinstance(error, BusFaultError):
        return BackendFault(str(error))
    if isinstance(error, (ServoCommError, ServoStatusError)):
        return BackendError(str(error))
    return BackendFault(str(error))


@contextlib.contextmanager
def _as_backend_errors():
    """Raise :func:`backend_error` of a driver error raised in the block."""
    try:
        yield
    except FeetechError as error:
        raise backend_error(error) from None


def load_calibration(bus: FeetechBusConfig, calibration_file: str = '') -> Calibration:
    """Return the calibration of the bus's motors; errors name the file and motor."""
    if calibration_file:
        calibration = Calibration.load(calibration_file)
    else:
        calibration = Calibration.default_so101()
    for name, motor_id in bus.motors:
        if name not in calibration:
            raise CalibrationError(
                f'joint {name!r} is not in the calibration '
                f'{calibration_file or "(default SO-101)"}; calibrated motors: '
                f'{", ".join(calibration.names)}')
        if calibration[name].id != motor_id:
            raise CalibrationError(
                f'joint {name!r}: motor id {motor_id} differs from id '
                f'{calibration[name].id} in the calibration '
                f'{calibration_file or "(default SO-101)"}')
    return calibration


class FeetechBackend(Backend):
    """Feetech STS servos on one serial bus, through LeRobot's calibration."""

    name = 'feetech'

    def __init__(self, bus: FeetechBusConfig, calibration_file: str = '',
                 configure_servos: bool = True, calibration: Optional[Calibration] = None):
        """Prepare the bus (nothing is opened yet); the calibration defaults to the file's.

        ``bus`` names the joints (its motors, in order) and how to reach them;
        ``configure_servos`` writes LeRobot's SO-101 servo settings on open, and a
        ``calibration_file`` is also written to the motors that differ from it.
        """
        super().__init__(tuple(name for name, _ in bus.motors))
        self.bus_config = bus
        self.calibration_file = calibration_file
        self.configure_servos = configure_servos
        self.calibration = calibration if calibration is not None else load_calibration(
            bus, calibration_file)
        self.bus = None
        for index, name in enumerate(self.joint_names):
            self.lower[index], self.upper[index] = self.calibration.radian_limits(name)

    def open(self) -> None:
        """Connect, ping every motor, configure and check the calibration of the servos."""
        bus = FeetechBus(self.bus_config)
        try:
            bus.connect()
        except FeetechError as error:
            raise BackendOpenError(str(error)) from None
        try:
            if self.configure_servos:
                bus.configure()
            if self.calibration_file:
                self._sync_calibration(bus)
        except (FeetechError, ValueError) as error:
            try:
                bus.disconnect(disable_torque=False)
            except FeetechError:
                pass
            raise BackendOpenError(f'configuring the servos on {self.bus_config.port!r} '
                                   f'failed: {error}') from None
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
            f'wrote the calibration file {self.calibration_file!r} to motor(s) '
            f'{", ".join(differing)} (homing offset and position limits differed)')

    def _require_bus(self):
        if self.bus is None:
            raise BackendFault(f'servo bus on {self.bus_config.port!r} is not open')
        return self.bus

    def read(self, now: float) -> Measurement:
        """Read every motor's position in one SYNC_READ and convert it to radians."""
        bus = self._require_bus()
        warning = ''
        before = time.monotonic()
        with _as_backend_errors():
            try:
                ticks = bus.read_positions()
            except ServoStatusError as error:   # the positions read are valid: a warning
                ticks, warning = error.positions, str(error)
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
        with _as_backend_errors():
            bus.write_goal_positions(ticks)
        return np.array([calibration.ticks_to_radians(name, ticks[name])
                         for name in self.joint_names])

    def set_torque(self, enabled: bool) -> None:
        """Switch torque on (goal = present position first) or off on every motor."""
        bus = self._require_bus()
        with _as_backend_errors():
            if enabled:
                bus.enable_torque()
            else:
                bus.disable_torque()

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
