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

"""Tests of the STS3215 control table, sign-magnitude encoding and SO-101 settings."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
import scservo_sdk as scs

from remote_inference_py.robot.control_table import (
    BAUDRATE_TABLE, ControlTable, decode_sign_magnitude, describe_status_error,
    encode_sign_magnitude, Register, SO101_COMMON_SETTINGS, SO101_GRIPPER_SETTINGS,
    so101_register_settings, SRAM, STATUS_ERROR_BITS, STS3215)


# (name, address, size) from Feetech's STS memory table (FT-SMS-STS e-manual).
FEETECH_STS_TABLE = [
    ('Model_Number', 3, 2),
    ('ID', 5, 1),
    ('Baud_Rate', 6, 1),
    ('Return_Delay_Time', 7, 1),
    ('Response_Status_Level', 8, 1),
    ('Min_Position_Limit', 9, 2),
    ('Max_Position_Limit', 11, 2),
    ('Max_Torque_Limit', 16, 2),
    ('P_Coefficient', 21, 1),
    ('D_Coefficient', 22, 1),
    ('I_Coefficient', 23, 1),
    ('Protection_Current', 28, 2),
    ('Homing_Offset', 31, 2),
    ('Operating_Mode', 33, 1),
    ('Overload_Torque', 36, 1),
    ('Torque_Enable', 40, 1),
    ('Acceleration', 41, 1),
    ('Goal_Position', 42, 2),
    ('Goal_Velocity', 46, 2),
    ('Lock', 55, 1),
    ('Present_Position', 56, 2),
    ('Present_Velocity', 58, 2),
    ('Present_Load', 60, 2),
    ('Present_Voltage', 62, 1),
    ('Present_Temperature', 63, 1),
    ('Status', 65, 1),
    ('Moving', 66, 1),
    ('Present_Current', 69, 2),
    ('Maximum_Acceleration', 85, 1),
]


@pytest.mark.parametrize('name, address, size', FEETECH_STS_TABLE)
def test_addresses_match_feetech_memory_table(name, address, size):
    register = STS3215[name]
    assert (register.address, register.size) == (address, size)


def test_model_facts():
    assert STS3215.model_number == 777
    assert STS3215.resolution == 4096
    assert STS3215.max_position == 4095
    assert BAUDRATE_TABLE[1_000_000] == 0


def test_sign_magnitude_registers():
    assert STS3215['Homing_Offset'].sign_bit == 11
    assert STS3215['Present_Position'].sign_bit == 15
    assert STS3215['Goal_Position'].sign_bit == 15
    assert STS3215['Torque_Enable'].sign_bit is None


def test_read_only_registers():
    for name in ('Model_Number', 'Present_Position', 'Status', 'Moving'):
        assert not STS3215[name].writable
    assert STS3215['Goal_Position'].writable
    assert STS3215['Torque_Enable'].area == SRAM


def test_unknown_register_is_named():
    with pytest.raises(ValueError, match="no register 'Goal_Positon'"):
        STS3215['Goal_Positon']
    assert 'Goal_Position' in STS3215
    assert 'nope' not in STS3215


def test_table_iterates_in_address_order():
    addresses = [register.address for register in STS3215]
    assert addresses == sorted(addresses)


def test_table_rejects_overlap_and_duplicates():
    with pytest.raises(ValueError, match="'B' overlaps 'A'"):
        ControlTable('x', 1, 4096, (Register('A', 10, 2, SRAM), Register('B', 11, 1, SRAM)))
    with pytest.raises(ValueError, match="'A' defined twice"):
        ControlTable('x', 1, 4096, (Register('A', 10, 1, SRAM), Register('A', 12, 1, SRAM)))
    with pytest.raises(ValueError, match='size 3'):
        Register('C', 1, 3, SRAM)


def test_sign_magnitude_examples():
    # -100 with the direction bit 11: 0x800 | 100 = 0x864.
    assert encode_sign_magnitude(-100, 11) == 0x864
    assert decode_sign_magnitude(0x864, 11) == -100
    assert encode_sign_magnitude(2047, 11) == 2047
    assert encode_sign_magnitude(-2047, 11) == 0xFFF
    assert encode_sign_magnitude(0, 15) == 0
    assert decode_sign_magnitude(0x8005, 15) == -5
    with pytest.raises(ValueError, match='magnitude 2048'):
        encode_sign_magnitude(2048, 11)


@given(st.integers(min_value=-32767, max_value=32767))
def test_sign_magnitude_round_trip(value):
    assert decode_sign_magnitude(encode_sign_magnitude(value, 15), 15) == value


def test_register_bytes_are_little_endian():
    assert STS3215['Goal_Position'].to_bytes(2048) == (0x00, 0x08)
    # Homing offset -1195 = 0x800 | 0x4AB = 0xCAB -> bytes AB 0C.
    assert STS3215['Homing_Offset'].to_bytes(-1195) == (0xAB, 0x0C)
    assert STS3215['Homing_Offset'].from_bytes([0xAB, 0x0C]) == -1195
    assert STS3215['Model_Number'].from_bytes([0x09, 0x03]) == 777


def test_register_rejects_bad_values():
    with pytest.raises(ValueError, match="'Torque_Enable': value 256 out of 0..255"):
        STS3215['Torque_Enable'].encode(256)
    with pytest.raises(ValueError, match="'Homing_Offset': value -2048"):
        STS3215['Homing_Offset'].encode(-2048)
    with pytest.raises(ValueError, match='not an integer'):
        STS3215['Goal_Position'].encode(1.5)
    with pytest.raises(ValueError, match='got 1 bytes, expected 2'):
        STS3215['Goal_Position'].from_bytes([1])


def test_status_error_bits_match_the_sdk():
    assert STATUS_ERROR_BITS[scs.ERRBIT_VOLTAGE] == 'voltage'
    assert STATUS_ERROR_BITS[scs.ERRBIT_ANGLE] == 'angle_sensor'
    assert STATUS_ERROR_BITS[scs.ERRBIT_OVERHEAT] == 'overheat'
    assert STATUS_ERROR_BITS[scs.ERRBIT_OVERELE] == 'overcurrent'
    assert STATUS_ERROR_BITS[scs.ERRBIT_OVERLOAD] == 'overload'
    assert describe_status_error(0) == ()
    assert describe_status_error(0x21) == ('voltage', 'overload')
    assert describe_status_error(0x40) == ('bit6',)


def test_so101_settings_are_valid_registers():
    for name in ('shoulder_pan', 'gripper'):
        for register, value in so101_register_settings(name):
            assert STS3215[register].writable
            STS3215[register].encode(value)


def test_so101_settings_match_lerobot():
    settings = dict(SO101_COMMON_SETTINGS)
    assert settings == {
        'Return_Delay_Time': 0, 'Maximum_Acceleration': 254, 'Acceleration': 254,
        'Operating_Mode': 0, 'P_Coefficient': 16, 'I_Coefficient': 0, 'D_Coefficient': 32}
    assert dict(SO101_GRIPPER_SETTINGS) == {
        'Max_Torque_Limit': 500, 'Protection_Current': 250, 'Overload_Torque': 25}
    assert so101_register_settings('elbow_flex') == SO101_COMMON_SETTINGS
    assert so101_register_settings('gripper')[-3:] == SO101_GRIPPER_SETTINGS
