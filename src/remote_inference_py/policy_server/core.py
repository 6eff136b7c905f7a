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

The core holds no lock and never waits for another thread. Its bookkeeping (every method
but :meth:`compute` and :meth:`build_text`) must be called by one thread at a time: the
node's :class:`.scheduler.Scheduler` makes each such call under its one lock. Samples,
admissions and requests go in (each call returns in microseconds), ready work comes out of
:meth:`take_work`, :meth:`compute` runs the forward pass on it and :meth:`finish` turns the
result into answers::

    core = PolicyServerCore(ServerConfig(deployment='so101'), runtime)
    core.on_joint_states('', stamp_ns, names, positions)       # subscription callbacks
    result = core.admit('', admit_request)
    core.on_request(Request('', result.session_id, 1, earliest_ns))   # []: queued
    answers = core.finish(core.compute(core.take_work()))

:meth:`compute` and :meth:`build_text` (a text query's inputs) touch no bookkeeping: they read
the samples a selection holds and the runtime, and list the frames they find corrupt for
:meth:`finish` or :meth:`mark_rejected` to mark. So the scheduler runs them outside its lock,
while other threads go on calling the bookkeeping: samples, requests and admissions go on
during a forward pass or a text query's decoding (the scheduler runs one forward pass at a
time; :meth:`text_inputs` is a text query's whole selection, for a caller with one thread).
The core never waits: whoever drives it, production, the tests or the simulated-time
evaluation, serves through the scheduler's one loop (:meth:`.scheduler.Scheduler.step`), on
the core's ``clock``.

Every request gets exactly one answer: a chunk, or an error answer whose ``error`` says why.
Requests wait in a queue per session and are served one at a time in request order: the
second waits until the first has been taken into a forward pass (an executor that keeps
several requests in flight staggers them, and an older prediction must never arrive after a
newer one). The queue holds as many requests as the client said it keeps in flight at
admission (at most ``max_requests_per_client``, the contract's ``max_requests_in_flight``); a
request beyond that pushes out the oldest one not started, which :meth:`on_request` returns
answered with an error headed ``superseded`` (one request in flight: a latest-wins slot) or
``dropped from a full queue`` (several), both counted as superseded in the activity line. A
request put back after its frame failed to decode finds its queue full the same way. Each
request's observation is selected when it is served, from its own earliest capture stamp. A
request is ready when every stream has a sample captured at or after its earliest capture
stamp; it waits up to ``observation_wait_s`` for one and is then answered with an error
naming the missing stream, headed by its kind: ``stale observation`` (a stream's newest sample was
captured before the earliest capture stamp: a camera that stalled or was unplugged),
``missing observation`` (a stream has delivered nothing usable yet) or ``unusable
observation`` (samples failed to decode). The requests still waiting for a session that
admission releases are answered ``session released`` (counted as released). That answer,
and the refusal of a request whose session this instance does not serve (never admitted
here, released, or admitted for another robot), are marked ``session_refused``: retrying
cannot change them.
Ready requests of different sessions are batched into one forward pass, up to
``max_batch_size`` and what the runtime declares; the rest wait for the next pass.
A request whose id its session sent recently (among the last :data:`RECENT_REQUEST_IDS`) is
a repeat (the executor repeats its first
request until something of the session comes back, ``executor/first_request.py``): it is
answered with the last published answer again when that answered it (the first copy of the
answer may be what was lost), and not at all when its answer is still to come (counted as
``repeated``).

A request may carry the executor's committed plan (rtc merge, docs/design.md section 11). For a
runtime that supports it (``supports_prefix``), :meth:`.ForwardPass.prefix_for` shifts the
plan to the capture of the observation actually used, converts it to the policy's normalized
units and hands it to ``infer``; other runtimes never see it (admission refuses rtc for them).

The core is the composition of parts that each own one concern and are tested alone (it holds
the sample buffers and decides when a request is ready or has waited too long itself):

- :class:`.clients.SessionTable`: the admitted sessions, ``max_clients``, the idle release;
- :class:`.queues.RequestQueues`: the queue of each session, its bound, push-out, repeats and
  the answers of a released session's waiting requests;
- :class:`.forward.ForwardPass`: the model boundary (inputs, one batched forward pass, the
  committed plan in policy units, chunks in SI radians);
- :class:`.timings.ActivityStats`: the outcome accounting and the activity line.

``extra_compute_s`` keeps the forward pass busy that much longer (a slower model: requests
queue behind it). ``extra_latency_s`` is not the core's: the scheduler holds each answer back
that long after it is computed (a link or a remote queue: serving goes on meanwhile).
"""

import dataclasses
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.contract.check import (
    AdmitRequest, check_admission, FeatureDeclaration, MERGE_MODES, PLAIN_MERGE_MODES,
    ServerContract)
from remote_inference_py.policy_server import images
from remote_inference_py.policy_server.clients import AdmitResult, SessionTable
from remote_inference_py.policy_server.config import LIVE_FIELDS, ServerConfig
from remote_inference_py.policy_server.forward import BadFrames, Computed, ForwardPass, Work
from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.observation import (
    JOINT_STATES, ObservationAssembler, Selection)
from remote_inference_py.policy_server.queues import (  # noqa: F401 - the core's names too
    Answer, ANSWER_KINDS, DROPPED, INFERENCE, Job, OBSERVATION, OUTPUT, PREPROCESSING,
    RECENT_REQUEST_IDS, REFUSED, Request, RequestQueues, SESSION_RELEASED, SUPERSEDED)
from remote_inference_py.policy_server.runtimes import PolicyRuntime
from remote_inference_py.policy_server.text import QueryInputs
from remote_inference_py.policy_server.timings import ActivityStats
from remote_inference_py.robot.calibration import Calibration


STALE_OBSERVATION = 'stale observation'
MISSING_OBSERVATION = 'missing observation'
UNUSABLE_OBSERVATION = 'unusable observation'


class PolicyServerCore:
    """Buffers, admission, request queues, batching and the model boundary (see module doc)."""

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
                                              settings.convert_encodings)
        self.forward = ForwardPass(runtime, self.assembler, settings.chunk_length,
                                   calibration, clock, self.sleep)
        self.chunk_length = self.forward.chunk_length
        self.batch_limit = max(1, min(settings.max_batch_size, runtime.max_batch_size))
        self.step_period = self.forward.step_period
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
        self.queues = RequestQueues(spec.action_joints, self.step_period, self.stats)

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
            answers += self.queues.release(session_id)
        if result.success:
            self.queues.open(result.session_id, max(1, min(
                request.max_requests_in_flight, self.settings.max_requests_per_client)))
        if answers:
            result = dataclasses.replace(result, answers=tuple(answers))
        return result

    @property
    def active_clients(self) -> int:
        """Return the number of admitted sessions."""
        return len(self.sessions)

    def text_inputs(self, robot: str, session_id: str, earliest_ns: int) -> QueryInputs:
        """Return a text query's model inputs, or why there are none (one thread only).

        :meth:`select_text`, then :meth:`build_text` and :meth:`mark_rejected`, in this
        thread (the scheduler runs the build outside its lock).
        """
        selection, refusal = self.select_text(robot, session_id, earliest_ns)
        if selection is None:
            return refusal
        found, rejected = self.build_text(robot, selection)
        self.mark_rejected(rejected)
        return found

    def select_text(self, robot: str, session_id: str, earliest_ns: int
                    ) -> Tuple[Optional[Selection], Optional[QueryInputs]]:
        """Select a text query's observation: (selection, None), or (None, why there is none).

        The observation is selected as a request's is (every stream captured at or after
        ``earliest_ns``); an unknown session or robot is refused by name (``refused``).
        """
        why = self.sessions.touch(session_id, robot)
        if why is not None:
            return None, QueryInputs(why=why, refused=True)
        buffers = self.buffers[robot]
        selection = self.assembler.select(buffers, earliest_ns)
        if selection is None:
            return None, QueryInputs(why=self.assembler.missing(buffers, earliest_ns))
        return selection, None

    def build_text(self, robot: str, selection: Selection) -> Tuple[QueryInputs, list]:
        """Return a selected text query's model inputs and the frames that failed to decode.

        It reads only the selected samples (caching their converted pixels), as
        :meth:`compute` does; the failed frames are for :meth:`mark_rejected`.
        """
        rejected = []
        try:
            inputs = self.assembler.build(selection, BadFrames(robot, rejected))
            for feature in self.spec.features:   # the frames before normalizing, in [0, 1]
                if feature.kind == 'rgb':
                    inputs[feature.name + '.rgb'] = images.to_model_input(
                        selection.samples[feature.name][-1].payload, feature,
                        feature.name in self.assembler.rotate_180)
        except InputError as error:
            return QueryInputs(why=f'{UNUSABLE_OBSERVATION}: {error}'), rejected
        return QueryInputs(inputs, selection.capture_stamp_ns), rejected

    def mark_rejected(self, rejected) -> None:
        """Mark frames that failed to decode bad in their buffers: (robot, stream, sample, why)."""
        for robot, stream, sample, error in rejected:
            self.buffers[robot][stream].mark_bad(sample, str(error))

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

    def on_request(self, request: Request) -> List[Answer]:
        """Queue a request in its session's queue; return the answers to publish now.

        That is this request's refusal (unknown session), the error answers of the older
        requests it pushed out of a full queue, or a repeat's published answer
        (:meth:`.RequestQueues.add`); none when nothing needs saying yet.
        """
        self.stats.count('requests')
        why = self.sessions.touch(request.session_id, request.robot)
        if why is not None:
            self.stats.count('refused')
            return [self.queues.error(request, REFUSED, why, session_refused=True)]
        return self.queues.add(request, self.clock(), self.settings.observation_wait_s,
                               self.settings.max_requests_per_client)

    def answered(self, answer: Answer) -> None:
        """Remember an answer as published: a repeat of its request gets it again."""
        self.queues.answered(answer)

    def refuse(self, request: Request, message: str) -> Answer:
        """Count a request that cannot be served at all; return its error answer."""
        self.stats.count('requests')
        self.stats.count('refused')
        return self.queues.error(request, REFUSED, message)

    def pending_count(self) -> int:
        """Return the number of requests not taken into a forward pass yet."""
        return len(self.queues)

    def next_deadline(self) -> Optional[float]:
        """Return when a waiting request times out next (``clock`` time), or None."""
        return self.queues.next_deadline()

    # ---- serving ------------------------------------------------------------------------

    def take_work(self) -> Work:
        """Take the requests that are ready or have waited too long now (never waits)."""
        work = Work()
        heads = self.queues.heads()
        if not heads:
            return work
        now = self.clock()
        for job in heads:
            buffers = self.buffers[job.request.robot]
            selection = self.assembler.select(buffers, job.request.earliest_ns)
            if job.last_error and now >= job.deadline:
                work.failed.append((job, OBSERVATION, (
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
                work.failed.append((job, OBSERVATION, (
                    f'{name}: no usable observation within observation_wait_s='
                    f'{self.settings.observation_wait_s} s: {missing}')))
        for job in [j for j, _ in work.ready] + [j for j, _, _ in work.failed]:
            self.queues.start(job, now, self.settings.observation_wait_s)
        return work

    def compute(self, work: Work) -> Computed:
        """Preprocess, run one forward pass and postprocess ``work``; change no bookkeeping.

        It reads the samples the work selected (caching their converted pixels) and the
        runtime (:meth:`.ForwardPass.compute`), and touches nothing else of the core, so it
        may run while the core takes samples and requests in another thread; :meth:`finish`
        books what it found.
        """
        return self.forward.compute(work, self.settings.extra_compute_s)

    def finish(self, computed: Computed) -> List[Answer]:
        """Book what :meth:`compute` found; return the answers to publish, errors first.

        Frames that failed to decode are marked bad in their buffers and their requests go
        back to the head of their queues (they select again, or time out as ``unusable
        observation``); one whose queue filled up meanwhile is answered as pushed out.
        """
        self.mark_rejected(computed.rejected)
        answers = []
        for job, error in computed.retry:
            pushed_out = self.queues.put_back(job, error)
            if pushed_out is not None:
                answers.append(pushed_out)
        for request, kind, message in computed.failed:
            self.stats.failed(kind, message)
            answers.append(self.queues.error(request, kind, message))
        if computed.batch_size:
            self.stats.batch(computed.batch_size)
        for answer in computed.answers:
            self.stats.served(answer.timings)
        return answers + computed.answers

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
        return self.stats.summary(len(self.sessions), self.settings.max_clients,
                                  self.rejected_samples())
