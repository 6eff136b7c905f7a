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
The policy server's model boundary: one forward pass over a batch of ready requests, no ROS.

:class:`ForwardPass` is the part of :class:`.core.PolicyServerCore` that turns a
:class:`Work` (requests whose observation was selected) into a :class:`Computed`: it builds
each request's model inputs from its selected samples, stacks them into one batch, hands the
batch (with each request's committed plan, shifted to the capture used and converted to the
policy's normalized units, for a runtime that ``supports_prefix``) to the runtime, and turns
each row of the output into a chunk in SI radians, timed. It changes nothing outside what it
returns: the frames it finds corrupt are listed in ``Computed.rejected`` for the core to
mark bad, so it may run outside the scheduler's lock while samples and requests go on.

Every request of the work comes out answered or listed for a retry, whatever raises: a
request whose frame fails to decode (InputError) is listed for a retry; one whose inputs
fail to build otherwise fails alone (``preprocessing``); a forward pass that raises or
returns the wrong shape fails every request of the batch (``inference``); a row that cannot
be converted fails its request alone (``output``); and should anything else raise, every
request of the work fails (``inference``, ``serving failed``). Each such error names the
exception's type and message.
"""

import dataclasses
import time
from typing import Callable, List, Optional, Tuple

import numpy as np

from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.observation import ObservationAssembler, Selection
from remote_inference_py.policy_server.queues import (
    Answer, INFERENCE, Job, OUTPUT, PREPROCESSING, Request)
from remote_inference_py.policy_server.runtimes import PolicyRuntime, Prefix
from remote_inference_py.policy_server.timings import RequestTimings
from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.units import JointConverter


@dataclasses.dataclass
class Work:
    """What a forward pass does next: ready requests (batched) and requests that failed."""

    ready: List[Tuple[Job, Selection]] = dataclasses.field(default_factory=list)
    failed: List[Tuple[Job, str, str]] = dataclasses.field(default_factory=list)  # kind, why

    def __bool__(self) -> bool:
        """Return True when there is something to do."""
        return bool(self.ready or self.failed)

    def failures(self) -> List[Tuple[Request, str, str]]:
        """Return the failed requests with their kind and message, as Computed lists them."""
        return [(job.request, kind, message) for job, kind, message in self.failed]


@dataclasses.dataclass
class Computed:
    """What :meth:`ForwardPass.compute` made of a Work; the core's ``finish`` books it."""

    answers: List[Answer] = dataclasses.field(default_factory=list)   # chunks, in batch order
    failed: List[Tuple[Request, str, str]] = dataclasses.field(default_factory=list)  # kind, why
    retry: List[Tuple[Job, InputError]] = dataclasses.field(default_factory=list)
    # Frames that failed to decode: (robot, stream, sample, error), marked bad by finish.
    rejected: List[Tuple[str, str, object, InputError]] = dataclasses.field(
        default_factory=list)
    batch_size: int = 0


def failure_text(error: BaseException) -> str:
    """Name an exception by its type and (the start of) its message."""
    text = str(error).strip()[:300]
    return f'{type(error).__name__}: {text}' if text else type(error).__name__


class BadFrames:
    """Stands in for a robot's buffers in ObservationAssembler.build: records, marks nothing.

    compute runs outside the scheduler's lock, so the frames it finds corrupt are marked bad
    in their buffers later, by the core under the lock (``mark_rejected``).
    """

    def __init__(self, robot: str, out: list):
        self._robot, self._out = robot, out

    def __getitem__(self, stream: str):
        """Return what stands in for the buffer of ``stream``."""
        return _BadFrameRecorder(self._robot, stream, self._out)


class _BadFrameRecorder:
    def __init__(self, robot: str, stream: str, out: list):
        self._robot, self._stream, self._out = robot, stream, out

    def mark_bad(self, sample, message: str) -> None:
        self._out.append((self._robot, self._stream, sample, message))


class ForwardPass:
    """Inputs, one batched forward pass and the chunks it makes (see the module doc)."""

    def __init__(self, runtime: PolicyRuntime, assembler: ObservationAssembler,
                 chunk_length: int, calibration: Optional[Calibration] = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] = time.sleep):
        """Bind a runtime; ValueError names action names that do not fit their semantics.

        ``chunk_length``: the steps of each chunk (at most the policy's; 0: the policy's).
        """
        self.runtime = runtime
        self.spec = spec = runtime.spec
        self.assembler = assembler
        self.clock, self.sleep = clock, sleep
        try:
            self.action_converter = JointConverter(spec.semantics, spec.action_joints,
                                                   calibration)
        except ValueError as error:
            raise ValueError(f'action names {list(spec.action_names)} do not fit semantics '
                             f'{spec.semantics!r}: {error}') from None
        if chunk_length > spec.chunk_length:
            raise ValueError(f"chunk_length {chunk_length} exceeds the policy's "
                             f'chunk length {spec.chunk_length}')
        self.chunk_length = chunk_length or spec.chunk_length
        self.step_period = 1.0 / spec.fps

    def compute(self, work: Work, extra_compute_s: float = 0.0) -> Computed:
        """Preprocess, run one forward pass and postprocess ``work``; change no bookkeeping.

        It reads the samples the work selected (caching their converted pixels) and the
        runtime; the failed requests of ``work`` pass through to ``Computed.failed``.
        ``extra_compute_s`` keeps the forward pass busy that much longer. Whatever raises,
        every request of ``work`` is in the result (see the module docstring).
        """
        try:
            return self._compute(work, extra_compute_s)
        except Exception as error:  # noqa: B902 - whatever failed, every request is answered
            message = f'serving failed: {failure_text(error)}'
            return Computed(failed=work.failures() + [
                (job.request, INFERENCE, message) for job, _ in work.ready])

    def _compute(self, work: Work, extra_compute_s: float) -> Computed:
        out = Computed(failed=work.failures())
        batch = []   # (job, inputs, capture stamp, preprocess start, preprocess ms)
        for job, selection in work.ready:
            began = self.clock()
            rejected = []
            try:
                inputs = self.assembler.build(
                    selection, BadFrames(job.request.robot, rejected))
            except InputError as error:
                out.retry.append((job, error))
                out.rejected += [(robot, stream, sample, error)
                                 for robot, stream, sample, _ in rejected]
                continue
            except Exception as error:  # noqa: B902 - this request's inputs, not the server
                out.failed.append((job.request, PREPROCESSING,
                                   f'preprocessing failed: {failure_text(error)}'))
                continue
            batch.append((job, inputs, selection.capture_stamp_ns, began,
                          (self.clock() - began) * 1000.0))
        if not batch:
            return out
        names = [f.name for f in self.spec.features]
        tasks = [item[0].request.task for item in batch]
        started = self.clock()
        try:
            stacked = {name: (batch[0][1][name][None] if len(batch) == 1
                              else np.stack([item[1][name] for item in batch]))
                       for name in names}
            if self.runtime.supports_prefix:
                prefixes = [self.prefix_for(item[0].request.plan, item[2]) for item in batch]
                raw = np.asarray(self.runtime.infer(stacked, tasks, prefixes))
            else:
                raw = np.asarray(self.runtime.infer(stacked, tasks))
            if raw.ndim != 3 or raw.shape[0] != len(batch):
                raise ValueError(f'the policy returned shape {list(raw.shape)} for a batch of '
                                 f'{len(batch)}')
        except Exception as error:  # noqa: B902 - a failing model must not stop the server
            message = f'policy forward pass failed: {failure_text(error)}'
            out.failed += [(item[0].request, INFERENCE, message) for item in batch]
            return out
        if extra_compute_s > 0:
            self.sleep(extra_compute_s)
        inference_ms = (self.clock() - started) * 1000.0
        out.batch_size = len(batch)
        for index, (job, _, capture_ns, began, preprocess_ms) in enumerate(batch):
            post_started = self.clock()
            request = job.request
            try:
                positions = self.postprocess(raw[index])
            except Exception as error:  # noqa: B902 - this request's output, not the server
                out.failed.append((request, OUTPUT, f'policy output: {failure_text(error)}'))
                continue
            timings = RequestTimings(
                queue_wait_ms=(began - job.received) * 1000.0, preprocess_ms=preprocess_ms,
                inference_ms=inference_ms,
                postprocess_ms=(self.clock() - post_started) * 1000.0)
            out.answers.append(Answer(request.robot, request.session_id, request.request_id,
                                      self.spec.action_joints, self.step_period, capture_ns,
                                      positions, '', timings, len(batch), request.sent_ns))
        return out

    def prefix_for(self, plan: Optional[CommittedPlan], capture_ns: int) -> Optional[Prefix]:
        """Return a request's committed plan from its capture on, in normalized policy units."""
        if plan is None:
            return None
        rows = plan.for_capture(capture_ns, self.step_period * 1e9)
        if rows is None:
            return None
        positions, frozen = rows
        values = self.spec.action_normalization.normalize(self.action_converter.to_policy(
            positions))
        return Prefix(np.asarray(values, dtype=np.float32), frozen)

    def postprocess(self, steps: np.ndarray) -> np.ndarray:
        """Turn ``[steps, actions]`` model output into ``[chunk_length, joints]`` SI float32."""
        values = self.spec.action_normalization.unnormalize(
            np.asarray(steps[:self.chunk_length], dtype=np.float64))
        return self.action_converter.to_si(values).astype(np.float32)
