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

"""Tests of LeRobot calibration files and of the tick / LeRobot / radian conversions.

LeRobot is not installable here, so the LeRobot reference values below are computed by hand
from LeRobot's published formulas (``lerobot.motors.motors_bus.MotorsBus._normalize`` and
``_unnormalize``, STS3215 resolution 4096, so ``max_res = 4095``):

- DEGREES: ``(ticks - mid) * 360 / 4095``, ``mid = (range_min + range_max) / 2``;
  back: ``int(degrees * 4095 / 360 + mid)``.
- RANGE_0_100: ``(clamp(ticks) - range_min) / (range_max - range_min) * 100``, then
  ``100 - x`` when drive_mode is 1; back: ``int(x / 100 * (max - min) + min)``.
"""

import json
import math

from hypothesis import given
from hypothesis import strategies as st
import numpy as np
import pytest
from robot_fixtures import EXAMPLE

from remote_inference_py.robot.calibration import (
    Calibration, CalibrationError, MotorCalibration, NormMode)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES


def example_data():
    with open(EXAMPLE, encoding='utf-8') as stream:
        return json.load(stream)


# Reference values from config/so101_calibration_example.json, computed by hand.
# shoulder_pan: range 754..3312, mid = (754 + 3312) / 2 = 2033.
# shoulder_lift: range 842..3240, mid = 2041. elbow_flex: range 872..3097, mid = 1984.5.
# wrist_roll: range 125..3983, mid = 2054. gripper: range 2021..3450, span 1429.
LEROBOT_REFERENCE = [
    # (3000 - 2033) * 360 / 4095 = 348120 / 4095 = 85.010989010989...
    ('shoulder_pan', 3000, 85.01098901098901),
    # (754 - 2033) * 360 / 4095 = -460440 / 4095 = -112.43956043956...
    ('shoulder_pan', 754, -112.43956043956044),
    ('shoulder_pan', 2033, 0.0),
    # Degrees are not clamped: (3312 - 2033) * 360 / 4095 = 112.43956...
    ('shoulder_pan', 3312, 112.43956043956044),
    # (3000 - 2041) * 360 / 4095 = 345240 / 4095 = 84.3076923...
    ('shoulder_lift', 3000, 84.3076923076923),
    # (1000 - 2041) * 360 / 4095 = -374760 / 4095 = -91.5164835...
    ('shoulder_lift', 1000, -91.51648351648352),
    # (2500 - 1984.5) * 360 / 4095 = 185580 / 4095 = 45.3186813...
    ('elbow_flex', 2500, 45.31868131868132),
    # Outside the calibrated range, still unclamped: (4000 - 1984.5) * 360 / 4095 = 177.18...
    ('elbow_flex', 4000, 177.1868131868132),
    # (125 - 2054) * 360 / 4095 = -694440 / 4095 = -169.5824175...
    ('wrist_roll', 125, -169.58241758241758),
    # gripper (RANGE_0_100): (3000 - 2021) / 1429 * 100 = 97900 / 1429 = 68.5094471...
    ('gripper', 3000, 68.50944716585025),
    # (2500 - 2021) / 1429 * 100 = 47900 / 1429 = 33.5199440...
    ('gripper', 2500, 33.51994401679496),
    ('gripper', 2021, 0.0),
    ('gripper', 3450, 100.0),
    # Clamped to the calibrated range first: 1900 -> 2021 -> 0 %, 3600 -> 3450 -> 100 %.
    ('gripper', 1900, 0.0),
    ('gripper', 3600, 100.0),
]


@pytest.mark.parametrize('name, ticks, expected', LEROBOT_REFERENCE)
def test_ticks_to_lerobot_values_match_reference(calibration, name, ticks, expected):
    assert calibration.ticks_to_normalized(name, ticks) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize('name, value, expected', [
    # int(85 * 4095 / 360 + 2033) = int(966.875 + 2033) = int(2999.875) = 2999 (truncated).
    ('shoulder_pan', 85.0, 2999),
    # int(-10 * 4095 / 360 + 1984.5) = int(-113.75 + 1984.5) = int(1870.75) = 1870.
    ('elbow_flex', -10.0, 1870),
    # int(50 / 100 * 1429 + 2021) = int(714.5 + 2021) = 2735.
    ('gripper', 50.0, 2735),
    # int(12.5 / 100 * 1429 + 2021) = int(2199.625) = 2199.
    ('gripper', 12.5, 2199),
    # Percent is clamped to 0..100 first: 150 -> 100 -> 3450; -5 -> 0 -> 2021.
    ('gripper', 150.0, 3450),
    ('gripper', -5.0, 2021),
])
def test_lerobot_values_to_ticks_match_reference(calibration, name, value, expected):
    assert calibration.normalized_to_ticks(name, value) == expected


def test_drive_mode_mirrors_range_modes():
    data = example_data()
    data['gripper']['drive_mode'] = 1
    data['shoulder_pan']['drive_mode'] = 1
    mirrored = Calibration.from_dict(data)
    # 100 - 68.50944716585025 = 31.49055283414975
    assert mirrored.ticks_to_normalized('gripper', 3000) == pytest.approx(31.490552834149756)
    # Back: 100 % mirrors to 100 - 100 = 0 -> int(0 / 100 * 1429 + 2021) = 2021;
    # 25 % mirrors to 75 -> int(0.75 * 1429 + 2021) = int(3092.75) = 3092.
    assert mirrored.normalized_to_ticks('gripper', 100.0) == 2021
    assert mirrored.normalized_to_ticks('gripper', 25.0) == 3092
    # DEGREES ignores drive_mode in LeRobot.
    assert mirrored.ticks_to_normalized('shoulder_pan', 3000) == pytest.approx(85.01098901098901)


def test_range_m100_100_mode():
    calibration = Calibration.load(EXAMPLE, norm_modes={'shoulder_pan': NormMode.RANGE_M100_100})
    # (3000 - 754) / 2558 * 200 - 100 = 449200 / 2558 - 100 = 75.6059...
    assert calibration.ticks_to_normalized('shoulder_pan', 3000) == pytest.approx(
        75.60594214229869)
    # int((0 + 100) / 200 * 2558 + 754) = int(1279 + 754) = 2033.
    assert calibration.normalized_to_ticks('shoulder_pan', 0.0) == 2033


def test_radians_are_lerobot_degrees_times_pi_over_180(calibration):
    # 85.01098901098901 deg * pi / 180 = 1.4837216586...
    assert calibration.ticks_to_radians('shoulder_pan', 3000) == pytest.approx(
        1.483721658618476, abs=1e-12)
    # The gripper uses the same DEGREES formula for radians: mid 2735.5,
    # (3000 - 2735.5) * 360 / 4095 = 23.2527... deg = 0.405837 rad.
    assert calibration.ticks_to_radians('gripper', 3000) == pytest.approx(
        0.4058369996945056, abs=1e-12)
    for name in SO101_JOINT_NAMES[:-1]:
        for ticks in (0, 1000, 2047, 4095):
            assert calibration.ticks_to_radians(name, ticks) == pytest.approx(
                math.radians(calibration.ticks_to_normalized(name, ticks)), abs=1e-12)


def test_radians_ticks_round_trip_is_exact_for_every_tick(calibration):
    ticks = np.arange(4096)
    for name in calibration.names:
        radians = calibration.ticks_to_radians(name, ticks)
        np.testing.assert_array_equal(calibration.radians_to_ticks(name, radians), ticks)


@given(st.floats(min_value=-3.0, max_value=3.0))
def test_radians_to_ticks_rounds_to_nearest(value):
    calibration = Calibration.load(EXAMPLE)
    ticks = calibration.radians_to_ticks('elbow_flex', value)
    fractional = calibration.radians_to_fractional_ticks('elbow_flex', value)
    assert abs(ticks - fractional) <= 0.5


def test_radians_to_ticks_rejects_nan(calibration):
    with pytest.raises(ValueError, match="'wrist_flex'.*not finite"):
        calibration.radians_to_ticks('wrist_flex', float('nan'))


def test_arrays_and_scalars(calibration):
    values = calibration.ticks_to_normalized('gripper', np.array([[2021, 3450], [1900, 3000]]))
    assert values.shape == (2, 2)
    np.testing.assert_allclose(values, [[0.0, 100.0], [0.0, 68.50944716585025]])
    assert isinstance(calibration.ticks_to_normalized('gripper', 3000), float)
    assert isinstance(calibration.normalized_to_ticks('gripper', 50.0), int)
    assert calibration.normalized_to_ticks('gripper', np.array([50.0])).tolist() == [2735]


def test_radian_limits(calibration):
    low, high = calibration.radian_limits('shoulder_pan')
    assert low == pytest.approx(-math.radians(112.43956043956044))
    assert high == pytest.approx(math.radians(112.43956043956044))


def test_load_example(calibration):
    assert calibration.names == SO101_JOINT_NAMES
    assert calibration.ids == {name: index + 1 for index, name in enumerate(SO101_JOINT_NAMES)}
    assert calibration['gripper'] == MotorCalibration(6, 0, 1419, 2021, 3450)
    assert calibration.norm_mode('gripper') is NormMode.RANGE_0_100
    assert calibration.norm_mode('wrist_roll') is NormMode.DEGREES


def test_save_load_round_trip_keeps_lerobot_format(calibration, tmp_path):
    path = tmp_path / 'follower.json'
    calibration.save(path)
    assert Calibration.load(path) == calibration
    text = path.read_text()
    assert json.loads(text) == example_data()
    assert list(json.loads(text)['gripper']) == [
        'id', 'drive_mode', 'homing_offset', 'range_min', 'range_max']
    assert '\n    "shoulder_pan": {\n        "id": 1,' in text


def test_default_so101_calibration():
    calibration = Calibration.default_so101()
    assert calibration.names == SO101_JOINT_NAMES
    assert calibration['shoulder_pan'].mid == 2047.5
    assert calibration.ticks_to_radians('shoulder_pan', 2047.5) == 0.0
    assert calibration.ticks_to_normalized('gripper', 4095) == 100.0


def _with(name, field, value):
    data = example_data()
    if value is _DELETE:
        del data[name][field]
    else:
        data[name][field] = value
    return data


_DELETE = object()


@pytest.mark.parametrize('name, field, value, message', [
    ('gripper', 'range_min', _DELETE, "motor 'gripper' lacks field 'range_min'"),
    ('elbow_flex', 'drive_mode', 2, "motor 'elbow_flex'.*'drive_mode' = 2 must be 0 or 1"),
    ('wrist_roll', 'range_max', 4096, "motor 'wrist_roll'.*'range_max' = 4096 out of 0..4095"),
    ('gripper', 'range_min', 3450, "motor 'gripper'.*'range_min' = 3450 must be below"),
    ('shoulder_pan', 'homing_offset', 2048, "motor 'shoulder_pan'.*'homing_offset' = 2048"),
    ('shoulder_lift', 'id', 1.0, "motor 'shoulder_lift': field 'id' = 1.0 must be an integer"),
    ('shoulder_lift', 'id', 1, "motor 'shoulder_lift'.*'id' = 1 is also the id of motor "
                               "'shoulder_pan'"),
    ('wrist_flex', 'calibrated', True, "motor 'wrist_flex' has unknown field 'calibrated'"),
])
def test_validation_names_motor_and_field(name, field, value, message):
    with pytest.raises(CalibrationError, match=message):
        Calibration.from_dict(_with(name, field, value))


def test_invalid_files_are_named(tmp_path):
    path = tmp_path / 'bad.json'
    path.write_text('{"gripper": ')
    with pytest.raises(CalibrationError, match='bad.json.*not valid JSON'):
        Calibration.load(path)
    path.write_text('[1, 2]')
    with pytest.raises(CalibrationError, match='expected an object of motor names'):
        Calibration.load(path)
    path.write_text('{"gripper": 3}')
    with pytest.raises(CalibrationError, match="motor 'gripper' must be an object"):
        Calibration.load(path)
    path.write_text('{}')
    with pytest.raises(CalibrationError, match='no motors'):
        Calibration.load(path)


def test_unknown_motor_is_named(calibration):
    with pytest.raises(ValueError, match="motor 'elbow' is not in the calibration"):
        calibration.ticks_to_radians('elbow', 2048)
    with pytest.raises(ValueError, match="motor 'nope'"):
        Calibration.load(EXAMPLE, norm_modes={'nope': NormMode.DEGREES})
