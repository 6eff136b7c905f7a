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
``sensor_msgs/Image`` straight to and from its CDR bytes, for the image hot path.

A 640x480 rgb8 frame published the usual rclpy way is copied four times before Fast DDS sees
it (numpy -> bytes -> ``array.array`` -> C message -> CDR), and a subscriber copies it twice
more (CDR -> C message -> ``array.array``). Publishing the bytes of :func:`encode_image`
(``publisher.publish(raw)``) copies the frame once; a ``raw=True`` subscription decoded by
:func:`decode_image` hands out the pixels as a view of the received buffer, no copy at all.
On the 2-core machines that cut ~0.2 ms (a quarter) of an observation-to-chunk round trip
(see bench/results/transport.md).

The layout is plain CDR (XCDR1) as every ROS 2 RMW sends ``sensor_msgs/Image``: a 4-byte
encapsulation header (``00 01`` little endian, ``00 00`` big endian), then the fields aligned
to their size counted from after the header::

    header.stamp.sec int32, header.stamp.nanosec uint32, header.frame_id string,
    height uint32, width uint32, encoding string, is_bigendian uint8, step uint32,
    data sequence<uint8>

(a string is a uint32 length that counts a terminating NUL, then the bytes and the NUL).
:func:`decode_image` checks every length against the buffer and raises :class:`CdrError`
naming the field; any other encapsulation (e.g. XCDR2 from a foreign RMW) is left to rclpy's
own deserializer.
"""

import struct
from typing import Tuple

import numpy as np

from remote_inference_py.transport.cdr import CdrReader
from remote_inference_py.transport.values import ImageFields


def _string(text: str, offset: int) -> bytes:
    """Return the CDR string at ``offset`` (from the start of the body), padding first."""
    raw = text.encode() + b'\0'
    return b'\0' * (-offset % 4) + struct.pack('<I', len(raw)) + raw


def encode_image(sec: int, nanosec: int, frame_id: str, frame: np.ndarray,
                 encoding: str) -> bytes:
    """
    Return the little-endian CDR bytes of an Image holding ``frame`` (h x w x c, contiguous).

    ``step`` is the frame's row size; the pixels are copied once, into the returned bytes.
    """
    return b''.join(image_parts(sec, nanosec, frame_id, frame, encoding))


def image_parts(sec: int, nanosec: int, frame_id: str, frame: np.ndarray,
                encoding: str) -> Tuple[bytes, memoryview]:
    """Return :func:`encode_image`'s bytes as (everything before the pixels, the pixels)."""
    frame = np.ascontiguousarray(frame)
    height, width = int(frame.shape[0]), int(frame.shape[1])
    step = int(np.prod(frame.shape[1:])) * frame.itemsize
    head = struct.pack('<iI', sec, nanosec)
    head += _string(frame_id, len(head))
    head += b'\0' * (-len(head) % 4) + struct.pack('<II', height, width)
    head += _string(encoding, len(head))
    head += b'\0'                                       # is_bigendian: native little endian
    head += b'\0' * (-len(head) % 4) + struct.pack('<II', step, frame.nbytes)
    return b'\0\x01\0\0' + head, frame.reshape(-1).view(np.uint8).data


def decode_image(raw) -> ImageFields:
    """Read an Image from plain-CDR bytes; the pixel data is a memoryview of ``raw``."""
    reader = CdrReader(raw)
    return ImageFields(
        sec=reader.int32('header.stamp.sec'), nanosec=reader.uint32('header.stamp.nanosec'),
        frame_id=reader.string('header.frame_id'), height=reader.uint32('height'),
        width=reader.uint32('width'), encoding=reader.string('encoding'),
        is_bigendian=bool(reader.uint8('is_bigendian')), step=reader.uint32('step'),
        data=reader.octets('data'))
