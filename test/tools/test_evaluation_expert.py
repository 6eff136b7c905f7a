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

"""The scripted expert and the do-nothing policy behind the policy server's interface."""

import numpy as np
import pytest

from remote_inference_py.evaluation.expert import (
    ArmKinematics, CUBE_FEATURE, cube_yaw_directions, ExpertSettings, PickExpert, Segment,
    STATE_FEATURE)
from remote_inference_py.evaluation.task import INITIAL_POSITIONS
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import PolicyServerCore
from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.runtimes import RuntimeOptions, warm_up, zero_inputs

EXPERT = 'remote_inference_py.evaluation.expert:expert_runtime'
IDLE = 'remote_inference_py.evaluation.expert:idle_runtime'


@pytest.fixture(scope='module')
def expert():
    return PickExpert()


def cube_pose(x, y, z=0.02, yaw=0.0):
    """Return (x, y, z, qx, qy, qz, qw) for a cube turned by ``yaw`` about the vertical."""
    return np.array([x, y, z, 0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])


def test_the_server_loads_the_expert_with_a_privileged_cube_pose():
    runtime = load_runtime(RuntimeOptions(policy_type='python', checkpoint=EXPERT))
    spec = runtime.spec
    kinds = {f.name: f.kind for f in spec.features}
    assert kinds == {STATE_FEATURE: 'state', CUBE_FEATURE: 'privileged'}
    cube = spec.feature(CUBE_FEATURE)
    assert cube.shape == (7,) and cube.message == 'geometry_msgs/PoseStamped'
    assert cube.topic == 'sim/cube_pose'
    assert spec.chunk_length == 50 and spec.fps == 30.0
    warm_up(runtime, 1)
    core = PolicyServerCore(ServerConfig(deployment='so101'), runtime)
    declared = {f.name: f.kind for f in core.contract.features}
    assert declared[CUBE_FEATURE] == 'privileged'


def test_the_do_nothing_policy_repeats_the_observed_pose():
    runtime = load_runtime(RuntimeOptions(policy_type='python', checkpoint=IDLE))
    assert [f.name for f in runtime.spec.features] == [STATE_FEATURE]
    inputs = zero_inputs(runtime.spec, 2)
    inputs[STATE_FEATURE][:] = np.array(INITIAL_POSITIONS, dtype=np.float32)
    chunk = runtime.infer(inputs, ['', ''])
    assert chunk.shape == (2, 50, 6)
    assert np.allclose(chunk, np.array(INITIAL_POSITIONS, dtype=np.float32))


def test_ik_puts_the_grasp_point_on_target_pointing_down_with_aligned_jaws():
    kinematics = ArmKinematics()
    start = np.array(INITIAL_POSITIONS)
    for target in ([0.25, 0.0, 0.02], [0.3, 0.08, 0.02], [0.22, -0.09, 0.08]):
        target = np.array(target)
        jaw = kinematics.jaw_direction(start, target, cube_yaw_directions([0, 0, 0, 1]))
        arm = kinematics.solve(target, start[:5], jaw, iterations=60)
        reached = kinematics.grasp_point(np.append(arm, 0.5))
        assert np.linalg.norm(reached - target) < 0.003
        axes = kinematics.data.site_xmat[kinematics.site].reshape(3, 3)
        assert axes[2, 0] < -0.99, 'the gripper points down'
        assert abs(axes[:2, 2] @ jaw[:2]) > 0.99, 'the jaws close along a face normal'


def test_cube_yaw_directions_are_the_horizontal_face_normals():
    directions = cube_yaw_directions(cube_pose(0, 0, yaw=0.3)[3:])
    assert len(directions) == 4
    for direction in directions:
        assert np.isclose(np.linalg.norm(direction), 1.0) and direction[2] == 0
        angle = np.arctan2(direction[1], direction[0]) - 0.3
        assert np.isclose(np.sin(2 * angle), 0.0, atol=1e-9), 'multiples of 90 degrees'


def test_phases_follow_the_observation(expert):
    cube = cube_pose(0.26, 0.02)
    jaw = np.array([1.0, 0.0, 0.0])
    start = np.array(INITIAL_POSITIONS)
    assert expert.phase(start, cube, jaw) == 'reopen', 'jaws start half closed: open first'
    opened = start.copy()
    opened[5] = 1.2
    assert expert.phase(opened, cube, jaw) == 'approach'
    kinematics = expert.kin
    bottom = expert.grasp_target(cube, jaw)
    at_cube = np.append(kinematics.solve(bottom, start[:5], jaw, 60), 1.2)
    assert expert.phase(at_cube, cube, jaw) == 'close'
    above = np.append(kinematics.solve(bottom + [0, 0, 0.04], start[:5], jaw, 60), 1.2)
    assert expert.phase(above, cube, jaw) == 'descend'
    holding = at_cube.copy()
    holding[5] = 0.45
    assert expert.phase(holding, cube, jaw) == 'lift'
    missed = holding.copy()
    assert expert.phase(missed, cube_pose(0.32, -0.08), jaw) == 'reopen'


def test_segments_are_sampled_at_the_action_period_with_speed_and_waits():
    segments = [Segment(np.array([0.1, 0.0, 0.0]), 1.0, speed=0.1),   # 1 s
                Segment(np.array([0.1, 0.0, 0.0]), 0.0, duration=0.5)]
    points, grippers, which = PickExpert.sample(segments, np.zeros(3), 45, 1 / 30)
    assert np.allclose(points[0], [0.1 / 30, 0, 0])
    assert np.allclose(points[29], [0.1, 0, 0])
    assert (grippers[:30] == 1.0).all() and (grippers[30:45] == 0.0).all()
    assert list(which[:30]) == [0] * 30 and list(which[30:45]) == [1] * 15
    led, _, _ = PickExpert.sample(segments, np.zeros(3), 5, 1 / 30, lead_s=0.1)
    assert np.allclose(led[0], [0.1 * (0.1 + 1 / 30), 0, 0])


def test_plans_are_chunks_of_joint_targets_within_the_limits(expert):
    chunk = expert.plan(np.array(INITIAL_POSITIONS), cube_pose(0.28, -0.05), 50, 30.0)
    assert chunk.shape == (50, 6) and np.isfinite(chunk).all()
    assert (chunk >= expert.kin.lower - 1e-9).all() and (chunk <= expert.kin.upper + 1e-9).all()
    assert (chunk[:, 5] == ExpertSettings().gripper_open).all(), 'the jaws open on the way'
    steps = np.abs(np.diff(chunk, axis=0)).max()
    assert steps < 0.15, f'consecutive targets jump by {steps:.3f} rad'
