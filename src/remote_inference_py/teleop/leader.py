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

"""
The SO-101 leader arm (no ROS): its settings, its bus, and its positions as the follower's.

A LeRobot user's leader: Feetech STS3215 servos, **torque off on every motor** (the human
moves it by hand), calibrated with ``lerobot-calibrate --teleop.type=so101_leader`` (the same
JSON as a follower's: ``id``, ``drive_mode``, ``homing_offset``, ``range_min``, ``range_max``
per motor). Its positions drive the follower the way ``lerobot-teleoperate`` does with
``use_degrees``: each body joint's degrees from the middle of the leader's calibrated range
become the follower's radians (this package's semantics, SI radians from the middle of the
follower's range), and the gripper's 0..100 of the leader's range becomes the same 0..100 of
the follower's range (through the follower's calibration).

:class:`LeaderArm` reads every motor's position with one SYNC_READ through the real driver
(:class:`~remote_inference_py.hardware.feetech.FeetechBus`, the same SDK path as the follower)
and names what went wrong (:class:`LeaderFault`): ``unplugged`` (the port failed or is gone),
``motor silent`` (a motor did not answer), ``reply corrupt`` (a bad checksum or a truncated
reply). A fault never yields positions: the caller publishes nothing that tick, and the
executor holds the follower.
"""

import dataclasses
from typing import Callable, Optional, Tuple

import numpy as np

from remote_inference_py.common.settings import check_settings, setting
from remote_inference_py.hardware.config import BAUDRATES, FeetechBusConfig
from remote_inference_py.hardware.feetech import FeetechBus
from remote_inference_py.hardware.feetech_link import (
    FeetechConnectionError, FeetechError, MotorNotFoundError, ServoChecksumError,
    ServoPortError, ServoStatusError, ServoTimeoutError)
from remote_inference_py.robot.calibration import Calibration, MAX_MOTOR_ID, NormMode
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

FAULT_KINDS = ('unplugged', 'motor silent', 'reply corrupt', 'bus error')
"""How a leader fault is named (the first words of leader/fault)."""


@dataclasses.dataclass(frozen=True)
class LeaderConfig:
    """Every setting of the leader arm node (each field is one parameter)."""

    port: str = setting(
        '', "Serial port of the leader arm's servo bus, e.g. /dev/ttyACM1 (required).")
    baudrate: int = setting(1000000, 'Leader bus speed.', unit='bit/s', choices=BAUDRATES)
    calibration_file: str = setting(
        '', "The leader's LeRobot calibration JSON (lerobot-calibrate --teleop.type="
        'so101_leader); empty: default calibration (full encoder range).')
    follower_calibration_file: str = setting(
        '', "The follower's LeRobot calibration JSON: maps the leader's gripper 0..100 onto "
        "the follower's gripper range; empty: default calibration.")
    joint_names: Tuple[str, ...] = setting(
        list(SO101_JOINT_NAMES), 'Joint (motor) names in order, as the follower names them.')
    motor_ids: Tuple[int, ...] = setting(
        [1, 2, 3, 4, 5, 6], 'Bus id of each joint in joint_names order.', low=0,
        high=MAX_MOTOR_ID)
    publish_rate_hz: float = setting(
        30.0, 'Rate of leader/joint_states (the executor fps).', unit='Hz', low=1.0,
        high=500.0)
    bus_retries: int = setting(
        1, 'Extra attempts of a failed read before the tick names a fault.', low=0, high=10)
    latency_timer_ms: float = setting(
        16.0, 'USB adapter latency the reply timeout allows for (16 for FTDI, 1-2 for '
        'CH340/CH343).', unit='ms', low=0.0, high=100.0)
    reconnect_period_s: float = setting(
        1.0, 'After the leader was unplugged, try to open its port again this often.',
        unit='s', low=0.1, high=60.0)

    def __post_init__(self):
        """Check every declared setting, then what a range cannot say."""
        check_settings(self)
        if not self.port:
            raise ValueError("parameter 'port' must name the leader's serial port, e.g. "
                             '/dev/ttyACM1')
        if len(self.motor_ids) != len(self.joint_names):
            raise ValueError(f"parameter 'motor_ids' has {len(self.motor_ids)} ids but "
                             f"'joint_names' has {len(self.joint_names)} joints")

    def bus(self) -> FeetechBusConfig:
        """Return the leader bus's configuration (persistent faults never latch: retried)."""
        return FeetechBusConfig(port=self.port, motors=tuple(zip(self.joint_names,
                                                                 self.motor_ids)),
                                baudrate=self.baudrate, retries=self.bus_retries,
                                max_consecutive_failures=1000,
                                latency_timer_ms=self.latency_timer_ms)


class LeaderFault(RuntimeError):
    """The leader cannot be read: ``kind`` is one of FAULT_KINDS, the message names it."""

    def __init__(self, kind: str, detail: str):
        """Name the fault `kind` with `detail` (the driver's words: motor, port, operation)."""
        super().__init__(f'leader {kind}: {detail}')
        self.kind = kind


def name_fault(error: FeetechError) -> LeaderFault:
    """Return the named leader fault of a driver error."""
    if isinstance(error, (ServoPortError, FeetechConnectionError)):
        return LeaderFault('unplugged', str(error))
    if isinstance(error, (ServoTimeoutError, MotorNotFoundError)):
        return LeaderFault('motor silent', str(error))
    if isinstance(error, ServoChecksumError):
        return LeaderFault('reply corrupt', str(error))
    return LeaderFault('bus error', str(error))


class JointMapping:
    """Leader ticks -> follower radians, LeRobot's way (see the module docstring)."""

    def __init__(self, joint_names, leader: Calibration, follower: Calibration):
        """Map `joint_names` through the two calibrations (each must hold every joint)."""
        self.joint_names = tuple(joint_names)
        for which, calibration in (('leader', leader), ('follower', follower)):
            missing = [n for n in self.joint_names if n not in calibration]
            if missing:
                raise ValueError(f'joint {missing[0]!r} is not in the {which} calibration '
                                 f'(calibrated: {", ".join(calibration.names)})')
        self.leader, self.follower = leader, follower

    def to_follower(self, ticks) -> np.ndarray:
        """Return the follower radians [joint_names order] of the leader's ticks by name."""
        out = np.empty(len(self.joint_names))
        for i, name in enumerate(self.joint_names):
            if self.leader.norm_mode(name) is NormMode.DEGREES:
                out[i] = self.leader.ticks_to_radians(name, ticks[name])
            else:   # the gripper: the same fraction of the follower's range
                value = self.leader.ticks_to_normalized(name, ticks[name])
                out[i] = self.follower.normalized_to_radians(name, value)
        return out


def load(path: str) -> Calibration:
    """Return the calibration of `path`, or the default SO-101 one for ''."""
    return Calibration.load(path) if path else Calibration.default_so101()


class LeaderArm:
    """The leader's bus, torque off, read once per tick; faults named, reconnects paced."""

    def __init__(self, config: LeaderConfig,
                 bus_factory: Callable[[FeetechBusConfig], FeetechBus] = FeetechBus):
        """Prepare (nothing is opened): the calibrations are loaded and checked now."""
        self.config = config
        self.mapping = JointMapping(config.joint_names, load(config.calibration_file),
                                    load(config.follower_calibration_file))
        for name, motor_id in zip(config.joint_names, config.motor_ids):
            if self.mapping.leader[name].id != motor_id:
                raise ValueError(f'joint {name!r}: motor id {motor_id} differs from id '
                                 f'{self.mapping.leader[name].id} in the leader calibration')
        self._factory = bus_factory
        self.bus: Optional[FeetechBus] = None
        self.last_open_attempt: Optional[float] = None
        self.warning = ''   # a hardware error flag seen on the last read ('' none)
        self.written: Tuple[str, ...] = ()   # motors the calibration file was written to
        self.closed_by: Optional[LeaderFault] = None   # why the port is closed now

    def open(self, now: float) -> None:
        """Connect, ping every motor and switch torque off on all (LeRobot's leader)."""
        self.last_open_attempt = now
        bus = self._factory(self.config.bus())
        try:
            bus.connect()
            bus.disable_torque()
            if self.config.calibration_file:
                self.written = self._sync_calibration(bus)
        except FeetechError as error:
            try:
                bus.disconnect(disable_torque=False)
            except FeetechError:
                pass
            self.closed_by = name_fault(error)
            raise self.closed_by from None
        self.bus, self.closed_by = bus, None

    def _sync_calibration(self, bus: FeetechBus) -> Tuple[str, ...]:
        """Write the file's homing offsets and limits to the motors that differ (as LeRobot).

        Return the motors written. The servo applies its homing offset itself, so its ticks
        mean what the file says only once they agree.
        """
        leader = self.mapping.leader
        on_motors = bus.read_calibration()
        names = self.config.joint_names
        differing = tuple(name for name in names if (
            on_motors[name].homing_offset, on_motors[name].range_min, on_motors[name].range_max)
            != (leader[name].homing_offset, leader[name].range_min, leader[name].range_max))
        if differing:
            bus.write_calibration(Calibration({name: leader[name] for name in names}))
        return differing

    def read(self, now: float) -> np.ndarray:
        """Return the leader's positions as follower radians, or raise LeaderFault.

        Unplugged (or a motor missing when the port was opened), the port is closed and opened
        again at most every ``reconnect_period_s`` (a re-plugged leader comes back by itself);
        meanwhile each read raises the fault that closed it again.
        """
        if self.bus is None:
            if (self.last_open_attempt is not None
                    and now - self.last_open_attempt < self.config.reconnect_period_s):
                last = self.closed_by or LeaderFault('unplugged', 'the port is closed')
                detail = str(last)[len(f'leader {last.kind}: '):]
                raise LeaderFault(last.kind, f'{detail} (next attempt to open '
                                             f'{self.config.port!r} soon)')
            self.open(now)
        try:
            ticks = self.bus.read_positions()
            self.warning = ''
        except ServoStatusError as error:   # the positions read are valid (a hand, not a load)
            ticks, self.warning = error.positions, str(error)
        except FeetechError as error:
            fault = name_fault(error)
            if fault.kind == 'unplugged':
                self.close()
                self.last_open_attempt, self.closed_by = now, fault
            raise fault from None
        return self.mapping.to_follower(ticks)

    def close(self) -> None:
        """Close the port (torque stays off: it never was on)."""
        bus, self.bus = self.bus, None
        if bus is not None:
            try:
                bus.disconnect(disable_torque=False)
            except FeetechError:
                pass
