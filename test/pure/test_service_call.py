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


"""RetriedCall: a call without a reply is dropped and asked again after RETRY_S, no sooner."""

import pytest

from remote_inference_py.common.service_call import RetriedCall, RETRY_S


class Future:
    def __init__(self):
        self.reply = None

    def done(self):
        return self.reply is not None

    def result(self):
        return self.reply


class Client:
    """An rclpy Client's surface: ready or not, the calls sent, the ones given up."""

    def __init__(self, ready=True):
        self.ready, self.sent, self.removed = ready, [], []

    def service_is_ready(self):
        return self.ready

    def call_async(self, request):
        self.sent.append(Future())
        return self.sent[-1]

    def remove_pending_request(self, future):
        self.removed.append(future)


def make(client, times):
    return RetriedCall(client, lambda: 'request', clock=lambda: times[0])


def test_a_lost_reply_is_asked_again_after_retry_s_and_not_before():
    client, now = Client(), [100.0]
    call = make(client, now)
    assert call.poll() is None and len(client.sent) == 1
    now[0] += RETRY_S - 1e-3            # just inside: still waiting for the first reply
    assert call.poll() is None and len(client.sent) == 1 and not client.removed
    now[0] += 2e-3                      # just outside: the first is given up, a second sent
    assert call.poll() is None and len(client.sent) == 2
    assert client.removed == [client.sent[0]]
    client.sent[1].reply = 'capabilities'
    assert call.poll() == 'capabilities' and call.asked == 2


def test_nothing_is_sent_until_the_service_is_ready():
    client, now = Client(ready=False), [0.0]
    call = make(client, now)
    now[0] += 10 * RETRY_S
    assert call.poll() is None and client.sent == []
    client.ready = True
    assert call.poll() is None and len(client.sent) == 1
    client.sent[0].reply = 'capabilities'
    assert call.poll() == 'capabilities'


def test_a_reply_that_came_is_taken_even_after_retry_s():
    client, now = Client(), [0.0]
    call = make(client, now)
    call.poll()
    client.sent[0].reply = 'capabilities'
    now[0] += 5 * RETRY_S
    assert call.poll() == 'capabilities' and len(client.sent) == 1


def test_answered_stays_true_once_a_reply_came_and_sends_nothing_more():
    """A caller's last check after its wait (a spin-until loop) must not send the call again."""
    client, now = Client(), [0.0]
    call = make(client, now)
    assert not call.answered() and len(client.sent) == 1
    client.sent[0].reply = 'starting'
    now[0] += 5 * RETRY_S
    assert call.answered() and call.answered() and call.reply == 'starting'
    assert len(client.sent) == 1 and call.asked == 1


def test_retry_s_must_be_positive():
    with pytest.raises(ValueError, match='retry_s'):
        RetriedCall(Client(), lambda: 'request', retry_s=0.0)
