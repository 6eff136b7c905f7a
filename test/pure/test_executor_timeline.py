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

"""The plan and timeline alone: which control tick is due, which target it moves toward, how
far it may move, what is buffered, and where a chunk lands (fps = 10, two joints)."""

import dataclasses
import math

import numpy as np
import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.merge import Plan
from remote_inference_py.executor.timeline import Timeline

CONFIG = ExecutorConfig(joint_names=('j1', 'j2'), fps=10.0, max_step_rad=math.inf)
ZERO = np.zeros(2)


def rows(*values):
    return np.array([[v, 0.0] for v in values])


def timeline(start=0.0, plan_start=1, values=(), **changes):
    line = Timeline(dataclasses.replace(CONFIG, **changes))
    line.start = start
    if values:
        line.plan = Plan.from_positions(plan_start, rows(*values))
    return line


def test_the_due_tick_is_rounded_and_never_repeats_and_late_ticks_skip():
    assert timeline(start=1.0).advance(1.149) == (1, 1)   # 1.49 ticks rounds to 1 (0 skipped)
    assert timeline(start=1.0).advance(1.151) == (2, 2)   # 1.51 rounds to 2
    line = timeline(start=1.0)
    assert line.advance(1.0) == (0, 0)
    assert line.advance(1.149) == (1, 0)
    assert line.advance(1.151) == (2, 0)
    assert line.advance(1.16) == (3, 0)      # already handled: the next one
    assert line.advance(1.6) == (6, 2)       # late: ticks 4 and 5 skipped


def test_the_first_control_tick_of_an_action_tick_commits_its_row():
    line = timeline(values=(1.0, 2.0), interpolation_multiplier=2)
    line.advance(0.0)
    assert line.target(0) is None                 # tick 0: nothing planned
    line.hold(0)
    assert line.committed_tick == 0
    assert line.target(1).tolist() == [1.0, 0.0]  # control tick 1 -> action tick 1
    assert line.committed_tick == 1 and len(line.plan) == 1
    assert line.step_toward(1, ZERO).tolist() == [0.5, 0.0]   # half way over two ticks
    assert line.motion_started
    assert line.target(2).tolist() == [1.0, 0.0]  # same segment, no new row taken
    assert line.step_toward(2, np.array([0.5, 0.0])).tolist() == [1.0, 0.0]
    assert line.target(3).tolist() == [2.0, 0.0] and len(line.plan) == 0


@pytest.mark.parametrize('limit, expected', [(0.3, 0.3), (1.0, 1.0), (0.9999, 0.9999)])
def test_a_command_moves_at_most_max_step_rad_per_tick(limit, expected):
    line = timeline(values=(1.0,), max_step_rad=limit)
    line.target(1)
    assert line.step_toward(1, ZERO)[0] == pytest.approx(expected)


def test_buffered_playback_counts_from_the_last_handled_tick():
    line = timeline(values=(1.0, 2.0, 3.0), interpolation_multiplier=2)
    assert line.buffered_playback() == pytest.approx(7 * 0.05)   # ticks 0..6, last tick -1
    line.advance(0.0)
    line.advance(0.05)
    line.target(1)
    assert line.buffered_playback() == pytest.approx(5 * 0.05)
    line.clear()
    assert line.buffered_playback() == 0.0 and line.committed_tick == 1


def test_a_chunk_is_placed_from_its_capture_when_moving_and_at_the_first_free_tick_holding():
    line = timeline(values=(1.0, 2.0, 3.0, 4.0))
    line.advance(0.0)
    line.target(1)   # tick 1 committed
    result = line.merge(rows(10.0, 20.0), capture_time=0.25, holding=False, previous=ZERO)
    assert result.usable and line.plan.start_tick == 2
    assert line.plan.positions[:, 0].tolist() == [2.0, 10.0, 20.0]   # step 0 at tick 3
    result = line.merge(rows(7.0), capture_time=0.25, holding=True, previous=ZERO)
    assert line.plan.row(2)[0] == 7.0                                  # first free tick


def test_an_unusable_chunk_leaves_the_plan():
    line = timeline(values=(1.0, 2.0))
    line.advance(0.0)
    line.target(1)
    line.target(2)
    before = line.plan
    result = line.merge(rows(5.0), capture_time=0.05, holding=False, previous=ZERO)
    assert not result.usable and result.reason and line.plan is before


def test_blending_follows_the_configured_components():
    line = timeline(blend_steps=2, blend_components=('j2',))
    assert line.blend_mask.tolist() == [False, True]
    line.configure(dataclasses.replace(CONFIG, blend_components=()))
    assert line.blend_mask is None


def test_the_committed_plan_starts_at_the_capture_and_freezes_until_landing():
    line = timeline(values=(1.0, 2.0, 3.0, 4.0, 5.0), chunk_merge='rtc')
    line.advance(0.0)
    line.target(1)
    plan, frozen_until = line.committed_plan(now=0.1, earliest=0.0, turnaround_s=0.2)
    # First tick after a capture at 0.0 is tick 1 (committed): rows 1..5; landing at 0.3 ->
    # ticks before 3 are frozen.
    assert plan.positions[:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert plan.frozen_steps == 2 and frozen_until == 3
    assert plan.start == pytest.approx(0.1)   # the time of tick 1
    empty = timeline(chunk_merge='rtc')
    assert empty.committed_plan(0.1, 0.0, 0.2) == (None, None)


def test_the_source_is_the_request_whose_chunk_the_committed_target_came_from():
    line = timeline(values=(1.0, 2.0, 3.0, 4.0, 5.0))   # ticks 1..5, no request named (0)
    line.advance(0.0)
    line.target(1)
    # Captured at 0.35: step 0 at tick 4. It takes over there, not when it is merged.
    line.merge(rows(10.0, 20.0, 30.0), capture_time=0.35, holding=False, previous=ZERO,
               source=7)
    sources = []
    for tick in (2, 3, 4):
        line.target(tick)
        sources.append(line.source)
    assert sources == [0, 0, 7]
    # Request 8 would take over at tick 7, request 9 then takes over at tick 6: 8 never
    # drives, so it is never the source. An unusable chunk (all committed) changes nothing.
    line.merge(rows(40.0, 50.0), capture_time=0.65, holding=False, previous=ZERO, source=8)
    line.merge(rows(60.0, 70.0, 80.0), capture_time=0.55, holding=False, previous=ZERO,
               source=9)
    assert not line.merge(rows(1.0), capture_time=0.35, holding=False, previous=ZERO,
                          source=10).usable
    played = []
    for tick in (5, 6, 7, 8):
        played.append((line.target(tick)[0], line.source))
    assert played == [(20.0, 7), (60.0, 9), (70.0, 9), (80.0, 9)]
