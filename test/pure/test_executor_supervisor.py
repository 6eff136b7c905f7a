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

"""The executor's session supervisor: the decisions around the core, with no ROS.

Start gating, the first request's repeats, failover and when it is too late, the task
override, the order of a tick (a query's pause before the core decides), and the exit code.
fps = 10 and two joints, as in test_executor_core.py; the clock is the test's.
"""

import math
from types import SimpleNamespace

from core_fixtures import FPS, JOINTS, make_chunk
import numpy as np
import pytest
from supervisor_fixtures import admit, admit_reply, capabilities, HOLD, io, kinds, sent_values

from remote_inference_py.contract.check import PRESENCE_LEASE_S
from remote_inference_py.executor import query as queries
from remote_inference_py.executor import supervisor as sv
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings
from remote_inference_py.executor.core import State
from remote_inference_py.executor.handshake import (
    AskAdmission, AskCapabilities, Log)
from remote_inference_py.executor.server_selection import AskCandidate


def make(now=0.0, **settings):
    config = ExecutorConfig(joint_names=JOINTS, fps=FPS, max_step_rad=math.inf)
    settings.setdefault('deployment', 'so101')
    settings.setdefault('autostart', True)
    return sv.Supervisor(config, NodeSettings(**settings), '/executor', now)


def chunk_answer(request_id, capture, values, session='s1', instance='i1'):
    return sv.Answer(session, request_id, instance, '', False,
                     make_chunk(request_id, capture, values, session=session))


def moving(sup, start=0.0):
    """Admit, measure and run `sup` on one chunk of 0.1, 0.2, ... from `start`."""
    sup.on_measured(np.zeros(2))
    request = next(a for a in admit(sup, start) if isinstance(a, sv.SendRequest))
    sup.sent(SimpleNamespace(request_id=request.order.request_id, session_id='s1'), start)
    sup.on_answer(chunk_answer(request.order.request_id, start + 0.01,
                               [0.1 * k for k in range(1, 40)]), '', start + 0.05)
    return request


# ----------------------------------------------------------------------------- start

def test_motion_starts_at_the_first_tick_all_start_conditions_hold():
    sup = make(autostart=False)
    assert sup.request_start() == (True, 'will start when ready: not admitted by a policy '
                                         'server yet')
    admit(sup)
    assert sup.core.state == State.READY   # admitted, but no joint_states yet
    assert sup.start_refusal() == 'no joint_states received yet'
    sup.tick(0.1, io())
    assert sup.core.state == State.READY   # requested, not started: not measured
    sup.on_measured(np.zeros(2))
    actions = sup.tick(0.2, io())
    assert Log('info', 'motion started') in actions and sup.core.state == State.WAITING


def test_without_autostart_nothing_starts_until_asked():
    sup = make(autostart=False)
    sup.on_measured(np.zeros(2))
    admit(sup)
    sup.tick(0.1, io())
    assert sup.core.state == State.READY
    assert sup.request_start() == (True, 'starting')
    sup.tick(0.2, io())
    assert sup.core.state == State.WAITING


def test_a_start_asked_again_changes_nothing_while_the_run_goes_on_and_is_refused_after():
    """A caller whose reply was lost asks again (analysis/record.py: ExecutorStarter)."""
    sup = make(autostart=False)
    sup.on_measured(np.zeros(2))
    admit(sup)
    assert sup.request_start() == (True, 'starting')
    request = next(a for a in sup.tick(0.1, io()) if isinstance(a, sv.SendRequest))
    assert sup.core.state == State.WAITING   # started: waiting for the first chunk
    assert sup.request_start() == (True, 'already running (WAITING)')
    sup.sent(SimpleNamespace(request_id=request.order.request_id, session_id='s1'), 0.2)
    sup.on_answer(chunk_answer(request.order.request_id, 0.21, [0.1] * 20), '', 0.25)
    sup.tick(0.3, io())
    assert sup.core.state == State.RUNNING
    assert sup.request_start() == (True, 'already running (RUNNING)')
    assert not sup.start_requested   # nothing is left asked for
    sup.request_stop(0.4)
    for k in range(5, 40):
        sup.tick(0.1 * k, io())
    assert sup.core.state == State.STOPPED
    assert sup.request_start() == (False, 'cannot start in state STOPPED')


def test_a_start_that_waits_is_named_after_a_second_then_every_five():
    """READY with a start asked for and no joint_states: the log says so, with the matches."""
    sup = make()
    admit(sup, 10.0)

    def named(now, publishers=0):
        return [a.text for a in sup.tick(now, io(joint_state_publishers=publishers))
                if isinstance(a, Log) and 'requested but' in a.text]

    assert named(10.0) == [] and named(10.99) == []
    assert named(11.0) == ['start requested but waiting: no joint_states received yet '
                           '(0 joint_states publisher(s) matched)']
    assert named(15.99, 1) == []
    assert named(16.0, 1) == ['start requested but waiting: no joint_states received yet '
                              '(1 joint_states publisher(s) matched)']
    sup.on_measured(np.zeros(2))
    started = [a.text for a in sup.tick(16.1, io()) if isinstance(a, Log)]
    assert 'motion started' in started and not [t for t in started if 'requested but' in t]
    quiet = make(autostart=False)   # no start asked for: nothing to name
    admit(quiet, 10.0)
    assert not [a for a in quiet.tick(20.0, io(joint_state_publishers=0))
                if isinstance(a, Log) and 'requested but' in a.text]


# ----------------------------------------------------------------------------- first request

def test_the_first_request_is_repeated_until_anything_of_the_session_comes_back():
    sup = make()
    sup.on_measured(np.zeros(2))
    request = next(a for a in admit(sup) if isinstance(a, sv.SendRequest))
    message = SimpleNamespace(request_id=request.order.request_id, session_id='s1')
    sup.sent(message, 0.0)
    assert kinds(sup.tick(0.25, io()), 'Republish') == []          # just inside 0.25 s
    assert [a.message for a in sup.tick(0.26, io())
            if isinstance(a, sv.Republish)] == [message]           # just outside
    sup.on_answer(chunk_answer(request.order.request_id, 0.01, [0.1] * 20), '', 0.3)
    assert kinds(sup.tick(2.0, io()), 'Republish') == []           # answered: never again


# ----------------------------------------------------------------------------- the tick order

def test_a_query_pauses_before_the_core_decides_the_tick_so_the_arm_never_steps_back():
    sup = make()
    moving(sup)
    sent = []
    for k in range(1, 4):
        sent += sent_values(sup.tick(0.1 * k, io()))
        sup.on_applied(np.array([sent[-2] if len(sent) > 1 else 0.0, 0.0]))   # lagging
    assert sent == [0.1, 0.2, 0.3]
    assert sup.begin_query('goal', 'question', 'where?') == ''
    actions = sup.tick(0.4, io())
    assert kinds(actions, 'Ask', 'SendCommand') == ['Ask', 'SendCommand']
    assert sent_values(actions) == [0.3]   # the pause came first: the last sent, held
    assert sent_values(sup.tick(0.5, io())) == [0.3]


def test_a_subtask_answer_is_the_task_until_the_task_parameter_changes():
    sup = make(task='tidy')
    moving(sup)
    sup.tick(0.1, io())
    sup.begin_query('goal', 'subtask', 'tidy')
    sup.tick(0.2, io())
    actions = sup.tick(0.3, io(ask_reply=queries.Reply(True, answer='grasp the cube')))
    assert sv.PublishTask('grasp the cube') in actions and sup.task == 'grasp the cube'
    config, settings = sup.config, sup.settings
    sup.update_settings(config, settings.__class__(**{**settings.__dict__, 'task': 'stack'}),
                        {'task': 'stack'})
    assert sup.task == 'stack'


# ----------------------------------------------------------------------------- failover

def lost_and_holding(grace_s=3.0):
    config = ExecutorConfig(joint_names=JOINTS, fps=FPS, max_step_rad=math.inf,
                            starvation_grace_s=grace_s)
    sup = sv.Supervisor(config, NodeSettings(deployment='so101', autostart=True,
                                             policy_servers=('gpu1', 'gpu2'),
                                             on_server_loss='failover'), '/executor', 0.0)
    sup.on_measured(np.zeros(2))
    sup.on_hardware(HOLD, '', 0.0)
    both = dict(ready={'gpu1': True, 'gpu2': True}, request_subscribers=1, chunk_publishers=1)
    assert kinds(sup.tick(0.0, sv.Io(answers={}, **both)), 'AskCandidate') == [
        'AskCandidate', 'AskCandidate']
    answers = {'gpu1': capabilities('i1'), 'gpu2': capabilities('i2')}
    chosen = sup.tick(0.0, sv.Io(answers=answers, **both))
    server = next(a.candidate for a in chosen if isinstance(a, sv.UseServer))
    sup.tick(0.0, sv.Io(answers=answers, **both))
    sup.tick(0.0, sv.Io(answers=answers, reply=capabilities(), **both))
    sup.tick(0.0, sv.Io(answers=answers, reply=admit_reply(instance='i1'), **both))
    assert sup.core.state in (State.READY, State.WAITING)
    sup.on_answer(sv.Answer('s1', 1, 'i1', 'gone', True, None), server, 0.5)   # refused
    return sup, server, both, answers


def test_a_lost_server_is_failed_over_while_the_arm_holds():
    sup, lost, both, answers = lost_and_holding()
    actions = sup.tick(0.6, sv.Io(answers={}, **both))
    assert kinds(actions, 'NewAdmission') == ['NewAdmission'] and sup.failing_over
    other = 'gpu2' if lost == 'gpu1' else 'gpu1'
    assert [a.candidate for a in actions if isinstance(a, AskCandidate)] == [other]
    sup.tick(0.7, sv.Io(answers={other: capabilities('i2')}, **both))
    sup.tick(1.8, sv.Io(answers={other: capabilities('i2')}, **both))   # survey wait over
    sup.tick(1.8, sv.Io(answers={other: capabilities('i2')}, reply=capabilities('i2'),
                        **both))
    actions = sup.tick(1.8, sv.Io(answers={other: capabilities('i2')},
                                  reply=admit_reply('s2', 'i2'), **both))
    assert any('failed over to server' in a.text for a in actions if isinstance(a, Log))
    assert sup.core.session_id == 's2' and not sup.failing_over


def test_a_failover_admitted_after_the_grace_is_too_late():
    sup, lost, both, answers = lost_and_holding(grace_s=0.5)
    sup.tick(0.6, sv.Io(answers={}, **both))
    other = 'gpu2' if lost == 'gpu1' else 'gpu1'
    for now in (0.7, 1.0, 1.3):   # the grace runs out meanwhile: the core faults
        sup.tick(now, sv.Io(answers={other: capabilities('i2')}, **both))
    assert sup.core.state in (State.STOPPING, State.FAULT, State.STOPPED)
    sup.tick(1.8, sv.Io(answers={other: capabilities('i2')}, reply=capabilities('i2'), **both))
    actions = sup.tick(1.8, sv.Io(answers={other: capabilities('i2')},
                                  reply=admit_reply('s2', 'i2'), **both))
    too_late = [a.text for a in actions if isinstance(a, Log) and 'too late' in a.text]
    assert too_late and sup.core.session_id == 's1'


@pytest.mark.parametrize('heard', [False, True])
def test_a_grace_that_runs_out_while_the_server_is_silent_waits_for_its_lease(heard):
    # The server stops with half a second buffered: the wait's 0.5 s grace runs out at about
    # 1.1 s, long before the 4 s lease. Silent (no presence sample since its chunk), the wait
    # faults when the lease expires, naming the lost server, whatever was buffered; still heard
    # (a presence sample every 0.5 s, no chunk), it faults at the grace, starved, as before.
    config = ExecutorConfig(joint_names=JOINTS, fps=FPS, max_step_rad=math.inf,
                            starvation_grace_s=0.5, return_to_initial_position=False)
    sup = sv.Supervisor(config, NodeSettings(deployment='so101', autostart=True), '/executor',
                        0.0)
    sup.on_measured(np.zeros(2))
    request = next(a for a in admit(sup) if isinstance(a, sv.SendRequest))
    sup.sent(SimpleNamespace(request_id=request.order.request_id, session_id='s1'), 0.0)
    sup.on_answer(chunk_answer(request.order.request_id, 0.01, [0.1, 0.2, 0.3, 0.4, 0.5]),
                  '', 0.05)
    faulted = None
    for step in range(1, 60):
        now = round(step * 0.1, 3)
        if heard and step % 5 == 0:
            sup.on_presence('i1', '', now)
        sup.tick(now, io())
        if faulted is None and sup.core.state == State.FAULT:
            faulted = now
    message = sup.core.stats().message
    if heard:
        assert faulted == pytest.approx(1.1, abs=0.05)
        assert 'no usable chunk arrived within the 0.5 s grace' in message, message
    else:
        assert faulted == pytest.approx(0.05 + PRESENCE_LEASE_S, abs=0.1)
        assert message.startswith('fault: starved: the server was lost (policy server '
                                  'instance i1 lost: nothing of it for 4.05 s'), message


# ----------------------------------------------------------------------------- the end

@pytest.mark.parametrize('how, code', [('stop', 0), ('refused', 1)])
def test_the_exit_code_is_decided_once_the_core_is_terminal(how, code):
    sup = make()
    sup.on_hardware(HOLD, '', 0.0)
    if how == 'stop':
        sup.request_stop(0.0)
        actions = sup.tick(0.1, io())
    else:   # refused in the tick that reads the reply: finished in that tick
        sup.tick(0.0, io())
        other = SimpleNamespace(**{**capabilities().__dict__, 'deployment': 'other'})
        actions = sup.tick(0.0, io(reply=other))
    assert [a.exit_code for a in actions if isinstance(a, sv.Finished)] == [code]
    assert sup.exit_code == code and not kinds(sup.tick(0.3, io()), 'Finished')   # once


def test_the_admission_actions_reach_the_node_in_order():
    sup = make()
    sup.on_hardware(HOLD, '', 0.0)
    actions = sup.tick(0.0, io())
    assert any(isinstance(a, AskCapabilities) for a in actions)
    actions = sup.tick(0.0, io(reply=capabilities()))
    assert any(isinstance(a, AskAdmission) for a in actions)


def test_the_status_goes_out_at_the_tick_a_new_chunk_first_drives():
    # Ticks every 0.05 s, the periodic status every 0.1 s; each request is answered at once.
    # The tick a new request's chunk first drives publishes the status, naming it, also when
    # the periodic one is not due (the recorder labels a frame's task by it).
    sup = make()
    moving(sup)
    now, last_status, changes = 0.05, 0.0, []
    for _ in range(70):
        now += 0.05
        before = sup.core.dispatched_request_id
        actions = sup.tick(now, io())
        for order in (a.order for a in actions if isinstance(a, sv.SendRequest)):
            sup.sent(SimpleNamespace(request_id=order.request_id, session_id='s1'), now)
            sup.on_answer(chunk_answer(order.request_id, now, [5.0 + 0.1 * k
                                                               for k in range(1, 40)]),
                          '', now + 0.01)
        published = 'PublishStatus' in kinds(actions)
        if sup.core.dispatched_request_id != before:
            changes.append((sup.core.dispatched_request_id, published,
                            now - last_status < 0.1))
        if published:
            last_status = now
    assert [request for request, _, _ in changes] == [1, 2, 3, 4]
    assert all(published for _, published, _ in changes)
    assert any(early for _, _, early in changes)   # the rule, not the period, sent one
