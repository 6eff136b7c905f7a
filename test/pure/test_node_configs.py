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

"""Each node's frozen config and the server's start-up, without ROS.

The nodes map their parameters one to one onto these configs (``test_params.py`` checks the
names and defaults against the specs); here: what the configs refuse and what the server's
start-up (:func:`~remote_inference_py.policy_server.loading.load_policy`) makes and says.
"""

import dataclasses
from types import SimpleNamespace

import pytest

from remote_inference_py.executor.config import NodeSettings
from remote_inference_py.hardware.config import HardwareConfig
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.loading import load_policy
from remote_inference_py.policy_server.runtimes import RuntimeLoadError, RuntimeOptions
from remote_inference_py.policy_server.topics import (
    parse_feature_topics, resolve_topics, topic_name)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

SIM = HardwareConfig(backend='sim', sim_render=False)


@pytest.mark.parametrize('changes, message', [
    ({'backend': 'dynamixel'}, "parameter 'backend' is 'dynamixel'; expected one of"),
    ({'backend': 'feetech', 'port': ''}, "parameter 'port' is empty: the feetech backend"),
    ({'command_format': 'twist'}, "parameter 'command_format' is 'twist'; expected one of "
                                  'joint_state, float64_multi_array'),
    ({'joint_names': ['a', 'a']}, "parameter 'joint_names' = ['a', 'a'] must name distinct"),
    ({'backend': 'feetech', 'port': '/dev/x', 'motor_ids': [1, 2]},
     "parameter 'motor_ids' has 2 ids for 6 joints"),
    ({'joint_lower_limits': [0.0] * 5, 'joint_upper_limits': [1.0] * 5},
     "parameter 'joint_lower_limits' has 5 values for 6 joints"),
    ({'joint_lower_limits': [0.0] * 6}, "'joint_lower_limits' and 'joint_upper_limits' must be "
                                        'set together'),
    ({'sim_initial_positions': [float('nan')] * 6}, "parameter 'sim_initial_positions' is NaN"),
    ({'command_timeout_s': 0.0}, "parameter 'command_timeout_s' is 0.0; expected 0.01 to"),
    ({'baudrate': 9600}, "parameter 'baudrate' is 9600; expected one of 19200, 38400"),
])
def test_hardware_config_names_what_is_wrong(changes, message):
    with pytest.raises(ValueError) as error:
        dataclasses.replace(SIM, **changes)
    assert message in str(error.value)


def test_hardware_config_stores_unset_lists_as_none_and_builds_its_parts():
    config = dataclasses.replace(SIM, joint_lower_limits=[], sim_initial_positions=[0.1] * 6,
                                 sim_cameras=['front'], sim_render=True)
    assert config.joint_lower_limits is None and config.joint_upper_limits is None
    assert config.sim_initial_positions == (0.1,) * 6
    assert config.joint_names == tuple(SO101_JOINT_NAMES)
    assert config.sim_config().render and config.sim_config().cameras == ('front',)
    assert dataclasses.replace(config, sim_cameras=[]).sim_config().render is False
    assert config.runner_settings().publish_rate_hz == config.publish_rate_hz
    # Every declared range holds whatever the backend, as it does for the parameter.
    with pytest.raises(ValueError, match="'sim_image_width' is 0; expected 1 to 4096"):
        HardwareConfig(port='/dev/ttyACM0', sim_image_width=0)


def test_hardware_config_builds_the_servo_bus_config():
    config = HardwareConfig(port='/dev/ttyACM0', baudrate=500000, bus_retries=0,
                            max_consecutive_failures=7, latency_timer_ms=2.0,
                            joint_names=['a', 'b'], motor_ids=[3, 4])
    bus = config.feetech_bus()
    assert (bus.port, bus.motors, bus.baudrate, bus.retries, bus.max_consecutive_failures,
            bus.latency_timer_ms) == ('/dev/ttyACM0', (('a', 3), ('b', 4)), 500000, 0, 7, 2.0)


def test_executor_node_settings():
    assert NodeSettings(expected_features=['any']).expected_features == ()
    assert NodeSettings(expected_features=['a']).expected_features == ('a',)
    with pytest.raises(ValueError, match="parameter 'output_format' is 'twist'; expected one "
                                         'of joint_state, float64_multi_array, joint_trajectory'):
        NodeSettings(output_format='twist')
    with pytest.raises(ValueError, match="'admission_timeout_s' is 0.0; expected 0.1 to 3600"):
        NodeSettings(admission_timeout_s=0.0)


@pytest.mark.parametrize('changes, message', [
    ({'demo_image_size': [480]}, "parameter 'demo_image_size' must be [height, width], got "
                                 '[480]'),
    ({'feature_topics': ['front']}, "feature_topics entry 'front' is not 'feature=topic'"),
    ({'robot_namespaces': ['a', 'a']}, "'robot_namespaces' must be non-empty and unique"),
    ({'deployment': ''}, "parameter 'deployment' must not be empty"),
])
def test_server_config_names_what_is_wrong(changes, message):
    with pytest.raises(ValueError) as error:
        ServerConfig(**changes)
    assert message in str(error.value)


def test_server_config_parts():
    config = ServerConfig(robot_namespaces=['r1', 'r2'], feature_topics=['x = a/b'],
                          demo_cameras=['front'], observation_wait_s=0.5)
    assert config.topic_overrides() == {'x': 'a/b'}
    assert config.robot_namespaces == ('r1', 'r2') and config.observation_wait_s == 0.5
    options = RuntimeOptions.from_config(config)
    assert options.demo_cameras == ('front',) and options.demo_image_size == (480, 640)


def test_topics():
    assert topic_name('', 'policy/chunk') == 'policy/chunk'
    assert topic_name('/arm1/', 'policy/chunk') == '/arm1/policy/chunk'
    assert topic_name('arm1', '/abs/topic') == '/abs/topic'
    assert parse_feature_topics([' a = b ']) == {'a': 'b'}
    image = SimpleNamespace(name='observation.images.wrist', kind='rgb', is_image=True,
                            topic='')
    pose = SimpleNamespace(name='observation.cube', kind='pose', is_image=False, topic='')
    state = SimpleNamespace(name='observation.state', kind='state', is_image=False, topic='')
    spec = SimpleNamespace(features=(state, image, pose))
    assert resolve_topics(spec, {'observation.cube': 'cube'}) == {
        'observation.images.wrist': 'cameras/wrist/image_raw', 'observation.cube': 'cube'}
    with pytest.raises(ValueError, match="no topic for feature 'observation.cube'"):
        resolve_topics(spec, {})
    with pytest.raises(ValueError, match=r"feature_topics names \['other'\], which the policy"):
        resolve_topics(spec, {'other': 'x', 'observation.cube': 'cube'})


def test_load_policy_loads_warms_up_and_says_so():
    lines = []
    loaded = load_policy(ServerConfig(demo_cameras=['front'], demo_image_size=[24, 32],
                                      warmup_iterations=2, inline_serve_max_ms=100.0),
                         log=lines.append)
    try:
        assert loaded.topics == {'observation.images.front': 'cameras/front/image_raw'}
        assert loaded.report.iterations >= 2 and loaded.inline   # a fast model, one robot
        assert loaded.core.runtime is loaded.runtime
        assert loaded.core.settings.deployment == 'so101'
        assert len(lines) == 4
        assert lines[0] == ('loading the policy (policy_type=auto, checkpoint=none, device=auto, '
                            'dtype=float32)')
        assert lines[1].startswith("policy 'demo' from ") and 'loaded in' in lines[1]
        assert lines[2].startswith('warm-up: ') and lines[2].endswith('inline when ready')
        assert lines[3] == 'text commands: none'
    finally:
        loaded.runtime.close()
    two_robots = load_policy(ServerConfig(robot_namespaces=['a', 'b'],
                                          inline_serve_max_ms=100.0))
    assert not two_robots.inline   # several robots always go through the worker (batching)
    assert 'by the serving thread' in two_robots.warm_up_text()


def test_load_policy_names_a_bad_checkpoint_calibration_or_topic(tmp_path):
    with pytest.raises(RuntimeLoadError, match='does not exist'):
        load_policy(ServerConfig(checkpoint=str(tmp_path / 'missing.pt2')))
    bad = tmp_path / 'calibration.json'
    bad.write_text('{')
    with pytest.raises(ValueError, match=f"calibration_file '{bad}'"):
        load_policy(ServerConfig(calibration_file=str(bad)))
    with pytest.raises(ValueError, match='feature_topics names'):
        load_policy(ServerConfig(feature_topics=['observation.images.wrist=x']))
