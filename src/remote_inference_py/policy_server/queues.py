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
The policy server's request queues, one per session, with no ROS in it.

:class:`RequestQueues` is the part of :class:`.core.PolicyServerCore` that holds the requests
not taken into a forward pass yet and decides which of them are answered without one:

- a session's queue holds as many requests as the client said it keeps in flight at
  admission (:meth:`~RequestQueues.open`); a request beyond that pushes out the oldest one not
  started, answered with an error headed ``superseded`` (a bound of one: a latest-wins slot)
  or ``dropped from a full queue`` (several). A request put back after its frame failed to
  decode (:meth:`~RequestQueues.put_back`) finds its queue full the same way;
- requests wait in request order and are taken one at a time from the head
  (:meth:`~RequestQueues.start`): the next one's observation wait starts then;
- a request id among the last :data:`RECENT_REQUEST_IDS` of its session is a repeat: it gets
  the last published answer again when that answered it, and nothing otherwise;
- the requests still waiting for a session that admission releases are answered ``session
  released``, marked ``session_refused``.

Every error answer carries its ``kind`` (one of :data:`ANSWER_KINDS`, named where it is
made): what went wrong, as the node throttles its warnings by it. It counts what it decides
(``superseded`` for both kinds of push-out, ``released``, ``repeated``, ``retried``) in the
core's :class:`.timings.ActivityStats`; everything else about the requests (admission,
observation, the forward pass) is the core's.
"""

import collections
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.policy_server.timings import ActivityStats, RequestTimings


SUPERSEDED = 'superseded'
DROPPED = 'dropped from a full queue'
SESSION_RELEASED = 'session released'
REFUSED = 'refused'            # a session this instance does not serve, or a malformed request
OBSERVATION = 'observation'    # stale, missing or unusable observation
PREPROCESSING = 'preprocessing'
INFERENCE = 'inference'        # the forward pass failed, or the work around it
OUTPUT = 'output'              # the policy's output could not be converted
ANSWER_KINDS = (SUPERSEDED, DROPPED, SESSION_RELEASED, REFUSED, OBSERVATION, PREPROCESSING,
                INFERENCE, OUTPUT)
"""The kinds of error answer (a chunk has none); failures are counted by kind too."""
RECENT_REQUEST_IDS = 64
"""Request ids remembered per session: one of them arriving again is a repeat."""


@dataclasses.dataclass(frozen=True)
class Request:
    """One InferenceRequest."""

    robot: str
    session_id: str
    request_id: int
    earliest_ns: int
    task: str = ''
    sent_ns: int = 0
    plan: Optional[CommittedPlan] = None   # times in ns, positions SI in action_joints order


@dataclasses.dataclass
class Job:
    """A request waiting in its session's queue."""

    request: Request
    received: float
    deadline: float
    last_error: str = ''


@dataclasses.dataclass
class Answer:
    """What the node publishes for one request: a chunk, or an error."""

    robot: str
    session_id: str
    request_id: int
    joint_names: Tuple[str, ...]
    step_period: float
    capture_stamp_ns: int = 0
    positions: Optional[np.ndarray] = None     # [steps, joints] SI radians, float32
    error: str = ''
    timings: RequestTimings = dataclasses.field(default_factory=RequestTimings)
    batch_size: int = 0
    sent_ns: int = 0
    session_refused: bool = False   # this instance does not serve the session: never retry
    kind: str = ''                  # of an error answer: one of ANSWER_KINDS


def _request_order(job: Job) -> int:
    return job.request.request_id


class RequestQueues:
    """Per session: the requests not started, their bound, recent ids and last answer."""

    def __init__(self, joint_names: Sequence[str], step_period: float, stats: ActivityStats):
        """Start empty; error answers carry ``joint_names`` and ``step_period``."""
        self.joint_names = tuple(joint_names)
        self.step_period = step_period
        self.stats = stats
        # Per session: its requests not started yet, oldest first (never empty), and how many
        # it may queue (what it keeps in flight).
        self._pending: Dict[str, collections.deque] = {}
        self._bound: Dict[str, int] = {}
        # Per session: the ids of its recent requests, oldest first, and the last answer
        # published (a repeated request is answered from it, see add).
        self._recent_ids: Dict[str, collections.deque] = {}
        self._last_answer: Dict[str, Answer] = {}

    def error(self, request: Request, kind: str, message: str,
              session_refused: bool = False) -> Answer:
        """Return the error answer of ``kind`` (one of ANSWER_KINDS) to ``request``."""
        return Answer(request.robot, request.session_id, request.request_id,
                      self.joint_names, self.step_period, error=message,
                      sent_ns=request.sent_ns, session_refused=session_refused, kind=kind)

    # ---- sessions -----------------------------------------------------------------------

    def open(self, session_id: str, bound: int) -> None:
        """Let an admitted session queue ``bound`` requests."""
        self._bound[session_id] = bound

    def release(self, session_id: str) -> List[Answer]:
        """Forget a released session; return the answers of the requests it left waiting."""
        answers = [self._released(job.request) for job in self._pending.pop(session_id, ())]
        self._bound.pop(session_id, None)
        self._recent_ids.pop(session_id, None)
        self._last_answer.pop(session_id, None)
        return answers

    def _released(self, request: Request) -> Answer:
        self.stats.count('released')
        return self.error(request, SESSION_RELEASED,
                          f'{SESSION_RELEASED}: session {request.session_id} was released '
                          f'before request {request.request_id} was served',
                          session_refused=True)

    # ---- requests in ----------------------------------------------------------------------

    def add(self, request: Request, now: float, wait_s: float,
            default_bound: int) -> List[Answer]:
        """Queue a request of a served session; return the answers to publish now.

        Those are the error answers of the older requests it pushed out of a full queue,
        oldest first, or, for a repeat, the answer published for it; none when nothing needs
        saying yet. ``wait_s`` is how long it may wait for its observation once at the head
        of its queue; ``default_bound`` the bound of a session that was not opened.
        """
        recent = self._recent_ids.setdefault(request.session_id,
                                             collections.deque(maxlen=RECENT_REQUEST_IDS))
        if request.request_id in recent:
            repeated = self._repeated(request)
            return [] if repeated is None else [repeated]
        recent.append(request.request_id)
        queue = self._pending.setdefault(request.session_id, collections.deque())
        bound = self._bound.get(request.session_id, default_bound)
        pushed_out = []
        while len(queue) >= bound:
            pushed_out.append(self._pushed_out(queue.popleft().request, bound,
                                               request.request_id))
        job = Job(request, now, now + wait_s)
        if queue and queue[-1].request.request_id > request.request_id:
            queue = collections.deque(sorted([*queue, job], key=_request_order))
            self._pending[request.session_id] = queue
        else:
            queue.append(job)
        return pushed_out

    def _repeated(self, request: Request) -> Optional[Answer]:
        """Answer a request whose id its session already sent (the client repeats it).

        A client repeats its first request until something of its session comes back
        (executor/first_request.py): the request or its answer may have been lost while
        discovery matched the two sides. If this request's answer is the last one published,
        return it to publish again (its first copy may be what was lost); otherwise its answer
        is still to come (queued or being served), or a newer one was published since (the
        client has moved on): return None.
        """
        self.stats.count('repeated')
        last = self._last_answer.get(request.session_id)
        return last if last is not None and last.request_id == request.request_id else None

    def answered(self, answer: Answer) -> None:
        """Remember an answer as published: a repeat of its request gets it again."""
        if answer.session_id in self._recent_ids:
            self._last_answer[answer.session_id] = answer

    def _pushed_out(self, request: Request, bound: int, newer: Optional[int]) -> Answer:
        """Count a request pushed out of its session's full queue; return its error answer.

        ``newer``: the request whose arrival pushed it out; None when it was put back after
        a frame failed to decode and found its queue full.
        """
        self.stats.count('superseded')
        old = request.request_id
        if newer is None:
            why = (f'request {old} was put back after a frame failed to decode and found '
                   'newer requests of this session waiting')
        elif bound == 1:
            why = f'request {newer} arrived while request {old} waited'
        else:
            why = (f'request {newer} arrived while {bound} requests of this session waited, '
                   f'request {old} the oldest')
        kind = SUPERSEDED if bound == 1 else DROPPED
        return self.error(request, kind, f'{kind}: the client keeps {bound} request(s) in '
                                         f'flight and the newest are served; {why}')

    # ---- requests out ---------------------------------------------------------------------

    def heads(self) -> List[Job]:
        """Return the head of every session's queue, the longest waiting first."""
        return sorted((queue[0] for queue in self._pending.values()), key=lambda j: j.received)

    def start(self, job: Job, now: float, wait_s: float) -> None:
        """Take the head of its session's queue; the next one waits for its observation now."""
        queue = self._pending[job.request.session_id]
        queue.popleft()
        if queue:
            queue[0].deadline = max(queue[0].deadline, now + wait_s)
        else:
            del self._pending[job.request.session_id]

    def put_back(self, job: Job, error: Exception) -> Optional[Answer]:
        """Put a started job back after a frame failed to decode; it selects again or times out.

        It goes back at the head of its session's queue, unless the queue filled up meanwhile
        (newer requests came): then it is answered as pushed out, and that answer returned;
        so is one whose session was released meanwhile.
        """
        self.stats.count('retried')
        job.last_error = str(error)
        session_id = job.request.session_id
        if session_id not in self._bound:   # released meanwhile
            return self._released(job.request)
        bound = self._bound[session_id]
        queue = self._pending.setdefault(session_id, collections.deque())
        if len(queue) < bound:
            queue.appendleft(job)
            return None
        if not queue:
            del self._pending[session_id]
        return self._pushed_out(job.request, bound, None)

    def __len__(self) -> int:
        """Return the number of requests not started yet."""
        return sum(len(queue) for queue in self._pending.values())

    def next_deadline(self) -> Optional[float]:
        """Return when a waiting request times out next (``clock`` time), or None."""
        return min((queue[0].deadline for queue in self._pending.values()), default=None)
