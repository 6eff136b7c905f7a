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

The node hands it samples, admissions and requests from its subscription callbacks (each call
returns in microseconds) and runs a worker thread that loops over :meth:`next_work` and
:meth:`serve`, publishing the answers::

    core = PolicyServerCore(ServerConfig(deployment='so101'), runtime)
    core.on_joint_states('', stamp_ns, names, positions)       # subscription callbacks
    result = core.admit('', admit_request)
    core.on_request('', Request('', result.session_id, 1, earliest_ns))
    answers = core.serve(core.next_work(timeout=0.5))          # worker thread

Requests wait in a queue per session and are served one at a time in request order: the
second waits until the first has been taken into a forward pass (an executor that keeps
several requests in flight staggers them, and an older prediction must never arrive after a
newer one). The queue holds as many requests as the client said it keeps in flight at
admission (at most ``max_requests_per_client``, the contract's ``max_requests_in_flight``); a
request beyond that drops the oldest one not started (counted as superseded: its client had
given up on it). With one request in flight this is a latest-wins slot. Each request's
observation is selected when it is served, from its own earliest capture stamp. A request
is ready when every stream has a sample captured at or after its earliest capture stamp; it
waits up to ``observation_wait_s`` for one and is then answered with an error naming the
missing stream, headed by its kind: ``stale observation`` (a stream's newest sample was
captured before the earliest capture stamp: a camera that stalled or was unplugged),
``missing observation`` (a stream has delivered nothing usable yet) or ``unusable
observation`` (samples failed to decode).
Ready requests of different sessions are batched into one forward pass, up to
``max_batch_size`` and what the runtime declares; the rest wait for the next pass.

A request may carry the executor's committed plan (rtc merge, docs/design.md section 11). For a
runtime that supports it (``supports_prefix``), :meth:`PolicyServerCore.prefix_for` shifts the
plan to the capture of the observation actually used, converts it to the policy's normalized
units and hands it to ``infer``; other runtimes never see it (admission refuses rtc for them).

``extra_compute_s`` keeps the worker busy that much longer per forward pass (a slower model:
requests queue behind it). ``extra_latency_s`` is not the core's: the node holds each answer
back that long after it is computed (a link or a remote queue: the worker goes on serving).
"""

import collections
import dataclasses
import threading
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


@dataclasses.dataclass
class Work:
    """What the worker does next: ready requests (batched) and requests that failed."""

    ready: List[Tuple[Job, Selection]] = dataclasses.field(default_factory=list)
    failed: List[Tuple[Job, str, str]] = dataclasses.field(default_factory=list)

    def __bool__(self) -> bool:
        """Return True when there is something to do."""
        return bool(self.ready or self.failed)


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
        self.sleep = sleep or threading.Event().wait
        self.assembler = ObservationAssembler(spec, calibration, settings.rotate_180)
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
            features=tuple(FeatureDeclaration(f.name, tuple(f.shape), f.dtype, f.kind)
                           for f in spec.features),
            merge_modes=MERGE_MODES if runtime.supports_prefix else PLAIN_MERGE_MODES,
            presence_lease_s=settings.presence_lease_s,
            max_requests_in_flight=settings.max_requests_per_client)
        self.sessions = SessionTable(settings.max_clients, clock)
        self.stats = ActivityStats()
        # Per session: its requests not started yet, oldest first (never empty), and how many
        # it may queue (what it keeps in flight).
        self._pending: Dict[str, collections.deque] = {}
        self._queue_bound: Dict[str, int] = {}
        self._late_rejections: List[Tuple[str, str, InputError]] = []
        self._cond = threading.Condition()
        self._stopped = False
        # False when the caller serves ready requests itself as samples arrive (inline): the
        # worker then wakes only for new requests and deadlines, instead of racing the
        # caller for the GIL and the job on every sample.
        self.wake_worker_on_samples = True

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
        settings = dataclasses.replace(self.settings, **changes)
        with self._cond:
            self.settings = settings
            self._cond.notify_all()
        return settings

    # ---- admission ----------------------------------------------------------------------

    def admit(self, robot: str, request: AdmitRequest) -> AdmitResult:
        """Check the request against the contract and admit it if a slot is free."""
        problems = check_admission(self.contract, request)
        with self._cond:
            result = self.sessions.admit(robot, request.client_name,
                                         self.settings.idle_timeout_s, problems)
            for session_id in result.released:
                self._pending.pop(session_id, None)
                self._queue_bound.pop(session_id, None)
            if result.success:
                self._queue_bound[result.session_id] = max(1, min(
                    request.max_requests_in_flight, self.settings.max_requests_per_client))
        return result

    @property
    def active_clients(self) -> int:
        """Return the number of admitted sessions."""
        return len(self.sessions)

    # ---- samples ------------------------------------------------------------------------

    def _store(self, robot: str, stream: str, make) -> Optional[InputError]:
        buffers = self.buffers.get(robot)
        if buffers is None or stream not in buffers:
            return InputError('unknown_stream', f'no stream {stream!r} for robot {robot!r}')
        try:
            sample = make()
        except InputError as error:
            with self._cond:
                buffers[stream].reject(str(error))
            return error
        with self._cond:
            buffers[stream].add(sample)
            if self._pending and self.wake_worker_on_samples:
                self._cond.notify()
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
        """Queue a request in its session's queue; return an error answer when refused."""
        with self._cond:
            self.stats.count('requests')
            why = self.sessions.touch(request.session_id, request.robot)
            if why is not None:
                self.stats.count('refused')
                return self._error(request, why)
            now = self.clock()
            queue = self._pending.setdefault(request.session_id, collections.deque())
            bound = self._queue_bound.get(request.session_id,
                                          self.settings.max_requests_per_client)
            while len(queue) >= bound:
                queue.popleft()
                self.stats.count('superseded')
            job = Job(request, now, now + self.settings.observation_wait_s)
            if queue and queue[-1].request.request_id > request.request_id:
                queue = collections.deque(sorted([*queue, job], key=_request_order))
                self._pending[request.session_id] = queue
            else:
                queue.append(job)
            self._cond.notify()
        return None

    def refuse(self, request: Request, message: str) -> Answer:
        """Count a request that cannot be served at all; return its error answer."""
        with self._cond:
            self.stats.count('requests')
            self.stats.count('refused')
        return self._error(request, message)

    def _error(self, request: Request, message: str) -> Answer:
        return Answer(request.robot, request.session_id, request.request_id,
                      self.spec.action_joints, self.step_period, error=message,
                      sent_ns=request.sent_ns)

    def pending_count(self) -> int:
        """Return the number of requests waiting for the worker."""
        with self._cond:
            return sum(len(queue) for queue in self._pending.values())

    def wake_worker(self) -> None:
        """Make a waiting next_work look at the pending requests again."""
        with self._cond:
            self._cond.notify()

    def stop(self) -> None:
        """Wake the worker and make next_work return nothing from now on."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    # ---- worker -------------------------------------------------------------------------

    def next_work(self, timeout: float) -> Work:
        """Block until requests are ready or have waited too long (or ``timeout`` passes)."""
        give_up = self.clock() + timeout
        with self._cond:
            while not self._stopped:
                now = self.clock()
                work = Work()
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
                if work:
                    for job in [j for j, _ in work.ready] + [j for j, _, _ in work.failed]:
                        self._start(job, now)
                    return work
                deadlines = [queue[0].deadline for queue in self._pending.values()]
                wake = min(deadlines + [give_up])
                if now >= give_up and wake >= give_up:
                    return work
                self._cond.wait(max(wake - now, 0.0005))
        return Work()

    def _start(self, job: Job, now: float) -> None:
        """Take the head of its session's queue; the next one waits for its observation now."""
        queue = self._pending[job.request.session_id]
        queue.popleft()
        if queue:
            queue[0].deadline = max(queue[0].deadline, now + self.settings.observation_wait_s)
        else:
            del self._pending[job.request.session_id]

    def serve(self, work: Work) -> List[Answer]:
        """Preprocess, run one forward pass and postprocess; return one answer per request."""
        answers = []
        for job, category, message in work.failed:
            answers.append(self._fail(job.request, category, message))
        batch = []   # (job, inputs, preprocess start, preprocess ms)
        for job, selection in work.ready:
            began = self.clock()
            try:
                inputs = self.assembler.build(selection, self.buffers[job.request.robot])
            except InputError as error:
                self._retry(job, error)
                with self._cond:
                    self._late_rejections.append((job.request.robot, error.stream, error))
                continue
            batch.append((job, inputs, selection.capture_stamp_ns, began,
                          (self.clock() - began) * 1000.0))
        if not batch:
            return answers
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
            return answers + [self._fail(item[0].request, 'inference', message)
                              for item in batch]
        compute = self.settings.extra_compute_s
        if compute > 0:
            self.sleep(compute)
        inference_ms = (self.clock() - started) * 1000.0
        with self._cond:
            self.stats.batch(len(batch))
        for index, (job, _, capture_ns, began, preprocess_ms) in enumerate(batch):
            post_started = self.clock()
            request = job.request
            try:
                positions = self.postprocess(raw[index])
            except ValueError as error:
                answers.append(self._fail(request, 'output', f'policy output: {error}'))
                continue
            timings = RequestTimings(
                queue_wait_ms=(began - job.received) * 1000.0, preprocess_ms=preprocess_ms,
                inference_ms=inference_ms,
                postprocess_ms=(self.clock() - post_started) * 1000.0)
            answers.append(Answer(request.robot, request.session_id, request.request_id,
                                  self.spec.action_joints, self.step_period, capture_ns,
                                  positions, '', timings, len(batch), request.sent_ns))
        return answers

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

    def take_late_rejections(self) -> List[Tuple[str, str, InputError]]:
        """Return (robot, stream, error) of frames that failed to decode since the last call."""
        with self._cond:
            out, self._late_rejections = self._late_rejections, []
        return out

    def record_served(self, answer: Answer) -> None:
        """Count an answer that was published (the node adds message-building time first)."""
        with self._cond:
            if answer.error:
                return
            self.stats.served(answer.timings)

    def _retry(self, job: Job, error: InputError) -> None:
        """Put a job back after a frame failed to decode; it selects again or times out.

        It goes back at the head of its session's queue, unless the queue filled up meanwhile
        (newer requests replaced it).
        """
        with self._cond:
            self.stats.count('retried')
            job.last_error = str(error)
            session_id = job.request.session_id
            bound = self._queue_bound.get(session_id, self.settings.max_requests_per_client)
            queue = self._pending.setdefault(session_id, collections.deque())
            if len(queue) < bound:
                queue.appendleft(job)
            self._cond.notify()

    def _fail(self, request: Request, category: str, message: str) -> Answer:
        with self._cond:
            self.stats.failed(category, message)
        return self._error(request, message)

    # ---- observability ------------------------------------------------------------------

    def rejected_samples(self) -> Dict[str, Tuple[int, str]]:
        """Per ``robot/stream`` with rejections: (count, last reason)."""
        out = {}
        with self._cond:
            for robot, buffers in self.buffers.items():
                for name, buffer in buffers.items():
                    if buffer.rejected:
                        key = f'{robot}/{name}' if robot else name
                        out[key] = (buffer.rejected, buffer.last_error)
        return out

    def summary(self) -> Optional[str]:
        """Return the activity summary since the last call, or None when idle and alone."""
        with self._cond:
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
