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

"""The worker's, the servo bus's and the sim's settings: built from the node's, checked as they.

That each of their fields that is a parameter takes the parameter's declaration (default,
type, range, choices) is ``test_params.py``'s; here, that the node's config hands every one of
them its parameter, and the bounds that were looser before, pinned.
"""

import dataclasses

from core_fixtures import check_range_edges
import pytest

from remote_inference_py.common.settings import derived
from remote_inference_py.hardware.config import (
    FeetechBusConfig, HardwareConfig, RunnerSettings, SHUTDOWN_QUIET_S, SimConfig)
from remote_inference_py.hardware.runner import RunnerSettings as RunnerSettingsOfTheRunner
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

NOT_DEFAULTS = dict(
    publish_rate_hz=100.0, command_timeout_s=1.5, shutdown_grace_s=3.0,
    disable_torque_on_shutdown=False, disable_torque_on_fault=True, baudrate=500000,
    bus_retries=5, max_consecutive_failures=9, latency_timer_ms=2.0,
    sim_initial_positions=[0.1] * 6, sim_render=False, sim_cameras=['front', 'top'],
    sim_image_width=64, sim_image_height=48, sim_camera_rate_hz=10.0, sim_cube_seed=7,
    sim_real_time_factor=2.0, sim_simplify_meshes=False)
"""A value other than the default for every parameter a part takes."""


def test_the_node_config_hands_every_part_its_parameters():
    config = HardwareConfig(backend='sim', port='/dev/ttyACM0', **NOT_DEFAULTS)
    parts = (config.runner_settings(), config.feetech_bus(), config.sim_config())
    defaults = {field.name: field.default for field in dataclasses.fields(HardwareConfig)}
    taken = set()
    for part in parts:
        for name, spec in derived(type(part)).items():
            assert getattr(config, spec.name) != defaults[spec.name], spec.name   # a real check
            assert getattr(part, name) == getattr(config, spec.name), (type(part), name)
            taken.add(spec.name)
    assert taken == set(NOT_DEFAULTS)
    bus = parts[1]
    assert (bus.port, bus.motors) == ('/dev/ttyACM0', tuple(
        (name, index + 1) for index, name in enumerate(SO101_JOINT_NAMES)))
    assert parts[2].joint_names == tuple(SO101_JOINT_NAMES)
    assert parts[0].shutdown_quiet_s == SHUTDOWN_QUIET_S
    assert RunnerSettingsOfTheRunner is RunnerSettings


def runner(**changes):
    return RunnerSettings(**changes)


def bus(**changes):
    return FeetechBusConfig('/dev/ttyACM0', {'pan': 1}, **changes)


def sim(**changes):
    return SimConfig(joint_names=('shoulder_pan',), render=False, **changes)


@pytest.mark.parametrize('build, field, parameter, inside, outside', [
    # Were > 0 or >= 0 before: the parameter's range now.
    (runner, 'publish_rate_hz', 'publish_rate_hz', (1.0, 500.0), (0.99, 500.5)),
    (runner, 'command_timeout_s', 'command_timeout_s', (0.01, 3600.0), (0.0099, 3600.5)),
    (runner, 'shutdown_grace_s', 'shutdown_grace_s', (0.0, 60.0), (-0.01, 60.1)),
    (bus, 'retries', 'bus_retries', (0, 10), (-1, 11)),
    (bus, 'max_consecutive_failures', 'max_consecutive_failures', (1, 1000), (0, 1001)),
    (bus, 'latency_timer_ms', 'latency_timer_ms', (0.0, 100.0), (-0.01, 100.1)),
    (sim, 'camera_rate_hz', 'sim_camera_rate_hz', (0.1, 120.0), (0.099, 120.1)),
    (sim, 'real_time_factor', 'sim_real_time_factor', (0.01, 100.0), (0.0099, 100.1)),
    (sim, 'cube_seed', 'sim_cube_seed', (-1, 2147483647), (-2, 2147483648)),
    # Unchanged bounds, now the parameter's too.
    (sim, 'width', 'sim_image_width', (1, 4096), (0, 4097)),
    (sim, 'height', 'sim_image_height', (1, 4096), (0, 4097)),
])
def test_a_part_refuses_just_outside_the_parameter_range(build, field, parameter, inside,
                                                         outside):
    check_range_edges(build, field, parameter, inside, outside)


def test_the_own_fields_keep_their_own_checks():
    assert runner(shutdown_quiet_s=0.0).shutdown_quiet_s == 0.0
    with pytest.raises(ValueError, match='shutdown_quiet_s must be >= 0, got -0.01'):
        runner(shutdown_quiet_s=-0.01)
    with pytest.raises(ValueError, match="FeetechBusConfig.baudrate: parameter 'baudrate' is "
                                         '1234; expected one of 19200, 38400'):
        bus(baudrate=1234)
    with pytest.raises(ValueError, match="FeetechBusConfig.retries: parameter 'bus_retries' "
                                         'must be an integer, got True'):
        bus(retries=True)
    with pytest.raises(ValueError, match="unknown servo model 'sts9999'"):
        bus(model='sts9999')
    with pytest.raises(ValueError, match=r'initial positions \(0.0, inf\) are not all finite'):
        SimConfig(joint_names=('a', 'b'), initial_positions=[0.0, float('inf')])
    with pytest.raises(ValueError, match='SimConfig.initial_positions: parameter '
                                         "'sim_initial_positions' is NaN"):
        SimConfig(joint_names=('a',), initial_positions=[float('nan')])
    with pytest.raises(ValueError, match='mesh_cell_m must be > 0, got 0.0'):
        sim(mesh_cell_m=0.0)
    with pytest.raises(ValueError, match='render is on but no camera is named'):
        SimConfig(joint_names=('a',), cameras=[])
