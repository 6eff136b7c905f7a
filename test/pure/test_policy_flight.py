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

"""The policy server with several requests of one client in flight: queue, order, delay line."""

from core_fixtures import admission, FakeClock, make_server, serve_one
import pytest

from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import Request
from remote_inference_py.policy_server.delivery import DelayLine
from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = list(SO101_JOINT_NAMES)
MS = 1_000_000


def served(core):
    """Serve one pass; return (robot, request id, capture stamp [ms]) per answer."""
    return [(a.robot, a.request_id, a.capture_stamp_ns // MS) for a in serve_one(core, 0.05)]


def test_the_contract_offers_max_requests_per_client_and_refuses_more():
    core = make_server(max_requests_per_client=2)
    assert core.contract.max_requests_in_flight == 2
    refused = admission(core, in_flight=3)
    assert not refused.success
    assert ('requests in flight: client keeps up to 3, server queues 1 to 2 per client'
            in refused.message)
    assert 'max_requests_in_flight on the executor' in refused.message
    assert 'max_requests_per_client on the server' in refused.message
    assert admission(core, in_flight=2).success
    assert make_server().contract.max_requests_in_flight == 4, 'the default'
    with pytest.raises(ValueError, match="'max_requests_per_client' is 9; expected 1 to 8"):
        ServerConfig('so101', max_requests_per_client=9)


def test_one_session_is_served_in_request_order_one_at_a_time():
    core = make_server()
    session = admission(core, in_flight=3).session_id
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    for request_id in (1, 2, 3):
        assert core.on_request(Request('', session, request_id, 0)) == []
    assert core.pending_count() == 3
    assert served(core) == [('', 1, 100)], 'the second waits until the first is served'
    assert served(core) == [('', 2, 100)]
    assert served(core) == [('', 3, 100)]
    assert core.pending_count() == 0 and core.stats.totals['superseded'] == 0


def test_a_request_arriving_out_of_order_is_queued_in_request_order():
    core = make_server()
    session = admission(core, in_flight=3).session_id
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    for request_id in (1, 3, 2):
        core.on_request(Request('', session, request_id, 0))
    assert [served(core)[0][1] for _ in range(3)] == [1, 2, 3]


def test_each_request_selects_its_own_observation_when_served():
    core = make_server(observation_wait_s=5.0)
    session = admission(core, in_flight=3).session_id
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 100 * MS))
    core.on_request(Request('', session, 2, 200 * MS))   # needs a later capture
    assert served(core) == [('', 1, 100)]
    assert served(core) == [], 'request 2 waits for its capture'
    core.on_joint_states('', 150 * MS, JOINTS, [0.0] * 6)
    assert served(core) == []
    core.on_joint_states('', 210 * MS, JOINTS, [0.0] * 6)
    assert served(core) == [('', 2, 210)]


def test_beyond_the_clients_bound_the_oldest_waiting_request_is_superseded():
    core = make_server(max_requests_per_client=4)
    session = admission(core, in_flight=2).session_id     # the queue holds what the client keeps
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    for request_id in (1, 2, 3):
        core.on_request(Request('', session, request_id, 0))
    assert core.pending_count() == 2 and core.stats.totals['superseded'] == 1
    assert [served(core)[0][1] for _ in range(2)] == [2, 3]


def test_a_client_with_one_request_in_flight_keeps_the_latest_wins_slot():
    core = make_server()
    session = admission(core, in_flight=1).session_id
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 0))
    core.on_request(Request('', session, 2, 0))
    assert served(core) == [('', 2, 100)] and core.stats.totals['superseded'] == 1


def test_different_sessions_are_still_batched_while_each_keeps_its_order():
    runtime = DemoRuntime()
    calls = []
    infer = runtime.infer
    runtime.infer = lambda inputs, tasks: calls.append(len(tasks)) or infer(inputs, tasks)
    core = make_server(runtime, robot_namespaces=('a', 'b'), max_clients=2)
    one = admission(core, 'a', '/a/executor', in_flight=3).session_id
    two = admission(core, 'b', '/b/executor', in_flight=3).session_id
    core.on_joint_states('a', 10 * MS, JOINTS, [0.3] * 6)
    core.on_joint_states('b', 20 * MS, JOINTS, [-0.3] * 6)
    for session, robot in ((one, 'a'), (two, 'b')):
        for request_id in (1, 2):
            core.on_request(Request(robot, session, request_id, 0))
    assert sorted(served(core)) == [('a', 1, 10), ('b', 1, 20)]
    assert sorted(served(core)) == [('a', 2, 10), ('b', 2, 20)]
    assert calls == [2, 2]


def test_released_sessions_leave_no_queue_behind():
    core = make_server(idle_timeout_s=0.0)
    old = admission(core, in_flight=3).session_id
    core.on_request(Request('', old, 1, 0))
    core.on_request(Request('', old, 2, 0))
    assert admission(core, in_flight=3).success       # the same client again: replaces it
    assert core.pending_count() == 0


def test_the_delay_line_releases_each_item_after_its_delay_in_order():
    clock = FakeClock()
    line = DelayLine(clock)
    assert line.next_due() is None and line.take_due() == []
    line.put('a', 1.0)
    clock.now = 0.2
    line.put('b', 1.0)
    clock.now = 0.5
    line.put('c', 0.1)                                 # a lowered delay cannot overtake
    assert line.take_due() == [] and len(line) == 3 and line.next_due() == 1.0
    clock.now = 0.999
    assert line.take_due() == [], 'just before its time'
    clock.now = 1.0
    assert line.take_due() == ['a'] and line.next_due() == 1.2, 'at its time exactly'
    clock.now = 1.25
    assert line.take_due() == ['b', 'c'] and line.next_due() is None
    line.put('d', 5.0)
    assert line.clear() == ['d'] and line.take_due() == [] and len(line) == 0


def test_a_simulated_clocks_slack_releases_an_item_within_it_and_not_beyond():
    clock = FakeClock(0.6)
    line = DelayLine(clock, slack_s=1e-12)
    line.put('a', 0.6)                                 # due at 0.6 + 0.6
    clock.now = 1.2 - 2e-12
    assert line.take_due() == [], 'just beyond the slack'
    clock.now = 1.2 - 1e-13                            # a tick's float noise: the same instant
    assert line.take_due() == ['a']
