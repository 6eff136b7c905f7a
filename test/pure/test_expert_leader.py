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

"""The scripted expert as the human on the leader arm: when it re-plans, what it plays."""

import numpy as np
import pytest

from remote_inference_py.evaluation.expert_leader import ExpertHuman


class CountingExpert:
    """A stand-in for PickExpert: plan k is k + step / 100 on every joint."""

    def __init__(self):
        self.calls = []

    def plan(self, q, cube, steps, fps):
        self.calls.append((tuple(q), tuple(cube)))
        k = len(self.calls)
        return np.array([[k + step / 100] * 6 for step in range(steps)])


def test_nothing_is_played_before_the_arm_and_the_cube_were_seen():
    human = ExpertHuman(CountingExpert(), fps=10.0, replan_s=0.5, steps=10)
    assert human.position(0.0) is None
    human.observe(q=np.zeros(6))
    assert human.position(0.0) is None
    human.observe(cube_pose=[0.2, 0, 0.02, 0, 0, 0, 1])
    assert human.position(0.0)[0] == 1.0


def test_the_plan_is_played_at_fps_and_replanned_from_the_newest_pose_every_replan_s():
    expert = CountingExpert()
    human = ExpertHuman(expert, fps=10.0, replan_s=0.5, steps=10)
    human.observe(q=np.zeros(6), cube_pose=[0.2, 0, 0.02, 0, 0, 0, 1])
    played = [human.position(0.1 * k)[0] for k in range(5)]
    assert played == pytest.approx([1.0, 1.01, 1.02, 1.03, 1.04])
    human.observe(q=np.full(6, 0.3))
    assert human.position(0.49)[0] == pytest.approx(1.04)   # just inside: the same plan
    assert human.position(0.5)[0] == pytest.approx(2.0)     # due: re-planned
    assert expert.calls[-1][0] == (0.3,) * 6 and human.plans == 2


def test_a_replan_period_longer_than_the_plan_is_refused_by_name():
    with pytest.raises(ValueError, match=r'replan_s must be in \(0, 1\] s'):
        ExpertHuman(CountingExpert(), fps=10.0, replan_s=1.5, steps=10)
