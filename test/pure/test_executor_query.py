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

"""Asking the policy while the arm holds: the core's pause/resume and the query machine.

fps = 10 and two joints (j1 carries the values), as in test_executor_core.py.
"""

from core_fixtures import check_range_edges, j1, Loop, make_chunk, make_executor
import numpy as np
import pytest

from remote_inference_py.executor.core import State
from remote_inference_py.executor.query import (
    answer_reason, Ask, Facts, Feedback, Finish, Pause, pause_reason, Query, QuerySettings,
    read_status, refusal, Reply, Resume, SetTask)

OLD_PLAN = [0.1 * k for k in range(1, 30)]   # the buffered continuation: 0.1, 0.2, ...
FRESH = [5.0, 5.1, 5.2, 5.3]


def moving_core(**changes):
    """A core dispatching OLD_PLAN; return it, its loop and the commands of 4 ticks."""
    core = make_executor(**changes)
    loop = Loop(core)
    assert loop.tick().request.request_id == 1
    assert core.on_chunk(make_chunk(1, 0.01, OLD_PLAN), 0.05).accepted
    sent = [j1(out) for out in loop.run(3)]
    assert sent == [0.1, 0.2, 0.3]
    return core, loop


def test_the_status_carries_the_question_and_the_answer_for_the_recording():
    core, loop = moving_core()
    question = "is the cube held? (it's red)"
    core.pause(0.35, pause_reason('question', question))
    assert read_status(core.stats().message) == ('asked', 'question', question)
    answer = 'no: it rests on the table; "held" needs closed jaws'
    core.resume(0.5, answer_reason(answer))
    assert read_status(core.stats().message) == ('answered', answer)
    assert read_status('RUNNING: resumed after 0.2 s of waiting') is None
    assert read_status('resuming after cancel: a fresh capture taken after t=1.000') is None


def test_pause_holds_the_last_applied_target_and_discards_the_continuation():
    core, loop = moving_core(starvation_grace_s=0.5)
    core.pause(0.35, 'a question query')
    assert core.paused and core.state == State.WAITING
    assert 'discarded' in core.stats().message
    held = loop.run(20)   # 2 s: four times the grace, and no fault: the text work is not starving
    assert {j1(out) for out in held} == {0.3} and all(out.held for out in held)
    assert all(out.request is None for out in held) and core.state == State.WAITING
    # A chunk answering the request drained by the pause is never used.
    late = core.on_chunk(make_chunk(1, 0.3, OLD_PLAN), 2.4)
    assert not late.accepted and 'paused for a query' in late.reason

    core.resume(2.45, 'the answer')
    out = loop.tick()   # t = 2.4 + 0.1
    assert out.request is not None and out.request.earliest_capture_time == 2.45
    request_id = out.request.request_id
    # Just outside: a capture 1 ms before the answer cannot restart motion.
    stale = core.on_chunk(make_chunk(request_id, 2.449, OLD_PLAN), 2.52)
    assert not stale.accepted and 'stale' in stale.reason
    out = loop.tick()   # the next recovery request, same earliest capture
    assert j1(out) == 0.3 and out.held and out.request.earliest_capture_time == 2.45
    # Just inside: a capture 1 ms after the answer restarts motion.
    fresh = core.on_chunk(make_chunk(out.request.request_id, 2.451, FRESH), 2.55)
    assert fresh.accepted, fresh.reason
    after = [j1(o) for o in loop.run(4)]
    assert after[:4] == FRESH and core.state == State.RUNNING
    dispatched = [j1(o) for o in loop.outputs[4:] if not o.held]
    assert all(value >= 5.0 for value in dispatched), dispatched   # no old step, ever


@pytest.mark.parametrize('where', ['before the tick', 'after the tick, before sending',
                                   'after sending'])
def test_a_pause_anywhere_in_a_tick_never_steps_the_arm_back(where):
    """A driver whose applied target lags one tick: the hold is never behind what was sent."""
    core = make_executor()
    assert core.tick(0.0).request.request_id == 1
    assert core.on_chunk(make_chunk(1, 0.01, OLD_PLAN), 0.05).accepted
    sent = []

    def send(command):
        if sent:   # the driver reports the previous command as applied (one cycle behind)
            core.on_applied(np.full_like(command, sent[-1]))
        sent.append(round(float(command[0]), 9))

    for k in range(1, 4):
        send(core.tick(0.1 * k).command)
    assert sent == [0.1, 0.2, 0.3]
    if where == 'before the tick':
        core.pause(0.4, 'a question query')
        send(core.tick(0.4).command)
    else:
        out = core.tick(0.4)
        if where == 'after sending':
            send(out.command)
            core.pause(0.4, 'a question query')
        else:   # the hold replaces the unsent step, which it equals
            send(core.pause(0.4, 'a question query'))
    for k in range(5, 9):
        send(core.tick(0.1 * k).command)
    assert all(b >= a for a, b in zip(sent, sent[1:])), sent   # never a step back
    assert len(set(sent[4:])) == 1 and sent[-1] == sent[3]     # held where it was


def test_server_loss_while_paused_faults_the_query_and_returns_home():
    core, loop = moving_core()
    core.pause(0.35, 'a question query')
    core.server_lost(0.5)
    assert core.state == State.STOPPING and not core.paused
    assert 'server lost during a query' in core.stats().message
    sent = [j1(out) for out in loop.run(40) if out.command is not None]
    assert core.state == State.FAULT
    assert sent[0] < 0.3 and sent[-1] == 0.0   # the usual way home: the pose measured at start


@pytest.mark.parametrize('when', ['ready', 'stopping', 'server lost', 'paused'])
def test_pause_is_refused_unless_moving(when):
    core, loop = moving_core() if when != 'ready' else (make_executor(start=False), None)
    if when == 'stopping':
        core.stop(0.4)
    elif when == 'server lost':
        core.server_lost(0.4)
    elif when == 'paused':
        core.pause(0.4, 'a question query')
    with pytest.raises(RuntimeError, match={'ready': 'state READY', 'stopping': 'STOPPING',
                                            'server lost': 'server was lost',
                                            'paused': 'already paused'}[when]):
        core.pause(0.45, 'a question query')


def test_stop_while_paused_returns_home():
    core, loop = moving_core()
    core.pause(0.35, 'a question query')
    core.stop(0.5)
    assert core.state == State.STOPPING and not core.paused
    loop.run(40)
    assert core.state == State.STOPPED


# ----------------------------------------------------------------------------- refusals

SETTINGS = QuerySettings(max_text_chars=20, answer_timeout_s=2.0, steering_period_s=1.0)
ALL = ('question', 'subtask', 'steering')


def test_query_settings_are_the_executor_parameters_and_checked_as_they_are():
    assert QuerySettings() == QuerySettings(1000, 30.0, 5.0)   # the declared defaults
    for field, parameter, inside, outside in (
            ('max_text_chars', 'query_max_text_chars', (1, 100000), (0, 100001)),
            ('answer_timeout_s', 'query_answer_timeout_s', (0.1, 3600.0), (0.099, 3600.5)),
            ('steering_period_s', 'steering_period_s', (0.1, 3600.0), (0.099, 3600.5))):
        check_range_edges(QuerySettings, field, parameter, inside, outside, 'QuerySettings')


def refuse(kind='question', text='where?', offered=ALL, admitted=True, state='RUNNING',
           server_lost=False, busy=False):
    return refusal(kind, text, offered=offered, admitted=admitted, state=state,
                   server_lost=server_lost, busy=busy, settings=SETTINGS)


@pytest.mark.parametrize('changes, expected', [
    (dict(kind='poem'), "unknown query kind 'poem'"),
    (dict(text='  '), 'empty text'),
    (dict(text='x' * 21), 'text too long: 21 characters, at most 20'),
    (dict(admitted=False), 'no session admitted yet'),
    (dict(busy=True), 'another query is running'),
    (dict(server_lost=True), 'policy server was lost'),
    (dict(state='STOPPING'), 'the executor is STOPPING'),
    (dict(state='STOPPING', server_lost=True), 'the executor is STOPPING'),   # going home
    (dict(state='FAULT'), 'the executor is FAULT'),
    (dict(state='READY'), 'the executor is READY'),
    (dict(offered=()), "does not offer 'question' (it offers: no text commands)"),
    (dict(kind='steering', offered=('question',)), "does not offer 'steering'"),
])
def test_refusals_name_the_problem(changes, expected):
    assert expected in refuse(**changes)


def test_text_at_the_limit_and_waiting_state_are_accepted():
    assert refuse(text='x' * 20) == ''
    assert refuse(state='WAITING') == ''


# ----------------------------------------------------------------------------- the machine

def kinds(actions):
    return [type(action).__name__ for action in actions]


def test_question_pauses_asks_resumes_and_finishes_on_the_first_fresh_target():
    query = Query('question', 'where is the cube?', 'pick', SETTINGS)
    first = query.step(Facts(1.0, 'RUNNING'))
    assert kinds(first) == ['Pause', 'Feedback', 'Ask', 'Feedback']
    assert first[2] == Ask('question', 'where is the cube?', 'pick', 1.0)
    assert [a.phase for a in first if isinstance(a, Feedback)] == ['paused', 'asking']
    assert query.step(Facts(1.5, 'WAITING')) == []
    reply = Reply(True, answer=' on the left ', generate_ms=40.0)
    answered = query.step(Facts(1.6, 'WAITING', reply=reply))
    assert answered == [Resume("the answer 'on the left'"),
                        Feedback('resuming', 1, 'on the left')]
    assert query.step(Facts(1.7, 'WAITING')) == []   # still holding: no fresh chunk yet
    done = query.step(Facts(1.9, 'RUNNING', dispatched=True))
    assert kinds(done) == ['Finish']
    finish = done[0]
    assert (finish.status, finish.answer, finish.task, finish.rounds) == (
        'succeeded', 'on the left', 'pick', 1)
    assert finish.hold_s == pytest.approx(0.9) and finish.ask_s == pytest.approx(0.6)
    assert finish.resume_s == pytest.approx(0.3) and finish.generate_ms == 40.0
    assert query.done and query.step(Facts(2.0, 'RUNNING')) == []


def test_subtask_answer_becomes_the_task():
    query = Query('subtask', 'tidy the table', 'tidy the table', SETTINGS)
    query.step(Facts(0.0, 'RUNNING'))
    actions = query.step(Facts(0.2, 'WAITING', reply=Reply(True, answer='grasp the cube')))
    assert actions[0] == SetTask('grasp the cube') and isinstance(actions[1], Resume)
    finish = query.step(Facts(0.4, 'RUNNING', dispatched=True))[0]
    assert finish.status == 'succeeded' and finish.task == 'grasp the cube'


def test_steering_repeats_at_its_cadence_while_moving_between_rounds():
    query = Query('steering', 'tidy the table', 'tidy the table', SETTINGS)
    query.step(Facts(0.0, 'RUNNING'))
    query.step(Facts(0.1, 'WAITING', reply=Reply(True, answer='reach')))
    moving = query.step(Facts(0.3, 'RUNNING', dispatched=True))
    assert moving == [Feedback('moving', 1, 'reach')]
    assert query.step(Facts(1.29, 'RUNNING', dispatched=True)) == []   # 1 s of motion: not yet
    second = query.step(Facts(1.3, 'RUNNING', dispatched=True))
    assert kinds(second) == ['Pause', 'Feedback', 'Ask', 'Feedback']
    assert second[2].task == 'reach'
    third = query.step(Facts(1.4, 'WAITING', reply=Reply(True, answer='grasp')))
    assert third[0] == SetTask('grasp')
    query.step(Facts(1.6, 'RUNNING', dispatched=True))
    finish = query.step(Facts(1.7, 'RUNNING', cancel=True))[0]
    assert (finish.status, finish.rounds, finish.task) == ('canceled', 2, 'grasp')
    assert finish.hold_s == pytest.approx(0.3 + 0.3)   # held only for the text work


def test_cancel_while_asking_resumes_and_ignores_the_late_answer():
    query = Query('subtask', 'tidy', 'pick', SETTINGS)
    query.step(Facts(0.0, 'RUNNING'))
    actions = query.step(Facts(0.2, 'WAITING', cancel=True))
    assert actions == [Resume('cancel'), Feedback('resuming', 0, '')]
    assert query.step(Facts(0.3, 'WAITING', reply=Reply(True, answer='late'))) == []
    finish = query.step(Facts(0.5, 'RUNNING', dispatched=True))[0]
    assert (finish.status, finish.task, finish.answer) == ('canceled', 'pick', '')


@pytest.mark.parametrize('reply, at, expected', [
    (Reply(False, 'the served policy does not offer text'), 0.5,
     'did not answer: the served policy does not offer text'),
    (Reply(True, answer='   '), 0.5, 'empty text; the task stays'),
    (None, 2.01, 'no answer within the 2 s'),
])
def test_failures_resume_then_abort_with_the_reason(reply, at, expected):
    query = Query('subtask', 'tidy', 'pick', SETTINGS)
    query.step(Facts(0.0, 'RUNNING'))
    if reply is None:
        assert query.step(Facts(1.99, 'WAITING')) == []   # just inside the timeout
    actions = query.step(Facts(at, 'WAITING', reply=reply))
    assert kinds(actions) == ['Resume', 'Feedback']
    finish = query.step(Facts(at + 0.2, 'RUNNING', dispatched=True))[0]
    assert finish.status == 'aborted' and expected in finish.message and finish.task == 'pick'


MISSING = Reply(False, 'no observation for the query: no observation.cube_pose sample captured '
                'at or after the earliest capture stamp (newest is 0.006 s older)',
                observation_missing=True)


def test_a_missing_observation_is_asked_again_for_the_same_capture_until_the_timeout():
    query = Query('question', 'where?', 'pick', SETTINGS)
    query.step(Facts(1.0, 'RUNNING'))
    # The server waited for a capture at or after the pause and had none: not an answer.
    again = query.step(Facts(1.3, 'WAITING', reply=MISSING))
    assert again == [Ask('question', 'where?', 'pick', 1.0)]   # the pause's capture, again
    assert query.step(Facts(1.6, 'WAITING', reply=MISSING)) == [Ask('question', 'where?',
                                                                    'pick', 1.0)]
    answered = query.step(Facts(1.8, 'WAITING', reply=Reply(True, answer='left')))
    assert kinds(answered) == ['Resume', 'Feedback']
    finish = query.step(Facts(2.0, 'RUNNING', dispatched=True))[0]
    assert finish.status == 'succeeded' and finish.answer == 'left'
    assert finish.ask_s == pytest.approx(0.8)   # from the first ask


@pytest.mark.parametrize('at, asks_again', [(2.99, True), (3.01, False)])
def test_asking_again_ends_at_the_answer_timeout_from_the_first_ask(at, asks_again):
    query = Query('question', 'where?', 'pick', SETTINGS)   # answer_timeout_s = 2.0
    query.step(Facts(1.0, 'RUNNING'))
    actions = query.step(Facts(at, 'WAITING', reply=MISSING))
    if asks_again:   # just inside: asked again; no reply by the timeout then names it
        assert kinds(actions) == ['Ask']
        actions = query.step(Facts(3.01, 'WAITING'))
    assert kinds(actions) == ['Resume', 'Feedback']
    finish = query.step(Facts(3.2, 'RUNNING', dispatched=True))[0]
    assert finish.status == 'aborted' and 'observation.cube_pose' in finish.message
    if asks_again:
        assert finish.message.startswith('no answer within the 2 s query_answer_timeout_s '
                                         '(2 asks; the server had no observation for')


def test_a_failure_that_is_not_a_missing_observation_is_not_asked_again():
    query = Query('question', 'where?', 'pick', SETTINGS)
    query.step(Facts(1.0, 'RUNNING'))
    failed = Reply(False, 'text generation failed: out of memory')
    assert kinds(query.step(Facts(1.2, 'WAITING', reply=failed))) == ['Resume', 'Feedback']


def test_a_stop_or_fault_during_the_query_aborts_it_with_the_executor_reason():
    query = Query('question', 'where?', 'pick', SETTINGS)
    query.step(Facts(0.0, 'RUNNING'))
    finish = query.step(Facts(0.3, 'STOPPING', 'fault: server lost during a query'))[0]
    assert isinstance(finish, Finish) and finish.status == 'aborted'
    assert 'STOPPING: fault: server lost during a query' in finish.message
    assert finish.hold_s == pytest.approx(0.3)
    assert Pause not in map(type, query.step(Facts(0.4, 'RUNNING')))
