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

"""ExecutorCore with several requests in flight: staggering, answers, drops and closing.

As in test_executor_core.py: fps = 10, two joints, j1 carrying the values. The server's
chunk length is 10 steps, so a request in flight is expected to cover 1.0 s from its send.
"""

import math

from core_fixtures import j1, JOINTS, Loop, make_chunk, make_executor
import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.core import State


def flight_core(max_in_flight=2, chunk_length=10, **changes):
    """Start a core that keeps up to `max_in_flight` requests; tick 0 sends request 1."""
    core = make_executor(chunk_length=chunk_length, max_requests_in_flight=max_in_flight,
                         **changes)
    loop = Loop(core)
    assert loop.tick().request.request_id == 1
    return core, loop


def sent(outs):
    """Return (tick, request id) of every request in `outs`."""
    return [(o.tick_index, o.request.request_id) for o in outs if o.request]


def two_in_flight(**changes):
    """Play [1..10] on ticks 1..10 with refill 0.6 s; requests 2 (tick 4) and 3 (tick 7) fly."""
    changes.setdefault('refill_seconds', 0.6)
    core, loop = flight_core(**changes)
    assert core.on_chunk(make_chunk(1, 0.01, list(range(1, 11))), 0.05).accepted
    outs = loop.run(8)                                # ticks 1..8
    # Request 2 when 0.6 s are left; its chunk covers at least until its earliest capture
    # 0.3 + 1.0 = 1.3, so request 3 goes out when that is 0.6 s away, while request 2 is
    # still unanswered.
    assert sent(outs) == [(4, 2), (7, 3)]
    assert core.stats().requests_in_flight == 2
    return core, loop


def test_requests_are_staggered_by_what_the_ones_in_flight_will_cover():
    core, loop = two_in_flight()
    assert sent(loop.run(2)) == [], 'two in flight: no third request'


def test_answers_in_order_are_both_merged_and_sampled():
    core, loop = two_in_flight()
    second = core.on_chunk(make_chunk(2, 0.41, [20 + i for i in range(10)]), 0.85)
    assert second.accepted and second.turnaround == pytest.approx(0.45)
    assert core.stats().requests_in_flight == 1, 'request 3 is still in flight'
    third = core.on_chunk(make_chunk(3, 0.71, [30 + i for i in range(10)]), 0.9)
    assert third.accepted and third.turnaround == pytest.approx(0.2)
    stats = core.stats()
    assert (stats.chunks_accepted, stats.chunks_dropped, stats.requests_in_flight) == (3, 0, 0)
    assert stats.max_turnaround_s == pytest.approx(0.45)
    out = loop.tick()                                 # tick 9: request 3's chunk (from tick 8)
    assert j1(out) == 31.0


def test_an_older_answer_after_a_newer_one_is_dropped_as_superseded():
    core, loop = two_in_flight()
    newer = core.on_chunk(make_chunk(3, 0.71, [30 + i for i in range(10)]), 0.85)
    assert newer.accepted
    assert core.stats().requests_in_flight == 0, 'request 2 was closed by the newer chunk'
    out = loop.tick()
    assert 'request 2 superseded by the chunk of request 3' in ' '.join(out.events)
    older = core.on_chunk(make_chunk(2, 0.41, [20 + i for i in range(10)]), 0.95)
    assert not older.accepted
    assert older.reason == ('superseded: answers request 2, older than request 3 already '
                            'merged')
    assert 'superseded' in core.stats().last_drop_reason
    assert j1(loop.tick()) == 32.0, 'the plan is still request 3'


def test_a_newer_chunk_dropped_for_its_content_leaves_the_older_request_in_flight():
    core, loop = two_in_flight()
    bad = core.on_chunk(make_chunk(3, 0.71, [math.nan]), 0.85)
    assert not bad.accepted and 'non-finite' in bad.reason
    assert core.stats().requests_in_flight == 1
    assert core.on_chunk(make_chunk(2, 0.41, [20 + i for i in range(10)]), 0.86).accepted


def test_each_request_times_out_on_its_own_and_is_named():
    # A refill above the horizon asks for three requests in a row (one action period apart).
    core, loop = flight_core(max_in_flight=3, refill_seconds=2.5, request_timeout_s=0.5)
    assert core.on_chunk(make_chunk(1, 0.01, list(range(1, 31))), 0.05).accepted
    outs = loop.run(13)                               # ticks 1..13
    assert sent(outs) == [(5, 2), (6, 3), (7, 4), (11, 5), (12, 6), (13, 7)]
    events = [e for o in outs for e in o.events if 'timed out' in e]
    assert events == [f'request {i} timed out after 0.5 s' for i in (2, 3, 4)]
    stats = core.stats()
    assert (stats.request_timeouts, stats.requests_in_flight) == (3, 3)
    late = core.on_chunk(make_chunk(3, 0.55, [9]), 1.35)
    assert late.reason == ('stale: answers request 3, which was abandoned after the 0.5 s '
                           'timeout')


def test_a_wait_drains_every_request_in_flight():
    core, loop = two_in_flight()
    outs = loop.run(3)                                # ticks 9, 10 play; 11 starves
    assert [j1(o) for o in outs[:2]] == [9.0, 10.0]
    starved = outs[2]
    assert starved.held and starved.state == State.WAITING
    assert 'requests 2, 3 drained when the wait began' in ' '.join(starved.events)
    assert (starved.request.request_id, starved.request.kind) == (4, 'recovery')
    stats = core.stats()
    assert (stats.drained_requests, stats.requests_in_flight) == (2, 1)
    for request_id, capture in ((2, 0.41), (3, 0.71)):
        verdict = core.on_chunk(make_chunk(request_id, capture, [9]), 1.12)
        assert verdict.reason == (f'stale: answers request {request_id}, which was drained '
                                  'when the wait began at t=1.100')


def test_a_failure_closes_only_its_request():
    core, loop = two_in_flight()
    assert core.on_request_failed(2, 'stale observation', 0.85)
    assert core.stats().requests_in_flight == 1
    assert core.on_chunk(make_chunk(3, 0.71, [30 + i for i in range(10)]), 0.86).accepted


def test_server_loss_and_shutdown_close_every_request_by_name():
    core, loop = two_in_flight()
    core.server_lost(0.85)
    out = loop.tick()
    assert 'requests 2, 3 abandoned: the server was lost' in ' '.join(out.events)
    assert core.stats().requests_in_flight == 0

    core, loop = two_in_flight(return_to_initial_position=False)
    core.stop(0.85)
    out = loop.tick()
    assert 'requests 2, 3 abandoned at shutdown' in ' '.join(out.events)
    assert out.state == State.STOPPED and core.stats().requests_in_flight == 0


def test_stop_and_fault_date_the_shutdown_with_their_now():
    core, loop = two_in_flight()
    core.stop(0.8125)
    assert 'requests 2, 3 abandoned at shutdown at t=0.812' in ' '.join(loop.tick().events)

    core, loop = two_in_flight()
    core.fault('camera lost', 0.8375)
    out = loop.tick()
    assert 'requests 2, 3 abandoned at shutdown at t=0.838' in ' '.join(out.events)
    assert out.state == State.STOPPING and core.stats().message.startswith('fault: camera lost')


def test_one_in_flight_keeps_the_one_request_rule():
    """The same script with max 1: request 3 waits for request 2's answer."""
    core, loop = flight_core(max_in_flight=1, refill_seconds=0.6)
    assert core.on_chunk(make_chunk(1, 0.01, list(range(1, 11))), 0.05).accepted
    assert sent(loop.run(8)) == [(4, 2)]                # with 2 in flight: also 3 at tick 7
    assert core.on_chunk(make_chunk(2, 0.41, [20 + i for i in range(10)]), 0.85).accepted
    # Plan until tick 14: 0.5 s left at tick 9, below the refill: request 3 only now.
    assert sent(loop.run(1)) == [(9, 3)]


def test_without_a_known_chunk_length_the_first_chunk_gives_the_horizon():
    core, loop = flight_core(chunk_length=0, refill_seconds=0.6)
    assert core.on_chunk(make_chunk(1, 0.01, list(range(1, 11))), 0.05).accepted
    assert sent(loop.run(8)) == [(4, 2), (7, 3)]


def test_synchronous_mode_keeps_one_request():
    with pytest.raises(ValueError, match='max_requests_in_flight = 2 needs synchronous false'):
        ExecutorConfig(joint_names=JOINTS, synchronous=True, max_requests_in_flight=2)
    with pytest.raises(ValueError, match="'max_requests_in_flight' is 9; expected 1 to 8"):
        ExecutorConfig(joint_names=JOINTS, max_requests_in_flight=9)


def test_while_holding_one_request_at_a_time():
    """Before a chunk resumes motion its end is unknown: no second request during a wait."""
    core, loop = flight_core(max_in_flight=3)
    assert sent(loop.run(15)) == []                   # ticks 1..15, request 1 unanswered
    assert core.stats().requests_in_flight == 1
