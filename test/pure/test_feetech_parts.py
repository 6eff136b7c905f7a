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

"""The parts of the Feetech bus alone: the transaction layer, the group packets, the registers.

The SDK's own port and packet handlers are built but never opened: each attempt here is what
one SDK call returned (the emulated bus in test_feetech_bus.py plays the bytes).
"""

import dataclasses

import pytest
from robot_fixtures import EXAMPLE
import scservo_sdk as scs

from remote_inference_py.hardware.feetech_groups import MotorStatus, SyncGroups
from remote_inference_py.hardware.feetech_link import (
    BusFaultError, BusLink, FeetechError, ServoChecksumError, ServoPortError,
    ServoTimeoutError)
from remote_inference_py.hardware.feetech_registers import Registers
from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.control_table import MODELS
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

MOTORS = tuple((name, index + 1) for index, name in enumerate(SO101_JOINT_NAMES))
TABLE = MODELS['sts3215']
PORT = '/dev/ttyFAKE0'


def link(retries=2, max_failures=3):
    out = BusLink(PORT, MOTORS, retries, max_failures)
    out.handler = scs.PortHandler(PORT)   # never opened: the attempts below stand for it
    return out


def script(*results):
    """An attempt that returns the next (result, payload, failed id) each call."""
    calls = []

    def attempt():
        calls.append(1)
        outcome = results[min(len(calls), len(results)) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
    attempt.calls = calls
    return attempt


# ---------------------------------------------------------------------------- BusLink

def test_a_failed_attempt_is_retried_and_counted_and_the_success_recovers():
    bus = link()
    attempt = script((scs.COMM_RX_TIMEOUT, None, None), (scs.COMM_RX_CORRUPT, None, None),
                     (scs.COMM_SUCCESS, 'reply', None))
    assert bus.run('read X', attempt, motor='gripper') == 'reply'
    counters = bus.counters
    assert (counters['transactions'], counters['retries'], counters['recovered']) == (3, 2, 1)
    assert (counters['timeouts'], counters['checksum_errors']) == (1, 1)
    assert counters['failed_operations'] == 0 and counters['consecutive_failures'] == 0
    bus.run('read X', script((scs.COMM_RX_TIMEOUT, None, None), (scs.COMM_SUCCESS, 1, None)))
    bus.run('read X', script((scs.COMM_SUCCESS, 1, None)))
    assert (bus.counters['retries'], bus.counters['recovered']) == (3, 2)


def test_an_operation_failing_every_attempt_names_its_kind_motor_and_port():
    bus = link(retries=1, max_failures=9)
    with pytest.raises(ServoTimeoutError) as raised:
        bus.run('read X', script((scs.COMM_RX_TIMEOUT, None, None)), motor='gripper')
    assert str(raised.value) == ("read X failed on port '/dev/ttyFAKE0': no reply (timeout) "
                                 "from motor 'gripper' (id 6) after 2 attempt(s)")
    with pytest.raises(ServoChecksumError, match="from motor 'wrist_flex' \\(id 4\\)"):
        bus.run('sync read', script((scs.COMM_RX_CORRUPT, None, 4)))   # the group's failed id
    with pytest.raises(ServoPortError, match=r'port error \(device gone\) from the bus'):
        bus.run('sync write', script(OSError('device gone')))
    assert bus.counters['failed_operations'] == 3 and bus.counters['port_errors'] == 2
    with pytest.raises(ServoTimeoutError):
        bus.run('ping', script((scs.COMM_RX_TIMEOUT, None, None)), count_failure=False)
    assert bus.counters['failed_operations'] == 3            # a ping on connect is not counted
    bus.handler = None
    with pytest.raises(FeetechError, match='is not connected'):
        bus.run('read X', script((scs.COMM_SUCCESS, None, None)))


def test_the_bus_faults_at_the_consecutive_limit_and_refuses_until_reset():
    bus = link(retries=0, max_failures=2)
    failing = script((scs.COMM_RX_TIMEOUT, None, None))
    with pytest.raises(ServoTimeoutError):
        bus.run('read X', failing)
    bus.run('read X', script((scs.COMM_SUCCESS, None, None)))   # a success resets the count
    with pytest.raises(ServoTimeoutError):                        # one short of the limit
        bus.run('read X', failing)
    with pytest.raises(BusFaultError, match='bus faulted after 2 consecutive failed'):
        bus.run('read X', failing)
    assert bus.faulted and len(failing.calls) == 3
    with pytest.raises(BusFaultError, match='read X refused'):
        bus.run('read X', failing)
    assert len(failing.calls) == 3                                # no bus traffic
    assert bus.run('torque off', script((scs.COMM_SUCCESS, 'ok', None)),
                   allow_faulted=True) == 'ok'
    bus.reset_fault()
    assert not bus.faulted and bus.run('read X', script((scs.COMM_SUCCESS, 1, None))) == 1


# ---------------------------------------------------------------------------- SyncGroups

def test_goals_are_checked_by_name_and_encoded_before_anything_is_sent():
    groups = SyncGroups(TABLE, MOTORS, PORT)
    top = TABLE.max_position
    assert groups.goal_payload({'gripper': 0, 'shoulder_pan': top}) == [
        (6, [0, 0]), (1, [top & 0xFF, top >> 8])]
    for goals, message in [({'gripper': top + 1}, f'= {top + 1} ticks is outside 0..{top}'),
                           ({'gripper': -1}, 'is outside'),
                           ({'gripper': 2.0}, 'must be integer ticks'),
                           ({'gripper': True}, 'must be integer ticks'),
                           ({'elbow': 1}, "unknown motor 'elbow' on port '/dev/ttyFAKE0'")]:
        with pytest.raises(ValueError, match=message):
            groups.goal_payload(goals)
    assert groups.names('gripper') == ['gripper'] and len(groups.names(None)) == 6
    with pytest.raises(ValueError, match='motors: shoulder_pan, shoulder_lift'):
        groups.names(['gripper', 'elbow'])


def test_the_position_reader_decodes_every_motor_by_name():
    groups = SyncGroups(TABLE, MOTORS, PORT)
    groups.attach(scs.PortHandler(PORT), scs.PacketHandler(0))
    assert sorted(groups.reader.data_dict) == [1, 2, 3, 4, 5, 6]
    for motor_id in range(1, 7):
        groups.reader.data_dict[motor_id] = [motor_id, 8]        # 8 * 256 + id
    assert groups.positions() == {name: 2048 + i for name, i in MOTORS}
    groups.detach()
    assert groups.reader is None and groups.writer is None


# ---------------------------------------------------------------------------- MotorStatus

def test_a_status_byte_with_flags_is_counted_and_named():
    counters = {'status_errors': 0}
    status = MotorStatus(PORT, MOTORS, counters)
    status.note(3, 0)
    assert status.error() is None
    status.note(3, 0x20 | 0x04)
    status.note(3, 0x20 | 0x04)
    assert counters['status_errors'] == 2
    error = status.error({'elbow_flex': 100})
    assert str(error) == ("servo error flags on port '/dev/ttyFAKE0': motor 'elbow_flex' "
                          '(id 3): overheat, overload')
    assert error.positions == {'elbow_flex': 100}
    status.note(3, 0)
    assert status.error() is None and counters['status_errors'] == 2


# ---------------------------------------------------------------------------- Registers

def test_a_calibration_is_written_as_three_registers_per_motor_and_must_fit_the_bus():
    calibration = Calibration.load(EXAMPLE)
    registers = Registers(TABLE, BusLink(PORT, MOTORS, 0, 1), None,
                          SyncGroups(TABLE, MOTORS, PORT).motor_id)
    writes = registers.calibration_writes(calibration)
    assert len(writes) == 18 and writes[:3] == [
        ('shoulder_pan', 'Homing_Offset', calibration['shoulder_pan'].homing_offset),
        ('shoulder_pan', 'Min_Position_Limit', calibration['shoulder_pan'].range_min),
        ('shoulder_pan', 'Max_Position_Limit', calibration['shoulder_pan'].range_max)]
    shifted = {name: dataclasses.replace(calibration[name], id=calibration[name].id + 10)
               if name == 'wrist_roll' else calibration[name] for name in calibration.names}
    with pytest.raises(ValueError, match="motor 'wrist_roll': calibration id 15 differs"):
        registers.calibration_writes(Calibration(shifted))
    fewer = {name: calibration[name] for name in calibration.names if name != 'gripper'}
    with pytest.raises(ValueError, match="motor 'gripper' missing from the calibration"):
        registers.calibration_writes(Calibration(fewer))
    with pytest.raises(ValueError, match="register 'Present_Position' is read-only"):
        registers.write('gripper', 'Present_Position', 1)   # refused before the bus is asked
