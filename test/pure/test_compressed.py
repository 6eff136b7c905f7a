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

"""JPEG CompressedImage bytes: what ROS deserializes and what the policy server decodes."""

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CompressedImage as CompressedImageMsg

from remote_inference_py.policy_server.images import (
    check_compressed, CompressedImage, decode_compressed)
from remote_inference_py.policy_server.manifest import FeatureSpec
from remote_inference_py.transport.compressed import (
    CompressionError, decode_compressed_image, decode_jpeg, encode_compressed_image,
    encode_jpeg, jpeg_format, JpegEncoder)


def scene(height=120, width=160):
    """A smooth picture with a red block: what a camera sees, more or less."""
    y, x = np.mgrid[0:height, 0:width]
    frame = np.stack([(x * 255 // width), (y * 255 // height),
                      np.full_like(x, 90)], axis=2).astype(np.uint8)
    frame[10:40, 20:60] = (230, 20, 20)
    return frame


FEATURE = FeatureSpec(name='observation.images.front', shape=(120, 160, 3), dtype='float32',
                      kind='rgb')


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8'])
def test_a_jpeg_frame_reaches_the_policy_server_decoder_in_rgb(encoding):
    rgb = scene()
    frame = rgb if encoding == 'rgb8' else rgb[:, :, ::-1].copy()
    encoder = JpegEncoder(90)
    raw = encoder.encode(12, 345, 'front_camera', frame, encoding)
    msg = deserialize_message(raw, CompressedImageMsg)   # ROS reads our bytes
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 345)
    assert msg.header.frame_id == 'front_camera'
    assert msg.format == f'{encoding}; jpeg compressed bgr8' == jpeg_format(encoding)
    image = CompressedImage(msg.format, msg.data)
    check_compressed(image, FEATURE)
    decoded = decode_compressed(image, FEATURE)
    assert decoded.shape == (120, 160, 3)
    assert np.abs(decoded.astype(int) - rgb).mean() < 4.0
    assert decoded[25, 40, 0] > 180 and decoded[25, 40, 2] < 70, 'red stays red'
    assert encoder.frames == 1 and encoder.bytes == len(msg.data)
    sec, nanosec, frame_id, fmt, data = decode_compressed_image(raw)
    assert (sec, nanosec, frame_id, fmt, bytes(data)) == (
        12, 345, 'front_camera', msg.format, bytes(msg.data))


def test_quality_trades_size_for_fidelity():
    frame = scene(480, 640)
    rng = np.random.default_rng(1)
    noisy = np.clip(frame + rng.normal(0, 4, frame.shape), 0, 255).astype(np.uint8)
    low, high = encode_jpeg(noisy, 'rgb8', 30), encode_jpeg(noisy, 'rgb8', 95)
    assert len(low) < len(high) < noisy.nbytes / 4
    error_low = np.abs(decode_jpeg(low).astype(int) - noisy).mean()
    error_high = np.abs(decode_jpeg(high).astype(int) - noisy).mean()
    assert error_high < error_low


def test_mono_frames_and_empty_payloads():
    gray = scene()[:, :, 1].copy()
    data = encode_jpeg(gray, 'mono8', 90)
    assert jpeg_format('mono8') == 'mono8; jpeg compressed mono8'
    assert decode_jpeg(data).shape == (120, 160, 3)
    raw = encode_compressed_image(1, 2, '', 'png', b'')
    assert bytes(deserialize_message(raw, CompressedImageMsg).data) == b''


@pytest.mark.parametrize('call, words', [
    (lambda: encode_jpeg(np.zeros((4, 4, 1), np.uint16), '16UC1'), ['8-bit', 'uint16']),
    (lambda: encode_jpeg(np.zeros((4, 4, 3), np.uint8), 'yuv422'), ["'yuv422'"]),
    (lambda: encode_jpeg(np.zeros((4, 4, 3), np.uint8), 'rgb8', 0), ['quality 0']),
    (lambda: decode_jpeg(b'not a jpeg'), ['not a decodable JPEG']),
])
def test_what_cannot_be_compressed_is_named(call, words):
    with pytest.raises(CompressionError) as error:
        call()
    for word in words:
        assert word in str(error.value)


def test_jpeg_quality_is_checked_when_the_encoder_is_made():
    with pytest.raises(ValueError, match='quality 101'):
        JpegEncoder(101)
