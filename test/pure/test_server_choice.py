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

"""Server choice among candidates: the rule, the survey, the next candidate, no ROS."""

from types import SimpleNamespace

import numpy as np
import pytest

from remote_inference_py.contract.check import PRESENCE_LEASE_S, PROTOCOL_VERSION
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings
from remote_inference_py.executor.core import Chunk, ExecutorCore, State
from remote_inference_py.executor.handshake import Client, Hardware, Phase
from remote_inference_py.executor.server_selection import (
    AskCandidate, choose_server, Selection, SelectionFacts, SURVEY_WAIT_S, tie_key)

JOINTS = ('a', 'b')
HOLD = Hardware('sim', 'active', True)
CLIENT = Client(client_name='/robot_0/executor', deployment='so101',
                semantics='si-radians-v1', action_names=JOINTS, action_rate=30.0,
                merge_mode='aligned', timeout_s=10.0)


def caps(active=0, most=2, **changes):
    fields = dict(success=True, message='', protocol_version=PROTOCOL_VERSION,
                  deployment='so101', instance_id='i1', semantics='si-radians-v1',
                  action_names=list(JOINTS), action_rate=30.0, chunk_length=50,
                  features=[SimpleNamespace(name='observation.state', shape=[2],
                                            dtype='float32', kind='state', names=list(JOINTS),
                                            semantics='', topic='joint_states')],
                  supported_merge_modes=[], presence_lease_s=PRESENCE_LEASE_S,
                  max_requests_in_flight=1, max_clients=most, active_clients=active)
    fields.update(changes)
    return SimpleNamespace(**fields)


def no_problems(reply):
    return [] if reply.deployment == 'so101' else [f'deployment {reply.deployment!r}']


def kinds(actions):
    return [type(a).__name__ for a in actions]


# ---- the rule --------------------------------------------------------------------------

def test_least_loaded_first_by_fraction_of_slots():
    choice = choose_server('/r', ['a', 'b', 'c'],
                           {'a': caps(1, 2), 'b': caps(1, 4), 'c': caps(0, 1)}, no_problems)
    assert choice.ranking == ('c', 'b', 'a')
    assert dict(choice.notes) == {'a': '1/2 clients', 'b': '1/4 clients', 'c': '0/1 clients'}


def test_equal_load_ties_break_by_hash_the_same_way_every_time():
    answers = {'a': caps(1, 2), 'b': caps(2, 4)}   # both half full
    first = choose_server('/r', ['a', 'b'], answers, no_problems).ranking
    assert first == tuple(sorted('ab', key=lambda c: tie_key('/r', c)))
    # The order of the candidates does not change it; the same client always gets the same.
    assert choose_server('/r', ['b', 'a'], answers, no_problems).ranking == first
    # Robots that start together spread: over 20 names both servers come first for someone.
    firsts = {choose_server(f'/robot_{i}/executor', ['a', 'b'], answers,
                            no_problems).ranking[0] for i in range(20)}
    assert firsts == {'a', 'b'}


def test_full_mismatch_failure_and_no_answer_are_not_chosen_and_say_why():
    answers = {'full': caps(2, 2), 'almost': caps(1, 2), 'other': caps(0, 2, deployment='x'),
               'down': None, 'broken': caps(success=False, message='policy failed')}
    choice = choose_server('/r', ['full', 'almost', 'other', 'down', 'broken', 'silent'],
                           answers, no_problems)
    assert choice.ranking == ('almost',)   # one slot left (1 of 2) still counts as room
    notes = dict(choice.notes)
    assert notes['full'] == 'full (2/2 clients)'
    assert notes['other'] == "contract differs: deployment 'x'"
    assert notes['down'] == notes['silent'] == 'no answer'
    assert notes['broken'] == 'not serving: policy failed'
    assert "'full': full (2/2 clients)" in choice.text()


def test_nothing_usable_gives_an_empty_ranking():
    choice = choose_server('/r', ['a'], {'a': caps(3, 3)}, no_problems)
    assert choice.ranking == () and choice.text() == "'a': full (3/3 clients)"


# ---- the survey and the handshake --------------------------------------------------------

def step(machine, now, **facts):
    return machine.step(SelectionFacts(now, HOLD, **facts))


def test_one_candidate_is_the_handshake_of_old_without_a_survey():
    machine = Selection(CLIENT, [''], 0.0)
    assert kinds(step(machine, 0.0, ready={'': True})) == ['AskCapabilities']
    assert machine.current == ''


def test_survey_asks_every_candidate_chooses_and_admits_there():
    machine = Selection(CLIENT, ['gpu1', 'gpu2'], 0.0)
    assert machine.phase is Phase.DISCOVER
    actions = step(machine, 0.0, ready={'gpu1': True, 'gpu2': True})
    assert actions == [AskCandidate('gpu1'), AskCandidate('gpu2')]
    assert step(machine, 0.05, answers={'gpu1': caps(1, 2)}) == []   # waits for gpu2
    actions = step(machine, 0.1, ready={'gpu1': True, 'gpu2': True},
                   answers={'gpu1': caps(1, 2), 'gpu2': caps(0, 2)})
    assert kinds(actions) == ['Log', 'Chosen', 'AskCapabilities']
    assert actions[1].candidate == 'gpu2' and machine.current == 'gpu2'
    assert "'gpu1': 1/2 clients; 'gpu2': 0/2 clients; trying 'gpu2' then 'gpu1'" in \
        actions[0].text
    actions = step(machine, 0.2, ready={'gpu2': True}, reply=caps(0, 2))
    assert kinds(actions) == ['AskAdmission']
    reply = SimpleNamespace(success=True, message='', session_id='s1', instance_id='i2')
    step(machine, 0.3, reply=reply)
    actions = step(machine, 0.4, request_subscribers=1, chunk_publishers=1)
    assert kinds(actions) == ['Admitted'] and machine.done


def test_a_silent_candidate_holds_the_survey_up_for_survey_wait_s_at_most():
    machine = Selection(CLIENT, ['up', 'down'], 0.0)
    step(machine, 0.0, ready={'up': True})
    assert step(machine, 0.1, answers={'up': caps()}) == []     # first usable answer at 0.1
    assert step(machine, 0.1 + SURVEY_WAIT_S - 0.01, answers={'up': caps()}) == []
    actions = step(machine, 0.1 + SURVEY_WAIT_S + 0.01, answers={'up': caps()})
    assert kinds(actions)[:2] == ['Log', 'Chosen'] and actions[1].candidate == 'up'
    assert "'down': no answer" in actions[0].text


def test_none_with_room_is_a_named_refusal_before_motion_listing_each_candidate():
    machine = Selection(CLIENT, ['gpu1', 'gpu2', 'gpu3'], 0.0)
    step(machine, 0.0, ready={'gpu1': True, 'gpu2': True, 'gpu3': True})
    actions = step(machine, 0.1, answers={'gpu1': caps(2, 2), 'gpu2': caps(deployment='x'),
                                          'gpu3': caps(4, 4)})
    assert kinds(actions) == ['Refused'] and machine.phase is Phase.REFUSED
    assert actions[0].reason == (
        "no candidate policy server can take us: 'gpu1': full (2/2 clients); 'gpu2': "
        "contract differs: deployment: server 'x', client 'so101'; 'gpu3': "
        'full (4/4 clients)')


def test_no_answer_from_anyone_refuses_at_the_timeout_naming_them():
    machine = Selection(CLIENT, ['gpu1', 'gpu2'], 0.0)
    assert kinds(step(machine, 9.9)) == ['Log']   # waiting for the servers
    actions = step(machine, 10.01)
    assert kinds(actions) == ['Refused']
    assert "'gpu1': no answer; 'gpu2': no answer" in actions[0].reason


def test_a_refusal_at_admission_moves_on_to_the_next_candidate_then_names_them_all():
    machine = Selection(CLIENT, ['gpu1', 'gpu2'], 0.0)
    step(machine, 0.0, ready={'gpu1': True, 'gpu2': True})
    actions = step(machine, 0.1, ready={'gpu1': True, 'gpu2': True},
                   answers={'gpu1': caps(0, 2), 'gpu2': caps(0, 2)})
    first = actions[1].candidate
    second = ({'gpu1', 'gpu2'} - {first}).pop()
    step(machine, 0.2, reply=caps(0, 2))
    full = SimpleNamespace(success=False, message='server full: max_clients=2',
                           session_id='', instance_id='')
    actions = step(machine, 0.3, ready={second: True}, reply=full)
    assert kinds(actions) == ['Log', 'Chosen']
    assert machine.current == second and not machine.done
    assert kinds(step(machine, 0.35, ready={second: True})) == ['AskCapabilities']
    step(machine, 0.4, reply=caps(0, 2))
    actions = step(machine, 0.5, reply=full)
    assert kinds(actions) == ['Refused']
    assert 'refused: server refused admission: server full: max_clients=2' in actions[0].reason
    assert f"'{first}': refused" in actions[0].reason
    assert f"'{second}': refused" in actions[0].reason


FULL = SimpleNamespace(
    success=False, message='server full: max_clients=2', session_id='', instance_id='')


def refused_by_up_while_down_is_silent(refused_at):
    """Choose 'up' (SURVEY_WAIT_S after its answer, 'down' silent); 'up' refuses at refused_at."""
    machine = Selection(CLIENT, ['up', 'down'], 0.0)
    step(machine, 0.0, ready={'up': True, 'down': True})
    step(machine, 0.1, answers={'up': caps(1, 2)})
    actions = step(machine, 0.2 + SURVEY_WAIT_S, answers={'up': caps(1, 2)})
    assert kinds(actions)[:2] == ['Log', 'Chosen'] and machine.current == 'up'
    step(machine, refused_at - 0.2, ready={'up': True})
    step(machine, refused_at - 0.1, reply=caps(1, 2))
    return machine, step(machine, refused_at, reply=FULL)


def test_a_refusal_while_another_candidate_is_silent_surveys_again_until_the_timeout():
    # On a busy host one server may answer late: filled up meanwhile, 'up' refuses us; the
    # survey starts again (asking 'up' anew, so its old answer is not taken), and 'down'
    # answering with room admits us there.
    machine, actions = refused_by_up_while_down_is_silent(9.99)   # just inside the timeout
    assert kinds(actions) == ['Log', 'AskCandidate'] and actions[1].candidate == 'up'
    assert "surveying again, as 'down' has not answered yet" in actions[0].text
    assert machine.phase is Phase.DISCOVER and not machine.done
    actions = step(machine, 10.0, answers={'up': caps(2, 2), 'down': caps(0, 2)})
    assert kinds(actions)[:2] == ['Log', 'Chosen'] and machine.current == 'down'
    assert "'up': full (2/2 clients); 'down': 0/2 clients" in actions[0].text


def test_a_refusal_after_the_timeout_refuses_naming_the_silent_candidate():
    machine, actions = refused_by_up_while_down_is_silent(10.01)   # just outside
    assert kinds(actions) == ['Refused'] and machine.done
    assert actions[0].reason == (
        "no candidate policy server admitted us: 'up': refused: server refused admission: "
        "server full: max_clients=2; 'down': no answer")


def test_failover_survey_skips_the_lost_server_and_says_so():
    machine = Selection(CLIENT, ['gpu1', 'gpu2'], 0.0, exclude=['gpu1'])
    actions = step(machine, 0.0, ready={'gpu1': True, 'gpu2': True})
    assert actions == [AskCandidate('gpu2')]
    actions = step(machine, 0.1, answers={'gpu2': caps(2, 2)})
    assert kinds(actions) == ['Refused']
    assert actions[0].reason.endswith("'gpu2': full (2/2 clients); 'gpu1': lost earlier")


# ---- settings and the core's failover ----------------------------------------------------

def test_policy_servers_and_on_server_loss_settings():
    assert NodeSettings().policy_servers == ('',) and NodeSettings().on_server_loss == 'fault'
    assert NodeSettings(policy_servers=['gpu1/', '/fleet/gpu2']).policy_servers == \
        ('gpu1', '/fleet/gpu2')
    with pytest.raises(ValueError, match="'policy_servers' must be non-empty and unique"):
        NodeSettings(policy_servers=['a', 'a/'])
    with pytest.raises(ValueError, match='list another server to fail over to'):
        NodeSettings(on_server_loss='failover')
    with pytest.raises(ValueError, match='on_server_loss'):
        NodeSettings(policy_servers=['a', 'b'], on_server_loss='retry')


CONFIG = ExecutorConfig(joint_names=JOINTS, fps=10.0, refill_seconds=0.3,
                        starvation_grace_s=2.0, return_to_initial_position=False)


def chunk(session, request_id, capture, steps=5):
    return Chunk(session_id=session, request_id=request_id, capture_time=capture,
                 joint_names=JOINTS, step_period=0.1, positions=np.zeros((steps, 2)),
                 step_count=steps)


def held_after_loss():
    """Run a core to a lost server, drained and holding; return it and the time."""
    core = ExecutorCore(CONFIG)
    core.on_measured(np.zeros(2))
    core.admit('old', 5)
    core.start(0.0)
    now = 0.0
    request = core.tick(now).request
    assert core.on_chunk(chunk('old', request.request_id, 0.0), 0.01).accepted
    now = 0.1
    core.tick(now)
    assert core.state == State.RUNNING
    core.server_lost(0.15)
    while core.state != State.WAITING:
        now += 0.1
        core.tick(now)
    return core, now


def test_fail_over_only_while_holding_after_a_loss_and_with_a_new_session():
    core = ExecutorCore(CONFIG)
    core.on_measured(np.zeros(2))
    core.admit('old', 5)
    core.start(0.0)
    with pytest.raises(RuntimeError, match='needs a lost server and WAITING'):
        core.fail_over('new', 5, 0.1)
    core, now = held_after_loss()
    with pytest.raises(ValueError, match='new session id'):
        core.fail_over('old', 5, now)


def test_after_fail_over_only_a_fresh_capture_of_the_new_session_moves_the_arm():
    core, now = held_after_loss()
    assert now > 0.4   # the buffered steps played out first
    assert core.tick(now + 0.1).request is None   # lost: no requests
    failed_over = now + 0.15
    core.fail_over('new', 5, failed_over)
    assert core.state == State.WAITING and core.stats().failovers == 1
    assert core.session_id == 'new' and not core.server_is_lost
    request = core.tick(failed_over + 0.05).request
    assert request is not None and request.earliest_capture_time == pytest.approx(failed_over)
    # A late chunk of the old session is dropped, whatever it answers.
    verdict = core.on_chunk(chunk('old', request.request_id, failed_over + 0.06),
                            failed_over + 0.07)
    assert not verdict.accepted and "from session 'old'" in verdict.reason
    # A new-session chunk captured just before the fail-over is stale; just after, used.
    stale = core.on_chunk(chunk('new', request.request_id, failed_over - 0.01),
                          failed_over + 0.08)
    assert not stale.accepted
    request = core.tick(failed_over + 0.2).request
    fresh = core.on_chunk(chunk('new', request.request_id, failed_over + 0.19),
                          failed_over + 0.21)
    assert fresh.accepted, fresh.reason
    core.tick(failed_over + 0.3)
    assert core.state == State.RUNNING


def test_without_fail_over_a_loss_still_ends_in_a_fault_at_the_grace():
    core, now = held_after_loss()
    while core.state == State.WAITING:
        now += 0.1
        core.tick(now)
    assert core.state == State.FAULT and 'the server was lost' in core.stats().message
    assert core.stats().failovers == 0
