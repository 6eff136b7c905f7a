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

"""The committed plan of rtc mode, end to end through the pure cores, hand-computed.

The executor builds it at a refill request (rows from the capture on, frozen rows from the
turnaround), the server shifts it to the capture it used and converts it to policy units, and
the executor keeps the frozen rows when the chunk lands early.
"""

import math

from core_fixtures import admission, FPS, make_chunk, make_executor, make_server, serve_one
import numpy as np
from plan_echo_policy import PlanEchoRuntime
import pytest

from remote_inference_py.contract.check import (
    AdmitRequest, check_admission, PLAIN_MERGE_MODES, ServerContract)
from remote_inference_py.contract.plan import CommittedPlan, plan_from_fields
from remote_inference_py.executor.merge import Plan, rtc_chunk
from remote_inference_py.policy_server.core import Request
from remote_inference_py.policy_server.demo_policy import DemoRuntime


# ----------------------------------------------------------------------------- the plan

def test_a_capture_maps_onto_the_plan_by_whole_steps():
    plan = CommittedPlan(10.0, np.arange(5.0)[:, None], frozen_steps=3)
    for capture, first, frozen in ((9.95, 0, 3), (9.9, 0, 3), (10.0, 1, 2), (10.19, 2, 1),
                                   (10.3, 4, 0)):
        rows, kept_frozen = plan.for_capture(capture, 0.1)
        assert (rows[0, 0], kept_frozen) == (first, frozen), capture
    rows, frozen = plan.for_capture(9.75, 0.1)   # two steps before: row 0 repeated
    assert rows[:, 0].tolist() == [0, 0, 0, 1, 2, 3, 4] and frozen == 5
    assert plan.for_capture(10.4, 0.1) is None   # after the whole plan
    ns = CommittedPlan(10_000_000_000, plan.positions, 3)
    assert ns.for_capture(10_000_000_000, 100_000_000)[0][0, 0] == 1


def test_plan_fields_are_checked_and_named():
    joints = ('a', 'b')
    plan, why = plan_from_fields(5, 2, 1, [0, 1, 2, 3], joints)
    assert why == '' and plan.positions.tolist() == [[0, 1], [2, 3]] and plan.frozen_steps == 1
    assert plan_from_fields(5, 0, 0, [], joints) == (None, '')
    for args, message in (((2, 1, [0, 1, 2]),
                           'plan_positions has 3 values, expected plan_steps 2 x 2 joints = 4'),
                          ((2, 3, [0, 1, 2, 3]), 'frozen_steps 3 is more than plan_steps 2'),
                          ((0, 0, [1.0]), 'plan_positions has 1 values but plan_steps is 0'),
                          ((2, 0, [0, 1, math.nan, 3]), "non-finite value at step 1 joint 'a'")):
        plan, why = plan_from_fields(5, *args, joints)
        assert plan is None and message in why


# ----------------------------------------------------------------------------- the merge

def test_rtc_keeps_the_frozen_rows_then_switches():
    old = Plan.from_positions(10, np.arange(10.0, 20.0)[:, None])   # ticks 10..19
    chunk = np.arange(100.0, 108.0)[:, None]                        # ticks 11..18
    result = rtc_chunk(old, chunk, 11, 12, np.array([9.0]), frozen_until_tick=15)
    assert result.plan.start_tick == 12
    assert result.plan.positions[:, 0].tolist() == [12, 13, 14, 104, 105, 106, 107]
    assert (result.trimmed_steps, result.usable_steps) == (4, 4)
    assert result.seam == pytest.approx(104 - 15)
    assert result.first_tick == 15
    # Landed late (tick 16 already committed): aligned from the first free tick.
    late = rtc_chunk(old, chunk, 11, 17, np.array([16.0]), frozen_until_tick=15)
    assert late.plan.positions[:, 0].tolist() == [106, 107] and late.first_tick == 17
    # Nothing frozen: exactly aligned.
    plain = rtc_chunk(old, chunk, 11, 12, np.array([9.0]), frozen_until_tick=None)
    assert plain.plan.positions[:, 0].tolist() == [101, 102, 103, 104, 105, 106, 107]
    assert plain.first_tick == 12
    # Every incoming step inside the frozen rows: unusable, the plan is unchanged.
    short = rtc_chunk(old, chunk[:3], 11, 12, np.array([9.0]), frozen_until_tick=15)
    assert not short.usable and short.plan is old


# ----------------------------------------------------------------------------- the executor

def test_a_refill_request_carries_the_plan_and_the_chunk_respects_its_frozen_rows():
    core = make_executor(refill_seconds=0.6, chunk_merge='rtc')
    first = core.tick(0.0)
    assert first.request.kind == 'startup' and first.request.plan is None
    assert core.on_chunk(make_chunk(1, 0.0, [float(v) for v in range(1, 21)]), 0.25).accepted
    request = None
    for index in range(1, 30):   # turnaround sample 0.25 s
        out = core.tick(index * 0.1)
        if out.request is not None:
            request, sent = out.request, index * 0.1
            break
    assert request is not None and request.kind == 'refill'
    plan = request.plan
    # Sent at t = sent, earliest capture sent - 0.1: row 0 is the tick right after it.
    tick_now = round(sent * FPS)
    assert plan.start == pytest.approx(tick_now / FPS)
    assert plan.positions[:, 0].tolist() == [float(v) for v in range(tick_now, 21)]
    # A chunk sent at 1.4 s lands at 1.65 s: ticks 14, 15, 16 are committed by then.
    assert (sent, tick_now, plan.frozen_steps) == (pytest.approx(1.4), 14, 3)
    # The chunk lands early (0.05 s later) and disagrees: the frozen rows still play.
    answer = [50.0 + v for v in range(20)]
    verdict = core.on_chunk(make_chunk(request.request_id, sent - 0.05, answer), sent + 0.05)
    assert verdict.accepted, verdict.reason
    played, sources = [], []
    for k in range(1, 5):
        played.append(core.tick(sent + k * 0.1).command[0])
        sources.append(core.dispatched_request_id)
    assert played == [15.0, 16.0, 53.0, 54.0]   # the chunk's step 0 is tick 14
    # The frozen rows are request 1's: the new request drives from its first own target on.
    assert sources == [1, 1, request.request_id, request.request_id]


def test_other_merges_and_waits_send_no_plan():
    core = make_executor(refill_seconds=0.6, chunk_merge='aligned')
    core.tick(0.0)
    core.on_chunk(make_chunk(1, 0.0, [float(v) for v in range(1, 21)]), 0.05)
    orders = [core.tick(k * 0.1).request for k in range(1, 20)]
    assert any(orders) and all(o.plan is None for o in orders if o is not None)


# ----------------------------------------------------------------------------- the server

def test_only_a_policy_that_conditions_on_the_plan_offers_rtc():
    plain = make_server()   # the demo policy
    assert 'rtc' not in plain.contract.merge_modes
    refused = admission(plain, merge_mode='rtc')
    assert not refused.success
    assert "merge mode 'rtc' is not supported (rtc needs a policy that generates chunks " \
           'conditioned on the committed plan' in refused.message
    echo = make_server(PlanEchoRuntime())
    assert 'rtc' in echo.contract.merge_modes and admission(echo, merge_mode='rtc').success
    contract = ServerContract('d', 's', ('a',), 30.0, 50, (), PLAIN_MERGE_MODES)
    request = AdmitRequest(contract.protocol_version, 'c', 'd', 's', ('a',), 30.0, (), 'aligned',
                           True, max_requests_in_flight=3)
    assert any('requests in flight: client keeps up to 3, server queues 1 to 1' in p
               for p in check_admission(contract, request))


def test_the_server_shifts_the_plan_to_its_capture_and_hands_it_over_in_policy_units():
    runtime = PlanEchoRuntime()   # degrees, gripper percent
    core = make_server(runtime)
    session = admission(core, merge_mode='rtc').session_id
    joints = core.spec.action_joints
    step_ns = int(1e9 / 30)
    core.on_joint_states('', 1_000_000_000 + step_ns, joints, np.zeros(6))
    plan = np.tile(np.radians([10.0, 20.0, 30.0, 40.0, 50.0, 0.0]), (6, 1))
    plan[:, 0] += np.arange(6) * 0.01
    # The capture is one step after the plan's start: row 1 becomes the chunk's row 0.
    core.on_request(Request('', session, 1, 1_000_000_000, plan=CommittedPlan(
        1_000_000_000, plan, frozen_steps=3)))
    answers = serve_one(core)
    assert not answers[0].error, answers[0].error
    prefix = runtime.prefixes[-1]
    assert prefix.frozen_steps == 1 and len(prefix.positions) == 4   # one row older than capture
    assert prefix.positions[0, 1] == pytest.approx(20.0, abs=1e-4)   # degrees
    # The echo continues the plan, so the chunk returns it in SI exactly.
    np.testing.assert_allclose(answers[0].positions[:4, :5], plan[2:, :5], atol=1e-5)
    # No plan: the runtime is still told (None), and plans to its own liking.
    core.on_request(Request('', session, 2, 1_000_000_000))
    assert not serve_one(core)[0].error and runtime.prefixes[-1] is None


def test_a_plan_is_only_handed_to_runtimes_that_ask_for_it():
    class Plain(DemoRuntime):
        def infer(self, inputs, tasks):   # no prefixes argument: must never get one
            return super().infer(inputs, tasks)

    core = make_server(Plain())
    session = admission(core, merge_mode='aligned').session_id
    core.on_joint_states('', 2_000_000_000, core.spec.action_joints, np.zeros(6))
    core.on_request(Request('', session, 1, 1_000_000_000, plan=CommittedPlan(
        1_000_000_000, np.zeros((3, 6)), 1)))
    assert not serve_one(core)[0].error
