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

"""Feetech STS3215 control table as data, plus the register settings an SO-101 needs.

Addresses and sizes follow Feetech's memory table for the magnetic-encoder STS series
(FT-SMS-STS e-manual) and agree with LeRobot's ``motors/feetech/tables.py``; register names
are LeRobot's, so a LeRobot user recognises every one of them. Multi-byte registers are
little-endian (address 2, ``END``, reads 0 on STS servos), which is protocol "end" 0 in
``scservo_sdk.PacketHandler(0)``.

A few registers hold signed values in sign-magnitude form (a direction bit plus a magnitude,
not two's complement): ``Homing_Offset`` uses bit 11, positions and velocities bit 15.

The status byte of every reply carries hardware error flags; see :data:`STATUS_ERROR_BITS`.
"""

import dataclasses
from typing import Dict, Iterator, Mapping, Optional, Tuple

EEPROM = 'eeprom'
"""Area of registers persisted in the servo's flash (written only with ``Lock`` = 0)."""

SRAM = 'sram'
"""Area of registers that are volatile: control and feedback."""

FACTORY = 'factory'
"""Area of factory parameters (LeRobot writes ``Maximum_Acceleration`` from it)."""


def encode_sign_magnitude(value: int, sign_bit: int) -> int:
    """Encode a signed integer in sign-magnitude form with the direction bit at ``sign_bit``.

    Raises ValueError when the magnitude does not fit below the direction bit.
    """
    max_magnitude = (1 << sign_bit) - 1
    magnitude = abs(int(value))
    if magnitude > max_magnitude:
        raise ValueError(
            f'magnitude {magnitude} does not fit in sign-magnitude with sign bit {sign_bit} '
            f'(max {max_magnitude})')
    return ((1 << sign_bit) if value < 0 else 0) | magnitude


def decode_sign_magnitude(raw: int, sign_bit: int) -> int:
    """Decode a sign-magnitude register value whose direction bit is ``sign_bit``."""
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if (raw >> sign_bit) & 1 else magnitude


@dataclasses.dataclass(frozen=True)
class Register:
    """One entry of a servo control table.

    ``sign_bit`` is the direction bit of a sign-magnitude register, None for plain unsigned.
    """

    name: str
    address: int
    size: int
    area: str
    writable: bool = True
    sign_bit: Optional[int] = None
    description: str = ''

    def __post_init__(self):
        """Validate the entry."""
        if self.size not in (1, 2, 4):
            raise ValueError(f'register {self.name!r}: size {self.size} is not 1, 2 or 4')
        if not 0 <= self.address <= 0xFF:
            raise ValueError(f'register {self.name!r}: address {self.address} out of 0..255')
        if self.sign_bit is not None and not 0 < self.sign_bit < 8 * self.size:
            raise ValueError(f'register {self.name!r}: sign bit {self.sign_bit} out of range')

    @property
    def min_value(self) -> int:
        """Smallest value (after decoding) the register can hold."""
        if self.sign_bit is not None:
            return -((1 << self.sign_bit) - 1)
        return 0

    @property
    def max_value(self) -> int:
        """Largest value (after decoding) the register can hold."""
        if self.sign_bit is not None:
            return (1 << self.sign_bit) - 1
        return (1 << (8 * self.size)) - 1

    def encode(self, value: int) -> int:
        """Return the raw unsigned register content for ``value``.

        Raises ValueError naming the register when the value does not fit.
        """
        if isinstance(value, bool) or int(value) != value:
            raise ValueError(f'register {self.name!r}: value {value!r} is not an integer')
        value = int(value)
        if not self.min_value <= value <= self.max_value:
            raise ValueError(
                f'register {self.name!r}: value {value} out of '
                f'{self.min_value}..{self.max_value}')
        if self.sign_bit is not None:
            return encode_sign_magnitude(value, self.sign_bit)
        return value

    def decode(self, raw: int) -> int:
        """Return the value held by the raw unsigned register content ``raw``."""
        if self.sign_bit is not None:
            return decode_sign_magnitude(raw, self.sign_bit)
        return raw

    def to_bytes(self, value: int) -> Tuple[int, ...]:
        """Return the little-endian bytes written to the servo for ``value``."""
        return tuple(self.encode(value).to_bytes(self.size, 'little'))

    def from_bytes(self, data) -> int:
        """Decode the little-endian bytes ``data`` read from the servo."""
        if len(data) != self.size:
            raise ValueError(
                f'register {self.name!r}: got {len(data)} bytes, expected {self.size}')
        return self.decode(int.from_bytes(bytes(data), 'little'))


@dataclasses.dataclass(frozen=True)
class ControlTable:
    """A servo model's control table: registers by name plus model facts."""

    model: str
    model_number: int
    resolution: int
    registers: Tuple[Register, ...]

    def __post_init__(self):
        """Check that names are unique and registers do not overlap."""
        seen: Dict[str, Register] = {}
        used: Dict[int, str] = {}
        for register in self.registers:
            if register.name in seen:
                raise ValueError(f'{self.model}: register {register.name!r} defined twice')
            seen[register.name] = register
            for address in range(register.address, register.address + register.size):
                if address in used:
                    raise ValueError(
                        f'{self.model}: register {register.name!r} overlaps {used[address]!r} '
                        f'at address {address}')
                used[address] = register.name
        object.__setattr__(self, '_by_name', seen)

    def __getitem__(self, name: str) -> Register:
        """Return the register called ``name`` (ValueError naming it when unknown)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(
                f'{self.model} has no register {name!r}; known: '
                f'{", ".join(sorted(self._by_name))}') from None

    def __contains__(self, name: object) -> bool:
        """Return True if a register called ``name`` exists."""
        return name in self._by_name

    def __iter__(self) -> Iterator[Register]:
        """Iterate over the registers in address order."""
        return iter(sorted(self.registers, key=lambda register: register.address))

    @property
    def max_position(self) -> int:
        """Largest encoder reading in ticks (resolution - 1)."""
        return self.resolution - 1


_STS_REGISTERS = (
    # Version information (read only).
    Register('Firmware_Major_Version', 0, 1, EEPROM, writable=False),
    Register('Firmware_Minor_Version', 1, 1, EEPROM, writable=False),
    Register('Model_Number', 3, 2, EEPROM, writable=False,
             description='servo major/minor version bytes read as one word; STS3215 is 777'),
    # EEPROM configuration.
    Register('ID', 5, 1, EEPROM, description='bus id 0..253'),
    Register('Baud_Rate', 6, 1, EEPROM, description='0 = 1 Mbps, see BAUDRATE_TABLE'),
    Register('Return_Delay_Time', 7, 1, EEPROM, description='reply delay in 2 us units'),
    Register('Response_Status_Level', 8, 1, EEPROM,
             description='0: reply to READ and PING only; 1: reply to every instruction'),
    Register('Min_Position_Limit', 9, 2, EEPROM, description='ticks; LeRobot range_min'),
    Register('Max_Position_Limit', 11, 2, EEPROM, description='ticks; LeRobot range_max'),
    Register('Max_Temperature_Limit', 13, 1, EEPROM, description='deg C'),
    Register('Max_Voltage_Limit', 14, 1, EEPROM, description='0.1 V'),
    Register('Min_Voltage_Limit', 15, 1, EEPROM, description='0.1 V'),
    Register('Max_Torque_Limit', 16, 2, EEPROM, description='0.1 % of stall torque'),
    Register('Phase', 18, 1, EEPROM),
    Register('Unloading_Condition', 19, 1, EEPROM),
    Register('LED_Alarm_Condition', 20, 1, EEPROM),
    Register('P_Coefficient', 21, 1, EEPROM),
    Register('D_Coefficient', 22, 1, EEPROM),
    Register('I_Coefficient', 23, 1, EEPROM),
    Register('Minimum_Startup_Force', 24, 2, EEPROM),
    Register('CW_Dead_Zone', 26, 1, EEPROM),
    Register('CCW_Dead_Zone', 27, 1, EEPROM),
    Register('Protection_Current', 28, 2, EEPROM, description='6.5 mA units'),
    Register('Angular_Resolution', 30, 1, EEPROM),
    Register('Homing_Offset', 31, 2, EEPROM, sign_bit=11,
             description='Present_Position = actual position - Homing_Offset'),
    Register('Operating_Mode', 33, 1, EEPROM, description='0 position, 1 velocity, 2 PWM, 3 step'),
    Register('Protective_Torque', 34, 1, EEPROM),
    Register('Protection_Time', 35, 1, EEPROM),
    Register('Overload_Torque', 36, 1, EEPROM),
    Register('Velocity_closed_loop_P_proportional_coefficient', 37, 1, EEPROM),
    Register('Over_Current_Protection_Time', 38, 1, EEPROM),
    Register('Velocity_closed_loop_I_integral_coefficient', 39, 1, EEPROM),
    # SRAM control.
    Register('Torque_Enable', 40, 1, SRAM, description='0 off, 1 on'),
    Register('Acceleration', 41, 1, SRAM),
    Register('Goal_Position', 42, 2, SRAM, sign_bit=15, description='ticks'),
    Register('Goal_Time', 44, 2, SRAM),
    Register('Goal_Velocity', 46, 2, SRAM, sign_bit=15),
    Register('Torque_Limit', 48, 2, SRAM),
    Register('Lock', 55, 1, SRAM, description='1 protects the EEPROM area from writes'),
    # SRAM feedback (read only).
    Register('Present_Position', 56, 2, SRAM, writable=False, sign_bit=15, description='ticks'),
    Register('Present_Velocity', 58, 2, SRAM, writable=False, sign_bit=15),
    Register('Present_Load', 60, 2, SRAM, writable=False),
    Register('Present_Voltage', 62, 1, SRAM, writable=False, description='0.1 V'),
    Register('Present_Temperature', 63, 1, SRAM, writable=False, description='deg C'),
    Register('Status', 65, 1, SRAM, writable=False,
             description='error flags, as STATUS_ERROR_BITS'),
    Register('Moving', 66, 1, SRAM, writable=False, description='1 while moving to the goal'),
    Register('Present_Current', 69, 2, SRAM, writable=False, description='6.5 mA units'),
    # Factory parameters.
    Register('Moving_Velocity_Threshold', 80, 1, FACTORY),
    Register('DTs', 81, 1, FACTORY),
    Register('Velocity_Unit_factor', 82, 1, FACTORY),
    Register('Hts', 83, 1, FACTORY),
    Register('Maximum_Velocity_Limit', 84, 1, FACTORY),
    Register('Maximum_Acceleration', 85, 1, FACTORY),
    Register('Acceleration_Multiplier', 86, 1, FACTORY),
)

STS3215 = ControlTable(model='sts3215', model_number=777, resolution=4096,
                       registers=_STS_REGISTERS)
"""The STS3215 (SO-100 / SO-101 arm servo) control table."""

MODELS: Mapping[str, ControlTable] = {STS3215.model: STS3215}
"""Supported servo models by name."""

BAUDRATE_TABLE: Mapping[int, int] = {
    1_000_000: 0, 500_000: 1, 250_000: 2, 128_000: 3,
    115_200: 4, 57_600: 5, 38_400: 6, 19_200: 7,
}
"""``Baud_Rate`` register value for each bus speed in bit/s."""

STATUS_ERROR_BITS: Mapping[int, str] = {
    0x01: 'voltage',
    0x02: 'angle_sensor',
    0x04: 'overheat',
    0x08: 'overcurrent',
    0x20: 'overload',
}
"""Hardware error flags of the status byte in a reply (and of the ``Status`` register)."""


def describe_status_error(error: int) -> Tuple[str, ...]:
    """Return the names of the error flags set in a status byte (unknown bits as ``bitN``)."""
    names = []
    for bit in range(8):
        mask = 1 << bit
        if error & mask:
            names.append(STATUS_ERROR_BITS.get(mask, f'bit{bit}'))
    return tuple(names)


# Register settings LeRobot applies to every SO-101 follower servo when it configures the arm
# (with torque disabled): the shortest reply delay, the fastest acceleration ramp, position
# mode and softer gains than the factory P = 32 to avoid shaking.
SO101_COMMON_SETTINGS: Tuple[Tuple[str, int], ...] = (
    ('Return_Delay_Time', 0),
    ('Maximum_Acceleration', 254),
    ('Acceleration', 254),
    ('Operating_Mode', 0),
    ('P_Coefficient', 16),
    ('I_Coefficient', 0),
    ('D_Coefficient', 32),
)

# Extra settings for the gripper servo, which stalls on purpose when it grasps: half the
# torque and current limits, and a low overload torque, so a long grasp does not burn it out.
SO101_GRIPPER_SETTINGS: Tuple[Tuple[str, int], ...] = (
    ('Max_Torque_Limit', 500),
    ('Protection_Current', 250),
    ('Overload_Torque', 25),
)


def so101_register_settings(motor_name: str) -> Tuple[Tuple[str, int], ...]:
    """Return the ``(register, value)`` pairs configure() writes to one SO-101 servo."""
    if motor_name == 'gripper':
        return SO101_COMMON_SETTINGS + SO101_GRIPPER_SETTINGS
    return SO101_COMMON_SETTINGS
