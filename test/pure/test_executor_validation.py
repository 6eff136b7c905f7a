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

"""Chunk validation alone: each check names the problem, and each tolerance holds just inside
and fails just outside (step period, capture time, joint limits, earliest capture)."""

import dataclasses

import numpy as np
import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.validation import Chunk, ChunkValidator

JOINTS = ('j1', 'j2')
CONFIG = ExecutorConfig(joint_names=JOINTS, fps=10.0, joint_lower_limits=(-1.0, -2.0),
                        joint_upper_limits=(1.0, 2.0), capture_tolerance_s=0.01,
                        step_period_tolerance=0.01)
NOW = 5.0


def chunk(**changes):
    fields = dict(session_id='s', request_id=1, capture_time=4.9, joint_names=JOINTS,
                  step_period=0.1, positions=np.array([[0.1, 0.2], [0.3, 0.4]]))
    fields.update(changes)
    return Chunk(**fields)


def check(validator=None, earliest=4.5, waited=False, **changes):
    return (validator or ChunkValidator(CONFIG)).positions(chunk(**changes), NOW, earliest,
                                                           waited)


def test_a_good_chunk_comes_back_in_config_joint_order():
    positions, problem = check()
    assert problem == '' and positions.tolist() == [[0.1, 0.2], [0.3, 0.4]]
    positions, problem = check(joint_names=('j2', 'j1'))
    assert problem == '' and positions.tolist() == [[0.2, 0.1], [0.4, 0.3]]
    positions, problem = check(positions=np.array([0.1, 0.2, 0.3, 0.4]), step_count=2)
    assert problem == '' and positions.shape == (2, 2)


@pytest.mark.parametrize('changes, reason', [
    ({'joint_names': ('j1', 'j1')}, "joint 'j1' appears twice in chunk"),
    ({'joint_names': ('j1', 'x')}, "unexpected joint 'x' in chunk"),
    ({'joint_names': ('j1',), 'positions': np.zeros((2, 1))}, "joint 'j2' missing from chunk"),
    ({'positions': [['a', 'b']]}, 'positions are not numbers'),
    ({'positions': np.zeros(5), 'step_count': 2},
     'positions has 5 values, expected step_count 2 x 2 joints = 4'),
    ({'positions': np.zeros(4)}, 'positions must be (steps, joints), got shape (4,)'),
    ({'positions': np.zeros((3, 2)), 'step_count': 2}, 'chunk has 3 steps but step_count says 2'),
    ({'positions': np.zeros((0, 2))}, 'chunk has no steps'),
    ({'positions': np.zeros((2, 3))}, 'chunk has 3 columns but names 2 joints'),
    ({'positions': np.array([[0.0, 0.0], [np.nan, 0.0]]), 'joint_names': ('j2', 'j1')},
     "non-finite value at step 1 joint 'j2'"),
    ({'capture_time': float('nan')}, 'capture time is not finite'),
])
def test_each_problem_is_named(changes, reason):
    positions, problem = check(**changes)
    assert positions is None and problem == reason


@pytest.mark.parametrize('relative, ok', [(0.0099, True), (-0.0099, True), (0.0101, False),
                                          (-0.0101, False)])
def test_the_step_period_tolerance_is_relative_to_one_over_fps(relative, ok):
    positions, problem = check(step_period=0.1 * (1 + relative))
    assert (problem == '') == ok, problem
    if not ok:
        assert problem.startswith('step period') and 'does not match 1/fps = 0.1 s' in problem


@pytest.mark.parametrize('after, ok', [(0.0099, True), (0.0101, False)])
def test_a_capture_after_arrival_is_allowed_up_to_the_tolerance(after, ok):
    positions, problem = check(capture_time=NOW + after)
    assert (problem == '') == ok, problem
    if not ok:
        assert problem == 'capture time is in the future (0.010 s after arrival)'


@pytest.mark.parametrize('value, ok', [(1.0, True), (1.0 + 1e-9, False), (-1.0, True),
                                       (-1.0 - 1e-9, False)])
def test_limits_include_their_bounds(value, ok):
    positions, problem = check(positions=np.array([[0.0, 0.0], [value, 0.0]]))
    assert (problem == '') == ok, problem
    if not ok:
        assert problem.startswith("joint 'j1' value")
        assert problem.endswith('at step 1 outside limits [-1, 1]')


def test_limits_are_checked_in_config_order_after_reordering():
    positions, problem = check(joint_names=('j2', 'j1'), positions=np.array([[1.5, 0.0]]))
    assert problem == ''   # 1.5 is j2's, within [-2, 2]
    positions, problem = check(joint_names=('j2', 'j1'), positions=np.array([[0.0, 1.5]]))
    assert problem.startswith("joint 'j1' value 1.5 at step 0")


@pytest.mark.parametrize('waited, words', [(False, 'before the requested earliest capture'),
                                           (True, 'before the wait began')])
def test_a_capture_before_the_earliest_is_stale_and_names_the_wait(waited, words):
    assert check(capture_time=4.5, earliest=4.5, waited=waited)[1] == ''
    problem = check(capture_time=4.5 - 1e-9, earliest=4.5, waited=waited)[1]
    assert problem.startswith('stale: captured at t=4.500') and words in problem


def test_tolerances_follow_a_new_config():
    validator = ChunkValidator(CONFIG)
    assert check(validator, capture_time=NOW + 0.05)[1].startswith('capture time is in the')
    validator.config = dataclasses.replace(CONFIG, capture_tolerance_s=0.1)
    assert check(validator, capture_time=NOW + 0.05)[1] == ''


def test_the_first_problem_wins():
    positions, problem = check(step_period=0.2, positions=np.array([[np.nan, 5.0]]))
    assert problem.startswith('step period')
