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

"""Our CDR encoders against rclpy's own deserializer, for any field values."""

from hypothesis import given, settings, strategies as st
import numpy as np
from rclpy.serialization import deserialize_message
from remote_inference.msg import ActionChunk, SharedImage
from sensor_msgs.msg import JointState

from remote_inference_py.common.cdr import (
    encode_action_chunk, encode_joint_state, encode_shared_image)

TEXT = st.text(st.characters(blacklist_categories=('Cs',), blacklist_characters='\0'),
               max_size=12)
SEC = st.integers(-2**31, 2**31 - 1)
NANOSEC = st.integers(0, 2**32 - 1)
F32 = st.floats(width=32, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(sec=SEC, nanosec=NANOSEC, session=TEXT, request_id=st.integers(0, 2**64 - 1),
       names=st.lists(TEXT, max_size=7), period=st.floats(allow_nan=False),
       rows=st.integers(0, 4), error=TEXT, timings=st.lists(F32, min_size=4, max_size=4),
       data=st.data())
def test_action_chunk_bytes_deserialize_to_the_fields(sec, nanosec, session, request_id, names,
                                                      period, rows, error, timings, data):
    positions = np.array(data.draw(st.lists(F32, min_size=rows * len(names),
                                            max_size=rows * len(names))), np.float32)
    raw = encode_action_chunk(
        sec=sec, nanosec=nanosec, session_id=session, request_id=request_id,
        joint_names=names, step_period=period, step_count=rows, positions=positions,
        error=error, queue_wait_ms=timings[0], preprocess_ms=timings[1],
        inference_ms=timings[2], postprocess_ms=timings[3])
    msg = deserialize_message(raw, ActionChunk)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (
        sec, nanosec, '')
    assert (msg.session_id, msg.request_id, list(msg.joint_names)) == (
        session, request_id, names)
    assert (msg.step_period, msg.step_count, msg.error) == (period, rows, error)
    np.testing.assert_array_equal(np.asarray(msg.positions, np.float32), positions)
    assert [msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms, msg.postprocess_ms] == \
        timings


@settings(max_examples=100, deadline=None)
@given(sec=SEC, nanosec=NANOSEC, frame_id=TEXT, ring=TEXT, slot=st.integers(0, 2**32 - 1),
       sequence=st.integers(0, 2**64 - 1), size=st.integers(0, 2**32 - 1))
def test_shared_image_bytes_deserialize_to_the_fields(sec, nanosec, frame_id, ring, slot,
                                                      sequence, size):
    msg = deserialize_message(encode_shared_image(
        sec=sec, nanosec=nanosec, frame_id=frame_id, ring=ring, slot=slot, sequence=sequence,
        size=size), SharedImage)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (
        sec, nanosec, frame_id)
    assert (msg.ring, msg.slot, msg.sequence, msg.size) == (ring, slot, sequence, size)


@settings(max_examples=100, deadline=None)
@given(sec=SEC, nanosec=NANOSEC, names=st.lists(TEXT, max_size=7), data=st.data())
def test_joint_state_bytes_deserialize_to_the_fields(sec, nanosec, names, data):
    positions = data.draw(st.lists(st.floats(allow_nan=False), min_size=len(names),
                                   max_size=len(names)))
    msg = deserialize_message(encode_joint_state(
        sec=sec, nanosec=nanosec, names=names, positions=positions), JointState)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
    assert list(msg.name) == names and list(msg.position) == positions
    assert list(msg.velocity) == [] and list(msg.effort) == []
