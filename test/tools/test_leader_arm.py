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

"""The leader arm through the real Feetech SDK path against the bus emulator process.

The leader is a second emulated bus whose shafts a scripted trajectory moves by hand
(``set <id> Present_Position``); its faults are injected on the emulator (a silent motor, a
corrupt reply) or by ending the emulator (unplugged). No test asserts speed.
"""

import json

from emulator import EmulatorProcess
import numpy as np
import pytest
from robot_fixtures import EXAMPLE, PATIENT_MS

from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.teleop.leader import LeaderArm, LeaderConfig, LeaderFault

IDS = {name: index + 1 for index, name in enumerate(SO101_JOINT_NAMES)}
# A scripted human: three poses of the leader's shafts (ticks, present-position frame).
TRAJECTORY = ((2048, 2048, 2048, 2048, 2048, 2048),
              (1500, 2600, 1200, 2900, 2100, 1400),
              (2600, 1700, 2900, 1300, 1000, 2900))


@pytest.fixture
def leader_bus():
    with EmulatorProcess(speed=4000.0) as process:
        yield process


@pytest.fixture
def follower_file(tmp_path):
    """A follower calibrated differently from the leader (its gripper range above all)."""
    data = json.loads(open(EXAMPLE).read())
    data['gripper'].update(range_min=1500, range_max=2500)
    path = tmp_path / 'follower.json'
    path.write_text(json.dumps(data))
    return str(path)


def leader(emulator, follower_file, **changes):
    config = LeaderConfig(port=emulator.port, calibration_file=EXAMPLE,
                          follower_calibration_file=follower_file,
                          latency_timer_ms=PATIENT_MS, **changes)
    arm = LeaderArm(config)
    arm.open(0.0)
    return arm


def test_the_leader_has_torque_off_its_calibration_and_drives_in_follower_radians(
        leader_bus, follower_file):
    for motor_id in IDS.values():
        leader_bus.set(motor_id, 'Torque_Enable', 1)   # left on by an earlier program
    arm = leader(leader_bus, follower_file)
    try:
        assert {leader_bus.get(i, 'Torque_Enable') for i in IDS.values()} == {0}
        assert leader_bus.get(1, 'Homing_Offset') == -1195   # the leader's file, written
        assert set(arm.written) == set(SO101_JOINT_NAMES)
        mine, follower = Calibration.load(EXAMPLE), Calibration.load(follower_file)
        for k, pose in enumerate(TRAJECTORY):
            for name, ticks in zip(SO101_JOINT_NAMES, pose):
                leader_bus.set(IDS[name], 'Present_Position', ticks)
            positions = arm.read(0.1 * (k + 1))
            body = [mine.ticks_to_radians(n, t) for n, t in zip(SO101_JOINT_NAMES[:5], pose)]
            assert positions[:5] == pytest.approx(body, abs=1e-12)
            percent = mine.ticks_to_normalized('gripper', pose[5])
            assert positions[5] == pytest.approx(follower.normalized_to_radians(
                'gripper', percent), abs=1e-12)   # the same 0..100 of the follower's range
            assert follower.radians_to_normalized('gripper', positions[5]) == pytest.approx(
                percent)
    finally:
        arm.close()


@pytest.mark.parametrize('fault, kind', [('no_reply', 'motor silent'),
                                         ('bad_checksum', 'reply corrupt')])
def test_a_silent_motor_or_a_corrupt_reply_is_named_and_yields_no_positions(
        leader_bus, follower_file, fault, kind):
    arm = leader(leader_bus, follower_file)
    try:
        before = arm.read(0.0)
        leader_bus.inject_fault(3, fault)
        leader_bus.set(3, 'Present_Position', 1000)   # moved meanwhile: not reported
        with pytest.raises(LeaderFault) as raised:
            arm.read(0.1)
        assert raised.value.kind == kind
        assert str(raised.value).startswith(f'leader {kind}: ')
        assert "'elbow_flex'" in str(raised.value) or 'id 3' in str(raised.value)
        leader_bus.clear_faults()
        after = arm.read(0.2)   # the same bus, healthy again: the new pose
        assert after[2] != pytest.approx(before[2])
    finally:
        arm.close()


def test_an_unplugged_leader_is_named_and_reopened_only_at_the_reconnect_pace(follower_file):
    emulator = EmulatorProcess(speed=4000.0).start()
    arm = leader(emulator, follower_file, reconnect_period_s=1.0)
    try:
        assert np.all(np.isfinite(arm.read(0.0)))
        emulator.close()   # the USB cable pulled: the pseudo-terminal is gone
        with pytest.raises(LeaderFault) as raised:
            arm.read(0.1)
        assert raised.value.kind == 'unplugged' and arm.bus is None
        with pytest.raises(LeaderFault, match='next attempt to open') as inside:
            arm.read(1.09)   # just inside the pace: no attempt, the same fault
        assert inside.value.kind == 'unplugged' and arm.last_open_attempt == 0.1
        with pytest.raises(LeaderFault) as again:
            arm.read(1.11)   # just outside: one attempt, which fails
        assert again.value.kind == 'unplugged' and arm.last_open_attempt == 1.11
    finally:
        arm.close()
        emulator.close()


def test_a_motor_missing_when_the_leader_is_opened_is_named_until_the_next_attempt(
        follower_file):
    with EmulatorProcess(speed=4000.0, missing=(3,)) as emulator:
        config = LeaderConfig(port=emulator.port, calibration_file=EXAMPLE,
                              follower_calibration_file=follower_file,
                              latency_timer_ms=PATIENT_MS)
        arm = LeaderArm(config)
        with pytest.raises(LeaderFault) as raised:
            arm.read(0.0)   # the first read opens the port
        assert raised.value.kind == 'motor silent' and '3' in str(raised.value)
        with pytest.raises(LeaderFault) as again:
            arm.read(0.5)
        assert again.value.kind == 'motor silent' and 'next attempt to open' in str(again.value)
        arm.close()


def test_bad_leader_settings_are_refused_by_name(follower_file):
    with pytest.raises(ValueError, match="'port'"):
        LeaderConfig()
    with pytest.raises(ValueError, match="'motor_ids' has 2 ids"):
        LeaderConfig(port='/dev/null', motor_ids=[1, 2])
    with pytest.raises(ValueError, match="joint 'elbow_flex': motor id 9 differs"):
        LeaderArm(LeaderConfig(port='/dev/null', calibration_file=EXAMPLE,
                               motor_ids=[1, 2, 9, 4, 5, 6]))
