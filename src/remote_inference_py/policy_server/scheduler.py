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
The policy server's one serving loop: :class:`Scheduler` (no ROS in it).

The node hands every input to the scheduler (samples, requests, admissions, live settings)
from its callbacks, and the scheduler hands every answer to one ``publish`` function: a
request goes node -> scheduler -> core -> publish and never comes back through the node.

The loop is :meth:`Scheduler.step`, one turn: publish the answers held back by
``extra_latency_s`` whose time has come, in order (:class:`.delivery.DelayLine`); take the
ready work (requests whose observation is there, and those whose ``observation_wait_s`` ran
out) unless a pass runs in another thread; run :meth:`~.core.PolicyServerCore.compute` on it
outside the lock, book it and publish its answers (or hold them back) before the next pass
may start. :meth:`Scheduler.next_turn` says when the loop must turn again by itself: the next
observation deadline or held-back answer, on the core's clock. Everything that drives the
server turns this loop and nothing else:

- production: the serving thread (:meth:`Scheduler.start`) turns it until it finds nothing to
  do, then sleeps until :meth:`~Scheduler.next_turn` (at most :data:`IDLE_WAIT_S`) or until a
  callback pokes it; the clock is the core's, ``time.monotonic``;
- the inline fast path: with ``inline`` (a model measured fast enough at warm-up, one robot)
  the callback that makes a request ready turns the loop itself (the same :meth:`step`) when
  no pass is running. Waking another thread costs a hand-off (see docs/benchmarks.md,
  policy_server). ``extra_compute_s`` > 0 turns it off: a deliberately slow pass must not
  hold up the callbacks;
- the pure tests and the simulated-time evaluation (:mod:`..evaluation.simtime`): they never
  start the thread; they turn the loop themselves on a manual clock (the core's), moving the
  clock to :meth:`~Scheduler.next_turn` when nothing else happens before it.

Threads (:data:`THREADS`): the node's process runs four working threads: the one that spins
the node's rclpy executor (every callback), this loop's serving thread, the text thread
(:class:`.text.TextWorker`) and the presence thread
(:class:`~remote_inference_py.transport.presence_publisher.PresencePublisher`); besides them the
main thread only waits for the node to finish (``common/node_main.py``). There is no delivery
thread: held-back answers are released by the loop's turns.

One lock (:class:`threading.Condition`) guards the core (:class:`.core.PolicyServerCore` holds
none, and its bookkeeping must be called by one thread at a time): every call into the core's
bookkeeping is made under it, and each takes microseconds. A text query's observation is
selected under it and decoded outside it (:meth:`Scheduler.text_inputs`). Answers leave one
at a time and in order (a second lock, taken before the first, never inside it).

Every request gets exactly one answer through ``publish``: a chunk, its refusal, the error of
a request pushed out of its full queue (published when the newer request arrives), the error
of a request whose session admission released, or the error of a failed pass (whatever
raised in it, :meth:`.ForwardPass.compute`). A repeat of a request (same session and
id, see the core's ``on_request``) is no new request: it gets the published answer again, or
nothing while that answer is still to come.
"""

import threading
from typing import Callable, List, Optional, Sequence

from remote_inference_py.contract.check import AdmitRequest
from remote_inference_py.policy_server.clients import AdmitResult
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import (
    Answer, PolicyServerCore, Request, Work)
from remote_inference_py.policy_server.delivery import DelayLine
from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.text import QueryInputs

IDLE_WAIT_S = 0.5   # the serving thread looks again at least this often
MIN_WAIT_S = 0.0005   # a deadline just ahead is waited for this long at least (no busy loop)
THREAD_NAME = 'serving'
THREADS = ('spinner', THREAD_NAME, 'text', 'presence')
"""The policy server's working threads, at most four (see the module doc)."""


def _ignore(*args) -> None:
    return None


class Scheduler:
    """Serve a core's requests through one loop, turned by a thread or a caller (module doc)."""

    def __init__(self, core: PolicyServerCore, publish: Callable[[Answer], None],
                 inline: bool = False,
                 rejected: Callable[[str, str, InputError], None] = _ignore,
                 log_error: Callable[[str, str], None] = _ignore,
                 simultaneous_s: float = 0.0):
        """Serve ``core`` on its clock; answers go to ``publish`` (from any thread, one at a time).

        ``rejected(robot, stream, error)`` hears of frames that failed to decode when used,
        ``log_error(where, text)`` of unexpected errors (serving goes on). A held-back answer
        is due once the clock is within ``simultaneous_s`` of its time (0: a real clock; a
        simulated clock's float noise, :class:`.delivery.DelayLine`).
        """
        self.core = core
        self.inline = inline
        self._publish = publish
        self._rejected = rejected
        self._log_error = log_error
        self._cond = threading.Condition()
        self._busy = False          # a forward pass is running (or publishing its answers)
        self._poked = False         # something changed since the serving thread last looked
        self._stopped = False
        self._publish_lock = threading.Lock()   # answers leave one at a time, in order
        self.delivery = DelayLine(core.clock, simultaneous_s)
        self._thread: Optional[threading.Thread] = None

    # ---- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the serving thread, which turns the loop (:meth:`step`) until stopped."""
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the serving thread (a running pass finishes first); held-back answers drop."""
        with self._cond:
            self._stopped = True
            self.delivery.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    # ---- the loop -----------------------------------------------------------------------

    def step(self) -> bool:
        """Turn the loop once in this thread; return whether it published or served anything.

        It publishes the held-back answers now due, then takes the ready work (unless a pass
        runs in another thread or the loop is stopped) and serves it: one forward pass, its
        answers published or held back for ``extra_latency_s``. False: nothing to do now.
        """
        released = self._release()
        with self._cond:
            work = None if self._busy or self._stopped else self.core.take_work()
            if not work:
                return released
            self._busy = True
        self._serve(work)
        return True

    def next_turn(self) -> Optional[float]:
        """Return when the loop must turn again by itself (core clock time), or None.

        That is the next observation deadline (while no pass runs) or held-back answer;
        anything else that makes work (a sample, a request) turns it or pokes the thread.
        """
        with self._cond:
            return self._next_turn()

    def _next_turn(self) -> Optional[float]:
        times = [self.delivery.next_due(), None if self._busy else self.core.next_deadline()]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def _run(self) -> None:
        """Turn the loop until stopped (the serving thread)."""
        while not self._stopped:
            try:
                if self.step():
                    continue   # more may be ready: look again at once
            except Exception as error:  # noqa: B902 - the server keeps serving
                self._log_error('serving', f'serving error: {error!r}')
            with self._cond:
                if not self._poked and not self._stopped:
                    wake = self._next_turn()
                    self._cond.wait(IDLE_WAIT_S if wake is None else min(
                        IDLE_WAIT_S, max(wake - self.core.clock(), MIN_WAIT_S)))
                self._poked = False

    def _poke(self) -> None:
        """Make the serving thread look again (lock held)."""
        self._poked = True
        self._cond.notify()

    def _serve(self, work: Work) -> None:
        """Run one forward pass on ``work`` (``_busy`` set); publish or hold back its answers."""
        try:
            computed = self.core.compute(work)
            with self._cond:
                answers = self.core.finish(computed)
                latency = self.core.settings.extra_latency_s
                if latency > 0 or len(self.delivery):   # never ahead of one held back
                    for answer in answers:
                        self.delivery.put(answer, latency)
                    answers = []
            for robot, stream, _, error in computed.rejected:
                self._rejected(robot, stream, error)
            self._send(answers)
        except Exception as error:  # noqa: B902 - the server keeps serving
            self._log_error('serving', f'serving error: {error!r}')
        finally:
            with self._cond:
                self._busy = False
                if self.core.pending_count() or len(self.delivery):
                    self._poke()   # more may be ready, or an answer is due later

    def _release(self) -> bool:
        """Publish the held-back answers now due, in order; return whether there were any."""
        if not len(self.delivery):
            return False   # nothing held back (the usual case): no lock taken
        with self._publish_lock:
            with self._cond:
                due = self.delivery.take_due()
            for answer in due:
                self._publish_one(answer)
        return bool(due)

    def _send(self, answers: Sequence[Answer]) -> None:
        if answers:
            with self._publish_lock:
                for answer in answers:
                    self._publish_one(answer)

    def _publish_one(self, answer: Answer) -> None:
        """Publish an answer (publish lock held) and remember it for a repeat of its request."""
        try:
            self._publish(answer)
            with self._cond:
                self.core.answered(answer)
        except Exception as error:  # noqa: B902 - the server keeps serving
            self._log_error('publish', f'publishing request {answer.request_id} failed: '
                                       f'{error!r}')

    def _inline_now(self) -> bool:
        return self.inline and self.core.settings.extra_compute_s <= 0

    # ---- inputs (any thread) ------------------------------------------------------------

    def on_joint_states(self, robot: str, stamp_ns: int, names: Sequence[str],
                        positions: Sequence[float]) -> Optional[InputError]:
        """Store a joint_states sample; return its rejection, or serve what it made ready."""
        return self._sample(self.core.on_joint_states, robot, stamp_ns, names, positions)

    def on_image(self, robot: str, feature: str, stamp_ns: int, image) -> Optional[InputError]:
        """Store an image sample (RawImage or CompressedImage), as on_joint_states."""
        return self._sample(self.core.on_image, robot, feature, stamp_ns, image)

    def on_privileged(self, robot: str, feature: str, stamp_ns: int,
                      values: Sequence[float]) -> Optional[InputError]:
        """Store a privileged vector, as on_joint_states."""
        return self._sample(self.core.on_privileged, robot, feature, stamp_ns, values)

    def _sample(self, store, *args) -> Optional[InputError]:
        with self._cond:
            error = store(*args)
            if error is not None or not self.core.pending_count():
                return error
            inline = self._inline_now()
            if not inline:
                self._poke()   # the serving thread serves what it made ready
        if inline:
            self.step()   # a running pass pokes the thread when it ends
        return None

    def on_request(self, request: Request) -> None:
        """Queue a request; publish at once what must be said now, serve it if ready."""
        with self._cond:
            answers = self.core.on_request(request)
            inline = self._inline_now()
        self._send(answers)
        if not (inline and self.step()):
            with self._cond:
                if self.core.pending_count():
                    self._poke()   # a new deadline for the serving thread

    def take_notes(self) -> List[str]:
        """Return the frame conversions and resizes not yet announced (for the node's log)."""
        with self._cond:
            return self.core.assembler.take_notes()

    def text_inputs(self, robot: str, session_id: str, earliest_ns: int) -> QueryInputs:
        """Select a text query's observation under the lock; decode it outside (the core's)."""
        with self._cond:
            selection, refusal = self.core.select_text(robot, session_id, earliest_ns)
        if selection is None:
            return refusal
        found, rejected = self.core.build_text(robot, selection)
        if rejected:
            with self._cond:
                self.core.mark_rejected(rejected)
        return found

    def refuse(self, request: Request, message: str) -> None:
        """Answer a request that cannot be served at all (e.g. a malformed plan)."""
        with self._cond:
            answer = self.core.refuse(request, message)
        self._send([answer])

    def admit(self, robot: str, request: AdmitRequest) -> AdmitResult:
        """Admit a client (or say why not); answer what released sessions left waiting."""
        with self._cond:
            result = self.core.admit(robot, request)
        self._send(result.answers)
        return result

    def update_settings(self, **changes) -> ServerConfig:
        """Apply live setting changes (ValueError names a read-only one)."""
        with self._cond:
            settings = self.core.update_settings(**changes)
            self._poke()   # deadlines may have moved
        return settings

    @property
    def active_clients(self) -> int:
        """Return the number of admitted sessions."""
        with self._cond:
            return self.core.active_clients

    def summary(self) -> Optional[str]:
        """Return the core's activity summary since the last call (None: nothing to say)."""
        with self._cond:
            return self.core.summary()
