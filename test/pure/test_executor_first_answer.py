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

"""The first request of a session is repeated until something of the session comes back."""

from types import SimpleNamespace

from remote_inference_py.executor.first_request import FIRST_REPEAT_S, FirstAnswer

EPS = 1e-6
R1, R2 = SimpleNamespace(request_id=1), SimpleNamespace(request_id=2)   # InferenceRequests


def test_the_first_request_is_repeated_at_a_doubling_gap_until_an_answer():
    first = FirstAnswer()
    assert first.due(100.0) is None, 'nothing sent, nothing to repeat'
    first.sent(R1, 10.0)
    assert first.due(10.0 + FIRST_REPEAT_S - EPS) is None          # just inside
    repeat = first.due(10.0 + FIRST_REPEAT_S + EPS)                 # just outside
    assert repeat.message is R1 and repeat.sends == 2
    assert abs(repeat.waited - FIRST_REPEAT_S) < 1e-3
    at = 10.0 + FIRST_REPEAT_S + EPS
    assert first.due(at + 2 * FIRST_REPEAT_S - EPS) is None         # the gap doubled
    assert first.due(at + 2 * FIRST_REPEAT_S + EPS).sends == 3
    at += 2 * FIRST_REPEAT_S + EPS
    assert first.due(at + 4 * FIRST_REPEAT_S - EPS) is None
    assert first.due(at + 4 * FIRST_REPEAT_S + EPS).sends == 4
    assert not first.echo(1)
    assert first.heard(1) == 4, 'the sends the first answer took'
    assert first.due(1000.0) is None
    assert first.echo(1) and not first.echo(2), 'a crossed repeat'
    assert first.heard(1) == 0, 'only the first answer counts'


def test_a_newer_request_before_any_answer_is_the_one_repeated_from_its_own_send():
    # The request timed out unanswered and the core sent the next one: repeat that one.
    first = FirstAnswer()
    first.sent(R1, 0.0)
    assert first.due(0.3).message is R1
    first.sent(R2, 2.0)
    assert first.due(2.0 + FIRST_REPEAT_S - EPS) is None
    repeat = first.due(2.0 + FIRST_REPEAT_S + EPS)
    assert repeat.message is R2 and repeat.sends == 2
    assert first.began == 0.0 and first.total_sends == 4, 'what the fault log names'


def test_after_the_first_answer_later_requests_are_never_repeated():
    first = FirstAnswer()
    first.sent(R1, 0.0)
    assert first.heard(1) == 1
    assert not first.echo(1), 'never repeated: a second answer is no echo'
    first.sent(R2, 1.0)
    assert first.due(1.0 + 100 * FIRST_REPEAT_S) is None and first.message is None
