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

"""Tests of the unit semantics registry at the model boundary."""

import math

from hypothesis import given
from hypothesis import strategies as st
import numpy as np
import pytest
from robot_fixtures import EXAMPLE

from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.robot.units import (
    get_semantics, known_semantics, SIRadians, SO101DegreesGripperPercent)

SO101 = 'so101-degrees-gripper-percent-v1'


@pytest.fixture
def semantics(calibration):
    return get_semantics(SO101, calibration)


def test_registry():
    assert known_semantics() == ('si-radians-v1', SO101)
    assert isinstance(get_semantics(SO101), SO101DegreesGripperPercent)
    assert isinstance(get_semantics('si-radians-v1'), SIRadians)


def test_unknown_semantics_is_named_with_known_ones():
    with pytest.raises(ValueError, match="unknown semantics 'so100-v9'; known semantics: "
                                         'si-radians-v1, so101-degrees-gripper-percent-v1'):
        get_semantics('so100-v9')


def test_policy_order(semantics):
    assert semantics.names == SO101_JOINT_NAMES


def test_to_policy_matches_lerobot_for_the_same_ticks(semantics, calibration):
    # Servo ticks per joint; the LeRobot values are hand-computed in test_calibration.py:
    # shoulder_pan 3000 -> 85.010989 deg, shoulder_lift 1000 -> -91.516484 deg,
    # elbow_flex 2500 -> 45.318681 deg, wrist_flex 2044.5 (its mid) -> 0 deg,
    # wrist_roll 125 -> -169.582418 deg, gripper 3000 -> 68.509447 %.
    ticks = {'shoulder_pan': 3000, 'shoulder_lift': 1000, 'elbow_flex': 2500,
             'wrist_flex': 2044.5, 'wrist_roll': 125, 'gripper': 3000}
    expected = [85.01098901098901, -91.51648351648352, 45.31868131868132, 0.0,
                -169.58241758241758, 68.50944716585025]
    names = list(ticks)
    si = np.array([calibration.ticks_to_radians(name, ticks[name]) for name in names])
    np.testing.assert_allclose(semantics.to_policy(si, names), expected, rtol=0, atol=1e-9)


def test_from_policy_matches_lerobot_ticks(semantics, calibration):
    # 85 deg -> LeRobot tick int(2999.875) = 2999; we round the same value to 3000.
    # 50 % -> 2735.5 ticks -> LeRobot 2735; rounding gives 2736 (half to even).
    values = np.array([85.0, 0.0, -10.0, 0.0, 0.0, 50.0])
    si = semantics.from_policy(values, SO101_JOINT_NAMES)
    ticks = [calibration.radians_to_fractional_ticks(name, si[index])
             for index, name in enumerate(SO101_JOINT_NAMES)]
    assert ticks[0] == pytest.approx(2999.875)
    assert ticks[2] == pytest.approx(1870.75)
    assert ticks[5] == pytest.approx(2735.5)
    assert si[0] == pytest.approx(math.radians(85.0))


def test_names_reorder_both_ways(semantics):
    names = ['gripper', 'wrist_roll', 'wrist_flex', 'elbow_flex', 'shoulder_lift',
             'shoulder_pan']
    si = np.array([0.1, 0.2, -0.3, 0.4, -0.5, 0.6])
    policy = semantics.to_policy(si, names)
    # shoulder_pan is the last SI column and the first policy value.
    assert policy[0] == pytest.approx(math.degrees(0.6))
    np.testing.assert_allclose(semantics.from_policy(policy, names), si, atol=1e-12)


def test_chunks(semantics):
    chunk = np.array([[0.0, 10.0, -20.0, 30.0, 0.0, 25.0],
                      [1.0, 11.0, -21.0, 31.0, 1.0, 75.0]])
    si = semantics.from_policy(chunk, SO101_JOINT_NAMES)
    assert si.shape == (2, 6)
    np.testing.assert_allclose(semantics.to_policy(si, SO101_JOINT_NAMES), chunk, atol=1e-9)


def test_gripper_percent_is_clamped_like_lerobot(semantics, calibration):
    si = semantics.from_policy(np.array([0, 0, 0, 0, 0, 140.0]), SO101_JOINT_NAMES)
    assert calibration.radians_to_fractional_ticks('gripper', si[5]) == pytest.approx(3450)
    far = calibration.ticks_to_radians('gripper', 4000)
    policy = semantics.to_policy(np.array([0, 0, 0, 0, 0, far]), SO101_JOINT_NAMES)
    assert policy[5] == 100.0


@pytest.mark.parametrize('names, message', [
    (SO101_JOINT_NAMES[:-1], "joint 'gripper' missing"),
    (SO101_JOINT_NAMES[:-1] + ('jaw',), "unexpected joint 'jaw'"),
    (SO101_JOINT_NAMES + ('elbow_flex',), "joint 'elbow_flex' appears twice"),
])
def test_names_are_matched_not_counted(semantics, names, message):
    with pytest.raises(ValueError, match=message):
        semantics.to_policy(np.zeros(len(names)), names)
    with pytest.raises(ValueError, match=message):
        semantics.from_policy(np.zeros(6), names)


def test_shape_and_non_finite_values_are_named(semantics):
    with pytest.raises(ValueError, match=r'shape \(5,\) do not match 6 joints'):
        semantics.to_policy(np.zeros(5), SO101_JOINT_NAMES)
    with pytest.raises(ValueError, match=r'shape \(2, 3, 6\)'):
        semantics.from_policy(np.zeros((2, 3, 6)), SO101_JOINT_NAMES)
    values = np.zeros((3, 6))
    values[2, 4] = np.nan
    with pytest.raises(ValueError, match="joint 'wrist_roll' has a non-finite .* at step 2"):
        semantics.from_policy(values, SO101_JOINT_NAMES)
    with pytest.raises(ValueError, match="joint 'gripper' has a non-finite SI value"):
        semantics.to_policy(np.array([0, 0, 0, 0, 0, np.inf]), SO101_JOINT_NAMES)
    with pytest.raises(ValueError, match='sequence of names'):
        semantics.to_policy(np.zeros(6), 'gripper')


def test_default_calibration_when_none():
    semantics = get_semantics(SO101)
    assert semantics.calibration == Calibration.default_so101()
    # Default: 0 rad is the encoder middle, so degrees are plain degrees and the gripper at
    # 0 rad is at 2047.5 / 4095 = 50 % of the full-turn range.
    policy = semantics.to_policy(np.array([math.pi / 2, 0, 0, 0, 0, 0.0]), SO101_JOINT_NAMES)
    np.testing.assert_allclose(policy, [90.0, 0, 0, 0, 0, 50.0], atol=1e-9)


def test_calibration_must_cover_the_joints():
    partial = Calibration.from_dict({'shoulder_pan': {
        'id': 1, 'drive_mode': 0, 'homing_offset': 0, 'range_min': 0, 'range_max': 4095}})
    with pytest.raises(ValueError, match="joint 'shoulder_lift' missing from the calibration"):
        get_semantics(SO101, partial)


def test_si_identity_reorders_only():
    semantics = get_semantics('si-radians-v1')
    names = list(reversed(SO101_JOINT_NAMES))
    si = np.arange(6, dtype=float)
    policy = semantics.to_policy(si, names)
    np.testing.assert_array_equal(policy, si[::-1])
    np.testing.assert_array_equal(semantics.from_policy(policy, names), si)


@given(st.lists(st.floats(min_value=-1.5, max_value=1.5), min_size=5, max_size=5),
       st.floats(min_value=0.0, max_value=100.0))
def test_policy_round_trip(body, gripper_percent):
    semantics = get_semantics(SO101, Calibration.load(EXAMPLE))
    values = np.array([math.degrees(x) for x in body] + [gripper_percent])
    si = semantics.from_policy(values, SO101_JOINT_NAMES)
    np.testing.assert_allclose(semantics.to_policy(si, SO101_JOINT_NAMES), values, atol=1e-9)
