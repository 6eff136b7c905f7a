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

"""Our CDR encoders and decoders against rclpy's own (de)serializer, for any field values."""

import struct

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from remote_inference.msg import ActionChunk, SharedImage
from sensor_msgs.msg import JointState

from remote_inference_py.transport.cdr import (
    ActionChunkDecoder, ActionChunkEncoder, CdrError, JointStateDecoder, JointStateEncoder,
    SharedImageDecoder, SharedImageEncoder)

TEXT = st.text(st.characters(blacklist_categories=('Cs',), blacklist_characters='\0'),
               max_size=12)
SEC = st.integers(-2**31, 2**31 - 1)
NANOSEC = st.integers(0, 999_999_999)
F32 = st.floats(width=32, allow_nan=False)
F64 = st.floats(allow_nan=False)


def stamp_ns(sec, nanosec):
    return sec * 1_000_000_000 + nanosec


# ---- encoders: each encoder object is used twice (its layout is reused) --------------------

@settings(max_examples=100, deadline=None)
@given(stamps=st.lists(st.tuples(SEC, NANOSEC), min_size=2, max_size=2),
       session=TEXT, request_ids=st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=2),
       names=st.lists(TEXT, max_size=7), periods=st.lists(F64, min_size=2, max_size=2),
       rows=st.integers(0, 4), error=TEXT, timings=st.lists(F32, min_size=4, max_size=4),
       instance=TEXT, refused=st.booleans(), data=st.data())
def test_action_chunk_bytes_deserialize_to_the_fields(stamps, session, request_ids, names,
                                                      periods, rows, error, timings, instance,
                                                      refused, data):
    encoder = ActionChunkEncoder()
    for (sec, nanosec), request_id, period in zip(stamps, request_ids, periods):
        positions = np.array(data.draw(st.lists(F32, min_size=rows * len(names),
                                                max_size=rows * len(names))),
                             np.float32).reshape(rows, len(names))
        raw = encoder.encode(sec=sec, nanosec=nanosec, session_id=session,
                             request_id=request_id, joint_names=names, step_period=period,
                             positions=positions, error=error, timings=timings,
                             instance_id=instance, session_refused=refused)
        msg = deserialize_message(raw, ActionChunk)
        assert (msg.instance_id, msg.session_refused) == (instance, refused)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (
            sec, nanosec, '')
        assert (msg.session_id, msg.request_id, list(msg.joint_names)) == (
            session, request_id, names)
        assert (msg.step_period, msg.step_count, msg.error) == (period, rows, error)
        np.testing.assert_array_equal(np.asarray(msg.positions, np.float32),
                                      positions.reshape(-1))
        assert [msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms,
                msg.postprocess_ms] == timings


def test_action_chunk_layout_follows_the_session_and_the_shape():
    encoder = ActionChunkEncoder()
    for session, shape in [('a', (2, 3)), ('a', (2, 3)), ('bb', (2, 3)), ('bb', (4, 3))]:
        msg = deserialize_message(encoder.encode(
            sec=1, nanosec=2, session_id=session, request_id=7, joint_names=['x', 'y', 'z'],
            step_period=0.5, positions=np.ones(shape)), ActionChunk)
        assert (msg.session_id, msg.step_count, len(msg.positions)) == (
            session, shape[0], shape[0] * shape[1])


@settings(max_examples=100, deadline=None)
@given(stamps=st.lists(st.tuples(SEC, NANOSEC), min_size=2, max_size=2), frame_id=TEXT,
       ring=TEXT, slots=st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2),
       sequences=st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=2),
       sizes=st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2))
def test_shared_image_bytes_deserialize_to_the_fields(stamps, frame_id, ring, slots,
                                                      sequences, sizes):
    encoder = SharedImageEncoder(frame_id, ring)
    for (sec, nanosec), slot, sequence, size in zip(stamps, slots, sequences, sizes):
        msg = deserialize_message(encoder.encode(sec, nanosec, slot, sequence, size),
                                  SharedImage)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (
            sec, nanosec, frame_id)
        assert (msg.ring, msg.slot, msg.sequence, msg.size) == (ring, slot, sequence, size)


@settings(max_examples=100, deadline=None)
@given(stamps=st.lists(st.tuples(SEC, NANOSEC), min_size=2, max_size=2),
       names=st.lists(TEXT, max_size=7), data=st.data())
def test_joint_state_bytes_deserialize_to_the_fields(stamps, names, data):
    encoder = JointStateEncoder(names)
    for sec, nanosec in stamps:
        positions = data.draw(st.lists(F64, min_size=len(names), max_size=len(names)))
        msg = deserialize_message(encoder.encode(sec, nanosec, positions), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
        assert list(msg.name) == names and list(msg.position) == positions
        assert list(msg.velocity) == [] and list(msg.effort) == []


def test_joint_state_encoder_refuses_a_wrong_number_of_positions():
    with pytest.raises(ValueError, match='positions: 2 values where the layout has 3'):
        JointStateEncoder(['a', 'b', 'c']).encode(0, 0, [1.0, 2.0])


# ---- decoders: sequences of messages, so the remembered layout is used and re-learnt -------

def joint_state(sec, nanosec, frame_id, names, positions, velocity=(), effort=()):
    msg = JointState(name=list(names), position=list(positions), velocity=list(velocity),
                     effort=list(effort))
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    msg.header.frame_id = frame_id
    return msg


@settings(max_examples=150, deadline=None)
@given(data=st.data(), frame_ids=st.lists(TEXT, min_size=1, max_size=2),
       name_sets=st.lists(st.lists(TEXT, max_size=6), min_size=1, max_size=2))
def test_joint_state_decoder_reads_what_rclpy_serializes(data, frame_ids, name_sets):
    decoder = JointStateDecoder()
    for _ in range(5):
        names = data.draw(st.sampled_from(name_sets))
        sec, nanosec = data.draw(SEC), data.draw(NANOSEC)
        positions = data.draw(st.lists(F64, min_size=len(names), max_size=len(names)))
        extra = data.draw(st.lists(F64, max_size=3))
        msg = joint_state(sec, nanosec, data.draw(st.sampled_from(frame_ids)), names,
                          positions, velocity=extra, effort=extra[:1])
        got = decoder.decode(serialize_message(msg))
        assert got.stamp_ns == stamp_ns(sec, nanosec)
        assert got.names == tuple(names) and list(got.positions) == positions


def test_joint_state_decoder_reuses_the_layout_only_for_equal_bytes():
    decoder = JointStateDecoder()
    first = serialize_message(joint_state(1, 2, 'base', ['a', 'b'], [0.5, 0.25]))
    decoder.decode(first)
    layout = decoder._layout
    assert layout.matches(serialize_message(joint_state(9, 8, 'base', ['a', 'b'], [3.0, 4.0],
                                                        velocity=[1.0, 1.0])))
    for other in (joint_state(1, 2, 'base', ['a', 'c'], [0.5, 0.25]),
                  joint_state(1, 2, 'tool', ['a', 'b'], [0.5, 0.25]),
                  joint_state(1, 2, 'base', ['a', 'b', 'c'], [0.5, 0.25, 1.0])):
        raw = serialize_message(other)
        assert not layout.matches(raw)
        got = decoder.decode(raw)
        assert (got.names, list(got.positions)) == (tuple(other.name), list(other.position))
    assert not decoder._layout.matches(first[:-4])   # shorter than the positions: parsed
    fewer = serialize_message(joint_state(1, 2, 'base', ['a', 'b'], [0.5]))
    for _ in range(2):                               # the second time through the layout
        got = decoder.decode(fewer)
        assert (got.names, list(got.positions)) == (('a', 'b'), [0.5])


def test_joint_state_decoder_names_the_truncated_field():
    raw = serialize_message(joint_state(1, 2, 'f', ['a', 'b'], [0.5, 0.25]))
    fields = set()
    for end in range(4, len(raw)):
        try:
            got = JointStateDecoder().decode(raw[:end])
            break                               # velocity and effort are not read
        except CdrError as error:
            fields.add(str(error).split(':')[0])
    assert list(got.positions) == [0.5, 0.25]
    assert fields == {'header.stamp.sec', 'header.stamp.nanosec', 'header.frame_id length',
                      'header.frame_id', 'name count', 'name', 'name[1] length', 'name[1]',
                      'position count', 'position'}   # 'name': too few bytes for 2 strings
    with pytest.raises(CdrError, match='name: 1000000 strings cannot fit'):
        JointStateDecoder().decode(raw[:20] + struct.pack('<I', 1_000_000) + raw[24:])


def test_big_endian_joint_states_are_read_and_never_taught_as_a_layout():
    body = (struct.pack('>iI', 3, 4) + struct.pack('>I', 1) + b'\0\0\0\0'   # frame_id ''
            + struct.pack('>I', 1) + struct.pack('>I', 2) + b'a\0' + b'\0\0'
            + struct.pack('>I', 1) + struct.pack('>d', 1.5)
            + struct.pack('>I', 0) + struct.pack('>I', 0))
    decoder = JointStateDecoder()
    got = decoder.decode(b'\0\0\0\0' + body)
    assert (got.stamp_ns, got.names, list(got.positions)) == (3_000_000_004, ('a',), [1.5])
    assert decoder._layout is None


def test_other_encapsulations_go_through_rclpy_and_fail_with_a_named_error():
    raw = serialize_message(joint_state(1, 2, 'f', ['a'], [0.5]))
    with pytest.raises(CdrError, match='cannot deserialize a JointState'):
        JointStateDecoder().decode(b'\0\x07' + raw[2:8])
    with pytest.raises(CdrError, match='cannot deserialize a SharedImage'):
        SharedImageDecoder().decode(b'\0\x07\0\0')
    with pytest.raises(CdrError, match='cannot deserialize a ActionChunk'):
        ActionChunkDecoder().decode(b'')


@settings(max_examples=100, deadline=None)
@given(data=st.data(), frame_ids=st.lists(TEXT, min_size=1, max_size=2),
       rings=st.lists(TEXT, min_size=1, max_size=2))
def test_shared_image_decoder_reads_what_rclpy_serializes(data, frame_ids, rings):
    decoder = SharedImageDecoder()
    for _ in range(4):
        msg = SharedImage(ring=data.draw(st.sampled_from(rings)),
                          slot=data.draw(st.integers(0, 2**32 - 1)),
                          sequence=data.draw(st.integers(0, 2**64 - 1)),
                          size=data.draw(st.integers(0, 2**32 - 1)))
        msg.header.frame_id = data.draw(st.sampled_from(frame_ids))
        msg.header.stamp.sec, msg.header.stamp.nanosec = data.draw(SEC), data.draw(NANOSEC)
        got = decoder.decode(serialize_message(msg))
        assert got == (stamp_ns(msg.header.stamp.sec, msg.header.stamp.nanosec),
                       msg.header.frame_id, msg.ring, msg.slot, msg.sequence, msg.size)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), sessions=st.lists(TEXT, min_size=1, max_size=2),
       name_sets=st.lists(st.lists(TEXT, max_size=4), min_size=1, max_size=2),
       errors=st.lists(TEXT, min_size=1, max_size=2),
       instances=st.lists(TEXT, min_size=1, max_size=2))
def test_action_chunk_decoder_reads_what_rclpy_serializes(data, sessions, name_sets, errors,
                                                          instances):
    decoder = ActionChunkDecoder()
    for _ in range(4):
        names = data.draw(st.sampled_from(name_sets))
        rows = data.draw(st.integers(0, 3))
        msg = ActionChunk(
            session_id=data.draw(st.sampled_from(sessions)),
            request_id=data.draw(st.integers(0, 2**64 - 1)), joint_names=names,
            step_period=data.draw(F64), step_count=rows,
            positions=data.draw(st.lists(F32, min_size=rows * len(names),
                                         max_size=rows * len(names))),
            error=data.draw(st.sampled_from(errors)), queue_wait_ms=data.draw(F32),
            preprocess_ms=data.draw(F32), inference_ms=data.draw(F32),
            postprocess_ms=data.draw(F32), instance_id=data.draw(st.sampled_from(instances)),
            session_refused=data.draw(st.booleans()))
        msg.header.stamp.sec, msg.header.stamp.nanosec = data.draw(SEC), data.draw(NANOSEC)
        got = decoder.decode(serialize_message(msg))
        assert got.stamp_ns == stamp_ns(msg.header.stamp.sec, msg.header.stamp.nanosec)
        assert (got.session_id, got.request_id, got.joint_names, got.step_period,
                got.step_count, got.error) == (msg.session_id, msg.request_id, tuple(names),
                                               msg.step_period, rows, msg.error)
        assert list(got.positions) == list(msg.positions)
        assert (got.instance_id, got.session_refused) == (msg.instance_id,
                                                          msg.session_refused)
        assert [got.queue_wait_ms, got.preprocess_ms, got.inference_ms, got.postprocess_ms] \
            == [msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms, msg.postprocess_ms]


def test_what_our_encoders_write_our_decoders_read_through_the_layout():
    encoder, decoder = ActionChunkEncoder(), ActionChunkDecoder()
    for request_id in range(3):
        got = decoder.decode(encoder.encode(
            sec=5, nanosec=request_id, session_id='s', request_id=request_id,
            joint_names=['a', 'b'], step_period=0.1, positions=np.full((3, 2), request_id),
            instance_id='i1'))
        assert (got.request_id, got.stamp_ns, list(got.positions), got.instance_id) == (
            request_id, 5_000_000_000 + request_id, [request_id] * 6, 'i1')
    assert decoder._layout is not None
    refs, ref_decoder = SharedImageEncoder('cam', 'ring'), SharedImageDecoder()
    for sequence in range(1, 4):
        assert ref_decoder.decode(refs.encode(1, 2, sequence % 2, sequence, 100)) == (
            1_000_000_002, 'cam', 'ring', sequence % 2, sequence, 100)


@pytest.mark.parametrize('decoder, raw', [
    (SharedImageDecoder(), SharedImageEncoder('cam', 'ring').encode(1, 2, 3, 4, 5)),
    (ActionChunkDecoder(), ActionChunkEncoder().encode(
        sec=1, nanosec=2, session_id='s', request_id=3, joint_names=['a'], step_period=0.1,
        positions=np.zeros((2, 1)))),
])
def test_every_truncation_is_a_cdr_error(decoder, raw):
    decoder.decode(raw)   # learn the layout: truncated bytes must not match it
    for end in range(len(raw)):
        with pytest.raises(CdrError):
            decoder.decode(raw[:end])
