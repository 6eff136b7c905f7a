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

"""The request table alone: ids, typed close reasons, the reasons a late chunk is dropped with,
timeouts and the pause after a failure at their edges, and when the next request is due."""

import dataclasses

import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.merge import Plan
from remote_inference_py.executor.requests import (
    Closed, CLOSED_REQUESTS_KEPT, Closure, Kind, RequestTable, RETRY_PAUSE_MAX_S)
from remote_inference_py.executor.timeline import Timeline

FPS = 10.0
CONFIG = ExecutorConfig(joint_names=('j1', 'j2'), fps=FPS, refill_seconds=0.2,
                        max_requests_in_flight=2)


def table_with(count, kind=Kind.REFILL):
    table = RequestTable()
    for i in range(count):
        table.open(0.1 * i, 0.1 * i - 0.1, 1.0, kind)
    return table


def test_ids_count_from_one_and_an_answer_closes_its_request():
    table = table_with(2)
    assert len(table) == 2 and table.get(1).sent_time == 0.0 and table.get(2).request_id == 2
    request, turnaround, why = table.answer(1, 0.35)
    assert request.request_id == 1 and turnaround == pytest.approx(0.35) and why == ''
    assert len(table) == 1 and table.get(1) is None
    assert table.closure(1) == Closure(Closed.ANSWERED, 0.35)
    assert table.turnaround.last_s == pytest.approx(0.35)


@pytest.mark.parametrize('closure, reason', [
    (Closure(Closed.ANSWERED, 1.0), 'duplicate: request 1 was already answered'),
    (Closure(Closed.SUPERSEDED, 1.0, by=4),
     'superseded: answers request 1, older than request 4 already merged'),
    (Closure(Closed.DRAINED, 1.25),
     'stale: answers request 1, which was drained when the wait began at t=1.250'),
    (Closure(Closed.TIMED_OUT, 2.5, timeout_s=0.5),
     'stale: answers request 1, which was abandoned after the 0.5 s timeout'),
    (Closure(Closed.FAILED, 1.0, detail='queue full'),
     'stale: answers request 1, which was failed: queue full'),
    (Closure(Closed.SERVER_LOST, 3.0),
     'stale: answers request 1, which was the server was lost at t=3.000'),
    (Closure(Closed.SHUTDOWN, 0.85),
     'stale: answers request 1, which was abandoned at shutdown at t=0.850'),
])
def test_every_close_reason_names_why_a_late_chunk_is_dropped(closure, reason):
    table = table_with(2)
    table.close(1, closure)
    assert table.closure(1).why is closure.why
    assert table.answer(1, 5.0) == (None, None, reason)
    # No sample from it, but from a request drained at a wait (below: the late one).
    drained = closure.why is Closed.DRAINED
    assert len(table) == 1 and table.turnaround.sample_count == int(drained)


def test_an_unknown_request_names_those_in_flight():
    table = table_with(3)
    table.answer(1, 0.5)
    assert table.answer(9, 0.5)[2] == 'unknown request 9 (in flight: 2, 3)'
    assert RequestTable().answer(1, 0.0)[2] == 'unknown request 1 (in flight: none)'


def test_a_merged_chunk_supersedes_only_older_requests_and_sets_the_horizon():
    table = table_with(3)
    table.answer(2, 0.4)
    assert table.answered_with(2, steps=20, now=0.4, fps=FPS) == [1]
    assert table.closure(1) == Closure(Closed.SUPERSEDED, 0.4, by=2)
    assert table.get(3) is not None and table.horizon_s == pytest.approx(2.0)
    table.horizon_s = 5.0   # from admission: a merged chunk does not change it
    table.answered_with(3, steps=20, now=0.5, fps=FPS)
    assert table.horizon_s == 5.0


def test_a_request_times_out_strictly_after_the_timeout():
    table = table_with(1)
    assert table.expire(0.5, 0.5) == [] and len(table) == 1
    assert table.expire(0.5 + 1e-9, 0.5) == [1] and len(table) == 0
    assert table.closure(1) == Closure(Closed.TIMED_OUT, 0.5 + 1e-9, timeout_s=0.5)


def test_a_failure_pauses_new_requests_for_exactly_the_pause():
    table = table_with(1)
    assert not table.fail(7, 'no such request', 1.0, 0.1)
    assert table.due(1.0, CONFIG, 0.0, None, True) is not None   # an unknown id changes nothing
    assert table.fail(1, 'queue full', 1.0, 0.1)
    assert table.closure(1).detail == 'queue full' and len(table) == 0
    assert table.due(1.0999, CONFIG, 0.0, None, True) is None
    assert table.due(1.1, CONFIG, 0.0, None, True) is not None


def test_failures_in_a_row_double_the_pause_up_to_the_bound_and_an_answer_resets_it():
    table = RequestTable()
    now = 0.0
    assert RETRY_PAUSE_MAX_S == 1.0
    for pause in [0.125, 0.25, 0.5, 1.0, 1.0, 1.0]:
        request = table.open(now, now, 0.0, Kind.RECOVERY)
        assert table.fail(request.request_id, 'missing observation', now, 0.125)
        assert table.due(now + pause - 1e-9, CONFIG, 0.0, 0.0, True) is None
        now += pause
        assert table.due(now, CONFIG, 0.0, 0.0, True) is not None
    assert table.failures_in_a_row == 6
    request = table.open(now, now, 0.0, Kind.RECOVERY)
    table.answer(request.request_id, now + 0.05)
    assert table.failures_in_a_row == 0
    request = table.open(now + 0.1, now, 0.0, Kind.RECOVERY)
    table.fail(request.request_id, 'missing observation', now + 0.1, 0.1)
    assert table.due(now + 0.1999, CONFIG, 0.0, 0.0, True) is None
    assert table.due(now + 0.2, CONFIG, 0.0, 0.0, True) is not None


def test_a_base_pause_above_the_bound_is_kept():
    table = table_with(2)
    table.fail(1, 'x', 0.0, 1.5)
    table.fail(2, 'x', 0.0, 1.5)
    assert table.due(1.4999, CONFIG, 0.0, 0.0, True) is None
    assert table.due(1.5, CONFIG, 0.0, 0.0, True) is not None


def test_closures_are_kept_for_the_most_recent_requests_only():
    table = table_with(CLOSED_REQUESTS_KEPT + 1)
    table.close_all(Closure(Closed.DRAINED, 1.0))
    assert table.closure(1) is None and table.closure(2) is not None
    assert table.answer(1, 2.0)[2].startswith('unknown request 1')


def test_synchronous_asks_only_with_an_empty_plan_and_nothing_in_flight():
    config = ExecutorConfig(joint_names=('j1', 'j2'), fps=FPS, synchronous=True)
    table = RequestTable()
    assert table.due(1.0, config, 0.1, None, True) is None
    assert table.due(1.0, config, 0.0, None, True) == (Kind.SYNCHRONOUS, 1.0)
    assert table.due(1.0, config, 0.0, 0.8, True) == (Kind.SYNCHRONOUS, 0.8)
    table.open(1.0, 1.0, 0.0, Kind.SYNCHRONOUS)
    assert table.due(1.1, config, 0.0, 0.8, True) is None


def test_holding_asks_one_request_at_a_time_for_a_capture_after_the_wait_began():
    table = RequestTable()
    assert table.due(2.0, CONFIG, 0.0, 1.5, False) == (Kind.STARTUP, 1.5)
    assert table.due(2.0, CONFIG, 0.0, 1.5, True) == (Kind.RECOVERY, 1.5)
    table.open(2.0, 1.5, 0.0, Kind.RECOVERY)
    assert table.due(2.5, CONFIG, 0.0, 1.5, True) is None   # 2 allowed, but one while holding


def test_moving_asks_at_the_refill_threshold_and_counts_what_is_in_flight():
    table = RequestTable()
    assert table.due(1.0, CONFIG, 0.2 + 1e-6, None, True) is None
    kind, earliest = table.due(1.0, CONFIG, 0.2, None, True)
    assert kind is Kind.REFILL and earliest == pytest.approx(1.0 - 1 / FPS)
    table.horizon_s = 1.0
    table.open(1.0, 0.9, 0.2, Kind.REFILL)
    # In flight: covers until 0.9 + 1.0 = 1.9; due again once that is within the refill.
    assert table.due(1.5, CONFIG, 0.0, None, True) is None
    assert table.due(1.7, CONFIG, 0.0, None, True)[0] is Kind.REFILL
    table.open(1.7, 1.6, 0.0, Kind.REFILL)
    assert table.due(5.0, CONFIG, 0.0, None, True) is None   # max_requests_in_flight = 2


def test_kind_steadiness():
    assert Kind.REFILL.steady and Kind.SYNCHRONOUS.steady
    assert not Kind.STARTUP.steady and not Kind.RECOVERY.steady


def test_an_order_carries_the_committed_plan_only_for_an_rtc_refill():
    rtc = dataclasses.replace(CONFIG, chunk_merge='rtc')
    timeline = Timeline(rtc)
    timeline.plan = Plan.from_positions(1, [[0.1, 0.0]])   # 0.2 s buffered: due
    table = RequestTable()
    order = table.order(0.1, rtc, timeline, None)
    assert (order.request_id, order.kind, order.sent_time) == (1, 'refill', 0.1)
    assert order.plan is not None and order.plan.positions.tolist() == [[0.1, 0.0]]
    assert table.get(1).frozen_until_tick is not None
    order = RequestTable().order(0.1, CONFIG, timeline, None)
    assert order.kind == 'refill' and order.plan is None
    order = RequestTable().order(0.1, rtc, timeline, waiting_since=0.0)
    assert order.kind == 'startup' and order.plan is None


def test_a_chunk_answering_a_request_drained_at_a_wait_still_gives_its_turnaround():
    # The refill was sent at 0.0; the plan ran out at 0.5 (the wait drained it); the chunk
    # came at 0.62. Too late to play, but exactly the latency the next refill must cover.
    table = table_with(1)
    assert table.answer(1, 0.33)[0] is not None          # an earlier turnaround: 0.33 s
    table.open(1.0, 0.9, 0.6, Kind.REFILL)
    table.close_all(Closure(Closed.DRAINED, 1.5))
    request, turnaround, why = table.answer(2, 1.62)
    assert request is None and why.startswith('stale: answers request 2, which was drained')
    assert table.turnaround.recent_max_s == pytest.approx(0.62)
    assert table.effective_refill(CONFIG) == pytest.approx(0.62 + 1 / FPS)
    assert table.answer(2, 1.7)[0] is None                # a copy: sampled once
    assert table.turnaround.recent_max_s == pytest.approx(0.62)
    table.open(2.0, 1.9, 0.6, Kind.REFILL)                # any other closure: no sample
    table.close_all(Closure(Closed.TIMED_OUT, 4.0, timeout_s=2.0))
    table.answer(3, 9.0)
    assert table.turnaround.recent_max_s == pytest.approx(0.62)
