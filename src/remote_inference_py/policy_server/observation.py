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
Observation buffers and assembly by name, with no ROS in it.

Each robot has one :class:`StreamBuffer` per input stream: ``joint_states`` and one per image
or privileged feature. A buffer keeps the last few samples, ordered by capture stamp (robot
clock, integer nanoseconds), so a policy that takes several frames gets a short history.

For a request, :meth:`ObservationAssembler.select` picks, per stream, the newest sample
captured at or after the request's earliest capture stamp (``None`` while one is missing:
the server waits briefly for the next frame), plus ``history - 1`` older samples, each the
one closest to a whole number of action periods before it (the oldest is repeated while the
history is still short, as LeRobot fills its observation queue).
:meth:`ObservationAssembler.build` turns the selection into model inputs: the state vector
in the declared joint order and units, images converted by :mod:`.images`, each normalized
as the manifest declares.

The chunk's capture stamp is the *oldest* of the newest samples used (for example the camera
frame when it is older than the joint sample). That is the conservative choice: the
executor treats the chunk as computed from the oldest information in it, so it trims rather
than plays steps the robot may already have passed, and a chunk never looks fresher than the
data behind it.
"""

import bisect
import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.policy_server import images
from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.manifest import PolicySpec
from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.units import JointConverter

JOINT_STATES = 'joint_states'
MAX_NAME_LISTS = 16   # joint name lists whose order joint_sample remembers


@dataclasses.dataclass
class Sample:
    """One received sample: capture stamp [ns, robot clock] and its payload."""

    stamp_ns: int
    payload: Any
    error: str = ''            # set when the sample failed to decode; never used again
    converted: Optional[np.ndarray] = None  # cache of the model input (images)


class StreamBuffer:
    """The last ``capacity`` good samples of one stream, ordered by capture stamp."""

    def __init__(self, name: str, capacity: int):
        """Create an empty buffer for the stream called ``name``."""
        if capacity < 1:
            raise ValueError(f'buffer capacity must be >= 1, got {capacity}')
        self.name = name
        self.capacity = capacity
        self._samples: List[Sample] = []
        self._stamps: List[int] = []
        self.received = 0
        self.rejected = 0
        self.last_error = ''

    def __len__(self) -> int:
        """Return the number of buffered samples."""
        return len(self._samples)

    def add(self, sample: Sample) -> None:
        """Insert a sample in stamp order; drop the oldest beyond capacity and duplicates."""
        self.received += 1
        index = bisect.bisect_right(self._stamps, sample.stamp_ns)
        if index and self._stamps[index - 1] == sample.stamp_ns and \
                not self._samples[index - 1].error:
            return   # the same capture again (e.g. through shared memory and the topic)
        self._stamps.insert(index, sample.stamp_ns)
        self._samples.insert(index, sample)
        if len(self._samples) > self.capacity:
            del self._samples[0]
            del self._stamps[0]

    def reject(self, message: str) -> None:
        """Count a sample that was not stored, remembering why."""
        self.received += 1
        self.rejected += 1
        self.last_error = message

    def mark_bad(self, sample: Sample, message: str) -> None:
        """Exclude a stored sample that failed later (e.g. a corrupt JPEG), counting it."""
        if not sample.error:
            sample.error = message
            self.rejected += 1
            self.last_error = message

    def newest(self) -> Optional[Sample]:
        """Return the newest good sample, or None."""
        for sample in reversed(self._samples):
            if not sample.error:
                return sample
        return None

    def newest_at_or_after(self, earliest_ns: int) -> Optional[Sample]:
        """Return the newest good sample captured at or after ``earliest_ns``, or None."""
        for sample in reversed(self._samples):
            if sample.stamp_ns < earliest_ns:
                return None
            if not sample.error:
                return sample
        return None

    def history(self, anchor: Sample, count: int, period_ns: int) -> List[Sample]:
        """
        Return ``count`` samples ending at ``anchor``, oldest first, about one period apart.

        Sample ``k`` back is the good sample closest to ``anchor - k * period`` among those
        older than the one picked after it; when there is none, that one is repeated.
        """
        picked = [anchor]
        for k in range(1, count):
            ideal = anchor.stamp_ns - k * period_ns
            previous = picked[-1]
            older = [s for s in self._samples if s.stamp_ns < previous.stamp_ns and not s.error]
            picked.append(min(older, key=lambda s: abs(s.stamp_ns - ideal)) if older
                          else previous)
        picked.reverse()
        return picked


@dataclasses.dataclass
class Selection:
    """The samples one request uses: per stream, ``history`` samples oldest first."""

    samples: Dict[str, List[Sample]]

    @property
    def capture_stamp_ns(self) -> int:
        """The oldest of the newest samples used (see the module docstring)."""
        return min(chosen[-1].stamp_ns for chosen in self.samples.values())


class ObservationAssembler:
    """Assemble model inputs for one policy from a robot's stream buffers, by name."""

    def __init__(self, spec: PolicySpec, calibration: Optional[Calibration] = None,
                 rotate_180: Sequence[str] = (), convert_encodings: Sequence[str] = ()):
        """Prepare unit converters and the list of streams the policy needs.

        ``convert_encodings`` (the server's parameter) lets every 3-channel colour feature take
        those encodings too, as the manifest's ``convert_encodings`` does for one feature.
        """
        if convert_encodings:
            spec = dataclasses.replace(spec, features=tuple(
                dataclasses.replace(f, convert_encodings=tuple(dict.fromkeys(
                    (*f.convert_encodings, *convert_encodings))))
                if f.kind == 'rgb' and f.channels == 3 else f for f in spec.features))
        self.spec = spec
        self._said: set = set()            # conversions already announced (see image_sample)
        self.notes: List[str] = []         # conversions to announce once, oldest first
        self.rotate_180 = frozenset(rotate_180)
        unknown = sorted(self.rotate_180 - {f.name for f in spec.features if f.is_image})
        if unknown:
            raise ValueError(f'rotate_180 names {unknown}, which are not image features of the '
                             f'policy ({", ".join(f.name for f in spec.features if f.is_image)})')
        self.period_ns = int(round(1e9 / spec.fps))
        # The joint set of joint_states: every state joint, in first-seen order.
        joints: List[str] = []
        for feature in spec.state_features:
            joints += [j for j in feature.joints if j not in joints]
        self.state_joints: Tuple[str, ...] = tuple(joints)
        self.expected_joints = frozenset(joints) | frozenset(spec.action_joints)
        self._state_index = {f.name: [joints.index(j) for j in f.joints]
                             for f in spec.state_features}
        self._converters = {f.name: JointConverter(f.semantics, f.joints, calibration)
                            for f in spec.state_features}
        self.streams: Tuple[str, ...] = (((JOINT_STATES,) if joints else ())
                                         + tuple(f.name for f in spec.features
                                                 if f.kind != 'state'))
        self._history = {JOINT_STATES: max([f.history for f in spec.state_features] or [1])}
        for feature in spec.features:
            if feature.kind != 'state':
                self._history[feature.name] = feature.history
        self._joint_orders: Dict[Tuple[str, ...], np.ndarray] = {}   # see joint_sample

    def new_buffers(self, capacity: int) -> Dict[str, StreamBuffer]:
        """Return one empty buffer per stream this policy needs."""
        return {name: StreamBuffer(name, max(capacity, self._history[name]))
                for name in self.streams}

    # ---- samples in ---------------------------------------------------------------------

    def joint_sample(self, stamp_ns: int, names: Sequence[str],
                     positions: Sequence[float]) -> Sample:
        """Validate a joint_states message by name; return the sample or raise InputError."""
        if len(positions) != len(names):
            raise InputError('shape', f'joint_states has {len(names)} names but '
                                      f'{len(positions)} positions')
        key = tuple(names)
        order = self._joint_orders.get(key)
        if order is None:          # names checked once per name list, not per message
            order = self._joint_order(key)
            if len(self._joint_orders) >= MAX_NAME_LISTS:
                self._joint_orders.clear()
            self._joint_orders[key] = order
        values = np.asarray(positions, dtype=np.float64)[order]
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise InputError('non_finite', f"joint '{self.state_joints[bad[0]]}' has a "
                                           f'non-finite position ({values[bad[0]]}) in '
                                           'joint_states')
        return Sample(stamp_ns, values)

    def _joint_order(self, names: Tuple[str, ...]) -> np.ndarray:
        """Index of each state joint in ``names``; InputError names a wrong or missing one."""
        index = {}
        for i, name in enumerate(names):
            if name in index:
                raise InputError('duplicate', f"joint '{name}' appears twice in joint_states")
            if name not in self.expected_joints:
                raise InputError('unknown_joint',
                                 f"unknown joint '{name}' in joint_states (the policy's "
                                 f'joints: {", ".join(self.state_joints)})')
            index[name] = i
        for joint in self.state_joints:
            if joint not in index:
                raise InputError('missing_joint', f"joint '{joint}' missing from joint_states")
        return np.array([index[joint] for joint in self.state_joints], dtype=np.intp)

    def image_sample(self, feature_name: str, stamp_ns: int, image: Any) -> Sample:
        """Check an image's metadata (encoding, size); return the sample or raise InputError.

        The first frame of each size and encoding that needs resizing or converting adds a
        line to :attr:`notes`, naming the feature, both sizes and how (the server logs it).
        """
        feature = self.spec.feature(feature_name)
        if isinstance(image, images.CompressedImage):
            conversion = images.check_compressed(image, feature)
        else:
            conversion = images.check_raw(image, feature)
        if conversion and (feature_name, conversion) not in self._said:
            self._said.add((feature_name, conversion))
            self.notes.append(conversion.describe(feature))
        return Sample(stamp_ns, image)

    def take_notes(self) -> List[str]:
        """Return and forget the conversions not yet announced."""
        notes, self.notes = self.notes, []
        return notes

    def privileged_sample(self, feature_name: str, stamp_ns: int,
                          values: Sequence[float]) -> Sample:
        """Check a privileged vector's length and values; return the sample."""
        feature = self.spec.feature(feature_name)
        array = np.asarray(values, dtype=np.float64)
        if array.shape != tuple(feature.shape):
            raise InputError('shape', f'{feature.name!r} has {array.size} values, declared '
                                      f'{list(feature.shape)}')
        if not np.all(np.isfinite(array)):
            raise InputError('non_finite', f'{feature.name!r} has a non-finite value')
        return Sample(stamp_ns, array)

    # ---- selection and assembly ---------------------------------------------------------

    def select(self, buffers: Dict[str, StreamBuffer], earliest_ns: int) -> Optional[Selection]:
        """Pick the samples for a request, or None while a stream has no usable sample."""
        chosen = {}
        for name in self.streams:
            buffer = buffers[name]
            anchor = buffer.newest_at_or_after(earliest_ns)
            if anchor is None:
                return None
            count = self._history[name]
            chosen[name] = ([anchor] if count == 1
                            else buffer.history(anchor, count, self.period_ns))
        return Selection(chosen)

    def has_stale(self, buffers: Dict[str, StreamBuffer], earliest_ns: int) -> bool:
        """Tell whether a stream has samples, but none captured at or after ``earliest_ns``."""
        return any(buffers[name].newest() is not None
                   and buffers[name].newest_at_or_after(earliest_ns) is None
                   for name in self.streams)

    def missing(self, buffers: Dict[str, StreamBuffer], earliest_ns: int) -> str:
        """Explain which stream has no usable sample (for the error after a wait)."""
        problems = []
        for name in self.streams:
            buffer = buffers[name]
            if buffer.newest_at_or_after(earliest_ns) is not None:
                continue
            newest = buffer.newest()
            if newest is None:
                text = f'no {name} sample received yet' if not buffer.received else \
                    f'no usable {name} sample'
            else:
                text = (f'no {name} sample captured at or after the earliest capture stamp '
                        f'(newest is {(earliest_ns - newest.stamp_ns) * 1e-9:.3f} s older)')
            if buffer.last_error:
                text += f'; last rejected: {buffer.last_error}'
            problems.append(text)
        return '; '.join(problems)

    def build(self, selection: Selection, buffers: Dict[str, StreamBuffer]
              ) -> Dict[str, np.ndarray]:
        """
        Return the model input of each feature for one request (no batch dimension).

        A frame that fails to decode is marked bad in its buffer (it is never picked again)
        and InputError is raised naming it; the caller may select again.
        """
        inputs = {}
        for feature in self.spec.features:
            if feature.kind == 'state':
                samples = selection.samples[JOINT_STATES]
                si = np.stack([s.payload[self._state_index[feature.name]] for s in samples])
                try:
                    values = self._converters[feature.name].to_policy(si)
                except ValueError as error:
                    raise InputError('units', f'{feature.name!r}: {error}') from None
            elif feature.kind == 'privileged':
                values = np.stack([s.payload for s in selection.samples[feature.name]])
            else:
                stack = []
                for sample in selection.samples[feature.name]:
                    if sample.converted is None:   # converted and normalized once per frame
                        try:
                            sample.converted = images.to_model_input(
                                sample.payload, feature, feature.name in self.rotate_180,
                                normalize=True)
                        except InputError as error:
                            buffers[feature.name].mark_bad(sample, str(error))
                            error.stream = feature.name
                            raise
                    stack.append(sample.converted)
                inputs[feature.name] = (np.stack(stack) if feature.history > 1
                                        else stack[0])
                continue
            values = feature.normalization.normalize(values.astype(np.float32, copy=False))
            if feature.history == 1:
                values = values[0]
            inputs[feature.name] = np.ascontiguousarray(values, dtype=np.float32)
        return inputs
