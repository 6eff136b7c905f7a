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
The policy server's one serving path: :class:`Scheduler` owns the threads (no ROS in it).

The node hands every input to the scheduler (samples, requests, admissions, live settings)
from its callbacks, and the scheduler hands every answer to one ``publish`` function: a
request goes node -> scheduler -> core -> publish and never comes back through the node. The
scheduler owns

- one lock around the core (:class:`.core.PolicyServerCore` holds none, and its bookkeeping
  must be called by one thread at a time): every call into the core's bookkeeping is made
  under it, and each takes microseconds. A text query's observation is selected under it and
  decoded outside it (:meth:`Scheduler.text_inputs`);
- the forward pass: at most one at a time, in whichever thread takes the work. It takes the
  ready requests under the lock, runs :meth:`~.core.PolicyServerCore.compute` outside it
  (samples, requests and admissions go on meanwhile), books the result under it again and
  publishes the answers in order before the next pass may start;
- the inference thread, which serves what the callbacks leave: requests whose observation
  arrives while a pass runs, and observation deadlines (it sleeps until the next one);
- the inline fast path: with ``inline`` (a model measured fast enough at warm-up, one robot)
  the callback that makes a request ready serves it itself when no pass is running. Waking
  another thread costs a hand-off (see docs/benchmarks.md, policy_server); a sample then
  does not wake the inference thread at all. ``extra_compute_s`` > 0 turns it off: a
  deliberately slow pass must not hold up the callbacks;
- the delivery thread, which publishes the answers held back by ``extra_latency_s``, in order
  (:class:`.delivery.DelayLine`).

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

IDLE_WAIT_S = 0.5   # the inference thread looks again at least this often


def _ignore(*args) -> None:
    return None


class Scheduler:
    """Serve a core's requests from callbacks and threads through one path (see module doc)."""

    def __init__(self, core: PolicyServerCore, publish: Callable[[Answer], None],
                 inline: bool = False,
                 rejected: Callable[[str, str, InputError], None] = _ignore,
                 log_error: Callable[[str, str], None] = _ignore):
        """Serve ``core``; answers go to ``publish`` (from any thread, one at a time).

        ``rejected(robot, stream, error)`` hears of frames that failed to decode when used,
        ``log_error(where, text)`` of unexpected errors (serving goes on).
        """
        self.core = core
        self.inline = inline
        self._publish = publish
        self._rejected = rejected
        self._log_error = log_error
        self._cond = threading.Condition()
        self._busy = False          # a forward pass is running (or publishing its answers)
        self._stopped = False
        self._publish_lock = threading.Lock()   # answers leave one at a time
        self.delivery = DelayLine()
        self._threads: List[threading.Thread] = []

    # ---- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the inference and delivery threads."""
        for name, target in (('inference', self._work), ('delivery', self._deliver)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop both threads (a running pass finishes first); held-back answers are dropped."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.delivery.stop()
        for thread in self._threads:
            thread.join(timeout)

    # ---- inputs (any thread) ------------------------------------------------------------

    def on_joint_states(self, robot: str, stamp_ns: int, names: Sequence[str],
                        positions: Sequence[float]) -> Optional[InputError]:
        """Store a joint_states sample; return its rejection, or serve what it made ready."""
        return self._sample(self.core.on_joint_states, robot, stamp_ns, names, positions)

    def on_image(self, robot: str, feature: str, stamp_ns: int, image) -> Optional[InputError]:
        """Store an image sample (RawImage or CompressedImage), as on_joint_states."""
        return self._sample(self.core.on_image, robot, feature, stamp_ns, image)

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

    def on_privileged(self, robot: str, feature: str, stamp_ns: int,
                      values: Sequence[float]) -> Optional[InputError]:
        """Store a privileged vector, as on_joint_states."""
        return self._sample(self.core.on_privileged, robot, feature, stamp_ns, values)

    def on_request(self, request: Request) -> None:
        """Queue a request; publish at once what must be said now, serve it if ready."""
        with self._cond:
            answers = self.core.on_request(request)
            work = self._take_inline()
            if work is None and self.core.pending_count():
                self._cond.notify()   # a new deadline for the inference thread
        for answer in answers:
            self._send_now(answer)
        if work is not None:
            self._serve(work)

    def refuse(self, request: Request, message: str) -> None:
        """Answer a request that cannot be served at all (e.g. a malformed plan)."""
        with self._cond:
            answer = self.core.refuse(request, message)
        self._send_now(answer)

    def admit(self, robot: str, request: AdmitRequest) -> AdmitResult:
        """Admit a client (or say why not); answer what released sessions left waiting."""
        with self._cond:
            result = self.core.admit(robot, request)
        for answer in result.answers:
            self._send_now(answer)
        return result

    def update_settings(self, **changes) -> ServerConfig:
        """Apply live setting changes (ValueError names a read-only one)."""
        with self._cond:
            settings = self.core.update_settings(**changes)
            self._cond.notify()   # deadlines may have moved
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

    # ---- serving ------------------------------------------------------------------------

    def _sample(self, store, *args) -> Optional[InputError]:
        with self._cond:
            error = store(*args)
            if error is not None or not self.core.pending_count():
                return error
            work = self._take_inline()
            if work is None and not self._inline_now():
                self._cond.notify()   # the inference thread serves it
        if work is not None:
            self._serve(work)
        return None

    def _inline_now(self) -> bool:
        return self.inline and self.core.settings.extra_compute_s <= 0

    def _take_inline(self) -> Optional[Work]:
        """Take ready work for the calling callback (lock held), or None."""
        if self._busy or not self._inline_now():
            return None
        work = self.core.take_work()
        if not work:
            return None
        self._busy = True
        return work

    def _serve(self, work: Work) -> None:
        """Run one forward pass on ``work`` (``_busy`` set) and publish its answers."""
        try:
            computed = self.core.compute(work)
            with self._cond:
                answers = self.core.finish(computed)
            for robot, stream, _, error in computed.rejected:
                self._rejected(robot, stream, error)
            latency = self.core.settings.extra_latency_s
            for answer in answers:
                if latency > 0 or len(self.delivery):
                    self.delivery.put(answer, latency)   # the delivery thread publishes it
                else:
                    self._send_now(answer)
        except Exception as error:  # noqa: B902 - the server keeps serving
            self._log_error('serving', f'serving error: {error!r}')
        finally:
            with self._cond:
                self._busy = False
                if self.core.pending_count():
                    self._cond.notify()   # more may be ready; the inference thread looks

    def _send_now(self, answer: Answer) -> None:
        try:
            with self._publish_lock:
                self._publish(answer)
            with self._cond:
                self.core.answered(answer)   # a repeat of its request gets it again
        except Exception as error:  # noqa: B902 - the server keeps serving
            self._log_error('publish', f'publishing request {answer.request_id} failed: '
                                       f'{error!r}')

    def _work(self) -> None:
        """Serve what the callbacks leave until stopped (the inference thread)."""
        while True:
            with self._cond:
                work = None
                while not self._stopped:
                    if not self._busy:
                        work = self.core.take_work()
                        if work:
                            self._busy = True
                            break
                    deadline = None if self._busy else self.core.next_deadline()
                    wait = IDLE_WAIT_S if deadline is None else min(
                        IDLE_WAIT_S, max(deadline - self.core.clock(), 0.0005))
                    self._cond.wait(wait)
                if self._stopped:
                    if work:
                        self._busy = False
                    return
            self._serve(work)

    def _deliver(self) -> None:
        """Publish answers held back by extra_latency_s, in order (the delivery thread)."""
        while not self._stopped:
            try:
                for answer in self.delivery.take(timeout=IDLE_WAIT_S):
                    self._send_now(answer)
            except Exception as error:  # noqa: B902 - the server keeps serving
                self._log_error('delivery', f'delivery error: {error!r}')
