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
JPEG frames for another host: ``sensor_msgs/CompressedImage`` straight to its CDR bytes.

A 640x480 rgb8 frame is 921,600 bytes; at 30 Hz that is 27.6 MB/s per camera, more than a
typical Wi-Fi link between a robot computer and a GPU host carries for two cameras. The
hardware interface therefore also offers ``<image topic>/compressed`` (what image_transport's
compressed plugin publishes and ``ros2 bag``/RViz/Foxglove read), encoded only while that
topic has a subscriber. :func:`encode_jpeg` compresses with OpenCV (imported on first use;
a clear error names ``opencv-python-headless`` when it is missing); the ``format`` string is
image_transport's (``rgb8; jpeg compressed bgr8``), which the policy server's decoder
(:mod:`..policy_server.images`) reads. :func:`encode_compressed_image` lays out the message::

    header.stamp.sec int32, header.stamp.nanosec uint32, header.frame_id string,
    format string, data sequence<uint8>

in plain little-endian CDR (XCDR1), so ``publisher.publish(raw)`` sends the JPEG bytes with
one copy and no per-byte conversion in Python.
"""

import struct

import numpy as np

from remote_inference_py.transport.cdr import CdrReader

COMPRESSED_SUFFIX = '/compressed'
DEFAULT_JPEG_QUALITY = 80
_CDR_LE = b'\0\x01\0\0'


class CompressionError(RuntimeError):
    """A frame could not be compressed; the message says why."""


def _cv2():
    try:
        import cv2
    except ImportError as error:
        raise CompressionError(
            f'compressed images need OpenCV ({error}); install opencv-python-headless '
            '(pip install opencv-python-headless)') from None
    return cv2


def jpeg_format(encoding: str) -> str:
    """Return image_transport's format string for a JPEG of a frame in ``encoding``."""
    return f'{encoding}; jpeg compressed {"mono8" if encoding == "mono8" else "bgr8"}'


def encode_jpeg(frame: np.ndarray, encoding: str, quality: int = DEFAULT_JPEG_QUALITY) -> bytes:
    """Compress an (h, w, 3) rgb8/bgr8 or (h, w[, 1]) mono8 uint8 frame to JPEG bytes."""
    cv2 = _cv2()
    if not 1 <= int(quality) <= 100:
        raise CompressionError(f'JPEG quality {quality} is not in 1..100')
    if frame.dtype != np.uint8:
        raise CompressionError(f'JPEG needs 8-bit frames; got {frame.dtype} ({encoding})')
    if encoding in ('rgb8', 'rgba8'):
        frame = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR if encoding == 'rgb8'
                             else cv2.COLOR_RGBA2BGR)
    elif encoding == 'bgra8':
        frame = cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)
    elif encoding not in ('bgr8', 'mono8'):
        raise CompressionError(f'encoding {encoding!r} cannot be sent as JPEG (rgb8, bgr8, '
                               'rgba8, bgra8, mono8)')
    ok, data = cv2.imencode('.jpg', frame, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise CompressionError(f'OpenCV could not encode a {frame.shape} {encoding} frame')
    return data.tobytes()


def decode_jpeg(data) -> np.ndarray:
    """Decode JPEG bytes to an (h, w, 3) RGB uint8 array (for tools and benchmarks)."""
    cv2 = _cv2()
    frame = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if frame is None:
        raise CompressionError('not a decodable JPEG')
    return cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)


def _string(text: str, offset: int) -> bytes:
    raw = text.encode() + b'\0'
    return b'\0' * (-offset % 4) + struct.pack('<I', len(raw)) + raw


def encode_compressed_image(sec: int, nanosec: int, frame_id: str, fmt: str,
                            data: bytes) -> bytes:
    """Return the little-endian CDR bytes of a ``sensor_msgs/CompressedImage``."""
    body = struct.pack('<iI', sec, nanosec)
    body += _string(frame_id, len(body))
    body += _string(fmt, len(body))
    body += b'\0' * (-len(body) % 4) + struct.pack('<I', len(data))
    return b''.join((_CDR_LE, body, data))


def decode_compressed_image(raw):
    """Return (sec, nanosec, frame_id, format, data view) of plain-CDR CompressedImage bytes."""
    reader = CdrReader(raw)
    sec = reader.int32('header.stamp.sec')
    nanosec = reader.uint32('header.stamp.nanosec')
    frame_id = reader.string('header.frame_id')
    fmt = reader.string('format')
    return sec, nanosec, frame_id, fmt, reader.octets('data')


class JpegEncoder:
    """Encode frames of one stream to serialized CompressedImage messages."""

    def __init__(self, quality: int = DEFAULT_JPEG_QUALITY):
        """Check the quality (1..100) now, so a bad parameter fails at start-up."""
        if isinstance(quality, bool) or not 1 <= int(quality) <= 100:
            raise ValueError(f'JPEG quality {quality!r} is not in 1..100')
        self.quality = int(quality)
        self.frames = 0
        self.bytes = 0

    def encode(self, sec: int, nanosec: int, frame_id: str, frame: np.ndarray,
               encoding: str) -> bytes:
        """Return the CDR bytes of one frame as a JPEG CompressedImage."""
        data = encode_jpeg(frame, encoding, self.quality)
        self.frames += 1
        self.bytes += len(data)
        return encode_compressed_image(sec, nanosec, frame_id, jpeg_format(encoding), data)
