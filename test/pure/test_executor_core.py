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

"""ExecutorCore: timeline, refill, validation, waiting, faults and shutdown, hand-computed.

Most cases use fps = 10 (one action tick every 0.1 s) and two joints, j1 carrying the values
and j2 staying at 0, so every expected command can be checked by hand.
"""

import dataclasses
import math
from pathlib import Path
import re

from core_fixtures import FPS, j1, JOINTS, Loop, make_chunk, make_executor
import numpy as np
import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.core import ExecutorCore, State


def started_with(values, arrival=0.05, capture=0.01, **changes):
    """Start a core, answer the startup request with `values` at `arrival` (before tick 1)."""
    core = make_executor(**changes)
    loop = Loop(core)
    first = loop.tick()
    assert first.request.request_id == 1
    verdict = core.on_chunk(make_chunk(1, capture, values), arrival)
    assert verdict.accepted, verdict.reason
    return core, loop


# ----------------------------------------------------------------------------- lifecycle

def test_state_values_match_the_status_message():
    text = (Path(__file__).parents[2] / 'msg' / 'ExecutorStatus.msg').read_text()
    constants = dict(re.findall(r'uint8 STATE_(\w+)\s*=\s*(\d+)', text))
    assert {name: int(value) for name, value in constants.items()} == {
        state.name: state.value for state in State}


def test_nothing_is_sent_before_start():
    core = ExecutorCore(ExecutorConfig(joint_names=JOINTS))
    out = core.tick(0.0)
    assert (out.command, out.request, out.state) == (None, None, State.IDLE)
    with pytest.raises(RuntimeError, match='cannot start in state IDLE'):
        core.start(0.0)
    with pytest.raises(ValueError, match='session_id'):
        core.admit('')
    core.admit('s1')
    assert core.state == State.READY
    assert core.tick(0.0).command is None
    with pytest.raises(RuntimeError, match='cannot admit a session in state READY'):
        core.admit('s2')
    with pytest.raises(RuntimeError, match='no healthy measured pose'):
        core.start(0.0)


def test_stop_before_start_is_terminal_at_once():
    core = make_executor(start=False)
    core.stop(0.0)
    assert core.state == State.STOPPED and core.is_terminal
    assert core.tick(0.1).command is None


def test_measured_pose_must_have_one_value_per_joint():
    core = ExecutorCore(ExecutorConfig(joint_names=JOINTS))
    with pytest.raises(ValueError, match='measured pose has 3 values but joint_names has 2'):
        core.on_measured([0.0, 0.0, 0.0])
    assert core.on_measured([0.0, math.nan]) is False
    assert core.on_applied([math.inf, 0.0]) is False


def test_first_tick_holds_the_measured_pose_and_requests_a_fresh_capture():
    core = make_executor(measured=(0.5, -0.5))
    out = core.tick(0.0)
    assert out.held and out.command.tolist() == [0.5, -0.5]
    assert out.state == State.WAITING
    assert out.request.request_id == 1
    assert out.request.earliest_capture_time == 0.0
    assert out.request.kind == 'startup'
    assert any('waiting for the first chunk' in event for event in out.events)
    stats = core.stats()
    assert (stats.held_ticks, stats.starved_ticks, stats.requests) == (1, 0, 1)


# ----------------------------------------------------------------------------- timeline

def test_first_chunk_plays_from_step_0_whatever_the_latency():
    core = make_executor()
    loop = Loop(core)
    loop.run(5)                                   # ticks 0..4 hold (t = 0.0 .. 0.4)
    verdict = core.on_chunk(make_chunk(1, 0.02, [1, 2, 3]), 0.45)
    assert verdict.accepted
    assert (verdict.trimmed_steps, verdict.usable_steps) == (0, 3)
    assert verdict.turnaround == pytest.approx(0.45)
    assert verdict.observation_age == pytest.approx(0.43)
    out = loop.tick()                             # tick 5 plays step 0
    assert (j1(out), out.held, out.state) == (1.0, False, State.RUNNING)
    assert 'resumed after 0.50 s of waiting' in ' '.join(out.events)
    assert [j1(o) for o in loop.run(3)] == [2.0, 3.0, 3.0]
    assert loop.outputs[-1].held


def test_aligned_trims_the_steps_the_robot_has_passed():
    core, loop = started_with(list(range(1, 11)))   # ticks 1..10 play 1..10
    outs = loop.run(8)                               # ticks 1..8
    assert [j1(o) for o in outs] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [o.request for o in outs[:-1]] == [None] * 7
    request = outs[-1].request                       # buffered 0.2 s <= refill 0.2 s
    assert (request.request_id, request.kind) == (2, 'refill')
    assert request.playback_at_submission == pytest.approx(0.2)
    assert request.earliest_capture_time == pytest.approx(0.7)
    assert j1(loop.tick()) == 9                      # tick 9
    # captured at 0.82 -> step 0 targets tick 9, which is committed: trimmed
    verdict = core.on_chunk(make_chunk(2, 0.82, [20, 21, 22, 23]), 0.95)
    assert (verdict.trimmed_steps, verdict.usable_steps, verdict.overlap_steps) == (1, 3, 1)
    assert verdict.seam == pytest.approx(11.0)       # 21 replaces 10 at tick 10
    assert verdict.playback_at_submission == pytest.approx(0.2)
    assert [j1(o) for o in loop.run(4)] == [21, 22, 23, 23]
    assert core.stats().trimmed_steps == 1


def test_action_offset_shifts_every_step():
    core, loop = started_with(list(range(1, 11)), action_offset=1)
    assert core.plan.start_tick == 1
    assert core.plan.positions[:, 0].tolist()[:3] == [0, 1, 2]   # tick 1 repeats the hold
    outs = loop.run(9)                               # ticks 1..9
    assert [j1(o) for o in outs] == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert not any(o.held for o in outs)
    assert outs[-1].request.request_id == 2          # plan ends at tick 11: 0.2 s left
    loop.tick()                                      # tick 10
    # captured at 0.92 -> first tick after is 10, + offset 1 -> step 0 at tick 11
    verdict = core.on_chunk(make_chunk(2, 0.92, [20, 21, 22]), 1.05)
    assert (verdict.trimmed_steps, verdict.overlap_steps) == (0, 1)
    assert [j1(o) for o in loop.run(3)] == [20, 21, 22]


def test_interpolation_commits_the_target_being_approached():
    core = make_executor(interpolation_multiplier=2)    # control ticks every 0.05 s
    loop = Loop(core)
    loop.tick()                                      # tick 0 holds, request 1
    core.on_chunk(make_chunk(1, 0.01, [1, 2]), 0.02)
    out = loop.tick()                                # tick 1: halfway to action tick 1
    assert j1(out) == 0.5
    assert core.committed_tick == 1
    assert core.committed_target[0] == 1.0
    assert out.request.request_id == 2               # 0.15 s left <= 0.2 s
    # captured at 0.051: step 0 targets action tick 1, committed -> trimmed
    verdict = core.on_chunk(make_chunk(2, 0.051, [5, 6, 7]), 0.07)
    assert verdict.trimmed_steps == 1
    assert [j1(o) for o in loop.run(5)] == [1.0, 3.5, 6.0, 6.5, 7.0]


def test_interpolation_sub_steps_are_linear():
    core = make_executor(interpolation_multiplier=4)
    loop = Loop(core)
    loop.tick()
    core.on_chunk(make_chunk(1, 0.0, [4, 0]), 0.01)
    assert [j1(o) for o in loop.run(8)] == [1, 2, 3, 4, 3, 2, 1, 0]


def test_step_clamp_limits_every_dispatched_change():
    core, loop = started_with([1, 1, 1, 1, 1], max_step_rad=0.3)
    assert [j1(o) for o in loop.run(5)] == [0.3, 0.6, 0.9, 1.0, 1.0]


def test_columns_are_matched_by_name():
    core = make_executor()
    loop = Loop(core)
    loop.tick()
    positions = np.array([[-1.0, 7.0], [-2.0, 8.0]])          # columns j2, j1
    verdict = core.on_chunk(make_chunk(1, 0.0, positions, names=('j2', 'j1')), 0.01)
    assert verdict.accepted
    assert loop.tick().command.tolist() == [7.0, -1.0]


def test_flat_positions_with_step_count_are_accepted():
    core = make_executor()
    Loop(core).tick()
    chunk = make_chunk(1, 0.0, np.array([1.0, 0.0, 2.0, 0.0]), step_count=2)
    assert core.on_chunk(chunk, 0.01).usable_steps == 2


def test_late_ticks_skip_missed_ticks_and_never_repeat_one():
    core = make_executor()
    assert core.tick(0.0).tick_index == 0
    assert core.tick(0.34).tick_index == 3           # ticks 1 and 2 were missed
    assert core.tick(0.34).tick_index == 4           # called twice: never the same tick
    assert core.tick(0.41).tick_index == 5
    assert core.stats().skipped_ticks == 2


# ----------------------------------------------------------------------------- refill

@pytest.mark.parametrize('refill_seconds, arrival, request_tick, playback', [
    (0.3, 0.05, 7, 0.3),      # effective = max(0.3, 0.05 + 0.1) = 0.3
    (0.0, 0.05, 9, 0.1),      # effective = 0.15: 0.2 s left is too much, 0.1 s is not
    (0.2, 0.55, 9, 0.6),      # slow start: effective = 0.55 + 0.1 = 0.65; plan ends at 15
    (1.5, 0.05, 1, 0.9),      # refill above the plan length: request at once
])
def test_refill_request_tick(refill_seconds, arrival, request_tick, playback):
    core = make_executor(refill_seconds=refill_seconds)
    loop = Loop(core)
    loop.tick()
    loop.run(round(arrival * FPS - 0.5))             # the ticks before the chunk arrives
    assert core.on_chunk(make_chunk(1, 0.01, list(range(1, 11))), arrival).accepted
    while loop.index <= request_tick:
        out = loop.tick()
        if loop.index - 1 < request_tick:
            assert out.request is None, loop.index - 1
    assert out.request is not None and out.request.request_id == 2
    assert out.request.playback_at_submission == pytest.approx(playback)
    assert core.stats().effective_refill_s == pytest.approx(
        max(refill_seconds, arrival + 0.1))


def test_at_most_one_request_in_flight():
    core, loop = started_with(list(range(1, 31)), refill_seconds=2.0)
    outs = loop.run(20)
    assert [o.request.request_id for o in outs if o.request] == [2]


def test_refill_seconds_changes_live():
    core, loop = started_with(list(range(1, 11)))
    assert [o.request for o in loop.run(3)] == [None] * 3          # ticks 1..3
    core.update_config(dataclasses.replace(core.config, refill_seconds=0.6))
    out = loop.tick()                                               # tick 4: 0.6 s left
    assert out.request is not None
    assert 'refill_seconds 0.2 -> 0.6' in ' '.join(out.events)
    assert core.stats().refill_s == 0.6


@pytest.mark.parametrize('field_name, value', [
    ('fps', 20.0), ('joint_names', ('a', 'b')), ('interpolation_multiplier', 2),
    ('chunk_merge', 'append'), ('synchronous', True), ('action_offset', 1),
    ('joint_upper_limits', (1.0, 1.0)),
])
def test_structural_fields_cannot_change(field_name, value):
    core = make_executor()
    changes = {field_name: value}
    if field_name == 'joint_upper_limits':
        changes['joint_lower_limits'] = (-1.0, -1.0)
    changed = dataclasses.replace(core.config, **changes)
    before = core.config
    with pytest.raises(ValueError, match=f'cannot change at run time: .*{field_name}'):
        core.update_config(changed)
    assert core.config is before


def test_request_timeout_abandons_the_request_and_drops_its_late_answer():
    core = make_executor(request_timeout_s=0.5)
    loop = Loop(core)
    outs = loop.run(7)                               # ticks 0..6
    assert [o.request.request_id for o in outs if o.request] == [1, 2]
    assert outs[6].request.request_id == 2           # 0.6 s > 0.5 s at tick 6
    assert outs[6].request.earliest_capture_time == 0.0   # still after the wait began
    assert 'request 1 timed out after 0.5 s' in ' '.join(outs[6].events)
    verdict = core.on_chunk(make_chunk(1, 0.01, [1]), 0.65)
    assert verdict.reason == ('stale: answers request 1, which was abandoned after the '
                              '0.5 s timeout')
    assert core.stats().request_timeouts == 1


def test_failed_request_is_retried_after_one_action_period():
    core = make_executor()
    loop = Loop(core)
    loop.tick()
    assert core.on_request_failed(7, 'unknown', 0.05) is False
    assert core.on_request_failed(1, 'policy raised', 0.05) is True
    assert loop.tick().request is None               # t = 0.1 < 0.05 + 0.1
    out = loop.tick()
    assert out.request.request_id == 2
    assert core.stats().request_failures == 1
    assert core.stats().request_retries == 1


def test_failures_in_a_row_are_retried_with_a_growing_pause_never_every_tick():
    core = make_executor()
    loop = Loop(core)
    sent = []
    for _ in range(90):   # 3 s of ticks; every request fails the moment it is sent
        out = loop.tick()
        if out.request is not None:
            sent.append(round(out.request.sent_time, 4))
            core.on_request_failed(out.request.request_id, 'missing observation',
                                   out.request.sent_time)
    gaps = [round(b - a, 4) for a, b in zip(sent, sent[1:])]
    assert gaps == sorted(gaps) and gaps[0] >= 0.1 and max(gaps) <= 1.0 + 0.1
    assert len(sent) <= 8
    stats = core.stats()
    assert (stats.request_failures, stats.request_retries) == (len(sent), len(sent) - 1)


def test_a_server_loss_names_why_in_the_message_and_the_fault():
    core, _ = started_with([0.0] * 3)
    core.server_lost(0.2, 'policy server instance a lost: instance b sent a chunk')
    assert core.stats().message == ('server lost: policy server instance a lost: instance b '
                                    'sent a chunk; this session does not resume')
    assert core.tick(0.25).request is None
    now = 0.3
    while core.state is not State.STOPPING and now < 10.0:
        core.tick(now)
        now += 0.05
    assert core.stats().message.startswith('fault: starved: the server was lost (policy server '
                                           'instance a lost: instance b sent a chunk) and '), \
        core.stats().message


# ----------------------------------------------------------------------------- validation

BAD_CASES = [
    ('nan', dict(positions=np.array([[0.0, 0.0]] * 3 + [[0.0, math.nan]] + [[0.0, 0.0]])),
     {}, "non-finite value at step 3 joint 'j2'"),
    ('inf', dict(positions=np.array([[math.inf, 0.0]])), {},
     "non-finite value at step 0 joint 'j1'"),
    ('missing', dict(positions=np.zeros((3, 1)), names=('j1',)), {},
     "joint 'j2' missing from chunk"),
    ('extra', dict(positions=np.zeros((3, 3)), names=('j1', 'j2', 'wrist_roll')), {},
     "unexpected joint 'wrist_roll' in chunk"),
    ('twice', dict(positions=np.zeros((3, 2)), names=('j1', 'j1')), {},
     "joint 'j1' appears twice in chunk"),
    ('columns', dict(positions=np.zeros((3, 3))), {}, 'chunk has 3 columns but names 2 joints'),
    ('no steps', dict(positions=np.zeros((0, 2))), {}, 'chunk has no steps'),
    ('1-d', dict(positions=np.zeros(4)), {},
     'positions must be (steps, joints), got shape (4,)'),
    ('flat length', dict(positions=np.zeros(5), step_count=3), {},
     'positions has 5 values, expected step_count 3 x 2 joints = 6'),
    ('step count', dict(positions=np.zeros((3, 2)), step_count=4), {},
     'chunk has 3 steps but step_count says 4'),
    ('period', dict(period=0.05), {}, 'step period 0.05 s does not match 1/fps = 0.1 s'),
    ('limits', dict(positions=np.array([[0.0, 0.0], [0.5, 0.0], [1.5, 0.0]])),
     dict(joint_lower_limits=(-1.0, -1.0), joint_upper_limits=(1.0, 1.0)),
     "joint 'j1' value 1.5 at step 2 outside limits [-1, 1]"),
    ('session', dict(session='other'), {},
     "chunk from session 'other' but admitted session is 's1'"),
    ('future', dict(capture=0.55), {}, 'capture time is in the future (0.500 s after arrival)'),
    ('nan capture', dict(capture=math.nan), {}, 'capture time is not finite'),
    ('before wait', dict(capture=-0.1), {},
     'stale: captured at t=-0.100, before the wait began at t=0.000'),
    ('unknown', dict(request_id=7), {}, 'unknown request 7 (in flight: 1)'),
]


@pytest.mark.parametrize('label, chunk_fields, config_changes, reason', BAD_CASES,
                         ids=[case[0] for case in BAD_CASES])
def test_bad_chunks_are_dropped_whole_with_a_named_reason(label, chunk_fields, config_changes,
                                                          reason):
    core = make_executor(**config_changes)
    loop = Loop(core)
    loop.tick()
    fields = dict(request_id=1, capture=0.01, values=np.zeros((3, 2)))
    if 'positions' in chunk_fields:
        fields['values'] = chunk_fields.pop('positions')
    fields.update(chunk_fields)
    verdict = core.on_chunk(make_chunk(fields.pop('request_id'), fields.pop('capture'),
                                       fields.pop('values'), **fields), 0.05)
    assert not verdict.accepted
    assert verdict.reason == reason
    stats = core.stats()
    assert (stats.chunks_dropped, stats.chunks_accepted) == (1, 0)
    assert stats.last_drop_reason == reason
    assert len(core.plan) == 0
    assert loop.tick().held                          # nothing was applied


def test_a_bad_chunk_during_motion_leaves_the_plan_untouched():
    core, loop = started_with(list(range(1, 11)))
    outs = loop.run(8)
    request_id = outs[-1].request.request_id
    before = core.plan.positions.copy()
    bad = np.array([[20.0, 0.0], [21.0, 0.0], [22.0, math.nan]])
    verdict = core.on_chunk(make_chunk(request_id, 0.82, bad), 0.85)
    assert verdict.reason == "non-finite value at step 2 joint 'j2'"
    np.testing.assert_array_equal(core.plan.positions, before)
    assert [j1(o) for o in loop.run(2)] == [9, 10]
    assert core.dispatched_request_id == 1   # a dropped chunk never drives


def test_a_second_answer_to_the_same_request_is_a_duplicate():
    core, loop = started_with([1, 2, 3])
    verdict = core.on_chunk(make_chunk(1, 0.01, [5, 5]), 0.06)
    assert verdict.reason == 'duplicate: request 1 was already answered'


def test_chunks_before_start_or_after_stop_are_dropped():
    core = make_executor(start=False)
    verdict = core.on_chunk(make_chunk(1, 0.0, [1]), 0.0)
    assert verdict.reason == 'executor is READY; chunk not used'


def test_refill_chunk_must_respect_the_requested_earliest_capture():
    core, loop = started_with(list(range(1, 11)))
    outs = loop.run(8)
    verdict = core.on_chunk(make_chunk(outs[-1].request.request_id, 0.6, [1]), 0.85)
    assert verdict.reason == ('stale: captured at t=0.600, before the requested earliest '
                              'capture t=0.700')


# ----------------------------------------------------------------------------- waiting

def starve(**changes):
    """Play [1, 2, 3] on ticks 1..3, leave request 2 unanswered, starve on tick 4."""
    core, loop = started_with([1, 2, 3], **changes)
    outs = loop.run(3)
    assert outs[0].request.request_id == 2
    return core, loop


def test_starvation_holds_the_applied_target_and_drains_the_old_request():
    core, loop = starve()
    core.on_applied(np.array([2.9, 0.1]))            # the driver clipped the last target
    out = loop.tick()                                # tick 4, t = 0.4
    assert out.held and out.command.tolist() == [2.9, 0.1]
    assert out.state == State.WAITING
    assert 'starved: nothing to dispatch at tick 4' in ' '.join(out.events)
    assert (out.request.request_id, out.request.kind) == (3, 'recovery')
    assert out.request.earliest_capture_time == pytest.approx(0.4)
    stats = core.stats()
    assert (stats.starved_ticks, stats.drained_requests) == (1, 1)


def test_the_hold_target_is_taken_when_the_hold_begins_not_moved_by_late_reports():
    core, loop = starve()
    core.on_applied(np.array([2.0, 0.0]))            # the report of tick 3's target is late
    out = core.tick(0.4)                             # tick 4: the hold begins on tick 2's
    assert out.held and j1(out) == 2.0
    core.on_applied(np.array([3.0, 0.0]))            # tick 3's report arrives during the hold
    assert j1(core.tick(0.5)) == 2.0                 # still the target the hold began on
    core.on_applied(np.array([2.0, 0.0]))            # then the reports of the hold itself
    assert j1(core.tick(0.6)) == 2.0


def test_a_stale_capture_never_restarts_motion():
    core, loop = starve()
    loop.tick()                                      # tick 4: wait begins, request 3
    old = core.on_chunk(make_chunk(2, 0.12, [9, 9, 9]), 0.45)
    assert old.reason == ('stale: answers request 2, which was drained when the wait began '
                          'at t=0.400')
    early = core.on_chunk(make_chunk(3, 0.35, [9, 9, 9]), 0.46)
    assert early.reason == 'stale: captured at t=0.350, before the wait began at t=0.400'
    out = loop.tick()                                # tick 5: still holding, request 4
    assert out.held and out.request.request_id == 4
    assert out.request.earliest_capture_time == pytest.approx(0.4)
    fresh = core.on_chunk(make_chunk(4, 0.52, [7, 8]), 0.58)
    assert fresh.accepted and fresh.trimmed_steps == 0
    out = loop.tick()                                # tick 6 plays step 0
    assert (j1(out), out.state) == (7.0, State.RUNNING)
    assert core.stats().starved_ticks == 2


def test_grace_expiry_faults_and_dropped_chunks_do_not_renew_it():
    core, loop = starve(starvation_grace_s=0.45, return_to_initial_position=False)
    outs = loop.run(5)                               # ticks 4..8, t = 0.4 .. 0.8
    assert all(o.state == State.WAITING and o.held for o in outs)
    core.on_chunk(make_chunk(outs[-1].request.request_id if outs[-1].request else 3, 0.2,
                             [1]), 0.85)              # stale: does not renew the grace
    out = loop.tick()                                # tick 9: 0.5 s > 0.45 s
    assert out.state == State.FAULT and out.command is None
    assert core.is_terminal
    assert 'starved: no usable chunk arrived within the 0.45 s grace' in core.stats().message
    assert loop.tick().command is None


def test_grace_fault_returns_home_first_when_healthy():
    core, loop = starve(starvation_grace_s=0.45, return_speed_rad_s=10.0)
    outs = loop.run(6)                               # tick 9 faults and starts the return
    assert outs[-1].state == State.STOPPING
    assert j1(outs[-1]) == 2.0                       # 3 -> 0 at 1 rad per tick
    outs = loop.run(2)
    assert [j1(o) for o in outs] == [1.0, 0.0]
    assert outs[-1].state == State.FAULT and core.is_terminal
    assert core.stats().message.startswith('fault: starved')
    assert core.stats().message.endswith('returned to the initial position')


def test_server_loss_drains_the_buffer_then_holds_then_faults():
    core, loop = started_with([1, 2, 3, 4, 5], starvation_grace_s=0.25,
                              return_to_initial_position=False)
    outs = loop.run(2)                               # ticks 1, 2 (request 2 at tick 2)
    core.server_lost(0.25)
    assert core.on_chunk(make_chunk(2, 0.21, [9]), 0.26).reason == \
        "server lost: session 's1' does not resume"
    outs = loop.run(3)                               # ticks 3..5 drain the buffer
    assert [j1(o) for o in outs] == [3, 4, 5]
    outs = loop.run(3)                               # ticks 6..8 hold
    assert all(o.held for o in outs) and all(o.request is None for o in outs)
    out = loop.tick()                                # tick 9: 0.3 s > 0.25 s
    assert out.state == State.FAULT
    assert 'the server was lost' in core.stats().message


def test_server_loss_before_start_is_a_fault():
    core = make_executor(start=False)
    core.server_lost(0.0)
    assert core.state == State.FAULT


# ----------------------------------------------------------------------------- synchronous

def test_synchronous_mode_requests_only_when_empty_and_plays_whole_chunks():
    core = make_executor(synchronous=True)
    loop = Loop(core)
    latency = 0.85
    pending = []
    played = []
    requests = []
    for _ in range(45):
        now = loop.index * loop.period
        for arrival, chunk in list(pending):
            if arrival <= now:
                pending.remove((arrival, chunk))
                verdict = core.on_chunk(chunk, arrival)
                assert verdict.accepted and verdict.trimmed_steps == 0, verdict.reason
        out = loop.tick()
        assert out.state != State.FAULT
        if not out.held:
            played.append(j1(out))
        if out.request:
            base = 10 * out.request.request_id
            requests.append(loop.index - 1)
            capture = out.request.sent_time + 0.01
            pending.append((out.request.sent_time + latency,
                            make_chunk(out.request.request_id, capture,
                                       [base + i for i in range(1, 6)])))
    # request at tick 0, its chunk plays on ticks 9..13, next request on tick 13 (empty)
    assert requests == [0, 13, 26, 39]
    assert played[:10] == [11, 12, 13, 14, 15, 21, 22, 23, 24, 25]
    stats = core.stats()
    assert stats.starved_ticks == 0
    assert stats.held_ticks == 9 + 8 + 8 + 5     # ticks 40..44 still wait
    assert stats.trimmed_steps == 0


def test_synchronous_mode_still_faults_when_nothing_comes():
    core = make_executor(synchronous=True, starvation_grace_s=0.5,
                         return_to_initial_position=False)
    loop = Loop(core)
    states = [o.state for o in loop.run(7)]
    assert states[-2:] == [State.WAITING, State.FAULT]


# ----------------------------------------------------------------------------- merges in use

def test_ensemble_mode_averages_overlapping_predictions():
    core, loop = started_with([1.0] * 10, chunk_merge='ensemble', ensemble_coeff=0.0)
    outs = loop.run(8)
    verdict = core.on_chunk(make_chunk(outs[-1].request.request_id, 0.82, [3.0] * 10), 0.85)
    assert verdict.overlap_steps == 2                # ticks 9 and 10
    assert [j1(o) for o in loop.run(4)] == [2.0, 2.0, 3.0, 3.0]


def test_append_mode_plays_the_new_chunk_after_the_buffer():
    core, loop = started_with(list(range(1, 11)), chunk_merge='append')
    outs = loop.run(8)
    verdict = core.on_chunk(make_chunk(outs[-1].request.request_id, 0.82, [20, 21]), 0.85)
    assert (verdict.trimmed_steps, verdict.overlap_steps) == (0, 0)
    played = [(j1(loop.tick()), core.dispatched_request_id) for _ in range(4)]
    assert played == [(9, 1), (10, 1), (20, 2), (21, 2)]   # request 2 drives from tick 11


def test_blend_in_use_touches_only_the_listed_components():
    core, loop = started_with(list(range(1, 11)), blend_steps=2, blend_weight=0.5,
                              blend_components=('j2',))
    outs = loop.run(8)
    new = np.array([[20.0, 4.0]] * 4)
    verdict = core.on_chunk(make_chunk(outs[-1].request.request_id, 0.72, new), 0.85)
    assert verdict.overlap_steps == 2 and verdict.trimmed_steps == 1
    commands = [o.command.tolist() for o in loop.run(3)]
    # ticks 9, 10 overlap: j1 jumps to the new chunk, j2 blends 0 -> 4 with w = 0.5, 0.25
    assert commands == [[20.0, 2.0], [20.0, 3.0], [20.0, 4.0]]


def test_seams_are_recorded():
    core, loop = started_with(list(range(1, 11)))
    outs = loop.run(8)
    core.on_chunk(make_chunk(outs[-1].request.request_id, 0.82, [20, 21]), 0.85)
    stats = core.stats()
    assert stats.recent_seams == pytest.approx((1.0, 11.0))   # 0 -> 1, then 10 -> 20 at tick 9
    assert stats.max_seam == pytest.approx(11.0)


# ----------------------------------------------------------------------------- shutdown

def moved_to(pose, **changes):
    core, loop = started_with(np.array([pose] * 20), **changes)
    loop.run(2)
    return core, loop


@pytest.mark.parametrize('changes, live_changes, ticks', [
    (dict(return_speed_rad_s=0.5), {}, 20),                      # 0.05 rad per tick
    ({}, dict(return_speed_rad_s=0.5, max_step_rad=0.02), 50),   # step clamp is stricter
    (dict(return_speed_rad_s=0.5, interpolation_multiplier=2), {}, 40),
])
def test_stop_returns_to_the_initial_pose_along_a_speed_limited_line(changes, live_changes,
                                                                     ticks):
    core, loop = moved_to([1.0, -0.5], **changes)
    core.update_config(dataclasses.replace(core.config, **live_changes))
    previous = loop.outputs[-1].command
    assert previous.tolist() == pytest.approx([1.0, -0.5])
    core.stop(loop.index * loop.period)
    per_tick = min(0.5 * core.config.tick_period, core.config.max_step_rad)
    commands = []
    while not core.is_terminal:
        out = loop.tick()
        assert out.request is None and not out.held
        commands.append(out.command)
        assert len(commands) <= ticks
    assert len(commands) == ticks
    assert out.state == State.STOPPED
    assert commands[-1].tolist() == [0.0, 0.0]
    steps = np.abs(np.diff(np.vstack([previous] + commands), axis=0))
    assert steps.max() <= per_tick + 1e-12
    np.testing.assert_allclose(steps[:, 1], steps[:, 0] / 2)      # a straight line
    assert loop.tick().command is None
    assert 'returned to the initial position' in core.stats().message


def test_chunks_are_dropped_while_stopping():
    core, loop = moved_to([1.0, 0.0])
    core.stop(0.25)
    out = loop.tick()
    assert out.state == State.STOPPING
    assert any('returning to the initial position' in event for event in out.events)
    assert core.on_chunk(make_chunk(2, 0.2, [1]), 0.31).reason == \
        'executor is STOPPING; chunk not used'


def test_stop_without_return_ends_at_once():
    core, loop = moved_to([1.0, 0.0], return_to_initial_position=False)
    core.stop(0.25)
    assert core.state == State.STOPPED and core.is_terminal
    assert loop.tick().command is None


def test_stop_skips_the_return_when_the_measurement_is_unhealthy():
    core, loop = moved_to([1.0, 0.0])
    assert core.on_measured([math.nan, 0.0]) is False
    core.stop(0.25)
    assert core.state == State.STOPPED
    assert 'skipped' in core.stats().message


def test_fault_from_outside_returns_home_then_faults():
    core, loop = moved_to([0.1, 0.0])
    core.fault('camera lost', 0.25)
    outs = loop.run(3)
    assert outs[-1].state == State.FAULT
    assert core.stats().message == 'fault: camera lost; returned to the initial position'


@pytest.mark.parametrize('when', ['running', 'stopping'])
def test_actuation_failure_suppresses_all_motion(when):
    core, loop = moved_to([1.0, 0.0])
    if when == 'stopping':
        core.stop(0.25)
        loop.tick()
    core.on_actuation_failed('hold write failed: servo 3 timeout', loop.index * loop.period)
    assert core.state == State.FAULT and core.is_terminal
    assert loop.tick().command is None
    assert core.stats().message == 'actuation failed: hold write failed: servo 3 timeout'


def test_an_actuation_failure_closes_the_request_in_flight_at_its_time():
    core = make_executor()
    loop = Loop(core)
    assert loop.tick().request.request_id == 1      # the startup request, in flight
    core.on_actuation_failed('goal write failed', 0.05)
    out = loop.tick()
    assert (out.state, out.command, out.request) == (State.FAULT, None, None)
    assert 'request 1 abandoned at shutdown at t=0.050' in out.events
    verdict = core.on_chunk(make_chunk(1, 0.01, [1]), 0.06)
    assert not verdict.accepted and 'FAULT' in verdict.reason


def test_stats_report_the_status_fields():
    core, loop = started_with(list(range(1, 11)))
    loop.run(8)
    stats = core.stats()
    assert stats.state == State.RUNNING and stats.session_id == 's1'
    assert stats.buffered_playback_s == pytest.approx(0.2)
    assert stats.last_turnaround_s == pytest.approx(0.05)
    assert stats.ticks == 9 and stats.dispatched_ticks == 8
    assert stats.requests == 2 and stats.chunks_accepted == 1
