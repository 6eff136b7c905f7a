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
The one seam between the nodes and the wire for the messages on the hot paths.

Nodes subscribe and publish joint states and action chunks through these functions and
classes (camera frames through :mod:`.shared_images`) and get plain values
(:mod:`.values`), never bytes:

- :func:`subscribe_joint_states`, :func:`subscribe_chunks`: ``callback(value)`` per message;
  ``on_malformed(text)`` for bytes that are no such message (default: an error in the log,
  naming the type and topic).
- :class:`JointStatePublisher`, :class:`ChunkPublisher`: ``publish(...)`` from plain values.

Two transports behind it, chosen per process by ``REMOTE_INFERENCE_TRANSPORT`` (or per
endpoint by ``transport=``; see :func:`transport_choice`):

- ``fast`` (default): serialized bytes, read and written by our own CDR code (:mod:`.cdr`):
  ``raw=True`` subscriptions and ``publish(bytes)``, a fraction of rclpy's conversion cost.
- ``plain``: ordinary typed rclpy subscriptions and publishers, the messages converted to the
  same values. Nothing of ours touches the bytes: the way back if a ROS release or another RMW
  changes something our CDR code relies on. Bytes that are no valid message are dropped by
  rclpy before any callback (``on_malformed`` is not called). The node logs once that it
  uses this transport.

Both send ordinary messages, so nodes on different transports talk to each other, and
node code is the same on both.
"""

import os
from typing import Callable, Optional, Sequence

import numpy as np
from remote_inference.msg import ActionChunk
from sensor_msgs.msg import JointState

from remote_inference_py.transport import values
from remote_inference_py.transport.cdr import (
    ActionChunkDecoder, ActionChunkEncoder, CdrError, JointStateDecoder, JointStateEncoder)

TRANSPORT_ENV = 'REMOTE_INFERENCE_TRANSPORT'
FAST, PLAIN = 'fast', 'plain'
TRANSPORTS = (FAST, PLAIN)
MALFORMED_LOG_PERIOD_S = 2.0
_announced = []   # the plain transport is logged once per process


class TransportChoiceError(ValueError):
    """The transport switch has a value we do not know; the message names the switch."""


def transport_choice(value: Optional[str] = None) -> str:
    """
    Return ``'fast'`` or ``'plain'``: ``value``, else ``$REMOTE_INFERENCE_TRANSPORT``, else fast.

    An unknown value raises :class:`TransportChoiceError` naming the variable (nodes exit 2).
    """
    if value is None:
        value = os.environ.get(TRANSPORT_ENV, '') or FAST
        if value not in TRANSPORTS:
            raise TransportChoiceError(f'{TRANSPORT_ENV}={value!r} is not one of '
                                       f'{", ".join(TRANSPORTS)}')
    elif value not in TRANSPORTS:
        raise TransportChoiceError(f'transport {value!r} is not one of {", ".join(TRANSPORTS)}')
    return value


def _chosen(node, transport: Optional[str]) -> str:
    """Return the transport for an endpoint of ``node``; say so once when it is plain."""
    choice = transport_choice(transport)
    if choice == PLAIN and not _announced:
        _announced.append(node.get_name())
        node.get_logger().info(f'transport: plain rclpy messages ({TRANSPORT_ENV}=plain or '
                               'transport=plain); our CDR code is not used')
    return choice


def _log_malformed(node, type_name: str, topic: str) -> Callable[[str], None]:
    def log(text):
        node.get_logger().error(f'dropped a malformed {type_name} on {topic}: {text}',
                                throttle_duration_sec=MALFORMED_LOG_PERIOD_S)
    return log


def subscribe(node, msg_type, topic: str, callback, qos_profile, *, decoder, convert,
              on_malformed=None, callback_group=None, event_callbacks=None,
              transport: Optional[str] = None):
    """
    Subscribe ``callback(value)`` to ``topic``; return the rclpy subscription.

    ``decoder`` (fast: an object whose ``decode(bytes)`` returns the value or raises
    :class:`~.cdr.CdrError`) and ``convert`` (plain: message -> value) make the value.
    """
    if _chosen(node, transport) == PLAIN:
        return node.create_subscription(
            msg_type, topic, lambda msg: callback(convert(msg)), qos_profile,
            callback_group=callback_group, event_callbacks=event_callbacks)
    if on_malformed is None:
        on_malformed = _log_malformed(node, msg_type.__name__, topic)

    def on_raw(raw):
        try:
            value = decoder.decode(raw)
        except CdrError as error:
            on_malformed(str(error))
            return
        callback(value)

    return node.create_subscription(msg_type, topic, on_raw, qos_profile,
                                    callback_group=callback_group,
                                    event_callbacks=event_callbacks, raw=True)


def subscribe_joint_states(node, topic: str, callback, qos_profile, *, on_malformed=None,
                           callback_group=None, transport: Optional[str] = None):
    """``callback(JointStateFields)`` for every ``sensor_msgs/JointState`` on ``topic``."""
    return subscribe(node, JointState, topic, callback, qos_profile,
                     decoder=JointStateDecoder(), convert=values.from_joint_state,
                     on_malformed=on_malformed, callback_group=callback_group,
                     transport=transport)


def subscribe_chunks(node, topic: str, callback, qos_profile, *, on_malformed=None,
                     callback_group=None, event_callbacks=None,
                     transport: Optional[str] = None):
    """``callback(ActionChunkFields)`` for every ``remote_inference/ActionChunk``."""
    return subscribe(node, ActionChunk, topic, callback, qos_profile,
                     decoder=ActionChunkDecoder(), convert=values.from_action_chunk,
                     on_malformed=on_malformed, callback_group=callback_group,
                     event_callbacks=event_callbacks, transport=transport)


def _check_count(positions: np.ndarray, names: Sequence[str]) -> None:
    if positions.size != len(names):
        raise ValueError(f'positions: {positions.size} values where the layout has '
                         f'{len(names)}')


class JointStatePublisher:
    """Publish ``sensor_msgs/JointState`` (positions only) for one fixed list of joints."""

    def __init__(self, node, topic: str, names: Sequence[str], qos_profile, *,
                 transport: Optional[str] = None):
        self.names = tuple(names)
        self.transport = _chosen(node, transport)
        self.publisher = node.create_publisher(JointState, topic, qos_profile)
        self._encoder = JointStateEncoder(self.names) if self.transport == FAST else None

    def publish(self, sec: int, nanosec: int, positions: Sequence[float]) -> None:
        """Publish ``positions`` [rad] in ``names`` order, stamped ``sec``/``nanosec``."""
        if self._encoder is not None:   # serialized once per layout: see transport/cdr.py
            self.publisher.publish(self._encoder.encode(sec, nanosec, positions))
            return
        positions = np.asarray(positions, dtype=np.float64).reshape(-1)
        _check_count(positions, self.names)
        msg = JointState(name=list(self.names), position=positions.tolist())
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        self.publisher.publish(msg)


class ChunkPublisher:
    """Publish ``remote_inference/ActionChunk`` messages from plain values."""

    def __init__(self, node, topic: str, qos_profile, *, transport: Optional[str] = None):
        self.transport = _chosen(node, transport)
        self.publisher = node.create_publisher(ActionChunk, topic, qos_profile)
        self._encoder = ActionChunkEncoder() if self.transport == FAST else None

    def publish(self, *, sec: int, nanosec: int, session_id: str, request_id: int,
                joint_names: Sequence[str], step_period: float, positions: np.ndarray,
                error: str = '', timings: Sequence[float] = (0.0, 0.0, 0.0, 0.0),
                instance_id: str = '', session_refused: bool = False) -> None:
        """
        Publish one chunk: ``positions`` [steps, joints] (its row count is ``step_count``).

        ``timings`` are queue wait, preprocess, inference and postprocess [ms];
        ``instance_id`` the answering server instance, ``session_refused`` marks a refusal
        that retrying cannot change.
        """
        if self._encoder is not None:   # see transport/cdr.py for why
            self.publisher.publish(self._encoder.encode(
                sec=sec, nanosec=nanosec, session_id=session_id, request_id=request_id,
                joint_names=joint_names, step_period=step_period, positions=positions,
                error=error, timings=timings, instance_id=instance_id,
                session_refused=session_refused))
            return
        positions = np.asarray(positions, dtype=np.float32)
        msg = ActionChunk(session_id=session_id, request_id=request_id,
                          joint_names=list(joint_names), step_period=float(step_period),
                          step_count=positions.shape[0] if positions.ndim else 0,
                          positions=positions.reshape(-1).tolist(), error=error,
                          instance_id=instance_id, session_refused=bool(session_refused))
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        (msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms,
         msg.postprocess_ms) = (float(t) for t in timings)
        self.publisher.publish(msg)

    def wait_for_all_acked(self, timeout) -> bool:
        """Wait until reliable subscribers have every chunk (``timeout``: a Duration)."""
        return self.publisher.wait_for_all_acked(timeout)
