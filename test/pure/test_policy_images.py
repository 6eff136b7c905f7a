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

"""Image conversion to model inputs, against hand-computed values (no ROS)."""

import io

import numpy as np
from PIL import Image
import pytest

from remote_inference_py.policy_server.images import (
    check_compressed, check_raw, CompressedImage, InputError, RawImage, to_model_input)
from remote_inference_py.policy_server.manifest import spec_from_dict

STATE = {'name': 'observation.state', 'kind': 'state', 'shape': [1], 'names': ['gripper']}


def feature(**entry):
    """Build one image FeatureSpec through the manifest validation."""
    entry = {'name': 'observation.images.front', 'kind': 'rgb', 'shape': [2, 3, 3], **entry}
    spec = spec_from_dict({'semantics': 'si-radians-v1', 'fps': 30, 'chunk_length': 1,
                           'action': {'names': ['gripper']}, 'features': [STATE, entry]})
    return spec.features[1]


# A 2x3 RGB image with distinct values: pixel (row r, column c) = (10r + c, 100 + c, 200 - r).
RGB = np.array([[[10 * r + c, 100 + c, 200 - r] for c in range(3)] for r in range(2)],
               dtype=np.uint8)


def raw(array, encoding, step=None, bigendian=False):
    height, width = array.shape[:2]
    data = array.tobytes()
    row = len(data) // height
    if step is not None and step > row:
        rows = [data[i * row:(i + 1) * row] + b'\xee' * (step - row) for i in range(height)]
        data = b''.join(rows)
    return RawImage(encoding, height, width, step or row, data, bigendian)


def test_uint8_model_input_is_laid_out_and_resized_but_not_scaled():
    out = to_model_input(raw(RGB, 'rgb8'), feature(model_dtype='uint8'))
    assert out.dtype == np.uint8 and out.flags.c_contiguous
    assert np.array_equal(out, RGB.transpose(2, 0, 1))
    hwc = to_model_input(raw(RGB[:, :, ::-1].copy(), 'bgr8'),
                         feature(model_dtype='uint8', layout='hwc', convert_encodings=['bgr8']),
                         rotate_180=True)
    assert np.array_equal(hwc, RGB[::-1, ::-1])
    small = to_model_input(raw(RGB, 'rgb8'), feature(model_dtype='uint8', model_shape=[3, 1, 1]))
    assert small.dtype == np.uint8 and small.shape == (3, 1, 1)


def test_rgb8_becomes_chw_float_in_unit_range():
    out = to_model_input(raw(RGB, 'rgb8'), feature())
    assert out.dtype == np.float32 and out.shape == (3, 2, 3)
    # Hand-computed: channel 0 of pixel (1, 2) is 12, channel 1 of (0, 1) is 101, channel 2
    # of (1, 0) is 199; each divided by 255.
    assert out[0, 1, 2] == pytest.approx(12 / 255)
    assert out[1, 0, 1] == pytest.approx(101 / 255)
    assert out[2, 1, 0] == pytest.approx(199 / 255)


ALPHA = np.full((2, 3, 1), 77, np.uint8)
OTHER_ENCODINGS = {'bgr8': (RGB[:, :, ::-1], 'channels reordered'),
                   'rgba8': (np.concatenate([RGB, ALPHA], axis=2), 'alpha dropped'),
                   'bgra8': (np.concatenate([RGB[:, :, ::-1], ALPHA], axis=2),
                             'channels reordered, alpha dropped')}


@pytest.mark.parametrize('encoding', sorted(OTHER_ENCODINGS))
def test_other_colour_encodings_are_refused_by_name_unless_allowed_then_in_rgb_order(encoding):
    array, how = OTHER_ENCODINGS[encoding]
    frame = raw(np.ascontiguousarray(array), encoding)
    for call in (check_raw, to_model_input):
        with pytest.raises(InputError, match=(
                rf"camera 'observation.images.front' sent '{encoding}' frames, but the feature "
                rf'declares rgb, 3 channels \(expected rgb8; to convert them \({how}\), list '
                rf"{encoding} in the server's convert_encodings parameter")) as error:
            call(frame, feature())
        assert error.value.code == 'encoding'
    allowed = feature(convert_encodings=[encoding])
    conversion = check_raw(frame, allowed)
    assert conversion.encoding == encoding and conversion.describe(allowed) == (
        f'observation.images.front: {encoding} frames converted to rgb8 ({how}; allowed by '
        'convert_encodings)')
    assert np.array_equal(to_model_input(frame, allowed),
                          to_model_input(raw(RGB, 'rgb8'), feature()))
    assert not check_raw(raw(RGB, 'rgb8'), allowed)   # rgb8 frames: nothing to say


def test_row_padding_in_step_is_skipped():
    out = to_model_input(raw(RGB, 'rgb8', step=16), feature())
    assert np.array_equal(out, to_model_input(raw(RGB, 'rgb8'), feature()))


def test_hwc_layout_keeps_channels_last():
    out = to_model_input(raw(RGB, 'rgb8'), feature(layout='hwc'))
    assert out.shape == (2, 3, 3)
    assert out[1, 2, 0] == pytest.approx(12 / 255)


def test_mono8_feeds_grayscale_and_is_repeated_for_colour_only_where_allowed():
    gray = np.array([[0, 51, 255], [102, 153, 204]], dtype=np.uint8)
    out = to_model_input(raw(gray[:, :, None], 'mono8'), feature(shape=[2, 3, 1]))
    assert out.shape == (1, 2, 3) and out[0, 0, 1] == pytest.approx(0.2)
    assert not check_raw(raw(gray[:, :, None], 'mono8'), feature(shape=[2, 3, 1]))
    # A colour feature refuses mono8 by name: camera, encoding and what it expects.
    for call in (check_raw, to_model_input):
        with pytest.raises(InputError, match=r"camera 'observation.images.front' sent 'mono8' "
                           r'frames, but the feature declares rgb, 3 channels \(expected '
                           r'rgb8; to convert them \(grey repeated in 3 channels\), list mono8 '
                           r"in the server's convert_encodings") as error:
            call(raw(gray[:, :, None], 'mono8'), feature())
        assert error.value.code == 'encoding'
    allowed = feature(convert_encodings=['mono8'])
    conversion = check_raw(raw(gray[:, :, None], 'mono8'), allowed)
    assert conversion.encoding == 'mono8'
    assert 'mono8 frames converted to rgb8 (grey repeated' in conversion.describe(allowed)
    colour = to_model_input(raw(gray[:, :, None], 'mono8'), allowed)
    assert colour.shape == (3, 2, 3) and np.all(colour[:, 1, 0] == pytest.approx(0.4))
    assert not check_raw(raw(RGB, 'rgb8'), allowed)   # colour frames: nothing to say


def test_colour_frames_on_a_greyscale_feature_are_refused_by_name():
    for encoding in ('rgb8', 'bgr8'):
        with pytest.raises(InputError, match=rf"sent '{encoding}' frames, but the feature "
                           r'declares rgb, 1 channel \(greyscale\) \(expected mono8\)$'):
            check_raw(raw(RGB, encoding), feature(shape=[2, 3, 1]))


def compressed(mode, fmt='JPEG', colour=90):
    buffer = io.BytesIO()
    Image.new(mode, (3, 2), colour).save(buffer, format=fmt)
    return CompressedImage(fmt.lower(), buffer.getvalue())


def test_greyscale_and_colour_jpegs_are_checked_against_the_channels():
    with pytest.raises(InputError, match=r"camera 'observation.images.front' sent greyscale "
                       r'JPEG frames, but the feature declares rgb, 3 channels \(expected rgb8; '
                       r'.*list mono8'):
        check_compressed(compressed('L'), feature())
    conversion = check_compressed(compressed('L'), feature(convert_encodings=['mono8']))
    assert (conversion.encoding, conversion.frames) == ('mono8', 'greyscale JPEG')
    assert not check_compressed(compressed('RGB'), feature())
    with pytest.raises(InputError, match=r'sent colour JPEG frames, but the feature declares '
                       r'rgb, 1 channel \(greyscale\) \(expected mono8\)'):
        check_compressed(compressed('RGB'), feature(shape=[2, 3, 1]))
    assert not check_compressed(compressed('L'), feature(shape=[2, 3, 1]))


def test_an_rgba_png_counts_as_rgba8_and_other_modes_are_refused_by_name():
    with pytest.raises(InputError, match=r'sent RGBA PNG frames, but .*list rgba8'):
        check_compressed(compressed('RGBA', 'PNG'), feature())
    allowed = feature(convert_encodings=['rgba8'])
    rgba = compressed('RGBA', 'PNG', (90, 90, 90, 10))   # nearly transparent: alpha dropped
    conversion = check_compressed(rgba, allowed)
    assert conversion.describe(allowed) == ('observation.images.front: RGBA PNG frames '
                                            'converted to rgb8 (alpha dropped; allowed by '
                                            'convert_encodings)')
    assert np.allclose(to_model_input(rgba, allowed), 90 / 255)
    with pytest.raises(InputError, match=r'sent PNG frames of mode P, which the server does '
                       r'not convert'):
        check_compressed(compressed('P', 'PNG'), allowed)


def test_rotate_180_reverses_rows_and_columns():
    out = to_model_input(raw(RGB, 'rgb8'), feature(), rotate_180=True)
    # After rotation, pixel (0, 0) is the former (1, 2): channel 0 = 12.
    assert out[0, 0, 0] == pytest.approx(12 / 255)
    assert out[0, 1, 2] == pytest.approx(0 / 255)


def test_resize_to_model_shape_keeps_orientation():
    image = np.zeros((40, 60, 3), np.uint8)
    image[:, 30:, 0] = 255                      # right half red
    out = to_model_input(raw(image, 'rgb8'), feature(shape=[40, 60, 3],
                                                     model_shape=[3, 4, 6]))
    assert out.shape == (3, 4, 6)
    assert np.all(out[0, :, :2] == 0.0) and np.all(out[0, :, 4:] == 1.0)
    uniform = np.full((40, 60, 3), 128, np.uint8)
    out = to_model_input(raw(uniform, 'rgb8'), feature(shape=[40, 60, 3],
                                                       model_shape=[3, 4, 6]))
    assert np.allclose(out, 128 / 255)


def depth_feature(**entry):
    return feature(kind='depth', shape=[2, 2, 1], dtype='uint16', **entry)


def test_16uc1_depth_in_millimetres_becomes_metres_and_is_clamped():
    depth = np.array([[0, 500], [1500, 4000]], dtype=np.uint16)[:, :, None]
    out = to_model_input(raw(depth, '16UC1'), depth_feature(depth_range_m=[0.2, 2.0]))
    assert out.shape == (1, 2, 2)
    assert np.allclose(out[0], [[0.2, 0.5], [1.5, 2.0]])


def test_big_endian_16uc1_and_32fc1_depth():
    depth = np.array([[250, 500], [750, 1000]], dtype='>u2')[:, :, None]
    out = to_model_input(raw(depth, '16UC1', bigendian=True), depth_feature())
    assert np.allclose(out[0], [[0.25, 0.5], [0.75, 1.0]])
    metres = np.array([[0.25, np.nan], [0.75, 3.0]], dtype=np.float32)[:, :, None]
    out = to_model_input(raw(metres, '32FC1'),
                         feature(kind='depth', shape=[2, 2, 1], dtype='float32',
                                 depth_range_m=[0.1, 2.0]))
    assert np.allclose(out[0], [[0.25, 0.1], [0.75, 2.0]])


def test_depth_resize_is_nearest_neighbour():
    depth = np.array([[1000, 2000], [3000, 4000]], dtype=np.uint16)
    depth = np.repeat(np.repeat(depth, 2, axis=0), 2, axis=1)[:, :, None]   # 4x4 blocks
    out = to_model_input(raw(depth, '16UC1'),
                         feature(kind='depth', shape=[4, 4, 1], dtype='uint16',
                                 model_shape=[1, 2, 2]))
    assert np.allclose(out[0], [[1.0, 2.0], [3.0, 4.0]])


def test_wrong_size_and_encoding_are_named():
    with pytest.raises(InputError, match=r'image is 3x2 .* declares 640x480 and is not '
                                         r'resized \(resize: fixed\)') as error:
        check_raw(raw(RGB, 'rgb8'), feature(shape=[480, 640, 3]))
    assert error.value.code == 'size'
    with pytest.raises(InputError, match=r"camera 'observation.images.front' sent 'yuv422' "
                                         r'frames, but the feature declares rgb') as error:
        check_raw(RawImage('yuv422', 2, 3, 6, bytes(12)), feature())
    assert error.value.code == 'encoding'
    with pytest.raises(InputError, match='16UC1'):
        check_raw(raw(RGB, 'rgb8'), depth_feature())
    with pytest.raises(InputError, match='too small') as error:
        check_raw(RawImage('rgb8', 2, 3, 9, bytes(10)), feature())
    assert error.value.code == 'buffer'


def encode(array, fmt):
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=fmt)
    return buffer.getvalue()


def test_png_round_trip_is_exact():
    image = CompressedImage('png', encode(RGB, 'PNG'))
    check_compressed(image, feature())
    assert np.array_equal(to_model_input(image, feature()),
                          to_model_input(raw(RGB, 'rgb8'), feature()))


def test_jpeg_decodes_close_to_the_original():
    uniform = np.full((16, 16, 3), (200, 40, 90), np.uint8)
    image = CompressedImage('rgb8; jpeg compressed bgr8', encode(uniform, 'JPEG'))
    spec = feature(shape=[16, 16, 3])
    check_compressed(image, spec)
    out = to_model_input(image, spec)
    assert np.allclose(out[:, 8, 8], np.array([200, 40, 90]) / 255, atol=3 / 255)


def test_compressed_depth_png_is_16_bit_millimetres():
    depth = np.array([[100, 2000], [3000, 65535]], dtype=np.uint16)
    data = bytes(12) + encode(depth, 'PNG')
    image = CompressedImage('16UC1; compressedDepth png', data)
    spec = depth_feature(depth_range_m=[0.0, 10.0])
    check_compressed(image, spec)
    assert np.allclose(to_model_input(image, spec)[0], [[0.1, 2.0], [3.0, 10.0]])


def test_corrupt_jpeg_is_named_with_its_feature():
    good = encode(np.zeros((2, 3, 3), np.uint8), 'JPEG')
    corrupt = CompressedImage('jpeg', good[:20] + b'garbage' * 5)
    with pytest.raises(InputError, match=r"corrupt JPEG for feature 'observation.images.front'"):
        to_model_input(corrupt, feature())
    with pytest.raises(InputError) as error:
        check_compressed(CompressedImage('jpeg', b'not an image at all'), feature())
    assert error.value.code == 'corrupt'
    with pytest.raises(InputError, match='not supported') as error:
        check_compressed(CompressedImage('tiff', good), feature())
    with pytest.raises(InputError, match=r'image is 3x2 .* declares 6x4'):
        check_compressed(CompressedImage('jpeg', good), feature(shape=[4, 6, 3]))


def test_a_decompression_bomb_is_refused_by_name_not_raised(monkeypatch):
    image = CompressedImage('jpeg', encode(np.zeros((8, 8, 3), np.uint8), 'JPEG'))
    monkeypatch.setattr(Image, 'MAX_IMAGE_PIXELS', 16)   # 64 pixels: more than twice that
    spec = feature(shape=[8, 8, 3])
    for call in (check_compressed, to_model_input):
        with pytest.raises(InputError, match="corrupt JPEG for feature 'observation.images.front'"
                           ': Image size .* exceeds limit') as error:
            call(image, spec)
        assert error.value.code == 'corrupt'


def test_resize_any_takes_any_size_and_interpolates_as_torch_bilinear():
    # 1x4 -> 1x2 with align_corners=False: output column j samples the source at
    # (j + 0.5) * 2 - 0.5 = 0.5 and 2.5, the mean of columns (0, 1) and (2, 3).
    row = np.array([[[0] * 3, [100] * 3, [200] * 3, [250] * 3]], np.uint8)
    anysize = feature(shape=[1, 2, 3], model_shape=[3, 1, 2], resize='any',
                      interpolation='torch_bilinear', model_dtype='uint8')
    conversion = check_raw(raw(row, 'rgb8'), anysize)
    assert conversion.size == (1, 4) and conversion.model_size == (1, 2)
    text = conversion.describe(anysize)
    assert text == ("observation.images.front: 4x1 frames resized to 2x1 (the policy's input) "
                    "by torch interpolate, bilinear, align_corners=False (as LeRobot's "
                    'asynchronous server)')
    out = to_model_input(raw(row, 'rgb8'), anysize)
    assert out.shape == (3, 1, 2) and out.dtype == np.uint8
    assert out[:, 0, 0].tolist() == [50] * 3 and out[:, 0, 1].tolist() == [225] * 3
    # The declared size itself needs no resize, and nothing is said about it.
    assert not check_raw(raw(row[:, :2], 'rgb8'), anysize)
    # Pillow's bilinear filter averages differently when shrinking: the two are not the same.
    big = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    torch_out = to_model_input(raw(big, 'rgb8'), anysize)
    pillow_out = to_model_input(raw(big, 'rgb8'), feature(
        shape=[1, 2, 3], model_shape=[3, 1, 2], resize='any', model_dtype='uint8'))
    assert torch_out.shape == pillow_out.shape == (3, 1, 2)
    assert not np.array_equal(torch_out, pillow_out)


def test_fixed_size_refuses_other_sizes_and_channels_stay_checked():
    fixed = feature(shape=[1, 2, 3], model_shape=[3, 1, 2])
    row = np.zeros((1, 4, 3), np.uint8)
    with pytest.raises(InputError, match=r'image is 4x1 .* declares 2x1 and is not resized'):
        check_raw(raw(row, 'rgb8'), fixed)
    with pytest.raises(InputError, match=r'image is 4x1 .* declares 2x1 and is not resized'):
        to_model_input(raw(row, 'rgb8'), fixed)
    anysize = feature(shape=[1, 2, 3], model_shape=[3, 1, 2], resize='any')
    with pytest.raises(InputError, match="sent 'mono8' frames"):
        check_raw(raw(row[:, :, :1].copy(), 'mono8'), anysize)
    with pytest.raises(InputError, match='empty'):
        check_raw(RawImage('rgb8', 0, 4, 12, b''), anysize)


def test_manifest_resize_fields_are_validated_and_round_trip():
    entry = feature(resize='any', interpolation='torch_bilinear', convert_encodings=['bgr8'],
                    convert_mono=True)   # the older spelling of convert_encodings: [mono8]
    assert entry.resizes and entry.to_dict()['resize'] == 'any'
    assert entry.to_dict()['interpolation'] == 'torch_bilinear'
    assert entry.convert_encodings == ('bgr8', 'mono8')
    assert entry.to_dict()['convert_encodings'] == ['bgr8', 'mono8']
    assert feature(**entry.to_dict()) == entry
    assert 'resize' not in feature().to_dict() and not feature().resizes
    for bad, match in (({'resize': 'sometimes'}, "resize 'sometimes' is not one of fixed, any"),
                       ({'interpolation': 'cubic'}, "interpolation 'cubic' is not one of"),
                       ({'convert_mono': 'yes'}, 'convert_mono is true or false'),
                       ({'convert_encodings': ['yuv422']},
                        'convert_encodings must list encodings among bgr8, rgba8, bgra8, mono8'),
                       ({'convert_encodings': 'bgr8'}, 'convert_encodings must list'),
                       ({'convert_mono': True, 'shape': [2, 3, 1]},
                        r'applies to rgb features with 3 channels only, got rgb \[2, 3, 1\]')):
        with pytest.raises(ValueError, match=match):
            feature(**bad)
    with pytest.raises(ValueError, match='apply to image features only'):
        spec_from_dict({'semantics': 'si-radians-v1', 'fps': 30, 'chunk_length': 1,
                        'action': {'names': ['gripper']},
                        'features': [{**STATE, 'resize': 'any'}]})
