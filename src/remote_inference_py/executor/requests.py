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

"""The request table: every request the executor sent, from sending to its close.

It owns the request ids, the requests in flight (oldest first) and why each recent one was
closed: answered, superseded by a newer merged chunk, drained when a wait began, timed out,
failed on the server, abandoned when the server was lost or at shutdown. A close reason is a
typed :class:`Closure`, never a string parsed back; :meth:`RequestTable.answer` turns it into
the reason a late chunk is dropped with. The table also owns the turnaround samples (every
chunk answering a request in flight gives one, even one dropped for its content), what the
requests in flight will cover (the chunk horizon; a chunk answering a request drained when
a wait began still gives its turnaround: it came too late, and that is the latency the refill
must cover next time) and the pause after a failed request (a
bounded backoff: the pause doubles with every failure in a row, from the caller's base up to
:data:`RETRY_PAUSE_MAX_S`, and an answered request ends the streak), and from these says when
the next request is due and what it asks for (:meth:`RequestTable.due`):

- synchronous: when the plan is empty and nothing is in flight, for a capture at or after
  sending;
- holding (asynchronous): one request at a time, for a capture at or after the wait began
  (a startup request before the first motion, a recovery request after it);
- moving: when the staggering rule of `refill.py` asks for one more, for a capture no older
  than one action period before sending (a refill request).
"""

from collections import OrderedDict
from dataclasses import dataclass
import enum
import math

from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.refill import (
    another_request_due, effective_refill, request_spacing, TurnaroundEstimator)

CLOSED_REQUESTS_KEPT = 64
"""How many closed requests the table remembers (to name why a late chunk is dropped)."""

RETRY_PAUSE_MAX_S = 1.0
"""The longest pause after failed requests [s] (unless the base pause is longer)."""


class Kind(str, enum.Enum):
    """Why a request was sent (RequestOrder.kind carries the value)."""

    REFILL = 'refill'              # moving: the plan runs short
    RECOVERY = 'recovery'          # holding after motion: a fresh capture ends the wait
    STARTUP = 'startup'            # holding before the first chunk
    SYNCHRONOUS = 'synchronous'    # synchronous mode: one request per chunk, holding meanwhile

    @property
    def steady(self) -> bool:
        """Return True if its turnaround is a steady-state sample (not a wait's)."""
        return self in (Kind.REFILL, Kind.SYNCHRONOUS)


class Closed(enum.Enum):
    """Why a request is no longer in flight."""

    ANSWERED = 'answered'
    SUPERSEDED = 'superseded'
    DRAINED = 'drained'
    TIMED_OUT = 'timed out'
    FAILED = 'failed'
    SERVER_LOST = 'server lost'
    SHUTDOWN = 'shutdown'


@dataclass(frozen=True)
class Closure:
    """A typed close reason: what closed the request, when, and its one detail.

    `by` is the newer request whose chunk superseded it, `timeout_s` the timeout that
    expired, `detail` the server's reason for a failure.
    """

    why: Closed
    at: float
    by: int | None = None
    timeout_s: float | None = None
    detail: str = ''

    def describe(self) -> str:
        """Return the close reason in words, e.g. 'abandoned after the 0.5 s timeout'."""
        if self.why is Closed.ANSWERED:
            return 'already answered'
        if self.why is Closed.SUPERSEDED:
            return f'superseded by request {self.by}'
        if self.why is Closed.DRAINED:
            return f'drained when the wait began at t={self.at:.3f}'
        if self.why is Closed.TIMED_OUT:
            return f'abandoned after the {self.timeout_s:g} s timeout'
        if self.why is Closed.FAILED:
            return f'failed: {self.detail}'
        if self.why is Closed.SERVER_LOST:
            return f'the server was lost at t={self.at:.3f}'
        return f'abandoned at shutdown at t={self.at:.3f}'


@dataclass
class Request:
    """A request in flight."""

    request_id: int
    sent_time: float
    earliest_capture_time: float
    playback_at_submission: float
    kind: Kind
    frozen_until_tick: int | None = None


@dataclass(frozen=True)
class RequestOrder:
    """A request the caller must send now."""

    request_id: int
    earliest_capture_time: float
    sent_time: float
    playback_at_submission: float
    kind: str
    plan: CommittedPlan | None = None


class RequestTable:
    """Requests in flight (oldest first) and the close reasons of the recent others."""

    def __init__(self):
        """Create an empty table; the first request gets id 1."""
        self._in_flight = OrderedDict()    # request_id -> Request
        self._closed = OrderedDict()       # request_id -> Closure, oldest first
        self._drained = OrderedDict()      # request_id -> its Request, drained at a wait
        self._next_id = 1
        self._not_before = -math.inf
        self.failures_in_a_row = 0
        """Requests that failed since the last answered one (the next one is a retry)."""
        self.horizon_s = 0.0
        """How far past its earliest capture a request in flight covers the plan [s]."""
        self.turnaround = TurnaroundEstimator()

    def __len__(self) -> int:
        """Return the number of requests in flight."""
        return len(self._in_flight)

    def get(self, request_id: int) -> Request | None:
        """Return the request in flight with this id, or None."""
        return self._in_flight.get(request_id)

    def closure(self, request_id: int) -> Closure | None:
        """Return why a recent request was closed, or None (in flight, or never known)."""
        return self._closed.get(request_id)

    def open(self, now: float, earliest_capture_time: float, playback: float, kind: Kind,
             frozen_until_tick: int | None = None) -> Request:
        """Record a request sent at `now` and return it (the next id)."""
        request = Request(self._next_id, now, earliest_capture_time, playback, Kind(kind),
                          frozen_until_tick)
        self._next_id += 1
        self._in_flight[request.request_id] = request
        return request

    def close(self, request_id: int, closure: Closure) -> None:
        """Close a request in flight (KeyError if it is not) and remember why."""
        request = self._in_flight.pop(request_id)
        self._closed[request_id] = closure
        while len(self._closed) > CLOSED_REQUESTS_KEPT:
            self._closed.popitem(last=False)
        if closure.why is Closed.DRAINED:
            self._drained[request_id] = request
            while len(self._drained) > CLOSED_REQUESTS_KEPT:
                self._drained.popitem(last=False)

    def close_all(self, closure: Closure, before: int | None = None) -> list:
        """Close the requests in flight (those older than request `before`); return their ids."""
        closed = [i for i in self._in_flight if before is None or i < before]
        for request_id in closed:
            self.close(request_id, closure)
        return closed

    def expire(self, now: float, timeout_s: float) -> list:
        """Close every request in flight for longer than `timeout_s`; return their ids."""
        expired = [r.request_id for r in self._in_flight.values()
                   if now - r.sent_time > timeout_s]
        for request_id in expired:
            self.close(request_id, Closure(Closed.TIMED_OUT, now, timeout_s=timeout_s))
        return expired

    def fail(self, request_id: int, reason: str, now: float, pause_s: float) -> bool:
        """Close a request the server could not serve and pause new ones.

        The pause is `pause_s` after the first failure in a row and doubles with each further
        one, up to max(`pause_s`, RETRY_PAUSE_MAX_S). Return False (and change nothing) if it
        was not in flight.
        """
        if request_id not in self._in_flight:
            return False
        self.close(request_id, Closure(Closed.FAILED, now, detail=reason))
        self.failures_in_a_row += 1
        pause = pause_s * 2 ** min(self.failures_in_a_row - 1, 32)
        self._not_before = now + min(pause, max(pause_s, RETRY_PAUSE_MAX_S))
        return True

    def answer(self, request_id: int, now: float):
        """Close the request a chunk arriving at `now` answers and sample its turnaround.

        Return (the request, its turnaround [s], ''), or (None, None, why the chunk cannot be
        used) when the request is not in flight.
        """
        request = self._in_flight.get(request_id)
        if request is None:
            drained = self._drained.pop(request_id, None)
            if drained is not None:   # its lateness began the wait: the refill must cover it
                self.turnaround.add(max(0.0, now - drained.sent_time),
                                    steady=drained.kind.steady)
            return None, None, self._why_not_in_flight(request_id)
        turnaround = now - request.sent_time
        self.failures_in_a_row = 0
        self.turnaround.add(max(0.0, turnaround), steady=request.kind.steady)
        self.close(request_id, Closure(Closed.ANSWERED, now))
        return request, turnaround, ''

    def effective_refill(self, config: ExecutorConfig) -> float:
        """Return the refill threshold in effect [s] (refill.py: grows with the turnaround)."""
        return effective_refill(config.refill_seconds, self.turnaround.recent_max_s,
                                config.fps)

    def due(self, now: float, config: ExecutorConfig, buffered_s: float,
            waiting_since: float | None, motion_started: bool):
        """Return (kind, earliest capture time) of the request due now, or None.

        `buffered_s` is the planned playback left, `waiting_since` when the current hold
        began (None while moving).
        """
        if now < self._not_before:
            return None
        if config.synchronous:
            if buffered_s > 0.0 or self._in_flight:
                return None
            return Kind.SYNCHRONOUS, now if waiting_since is None else waiting_since
        if waiting_since is not None:
            # One request at a time: the plan's end is unknown until a chunk resumes motion
            # (it then plays from step 0), so coverage cannot be judged.
            if self._in_flight:
                return None
            return (Kind.RECOVERY if motion_started else Kind.STARTUP), waiting_since
        recent_max = self.turnaround.recent_max_s
        requests = list(self._in_flight.values())
        if not another_request_due(
                buffered_s, [r.earliest_capture_time + self.horizon_s - now for r in requests],
                now - requests[-1].sent_time if requests else math.inf,
                self.effective_refill(config), config.max_requests_in_flight,
                request_spacing(recent_max, config.max_requests_in_flight, config.fps)):
            return None
        return Kind.REFILL, now - config.action_period

    def order(self, now: float, config: ExecutorConfig, timeline, waiting_since: float | None):
        """Open the request due now and return its RequestOrder, or None if none is due.

        `timeline` (timeline.py) gives the buffered playback, whether motion started, and the
        committed plan an rtc refill request carries; `waiting_since` is when the current hold
        began (None while moving).
        """
        buffered = timeline.buffered_playback()
        due = self.due(now, config, buffered, waiting_since, timeline.motion_started)
        if due is None:
            return None
        kind, earliest = due
        plan, frozen_until = None, None
        if config.chunk_merge == 'rtc' and kind is Kind.REFILL:
            plan, frozen_until = timeline.committed_plan(now, earliest,
                                                         self.turnaround.recent_max_s)
        request = self.open(now, earliest, buffered, kind, frozen_until)
        return RequestOrder(request.request_id, earliest, now, buffered, kind.value, plan)

    def answered_with(self, request_id: int, steps: int, now: float, fps: float) -> list:
        """Record that the chunk of `request_id` (`steps` long) was merged at `now`.

        The older requests in flight are closed as superseded (never play an older prediction
        over a newer one); return their ids. Without a horizon from admission, the first
        merged chunk's length becomes the horizon of the requests in flight.
        """
        self.horizon_s = self.horizon_s or steps / fps
        return self.close_all(Closure(Closed.SUPERSEDED, now, by=request_id), before=request_id)

    def _why_not_in_flight(self, request_id: int) -> str:
        closure = self._closed.get(request_id)
        if closure is None:
            in_flight = id_list(self._in_flight) or 'none'
            return f'unknown request {request_id} (in flight: {in_flight})'
        if closure.why is Closed.ANSWERED:
            return f'duplicate: request {request_id} was already answered'
        if closure.why is Closed.SUPERSEDED:
            return (f'superseded: answers request {request_id}, older than request '
                    f'{closure.by} already merged')
        return f'stale: answers request {request_id}, which was {closure.describe()}'


def id_list(request_ids) -> str:
    """Return ids as '1, 2, 3'."""
    return ', '.join(str(i) for i in request_ids)


def requests_text(request_ids) -> str:
    """Return 'request 3' or 'requests 2, 3'."""
    ids = list(request_ids)
    return f'request{"s" if len(ids) > 1 else ""} {id_list(ids)}'
