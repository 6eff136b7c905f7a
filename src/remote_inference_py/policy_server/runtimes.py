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
Policy runtimes behind one small interface, and the start-up checks every runtime passes.

A :class:`PolicyRuntime` has a :class:`~.manifest.PolicySpec` and one method,
``infer(inputs, tasks)``: float32 (or declared uint8) model inputs by feature name, each with
a leading batch dimension, and one task string per batch row; it returns
``[batch, steps, actions]`` in normalized policy units (the server unnormalizes and converts to
SI). Runtimes:

==================  ======================================================================
``demo``            the built-in demo policy (:mod:`.demo_policy`): no files, no torch
``torchscript``     ``torch.jit.load`` of a ``.pt``/``.ts`` file plus its manifest
``torch_export``    ``torch.export.load`` of a ``.pt2`` file plus its manifest
``lerobot``         a LeRobot pretrained checkpoint through ``lerobot`` (:mod:`.lerobot_runtime`)
``python``          ``package.module:factory``; ``factory(options)`` returns a runtime
==================  ======================================================================

``policy_type: auto`` picks from the checkpoint: none -> demo, ``.pt2`` -> torch_export,
``.pt``/``.ts``/``.jit``/``.torchscript`` -> torchscript, a directory holding LeRobot's
``config.json`` (or a Hugging Face repo id) -> lerobot. torch is imported only by the runtimes
that need it, so a demo server starts in well under a second.

:func:`warm_up` is the start-up validation: it runs the model on zero inputs of the declared
shapes (batch 1, and the largest batch when batching is declared) and checks the output
against the declared action names and chunk length, raising :class:`RuntimeLoadError` that
names the checkpoint and what differed.
"""

import dataclasses
import importlib
import pathlib
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.hardware.calibration import Calibration
from remote_inference_py.policy_server.manifest import (
    load_manifest, manifest_path_for, ManifestError, PolicySpec)

POLICY_TYPES = ('auto', 'demo', 'torchscript', 'torch_export', 'lerobot', 'python')
TORCHSCRIPT_SUFFIXES = ('.pt', '.ts', '.jit', '.torchscript')
DEVICE_PATTERN = re.compile(r'^(cpu|mps|cuda(:\d+)?)$')


class RuntimeLoadError(ValueError):
    """A checkpoint, manifest or device cannot be used; the message names it."""


@dataclasses.dataclass(frozen=True)
class RuntimeOptions:
    """Everything a runtime needs to load (mapped from the server's parameters)."""

    policy_type: str = 'auto'
    checkpoint: str = ''
    manifest: str = ''
    device: str = 'cpu'
    semantics: str = ''
    fps: float = 0.0
    calibration: Optional[Calibration] = None
    demo_cameras: Tuple[str, ...] = ()
    demo_image_size: Tuple[int, int] = (480, 640)


class PolicyRuntime:
    """The interface every runtime implements."""

    kind = ''

    def __init__(self, spec: PolicySpec, device: str = 'cpu', source: str = ''):
        """Store the spec, the device and a description of where the policy came from."""
        self.spec = spec
        self.device = device
        self.source = source or self.kind
        self.max_batch_size = spec.max_batch_size

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Return ``[batch, steps, actions]`` normalized policy actions for a batch."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the model (nothing to do by default)."""


def check_device_name(device: str) -> None:
    """Raise RuntimeLoadError unless ``device`` is cpu, cuda, cuda:N or mps."""
    if not DEVICE_PATTERN.match(device or ''):
        raise RuntimeLoadError(f'device {device!r} is not one of cpu, cuda, cuda:<index>, mps')


def resolve_device(device: str):
    """Return the torch.device for ``device``; RuntimeLoadError names an unavailable one."""
    check_device_name(device)
    import torch
    if device.startswith('cuda'):
        if not torch.cuda.is_available():
            raise RuntimeLoadError(
                f'device {device!r} is not available: torch {torch.__version__} '
                f'{"was built without CUDA" if torch.version.cuda is None else "found no GPU"}')
        index = int(device.split(':')[1]) if ':' in device else 0
        if index >= torch.cuda.device_count():
            raise RuntimeLoadError(f'device {device!r} is not available: '
                                   f'{torch.cuda.device_count()} CUDA device(s)')
    if device == 'mps' and not (getattr(torch.backends, 'mps', None)
                                and torch.backends.mps.is_available()):
        raise RuntimeLoadError(f"device 'mps' is not available with torch {torch.__version__} "
                               'on this machine (Apple silicon only)')
    return torch.device(device)


def infer_policy_type(checkpoint: str) -> str:
    """Pick the runtime for ``checkpoint`` (policy_type auto)."""
    if not checkpoint:
        return 'demo'
    path = pathlib.Path(checkpoint)
    if path.suffix == '.pt2':
        return 'torch_export'
    if path.suffix in TORCHSCRIPT_SUFFIXES:
        return 'torchscript'
    if path.is_dir() and (path / 'config.json').is_file():
        return 'lerobot'
    if path.is_dir() and (path / 'model.pt2').is_file():
        return 'torch_export'
    if not path.exists() and re.fullmatch(r'[\w.-]+/[\w.-]+', checkpoint) \
            and not checkpoint.startswith(('.', '/')):
        return 'lerobot'   # a Hugging Face Hub repo id
    if not path.exists():
        raise RuntimeLoadError(f'checkpoint {checkpoint!r} does not exist')
    raise RuntimeLoadError(
        f'cannot tell the format of checkpoint {checkpoint!r}: expected a .pt2 file '
        f'(torch.export), a {"/".join(TORCHSCRIPT_SUFFIXES)} file (TorchScript) or a LeRobot '
        f'checkpoint directory; or set policy_type')


def load_runtime(options: RuntimeOptions) -> PolicyRuntime:
    """Load the policy the options describe; RuntimeLoadError names what is wrong."""
    if options.policy_type not in POLICY_TYPES:
        raise RuntimeLoadError(f'policy_type {options.policy_type!r} is not one of '
                               f'{", ".join(POLICY_TYPES)}')
    check_device_name(options.device)
    kind = options.policy_type
    if kind == 'auto':
        kind = infer_policy_type(options.checkpoint)
    try:
        if kind == 'demo':
            from remote_inference_py.policy_server.demo_policy import DemoRuntime
            runtime = DemoRuntime.from_options(options)
        elif kind in ('torchscript', 'torch_export'):
            runtime = TorchRuntime.load(kind, options)
        elif kind == 'lerobot':
            from remote_inference_py.policy_server.lerobot_runtime import LeRobotRuntime
            runtime = LeRobotRuntime.load(options)
        else:
            runtime = _load_python(options)
    except ManifestError as error:
        raise RuntimeLoadError(str(error)) from None
    _check_overrides(runtime.spec, options)
    return runtime


def _check_overrides(spec: PolicySpec, options: RuntimeOptions) -> None:
    if options.semantics and options.semantics != spec.semantics:
        raise RuntimeLoadError(f'parameter semantics is {options.semantics!r} but the policy '
                               f'declares {spec.semantics!r}')
    if options.fps and abs(options.fps - spec.fps) > 1e-9 * spec.fps:
        raise RuntimeLoadError(f'parameter fps is {options.fps} Hz but the policy declares '
                               f'{spec.fps} Hz')


def _load_python(options: RuntimeOptions) -> PolicyRuntime:
    """Load ``package.module:factory`` and call ``factory(options)``."""
    target = options.checkpoint
    if ':' not in target:
        raise RuntimeLoadError(f"policy_type 'python' needs checkpoint 'package.module:factory',"
                               f' got {target!r}')
    module_name, attribute = target.split(':', 1)
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise RuntimeLoadError(f'cannot load python policy {target!r}: {error}') from None
    runtime = factory(options)
    if not isinstance(runtime, PolicyRuntime):
        raise RuntimeLoadError(f'python policy {target!r} returned {type(runtime).__name__}, '
                               'not a PolicyRuntime')
    return runtime


def model_output_to_numpy(output: Any) -> np.ndarray:
    """Turn a model's output (tensor, tuple/list, or dict with 'action') into numpy."""
    if isinstance(output, dict):
        output = output['action'] if 'action' in output else next(iter(output.values()))
    if isinstance(output, (tuple, list)):
        output = output[0]
    array = output.detach().to('cpu').float().numpy()
    if array.ndim == 2:
        array = array[:, None, :]   # one step per forward pass
    return array


class TorchRuntime(PolicyRuntime):
    """A TorchScript or torch.export (.pt2) model described by a manifest."""

    def __init__(self, kind: str, spec: PolicySpec, model: Any, device: Any, source: str):
        """Wrap a loaded model; use :meth:`load`."""
        self.kind = kind
        super().__init__(spec, str(device), source)
        self.model = model
        self.torch_device = device
        self._names = [f.name for f in spec.features]

    @classmethod
    def load(cls, kind: str, options: RuntimeOptions) -> 'TorchRuntime':
        """Load the model file and its manifest; validate the declared inputs."""
        path = pathlib.Path(options.checkpoint)
        if path.is_dir():
            path = path / ('model.pt2' if kind == 'torch_export' else 'model.pt')
        if not path.is_file():
            raise RuntimeLoadError(f'checkpoint file {str(path)!r} does not exist')
        manifest = (pathlib.Path(options.manifest) if options.manifest
                    else manifest_path_for(path))
        spec = load_manifest(manifest)
        device = resolve_device(options.device)
        import torch
        try:
            if kind == 'torchscript':
                model = torch.jit.load(str(path), map_location=device)
                model.eval()
            else:
                program = torch.export.load(str(path))
                spec = _check_exported_inputs(program, spec, path)
                model = program.module()
                if device.type != 'cpu':
                    model = model.to(device)
        except RuntimeLoadError:
            raise
        except Exception as error:  # noqa: B902 - torch raises many types for a bad file
            raise RuntimeLoadError(f'cannot load {kind} checkpoint {str(path)!r}: '
                                   f'{_first_line(error)}') from None
        return cls(kind, spec, model, device, str(path))

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Run one forward pass on the batch."""
        import torch
        tensors = [torch.from_numpy(inputs[name]).to(self.torch_device) for name in self._names]
        with torch.no_grad():
            output = self.model(*tensors)
        return model_output_to_numpy(output)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def _check_exported_inputs(program: Any, spec: PolicySpec, path: pathlib.Path) -> PolicySpec:
    """Compare an ExportedProgram's input shapes with the manifest; cap the batch size."""
    nodes = {node.name: node for node in program.graph.nodes if node.op == 'placeholder'}
    user_inputs = list(program.graph_signature.user_inputs)
    if len(user_inputs) != len(spec.features):
        raise RuntimeLoadError(
            f'checkpoint {str(path)!r} takes {len(user_inputs)} inputs but the manifest '
            f'declares {len(spec.features)} features ({", ".join(f.name for f in spec.features)})')
    static_batch = None
    for name, feature in zip(user_inputs, spec.features):
        value = nodes[name].meta.get('val') if name in nodes else None
        if value is None or not hasattr(value, 'shape'):
            continue
        shape = list(value.shape)
        expected = list(feature.input_shape)
        dims = [int(d) if isinstance(d, int) else None for d in shape]
        if len(dims) != len(expected) + 1 or any(
                d is not None and d != e for d, e in zip(dims[1:], expected)):
            shown = ['B' if d is None else d for d in dims]
            raise RuntimeLoadError(
                f'checkpoint {str(path)!r} expects input {feature.name!r} of shape {shown}, '
                f'the manifest declares [B, {", ".join(str(e) for e in expected)}]')
        if dims[0] is not None:
            static_batch = dims[0]
    if static_batch is not None and static_batch != 1:
        raise RuntimeLoadError(f'checkpoint {str(path)!r} was exported with a fixed batch of '
                               f'{static_batch}; export with batch 1 or a dynamic batch')
    if static_batch == 1 and spec.max_batch_size > 1:
        spec = dataclasses.replace(spec, max_batch_size=1)
    return spec


@dataclasses.dataclass
class WarmupReport:
    """What warm-up measured."""

    iterations: int
    total_s: float
    last_ms: float
    batch_sizes: Tuple[int, ...]


def zero_inputs(spec: PolicySpec, batch: int) -> Dict[str, np.ndarray]:
    """Return model inputs of the declared shapes, all zero (mid-grey for images)."""
    inputs = {}
    for feature in spec.features:
        shape = (batch,) + feature.input_shape
        if feature.model_dtype == 'uint8':
            inputs[feature.name] = np.full(shape, 128, dtype=np.uint8)
            continue
        fill = 0.5 if feature.kind == 'rgb' else 0.0
        raw = np.full(shape, fill, dtype=np.float32)
        inputs[feature.name] = np.ascontiguousarray(
            feature.normalization.normalize(raw), dtype=np.float32)
    return inputs


def check_output(runtime: PolicyRuntime, output: np.ndarray, batch: int) -> None:
    """Raise RuntimeLoadError when the output does not match the declared actions."""
    spec = runtime.spec
    if output.ndim != 3 or output.shape[0] != batch:
        raise RuntimeLoadError(f'checkpoint {runtime.source!r} returned shape '
                               f'{list(output.shape)} for a batch of {batch}; expected '
                               f'[{batch}, {spec.chunk_length}, {len(spec.action_names)}]')
    if output.shape[2] != len(spec.action_names):
        raise RuntimeLoadError(
            f'checkpoint {runtime.source!r} outputs {output.shape[2]} action values per step, '
            f'but {len(spec.action_names)} action names are declared '
            f'({", ".join(spec.action_names)})')
    if output.shape[1] != spec.chunk_length:
        raise RuntimeLoadError(f'checkpoint {runtime.source!r} outputs chunks of '
                               f'{output.shape[1]} steps, but chunk_length '
                               f'{spec.chunk_length} is declared')


def warm_up(runtime: PolicyRuntime, iterations: int, max_batch: int = 0) -> WarmupReport:
    """Validate the model against its declarations and warm it up; return the timings.

    The first iteration also runs the largest batch the server will use (``max_batch``,
    default the runtime's limit), so a model that cannot batch fails here, not at run time.
    """
    largest = min(runtime.max_batch_size, max_batch) if max_batch else runtime.max_batch_size
    batches: List[int] = [1]
    if largest > 1:
        batches.append(largest)
    start = time.perf_counter()
    last = 0.0
    runs = 0
    for index in range(max(iterations, 1)):
        for batch in batches if index == 0 else batches[:1]:
            inputs = zero_inputs(runtime.spec, batch)
            began = time.perf_counter()
            try:
                output = runtime.infer(inputs, [''] * batch)
            except RuntimeLoadError:
                raise
            except Exception as error:  # noqa: B902 - any model failure is a load error
                shapes = ', '.join(f'{name} {list(value.shape)}' for name, value in
                                   inputs.items())
                raise RuntimeLoadError(f'checkpoint {runtime.source!r} rejected the declared '
                                       f'inputs ({shapes}): {_first_line(error)}') from None
            last = (time.perf_counter() - began) * 1000.0
            runs += 1
            check_output(runtime, np.asarray(output), batch)
    return WarmupReport(iterations=runs, total_s=time.perf_counter() - start, last_ms=last,
                        batch_sizes=tuple(batches))
