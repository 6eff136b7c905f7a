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

"""One register of one Feetech motor by name, and a calibration as registers (no ROS).

:class:`Registers` is the part of :class:`.feetech.FeetechBus` that turns register names of
the control table into single-motor reads and writes through the bus's
:class:`~.feetech_link.BusLink` (values decoded and encoded by the table, sign-magnitude
applied; a read-only register is refused by name before anything is sent), keeps each reply's
status flags (:class:`~.feetech_groups.MotorStatus`), and reads or checks a
:class:`~remote_inference_py.robot.calibration.Calibration` as the three registers that hold
it on the servo: ``Homing_Offset``, ``Min_Position_Limit``, ``Max_Position_Limit``, read in
one block per motor (:meth:`Registers.read_block`).
"""

from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from remote_inference_py.hardware.feetech_groups import MotorStatus
from remote_inference_py.hardware.feetech_link import BusLink
from remote_inference_py.robot.calibration import Calibration, MotorCalibration, NormMode
from remote_inference_py.robot.control_table import ControlTable

CALIBRATION_REGISTERS = ('Min_Position_Limit', 'Max_Position_Limit', 'Homing_Offset')
"""The registers that hold a calibration on the servo (addresses 9-12 and 31-32 on the STS3215:
one 24-byte read)."""


class Registers:
    """Register reads and writes by motor name, and the calibration registers."""

    def __init__(self, table: ControlTable, link: BusLink, status: MotorStatus,
                 motor_id: Callable[[str], int]):
        """Use ``table`` over ``link``; ``motor_id(name)`` names an unknown motor."""
        self.table = table
        self.link = link
        self.status = status
        self.motor_id = motor_id

    def read(self, name: str, register: str) -> int:
        """Read one register of motor ``name`` (decoded, sign-magnitude applied)."""
        return self.read_block(name, (register,))[register]

    def write(self, name: str, register: str, value: int, allow_faulted: bool = False) -> None:
        """Write one register of motor ``name`` and wait for the motor's acknowledgement.

        ``allow_faulted`` lets the write through a faulted bus (switching torque off).
        """
        entry = self.table[register]
        if not entry.writable:
            raise ValueError(f'register {register!r} is read-only')
        motor_id = self.motor_id(name)
        data = list(entry.to_bytes(value))
        error = self.link.write(f'write {register}', motor_id, entry.address, data, name,
                                allow_faulted)
        self.status.note(motor_id, error)

    def read_calibration(self, drive_modes: Optional[Mapping[str, int]] = None,
                         norm_modes: Optional[Mapping[str, NormMode]] = None) -> Calibration:
        """Read homing offsets and position limits of every motor into a Calibration.

        The servos do not store LeRobot's ``drive_mode``; it comes from ``drive_modes``
        (default 0, as LeRobot's read_calibration does).
        """
        drive_modes = drive_modes or {}
        motors = {}
        for name, motor_id in self.link.ids.items():
            values = self.read_block(name, CALIBRATION_REGISTERS)
            motors[name] = MotorCalibration(
                id=motor_id, drive_mode=int(drive_modes.get(name, 0)),
                homing_offset=values['Homing_Offset'], range_min=values['Min_Position_Limit'],
                range_max=values['Max_Position_Limit'])
        return Calibration(motors, norm_modes)

    def read_block(self, name: str, registers: Sequence[str]) -> Dict[str, int]:
        """Read ``registers`` of motor ``name`` in one READ spanning them; values by name.

        One reply carries them all, so a late reply to an earlier single-register read (of
        another length) is refused rather than taken for one of them.
        """
        entries = [self.table[register] for register in registers]
        start = min(entry.address for entry in entries)
        end = max(entry.address + entry.size for entry in entries)
        motor_id = self.motor_id(name)
        data, error = self.link.read(f'read {", ".join(registers)}', motor_id, start,
                                     end - start, name)
        self.status.note(motor_id, error)
        values = {}
        for entry in entries:
            offset = entry.address - start
            values[entry.name] = entry.from_bytes(data[offset:offset + entry.size])
        return values

    def calibration_writes(self, calibration: Calibration) -> List[Tuple[str, str, int]]:
        """Return the (motor, register, value) writes of a calibration, motor by motor.

        The calibration must hold exactly the bus motors with the same ids; ValueError names
        the first one that differs.
        """
        ids = self.link.ids
        for name in calibration.names:
            if name not in ids:
                raise ValueError(f'calibration motor {name!r} is not on the bus')
        for name, motor_id in ids.items():
            if name not in calibration:
                raise ValueError(f'motor {name!r} missing from the calibration')
            if calibration[name].id != motor_id:
                raise ValueError(
                    f'motor {name!r}: calibration id {calibration[name].id} differs from the '
                    f'bus id {motor_id}')
        writes = []
        for name in ids:
            motor = calibration[name]
            writes += [(name, 'Homing_Offset', motor.homing_offset),
                       (name, 'Min_Position_Limit', motor.range_min),
                       (name, 'Max_Position_Limit', motor.range_max)]
        return writes
