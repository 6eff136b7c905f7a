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
What a node receives: plain value objects for the messages on the hot paths.

Both transports hand these to the nodes (:mod:`.endpoints`): the fast path builds them from
the serialized bytes (:mod:`.cdr`, :mod:`.image_cdr`), the plain path from the message rclpy
deserialized (the ``from_*`` functions here, which read attributes only and import no ROS).
They carry the message's content as it is: a JointState with fewer positions than names gives
a value with fewer positions, and the node's core names that (the same on both paths).
Numbers come as numpy arrays that may view the received buffer (read-only).
"""

import dataclasses
from typing import Any, NamedTuple, Tuple

import numpy as np


def stamp_ns_of(sec: int, nanosec: int) -> int:
    """Nanoseconds of a stamp's two fields (the one place stamps become nanoseconds)."""
    return sec * 1_000_000_000 + nanosec


def stamp_ns(stamp) -> int:
    """Nanoseconds of a ``builtin_interfaces/Time`` (anything with ``sec`` and ``nanosec``)."""
    return stamp_ns_of(stamp.sec, stamp.nanosec)


class JointStateFields(NamedTuple):
    """What we use of a ``sensor_msgs/JointState``; ``positions`` [rad] may view the bytes."""

    stamp_ns: int
    names: Tuple[str, ...]
    positions: np.ndarray


class SharedImageFields(NamedTuple):
    """A ``remote_inference/SharedImage`` reference."""

    stamp_ns: int
    frame_id: str
    ring: str
    slot: int
    sequence: int
    size: int


class ActionChunkFields(NamedTuple):
    """A ``remote_inference/ActionChunk``; ``positions`` is flat float32 (may view the bytes)."""

    stamp_ns: int
    session_id: str
    request_id: int
    joint_names: Tuple[str, ...]
    step_period: float
    step_count: int
    positions: np.ndarray
    error: str
    queue_wait_ms: float
    preprocess_ms: float
    inference_ms: float
    postprocess_ms: float
    instance_id: str = ''           # the answering server instance ('' not told)
    session_refused: bool = False   # a refusal retrying cannot change


@dataclasses.dataclass
class ImageFields:
    """The fields of one ``sensor_msgs/Image``; ``data`` is a memoryview of the pixel bytes."""

    sec: int
    nanosec: int
    frame_id: str
    height: int
    width: int
    encoding: str
    is_bigendian: bool
    step: int
    data: Any

    @property
    def stamp_ns(self) -> int:
        """The header stamp [ns]."""
        return stamp_ns(self)


def from_joint_state(msg) -> JointStateFields:
    """Return the value of a deserialized ``sensor_msgs/JointState``."""
    return JointStateFields(stamp_ns(msg.header.stamp), tuple(msg.name),
                            np.asarray(msg.position, dtype=np.float64))


def from_shared_image(msg) -> SharedImageFields:
    """Return the value of a deserialized ``remote_inference/SharedImage``."""
    return SharedImageFields(stamp_ns(msg.header.stamp), msg.header.frame_id, msg.ring,
                             msg.slot, msg.sequence, msg.size)


def from_action_chunk(msg) -> ActionChunkFields:
    """Return the value of a deserialized ``remote_inference/ActionChunk``."""
    return ActionChunkFields(
        stamp_ns(msg.header.stamp), msg.session_id, msg.request_id, tuple(msg.joint_names),
        msg.step_period, msg.step_count, np.asarray(msg.positions, dtype=np.float32),
        msg.error, msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms, msg.postprocess_ms,
        msg.instance_id, bool(msg.session_refused))


def from_image(msg) -> ImageFields:
    """Return the value of a deserialized ``sensor_msgs/Image`` (the pixels are not copied)."""
    stamp = msg.header.stamp
    return ImageFields(stamp.sec, stamp.nanosec, msg.header.frame_id, msg.height, msg.width,
                       msg.encoding, bool(msg.is_bigendian), msg.step,
                       memoryview(msg.data).cast('B'))
