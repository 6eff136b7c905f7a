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

"""The executor's admission handshake as a pure state machine: every transition, no ROS."""

import dataclasses
from types import SimpleNamespace

import pytest

from remote_inference_py.contract.check import PRESENCE_LEASE_S, PROTOCOL_VERSION
from remote_inference_py.executor.handshake import (
    Admission, Admitted, AskAdmission, AskCapabilities, Client, Facts, Hardware,
    hardware_not_ready, Log, Phase, Refused, RETRY_S, WAITING_LOG_PERIOD_S)

JOINTS = ('a', 'b')
HOLD = Hardware('sim', 'active', True)
CLIENT = Client(client_name='/executor', deployment='so101', semantics='si-radians-v1',
                action_names=JOINTS, action_rate=30.0, merge_mode='aligned', timeout_s=10.0)


def feature(name='observation.state', shape=(2,), kind='state'):
    return SimpleNamespace(name=name, shape=list(shape), dtype='float32', kind=kind,
                           names=list(JOINTS), semantics='', topic='joint_states')


def capabilities(**changes):
    fields = dict(success=True, message='', protocol_version=PROTOCOL_VERSION,
                  deployment='so101', instance_id='i1', semantics='si-radians-v1',
                  action_names=list(JOINTS), action_rate=30.0, chunk_length=50,
                  features=[feature()], supported_merge_modes=[],
                  presence_lease_s=PRESENCE_LEASE_S, max_requests_in_flight=1, max_clients=1,
                  active_clients=0)
    fields.update(changes)
    return SimpleNamespace(**fields)


def admit_reply(success=True, message=''):
    return SimpleNamespace(success=success, message=message, session_id='s1' if success else '',
                           instance_id='i1')


def kinds(actions):
    return [type(a).__name__ for a in actions]


def refusal(actions):
    refused = [a for a in actions if isinstance(a, Refused)]
    assert len(refused) == 1, actions
    return refused[0].reason


def to_admit(machine, now=0.0, caps=None):
    """Drive a fresh machine to ADMIT; return the AskAdmission action."""
    assert kinds(machine.step(Facts(now, HOLD, service_ready=True))) == ['AskCapabilities']
    actions = machine.step(Facts(now, HOLD, reply=caps or capabilities()))
    assert kinds(actions) == ['AskAdmission'] and machine.phase is Phase.ADMIT
    return actions[0]


def test_the_whole_handshake_in_order():
    machine = Admission(CLIENT, started=0.0)
    assert machine.phase is Phase.DISCOVER and not machine.done
    ask = to_admit(machine, 0.1)
    request = ask.request
    assert request.protocol_version == PROTOCOL_VERSION and request.client_name == '/executor'
    assert request.action_names == JOINTS and request.merge_mode == 'aligned'
    assert request.hardware_position_hold
    assert [f.name for f in request.features] == ['observation.state']   # we offer what it reads
    assert ask.capabilities.instance_id == 'i1'
    # Admitted, but the topics are not matched yet: wait in MATCHING, no action.
    assert machine.step(Facts(0.2, HOLD, reply=admit_reply(), request_subscribers=1)) == []
    assert machine.phase is Phase.MATCHING
    assert machine.step(Facts(0.3, HOLD, chunk_publishers=1)) == []
    actions = machine.step(Facts(0.4, HOLD, request_subscribers=1, chunk_publishers=1))
    assert kinds(actions) == ['Admitted'] and machine.phase is Phase.ADMITTED and machine.done
    admitted = actions[0]
    assert (admitted.session_id, admitted.instance_id, admitted.chunk_length) == ('s1', 'i1', 50)
    assert machine.step(Facts(100.0)) == []   # done: nothing more, whatever happens


def test_an_older_server_is_asked_in_its_own_protocol_version():
    # A server of protocol 3 requires its own version (and may publish no presence samples).
    assert to_admit(Admission(CLIENT, 0.0), caps=capabilities(protocol_version=3)) \
        .request.protocol_version == 3


def test_topics_matched_already_admit_in_the_same_step_as_the_reply():
    machine = Admission(CLIENT, started=0.0)
    to_admit(machine)
    actions = machine.step(Facts(0.1, HOLD, reply=admit_reply(), request_subscribers=2,
                                 chunk_publishers=1))
    assert kinds(actions) == ['Admitted']


def test_merge_mode_is_synchronous_for_the_baseline():
    machine = Admission(dataclasses.replace(CLIENT, merge_mode='synchronous'), 0.0)
    assert to_admit(machine).request.merge_mode == 'synchronous'


@pytest.mark.parametrize('changes, client_changes, expected', [
    ({'semantics': 'so101-degrees-gripper-percent-v1'}, {},
     "semantics: server 'so101-degrees-gripper-percent-v1', client 'si-radians-v1'"),
    ({'deployment': 'other'}, {}, "deployment: server 'other', client 'so101'"),
    ({'protocol_version': PROTOCOL_VERSION + 1}, {}, 'protocol version'),
    ({'action_names': ['b', 'a']}, {}, "action order: server ['b', 'a'], client ['a', 'b']"),
    ({'action_rate': 50.0}, {}, 'action rate: server 50.0 Hz, client 30.0 Hz'),
    ({'supported_merge_modes': ['append']}, {}, "merge mode 'aligned' is not supported"),
    ({}, {'expected_features': ('observation.images.front',)},
     "observation features ['observation.images.front'] not served"),
])
def test_a_difference_refuses_before_asking_to_be_admitted(changes, client_changes, expected):
    machine = Admission(dataclasses.replace(CLIENT, **client_changes), 0.0)
    machine.step(Facts(0.0, HOLD, service_ready=True))
    actions = machine.step(Facts(0.1, HOLD, reply=capabilities(**changes)))
    assert expected in refusal(actions)
    assert not any(isinstance(a, AskAdmission) for a in actions)
    assert machine.phase is Phase.REFUSED and machine.done


def test_every_difference_is_listed_in_one_refusal():
    machine = Admission(CLIENT, 0.0)
    machine.step(Facts(0.0, HOLD, service_ready=True))
    reason = refusal(machine.step(Facts(0.1, HOLD, reply=capabilities(
        deployment='other', action_rate=10.0))))
    assert 'deployment' in reason and 'action rate' in reason and '; ' in reason


def test_the_servers_refusal_is_passed_on():
    machine = Admission(CLIENT, 0.0)
    to_admit(machine)
    reason = refusal(machine.step(Facts(0.1, HOLD, reply=admit_reply(False, 'server full'))))
    assert reason == 'server refused admission: server full'


def test_position_hold_not_required_lets_an_unknown_driver_through():
    machine = Admission(dataclasses.replace(CLIENT, require_position_hold=False), 0.0)
    assert kinds(machine.step(Facts(0.0, None, service_ready=True))) == ['AskCapabilities']
    # The server still refuses a client whose driver does not hold position (the shared check).
    reason = refusal(machine.step(Facts(0.1, None, reply=capabilities())))
    assert 'hardware_position_hold is false' in reason


@pytest.mark.parametrize('phase', ['capabilities', 'admit'])
def test_no_reply_within_the_retry_time_asks_again_from_the_start(phase):
    machine = Admission(CLIENT, 0.0)
    if phase == 'capabilities':
        machine.step(Facts(1.0, HOLD, service_ready=True))
    else:
        to_admit(machine, 1.0)
    assert machine.step(Facts(1.0 + RETRY_S, HOLD, service_ready=True)) == []   # not yet
    actions = machine.step(Facts(1.0 + RETRY_S + 0.01, HOLD, service_ready=True))
    assert actions == [Log('warning', f'no answer to {phase} after {RETRY_S} s; asking again'),
                       AskCapabilities()]
    assert machine.phase is Phase.CAPABILITIES
    # The handshake goes on from there as before.
    assert kinds(machine.step(Facts(3.5, HOLD, reply=capabilities()))) == ['AskAdmission']


def test_a_retry_without_a_server_waits_in_discover():
    machine = Admission(CLIENT, 0.0)
    machine.step(Facts(0.0, HOLD, service_ready=True))
    actions = machine.step(Facts(RETRY_S + 0.1, HOLD, service_ready=False))
    assert kinds(actions) == ['Log', 'Log'] and machine.phase is Phase.DISCOVER
    assert actions[1] == Log('info', 'waiting for the policy server (policy/get_capabilities)')


def test_waiting_for_the_server_is_logged_every_few_seconds_then_times_out():
    machine = Admission(CLIENT, 0.0)
    waiting = Log('info', 'waiting for the policy server (policy/get_capabilities)')
    assert machine.step(Facts(0.0, HOLD)) == [waiting]
    assert machine.step(Facts(WAITING_LOG_PERIOD_S - 0.1, HOLD)) == []
    assert machine.step(Facts(WAITING_LOG_PERIOD_S, HOLD)) == [waiting]
    assert machine.step(Facts(9.9, HOLD)) == []
    assert refusal(machine.step(Facts(10.01, HOLD))) == (
        'no policy server answered policy/get_capabilities within 10.0 s')
    assert machine.phase is Phase.REFUSED


def test_the_discover_timeout_counts_from_the_start_across_retries():
    machine = Admission(CLIENT, 0.0)
    machine.step(Facts(8.0, HOLD, service_ready=True))
    actions = machine.step(Facts(10.5, HOLD, service_ready=False))
    assert kinds(actions) == ['Log', 'Refused']
    assert 'within 10.0 s' in actions[1].reason


@pytest.mark.parametrize('hardware, waiting', [
    (None, 'no hardware/info received yet (position hold unknown)'),
    (Hardware('feetech', 'inactive', False),
     "hardware 'feetech' does not declare position hold (state 'inactive'); refusing to move"),
])
def test_without_position_hold_the_server_is_not_asked(hardware, waiting):
    machine = Admission(CLIENT, 0.0)
    assert machine.step(Facts(0.0, hardware, service_ready=True)) == [
        Log('info', f'waiting: {waiting}')]
    assert machine.step(Facts(9.0, hardware, service_ready=True)) == [
        Log('info', f'waiting: {waiting}')]
    assert machine.phase is Phase.DISCOVER
    assert refusal(machine.step(Facts(10.5, hardware, service_ready=True))) == (
        f'{waiting} after 10.0 s')


def test_position_hold_declared_late_goes_on():
    machine = Admission(CLIENT, 0.0)
    machine.step(Facts(0.0, None, service_ready=True))
    assert kinds(machine.step(Facts(1.0, HOLD, service_ready=True))) == ['AskCapabilities']


def test_matching_is_bounded_from_the_admit_reply():
    machine = Admission(CLIENT, 0.0)
    to_admit(machine, 5.0)
    machine.step(Facts(6.0, HOLD, reply=admit_reply(), request_subscribers=1))
    assert machine.step(Facts(16.0, HOLD, request_subscribers=1)) == []
    assert refusal(machine.step(Facts(16.01, HOLD, request_subscribers=1))) == (
        'the policy server admitted us, but policy/request has no subscriber or policy/chunk '
        'no publisher after 10.0 s')


def test_a_live_timeout_applies_from_the_next_step():
    machine = Admission(CLIENT, 0.0)
    machine.step(Facts(0.0, HOLD))
    machine.update(dataclasses.replace(CLIENT, timeout_s=2.0))
    assert 'within 2.0 s' in refusal(machine.step(Facts(2.5, HOLD)))


def test_motion_may_start_once_admitted_measured_and_holding():
    machine = Admission(CLIENT, 0.0)
    assert machine.not_ready_to_start(True, HOLD) == 'not admitted by a policy server yet'
    to_admit(machine)
    machine.step(Facts(0.1, HOLD, reply=admit_reply(), request_subscribers=1,
                       chunk_publishers=1))
    assert machine.not_ready_to_start(False, HOLD) == 'no joint_states received yet'
    lost = Hardware('feetech', 'fault', False)
    assert 'does not declare position hold' in machine.not_ready_to_start(True, lost)
    assert machine.not_ready_to_start(True, HOLD) == ''


def test_hardware_not_ready_and_the_message_reader():
    msg = SimpleNamespace(backend='sim', state='active', position_hold=1, message='')
    assert Hardware.from_message(msg) == HOLD
    assert hardware_not_ready(None, require_position_hold=False) == ''
    assert hardware_not_ready(HOLD, require_position_hold=True) == ''


def test_admitted_carries_the_replies():
    machine = Admission(CLIENT, 0.0)
    caps = capabilities(chunk_length=20)
    to_admit(machine, caps=caps)
    reply = admit_reply()
    [admitted] = machine.step(Facts(0.1, HOLD, reply=reply, request_subscribers=1,
                                    chunk_publishers=1))
    assert admitted == Admitted('s1', 'i1', 20, reply, caps)


def camera(shape, topic='cameras/front/image_raw'):
    return SimpleNamespace(name='', shape=list(shape), dtype='uint8', kind='rgb', names=[],
                           semantics='', topic=topic)


def image_caps(resizes, topic='cameras/front/image_raw'):
    front = SimpleNamespace(name='observation.images.front', shape=[96, 128, 3], dtype='uint8',
                            kind='rgb', names=[], semantics='', topic=topic, resizes=resizes)
    return capabilities(features=[feature(), front])


def test_the_cameras_the_hardware_declares_are_offered_at_their_size():
    sim = Hardware.from_message(SimpleNamespace(
        backend='sim', state='active', position_hold=True, cameras=[camera((480, 640, 3))]))
    assert sim.cameras[0].shape == (480, 640, 3)
    # The server resizes: admitted, and the Admit request offers the camera's 640x480.
    for topic in ('cameras/front/image_raw', 'cameras/front/image_raw/compressed'):
        machine = Admission(CLIENT, started=0.0)
        machine.step(Facts(0.0, sim, service_ready=True))
        actions = machine.step(Facts(0.1, sim, reply=image_caps(True, topic)))
        assert kinds(actions) == ['AskAdmission'], actions
        offered = {f.name: f for f in actions[0].request.features}
        assert offered['observation.images.front'].shape == (480, 640, 3)
    # It does not: refused before asking to be admitted (so before any motion), by name.
    machine = Admission(CLIENT, started=0.0)
    machine.step(Facts(0.0, sim, service_ready=True))
    reason = refusal(machine.step(Facts(0.1, sim, reply=image_caps(False))))
    assert reason == ("observation feature 'observation.images.front' shape: server "
                      '[96, 128, 3], client [480, 640, 3] (the server does not resize this '
                      'feature: frames must be exactly this size)')
    assert machine.phase is Phase.REFUSED
    # A camera on another topic, or no declaration (an older driver): the server's shape.
    for hardware in (HOLD, dataclasses.replace(HOLD, cameras=Hardware.from_message(
            SimpleNamespace(backend='sim', state='active', position_hold=True,
                            cameras=[camera((480, 640, 3), 'cameras/wrist/image_raw')])
    ).cameras)):
        machine = Admission(CLIENT, started=0.0)
        machine.step(Facts(0.0, hardware, service_ready=True))
        actions = machine.step(Facts(0.1, hardware, reply=image_caps(False)))
        assert kinds(actions) == ['AskAdmission'], actions
        offered = {f.name: f for f in actions[0].request.features}
        assert offered['observation.images.front'].shape == (96, 128, 3)
