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

"""The executor's session supervisor driven by hand: its inputs, and an admission to READY.

fps = 10 and two joints, as in core_fixtures.py; the clock is the test's
(test_executor_supervisor.py, test_executor_driver.py).
"""

from types import SimpleNamespace

from core_fixtures import FPS, JOINTS

from remote_inference_py.contract.check import PRESENCE_LEASE_S, PROTOCOL_VERSION
from remote_inference_py.executor import supervisor as sv
from remote_inference_py.executor.handshake import Hardware

HOLD = Hardware('sim', 'active', True)


def capabilities(instance='i1'):
    """Return a policy server's capabilities reply for the two joints at FPS."""
    feature = SimpleNamespace(name='observation.state', shape=[2], dtype='float32',
                              kind='state', names=list(JOINTS), semantics='',
                              topic='joint_states')
    return SimpleNamespace(
        success=True, message='', protocol_version=PROTOCOL_VERSION, deployment='so101',
        instance_id=instance, semantics='si-radians-v1', action_names=list(JOINTS),
        action_rate=FPS, chunk_length=50, features=[feature], supported_merge_modes=[],
        presence_lease_s=PRESENCE_LEASE_S, max_requests_in_flight=1, max_clients=1,
        active_clients=0, text_commands=['question', 'subtask', 'steering'])


def admit_reply(session='s1', instance='i1'):
    """Return a policy server's admission reply."""
    return SimpleNamespace(success=True, message='', session_id=session, instance_id=instance)


def kinds(actions, *names):
    """Return the type names of `actions` (only those of `names`, when given)."""
    return [type(a).__name__ for a in actions if not names or type(a).__name__ in names]


def io(candidate='', **changes):
    """Return the supervisor's tick inputs: `candidate` ready, a matched graph."""
    fields = dict(ready={candidate: True}, answers={}, request_subscribers=1,
                  chunk_publishers=1)
    fields.update(changes)
    return sv.Io(**fields)


def admit(sup, now=0.0, candidate='', session='s1', instance='i1'):
    """Drive one candidate's handshake to ADMITTED at `now` (the hardware holds)."""
    sup.on_hardware(HOLD, '', now)
    assert kinds(sup.tick(now, io(candidate)), 'AskCapabilities') == ['AskCapabilities']
    actions = sup.tick(now, io(candidate, reply=capabilities(instance)))
    assert kinds(actions, 'AskAdmission') == ['AskAdmission']
    return sup.tick(now, io(candidate, reply=admit_reply(session, instance)))


def sent_values(actions):
    """Return the first joint of each command in `actions`."""
    return [round(float(a.command[0]), 9) for a in actions if isinstance(a, sv.SendCommand)]
