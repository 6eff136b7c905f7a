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

"""
Several requests in flight between the real executor and the real policy server over DDS.

The policy server serves the built-in demo policy (50 steps at 30 Hz: 1.67 s chunks) with an
injected link latency ``extra_latency_s`` of 0.9 s, more than half a chunk: one request in
flight cannot keep up with that (it hides at most (H - 2/fps) / 2 = 0.8 s), two staggered ones
can (up to 2 (H - 2/fps) / 3 = 1.07 s: executor/refill.py). A chunk asked for when the
coverage falls to the effective refill lands with the refill's excess over the turnaround
left: refill_seconds 1.05 leaves 0.15 s for the turnaround's jitter on a loaded 2-core host
(at the turnaround + 1/fps alone, 33 ms, a CI run starved). The arm is the fake arm peer.
Assertions are on counts and states, never on wall-clock speed.
"""

from remote_inference.msg import ActionChunk, ExecutorStatus, InferenceRequest
from timing_rules import starvation_explained

from remote_inference_py.transport import qos

SEMANTICS = 'so101-degrees-gripper-percent-v1'
EXECUTOR = {'deployment': 'test', 'semantics': SEMANTICS, 'autostart': True,
            'refill_seconds': 0.2, 'starvation_grace_s': 3.0, 'request_timeout_s': 3.0,
            'return_speed_rad_s': 1.0, 'max_step_rad': 0.5}
SERVER = {'deployment': 'test', 'extra_latency_s': 0.9}


class Traffic:
    """Requests and chunks seen on the wire, in order: ('request' | 'chunk', request id)."""

    def __init__(self, node):
        self.events = []
        node.create_subscription(InferenceRequest, 'policy/request',
                                 lambda m: self.events.append(('request', m.request_id)),
                                 qos.COMMANDS)
        node.create_subscription(ActionChunk, 'policy/chunk',
                                 lambda m: self.events.append(('chunk', m.request_id)),
                                 qos.CHUNKS)


def start(processes, ros, executor, server):
    node, spinner = ros
    statuses = []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    processes.peer('fake_arm.py', node_name='fake_arm', params={'log_commands': False})
    processes.console_script('policy_server', node_name='policy_server',
                             params={**SERVER, **server})
    proc = processes.console_script('executor', node_name='executor',
                                    params={**EXECUTOR, **executor})
    return statuses, proc


def test_two_requests_in_flight_hide_a_latency_above_half_a_chunk(processes, ros):
    node, spinner = ros
    traffic = Traffic(node)
    statuses, executor = start(processes, ros,
                               {'max_requests_in_flight': 2, 'refill_seconds': 1.05},
                               {'max_requests_per_client': 2})
    spinner.until(lambda: statuses and statuses[-1].chunks_accepted >= 2, 60,
                  'two chunks accepted')
    # Moving all along (WAITING only when starved), and no starved tick unless the executor's
    # own turnarounds and stalls (skipped ticks) show that much (the refill rule,
    # test/timing_rules.py): a loaded run's executor stalled 0.49 s. A starve drains the
    # requests in flight; only their late chunks may be dropped.
    first = statuses[-1]
    spinner.spin_for(6.0)
    last = statuses[-1]
    assert {s.state_name for s in statuses[statuses.index(first):]} <= {'RUNNING', 'WAITING'}
    assert starvation_explained(statuses), last.message
    assert last.chunks_accepted - first.chunks_accepted >= 4
    assert last.chunks_dropped == 0 or (
        last.starved_ticks and last.chunks_dropped <= 2
        and 'drained when' in last.last_drop_reason), last.last_drop_reason
    # Two in flight, never more, by the executor's own count at its ticks: this node receives
    # requests and chunks on two topics, and a loaded run saw a chunk arrive here after the
    # request sent after it (counted 3 from the arrival order).
    assert max(s.requests_in_flight for s in statuses) == 2
    answered = [i for kind, i in traffic.events if kind == 'chunk']
    assert answered == sorted(answered), 'answered in request order'
    assert last.p50_turnaround_s >= 0.9
    assert executor.stop() == 0


def test_asking_more_requests_in_flight_than_the_server_queues_is_refused(processes, ros):
    node, spinner = ros
    statuses, executor = start(processes, ros, {'max_requests_in_flight': 3},
                               {'max_requests_per_client': 2, 'extra_latency_s': 0.0})
    assert executor.wait(30) != 0
    out = executor.output()
    assert 'admission refused' in out, out
    assert 'requests in flight: client keeps up to 3, server queues 1 to 2 per client' in out
    assert 'max_requests_in_flight on the executor' in out
    assert 'max_requests_per_client on the server' in out
