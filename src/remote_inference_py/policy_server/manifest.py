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
What a policy consumes and produces: the manifest beside a TorchScript or .pt2 file.

A manifest is a small JSON or YAML file (``model.pt2`` + ``model.json``; see
:func:`manifest_path_for`)::

    format_version: 1
    policy: act                          # informational, except flow_matching
    semantics: so101-degrees-gripper-percent-v1   # action units and order
    fps: 30                              # action rate [Hz]
    chunk_length: 50                     # steps the model outputs per forward pass
    max_batch_size: 1                    # > 1 when the model takes a batch dimension > 1
    action:
      names: [shoulder_pan.pos, shoulder_lift.pos, elbow_flex.pos, wrist_flex.pos,
              wrist_roll.pos, gripper.pos]
      normalization: {mode: mean_std, mean: [...], std: [...]}
    features:                            # model inputs, in the order forward() takes them
      - name: observation.state
        kind: state                      # state | rgb | depth | privileged
        shape: [6]                       # as the robot provides it (checked at admission)
        dtype: float32
        names: [shoulder_pan.pos, ...]   # joints of the state vector, in order
        semantics: so101-degrees-gripper-percent-v1   # default: the policy's
        normalization: {mode: mean_std, mean: [...], std: [...]}
      - name: observation.images.front
        kind: rgb
        shape: [480, 640, 3]             # height, width, channels as published
        dtype: uint8
        model_shape: [3, 96, 96]         # tensor per sample; default [3, 480, 640]
        layout: chw                      # chw (default) or hwc
        model_dtype: float32             # float32 in [0, 1] (default), or uint8 as received
        history: 1                       # frames per sample (n_obs_steps); > 1 stacks them
      - name: observation.images.wrist_depth
        kind: depth
        shape: [480, 640, 1]
        dtype: uint16                    # 16UC1 millimetres, or float32 metres (32FC1)
        depth_range_m: [0.1, 2.0]        # clamp before normalization
      - name: observation.images.wrist
        kind: rgb
        shape: [96, 128, 3]              # with resize: any, the size it was trained on
        model_shape: [3, 96, 128]
        resize: any                      # frames of any height x width are resized (below)
        interpolation: torch_bilinear    # how: torch_bilinear or pillow_bilinear (default)
        convert_encodings: [mono8]       # also take these, converted (default: rgb8 only)

Image sizes. With ``resize: fixed`` (the default) a frame must be exactly ``shape``'s height
and width, and is resized to ``model_shape`` when that differs; with ``resize: any`` a frame
of any height and width (with the declared channels) is resized to ``model_shape``, and
``shape`` is only the size the policy was trained on (what admission compares, see
:mod:`remote_inference_py.contract.check`). ``interpolation`` names how colour frames are
resized: ``pillow_bilinear`` (Pillow's BILINEAR: a triangle filter that averages every source
pixel under it when shrinking) or ``torch_bilinear`` (``torch.nn.functional.interpolate``,
``mode='bilinear'``, ``align_corners=False``, on the uint8 frame: what LeRobot's asynchronous
inference server does, ``resize_robot_observation_image``). Depth is always resized by the
nearest sample (no invented depths at edges).

Encodings. A 3-channel colour feature takes rgb8 frames (and colour JPEG/PNG), a 1-channel
one mono8 (and greyscale JPEG/PNG). A frame in another encoding is refused by name, unless the
feature's ``convert_encodings`` (or the server's parameter of that name, for every 3-channel
colour feature) lists it: bgr8 (channels reordered), rgba8 or bgra8 (alpha dropped; an RGBA
PNG counts as rgba8) or mono8 (a greyscale JPEG/PNG too: the grey value repeated in the three
channels). The server then says once in its log which frames it converts. ``convert_mono:
true``, the older spelling, is ``convert_encodings: [mono8]``.

The model is called as ``model(*inputs)`` with one float32 tensor per feature, in the order of
``features``: ``[batch, *model_shape]``, or ``[batch, history, *model_shape]`` when
``history > 1``. Images arrive scaled to [0, 1] (depth in metres, clamped), then normalized
as declared; an rgb feature with ``model_dtype: uint8`` arrives as uint8 0-255 instead, resized
and laid out but neither scaled nor normalized (for a model that normalizes on its device: a
quarter of the bytes to copy there, and no conversion pass on the server). It returns
``[batch, chunk_length, len(action.names)]`` (a tuple or dict output uses its first value or
``'action'``), in normalized policy units; the server unnormalizes
and converts to SI radians with the semantics registry. Normalization modes follow LeRobot:
``mean_std``: ``(x - mean) / (std + 1e-8)``; ``min_max``: ``(x - min) / (max - min + 1e-8) * 2
- 1``; ``identity``. Statistics broadcast against one sample (e.g. ``[3, 1, 1]`` per channel).

A manifest with ``policy: flow_matching`` describes a velocity field instead: the model is
called as ``model(x_t, t, *inputs)`` and the file carries a ``sampler`` section
(:mod:`.flow_runtime`, :mod:`.sampler`; other runtimes ignore it).

Action and state names may carry LeRobot's ``.pos`` suffix; the joint names on ROS topics
(``joint_states``, the chunk's ``joint_names``) are the names without it.
"""

import dataclasses
import json
import os
import pathlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.robot.units import known_semantics

FORMAT_VERSION = 1
KINDS = ('state', 'rgb', 'depth', 'privileged')
NORMALIZATION_MODES = ('identity', 'mean_std', 'min_max')
LAYOUTS = ('chw', 'hwc')
MODEL_DTYPES = ('float32', 'uint8')
RESIZE_MODES = ('fixed', 'any')
"""``fixed``: frames must be the declared size; ``any``: frames of any size are resized."""
INTERPOLATIONS = ('pillow_bilinear', 'torch_bilinear')
"""How colour frames are resized (see the module docstring)."""
ENCODING_CONVERSIONS = {
    'bgr8': 'channels reordered',
    'rgba8': 'alpha dropped',
    'bgra8': 'channels reordered, alpha dropped',
    'mono8': 'grey repeated in 3 channels',
}
"""Encodings a 3-channel colour feature takes besides rgb8 where allowed, and how converted."""
PRIVILEGED_MESSAGES = ('std_msgs/Float64MultiArray', 'geometry_msgs/PoseStamped')
JOINT_SUFFIX = '.pos'
EPSILON = 1e-8
MANIFEST_SUFFIXES = ('.json', '.yaml', '.yml')
FLOW_MATCHING = 'flow_matching'
"""The ``policy`` of a manifest whose model is a velocity field (:mod:`.flow_runtime`)."""


class ManifestError(ValueError):
    """A manifest is invalid; the message names the file and the field."""


def joint_name(name: str) -> str:
    """Return the ROS joint name of a policy component name (``shoulder_pan.pos`` -> ...)."""
    return name[:-len(JOINT_SUFFIX)] if name.endswith(JOINT_SUFFIX) else name


@dataclasses.dataclass(frozen=True)
class Normalization:
    """LeRobot-style normalization of one feature or of the actions."""

    mode: str = 'identity'
    mean: Optional[np.ndarray] = None
    std: Optional[np.ndarray] = None
    min: Optional[np.ndarray] = None
    max: Optional[np.ndarray] = None

    @classmethod
    def from_dict(cls, data: Any, where: str) -> 'Normalization':
        """Build from a manifest entry; raise ManifestError naming ``where``."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ManifestError(f'{where}: normalization must be a mapping, got {data!r}')
        mode = str(data.get('mode', 'identity')).lower()
        if mode not in NORMALIZATION_MODES:
            raise ManifestError(f'{where}: normalization mode {mode!r} is not one of '
                                f'{", ".join(NORMALIZATION_MODES)}')
        needed = {'mean_std': ('mean', 'std'), 'min_max': ('min', 'max')}.get(mode, ())
        arrays = {}
        for key in needed:
            if key not in data:
                raise ManifestError(f'{where}: normalization {mode!r} needs {key!r}')
            try:
                array = np.asarray(data[key], dtype=np.float64)
            except (TypeError, ValueError):
                raise ManifestError(f'{where}: normalization {key!r} is not numeric') from None
            if not np.all(np.isfinite(array)):
                raise ManifestError(f'{where}: normalization {key!r} has non-finite values')
            arrays[key] = array
        return cls(mode=mode, **arrays)

    def to_dict(self) -> Dict[str, Any]:
        """Return the manifest entry."""
        out: Dict[str, Any] = {'mode': self.mode}
        for key in ('mean', 'std', 'min', 'max'):
            value = getattr(self, key)
            if value is not None:
                out[key] = value.tolist()
        return out

    def check_broadcast(self, shape: Sequence[int], where: str) -> None:
        """Raise ManifestError when the statistics do not broadcast to ``shape``."""
        for key in ('mean', 'std', 'min', 'max'):
            value = getattr(self, key)
            if value is None:
                continue
            try:
                np.broadcast_shapes(value.shape, tuple(shape))
            except ValueError:
                raise ManifestError(
                    f'{where}: normalization {key!r} of shape {list(value.shape)} does not '
                    f'broadcast to {list(shape)}') from None

    def _stats(self, values: np.ndarray):
        dtype = values.dtype if values.dtype.kind == 'f' else np.float64
        if self.mode == 'mean_std':
            return self.mean.astype(dtype), (self.std + EPSILON).astype(dtype)
        return self.min.astype(dtype), (self.max - self.min + EPSILON).astype(dtype)

    def affine(self) -> Tuple[np.ndarray, np.ndarray]:
        """Return float32 (scale, offset) with ``normalize(x) == x * scale + offset``."""
        if self.mode == 'identity':
            return np.float32(1.0), np.float32(0.0)
        offset, scale = self._stats(np.zeros(1))
        if self.mode == 'mean_std':
            return (1.0 / scale).astype(np.float32), (-offset / scale).astype(np.float32)
        return (2.0 / scale).astype(np.float32), (-2.0 * offset / scale - 1.0).astype(np.float32)

    def normalize(self, values: np.ndarray) -> np.ndarray:
        """Map raw values to model space (in the dtype of ``values`` when floating)."""
        if self.mode == 'identity':
            return values
        offset, scale = self._stats(values)
        if self.mode == 'mean_std':
            return (values - offset) / scale
        return (values - offset) / scale * 2 - 1

    def unnormalize(self, values: np.ndarray) -> np.ndarray:
        """Map model-space values back to raw values."""
        if self.mode == 'identity':
            return values
        offset, scale = self._stats(values)
        if self.mode == 'mean_std':
            return values * scale + offset
        return (values + 1) / 2 * scale + offset


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """One observation feature: what the robot provides and what the model takes."""

    name: str
    kind: str
    shape: Tuple[int, ...]
    dtype: str
    names: Tuple[str, ...] = ()
    semantics: str = ''
    model_shape: Tuple[int, ...] = ()
    layout: str = 'chw'
    model_dtype: str = 'float32'
    history: int = 1
    normalization: Normalization = Normalization()
    depth_range_m: Optional[Tuple[float, float]] = None
    topic: str = ''
    message: str = ''
    resize: str = 'fixed'
    interpolation: str = 'pillow_bilinear'
    convert_encodings: Tuple[str, ...] = ()   # taken besides the declared one, converted

    @property
    def resizes(self) -> bool:
        """Whether frames of any height and width are resized to the model's size."""
        return self.is_image and self.resize == 'any'

    @property
    def joints(self) -> Tuple[str, ...]:
        """ROS joint names of a state feature, in order."""
        return tuple(joint_name(n) for n in self.names)

    @property
    def is_image(self) -> bool:
        """Whether the feature is a camera image (rgb or depth)."""
        return self.kind in ('rgb', 'depth')

    @property
    def image_size(self) -> Tuple[int, int]:
        """Declared (height, width) of an image feature."""
        return self.shape[0], self.shape[1]

    @property
    def model_size(self) -> Tuple[int, int]:
        """(height, width) of the image tensor the model takes."""
        if self.layout == 'chw':
            return self.model_shape[1], self.model_shape[2]
        return self.model_shape[0], self.model_shape[1]

    @property
    def channels(self) -> int:
        """Channels of an image feature."""
        return self.shape[2]

    @property
    def input_shape(self) -> Tuple[int, ...]:
        """Shape of one sample of the model input (history first when > 1)."""
        return ((self.history,) if self.history > 1 else ()) + tuple(self.model_shape)

    def to_dict(self) -> Dict[str, Any]:
        """Return the manifest entry."""
        out: Dict[str, Any] = {'name': self.name, 'kind': self.kind, 'shape': list(self.shape),
                               'dtype': self.dtype}
        if self.names:
            out['names'] = list(self.names)
        if self.semantics:
            out['semantics'] = self.semantics
        if self.is_image:
            out['model_shape'] = list(self.model_shape)
            out['layout'] = self.layout
        if self.model_dtype != 'float32':
            out['model_dtype'] = self.model_dtype
        if self.history != 1:
            out['history'] = self.history
        if self.normalization.mode != 'identity':
            out['normalization'] = self.normalization.to_dict()
        if self.depth_range_m is not None:
            out['depth_range_m'] = list(self.depth_range_m)
        if self.topic:
            out['topic'] = self.topic
        if self.resize != 'fixed':
            out['resize'] = self.resize
        if self.interpolation != 'pillow_bilinear':
            out['interpolation'] = self.interpolation
        if self.convert_encodings:
            out['convert_encodings'] = list(self.convert_encodings)
        if self.message:
            out['message'] = self.message
        return out


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """A policy's contract: features in, action chunk out, units and rates."""

    semantics: str
    fps: float
    chunk_length: int
    action_names: Tuple[str, ...]
    features: Tuple[FeatureSpec, ...]
    action_normalization: Normalization = Normalization()
    max_batch_size: int = 1
    policy: str = ''

    @property
    def action_joints(self) -> Tuple[str, ...]:
        """ROS joint names of the action columns, in order."""
        return tuple(joint_name(n) for n in self.action_names)

    @property
    def state_features(self) -> Tuple[FeatureSpec, ...]:
        """Features of kind state."""
        return tuple(f for f in self.features if f.kind == 'state')

    def feature(self, name: str) -> FeatureSpec:
        """Return the feature called ``name``."""
        for feature in self.features:
            if feature.name == name:
                return feature
        raise KeyError(name)

    def to_dict(self) -> Dict[str, Any]:
        """Return the manifest as plain data (JSON/YAML ready)."""
        action: Dict[str, Any] = {'names': list(self.action_names)}
        if self.action_normalization.mode != 'identity':
            action['normalization'] = self.action_normalization.to_dict()
        out = {'format_version': FORMAT_VERSION, 'semantics': self.semantics,
               'fps': self.fps, 'chunk_length': self.chunk_length,
               'max_batch_size': self.max_batch_size, 'action': action,
               'features': [f.to_dict() for f in self.features]}
        if self.policy:
            out['policy'] = self.policy
        return out


def _int_list(value: Any, where: str) -> Tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ManifestError(f'{where} must be a non-empty list of integers, got {value!r}')
    try:
        out = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise ManifestError(f'{where} must be a list of integers, got {value!r}') from None
    if any(v <= 0 for v in out) or any(float(v) != float(w) for v, w in zip(out, value)):
        raise ManifestError(f'{where} must hold positive integers, got {list(value)!r}')
    return out


def _names(value: Any, where: str) -> Tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, str) and v for v in value):
        raise ManifestError(f'{where} must be a list of non-empty names, got {value!r}')
    seen = set()
    for name in value:
        if joint_name(name) in seen:
            raise ManifestError(f'{where}: name {name!r} appears twice')
        seen.add(joint_name(name))
    return tuple(value)


def _check_semantics(name: str, where: str) -> None:
    if name not in known_semantics():
        raise ManifestError(f'{where}: unknown semantics {name!r}; known semantics: '
                            f'{", ".join(known_semantics())}')


def _feature_from_dict(data: Any, index: int, semantics: str) -> FeatureSpec:
    where = f'features[{index}]'
    if not isinstance(data, dict):
        raise ManifestError(f'{where} must be a mapping, got {data!r}')
    name = data.get('name')
    if not isinstance(name, str) or not name:
        raise ManifestError(f'{where}: missing "name"')
    where = f'features[{index}] ({name!r})'
    kind = data.get('kind')
    if kind not in KINDS:
        raise ManifestError(f'{where}: kind {kind!r} is not one of {", ".join(KINDS)}')
    shape = _int_list(data.get('shape'), f'{where}: shape')
    default_dtype = {'state': 'float32', 'rgb': 'uint8', 'depth': 'uint16',
                     'privileged': 'float32'}[kind]
    dtype = str(data.get('dtype', default_dtype))
    history = data.get('history', 1)
    if not isinstance(history, int) or isinstance(history, bool) or history < 1:
        raise ManifestError(f'{where}: history must be an integer >= 1, got {history!r}')
    names: Tuple[str, ...] = ()
    feature_semantics = ''
    model_shape: Tuple[int, ...] = shape
    layout = 'chw'
    model_dtype = 'float32'
    depth_range = None
    message = ''
    resize, interpolation = 'fixed', 'pillow_bilinear'
    if kind not in ('rgb', 'depth') and any(
            key in data for key in ('resize', 'interpolation', 'convert_encodings',
                                    'convert_mono')):
        raise ManifestError(f'{where}: resize, interpolation and convert_encodings apply to '
                            'image features only')
    if kind in ('state', 'privileged'):
        if len(shape) != 1:
            raise ManifestError(f'{where}: shape of a {kind} feature must be [n], got '
                                f'{list(shape)}')
        if dtype not in ('float32', 'float64'):
            raise ManifestError(f'{where}: dtype of a {kind} feature must be float32 or '
                                f'float64, got {dtype!r}')
    if kind == 'state':
        names = _names(data.get('names'), f'{where}: names')
        if len(names) != shape[0]:
            raise ManifestError(f'{where}: {len(names)} names for shape {list(shape)}')
        feature_semantics = str(data.get('semantics') or semantics)
        _check_semantics(feature_semantics, where)
    elif kind == 'privileged':
        message = str(data.get('message', PRIVILEGED_MESSAGES[0]))
        if message not in PRIVILEGED_MESSAGES:
            raise ManifestError(f'{where}: message {message!r} is not one of '
                                f'{", ".join(PRIVILEGED_MESSAGES)}')
        if message == 'geometry_msgs/PoseStamped' and shape != (7,):
            raise ManifestError(f'{where}: a PoseStamped feature has shape [7] '
                                '(x, y, z, qx, qy, qz, qw)')
        names = tuple(data.get('names', ()))
    else:
        if len(shape) != 3:
            raise ManifestError(f'{where}: shape of an image must be [height, width, '
                                f'channels], got {list(shape)}')
        channels = shape[2]
        if kind == 'rgb' and channels not in (1, 3):
            raise ManifestError(f'{where}: an rgb feature has 3 (or 1, grayscale) channels, '
                                f'got {channels}')
        if kind == 'rgb' and dtype != 'uint8':
            raise ManifestError(f'{where}: dtype of an rgb feature must be uint8, got '
                                f'{dtype!r}')
        if kind == 'depth' and (channels != 1 or dtype not in ('uint16', 'float32')):
            raise ManifestError(f'{where}: a depth feature is [height, width, 1] of uint16 '
                                f'(mm) or float32 (m), got {list(shape)} {dtype}')
        layout = str(data.get('layout', 'chw'))
        if layout not in LAYOUTS:
            raise ManifestError(f'{where}: layout {layout!r} is not one of chw, hwc')
        default_model = ((channels, shape[0], shape[1]) if layout == 'chw'
                         else tuple(shape))
        model_shape = (_int_list(data['model_shape'], f'{where}: model_shape')
                       if 'model_shape' in data else default_model)
        model_channels = model_shape[0] if layout == 'chw' else model_shape[-1]
        if len(model_shape) != 3 or model_channels != channels:
            raise ManifestError(f'{where}: model_shape {list(model_shape)} must be '
                                f'[{channels}, height, width] ({layout}) with the channels '
                                f'of shape {list(shape)}')
        model_dtype = str(data.get('model_dtype', 'float32'))
        if model_dtype not in MODEL_DTYPES or (model_dtype == 'uint8' and kind != 'rgb'):
            raise ManifestError(f'{where}: model_dtype {model_dtype!r} is not one of float32, '
                                'uint8 (rgb features only)')
        if model_dtype == 'uint8' and 'normalization' in data:
            raise ManifestError(f'{where}: a model_dtype uint8 input is not normalized by the '
                                'server (the model does it); remove its normalization')
        if 'depth_range_m' in data:
            if kind != 'depth':
                raise ManifestError(f'{where}: depth_range_m applies to depth features only')
            value = data['depth_range_m']
            try:
                low, high = (float(v) for v in value)
            except (TypeError, ValueError):
                raise ManifestError(f'{where}: depth_range_m must be [min, max] in metres, '
                                    f'got {value!r}') from None
            if not (0.0 <= low < high):
                raise ManifestError(f'{where}: depth_range_m must satisfy 0 <= min < max, '
                                    f'got {value!r}')
            depth_range = (low, high)
        resize = str(data.get('resize', 'fixed'))
        if resize not in RESIZE_MODES:
            raise ManifestError(f'{where}: resize {resize!r} is not one of '
                                f'{", ".join(RESIZE_MODES)}')
        interpolation = str(data.get('interpolation', 'pillow_bilinear'))
        if interpolation not in INTERPOLATIONS:
            raise ManifestError(f'{where}: interpolation {interpolation!r} is not one of '
                                f'{", ".join(INTERPOLATIONS)}')
    convert = _convert_encodings(data, kind, shape, where)
    normalization = Normalization.from_dict(data.get('normalization'), where)
    feature = FeatureSpec(name=name, kind=kind, shape=shape, dtype=dtype, names=names,
                          semantics=feature_semantics, model_shape=model_shape, layout=layout,
                          model_dtype=model_dtype, history=history, normalization=normalization,
                          depth_range_m=depth_range, topic=str(data.get('topic', '')),
                          message=message, resize=resize, interpolation=interpolation,
                          convert_encodings=convert)
    normalization.check_broadcast(feature.model_shape, where)
    return feature


def _convert_encodings(data: Dict[str, Any], kind: str, shape: Tuple[int, ...],
                       where: str) -> Tuple[str, ...]:
    """Return a feature's ``convert_encodings`` (``convert_mono: true`` adds mono8)."""
    convert_mono = data.get('convert_mono', False)
    if not isinstance(convert_mono, bool):
        raise ManifestError(f'{where}: convert_mono is true or false, got {convert_mono!r}')
    value = data.get('convert_encodings', [])
    if not isinstance(value, (list, tuple)) or any(
            e not in ENCODING_CONVERSIONS for e in value):
        raise ManifestError(f'{where}: convert_encodings must list encodings among '
                            f'{", ".join(ENCODING_CONVERSIONS)}, got {value!r}')
    convert = tuple(dict.fromkeys([*value, *(['mono8'] if convert_mono else [])]))
    if convert and (kind != 'rgb' or shape[2] != 3):
        raise ManifestError(f'{where}: convert_encodings (or convert_mono) applies to rgb '
                            f'features with 3 channels only, got {kind} {list(shape)}')
    return convert


def spec_from_dict(data: Any, source: str = 'manifest') -> PolicySpec:
    """Validate a manifest's content and return the PolicySpec; errors name ``source``."""
    try:
        return _spec_from_dict(data)
    except ManifestError as error:
        raise ManifestError(f'{source}: {error}') from None


def _spec_from_dict(data: Any) -> PolicySpec:
    if not isinstance(data, dict):
        raise ManifestError(f'expected a mapping at the top level, got {type(data).__name__}')
    version = data.get('format_version', FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ManifestError(f'format_version {version!r} is not supported (expected '
                            f'{FORMAT_VERSION})')
    semantics = data.get('semantics')
    if not isinstance(semantics, str) or not semantics:
        raise ManifestError('missing "semantics" (the action units, e.g. '
                            'so101-degrees-gripper-percent-v1)')
    _check_semantics(semantics, 'semantics')
    try:
        fps = float(data.get('fps'))
    except (TypeError, ValueError):
        raise ManifestError(f'fps must be a number [Hz], got {data.get("fps")!r}') from None
    if not 0.0 < fps <= 1000.0:
        raise ManifestError(f'fps must be in (0, 1000] Hz, got {fps}')
    chunk_length = data.get('chunk_length')
    if not isinstance(chunk_length, int) or isinstance(chunk_length, bool) or chunk_length < 1:
        raise ManifestError(f'chunk_length must be an integer >= 1, got {chunk_length!r}')
    max_batch = data.get('max_batch_size', 1)
    if not isinstance(max_batch, int) or isinstance(max_batch, bool) or max_batch < 1:
        raise ManifestError(f'max_batch_size must be an integer >= 1, got {max_batch!r}')
    action = data.get('action')
    if not isinstance(action, dict):
        raise ManifestError('missing "action" (with "names")')
    action_names = _names(action.get('names'), 'action.names')
    action_normalization = Normalization.from_dict(action.get('normalization'),
                                                   'action.normalization')
    action_normalization.check_broadcast((len(action_names),), 'action.normalization')
    raw_features = data.get('features')
    if not isinstance(raw_features, list) or not raw_features:
        raise ManifestError('"features" must be a non-empty list')
    features = tuple(_feature_from_dict(f, i, semantics) for i, f in enumerate(raw_features))
    seen = set()
    for feature in features:
        if feature.name in seen:
            raise ManifestError(f'feature {feature.name!r} is declared twice')
        seen.add(feature.name)
    return PolicySpec(semantics=semantics, fps=fps, chunk_length=chunk_length,
                      action_names=action_names, features=features,
                      action_normalization=action_normalization, max_batch_size=max_batch,
                      policy=str(data.get('policy', '')))


def read_manifest_data(path: os.PathLike) -> Any:
    """Read a JSON or YAML manifest file as plain data (not validated)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ManifestError(f'manifest {str(path)!r} does not exist')
    text = path.read_text()
    try:
        if path.suffix == '.json':
            return json.loads(text)
        import yaml
        return yaml.safe_load(text)
    except ValueError as error:  # json.JSONDecodeError and yaml.YAMLError
        raise ManifestError(f'manifest {str(path)!r} is not valid '
                            f'{"JSON" if path.suffix == ".json" else "YAML"}: {error}') from None
    except Exception as error:  # noqa: B902 - yaml.YAMLError is not a ValueError
        raise ManifestError(f'manifest {str(path)!r} is not valid YAML: {error}') from None


def load_manifest(path: os.PathLike) -> PolicySpec:
    """Read and validate a JSON or YAML manifest."""
    return spec_from_dict(read_manifest_data(path), f'manifest {str(pathlib.Path(path))!r}')


def save_manifest(spec: PolicySpec, path: os.PathLike) -> pathlib.Path:
    """Write ``spec`` as JSON (``.json``) or YAML; return the path."""
    path = pathlib.Path(path)
    data = spec.to_dict()
    if path.suffix == '.json':
        path.write_text(json.dumps(data, indent=2) + '\n')
    else:
        import yaml
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def manifest_path_for(model_path: os.PathLike) -> pathlib.Path:
    """Return the manifest beside a model file: the first of ``<stem>.json|.yaml|.yml``."""
    model_path = pathlib.Path(model_path)
    candidates: List[pathlib.Path] = [model_path.with_suffix(s) for s in MANIFEST_SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ManifestError(
        f'no manifest for {str(model_path)!r}: expected one of '
        f'{", ".join(repr(str(c)) for c in candidates)} (or set the parameter "manifest")')
