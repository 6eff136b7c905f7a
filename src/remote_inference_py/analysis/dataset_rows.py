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
The rows of a LeRobot dataset from a run's messages: one pure module (no ROS, no LeRobot).

Both the live recorder (:mod:`.dataset_record`, fed by topics) and ``analyze BAG --dataset``
(:mod:`.dataset_bag`, fed by a recorded bag) hand the same messages, in the order they were
received, to a :class:`RowBuilder`; it returns :class:`Row` and :class:`EpisodeEnd` events
that :mod:`.dataset_writer` writes through LeRobot's ``LeRobotDataset``. The same run gives
the same rows either way, but for rows written before a sample they would have used came
(a stream more than a second behind the commands at one of the two readers): those are
counted as ``late_observation`` and the first is named.

What a row is (the decisions, also in docs/recording.md):

- One row per control tick that **dispatched** a planned target: a ``joint_commands`` message
  whose executor state (the ``executor/status`` published with or after that tick, at most
  half a tick later) is RUNNING; or one that followed the human on the leader arm: the
  status says ``driver`` human and no ``leader_fault`` (the executor is WAITING for the
  policy meanwhile, its plan drained). Held and starved ticks (WAITING: the first wait, a starved
  buffer, a query's hold) and the return home (STOPPING) are left out, not marked: in
  ``lerobot-record`` every frame is an observation and the action the policy chose for it;
  a held tick is the executor's decision, not the policy's, and a policy trained on it learns
  to stand still. Their counts are diagnostics (the log), not dataset columns. A tick the
  follower held because the leader failed is left out likewise.
- ``intervention`` (bool, shape (1,)): True on a frame the human on the leader arm drove,
  False on one the policy drove, for DAgger-style fine-tuning (LeRobot's HIL-SERL records
  who acted the same way). A dataset recorded before this feature existed is appended to as
  before: without the column, and without the human's frames.
- ``action``: the target dispatched at that tick, converted from radians to the policy's
  units and order (:class:`~remote_inference_py.robot.units.JointConverter`).
- ``observation.state`` (each state feature the policy declares): the newest ``joint_states``
  captured at or before the tick, in the feature's semantics and order.
- ``observation.images.<camera>``: the newest frame of that camera captured at or before the
  tick, at the size the camera published it (what ``lerobot-record`` stores; the server
  resizes to the policy's input). Every camera the hardware declares is recorded, also one
  the served policy does not consume (``lerobot-record`` records every camera of the robot;
  a policy trained on the dataset may use them): the scripted expert of the demo reads the
  simulated cube pose, yet its dataset holds the front camera.
- ``task``: the task of the request whose chunk drove the tick (a chunk answers one request,
  which carries its task). The executor's status names that request
  (``dispatched_request_id``) and is published at the tick a new chunk first drives, so after
  a subtask answer the label changes at that tick, not when the answer arrives; a chunk the
  executor dropped, or replaced before it drove, labels nothing. From an executor older than
  that field: the last chunk received before the command. Before any chunk of a known
  request, the latched ``executor/task``.
- Episodes: one per start -> stop. An episode begins at the first dispatched tick after the
  executor was READY, STOPPED or FAULT (or after the recorder ended one) and ends when it
  leaves RUNNING/WAITING for STOPPING, STOPPED or FAULT, or when a camera has sent nothing
  while the executor dispatched ``camera_timeout_s`` of ticks (the camera is named; no new
  episode starts before the next start).
  The operator may also cut the run into episodes while it goes on, as ``lerobot-record``'s
  episode and reset periods do (:meth:`RowBuilder.operator`; the recorder's
  ``dataset/end_episode`` and ``dataset/start_episode`` services): *end* closes the episode at
  the first tick at or after its stamp and records nothing until *start* (the reset: the
  operator puts the scene back); *start* begins the next episode at the first tick at or after
  its stamp, closing an open one there (no reset).
- Privileged features (simulator ground truth, such as the cube pose) are not recorded: a
  real robot has no such observation.

Column names follow ``lerobot-record`` for a robot's joints: ``<joint>.pos``.
"""

import bisect
import collections
import dataclasses
import io
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.robot.units import JointConverter
from remote_inference_py.transport.values import stamp_ns

JOINT_SUFFIX = '.pos'
INTERVENTION = 'intervention'
HUMAN = 'human'   # ExecutorStatus.driver while the human on the leader arm drives
# Executor states (ExecutorStatus.state_name).
RUNNING = 'RUNNING'
WAITING = 'WAITING'
IN_RUN = (RUNNING, WAITING)
ENDED = ('STOPPING', 'STOPPED', 'FAULT')
CAMERA_TOPIC = re.compile(r'^/?(?:.*/)?cameras/([A-Za-z0-9_]+)/image_raw(?:/[a-z]+)?$')
SETTLE_TICKS = 8   # a tick waits at least this long for a later sample of every stream
KEEP_MARGIN_NS = 500_000_000   # samples kept beyond the settle window, for the oldest tick


class _Status(NamedTuple):
    """An executor status as the rows need it."""

    stamp: int
    state: str
    message: str
    human: bool          # the human on the leader arm drove
    session_id: str
    request_id: int      # dispatched_request_id (0: not named)


class SchemaError(ValueError):
    """The served policy's features cannot be recorded; the message names the feature."""


@dataclasses.dataclass(frozen=True)
class StateFeature:
    """A joint-vector feature: dataset key, joints in order, their semantics."""

    key: str
    joints: Tuple[str, ...]
    semantics: str


@dataclasses.dataclass(frozen=True)
class CameraFeature:
    """A camera recorded as video: camera name, dataset key, (height, width, 3)."""

    camera: str
    key: str
    shape: Tuple[int, int, int]


@dataclasses.dataclass(frozen=True)
class Schema:
    """What a dataset holds: fps, robot type, state, cameras, action."""

    fps: int
    robot_type: str
    states: Tuple[StateFeature, ...]
    cameras: Tuple[CameraFeature, ...]
    action_joints: Tuple[str, ...]
    action_semantics: str
    intervention: bool = True   # the per-frame ``intervention`` column (see the docstring)

    def features(self) -> dict:
        """Return LeRobot's ``features`` dictionary (``LeRobotDataset.create``)."""
        features = {}
        for state in self.states:
            features[state.key] = {'dtype': 'float32', 'shape': (len(state.joints),),
                                   'names': [j + JOINT_SUFFIX for j in state.joints]}
        for camera in self.cameras:
            features[camera.key] = {'dtype': 'video', 'shape': tuple(camera.shape),
                                    'names': ['height', 'width', 'channels']}
        features['action'] = {'dtype': 'float32', 'shape': (len(self.action_joints),),
                              'names': [j + JOINT_SUFFIX for j in self.action_joints]}
        if self.intervention:
            features[INTERVENTION] = {'dtype': 'bool', 'shape': (1,), 'names': None}
        return features


def camera_name(feature_name: str, topic: str = '') -> str:
    """Return the camera of an image feature: from its topic, else the name's last part."""
    match = CAMERA_TOPIC.match(topic or '')
    if match:
        return match.group(1)
    return feature_name.rsplit('.', 1)[-1]


def integer_fps(fps: float) -> int:
    """Return ``fps`` as the integer LeRobot datasets need; SchemaError when it is not one."""
    if not fps or fps <= 0 or abs(fps - round(fps)) > 1e-6:
        raise SchemaError(f'fps {fps!r}: a LeRobot dataset needs a whole number of frames per '
                          'second (the executor fps)')
    return int(round(fps))


def schema_from_capabilities(features, action_names: Sequence[str], semantics: str,
                             fps: float, robot_type: str,
                             camera_shapes: Optional[Dict[str, Sequence[int]]] = None,
                             notes: Optional[List[str]] = None) -> Schema:
    """
    Build the schema from what the policy server declares (GetCapabilities).

    ``features`` are ObservationFeature-like objects (name, shape, kind, names, semantics,
    topic). ``camera_shapes`` maps a camera name to the (height, width, channels) the camera
    publishes (``hardware/info``); a camera not in it is recorded at the policy's shape, and
    a colour camera in it that the policy does not consume is recorded too.
    Features left out are described in ``notes``.
    """
    notes = notes if notes is not None else []
    camera_shapes = camera_shapes or {}
    states, cameras = [], []
    for feature in features:
        kind = feature.kind
        if kind == 'state':
            joints = tuple(feature.names)
            if not joints:
                raise SchemaError(f'state feature {feature.name!r} declares no joint names')
            JointConverter(feature.semantics or semantics, joints)   # names checked here
            states.append(StateFeature(feature.name, joints, feature.semantics or semantics))
        elif kind == 'rgb':
            camera = camera_name(feature.name, getattr(feature, 'topic', ''))
            shape = tuple(int(v) for v in camera_shapes.get(camera, feature.shape))
            if len(shape) != 3 or shape[2] != 3:
                raise SchemaError(f'image feature {feature.name!r}: shape {shape} is not '
                                  '(height, width, 3)')
            cameras.append(CameraFeature(camera, feature.name, shape))
        else:
            notes.append(f'{feature.name!r} ({kind}) is not recorded: '
                         + ('simulator ground truth, which a real robot does not observe'
                            if kind == 'privileged' else 'only state and rgb features are'))
    recorded = {c.camera for c in cameras}
    for camera, shape in sorted(camera_shapes.items()):
        shape = tuple(int(v) for v in shape)
        if camera not in recorded and len(shape) == 3 and shape[2] == 3:
            cameras.append(CameraFeature(camera, f'observation.images.{camera}', shape))
    if not action_names:
        raise SchemaError('the policy declares no action names')
    JointConverter(semantics, tuple(action_names))
    return Schema(integer_fps(fps), robot_type, tuple(states), tuple(cameras),
                  tuple(action_names), semantics)


@dataclasses.dataclass
class Row:
    """One dataset frame: the tick's stamp and LeRobot's frame dictionary."""

    stamp_ns: int
    frame: dict
    image_stamps: Dict[str, int]


@dataclasses.dataclass
class EpisodeEnd:
    """The current episode ends here; ``reason`` says why (stop, fault, camera lost)."""

    stamp_ns: int
    reason: str
    error: bool = False


class _Stream:
    """The last samples of one stream, by capture stamp."""

    def __init__(self, keep_ns: int):
        """Keep the samples captured within ``keep_ns`` of the newest (and the newest)."""
        self.keep_ns = keep_ns
        self.stamps: List[int] = []
        self.values: list = []
        self.pruned: Optional[int] = None    # the stamp of the newest sample let go

    def add(self, stamp_ns: int, value) -> None:
        if self.stamps and stamp_ns < self.stamps[-1]:
            index = bisect.bisect_right(self.stamps, stamp_ns)
            self.stamps.insert(index, stamp_ns)
            self.values.insert(index, value)
        else:
            self.stamps.append(stamp_ns)
            self.values.append(value)
        while len(self.stamps) > 1 and self.stamps[0] < self.stamps[-1] - self.keep_ns:
            self.pruned = self.stamps[0]
            del self.stamps[0], self.values[0]

    def at(self, stamp_ns: int):
        """Return (stamp, value) of the newest sample at or before ``stamp_ns``, or None."""
        index = bisect.bisect_right(self.stamps, stamp_ns)
        return None if index == 0 else (self.stamps[index - 1], self.values[index - 1])

    def stamp_at(self, stamp_ns: int) -> Optional[int]:
        """Return the stamp of the newest sample at or before ``stamp_ns``, kept or not."""
        index = bisect.bisect_right(self.stamps, stamp_ns)
        if index:
            return self.stamps[index - 1]
        if self.pruned is not None and self.pruned <= stamp_ns:
            return self.pruned
        return None


class RowBuilder:
    """Turn a run's messages, in arrival order, into dataset rows and episode ends."""

    def __init__(self, schema: Schema, calibration=None, camera_timeout_s: float = 1.0):
        """Bind the schema and the arm calibration (for semantics that need one)."""
        self.schema = schema
        self.period_ns = int(round(1e9 / schema.fps))
        self.camera_timeout_ns = int(camera_timeout_s * 1e9)
        # A camera is lost once the executor dispatched camera_timeout_s of ticks with no frame
        # of it: counted in ticks, not by the frame's age, so a host that paused every process
        # at once (a loaded machine froze them all for over a second: the executor skips the
        # ticks it missed) does not end the episode.
        self.camera_timeout_ticks = max(1, round(camera_timeout_s * schema.fps))
        self._recent_ticks = collections.deque(maxlen=self.camera_timeout_ticks + 1)
        # A late sample (a busy host delivers 640x480 frames late) must not be judged missing
        # before it could have come: a tick waits up to the camera timeout for one.
        self.settle_ns = max(SETTLE_TICKS * self.period_ns, self.camera_timeout_ns)
        self._state_conv = {s.key: JointConverter(s.semantics, s.joints, calibration)
                            for s in schema.states}
        self._action_conv = JointConverter(schema.action_semantics, schema.action_joints,
                                           calibration)
        self._joints_needed = sorted({j for s in schema.states for j in s.joints})
        keep = self.settle_ns + KEEP_MARGIN_NS
        self._joint_states = _Stream(keep)
        self._images = {c.camera: _Stream(keep) for c in schema.cameras}
        self._shapes = {c.camera: tuple(c.shape) for c in schema.cameras}
        self._statuses: List[_Status] = []   # by stamp
        self._pending: List[Tuple[int, np.ndarray, str]] = []
        self._request_tasks: Dict[Tuple[str, int], str] = {}
        self._latched_task = ''
        self._chunk_task: Optional[str] = None
        self._latest_ns = 0
        self.in_episode = False
        self._blocked = ''            # why no episode may start before the next start
        self._marks: List[Tuple[int, bool]] = []   # the operator's (stamp, record from then)
        self._recording = True
        self.notes: List[str] = []    # what was not recorded and why, for the log
        self.counts = {'rows': 0, 'held_or_starved': 0, 'returning': 0, 'outside_run': 0,
                       'no_observation': 0, 'stale_observation': 0, 'episodes': 0,
                       'intervention': 0, 'human_left_out': 0, 'between_episodes': 0,
                       'late_observation': 0}
        # The rows written lately: [tick stamp, {stream: the sample's stamp}, came late].
        self._written: collections.deque = collections.deque()
        self.state_names = tuple(j for s in schema.states for j in s.joints)

    # ---- messages in --------------------------------------------------------------------

    def joint_state(self, stamp_ns: int, names: Sequence[str], positions: Sequence[float]):
        """Note a ``joint_states`` message (capture stamp, names, radians)."""
        index = {n: i for i, n in enumerate(names)}
        if any(j not in index for j in self._joints_needed):
            return []
        self._late('joint_states', stamp_ns)
        self._joint_states.add(stamp_ns, {j: float(positions[index[j]])
                                          for j in self._joints_needed})
        return []

    def image(self, camera: str, stamp_ns: int, frame) -> list:
        """Note a camera frame (RGB uint8 array, or anything :meth:`Row` users decode)."""
        stream = self._images.get(camera)
        if stream is None:
            return []
        shape = self._shapes[camera]
        if tuple(getattr(frame, 'shape', shape)) != shape:
            note = (f'camera {camera!r} published a {tuple(frame.shape)} frame; the dataset '
                    f'records {shape}: frame left out')
            if note not in self.notes:
                self.notes.append(note)
            return []
        self._late(f'camera {camera!r}', stamp_ns)
        stream.add(stamp_ns, frame)
        return []

    def request(self, session_id: str, request_id: int, task: str) -> list:
        """Note a request: the task its chunk will carry."""
        self._request_tasks[(session_id, int(request_id))] = task
        return []

    def chunk(self, session_id: str, request_id: int, error: str = '') -> list:
        """Note a chunk received: ticks after it are driven by it (its request's task)."""
        if not error:
            task = self._request_tasks.get((session_id, int(request_id)))
            if task is not None:
                self._chunk_task = task
        return []

    def task(self, text: str) -> list:
        """Note the latched ``executor/task`` (used before any chunk of a known request)."""
        self._latched_task = text
        return []

    def operator(self, stamp_ns: int, start: bool) -> None:
        """Note the operator's *start* (True) or *end* (False) of an episode at ``stamp_ns``."""
        index = bisect.bisect_right([m[0] for m in self._marks], stamp_ns)
        self._marks.insert(index, (stamp_ns, start))

    def status(self, stamp_ns: int, state_name: str, message: str = '', driver: str = '',
               leader_fault: str = '', session_id: str = '',
               dispatched_request_id: int = 0) -> list:
        """Note an executor status; resolve the ticks it settles.

        ``driver``, ``leader_fault``, ``session_id`` and ``dispatched_request_id`` are
        ExecutorStatus's ('' and 0 from an older executor: the policy drives, the chunk is
        not named). A tick under ``driver`` human with no ``leader_fault`` followed the human
        on the leader arm.
        """
        human = driver == HUMAN and not leader_fault
        index = bisect.bisect_right([s.stamp for s in self._statuses], stamp_ns)
        self._statuses.insert(index, _Status(stamp_ns, state_name, message, human, session_id,
                                             int(dispatched_request_id)))
        return self._advance(stamp_ns)

    def command(self, stamp_ns: int, names: Sequence[str], positions: Sequence[float]):
        """Note a ``joint_commands`` message (one tick); return the events it settles."""
        index = {n: i for i, n in enumerate(names)}
        missing = [j for j in self.schema.action_joints if j not in index]
        if missing:
            raise SchemaError(f'joint_commands lacks joint {missing[0]!r} of the action')
        si = np.array([positions[index[j]] for j in self.schema.action_joints], dtype=float)
        task = self._chunk_task if self._chunk_task is not None else self._latched_task
        self._pending.append((stamp_ns, si, task))
        return self._advance(stamp_ns)

    def finish(self, reason: str = 'the recording ended') -> list:
        """Resolve every pending tick and end an open episode."""
        events = self._resolve(lambda stamp: True)
        if self.in_episode:
            events.append(self._end(self._latest_ns, reason))
        return events

    def _late(self, what: str, stamp_ns: int) -> None:
        """Count the rows written before a sample of `what` they would have used came.

        A tick waits for its samples until settle_ns of later ticks came (a stream that
        stalled must not hold the rows forever); a sample later than that comes after its
        rows were written, with the sample before it. Such rows (``late_observation``) are the
        only ones a live recorder and a bag of the same run may disagree on, as each saw the
        messages in its own order; the note says how late the first was.
        """
        rows = [w for w in self._written if w[0] >= stamp_ns and w[1].get(what, stamp_ns)
                < stamp_ns]
        for written in rows:
            self.counts['late_observation'] += not written[2]
            written[2] = True
        if rows and not any(note.startswith(f'{what}: a sample came') for note in self.notes):
            self.notes.append(
                f'{what}: a sample came {(self._latest_ns - stamp_ns) / 1e9:.2f} s behind the '
                f'commands, after the {len(rows)} rows it belonged to were written (they hold '
                f'the sample before it; a tick waits {self.settle_ns / 1e9:.2f} s)')

    # ---- resolution ---------------------------------------------------------------------

    def _advance(self, stamp_ns: int) -> list:
        self._latest_ns = max(self._latest_ns, stamp_ns)
        # A tick is settled once every stream has a sample captured after it (then its
        # newest sample at or before the tick is final, whatever order the messages arrived
        # in: a live recorder and a bag of the same run agree), or settle_ns later on the
        # commands' clock (a stream that stalled).
        horizon = self._latest_ns - self.settle_ns
        return self._resolve(lambda stamp: stamp <= horizon or self._settled(stamp))

    def _settled(self, stamp_ns: int) -> bool:
        streams = [self._joint_states] if self.schema.states else []
        streams += list(self._images.values())
        if any(not s.stamps or s.stamps[-1] <= stamp_ns for s in streams):
            return False
        return bool(self._statuses) and self._statuses[-1].stamp > stamp_ns + self.period_ns // 2

    def _state_at(self, stamp_ns: int) -> _Status:
        limit = stamp_ns + self.period_ns // 2
        index = bisect.bisect_right([s.stamp for s in self._statuses], limit)
        if index == 0:
            return _Status(0, '', '', False, '', 0)
        if index > 64:   # keep the status list short: older ones are never asked again
            del self._statuses[:index - 64]
            index = 64
        return self._statuses[index - 1]

    def _resolve(self, ready) -> list:
        events = []
        while self._pending and ready(self._pending[0][0]):
            stamp, si, task = self._pending.pop(0)
            self._recent_ticks.append(stamp)
            events += self._tick(stamp, si, task)
        return events

    def _tick(self, stamp: int, si: np.ndarray, task: str) -> list:
        events = []
        while self._marks and self._marks[0][0] <= stamp:
            _, self._recording = self._marks.pop(0)
            if self.in_episode:
                events.append(self._end(stamp, 'the operator started the next episode'
                                        if self._recording else 'the operator ended it'))
            if self._recording:
                self._blocked = ''   # the operator's start: a new episode may begin
        if not self._recording:
            self.counts['between_episodes'] += 1
            return events
        return events + self._row(stamp, si, task)

    def _row(self, stamp: int, si: np.ndarray, task: str) -> list:
        status = self._state_at(stamp)
        state, message = status.state, status.message
        human = status.human and state in IN_RUN
        if human and not self.schema.intervention:
            self.counts['human_left_out'] += 1   # a dataset without the column: as before
            return []
        if state != RUNNING and not human:
            if state in ENDED or state not in IN_RUN:
                self._blocked = ''
                self.counts['returning' if state == 'STOPPING' else 'outside_run'] += 1
                if self.in_episode:
                    return [self._end(stamp, f'the executor is {state or "not running"}'
                                      + (f': {message}' if message else ''))]
            else:
                self.counts['held_or_starved'] += 1
            return []
        if self._blocked:
            self.counts['outside_run'] += 1
            return []
        frame = {}
        joints = self._joint_states.at(stamp)
        if joints is None and self.schema.states:
            return self._no_observation(stamp, 'joint_states', self._joint_states)
        for state_feature in self.schema.states:
            values = np.array([joints[1][j] for j in state_feature.joints])
            frame[state_feature.key] = self._state_conv[state_feature.key].to_policy(
                values).astype(np.float32)
        image_stamps = {}
        for camera in self.schema.cameras:
            stream = self._images[camera.camera]
            last = stream.stamp_at(stamp)
            ticks = self._ticks_since(last)
            if ticks > self.camera_timeout_ticks:
                if not self.in_episode:   # not started yet, or late: no episode begins yet
                    return self._no_observation(stamp, f'camera {camera.camera!r}', stream,
                                                'no frame within camera_timeout_s')
                age = 'no frame yet' if last is None else \
                    f'no frame in {ticks} ticks ({(stamp - last) / 1e9:.2f} s)'
                self._blocked = f'camera {camera.camera!r} lost: {age}'
                return [self._end(stamp, self._blocked, error=True)]
            sample = stream.at(stamp)
            if sample is None:   # its frame was let go: every process paused longer than kept
                return self._no_observation(stamp, f'camera {camera.camera!r}', stream,
                                            'its frame was let go')
            frame[camera.key] = sample[1]
            image_stamps[camera.key] = sample[0]
        frame['action'] = self._action_conv.to_policy(si).astype(np.float32)
        if self.schema.intervention:
            frame[INTERVENTION] = np.array([human], dtype=bool)
            self.counts['intervention'] += int(human)
        frame['task'] = self._request_tasks.get((status.session_id, status.request_id), task)
        events = []
        if not self.in_episode:
            self.in_episode = True
            self.counts['episodes'] += 1
        self.counts['rows'] += 1
        events.append(Row(stamp, frame, image_stamps))
        used = {f'camera {c.camera!r}': image_stamps[c.key] for c in self.schema.cameras}
        if self.schema.states:
            used['joint_states'] = joints[0]
        self._written.append([stamp, used, False])
        while self._written[0][0] < stamp - self.settle_ns - KEEP_MARGIN_NS:
            self._written.popleft()
        return events

    def _no_observation(self, stamp: int, what: str, stream: _Stream, why: str = '') -> list:
        """Count a tick left out for a missing observation; note the first of each kind.

        ``no_observation``: nothing of the stream was captured at or before the tick (the
        run began before its first sample). ``stale_observation``: the newest sample is older
        than a row may use (a camera's gap, or a host that paused every process longer than
        samples are kept). The note names the stream and its samples around the tick (stamps
        relative to it), so a row left out says what had not come.
        """
        before = stream.stamp_at(stamp)
        self.counts['no_observation' if before is None else 'stale_observation'] += 1
        why = why or ('nothing captured at or before it' if before is None
                      else 'its sample was let go')
        if not any(note.startswith(f'{what}: ') for note in self.notes):
            after = stream.stamps[bisect.bisect_right(stream.stamps, stamp):][:1]
            around = ', '.join(f'{label} {(value - stamp) / 1e6:+.1f} ms' for label, value in (
                ('newest before', before), ('next', after[0] if after else None))
                if value is not None) or 'no sample yet'
            self.notes.append(f'{what}: a tick left out ({why}; {around} of the tick; '
                              f'{self.counts["rows"]} rows recorded before it)')
        return []

    def _ticks_since(self, stamp_ns: Optional[int]) -> int:
        """Return how many of the recent ticks (this one included) came after ``stamp_ns``.

        None (nothing yet) counts as more than the camera timeout.
        """
        if stamp_ns is None:
            return self.camera_timeout_ticks + 1
        ticks = list(self._recent_ticks)
        return len(ticks) - bisect.bisect_right(ticks, stamp_ns)

    def _end(self, stamp: int, reason: str, error: bool = False) -> EpisodeEnd:
        self.in_episode = False
        return EpisodeEnd(stamp, reason, error)


# ---- messages (rclpy or rosbags: the same fields) -------------------------------------

def image_array(msg, compressed):
    """Return an RGB uint8 (h, w, 3) array of a raw or compressed image message."""
    if compressed:
        from PIL import Image
        with Image.open(io.BytesIO(bytes(msg.data))) as image:
            return np.asarray(image.convert('RGB'))
    data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    frame = data.reshape(msg.height, msg.step)[:, :msg.width * 3].reshape(
        msg.height, msg.width, 3)
    if msg.encoding == 'bgr8':
        return frame[..., ::-1].copy()
    if msg.encoding != 'rgb8':
        raise SchemaError(f'camera frames of encoding {msg.encoding!r} cannot be recorded '
                          '(rgb8 or bgr8)')
    return frame.copy()


def feed(builder, topic, msg):
    """Hand one message to ``builder``; return the events it settles."""
    if topic == '/joint_commands':
        return builder.command(stamp_ns(msg.header.stamp), list(msg.name), list(msg.position))
    if topic == '/joint_states':
        return builder.joint_state(stamp_ns(msg.header.stamp), list(msg.name), list(msg.position))
    if topic == '/executor/status':
        return builder.status(stamp_ns(msg.header.stamp), msg.state_name, msg.message,
                              getattr(msg, 'driver', ''), getattr(msg, 'leader_fault', ''),
                              getattr(msg, 'session_id', ''),
                              getattr(msg, 'dispatched_request_id', 0))
    if topic == '/executor/task':
        return builder.task(msg.data)
    if topic == '/dataset/episodes':
        builder.operator(stamp_ns(msg.stamp), msg.frame_id == 'start')
        return []
    if topic == '/policy/request':
        return builder.request(msg.session_id, msg.request_id, msg.task)
    if topic == '/policy/chunk':
        return builder.chunk(msg.session_id, msg.request_id, msg.error)
    return []
