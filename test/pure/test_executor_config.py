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

"""ExecutorConfig: defaults, normalisation and errors that name the field and the value."""

import dataclasses
import math

import pytest

from remote_inference_py.executor.config import ExecutorConfig, STRUCTURAL_FIELDS
from remote_inference_py.robot.so101 import SO101_JOINT_LOWER_LIMITS, SO101_JOINT_UPPER_LIMITS

JOINTS = ('shoulder_pan', 'gripper')


def test_defaults_are_valid_and_documented_values():
    config = ExecutorConfig(joint_names=JOINTS)
    assert config.fps == 30.0
    assert config.chunk_merge == 'aligned'
    assert config.blend_steps == 0
    assert config.interpolation_multiplier == 1
    assert config.return_to_initial_position is True
    assert config.synchronous is False
    assert config.ensemble_coeff == 0.01
    assert config.lower_limits() == (-math.inf, -math.inf)
    assert config.upper_limits() == (math.inf, math.inf)
    assert config.tick_period == pytest.approx(1 / 30)


def test_joint_limits_of_so101_are_robot_so101_s_ranges_and_set_limits_win():
    unset = ExecutorConfig()   # the SO-101's joint names, nothing said: unbounded as before
    assert unset.lower_limits() == (-math.inf,) * 6
    so101 = ExecutorConfig(joint_limits_of='so101')
    assert so101.joint_lower_limits == so101.joint_upper_limits == ()
    assert so101.lower_limits() == SO101_JOINT_LOWER_LIMITS
    assert so101.upper_limits() == SO101_JOINT_UPPER_LIMITS
    narrow = ExecutorConfig(joint_limits_of='so101', joint_lower_limits=[-0.5] * 6,
                            joint_upper_limits=[0.5] * 6)
    assert narrow.lower_limits() == (-0.5,) * 6 and narrow.upper_limits() == (0.5,) * 6
    with pytest.raises(ValueError, match=r"joint_limits_of 'so101' needs the SO-101's "
                                         r"joint_names .*got \['shoulder_pan', 'gripper'\]"):
        ExecutorConfig(joint_names=JOINTS, joint_limits_of='so101')
    with pytest.raises(ValueError, match='joint_limits_of'):
        ExecutorConfig(joint_limits_of='koch')


def test_lists_from_ros_parameters_become_tuples_and_ints_become_floats():
    config = ExecutorConfig(joint_names=list(JOINTS), fps=50, blend_components=['gripper'],
                            joint_lower_limits=[-1, -2], joint_upper_limits=[1, 2.5])
    assert config.joint_names == JOINTS
    assert config.blend_components == ('gripper',)
    assert config.joint_lower_limits == (-1.0, -2.0)
    assert isinstance(config.fps, float)
    assert hash(config)


def test_interpolation_sets_the_tick_period():
    config = ExecutorConfig(joint_names=JOINTS, fps=30.0, interpolation_multiplier=4)
    assert config.tick_period == pytest.approx(1 / 120)
    assert config.action_period == pytest.approx(1 / 30)


def test_config_is_frozen():
    config = ExecutorConfig(joint_names=JOINTS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.fps = 10.0


@pytest.mark.parametrize('changes, message', [
    (dict(joint_names=()), 'joint_names'),
    (dict(joint_names='shoulder_pan'), 'joint_names'),
    (dict(joint_names=('a', 'a')), "joint 'a' twice"),
    (dict(joint_names=('a', '')), 'empty name'),
    (dict(fps=0.0), "parameter 'fps' is 0.0; expected 1.0 to 1000.0"),
    (dict(fps=-30.0), 'fps'),
    (dict(fps=float('nan')), "parameter 'fps' is NaN"),
    (dict(fps='30'), "parameter 'fps' must be a number, got '30'"),
    (dict(interpolation_multiplier=0),
     "parameter 'interpolation_multiplier' is 0; expected 1 to 20"),
    (dict(interpolation_multiplier=1.5), "'interpolation_multiplier' must be an integer"),
    (dict(action_offset=-1), 'action_offset'),
    (dict(chunk_merge='latest'),
     "parameter 'chunk_merge' is 'latest'; expected one of append, aligned, ensemble, rtc"),
    (dict(refill_seconds=-0.1), "parameter 'refill_seconds' is -0.1; expected 0.0 to 60.0"),
    (dict(request_timeout_s=0.0), 'request_timeout_s'),
    (dict(starvation_grace_s=0.0), 'starvation_grace_s'),
    (dict(starvation_grace_s=math.inf), 'starvation_grace_s'),
    (dict(blend_steps=-1), "parameter 'blend_steps' is -1; expected 0 to 1000"),
    (dict(blend_weight=1.5), "parameter 'blend_weight' is 1.5; expected 0.0 to 1.0"),
    (dict(blend_components=('elbow',)), "blend_components names joint 'elbow'"),
    (dict(blend_steps=3, chunk_merge='ensemble'), 'blend_steps = 3 needs chunk_merge aligned'),
    (dict(blend_steps=3, chunk_merge='append'), "got 'append'"),
    (dict(max_step_rad=0.0), "parameter 'max_step_rad' is 0.0; expected 1e-06 to inf"),
    (dict(return_speed_rad_s=0.0), 'return_speed_rad_s'),
    (dict(synchronous='yes'), "parameter 'synchronous' must be a bool, got 'yes'"),
    (dict(return_to_initial_position=1), 'return_to_initial_position'),
    (dict(joint_lower_limits=(-1.0,), joint_upper_limits=(1.0,)),
     'joint_lower_limits has 1 values but joint_names has 2'),
    (dict(joint_lower_limits=(-1.0, -1.0)), 'must both be set'),
    (dict(joint_lower_limits=(1.0, -1.0), joint_upper_limits=(0.0, 1.0)),
     "joint 'shoulder_pan' lower limit 1.0 is above its upper limit 0.0"),
    (dict(joint_lower_limits=(float('nan'), -1.0), joint_upper_limits=(1.0, 1.0)), 'NaN'),
    (dict(ensemble_coeff=float('inf')), 'ensemble_coeff'),
    (dict(capture_tolerance_s=-0.01), 'capture_tolerance_s'),
])
def test_invalid_values_name_the_field(changes, message):
    fields = dict(joint_names=JOINTS)
    fields.update(changes)
    with pytest.raises(ValueError) as error:
        ExecutorConfig(**fields)
    assert message in str(error.value)


def test_infinite_step_limit_disables_the_clamp():
    assert ExecutorConfig(joint_names=JOINTS, max_step_rad=math.inf).max_step_rad == math.inf


def test_negative_ensemble_coeff_prefers_newer_predictions_and_is_allowed():
    assert ExecutorConfig(joint_names=JOINTS, chunk_merge='ensemble',
                          ensemble_coeff=-0.05).ensemble_coeff == -0.05


def test_structural_changes_lists_only_structural_fields():
    base = ExecutorConfig(joint_names=JOINTS)
    tuned = dataclasses.replace(base, refill_seconds=0.5, blend_steps=2, max_step_rad=0.1)
    assert base.structural_changes(tuned) == []
    moved = dataclasses.replace(base, fps=50.0, chunk_merge='append')
    assert base.structural_changes(moved) == ['fps (30.0 -> 50.0)',
                                              "chunk_merge ('aligned' -> 'append')"]
    assert set(STRUCTURAL_FIELDS) >= {'joint_names', 'fps', 'interpolation_multiplier',
                                      'chunk_merge', 'synchronous', 'action_offset'}


def test_as_dict_has_every_field():
    config = ExecutorConfig(joint_names=JOINTS)
    assert set(config.as_dict()) == {f.name for f in dataclasses.fields(ExecutorConfig)}
