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

"""The pick-the-cube task: episode seeds, the success predicate, the jaw pads."""

import pytest

from remote_inference_py.evaluation.task import (
    episode_seeds, in_region, JOINT_NAMES, LiftMonitor, TaskConfig, VISIBLE_REGION)
from remote_inference_py.hardware.sim import SimConfig, So101Sim
from remote_inference_py.hardware.sim_scene import (
    build_spec, cube_position, enable_jaw_pads, JAW_PAD_GEOMS)


def test_episode_seeds_are_deterministic_and_in_the_region():
    seeds = episode_seeds(0, 20)
    assert seeds == episode_seeds(0, 20)
    assert len(seeds) == len(set(seeds)) == 20
    assert seeds == sorted(seeds) and seeds[0] >= 0
    for seed in seeds:
        assert in_region(cube_position(seed), VISIBLE_REGION)
    skipped = [s for s in range(seeds[-1]) if s not in seeds]
    assert skipped, 'the region should exclude some cube positions (x > 0.32 m)'
    for seed in skipped:
        assert not in_region(cube_position(seed), VISIBLE_REGION)
    assert episode_seeds(seeds[3], 2) == seeds[3:5]


def test_episode_seeds_refuse_a_bad_seed_or_an_empty_region():
    with pytest.raises(ValueError, match='seed must be an integer >= 0'):
        episode_seeds(-1, 3)
    with pytest.raises(ValueError, match='holds almost no cube position'):
        episode_seeds(0, 1, ((0.9, 0.9), (0.91, 0.91)))


@pytest.mark.parametrize('field, value', [('lift_height_m', 0.0), ('hold_s', -1.0),
                                          ('time_limit_s', float('nan'))])
def test_task_config_names_a_bad_field(field, value):
    with pytest.raises(ValueError, match=field):
        TaskConfig(**{field: value})


def test_lift_monitor_needs_the_lift_held_and_reports_when_it_began():
    task = TaskConfig(lift_height_m=0.05, hold_s=1.0)
    monitor = LiftMonitor(task)
    samples = [(0.0, 0.02), (1.0, 0.03), (1.5, 0.08),   # lifted at 1.5 s ...
               (1.9, 0.03),                             # ... and dropped: not held
               (2.5, 0.075), (3.0, 0.08), (3.4, 0.09)]  # lifted again at 2.5 s
    for time_s, z in samples:
        assert not monitor.update(time_s, z)
    assert not monitor.success
    assert monitor.update(3.5, 0.09)
    assert monitor.success and monitor.completion_time_s == pytest.approx(2.5)
    outcome = monitor.outcome()
    assert outcome.max_lift_m == pytest.approx(0.07)
    assert monitor.update(4.0, 0.0), 'a confirmed success stays confirmed'


def test_lift_monitor_uses_the_given_resting_height():
    monitor = LiftMonitor(TaskConfig(lift_height_m=0.05, hold_s=0.5), rest_z=0.02)
    assert not monitor.update(0.0, 0.069)
    assert not monitor.update(1.0, 0.071)
    assert monitor.update(1.5, 0.071)
    assert monitor.completion_time_s == pytest.approx(1.0)


def test_lift_monitor_ignores_non_finite_heights():
    monitor = LiftMonitor(TaskConfig(hold_s=0.5), rest_z=0.02)
    monitor.update(0.0, 0.1)
    monitor.update(0.3, float('nan'))
    assert not monitor.update(0.6, 0.1)


def pads_collide(model):
    import mujoco
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name) for name in JAW_PAD_GEOMS]
    return all(model.geom_contype[i] == 1 and model.geom_conaffinity[i] == 1 for i in ids)


def test_the_simulation_grasps_with_its_jaw_pads():
    raw = build_spec().compile()
    assert not pads_collide(raw), 'the shipped model has inert pads: enable_jaw_pads matters'
    assert enable_jaw_pads(raw) is True and pads_collide(raw)
    assert enable_jaw_pads(raw) is False, 'enabling twice changes nothing'
    sim = So101Sim(SimConfig(joint_names=JOINT_NAMES, render=False))
    try:
        assert pads_collide(sim.model)
    finally:
        sim.close()
