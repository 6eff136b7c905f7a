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

"""Admission checks and the session table (no ROS)."""

import dataclasses

import pytest

from remote_inference_py.contract.check import (
    AdmitRequest, check_admission, FeatureDeclaration, OLDEST_PROTOCOL_VERSION, protocol_for,
    PROTOCOL_VERSION, ServerContract)
from remote_inference_py.policy_server.clients import SessionTable
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = SO101_JOINT_NAMES
STATE = FeatureDeclaration('observation.state', (6,), 'float32', 'state')
FRONT = FeatureDeclaration('observation.images.front', (480, 640, 3), 'uint8', 'rgb')
CONTRACT = ServerContract(deployment='so101', semantics='so101-degrees-gripper-percent-v1',
                          action_names=JOINTS, action_rate=30.0, chunk_length=50,
                          features=(STATE, FRONT))
REQUEST = AdmitRequest(protocol_version=PROTOCOL_VERSION, client_name='/executor',
                       deployment='so101', semantics='so101-degrees-gripper-percent-v1',
                       action_names=JOINTS, action_rate=30.0, features=(STATE, FRONT),
                       merge_mode='aligned', hardware_position_hold=True)


def ask(**changes):
    return check_admission(CONTRACT, dataclasses.replace(REQUEST, **changes))


def test_a_matching_request_is_admitted_for_every_merge_mode():
    for mode in ('append', 'aligned', 'ensemble', 'synchronous'):
        assert ask(merge_mode=mode) == []
    extra = FeatureDeclaration('observation.images.wrist', (240, 320, 3), 'uint8', 'rgb')
    assert ask(features=(FRONT, STATE, extra)) == []   # order and unused extras do not matter


def test_the_protocol_versions_admitted_are_ours_and_the_one_before_it_no_other():
    # 4 added presence samples and no message field: a client of 3 is admitted as before.
    assert PROTOCOL_VERSION == 4 and OLDEST_PROTOCOL_VERSION == 3
    assert ask(protocol_version=3) == []                                  # just inside
    for outside in (2, 0, PROTOCOL_VERSION + 1):   # 0: unset, refused as before
        [problem] = ask(protocol_version=outside)
        assert problem == (f'protocol version: server {PROTOCOL_VERSION}, client {outside} '
                           '(this side admits 3 to 4)')
    older = dataclasses.replace(CONTRACT, protocol_version=3)          # an older server
    assert check_admission(older, dataclasses.replace(REQUEST, protocol_version=3)) == []
    assert protocol_for(3) == 3 and protocol_for(4) == 4
    assert protocol_for(2) == PROTOCOL_VERSION and protocol_for(5) == PROTOCOL_VERSION


@pytest.mark.parametrize('changes, expected', [
    ({'protocol_version': PROTOCOL_VERSION + 1},
     f'protocol version: server {PROTOCOL_VERSION}, client {PROTOCOL_VERSION + 1}'),
    ({'deployment': 'koch'}, "deployment: server 'so101', client 'koch'"),
    ({'semantics': 'si-radians-v1'},
     "semantics: server 'so101-degrees-gripper-percent-v1', client 'si-radians-v1'"),
    ({'action_names': JOINTS[::-1]}, 'action order: server'),
    ({'action_names': JOINTS[:5] + ('jaw',)},
     "missing on the client: ['gripper']; unknown to the server: ['jaw']"),
    ({'action_rate': 50.0}, 'action rate: server 30.0 Hz, client 50.0 Hz'),
    ({'features': (STATE,)}, "observation feature 'observation.images.front' is not provided"),
    ({'features': (STATE, dataclasses.replace(FRONT, shape=(240, 320, 3)))},
     "observation feature 'observation.images.front' shape: server [480, 640, 3], client "
     '[240, 320, 3]'),
    ({'features': (dataclasses.replace(STATE, dtype='float64'), FRONT)},
     "observation feature 'observation.state' dtype: server float32, client float64"),
    ({'features': (STATE, dataclasses.replace(FRONT, kind='depth'))},
     "observation feature 'observation.images.front' kind: server rgb, client depth"),
    ({'merge_mode': 'rtc'}, "merge mode 'rtc' is not supported"),
    ({'hardware_position_hold': False}, 'hardware_position_hold is false'),
    ({'presence_lease_s': 1.0}, 'presence lease: server 4.0 s, client 1.0 s'),
])
def test_every_mismatch_is_named(changes, expected):
    problems = ask(**changes)
    assert len(problems) == 1 and expected in problems[0], problems


@pytest.mark.parametrize('relative, admitted', [
    (0.0, True), (0.5e-6, True), (-0.5e-6, True),     # within 1e-6 of the server's rate
    (2e-6, False), (-2e-6, False), (0.01, False),     # just outside, and 1 % off
])
def test_the_action_rate_must_match_within_one_part_per_million(relative, admitted):
    problems = ask(action_rate=30.0 * (1 + relative))
    assert (problems == []) == admitted, problems
    if not admitted:
        assert len(problems) == 1 and problems[0].startswith('action rate: server 30.0 Hz')


@pytest.mark.parametrize('offset, admitted', [
    (0.0, True), (0.5e-6, True), (-0.5e-6, True), (2e-6, False), (-2e-6, False),
])
def test_the_presence_lease_must_match_within_a_microsecond(offset, admitted):
    problems = ask(presence_lease_s=CONTRACT.presence_lease_s + offset)
    assert (problems == []) == admitted, problems


def test_all_mismatches_are_reported_together():
    assert len(ask(deployment='x', semantics='y', action_rate=1.0)) == 3


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_max_clients_and_lazy_idle_release():
    clock = Clock()
    table = SessionTable(max_clients=1, clock=clock)
    first = table.admit('', '/executor_a', idle_timeout_s=5.0)
    assert first.success and len(first.session_id) == 16
    clock.now += 3.0
    refused = table.admit('', '/executor_b', idle_timeout_s=5.0)
    assert not refused.success
    assert 'server full: max_clients=1' in refused.message and '/executor_a' in refused.message
    assert table.touch(first.session_id, '') is None          # a request keeps it fresh
    clock.now += 4.0
    assert not table.admit('', '/executor_b', idle_timeout_s=5.0).success
    clock.now += 1.5                                            # silent for 5.5 s
    second = table.admit('', '/executor_b', idle_timeout_s=5.0)
    assert second.success and second.released == (first.session_id,)
    why = table.touch(first.session_id, '')
    assert 'was released (idle for 5.5 s and its slot was needed)' in why
    assert table.touch(second.session_id, '') is None


def test_idle_timeout_zero_never_releases():
    clock = Clock()
    table = SessionTable(max_clients=1, clock=clock)
    table.admit('', '/a', idle_timeout_s=0.0)
    clock.now += 1e6
    assert not table.admit('', '/b', idle_timeout_s=0.0).success


def test_a_restarted_client_replaces_its_own_session():
    table = SessionTable(max_clients=1, clock=Clock())
    first = table.admit('', '/executor', idle_timeout_s=10.0)
    again = table.admit('', '/executor', idle_timeout_s=10.0)
    assert again.success and again.session_id != first.session_id
    assert again.released == (first.session_id,)
    assert 'admitted again' in table.touch(first.session_id, '')


def test_requests_with_unknown_sessions_or_from_another_robot_are_refused():
    table = SessionTable(max_clients=2, clock=Clock())
    session = table.admit('robot1', '/robot1/executor', idle_timeout_s=10.0).session_id
    assert 'not admitted by this server instance' in table.touch('stale', 'robot1')
    refusal = table.touch(session, 'robot2')
    assert "admitted for robot namespace 'robot1', not 'robot2'" in refusal
    assert table.touch(session, 'robot1') is None and table.get(session).requests == 1
    with pytest.raises(ValueError, match='max_clients'):
        SessionTable(max_clients=0)
    refused = table.admit('robot1', '/x', idle_timeout_s=1.0, problems=['semantics: a'])
    assert not refused.success and refused.message == 'semantics: a'


def test_required_features_are_checked_for_the_executor():
    assert check_admission(CONTRACT, REQUEST, ['observation.state']) == []
    problems = check_admission(CONTRACT, REQUEST, ['observation.images.wrist'])
    assert problems == ["observation features ['observation.images.wrist'] not served (server: "
                        "['observation.state', 'observation.images.front'])"]


def test_unset_fields_of_an_admit_message_mean_as_before():
    """A client written against the messages may leave the newer fields at 0."""
    from remote_inference.srv import Admit
    msg = Admit.Request(protocol_version=PROTOCOL_VERSION, client_name='/scripted',
                        deployment='so101', semantics='so101-degrees-gripper-percent-v1',
                        action_names=list(JOINTS), action_rate=30.0, merge_mode='aligned',
                        hardware_position_hold=True)
    request = AdmitRequest.from_message(msg)
    assert request.max_requests_in_flight == 1          # 0: one in flight
    assert request.presence_lease_s == 0.0              # 0: the server's lease, not checked
    assert check_admission(CONTRACT, dataclasses.replace(request, features=(STATE, FRONT))) == []
    assert ask(max_requests_in_flight=0) != []          # the message default is mapped, not 0


RESIZED = dataclasses.replace(FRONT, shape=(96, 128, 3), resizes=True)


def test_an_image_the_server_resizes_admits_any_size_with_its_channels():
    contract = dataclasses.replace(CONTRACT, features=(STATE, RESIZED))

    def offer(shape, **changes):
        front = dataclasses.replace(FRONT, shape=shape, **changes)
        return check_admission(contract, dataclasses.replace(REQUEST, features=(STATE, front)))
    assert offer((480, 640, 3)) == []
    assert offer((96, 128, 3)) == []
    assert offer((1, 1, 3)) == []                       # the smallest frame there is
    assert offer((0, 640, 3)) == ["observation feature 'observation.images.front': client "
                                  'frames [0, 640, 3] are empty']
    assert offer((480, 640, 1)) == [
        "observation feature 'observation.images.front' channels: server 3, client 1 (frames "
        'of another size are resized; other channels are not served)']
    assert offer((480, 640, 3), kind='depth') == [
        "observation feature 'observation.images.front' kind: server rgb, client depth"]
    assert offer((480, 640)) == [
        "observation feature 'observation.images.front' shape: server [96, 128, 3], client "
        '[480, 640] (the server does not resize this feature: frames must be exactly this '
        'size)']


def test_an_image_the_server_does_not_resize_must_be_its_size_exactly():
    for shape in ((480, 641, 3), (479, 640, 3)):     # one pixel off either way
        problems = ask(features=(STATE, dataclasses.replace(FRONT, shape=shape)))
        assert problems == [f"observation feature 'observation.images.front' shape: server "
                            f'[480, 640, 3], client {list(shape)} (the server does not resize '
                            'this feature: frames must be exactly this size)']
    # A state vector never resizes, even if a declaration says so.
    contract = dataclasses.replace(CONTRACT, features=(
        dataclasses.replace(STATE, resizes=True), FRONT))
    problems = check_admission(contract, dataclasses.replace(REQUEST, features=(
        dataclasses.replace(STATE, shape=(7,)), FRONT)))
    assert problems == ["observation feature 'observation.state' shape: server [6], client [7]"]


def test_resizes_and_topic_are_read_from_the_message_with_old_messages_as_before():
    from types import SimpleNamespace
    old = SimpleNamespace(name='x', shape=[2, 3, 3], dtype='uint8', kind='rgb')
    assert FeatureDeclaration.from_message(old) == FeatureDeclaration('x', (2, 3, 3), 'uint8',
                                                                      'rgb')
    new = SimpleNamespace(name='x', shape=[2, 3, 3], dtype='uint8', kind='rgb', resizes=True,
                          topic='cameras/x/image_raw')
    read = FeatureDeclaration.from_message(new)
    assert read.resizes and read.topic == 'cameras/x/image_raw'
