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

"""The simulated-time runner: the executor and server cores with the MuJoCo physics."""

import dataclasses

import numpy as np
import pytest

from remote_inference_py.evaluation import simtime
from remote_inference_py.evaluation.matrix import run_matrix
from remote_inference_py.evaluation.settings import (
    Configuration, EvalSettings, resolve_policy)
from remote_inference_py.evaluation.task import episode_seeds, TaskConfig

TASK = TaskConfig(time_limit_s=10.0)


@pytest.fixture(scope='module')
def settings():
    return EvalSettings.load()


@pytest.fixture(scope='module')
def expert():
    return resolve_policy('expert').make_runtime()


def run(expert, settings, mode, latency, seed, task=TASK):
    return simtime.run_episode(expert, 'expert', settings, Configuration(mode, latency), seed,
                               task)


def test_the_expert_picks_the_cube_and_episodes_are_deterministic(expert, settings):
    seeds = episode_seeds(0, 2)
    for seed in seeds:
        first = run(expert, settings, 'aligned', 0.1, seed)
        assert first.success, first
        assert 1.0 < first.completion_time_s < 8.0
        assert first.max_lift_m >= TASK.lift_height_m
        assert first.requests >= 2 and first.chunks_dropped == 0 and not first.error
        assert 0.0 < first.seam_mean_rad <= first.seam_max_rad, 'seams where chunks join'
        again = run(expert, settings, 'aligned', 0.1, seed)
        same = dataclasses.replace(again, wall_s=first.wall_s)
        assert same == first, 'the same seed gives the same episode'


def test_asynchronous_execution_hides_the_latency_that_synchronous_pays(expert, settings):
    seed = episode_seeds(0, 1)[0]
    sync = run(expert, settings, 'sync', 0.6, seed)
    for mode in ('aligned', 'aligned+blend', 'ensemble'):
        asynchronous = run(expert, settings, mode, 0.6, seed)
        assert sync.success and asynchronous.success
        assert asynchronous.completion_time_s < sync.completion_time_s - 0.3, mode
    fast = run(expert, settings, 'sync', 0.0, seed)
    assert fast.completion_time_s < sync.completion_time_s - 0.5
    assert sync.held_ticks > fast.held_ticks, 'synchronous holds while the policy computes'


def test_a_policy_that_does_nothing_scores_zero(settings):
    policy = resolve_policy('idle')
    results = run_matrix(policy, [Configuration('aligned', 0.0), Configuration('sync', 0.3)],
                         episode_seeds(0, 1), 'sim', settings, TaskConfig(time_limit_s=3.0))
    assert [r.success for r in results] == [False, False]
    assert all(r.max_lift_m < 0.002 and not r.error for r in results)
    assert all(r.chunks_accepted > 0 for r in results), 'the policy was served and used'


def test_a_crashed_simulation_is_a_failure_with_its_seed_and_the_matrix_goes_on(
        settings, monkeypatch):
    seeds = episode_seeds(0, 2)
    crash_seed = seeds[0]
    original = simtime.SimulatedSystem.read

    def read(system):
        original(system)
        if system.seed == crash_seed and system.now > 1.0:
            system.sim.data.qvel[0] = np.nan   # the physics blows up

    monkeypatch.setattr(simtime.SimulatedSystem, 'read', read)
    seen = []
    results = run_matrix(resolve_policy('expert'), [Configuration('aligned', 0.0)], seeds,
                         'sim', settings, TASK, progress=seen.append)
    assert len(results) == len(seen) == 2
    crashed, fine = results
    assert crashed.seed == crash_seed and not crashed.success
    assert 'simulation crashed' in crashed.error and 'non-finite velocity' in crashed.error
    assert fine.success and not fine.error


def test_the_simulated_system_mirrors_the_node_settings(settings, expert):
    system = simtime.SimulatedSystem(expert, settings, Configuration('ensemble', 0.3), 1, TASK)
    try:
        hardware = settings.hardware_config()   # the file's values over the declarations
        assert system.read_period == pytest.approx(1 / hardware.publish_rate_hz)
        assert system.gate.limits.max_relative_target == hardware.max_relative_target
        assert system.core.config.chunk_merge == 'ensemble'
        assert system.core.config.refill_seconds == \
            settings.executor_config('ensemble').refill_seconds
        assert system.server.settings == dataclasses.replace(
            settings.server_config(), extra_latency_s=0.3)   # the link, held back by the loop
        assert system.latency_s == 0.3
        # Held there, settled under gravity (the shoulder and elbow sag a few hundredths).
        assert np.allclose(system.sim.positions(), hardware.sim_initial_positions, atol=0.05)
    finally:
        system.close()


def test_the_node_configs_are_the_files_values_over_the_declarations_defaults(settings):
    # What the simulated-time runner reads of the nodes is what each node would build.
    from remote_inference_py.common.settings import declared
    from remote_inference_py.hardware.config import HardwareConfig

    def with_hardware(**changes):
        hardware = {**settings.node('hardware_interface'), **changes}
        return dataclasses.replace(settings, parameters={**settings.parameters,
                                                         'hardware_interface': hardware})

    assert settings.hardware_config().sim_image_width == 96      # the file's
    unset = with_hardware()
    del unset.parameters['hardware_interface']['sim_image_width']
    default = declared(HardwareConfig)['sim_image_width'].default
    assert unset.hardware_config().sim_image_width == default != 96
    with pytest.raises(ValueError, match="'sim_camera_rate_hz' is 0.0; expected 0.1 to 120.0"):
        with_hardware(sim_camera_rate_hz=0.0).hardware_config()
    assert settings.server_config().observation_history == 10
    assert settings.executor_settings('aligned').task == 'pick up the cube'


def test_a_second_request_in_flight_hides_a_turnaround_above_half_a_chunk(expert, settings):
    """L = 1.0 s with 50-step chunks at 30 Hz (1.67 s): one request in flight starves."""
    assert expert.spec.chunk_length == 50 and expert.spec.fps == 30.0
    seed = episode_seeds(0, 1)[0]
    results = {}
    for in_flight in (1, 2):
        parameters = {**settings.parameters, 'executor': {
            **settings.node('executor'), 'max_requests_in_flight': in_flight}}
        staggered = dataclasses.replace(settings, parameters=parameters)
        results[in_flight] = simtime.run_episode(
            expert, 'expert', staggered, Configuration('aligned', 1.0), seed, TASK)
    one, two = results[1], results[2]
    assert not one.error and not two.error, (one.error, two.error)
    assert one.starved_ticks > 0, 'one request in flight cannot keep up'
    assert two.starved_ticks == 0, 'two staggered requests keep the plan covered'
    assert two.chunks_dropped == 0
    assert two.requests > one.requests
