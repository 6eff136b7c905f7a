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
Save policies in the server's file formats, and ``export_lerobot``.

- :func:`save_pt2` exports any ``torch.nn.Module`` that follows the manifest's calling
  convention (one float32 tensor per feature in, ``[batch, chunk_length, actions]`` out) to
  ``<path>.pt2`` with :func:`torch.export.export` (a dynamic batch dimension when
  ``max_batch_size > 1``) and writes the manifest beside it (``<path>.json``).
- :func:`save_torchscript` does the same with TorchScript (``torch.jit.script``, or
  ``torch.jit.trace`` on zero inputs when scripting fails).
- ``export_lerobot CHECKPOINT OUTPUT_DIR --fps 30`` (console script, also
  ``ros2 run remote_inference export_lerobot``) loads a LeRobot pretrained checkpoint (a
  directory or a Hub id) with ``lerobot`` and writes ``OUTPUT_DIR/model.pt2`` and
  ``OUTPUT_DIR/model.json``: the model's ``predict_action_chunk`` in normalized units, and a
  manifest carrying the features, action names, fps, chunk length, semantics and LeRobot's
  normalization statistics, so the server reproduces LeRobot's pre- and post-processing
  without ``lerobot`` installed. The chunk length is what ``predict_action_chunk`` returns
  (ACT: ``chunk_size``, see :func:`.lerobot_runtime.chunk_steps`). Only ACT is exported:
  diffusion draws fresh noise on every call and loops over its denoising steps in Python, and
  language-conditioned policies (SmolVLA, pi0) need their tokenizer at run time; serve those
  folders with ``policy_type: lerobot``. A folder that cannot be exported is named in an
  error (exit code 2), never a traceback.

The manifest part (:func:`manifest_from_lerobot`, :func:`read_safetensors`) is plain Python
and numpy, so it is tested without ``lerobot``.
"""

import argparse
import glob
import json
import os
import pathlib
import sys
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

from remote_inference_py.policy_server.lerobot_runtime import chunk_steps
from remote_inference_py.policy_server.manifest import (
    ManifestError, PolicySpec, save_manifest, spec_from_dict)
from remote_inference_py.policy_server.runtimes import zero_inputs
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

LEROBOT_NORMALIZATION = {'MEAN_STD': 'mean_std', 'MIN_MAX': 'min_max', 'IDENTITY': 'identity'}
SAFETENSORS_DTYPES = {'F64': np.float64, 'F32': np.float32, 'F16': np.float16,
                      'I64': np.int64, 'I32': np.int32, 'I16': np.int16, 'I8': np.int8,
                      'U8': np.uint8, 'BOOL': np.bool_}
STATS_GLOB = '*normalizer_processor*.safetensors'


def save_pt2(module, spec: PolicySpec, path: os.PathLike) -> pathlib.Path:
    """Export ``module`` with torch.export to ``path`` (.pt2) plus its JSON manifest."""
    import torch
    path = pathlib.Path(path).with_suffix('.pt2')
    batch = 2 if spec.max_batch_size > 1 else 1
    inputs = tuple(torch.from_numpy(value) for value in zero_inputs(spec, batch).values())
    dynamic = None
    if batch > 1:
        dim = torch.export.Dim('batch', min=1, max=max(spec.max_batch_size, 2))
        dynamic = tuple({0: dim} for _ in inputs)
    program = torch.export.export(module.eval(), inputs, dynamic_shapes=dynamic, strict=False)
    torch.export.save(program, str(path))
    save_manifest(spec, path.with_suffix('.json'))
    return path


def save_torchscript(module, spec: PolicySpec, path: os.PathLike) -> pathlib.Path:
    """Save ``module`` as TorchScript to ``path`` (.pt) plus its JSON manifest."""
    import torch
    path = pathlib.Path(path).with_suffix('.pt')
    module = module.eval()
    try:
        scripted = torch.jit.script(module)
    except Exception:  # noqa: B902 - not scriptable: trace on zero inputs instead
        inputs = tuple(torch.from_numpy(v) for v in zero_inputs(spec, 1).values())
        scripted = torch.jit.trace(module, inputs)
    torch.jit.save(scripted, str(path))
    save_manifest(spec, path.with_suffix('.json'))
    return path


def read_safetensors(path: os.PathLike) -> Dict[str, np.ndarray]:
    """Read a .safetensors file into numpy arrays (the format is a JSON header + buffers)."""
    data = pathlib.Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f'{path}: not a safetensors file (too short)')
    size = int.from_bytes(data[:8], 'little')
    try:
        header = json.loads(data[8:8 + size])
    except ValueError as error:
        raise ValueError(f'{path}: not a safetensors file ({error})') from None
    base = 8 + size
    tensors = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        dtype = SAFETENSORS_DTYPES.get(entry['dtype'])
        if dtype is None:
            raise ValueError(f'{path}: tensor {name!r} has unsupported dtype {entry["dtype"]}')
        begin, end = entry['data_offsets']
        tensors[name] = np.frombuffer(data[base + begin:base + end], dtype=np.dtype(dtype)
                                      .newbyteorder('<')).reshape(entry['shape']).copy()
    return tensors


def _kind(feature: Mapping[str, Any]) -> str:
    return str(feature.get('type', '')).upper()


def _normalization(name: str, kind: str, mapping: Mapping[str, str],
                   stats: Mapping[str, np.ndarray]) -> Optional[Dict[str, Any]]:
    mode = LEROBOT_NORMALIZATION.get(str(mapping.get(kind, 'IDENTITY')).upper())
    if mode is None:
        raise ManifestError(f'normalization {mapping.get(kind)!r} of {name!r} is not '
                            f'supported ({", ".join(LEROBOT_NORMALIZATION)})')
    if mode == 'identity':
        return None
    keys = ('mean', 'std') if mode == 'mean_std' else ('min', 'max')
    out: Dict[str, Any] = {'mode': mode}
    for key in keys:
        value = stats.get(f'{name}.{key}')
        if value is None:
            raise ManifestError(f'normalization statistics {name}.{key} are missing from the '
                                'checkpoint')
        out[key] = np.asarray(value, dtype=np.float32).tolist()
    return out


def manifest_from_lerobot(config: Mapping[str, Any], stats: Mapping[str, np.ndarray],
                          fps: float, semantics: str = 'so101-degrees-gripper-percent-v1',
                          state_names: Optional[Sequence[str]] = None,
                          image_shapes: Optional[Mapping[str, Sequence[int]]] = None
                          ) -> PolicySpec:
    """
    Build our manifest from a LeRobot policy ``config.json`` and its normalizer statistics.

    ``state_names`` default to the SO-101's ``<joint>.pos``; each camera is declared at the
    policy's input resolution unless ``image_shapes`` gives the published ``[H, W, 3]``.
    """
    mapping = config.get('normalization_mapping', {})
    history = int(config.get('n_obs_steps') or 1)
    names = list(state_names or [f'{j}.pos' for j in SO101_JOINT_NAMES])
    features = []
    for name, feature in config.get('input_features', {}).items():
        kind = _kind(feature)
        shape = [int(v) for v in feature['shape']]
        if kind == 'STATE':
            if len(names) != shape[0]:
                raise ManifestError(f'{name!r} has {shape[0]} values but {len(names)} state '
                                    'names were given')
            entry = {'name': name, 'kind': 'state', 'shape': shape, 'names': names}
        elif kind == 'VISUAL':
            channels, height, width = shape
            published = list((image_shapes or {}).get(name, [height, width, channels]))
            entry = {'name': name, 'kind': 'rgb', 'shape': published, 'dtype': 'uint8',
                     'model_shape': shape}
            if mapping.get(kind, 'IDENTITY') != 'IDENTITY':
                stats = {**stats, **{f'{name}.{k}': np.asarray(stats[f'{name}.{k}']).reshape(
                    channels, 1, 1) for k in ('mean', 'std', 'min', 'max')
                    if f'{name}.{k}' in stats}}
        else:
            raise ManifestError(f'input feature {name!r} of type {kind!r} cannot be exported '
                                '(state and visual can)')
        normalization = _normalization(name, kind, mapping, stats)
        if normalization:
            entry['normalization'] = normalization
        if history > 1:
            entry['history'] = history
        features.append(entry)
    action = config.get('output_features', {}).get('action')
    if action is None:
        raise ManifestError('the checkpoint declares no "action" output feature')
    action_dim = int(action['shape'][0])
    action_names = names if action_dim == len(names) else None
    if action_names is None:
        raise ManifestError(f'the checkpoint outputs {action_dim} action values but '
                            f'{len(names)} joint names are known; pass --state-names')
    action_entry: Dict[str, Any] = {'names': action_names}
    normalization = _normalization('action', 'ACTION', mapping, stats)
    if normalization:
        action_entry['normalization'] = normalization
    return spec_from_dict({'policy': str(config.get('type', '')), 'semantics': semantics,
                           'fps': fps, 'chunk_length': chunk_steps(config), 'max_batch_size': 1,
                           'action': action_entry, 'features': features},
                          'exported LeRobot manifest')


def find_stats(checkpoint_dir: os.PathLike) -> Dict[str, np.ndarray]:
    """Read LeRobot's normalizer statistics from a checkpoint directory."""
    files = sorted(glob.glob(os.path.join(str(checkpoint_dir), STATS_GLOB)))
    if not files:
        raise ManifestError(f'no normalizer statistics ({STATS_GLOB}) in {checkpoint_dir}; '
                            'is this a LeRobot >= 0.3 checkpoint?')
    stats: Dict[str, np.ndarray] = {}
    for path in files:
        if 'postprocessor' in os.path.basename(path):
            continue
        stats.update(read_safetensors(path))
    return stats or read_safetensors(files[0])


def _config_dict(config) -> Dict[str, Any]:
    """Turn a LeRobot PreTrainedConfig into the plain dict of its config.json."""
    def feature(value):
        return {'type': str(getattr(value.type, 'name', value.type)),
                'shape': list(value.shape)}
    return {'type': config.type, 'n_action_steps': getattr(config, 'n_action_steps', None),
            'chunk_size': getattr(config, 'chunk_size', None),
            'n_obs_steps': getattr(config, 'n_obs_steps', None),
            'normalization_mapping': {str(getattr(k, 'name', k)): str(getattr(v, 'name', v))
                                      for k, v in config.normalization_mapping.items()},
            'input_features': {k: feature(v) for k, v in config.input_features.items()},
            'output_features': {k: feature(v) for k, v in config.output_features.items()}}


EXPORTABLE_TYPES = ('act',)


def export_lerobot(checkpoint: str, output_dir: os.PathLike, fps: float, semantics: str,
                   device: str = 'cpu') -> pathlib.Path:
    """Export a LeRobot checkpoint to ``output_dir/model.pt2`` + ``model.json``."""
    from remote_inference_py.policy_server.lerobot_import import import_lerobot
    from remote_inference_py.policy_server.lerobot_runtime import load_policy, read_config
    from remote_inference_py.policy_server.runtimes import resolve_device, RuntimeLoadError
    directory = pathlib.Path(checkpoint)
    if directory.is_dir():
        kind = read_config(checkpoint).get('type')
        if kind not in EXPORTABLE_TYPES:
            raise RuntimeLoadError(
                f'{checkpoint!r} holds a {kind!r} policy; only '
                f'{", ".join(EXPORTABLE_TYPES)} can be exported (diffusion draws fresh noise and '
                'loops over its denoising steps on every call; VLAs need their tokenizer): '
                'serve the folder itself with policy_type lerobot')
    import_lerobot('export_lerobot')
    import torch
    try:
        policy, _, _, config = load_policy(checkpoint, resolve_device(device))
    except (RuntimeLoadError, ManifestError):
        raise
    except Exception as error:  # noqa: B902 - lerobot and the Hub raise many types
        raise RuntimeLoadError(f'cannot load LeRobot checkpoint {checkpoint!r}: '
                               f'{type(error).__name__}: {error}') from None
    if config.type not in EXPORTABLE_TYPES:
        raise RuntimeLoadError(f'{checkpoint!r} holds a {config.type!r} policy; '
                               f'only {", ".join(EXPORTABLE_TYPES)} can be exported: serve it '
                               'with policy_type lerobot')
    if not directory.is_dir():
        from huggingface_hub import snapshot_download
        directory = pathlib.Path(snapshot_download(checkpoint))
    spec = manifest_from_lerobot(_config_dict(config), find_stats(directory), fps, semantics)
    names = [f.name for f in spec.features]

    class ChunkModule(torch.nn.Module):
        """predict_action_chunk on positional, normalized inputs."""

        def __init__(self):
            super().__init__()
            self.policy = policy

        def forward(self, *inputs):
            return self.policy.predict_action_chunk(dict(zip(names, inputs)))

    output_dir = pathlib.Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    try:
        return save_pt2(ChunkModule(), spec, output_dir / 'model.pt2')
    except Exception as error:  # noqa: B902 - torch.export raises many types
        text = str(error).strip().splitlines()[0][:300] if str(error).strip() else ''
        raise RuntimeLoadError(f'torch.export failed on {checkpoint!r} '
                               f'({config.type}): {type(error).__name__}: {text}') from None


def main(argv=None):
    """Run ``export_lerobot``; exit 2 with a clear message when it cannot."""
    parser = argparse.ArgumentParser(
        prog='export_lerobot',
        description="Export a LeRobot checkpoint to the policy server's .pt2 + manifest.")
    parser.add_argument('checkpoint', help='LeRobot checkpoint directory or Hub repo id')
    parser.add_argument('output_dir', help='directory for model.pt2 and model.json')
    parser.add_argument('--fps', type=float, required=True,
                        help='action rate of the training data [Hz]')
    parser.add_argument('--semantics', default='so101-degrees-gripper-percent-v1',
                        help='units of the state and actions (default: %(default)s)')
    parser.add_argument('--device', default='cpu', help='device to export on (cpu, cuda)')
    options = parser.parse_args(argv)
    from remote_inference_py.policy_server.runtimes import RuntimeLoadError
    try:
        path = export_lerobot(options.checkpoint, options.output_dir, options.fps,
                              options.semantics, options.device)
    except (RuntimeLoadError, ManifestError, ValueError, OSError) as error:
        print(f'export_lerobot: error: {error}', file=sys.stderr)
        raise SystemExit(2) from None
    print(f'export_lerobot: wrote {path} and {path.with_suffix(".json")}')
    raise SystemExit(0)


if __name__ == '__main__':
    main()
