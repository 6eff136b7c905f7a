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

"""The session's lifecycle alone, over real parts and no core: admission, start, server loss,
failover, the pause for text work, and the end (stop, fault, the return home)."""

import numpy as np
import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.hold import Hold
from remote_inference_py.executor.requests import Closed, Kind, RequestTable
from remote_inference_py.executor.session import Session
from remote_inference_py.executor.status import Counters, State, Status
from remote_inference_py.executor.timeline import Timeline

JOINTS = ('j1', 'j2')


class Parts:
    """A session over fresh parts (fps = 10), with the parts kept for the checks."""

    def __init__(self, **changes):
        config = ExecutorConfig(joint_names=JOINTS, fps=10.0, **changes)
        self.timeline = Timeline(config)
        self.requests = RequestTable()
        self.robot = Hold(JOINTS)
        self.status = Status(State.IDLE)
        self.counters = Counters()
        self.session = Session(config, self.timeline, self.requests, self.robot, self.status,
                               self.counters)

    def running(self, at=0.0):
        """Admit 's1', measure [0.4, 0], start at `at`, and plan two targets; return self."""
        self.session.admit('s1', 0)
        self.robot.measure([0.4, 0.0])
        self.session.start(at)
        merged = self.timeline.merge(np.array([[0.5, 0.0], [0.6, 0.0]]), at, True,
                                     self.robot.measured)
        assert merged.usable and len(self.timeline.plan) == 2
        self.status.take_events()
        return self

    def send(self, count, now=0.0):
        """Open `count` refill requests at `now`; return their ids."""
        return [self.requests.open(now, now, 0.0, Kind.REFILL).request_id for _ in range(count)]

    def closures(self, ids):
        return [(self.requests.closure(i).why, self.requests.closure(i).at) for i in ids]


def test_admission_needs_idle_and_a_session_id_and_gives_the_requests_their_horizon():
    parts = Parts()
    with pytest.raises(ValueError, match='session_id must not be empty'):
        parts.session.admit('', 20)
    parts.session.admit('s1', 20)
    assert parts.session.id == 's1' and parts.status.state == State.READY
    assert parts.requests.horizon_s == 2.0   # 20 steps at 10 Hz
    with pytest.raises(RuntimeError, match='cannot admit a session in state READY'):
        parts.session.admit('s2', 20)


def test_start_needs_a_healthy_pose_anchors_the_timeline_and_keeps_the_pose_as_home():
    parts = Parts()
    parts.session.admit('s1', 0)
    with pytest.raises(RuntimeError, match='no healthy measured pose yet'):
        parts.session.start(1.5)
    parts.robot.measure([0.4, 0.1])
    parts.session.start(1.5)
    assert parts.status.state == State.RUNNING and parts.timeline.start == 1.5
    assert parts.robot.initial_pose.tolist() == [0.4, 0.1]
    parts.robot.measure([0.9, 0.9])
    assert parts.robot.initial_pose.tolist() == [0.4, 0.1], 'a copy, not the live pose'


def test_chunks_are_refused_by_session_then_state_then_loss_then_pause():
    parts = Parts()
    assert parts.session.chunk_refusal('s1') == 'executor is IDLE; chunk not used'
    ready = Parts()
    ready.session.admit('s1', 0)
    assert ready.session.chunk_refusal('s1') == 'executor is READY; chunk not used'
    assert ready.session.chunk_refusal('s0') == (   # another executor's chunk says so
        "chunk from session 's0' but admitted session is 's1'")
    parts.running()
    assert parts.session.chunk_refusal('s1') == ''
    assert parts.session.chunk_refusal('s0') == (
        "chunk from session 's0' but admitted session is 's1'")
    parts.session.pause(0.2, 'a question query')
    assert parts.session.chunk_refusal('s1').startswith('paused for a query')
    assert parts.session.chunk_refusal('s0').startswith("chunk from session 's0'")


def test_server_loss_abandons_the_requests_in_flight_once_and_lets_the_plan_drain():
    parts = Parts().running()
    ids = parts.send(2)
    parts.session.lose(0.3, 'lease expired')
    assert parts.closures(ids) == [(Closed.SERVER_LOST, 0.3)] * 2 and len(parts.requests) == 0
    assert parts.status.state == State.RUNNING and len(parts.timeline.plan) == 2
    assert parts.status.message == 'server lost: lease expired; this session does not resume'
    assert parts.session.chunk_refusal('s1') == "server lost: session 's1' does not resume"
    events = parts.status.take_events()
    assert events[0] == 'requests 1, 2 abandoned: the server was lost'
    parts.session.lose(0.4, 'again')   # a second observation changes nothing
    assert parts.status.take_events() == [] and parts.session.lost_why == 'lease expired'


def test_server_loss_before_start_faults_at_once():
    parts = Parts()
    parts.session.admit('s1', 0)
    parts.session.lose(0.1, 'another instance')
    assert parts.status.state == State.FAULT
    assert parts.status.message == 'server lost before start: another instance'
    with pytest.raises(RuntimeError, match='cannot start in state FAULT'):
        parts.session.start(0.2)


def test_failover_needs_a_lost_server_while_holding_and_a_new_session_id():
    parts = Parts().running()
    parts.session.lose(0.3, 'lease expired')
    with pytest.raises(RuntimeError, match='needs a lost server and WAITING, not RUNNING'):
        parts.session.fail_over('s2', 10, 0.5)
    parts.status.set(State.WAITING, 'holding')
    for same in ('', 's1'):
        with pytest.raises(ValueError, match='fail over needs a new session id'):
            parts.session.fail_over(same, 10, 0.5)
    parts.session.fail_over('s2', 10, 0.5)
    assert parts.session.id == 's2' and not parts.session.lost
    assert parts.robot.waiting_since == 0.5 and len(parts.timeline.plan) == 0
    assert parts.requests.horizon_s == 1.0 and parts.counters.counts['failovers'] == 1
    assert parts.session.chunk_refusal('s2') == ''
    assert parts.session.chunk_refusal('s1').startswith("chunk from session 's1'")
    with pytest.raises(RuntimeError, match=r'\(server lost: False\)'):
        parts.session.fail_over('s3', 10, 0.6)


def test_a_pause_drains_and_discards_and_resume_begins_a_wait_at_its_time():
    parts = Parts().running()
    ids = parts.send(1)
    parts.robot.waiting_since = 0.1
    parts.session.pause(0.2, 'a question query')
    assert parts.session.paused and parts.status.state == State.WAITING
    assert parts.closures(ids) == [(Closed.DRAINED, 0.2)]
    assert parts.counters.counts['drained_requests'] == 1
    assert len(parts.timeline.plan) == 0 and parts.robot.waiting_since is None
    assert '0.20 s of buffered actions discarded' in parts.status.message
    with pytest.raises(RuntimeError, match='already paused'):
        parts.session.pause(0.3, 'again')
    parts.session.resume(1.25, 'the answer')
    assert not parts.session.paused and parts.robot.waiting_since == 1.25
    assert 'a fresh capture taken after t=1.250' in parts.status.message
    parts.session.resume(1.5, 'nothing')   # not paused: nothing to end
    assert parts.robot.waiting_since == 1.25


def test_pause_is_refused_when_not_moving_or_after_a_loss():
    parts = Parts()
    with pytest.raises(RuntimeError, match='cannot pause in state IDLE'):
        parts.session.pause(0.0, 'a query')
    parts.running()
    parts.session.lose(0.1, '')
    with pytest.raises(RuntimeError, match='cannot pause: the server was lost'):
        parts.session.pause(0.2, 'a query')


def test_server_loss_while_paused_faults_and_returns_home():
    parts = Parts(return_speed_rad_s=0.1, interpolation_multiplier=1).running()
    parts.robot.apply([0.45, 0.0])
    parts.session.pause(0.2, 'a question query')
    parts.session.lose(0.3, 'lease expired')
    assert not parts.session.paused and parts.status.state == State.STOPPING
    assert parts.status.message.startswith('fault: server lost during a query (lease expired)')
    path = [parts.session.return_command(0.3 + 0.1 * i)[0] for i in range(5)]   # 0.01 rad/tick
    assert path == pytest.approx([0.44, 0.43, 0.42, 0.41, 0.4]) and path[-1] == 0.4
    assert parts.status.state == State.FAULT and parts.status.message.endswith(
        'returned to the initial position')


def test_the_starvation_fault_names_the_grace_or_the_loss():
    parts = Parts(starvation_grace_s=0.5, return_to_initial_position=False).running()
    parts.robot.waiting_since = 1.0
    parts.session.starved(1.6)
    assert parts.status.state == State.FAULT and parts.status.message == (
        'fault: starved: no usable chunk arrived within the 0.5 s grace (waiting since '
        't=1.000)')
    lost = Parts(starvation_grace_s=0.5, return_to_initial_position=False).running()
    lost.session.lose(0.2, 'lease expired')
    lost.robot.waiting_since = 1.0
    lost.session.starved(1.6)
    assert lost.status.message.startswith(
        'fault: starved: the server was lost (lease expired) and nothing was buffered for 0.5 s')


def test_the_end_before_motion_at_once_and_while_moving_home_unless_unhealthy():
    idle = Parts()
    idle.session.admit('s1', 0)
    idle.session.stop(0.1)
    assert idle.status.state == State.STOPPED and idle.status.message == 'stopped before motion'
    unhealthy = Parts().running()
    ids = unhealthy.send(1)
    unhealthy.robot.measurement_failed('driver timeout')
    unhealthy.session.fault('overheat', 0.7)
    assert unhealthy.closures(ids) == [(Closed.SHUTDOWN, 0.7)]
    assert unhealthy.status.state == State.FAULT and unhealthy.status.message == (
        'fault: overheat; return to the initial position skipped (unhealthy)')
    assert len(unhealthy.timeline.plan) == 0
    moving = Parts().running()
    moving.robot.apply([0.5, 0.0])
    moving.session.stop(0.7)
    assert moving.status.state == State.STOPPING
    moving.session.fault('collision', 0.8)   # on the way home: still home, but in FAULT
    while moving.status.state == State.STOPPING:
        last = moving.session.return_command(0.9)
    assert last.tolist() == [0.4, 0.0] and moving.status.state == State.FAULT
    assert moving.counters.counts['return_ticks'] >= 1


def test_every_end_closes_the_requests_in_flight_as_abandoned_at_its_time():
    ready = Parts()
    ready.session.admit('s1', 0)
    early = ready.send(1, now=0.1)
    ready.session.fault('camera lost', 0.2)   # before motion: ends at once
    assert ready.closures(early) == [(Closed.SHUTDOWN, 0.2)]
    assert 'request 1 abandoned at shutdown at t=0.200' in ready.status.take_events()
    moving = Parts().running()
    ids = moving.send(2, now=0.1)
    moving.session.end(State.FAULT, 'actuation failed: servo 3', 0.35)
    assert moving.closures(ids) == [(Closed.SHUTDOWN, 0.35), (Closed.SHUTDOWN, 0.35)]
    assert len(moving.requests) == 0 and len(moving.timeline.plan) == 0
    assert moving.status.take_events() == ['requests 1, 2 abandoned at shutdown at t=0.350',
                                           'FAULT: actuation failed: servo 3']
    assert (moving.status.state, moving.status.message) == (
        State.FAULT, 'actuation failed: servo 3')
    assert moving.requests.answer(ids[0], 0.4)[2] == (
        'stale: answers request 1, which was abandoned at shutdown at t=0.350')
