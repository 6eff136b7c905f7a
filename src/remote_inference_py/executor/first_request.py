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
Until the server has answered anything in a session, repeat the request in flight (no ROS).

Admission waits until this executor's request publisher and chunk subscription have matched
the server's endpoints (:mod:`.handshake`, MATCHING), but DDS discovery runs on each side on
its own: the server's request subscription or chunk publisher can still be unmatched with
ours, and a reliable, volatile endpoint drops what was published before its own side
matched. So the first request of a session, or its answer, can be lost although both topics
showed as matched here (seen once in the suite on two workers, and once in a fleet at load
40-50). Neither side can see the other's match, and a durable QoS would not match an older
peer's volatile endpoints; so the executor repeats instead.

:class:`FirstAnswer` keeps the request the node last published while nothing of the session
has come back, and says when to publish it again, unchanged (same request id):
:data:`FIRST_REPEAT_S` after it was sent, then each time twice as long after the last repeat
(0.25, 0.75, 1.75, 3.75 s after the first send). Once anything of the session came back (a
chunk or an error answer), both directions are proven matched and nothing is repeated again;
later requests are never repeated (their losses are the request timeout's). The starvation
grace still bounds the wait: a server that never answers faults it as before, and the node
then names the repeats.

A policy server answers a repeat of a request it already answered with the same answer again,
and ignores a repeat of one it has not answered yet (it is answered once, when served;
``policy_server/core.py``). A repeat that crossed the first answer on its way brings that
answer twice: the copy is ignored (:meth:`FirstAnswer.echo`), never counted as a dropped
chunk. An older server serves a repeat as a new request: its second chunk is such a copy,
and a repeat that pushes its waiting first copy out of a one-deep queue costs that copy (its
error answer fails the request, and the next one follows after the usual pause).
"""

import dataclasses
from typing import Any, Optional

FIRST_REPEAT_S = 0.25
"""Repeat an unanswered first request this long after it was sent [s] (then doubling)."""


@dataclasses.dataclass(frozen=True)
class Repeat:
    """Publish ``message`` again: send number ``sends`` of it, ``waited`` s after the first."""

    message: Any
    sends: int
    waited: float


class FirstAnswer:
    """The request to repeat until a session's first answer (see the module docstring)."""

    def __init__(self):
        """Begin a session: nothing sent, nothing heard."""
        self.answered = False
        self.message = None      # the request published last, while unanswered
        self.sends = 0           # how many times it was published
        self.first_sent = None
        self.began = None        # when the session's first request was published
        self.total_sends = 0     # publications of every request while unanswered
        self.repeated = None     # the repeated request the first answer answered
        self._next = None
        self._gap = FIRST_REPEAT_S

    def sent(self, message: Any, now: float) -> None:
        """Note a request published at ``now``; before the first answer it may be repeated."""
        if self.answered:
            return
        self.message, self.sends, self.first_sent = message, 1, now
        self.began = now if self.began is None else self.began
        self.total_sends += 1
        self._gap = FIRST_REPEAT_S
        self._next = now + self._gap

    def heard(self, request_id: int) -> int:
        """Note an answer of the session to ``request_id``; return the sends it took.

        0 once answered before (only the first answer counts).
        """
        if self.answered:
            return 0
        self.answered = True
        if self.sends > 1 and self.message.request_id == request_id:
            self.repeated = request_id
        self.message = None
        return self.sends

    def echo(self, request_id: int) -> bool:
        """Return True for a later answer to the repeated request the first answer answered.

        A repeat can cross the first answer on its way; the server then publishes that answer
        again. The node ignores the copy (the core would drop it as a duplicate).
        """
        return self.answered and request_id == self.repeated

    def due(self, now: float) -> Optional[Repeat]:
        """Return the Repeat due at ``now``, or None (answered, nothing sent, not yet)."""
        if self.answered or self.message is None or now <= self._next:
            return None
        self.sends += 1
        self.total_sends += 1
        self._gap *= 2.0
        self._next = now + self._gap
        return Repeat(self.message, self.sends, now - self.first_sent)
