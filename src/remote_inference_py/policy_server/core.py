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
The policy server's logic as a plain class: :class:`PolicyServerCore`, with no ROS in it.

The core is single-threaded and holds no lock: it is called by one thread at a time (the
node's :class:`.scheduler.Scheduler` serializes the calls), and it never waits for another
thread. Samples, admissions and requests go in (each call returns in microseconds), ready
work comes out of :meth:`take_work`, :meth:`compute` runs the forward pass on it and
:meth:`finish` turns the result into answers::

    core = PolicyServerCore(ServerConfig(deployment='so101'), runtime)
    core.on_joint_states('', stamp_ns, names, positions)       # subscription callbacks
    result = core.admit('', admit_request)
    core.on_request(Request('', result.session_id, 1, earliest_ns))   # None: queued
    answers = core.finish(core.compute(core.take_work()))

:meth:`compute` is the one step that touches no bookkeeping: it reads the samples the work
selected and the runtime, so the scheduler runs it outside its lock and samples, requests and
admissions go on while a forward pass runs (:meth:`serve` is ``finish(compute(work))`` for a
caller with one thread, and :meth:`next_work` waits out observation deadlines for it).

Every request gets exactly one answer: a chunk, or an error answer whose ``error`` says why.
Requests wait in a queue per session and are served one at a time in request order: the
second waits until the first has been taken into a forward pass (an executor that keeps
several requests in flight staggers them, and an older prediction must never arrive after a
newer one). The queue holds as many requests as the client said it keeps in flight at
admission (at most ``max_requests_per_client``, the contract's ``max_requests_in_flight``); a
request beyond that pushes out the oldest one not started, which :meth:`on_request` returns
answered with an error headed ``superseded`` (one request in flight: a latest-wins slot) or
``dropped from a full queue`` (several), counted as superseded in the activity line. A request
put back after its frame failed to decode finds its queue full the same way. Each request's
observation is selected when it is served, from its own earliest capture stamp. A request
is ready when every stream has a sample captured at or after its earliest capture stamp; it
waits up to ``observation_wait_s`` for one and is then answered with an error naming the
missing stream, headed by its kind: ``stale observation`` (a stream's newest sample was
captured before the earliest capture stamp: a camera that stalled or was unplugged),
``missing observation`` (a stream has delivered nothing usable yet) or ``unusable
observation`` (samples failed to decode). The requests still waiting for a session that
admission releases are answered ``session released``. That answer, and the refusal of a
request whose session this instance does not serve (never admitted here, released, or
admitted for another robot), are marked ``session_refused``: retrying cannot change them.
Ready requests of different sessions are batched into one forward pass, up to
``max_batch_size`` and what the runtime declares; the rest wait for the next pass.
A request whose id its session sent recently (among the last :data:`RECENT_REQUEST_IDS`) is
a repeat (the executor repeats its first
request until something of the session comes back, ``executor/first_answer.py``): it is
answered with the last published answer again when that answered it (the first copy of the
answer may be what was lost), and not at all when its answer is still to come (counted as
``repeated``).

A request may carry the executor's committed plan (rtc merge, docs/design.md section 11). For a
runtime that supports it (``supports_prefix``), :meth:`PolicyServerCore.prefix_for` shifts the
plan to the capture of the observation actually used, converts it to the policy's normalized
units and hands it to ``infer``; other runtimes never see it (admission refuses rtc for them).

``extra_compute_s`` keeps the forward pass busy that much longer (a slower model: requests
queue behind it). ``extra_latency_s`` is not the core's: the scheduler holds each answer back
that long after it is computed (a link or a remote queue: serving goes on meanwhile).
"""

import collections
import dataclasses
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.contract.admission import (
    AdmitRequest, check_admission, FeatureDeclaration, MERGE_MODES, PLAIN_MERGE_MODES,
    ServerContract)
from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.policy_server import images
from remote_inference_py.policy_server.config import LIVE_FIELDS, ServerConfig
from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.observation import (
    JOINT_STATES, ObservationAssembler, Selection)
from remote_inference_py.policy_server.runtimes import PolicyRuntime, Prefix
from remote_inference_py.policy_server.sessions import AdmitResult, SessionTable
from remote_inference_py.policy_server.timings import ActivityStats, RequestTimings
from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.units import JointConverter


STALE_OBSERVATION = 'stale observation'
MISSING_OBSERVATION = 'missing observation'
UNUSABLE_OBSERVATION = 'unusable observation'
SUPERSEDED = 'superseded'
DROPPED = 'dropped from a full queue'
SESSION_RELEASED = 'session released'
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


@dataclasses.dataclass
class Work:
    """What a forward pass does next: ready requests (batched) and requests that failed."""

    ready: List[Tuple[Job, Selection]] = dataclasses.field(default_factory=list)
    failed: List[Tuple[Job, str, str]] = dataclasses.field(default_factory=list)

    def __bool__(self) -> bool:
        """Return True when there is something to do."""
        return bool(self.ready or self.failed)


@dataclasses.dataclass
class Computed:
    """What :meth:`PolicyServerCore.compute` made of a Work; :meth:`~.finish` books it."""

    answers: List[Answer] = dataclasses.field(default_factory=list)   # chunks, in batch order
    failed: List[Tuple[Request, str, str]] = dataclasses.field(default_factory=list)
    retry: List[Tuple[Job, InputError]] = dataclasses.field(default_factory=list)
    # Frames that failed to decode: (robot, stream, sample, error), marked bad by finish.
    rejected: List[Tuple[str, str, object, InputError]] = dataclasses.field(
        default_factory=list)
    batch_size: int = 0


class _BadFrames:
    """Stands in for a robot's buffers in ObservationAssembler.build: records, marks nothing.

    compute runs outside the scheduler's lock, so the frames it finds corrupt are marked bad
    in their buffers later, by finish.
    """

    def __init__(self, robot: str, out: list):
        self._robot, self._out = robot, out

    def __getitem__(self, stream: str):
        return _BadFrameRecorder(self._robot, stream, self._out)


class _BadFrameRecorder:
    def __init__(self, robot: str, stream: str, out: list):
        self._robot, self._stream, self._out = robot, stream, out

    def mark_bad(self, sample, message: str) -> None:
        self._out.append((self._robot, self._stream, sample, message))


def _request_order(job: Job) -> int:
    return job.request.request_id


class PolicyServerCore:
    """Buffers, admission, request slots, batching and the model boundary (see module doc)."""

    def __init__(self, settings: ServerConfig, runtime: PolicyRuntime,
                 calibration: Optional[Calibration] = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Optional[Callable[[float], object]] = None):
        """Bind a loaded runtime; ValueError names an inconsistent declaration."""
        self.settings = settings
        self.runtime = runtime
        self.spec = spec = runtime.spec
        self.clock = clock
        self.sleep = sleep or time.sleep
        self.assembler = ObservationAssembler(spec, calibration, settings.rotate_180,
                                              settings.convert_mono_to_rgb)
        try:
            self.action_converter = JointConverter(spec.semantics, spec.action_joints,
                                                   calibration)
        except ValueError as error:
            raise ValueError(f'action names {list(spec.action_names)} do not fit semantics '
                             f'{spec.semantics!r}: {error}') from None
        if settings.chunk_length > spec.chunk_length:
            raise ValueError(f"chunk_length {settings.chunk_length} exceeds the policy's "
                             f'chunk length {spec.chunk_length}')
        self.chunk_length = settings.chunk_length or spec.chunk_length
        self.batch_limit = max(1, min(settings.max_batch_size, runtime.max_batch_size))
        self.step_period = 1.0 / spec.fps
        self.buffers = {robot: self.assembler.new_buffers(settings.observation_history)
                        for robot in settings.robot_namespaces}
        self.contract = ServerContract(
            deployment=settings.deployment, semantics=spec.semantics,
            action_names=spec.action_joints, action_rate=spec.fps,
            chunk_length=self.chunk_length,
            features=tuple(FeatureDeclaration(f.name, tuple(f.shape), f.dtype, f.kind,
                                              f.resizes) for f in spec.features),
            merge_modes=MERGE_MODES if runtime.supports_prefix else PLAIN_MERGE_MODES,
            presence_lease_s=settings.presence_lease_s,
            max_requests_in_flight=settings.max_requests_per_client)
        self.sessions = SessionTable(settings.max_clients, clock)
        self.stats = ActivityStats()
        # Per session: its requests not started yet, oldest first (never empty), and how many
        # it may queue (what it keeps in flight).
        self._pending: Dict[str, collections.deque] = {}
        self._queue_bound: Dict[str, int] = {}
        # Per session: the ids of its recent requests, oldest first, and the last answer
        # published (a repeated request is answered from it, see on_request).
        self._recent_ids: Dict[str, collections.deque] = {}
        self._last_answer: Dict[str, Answer] = {}

    def warm_preprocessing(self) -> None:
        """Convert one blank frame per image feature (imports Pillow before the first request)."""
        import PIL.Image  # noqa: F401 - decoding compressed frames needs it
        for feature in self.spec.features:
            if feature.is_image:
                frame = np.zeros(feature.shape, dtype=np.dtype(feature.dtype))
                images.to_model_input(frame, feature, feature.name in self.assembler.rotate_180,
                                      encoding='32FC1' if feature.dtype == 'float32' else None)

    # ---- settings -----------------------------------------------------------------------

    def update_settings(self, **changes) -> ServerConfig:
        """Apply live changes (the config's LIVE_FIELDS: timeouts and injected delays)."""
        fixed = sorted(set(changes) - set(LIVE_FIELDS))
        if fixed:
            raise ValueError(f'read-only while running: {", ".join(fixed)}')
        self.settings = dataclasses.replace(self.settings, **changes)
        return self.settings

    # ---- admission ----------------------------------------------------------------------

    def admit(self, robot: str, request: AdmitRequest) -> AdmitResult:
        """Check the request against the contract and admit it if a slot is free.

        The requests still waiting for a session this releases are in the result's
        ``answers``, each answered ``session released``.
        """
        problems = check_admission(self.contract, request)
        result = self.sessions.admit(robot, request.client_name,
                                     self.settings.idle_timeout_s, problems)
        answers = []
        for session_id in result.released:
            for job in self._pending.pop(session_id, ()):
                self.stats.count('superseded')
                answers.append(self._error(job.request, (
                    f'{SESSION_RELEASED}: session {session_id} was released before request '
                    f'{job.request.request_id} was served'), session_refused=True))
            self._queue_bound.pop(session_id, None)
            self._recent_ids.pop(session_id, None)
            self._last_answer.pop(session_id, None)
        if result.success:
            self._queue_bound[result.session_id] = max(1, min(
                request.max_requests_in_flight, self.settings.max_requests_per_client))
        if answers:
            result = dataclasses.replace(result, answers=tuple(answers))
        return result

    @property
    def active_clients(self) -> int:
        """Return the number of admitted sessions."""
        return len(self.sessions)

    def text_inputs(self, robot: str, session_id: str, earliest_ns: int):
        """Return (model inputs, capture stamp [ns], '') for a text query, or (None, 0, why).

        The observation is selected as a request's is (every stream captured at or after
        ``earliest_ns``); an unknown session or robot is refused by name.
        """
        why = self.sessions.touch(session_id, robot)
        if why is not None:
            return None, 0, why
        buffers = self.buffers[robot]
        selection = self.assembler.select(buffers, earliest_ns)
        if selection is None:
            return None, 0, self.assembler.missing(buffers, earliest_ns)
        try:
            inputs = self.assembler.build(selection, buffers)
            for feature in self.spec.features:   # the frames before normalizing, in [0, 1]
                if feature.kind == 'rgb':
                    inputs[feature.name + '.rgb'] = images.to_model_input(
                        selection.samples[feature.name][-1].payload, feature,
                        feature.name in self.assembler.rotate_180)
        except InputError as error:
            return None, 0, f'{UNUSABLE_OBSERVATION}: {error}'
        return inputs, selection.capture_stamp_ns, ''

    # ---- samples ------------------------------------------------------------------------

    def _store(self, robot: str, stream: str, make) -> Optional[InputError]:
        buffers = self.buffers.get(robot)
        if buffers is None or stream not in buffers:
            return InputError('unknown_stream', f'no stream {stream!r} for robot {robot!r}')
        try:
            sample = make()
        except InputError as error:
            buffers[stream].reject(str(error))
            return error
        buffers[stream].add(sample)
        return None

    def on_joint_states(self, robot: str, stamp_ns: int, names: Sequence[str],
                        positions: Sequence[float]) -> Optional[InputError]:
        """Store a joint_states sample; return the InputError when it was rejected."""
        if JOINT_STATES not in self.assembler.streams:
            return None
        return self._store(robot, JOINT_STATES,
                           lambda: self.assembler.joint_sample(stamp_ns, names, positions))

    def on_image(self, robot: str, feature: str, stamp_ns: int, image) -> Optional[InputError]:
        """Store an image sample (RawImage or CompressedImage); return a rejection."""
        return self._store(robot, feature,
                           lambda: self.assembler.image_sample(feature, stamp_ns, image))

    def on_privileged(self, robot: str, feature: str, stamp_ns: int,
                      values: Sequence[float]) -> Optional[InputError]:
        """Store a privileged vector; return a rejection."""
        return self._store(robot, feature,
                           lambda: self.assembler.privileged_sample(feature, stamp_ns, values))

    # ---- requests -----------------------------------------------------------------------

    def on_request(self, request: Request) -> Optional[Answer]:
        """Queue a request in its session's queue; return an answer to publish now, if any.

        That answer is this request's refusal (unknown session), or the error answer of the
        older request it pushed out of a full queue; None when nothing needs saying yet.
        """
        self.stats.count('requests')
        why = self.sessions.touch(request.session_id, request.robot)
        if why is not None:
            self.stats.count('refused')
            return self._error(request, why, session_refused=True)
        recent = self._recent_ids.setdefault(request.session_id,
                                             collections.deque(maxlen=RECENT_REQUEST_IDS))
        if request.request_id in recent:
            return self._repeated(request)
        recent.append(request.request_id)
        now = self.clock()
        queue = self._pending.setdefault(request.session_id, collections.deque())
        bound = self._queue_bound.get(request.session_id,
                                      self.settings.max_requests_per_client)
        pushed_out = None
        while len(queue) >= bound:
            pushed_out = self._pushed_out(queue.popleft().request, bound, request.request_id)
        job = Job(request, now, now + self.settings.observation_wait_s)
        if queue and queue[-1].request.request_id > request.request_id:
            queue = collections.deque(sorted([*queue, job], key=_request_order))
            self._pending[request.session_id] = queue
        else:
            queue.append(job)
        return pushed_out

    def _repeated(self, request: Request) -> Optional[Answer]:
        """Answer a request whose id its session already sent (the client repeats it).

        A client repeats its first request until something of its session comes back
        (executor/first_answer.py): the request or its answer may have been lost while
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
        # The fixed part first: the node throttles its warnings by the head of the text.
        return self._error(request, f'{kind}: the client keeps {bound} request(s) in flight '
                                    f'and the newest are served; {why}')

    def refuse(self, request: Request, message: str) -> Answer:
        """Count a request that cannot be served at all; return its error answer."""
        self.stats.count('requests')
        self.stats.count('refused')
        return self._error(request, message)

    def _error(self, request: Request, message: str, session_refused: bool = False) -> Answer:
        return Answer(request.robot, request.session_id, request.request_id,
                      self.spec.action_joints, self.step_period, error=message,
                      sent_ns=request.sent_ns, session_refused=session_refused)

    def pending_count(self) -> int:
        """Return the number of requests not taken into a forward pass yet."""
        return sum(len(queue) for queue in self._pending.values())

    def next_deadline(self) -> Optional[float]:
        """Return when a waiting request times out next (``clock`` time), or None."""
        return min((queue[0].deadline for queue in self._pending.values()), default=None)

    # ---- serving ------------------------------------------------------------------------

    def take_work(self) -> Work:
        """Take the requests that are ready or have waited too long now (never waits)."""
        work = Work()
        if not self._pending:
            return work
        now = self.clock()
        heads = [queue[0] for queue in self._pending.values()]
        for job in sorted(heads, key=lambda j: j.received):
            buffers = self.buffers[job.request.robot]
            selection = self.assembler.select(buffers, job.request.earliest_ns)
            if job.last_error and now >= job.deadline:
                work.failed.append((job, 'observation', (
                    f'{UNUSABLE_OBSERVATION}: no usable observation within '
                    f'observation_wait_s={self.settings.observation_wait_s} s: '
                    f'{job.last_error}')))
            elif selection is not None:
                if len(work.ready) < self.batch_limit:
                    work.ready.append((job, selection))
            elif now >= job.deadline:
                missing = self.assembler.missing(buffers, job.request.earliest_ns)
                name = (STALE_OBSERVATION if self.assembler.has_stale(
                    buffers, job.request.earliest_ns) else MISSING_OBSERVATION)
                work.failed.append((job, 'observation', (
                    f'{name}: no usable observation within observation_wait_s='
                    f'{self.settings.observation_wait_s} s: {missing}')))
        for job in [j for j, _ in work.ready] + [j for j, _, _ in work.failed]:
            self._start(job, now)
        return work

    def next_work(self, timeout: float = 0.0) -> Work:
        """Take work, sleeping until a request times out when none is ready (one thread only).

        For a caller that drives the core from a single thread (the tests, the simulated-time
        evaluation): nothing else can deliver a sample meanwhile, so it waits only for
        observation deadlines, at most ``timeout`` seconds.
        """
        give_up = self.clock() + timeout
        while True:
            work = self.take_work()
            now = self.clock()
            deadline = self.next_deadline()
            if work or now >= give_up or deadline is None:
                return work
            self.sleep(max(min(deadline, give_up) - now, 0.0005))

    def _start(self, job: Job, now: float) -> None:
        """Take the head of its session's queue; the next one waits for its observation now."""
        queue = self._pending[job.request.session_id]
        queue.popleft()
        if queue:
            queue[0].deadline = max(queue[0].deadline, now + self.settings.observation_wait_s)
        else:
            del self._pending[job.request.session_id]

    def serve(self, work: Work) -> List[Answer]:
        """Compute and finish ``work`` in this thread; return one answer per request."""
        return self.finish(self.compute(work))

    def compute(self, work: Work) -> Computed:
        """Preprocess, run one forward pass and postprocess ``work``; change no bookkeeping.

        It reads the samples the work selected (caching their converted pixels) and the
        runtime, and touches nothing else of the core, so it may run while the core takes
        samples and requests in another thread; :meth:`finish` books what it found.
        """
        out = Computed(failed=[(job.request, category, message)
                               for job, category, message in work.failed])
        batch = []   # (job, inputs, capture stamp, preprocess start, preprocess ms)
        for job, selection in work.ready:
            began = self.clock()
            rejected = []
            try:
                inputs = self.assembler.build(
                    selection, _BadFrames(job.request.robot, rejected))
            except InputError as error:
                out.retry.append((job, error))
                out.rejected += [(robot, stream, sample, error)
                                 for robot, stream, sample, _ in rejected]
                continue
            batch.append((job, inputs, selection.capture_stamp_ns, began,
                          (self.clock() - began) * 1000.0))
        if not batch:
            return out
        names = [f.name for f in self.spec.features]
        stacked = {name: (batch[0][1][name][None] if len(batch) == 1
                          else np.stack([item[1][name] for item in batch])) for name in names}
        tasks = [item[0].request.task for item in batch]
        started = self.clock()
        try:
            if self.runtime.supports_prefix:
                prefixes = [self.prefix_for(item[0].request.plan, item[2]) for item in batch]
                raw = np.asarray(self.runtime.infer(stacked, tasks, prefixes))
            else:
                raw = np.asarray(self.runtime.infer(stacked, tasks))
            if raw.ndim != 3 or raw.shape[0] != len(batch):
                raise ValueError(f'the policy returned shape {list(raw.shape)} for a batch of '
                                 f'{len(batch)}')
        except Exception as error:  # noqa: B902 - a failing model must not stop the server
            message = f'policy forward pass failed: {str(error).strip()[:300]}'
            out.failed += [(item[0].request, 'inference', message) for item in batch]
            return out
        compute = self.settings.extra_compute_s
        if compute > 0:
            self.sleep(compute)
        inference_ms = (self.clock() - started) * 1000.0
        out.batch_size = len(batch)
        for index, (job, _, capture_ns, began, preprocess_ms) in enumerate(batch):
            post_started = self.clock()
            request = job.request
            try:
                positions = self.postprocess(raw[index])
            except ValueError as error:
                out.failed.append((request, 'output', f'policy output: {error}'))
                continue
            timings = RequestTimings(
                queue_wait_ms=(began - job.received) * 1000.0, preprocess_ms=preprocess_ms,
                inference_ms=inference_ms,
                postprocess_ms=(self.clock() - post_started) * 1000.0)
            out.answers.append(Answer(request.robot, request.session_id, request.request_id,
                                      self.spec.action_joints, self.step_period, capture_ns,
                                      positions, '', timings, len(batch), request.sent_ns))
        return out

    def finish(self, computed: Computed) -> List[Answer]:
        """Book what :meth:`compute` found; return the answers to publish, errors first.

        Frames that failed to decode are marked bad in their buffers and their requests go
        back to the head of their queues (they select again, or time out as ``unusable
        observation``); one whose queue filled up meanwhile is answered as pushed out.
        """
        for robot, stream, sample, error in computed.rejected:
            self.buffers[robot][stream].mark_bad(sample, str(error))
        answers = []
        for job, error in computed.retry:
            pushed_out = self._retry(job, error)
            if pushed_out is not None:
                answers.append(pushed_out)
        for request, category, message in computed.failed:
            self.stats.failed(category, message)
            answers.append(self._error(request, message))
        if computed.batch_size:
            self.stats.batch(computed.batch_size)
        for answer in computed.answers:
            self.stats.served(answer.timings)
        return answers + computed.answers

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

    def _retry(self, job: Job, error: InputError) -> Optional[Answer]:
        """Put a job back after a frame failed to decode; it selects again or times out.

        It goes back at the head of its session's queue, unless the queue filled up meanwhile
        (newer requests came): then it is answered as pushed out, and that answer returned.
        """
        self.stats.count('retried')
        job.last_error = str(error)
        session_id = job.request.session_id
        if session_id not in self._queue_bound:   # released meanwhile
            self.stats.count('superseded')
            return self._error(job.request, f'{SESSION_RELEASED}: session {session_id} was '
                                            f'released before request '
                                            f'{job.request.request_id} was served',
                               session_refused=True)
        bound = self._queue_bound[session_id]
        queue = self._pending.setdefault(session_id, collections.deque())
        if len(queue) < bound:
            queue.appendleft(job)
            return None
        if not queue:
            del self._pending[session_id]
        return self._pushed_out(job.request, bound, None)

    # ---- observability ------------------------------------------------------------------

    def rejected_samples(self) -> Dict[str, Tuple[int, str]]:
        """Per ``robot/stream`` with rejections: (count, last reason)."""
        out = {}
        for robot, buffers in self.buffers.items():
            for name, buffer in buffers.items():
                if buffer.rejected:
                    key = f'{robot}/{name}' if robot else name
                    out[key] = (buffer.rejected, buffer.last_error)
        return out

    def summary(self) -> Optional[str]:
        """Return the activity summary since the last call, or None when idle and alone."""
        window = self.stats.window()
        totals = dict(self.stats.totals)
        failures = dict(self.stats.failures)
        last_failure = self.stats.last_failure
        clients = len(self.sessions)
        if not clients and not window['requests']:
            return None
        text = (f'{clients}/{self.settings.max_clients} client(s); last period: '
                f'{window["requests"]:.0f} requests, {window["served"]:.0f} served, '
                f'{window["failed"]:.0f} failed, {window["refused"]:.0f} refused, '
                f'{window["superseded"]:.0f} superseded, {window["batches"]:.0f} forward '
                f'passes')
        if window['repeated']:
            text += f' ({window["repeated"]:.0f} of the requests repeats)'
        if window['served']:
            text += (f'; ms p50/max: queue {window["queue_wait_ms_p50"]:.1f}/'
                     f'{window["queue_wait_ms_max"]:.1f}, pre '
                     f'{window["preprocess_ms_p50"]:.1f}/{window["preprocess_ms_max"]:.1f}, '
                     f'inference {window["inference_ms_p50"]:.1f}/'
                     f'{window["inference_ms_max"]:.1f}, post '
                     f'{window["postprocess_ms_p50"]:.1f}/{window["postprocess_ms_max"]:.1f}')
        text += (f'; totals: {totals["served"]} served, {totals["failed"]} failed, '
                 f'largest batch {totals["largest_batch"]}')
        if failures:
            text += (f' (failures: {", ".join(f"{k} {v}" for k, v in sorted(failures.items()))}'
                     f'; last: {last_failure})')
        rejected = self.rejected_samples()
        if rejected:
            text += '; rejected samples: ' + ', '.join(
                f'{key} {count} (last: {why})' for key, (count, why) in sorted(rejected.items()))
        return text
