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
Camera images to model inputs, with no ROS in it.

Two steps, so that the subscription callback stays cheap:

1. :func:`check_raw` / :func:`check_compressed` run when a message arrives: encoding or
   format, and size against the declared feature shape, from metadata only (a compressed
   image's header is read, not decoded). A bad frame is rejected with an :class:`InputError`
   naming the problem and never used. A 3-channel colour feature takes rgb8 (or a colour
   JPEG/PNG), a 1-channel one mono8 (or a greyscale JPEG/PNG); another encoding feeds it only
   when the feature lists it in ``convert_encodings`` (bgr8, rgba8, bgra8, mono8; an RGBA PNG
   counts as rgba8, a greyscale JPEG/PNG as mono8), and a frame of another size only when the
   feature resizes (``resize: any``). Both return what they will convert
   (:class:`Conversion`), which the server logs once.
2. :func:`to_model_input` runs in the inference worker for the frames a request uses: decode
   (``sensor_msgs/Image``: rgb8, bgr8, rgba8, bgra8, mono8; 16UC1/mono16 depth in millimetres
   and 32FC1 depth in metres; ``sensor_msgs/CompressedImage``: JPEG and PNG, including
   ``compressedDepth`` 16-bit PNG; a uint16 depth feature takes 16UC1 or mono16, a float32
   one 32FC1), optional 180 degree rotation, resize to the model's size
   (colour: Pillow's bilinear filter, or torch's ``interpolate`` as LeRobot's asynchronous
   server does, as the feature's ``interpolation`` says; depth: the nearest sample, which
   must not invent depths at edges), RGB
   channel order, uint8 scaled to float32 [0, 1], depth converted to metres and clamped to
   the declared range, then the channel layout the model takes (chw or hwc).
"""

import dataclasses
import io
from typing import Any, Optional, Tuple

import numpy as np

from remote_inference_py.policy_server.manifest import ENCODING_CONVERSIONS, FeatureSpec

# encoding -> (channels, numpy dtype, channel order of colour encodings)
RAW_ENCODINGS = {
    'rgb8': (3, np.uint8, 'rgb'),
    'bgr8': (3, np.uint8, 'bgr'),
    'rgba8': (4, np.uint8, 'rgb'),
    'bgra8': (4, np.uint8, 'bgr'),
    'mono8': (1, np.uint8, ''),
    'mono16': (1, np.uint16, ''),
    '16UC1': (1, np.uint16, ''),
    '32FC1': (1, np.float32, ''),
}
COLOUR_ENCODING = 'rgb8'
MONO_ENCODING = 'mono8'
MONO_MODES = ('1', 'L', 'LA', 'I', 'I;16', 'F')   # Pillow modes of a greyscale JPEG / PNG
# Pillow mode of a JPEG / PNG colour-feature frame -> the encoding it counts as, its name.
COMPRESSED_MODES = {'RGB': (COLOUR_ENCODING, 'colour'), 'RGBA': ('rgba8', 'RGBA'),
                    **{mode: (MONO_ENCODING, 'greyscale') for mode in MONO_MODES}}
DEPTH_ENCODINGS = ('16UC1', 'mono16', '32FC1')
COMPRESSED_DEPTH_HEADER_BYTES = 12   # image_transport's compressedDepth config header
MILLIMETRES_PER_METRE = 1000.0
_INV_255 = np.float32(1.0 / 255.0)


class InputError(ValueError):
    """A sample cannot be used; ``code`` is a short category for counters and log throttling."""

    def __init__(self, code: str, message: str, stream: str = ''):
        """Store the category, the message and (when known) the stream it came from."""
        super().__init__(message)
        self.code = code
        self.stream = stream


@dataclasses.dataclass(frozen=True)
class Conversion:
    """What the server does to a frame beyond decoding it, said once in the log."""

    size: Tuple[int, int]        # (height, width) of the frames
    model_size: Tuple[int, int]  # (height, width) the model takes
    encoding: str = ''           # the encoding converted (a key of ENCODING_CONVERSIONS)
    frames: str = ''             # what the log calls those frames (default: the encoding)

    def describe(self, feature: FeatureSpec) -> str:
        """Say it in words, naming the feature, both sizes and the interpolation."""
        parts = []
        if self.size != self.model_size:
            how = ('nearest sample' if feature.kind == 'depth'
                   else _INTERPOLATION_TEXT[feature.interpolation])
            parts.append(f'{_size_text(self.size)} frames resized to '
                         f"{_size_text(self.model_size)} (the policy's input) by {how}")
        if self.encoding:
            parts.append(f'{self.frames or self.encoding} frames converted to rgb8 '
                         f'({ENCODING_CONVERSIONS[self.encoding]}; allowed by convert_encodings)')
        return f'{feature.name}: ' + '; '.join(parts)

    def __bool__(self) -> bool:
        """Whether there is anything to say."""
        return self.size != self.model_size or bool(self.encoding)


_INTERPOLATION_TEXT = {
    'pillow_bilinear': "Pillow's bilinear filter",
    'torch_bilinear': "torch interpolate, bilinear, align_corners=False (as LeRobot's "
                      'asynchronous server)',
}


def _size_text(size: Tuple[int, int]) -> str:
    return f'{size[1]}x{size[0]}'


@dataclasses.dataclass
class RawImage:
    """The fields of a ``sensor_msgs/Image`` the conversion needs (data is not copied)."""

    encoding: str
    height: int
    width: int
    step: int
    data: Any
    is_bigendian: bool = False


@dataclasses.dataclass
class CompressedImage:
    """The fields of a ``sensor_msgs/CompressedImage`` (format and encoded bytes)."""

    format: str
    data: Any


def compressed_kind(fmt: str) -> str:
    """Return 'jpeg', 'png' or 'depth_png' for an image_transport format string."""
    text = fmt.lower()
    if 'compresseddepth' in text:
        return 'depth_png'
    if 'png' in text:
        return 'png'
    if 'jpeg' in text or 'jpg' in text:
        return 'jpeg'
    raise InputError('encoding', f'compressed format {fmt!r} is not supported (jpeg, png, '
                                 f'compressedDepth png)')


def _colour_text(feature: FeatureSpec) -> str:
    return ('rgb, 3 channels' if feature.channels == 3 else 'rgb, 1 channel (greyscale)')


def _check_encoding(encoding: str, feature: FeatureSpec, frames: str = '') -> str:
    """Refuse an encoding the feature neither declares nor allows; return the one converted.

    ``frames`` names the frames in the refusal when they are not raw (e.g. 'greyscale JPEG').
    """
    hint = ''
    if feature.kind == 'rgb':
        declared = _colour_text(feature)
        taken = (COLOUR_ENCODING if feature.channels == 3 else MONO_ENCODING,
                 *feature.convert_encodings)
        if encoding in taken:
            return '' if encoding == taken[0] else encoding
        if feature.channels == 3 and encoding in ENCODING_CONVERSIONS:
            hint = (f'; to convert them ({ENCODING_CONVERSIONS[encoding]}), list {encoding} in '
                    "the server's convert_encodings parameter or the feature's "
                    'convert_encodings in the manifest')
    else:
        declared = f'depth, {feature.dtype}'
        taken = ('32FC1',) if feature.dtype == 'float32' else ('16UC1', 'mono16')
        if encoding in taken:
            return ''
    raise InputError('encoding', f'camera {feature.name!r} sent {frames or repr(encoding)} '
                                 f'frames, but the feature declares {declared} (expected '
                                 f'{", ".join(taken)}{hint})')


def _check_size(height: int, width: int, feature: FeatureSpec) -> Conversion:
    """Refuse a frame size the feature cannot take; return the resize it needs."""
    want_h, want_w = feature.image_size
    if feature.resizes:
        if height < 1 or width < 1:
            raise InputError('size', f'image is {width}x{height} (width x height): empty, for '
                                     f'feature {feature.name!r}')
    elif (height, width) != (want_h, want_w):
        raise InputError('size', f'image is {width}x{height} (width x height) but feature '
                                 f'{feature.name!r} declares {want_w}x{want_h} and is not '
                                 'resized (resize: fixed)')
    return Conversion((height, width), feature.model_size if feature.model_shape
                      else (want_h, want_w))


def check_raw(image: RawImage, feature: FeatureSpec) -> Conversion:
    """Reject a raw image whose encoding, size or buffer cannot feed ``feature``."""
    converted = _check_encoding(image.encoding, feature)
    conversion = _check_size(image.height, image.width, feature)
    channels, dtype, _ = RAW_ENCODINGS[image.encoding]
    row = image.width * channels * np.dtype(dtype).itemsize
    if image.step < row or len(image.data) < image.step * image.height:
        raise InputError('buffer', f'image buffer of {len(image.data)} bytes with step '
                                   f'{image.step} is too small for {image.width}x{image.height} '
                                   f'{image.encoding}')
    return dataclasses.replace(conversion, encoding=converted)


def check_compressed(image: CompressedImage, feature: FeatureSpec) -> Conversion:
    """Reject a compressed image whose format, mode or header size cannot feed ``feature``."""
    kind = compressed_kind(image.format)
    if (kind == 'depth_png') != (feature.kind == 'depth') or (
            kind == 'depth_png' and feature.dtype != 'uint16'):
        raise InputError('encoding', f'compressed format {image.format!r} cannot feed '
                                     f'{feature.kind} feature {feature.name!r}')
    from PIL import Image, UnidentifiedImageError
    data = _compressed_payload(image, kind)
    try:
        with Image.open(io.BytesIO(data)) as header:
            width, height = header.size
            mode = header.mode
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as error:
        raise InputError('corrupt', f'corrupt {_label(kind)} for feature {feature.name!r}: '
                                    f'{error}') from None
    converted = frames = ''
    if feature.kind == 'rgb':
        if mode not in COMPRESSED_MODES:
            raise InputError('encoding', f'camera {feature.name!r} sent {_label(kind)} frames '
                                         f'of mode {mode}, which the server does not convert '
                                         '(expected RGB, RGBA or a greyscale mode)')
        encoding, name = COMPRESSED_MODES[mode]
        frames = f'{name} {_label(kind)}'
        converted = _check_encoding(encoding, feature, frames)
    return dataclasses.replace(_check_size(height, width, feature), encoding=converted,
                               frames=frames if converted else '')


def _label(kind: str) -> str:
    return {'jpeg': 'JPEG', 'png': 'PNG', 'depth_png': 'compressedDepth PNG'}[kind]


def _compressed_payload(image: CompressedImage, kind: str) -> bytes:
    data = bytes(image.data) if not isinstance(image.data, bytes) else image.data
    if kind == 'depth_png':
        data = data[COMPRESSED_DEPTH_HEADER_BYTES:]
    return data


def decode_raw(image: RawImage) -> np.ndarray:
    """Return a raw image as a ``(height, width, channels)`` array; colour in RGB order."""
    channels, native, order = RAW_ENCODINGS[image.encoding]
    dtype = np.dtype(native)
    if dtype.itemsize > 1:
        dtype = dtype.newbyteorder('>' if image.is_bigendian else '<')
    buffer = np.frombuffer(image.data, dtype=np.uint8, count=image.step * image.height)
    rows = buffer.reshape(image.height, image.step)
    row_bytes = image.width * channels * dtype.itemsize
    if image.step != row_bytes:
        rows = np.ascontiguousarray(rows[:, :row_bytes])
    array = rows.view(dtype).reshape(image.height, image.width, channels)
    if not dtype.isnative:
        array = array.astype(np.dtype(native))
    if channels == 4:
        array = array[:, :, :3]
    if order == 'bgr':
        array = array[:, :, ::-1]
    return array


def decode_compressed(image: CompressedImage, feature: FeatureSpec) -> np.ndarray:
    """Decode JPEG or PNG to ``(height, width, channels)``; InputError names a corrupt image."""
    from PIL import Image, UnidentifiedImageError
    kind = compressed_kind(image.format)
    data = _compressed_payload(image, kind)
    try:
        with Image.open(io.BytesIO(data)) as decoded:
            decoded.load()
            if feature.kind == 'depth':
                array = np.asarray(decoded)
                if array.dtype != np.uint16:
                    array = array.astype(np.uint16)
                return array[:, :, None] if array.ndim == 2 else array
            mode = 'RGB' if feature.channels == 3 else 'L'
            converted = decoded if decoded.mode == mode else decoded.convert(mode)
            array = np.asarray(converted)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError,
            Image.DecompressionBombError) as error:
        raise InputError('corrupt', f'corrupt {_label(kind)} for feature {feature.name!r}: '
                                    f'{error}') from None
    return array[:, :, None] if array.ndim == 2 else array


def _resize(array: np.ndarray, size: Tuple[int, int], depth: bool,
            interpolation: str = 'pillow_bilinear') -> np.ndarray:
    """Resize ``(h, w, c)`` to ``size`` = (height, width)."""
    from PIL import Image
    height, width = size
    if depth:
        resized = Image.fromarray(array[:, :, 0].astype(np.float32), mode='F').resize(
            (width, height), Image.NEAREST)
        return np.asarray(resized, dtype=np.float32)[:, :, None]
    if interpolation == 'torch_bilinear':
        # LeRobot's asynchronous server: interpolate the uint8 (C, H, W) frame, no antialias.
        import torch
        frame = torch.from_numpy(np.array(array, order='C')).permute(2, 0, 1).unsqueeze(0)
        resized = torch.nn.functional.interpolate(frame, size=(height, width), mode='bilinear',
                                                  align_corners=False)
        return resized[0].permute(1, 2, 0).numpy()
    if array.shape[2] == 1:
        resized = Image.fromarray(array[:, :, 0]).resize((width, height), Image.BILINEAR)
        return np.asarray(resized)[:, :, None]
    resized = Image.fromarray(np.ascontiguousarray(array)).resize((width, height),
                                                                  Image.BILINEAR)
    return np.asarray(resized)


def to_model_input(image: Any, feature: FeatureSpec, rotate_180: bool = False,
                   encoding: Optional[str] = None, normalize: bool = False) -> np.ndarray:
    """
    Convert one decoded or encoded frame to the array the model takes (float32, or uint8).

    ``image`` is a :class:`RawImage`, a :class:`CompressedImage` or an already decoded
    ``(height, width, channels)`` array (``encoding`` then says whether uint16 depth is in
    millimetres: '16UC1'/'mono16', or float32 metres: '32FC1'). With ``normalize``, the
    feature's normalization is applied too, fused with the scaling to [0, 1] (one pass less
    over the image).
    """
    if isinstance(image, RawImage):
        encoding = image.encoding
        _check_encoding(encoding, feature)   # raises, naming the feature
        array = decode_raw(image)
    elif isinstance(image, CompressedImage):
        array = decode_compressed(image, feature)
        encoding = '16UC1' if feature.kind == 'depth' else 'rgb8'
    else:
        array = np.asarray(image)
        if array.ndim == 2:
            array = array[:, :, None]
    _check_size(array.shape[0], array.shape[1], feature)
    if rotate_180:
        array = array[::-1, ::-1]
    depth = feature.kind == 'depth'
    if depth:
        array = array.astype(np.float32)
        if encoding != '32FC1':
            array *= np.float32(1.0 / MILLIMETRES_PER_METRE)
        array = np.nan_to_num(array, nan=0.0, posinf=0.0, neginf=0.0)
    elif feature.channels == 3 and array.shape[2] == 1:
        _check_encoding(MONO_ENCODING, feature)   # raises unless allowed, naming the feature
        array = np.repeat(array, 3, axis=2)   # mono camera feeding a colour feature
    if array.shape[:2] != feature.model_size:
        array = _resize(array, feature.model_size, depth, feature.interpolation)
    if feature.model_dtype == 'uint8':   # the model scales and normalizes itself
        return np.ascontiguousarray(array.transpose(2, 0, 1) if feature.layout == 'chw'
                                    else array)
    scale, offset = (feature.normalization.affine() if normalize
                     else (np.float32(1.0), np.float32(0.0)))
    if depth:
        if feature.depth_range_m is not None:
            low, high = feature.depth_range_m
            np.clip(array, low, high, out=array)
        source = array
    else:
        source = array
        scale = scale * _INV_255
    if feature.layout == 'chw':
        # A contiguous uint8 copy first: then the float pass reads memory in order (faster).
        source = np.ascontiguousarray(source.transpose(2, 0, 1))
    out = np.empty(source.shape, dtype=np.float32)
    np.multiply(source, scale, out=out)
    if normalize and feature.normalization.mode != 'identity':
        out += offset
    return out
