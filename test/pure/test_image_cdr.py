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

"""sensor_msgs/Image to and from CDR bytes, checked against rclpy's own serialization."""

import struct

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image

from remote_inference_py.transport.cdr import CdrError, is_plain_cdr
from remote_inference_py.transport.image_cdr import decode_image, encode_image

# What a ROS string can hold: UTF-8 without NUL (no lone surrogates, which UTF-8 cannot encode).
TEXT = st.text(st.characters(blacklist_categories=('Cs',), blacklist_characters='\0'),
               max_size=12)
ENCODINGS = st.sampled_from(['rgb8', 'bgr8', 'mono8', '16UC1', '32FC1', 'x', ''])


def message(frame_id, encoding, height, width, bigendian, data, sec=12, nanosec=345):
    msg = Image(height=height, width=width, encoding=encoding, is_bigendian=bigendian,
                step=len(data) // max(height, 1), data=data)
    msg.header.frame_id = frame_id
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    return msg


@settings(max_examples=200, deadline=None)
@given(frame_id=TEXT, encoding=ENCODINGS, height=st.integers(0, 5), width=st.integers(0, 7),
       bigendian=st.booleans(), seed=st.integers(0, 2**16), sec=st.integers(-2**31, 2**31 - 1),
       nanosec=st.integers(0, 999_999_999))
def test_decode_reads_what_rclpy_serializes(frame_id, encoding, height, width, bigendian,
                                            seed, sec, nanosec):
    data = np.random.default_rng(seed).integers(0, 256, height * width * 3, dtype=np.uint8)
    msg = message(frame_id, encoding, height, width, bigendian, data.tobytes(), sec, nanosec)
    got = decode_image(serialize_message(msg))
    assert (got.sec, got.nanosec, got.frame_id) == (sec, nanosec, frame_id)
    assert (got.height, got.width, got.encoding, got.is_bigendian, got.step) == (
        height, width, encoding, bigendian, msg.step)
    assert bytes(got.data) == data.tobytes()
    assert got.stamp_ns == sec * 1_000_000_000 + nanosec


@settings(max_examples=100, deadline=None)
@given(frame_id=TEXT, encoding=ENCODINGS, shape=st.tuples(st.integers(0, 6), st.integers(0, 6),
                                                          st.sampled_from([1, 3])))
def test_rclpy_reads_what_encode_writes(frame_id, encoding, shape):
    frame = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    msg = deserialize_message(encode_image(7, 8, frame_id, frame, encoding), Image)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (
        7, 8, frame_id)
    assert (msg.height, msg.width, msg.encoding, msg.step) == (
        shape[0], shape[1], encoding, shape[1] * shape[2])
    assert not msg.is_bigendian and bytes(msg.data) == frame.tobytes()


def test_encode_copies_a_non_contiguous_frame_in_row_order():
    frame = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)[:, ::-1]
    got = decode_image(encode_image(0, 0, 'f', frame, 'rgb8'))
    assert bytes(got.data) == np.ascontiguousarray(frame).tobytes() and got.step == 12


def test_the_pixels_are_a_view_of_the_received_bytes():
    raw = bytearray(encode_image(0, 0, 'cam', np.zeros((2, 2, 3), np.uint8), 'rgb8'))
    got = decode_image(raw)
    raw[-1] = 9
    assert got.data[-1] == 9


def test_big_endian_cdr():
    body = (struct.pack('>iI', 3, 4) + struct.pack('>I', 2) + b'f\0' + b'\0\0'
            + struct.pack('>II', 1, 2) + struct.pack('>I', 6) + b'mono8\0' + b'\1'
            + b'\0' + struct.pack('>II', 2, 2) + b'\5\6')
    got = decode_image(b'\0\0\0\0' + body)
    assert (got.sec, got.nanosec, got.frame_id, got.height, got.width) == (3, 4, 'f', 1, 2)
    assert (got.encoding, got.is_bigendian, got.step, bytes(got.data)) == (
        'mono8', True, 2, b'\5\6')


def test_every_truncation_is_a_named_error():
    raw = serialize_message(message('camera', 'rgb8', 1, 2, False, bytes(range(6))))
    fields = set()
    for end in range(4, len(raw)):
        with pytest.raises(CdrError) as error:
            decode_image(raw[:end])
        fields.add(str(error.value).split(':')[0])
    assert fields == {'header.stamp.sec', 'header.stamp.nanosec', 'header.frame_id length',
                      'header.frame_id', 'height', 'width', 'encoding length', 'encoding',
                      'is_bigendian', 'step', 'data length', 'data'}


def test_foreign_encapsulations_and_bad_strings_are_refused():
    good = serialize_message(message('ab', 'rgb8', 0, 0, False, b''))
    xcdr2 = b'\0\x07' + good[2:]
    assert is_plain_cdr(good) and not is_plain_cdr(xcdr2) and not is_plain_cdr(b'\0')
    with pytest.raises(CdrError, match=r'not a plain CDR message \(encapsulation 00070000\)'):
        decode_image(xcdr2)
    unterminated = good[:18] + b'x' + good[19:]      # frame_id 'ab\0' -> 'abx'
    with pytest.raises(CdrError, match='header.frame_id: string is not NUL-terminated'):
        decode_image(unterminated)
    with pytest.raises(CdrError, match='header.frame_id: not UTF-8'):
        decode_image(good[:16] + b'\xff' + good[17:])
