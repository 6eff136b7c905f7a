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

"""The policy server's text work: answering the executor's queries (no ROS).

The node's ``policy/ask`` service (remote_inference/srv/Ask) hands each query to a
:class:`TextWorker`, which answers it on a thread of its own, one query at a time, in order.
Chunk serving never waits for it: the scheduler's serving thread goes on serving every
session's requests while text is generated (on a 2-core CPU the two compete for cores; on a
GPU they share it). The session that asked holds its arm and sends no requests meanwhile.

A query is refused at once, by name, when the runtime does not offer its kind (a runtime
without text generation offers none), when its text is empty or longer than ``max_text_chars``,
or when the session is not served here (``take_inputs`` says so: :attr:`QueryInputs.refused`).
Otherwise the worker waits up to ``observation_wait_s`` for an observation captured at or
after the query's earliest capture stamp (as a request does), then calls the runtime's
``generate_text`` with the model inputs of that observation. A query whose observation did not
come in time is answered with :attr:`AskResult.observation_missing` set: like a request
that found none, it may be asked again (the executor does, until its
``query_answer_timeout_s``). Both knobs are read at every
query, so a live change applies to the next one: ``wait_s()`` (the server's
``observation_wait_s``) and ``extra_s()`` (its ``extra_text_s``, a test and benchmark knob, 0
in production, which makes each answer that much slower, as a slower text model would;
counted in generate_ms).
"""

import dataclasses
import queue
import threading
import time
from typing import Callable, Optional, Union

from remote_inference_py.policy_server.runtimes import PolicyRuntime, TextAnswer

MAX_TEXT_CHARS = 1000
POLL_S = 0.005


@dataclasses.dataclass(frozen=True)
class AskJob:
    """One Ask request."""

    robot: str
    session_id: str
    kind: str
    text: str
    task: str
    earliest_ns: int


@dataclasses.dataclass(frozen=True)
class QueryInputs:
    """What ``take_inputs`` found for a query: the model inputs, or why there are none."""

    inputs: Optional[dict] = None
    capture_ns: int = 0   # of the observation the inputs are made of
    why: str = ''
    refused: bool = False   # the session is not served here: waiting cannot help


@dataclasses.dataclass(frozen=True)
class AskResult:
    """The reply to one Ask: the answer, or why there is none."""

    success: bool
    message: str
    answer: str = ''
    capture_ns: int = 0
    queue_wait_ms: float = 0.0
    preprocess_ms: float = 0.0
    generate_ms: float = 0.0
    generated_tokens: int = 0
    observation_missing: bool = False   # no capture in time: asking again may succeed


def ask_refusal(runtime: PolicyRuntime, kind: str, text: str,
                max_text_chars: int = MAX_TEXT_CHARS) -> str:
    """Return why a query cannot be answered by ``runtime`` ('' when it can)."""
    offered = tuple(runtime.text_commands)
    if kind not in offered:
        what = ', '.join(offered) if offered else 'no text commands'
        return (f'the served policy ({runtime.source}) does not offer {kind!r}: it offers '
                f'{what}')
    if not text.strip():
        return f'empty text: a {kind} query needs text'
    if len(text) > max_text_chars:
        return f'text too long: {len(text)} characters, at most {max_text_chars}'
    return ''


class TextWorker:
    """Answer queries on a thread of its own (see the module docstring)."""

    def __init__(self, runtime: PolicyRuntime,
                 take_inputs: Callable[[str, str, int], QueryInputs],
                 wait_s: Union[float, Callable[[], float]],
                 clock: Callable[[], float] = time.monotonic,
                 extra_s: Callable[[], float] = lambda: 0.0):
        """Answer with ``runtime``; ``take_inputs(robot, session, earliest_ns)`` selects.

        ``wait_s``: how long a query waits for its observation [s], or a function that says
        it at every query (the node's live ``observation_wait_s``).
        """
        self.runtime = runtime
        self.extra_s = extra_s
        self.take_inputs = take_inputs
        self.wait_s = wait_s if callable(wait_s) else (lambda: wait_s)
        self.clock = clock
        self._jobs = queue.Queue()
        self._stop = threading.Event()
        self._thread = None

    def start(self) -> None:
        """Start the text thread."""
        self._thread = threading.Thread(target=self._run, name='text', daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the text thread (a generation in progress finishes first)."""
        self._stop.set()
        self._jobs.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def submit(self, job: AskJob, done: Callable[[AskResult], None]) -> None:
        """Queue ``job``; ``done(result)`` is called from the text thread."""
        self._jobs.put((job, done, self.clock()))

    def _run(self) -> None:
        while not self._stop.is_set():
            item = self._jobs.get()
            if item is None:
                return
            job, done, received = item
            done(self.answer(job, received))

    def answer(self, job: AskJob, received: Optional[float] = None) -> AskResult:
        """Answer ``job`` in this thread: wait for its observation, then generate."""
        received = self.clock() if received is None else received
        refused = ask_refusal(self.runtime, job.kind, job.text)
        if refused:
            return AskResult(False, refused)
        deadline = received + self.wait_s()
        while True:
            began = self.clock()
            found = self.take_inputs(job.robot, job.session_id, job.earliest_ns)
            if found.inputs is not None or found.refused or began >= deadline \
                    or self._stop.is_set():
                break
            self._stop.wait(POLL_S)
        if found.inputs is None:
            return AskResult(False, f'no observation for the query: {found.why}',
                             observation_missing=not found.refused)
        preprocess_ms = (self.clock() - began) * 1000.0
        started = self.clock()
        try:
            answer = self.runtime.generate_text(job.kind, job.text, job.task, found.inputs)
        except Exception as error:  # noqa: B902 - a failing model must not stop the server
            return AskResult(False, f'text generation failed: {str(error).strip()[:300]}')
        extra = self.extra_s()
        if extra > 0:
            self._stop.wait(extra)
        if not isinstance(answer, TextAnswer):
            answer = TextAnswer(str(answer))
        return AskResult(True, f'{job.kind} answered', answer.text, found.capture_ns,
                         queue_wait_ms=(began - received) * 1000.0, preprocess_ms=preprocess_ms,
                         generate_ms=(self.clock() - started) * 1000.0,
                         generated_tokens=answer.generated_tokens)
