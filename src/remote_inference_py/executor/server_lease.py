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

"""Whether the admitted policy server instance is still there, and why it is not (pure).

:class:`ServerPresence` is fed what the executor hears from the server side (presence
samples, chunks and error answers, each with the instance id it carries) and the clock, and
says when the admitted instance is lost, once, as a :class:`ServerLoss` with one of the
:class:`LossReason` values:

- ``LEASE_EXPIRED``: nothing of the admitted instance came for longer than the lease (checked
  at every tick, and when something finally comes after a longer silence). The server samples
  its presence every ``lease / 8`` (:mod:`..contract.presence`), so a silence up to
  ``lease - lease / 8`` never gets here, wherever it falls in the chunk cycle. A stall of the
  executor's own process (no tick and no message taken for over two tick periods: a loaded
  host froze it) is left out of the silence but for one tick period: nothing could be heard
  in it, and after a freeze of the whole host the server's next sample comes within
  ``lease / 8``. A 2-core VM froze every process for up to about 1.2 s, and an executor with
  a 0.5 s lease failed over from a server that was there.
- ``OTHER_INSTANCE``: a presence sample, chunk or answer from another instance than the one
  that admitted us: the admitted server was restarted or replaced, and the newcomer does not
  know our session. Lost at once, both instances named.
- ``SESSION_REFUSED``: the admitted instance answers that it does not serve our session
  (released, or never known): retrying cannot change that.

A server that may publish no presence samples (protocol 3: older than them, see
:func:`~remote_inference_py.contract.check.publishes_presence`) keeps its lease by what it
answers, and its silence counts only while it owes an answer: from the first request sent
after the last thing heard of it (:meth:`ServerPresence.requested`) until something comes. So
an older server is not lost while the executor waits to start, holds for a query or stops
(nothing asked, nothing owed), as before presence samples; it is lost when a request goes a
whole lease without anything of it. One presence sample heard makes it a server that
publishes them (the full rule from then on).

Before admission, what is heard only counts as seen (status ``alive``); an empty instance id
(a server that does not say) counts as the admitted instance, and a server that did not say
at admission is not judged by instance at all. After a loss nothing changes:
the first loss is the one reported. The executor node reports every loss through one method,
where another policy (failover) can hook in.
"""

from dataclasses import dataclass
import enum


class LossReason(str, enum.Enum):
    """Why the admitted server counts as gone."""

    LEASE_EXPIRED = 'lease expired'
    OTHER_INSTANCE = 'another instance'
    SESSION_REFUSED = 'session refused'


@dataclass(frozen=True)
class ServerLoss:
    """The loss of the admitted instance: why, when, and the words to log."""

    reason: LossReason
    at: float
    admitted: str
    other: str = ''
    detail: str = ''

    def describe(self) -> str:
        """Return the loss in words, naming the instance(s)."""
        if self.reason is LossReason.LEASE_EXPIRED:
            return f'policy server instance {self.admitted} lost: {self.detail}'
        if self.reason is LossReason.OTHER_INSTANCE:
            return (f'policy server instance {self.admitted} lost: instance {self.other} '
                    f'{self.detail} (the server was restarted or replaced; it does not know '
                    'this session)')
        return f'policy server instance {self.admitted} refused this session: {self.detail}'


class ServerPresence:
    """The presence of the admitted server instance (see the module docstring)."""

    def __init__(self, lease_s: float, tick_s: float = 0.0):
        """Track nothing yet; `lease_s` is the agreed presence lease [s].

        `tick_s`: the executor's tick period [s], for its own stalls (0: none left out).
        """
        self.lease_s = float(lease_s)
        self.tick_s = float(tick_s)
        self.last_ran = None           # when the executor last ran: a tick, a message taken
        self.samples = True            # the server publishes presence samples (see admit)
        self.owed_since = None         # first request sent since the last thing heard
        self.instance_id = ''          # the admitted instance ('' before admission)
        self.admitted = False
        self.last_seen = None          # when something of the server last came
        self.loss = None               # the ServerLoss, once lost

    @property
    def state(self) -> str:
        """Return 'unknown' (nothing heard yet), 'alive' or 'lost'."""
        if self.loss is not None:
            return 'lost'
        return 'unknown' if self.last_seen is None else 'alive'

    def silence(self, now: float):
        """Return how long nothing of the server came [s], or None if nothing ever did."""
        return None if self.last_seen is None else now - self.last_seen

    def silent(self, now: float) -> bool:
        """Return True while the admitted server has missed two presence samples, not lost yet.

        Two samples: nothing of it for over a quarter of the lease; only a server that
        publishes them. The executor core then leaves it to the lease whether the server is
        gone: a wait whose grace runs out meanwhile faults naming the lost server once the
        lease expires (at most the lease after the last thing heard), not as starved before
        it, however much was buffered when the server died.
        """
        return (self.admitted and self.loss is None and self.samples
                and self.last_seen is not None and now - self.last_seen > self.lease_s / 4)

    def admit(self, instance_id: str, now: float, samples: bool = True) -> None:
        """Begin tracking `instance_id`, which admitted us at `now` (its answer is a sign).

        `samples`: the server publishes presence samples; False for one that may not (an
        older protocol), whose silence counts only while it owes an answer.
        """
        self.instance_id = instance_id
        self.admitted = True
        self.last_seen = now
        self.samples = samples
        self.owed_since = None

    def requested(self, now: float) -> None:
        """Note a request sent at `now`: the server owes an answer from now on (if not before)."""
        if self.owed_since is None:
            self.owed_since = now

    def heard(self, instance_id: str, now: float, what: str, sample: bool = False):
        """Note `what` (e.g. 'a presence sample', `sample` True) from `instance_id` at `now`.

        Return the ServerLoss it reveals (another instance, or a silence beyond the lease
        that just ended), else None.
        """
        if self.loss is not None:
            return None
        if sample:
            self.samples = True
        if not self.admitted:
            self.last_seen = now
            return None
        if instance_id and self.instance_id and instance_id != self.instance_id:
            return self._lose(ServerLoss(LossReason.OTHER_INSTANCE, now, self.instance_id,
                                         instance_id, f'sent {what}'))
        loss = self.check(now)
        if loss is None:
            self.last_seen = now
            self.owed_since = None
        return loss

    def refused(self, instance_id: str, detail: str, now: float):
        """Note a refusal of our session that retrying cannot change; return the ServerLoss."""
        if self.loss is not None or not self.admitted:
            return None
        if instance_id and self.instance_id and instance_id != self.instance_id:
            return self._lose(ServerLoss(LossReason.OTHER_INSTANCE, now, self.instance_id,
                                         instance_id, f'answered: {detail}'))
        return self._lose(ServerLoss(LossReason.SESSION_REFUSED, now, self.instance_id,
                                     detail=detail))

    def check(self, now: float):
        """Return the ServerLoss if the admitted instance was silent longer than the lease."""
        self._ran(now)
        if self.loss is not None or not self.admitted:
            return None
        if not self.samples:   # an older server: only an owed answer's silence counts
            if self.owed_since is None:
                return None
            silence = now - max(self.owed_since, self.last_seen)
            if silence <= self.lease_s:
                return None
            return self._lose(ServerLoss(
                LossReason.LEASE_EXPIRED, now, self.instance_id,
                detail=f'nothing of it for {silence:.2f} s after a request, beyond the '
                       f'{self.lease_s:g} s presence lease (no chunk, no answer; it publishes '
                       'no presence samples)'))
        silence = now - self.last_seen
        if silence <= self.lease_s:
            return None
        return self._lose(ServerLoss(
            LossReason.LEASE_EXPIRED, now, self.instance_id,
            detail=f'nothing of it for {silence:.2f} s, beyond the {self.lease_s:g} s presence '
                   'lease (no presence sample, no chunk)'))

    def _ran(self, now: float) -> None:
        """Note that the executor ran at `now`; leave a stall of its own out of the silence."""
        last = self.last_ran
        self.last_ran = now if last is None else max(last, now)
        if not self.tick_s or last is None or self.last_seen is None or self.last_seen > last:
            return   # something was heard since it last ran: it was not frozen throughout
        gap = now - last
        if gap > 2 * self.tick_s:
            self.last_seen = min(now, self.last_seen + gap - self.tick_s)

    def _lose(self, loss: ServerLoss) -> ServerLoss:
        self.loss = loss
        return loss
