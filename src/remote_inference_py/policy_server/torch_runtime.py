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

"""TorchScript (``.pt``, ``.ts``) and ``torch.export`` (``.pt2``) models with their manifest.

The model runs on the ``device`` setting's device in its ``dtype`` (weights and floating-point
inputs cast; the chunk comes back as float32), its inputs staged there once per batch
(:class:`.devices.InputStager`); ``compile`` wraps a ``.pt2`` model in ``torch.compile`` (a
TorchScript model is refused by name: it is compiled by TorchScript already).

A manifest declaring ``policy: flow_matching`` is refused here with a hint: its model is a
velocity field that :mod:`.flow_runtime` samples, and loading it as a chunk model would fail
with a confusing input count.
"""

import dataclasses
import pathlib
from typing import Any, Dict, Sequence, Tuple

import numpy as np

from remote_inference_py.policy_server.devices import (
    autocast, cast_module, compile_module, InputStager)
from remote_inference_py.policy_server.manifest import (
    FLOW_MATCHING, load_manifest, manifest_path_for, PolicySpec)
from remote_inference_py.policy_server.runtimes import (
    first_line, model_output_to_numpy, PolicyRuntime, resolve_device, resolve_dtype,
    RuntimeLoadError, RuntimeOptions)


class TorchRuntime(PolicyRuntime):
    """A TorchScript or torch.export (.pt2) model described by a manifest."""

    def __init__(self, kind: str, spec: PolicySpec, model: Any, device: Any, source: str,
                 dtype: Any = None):
        """Wrap a loaded model (already on ``device`` in ``dtype``); use :meth:`load`."""
        self.kind = kind
        super().__init__(spec, str(device), source)
        self.model = model
        self.torch_device = device
        self.dtype = dtype
        self.stager = InputStager(device, dtype)
        self._names = [f.name for f in spec.features]

    @classmethod
    def load(cls, kind: str, options: RuntimeOptions) -> 'TorchRuntime':
        """Load the model file and its manifest; validate the declared inputs."""
        path, manifest = checkpoint_paths(options, 'model.pt2' if kind == 'torch_export'
                                          else 'model.pt')
        spec = load_manifest(manifest)
        if spec.policy == FLOW_MATCHING:
            raise RuntimeLoadError(
                f'manifest {str(manifest)!r} declares policy {FLOW_MATCHING!r}: its model is '
                f'a velocity field to sample, not a chunk; use policy_type {FLOW_MATCHING} '
                '(or auto)')
        device = resolve_device(options.device)
        dtype = resolve_dtype(options.dtype, device)
        if options.compile and kind == 'torchscript':
            raise RuntimeLoadError(f'compile: checkpoint {str(path)!r} is TorchScript, which '
                                   'torch.compile cannot compile; export it to .pt2 '
                                   '(torch_export) or set compile false')
        import torch
        try:
            if kind == 'torchscript':
                model = torch.jit.load(str(path), map_location=device)
                model.eval()
            else:
                model, spec = load_exported(path, spec, device)
            model = compile_module(cast_module(model, dtype), options.compile)
        except RuntimeLoadError:
            raise
        except Exception as error:  # noqa: B902 - torch raises many types for a bad file
            raise RuntimeLoadError(f'cannot load {kind} checkpoint {str(path)!r}: '
                                   f'{first_line(error)}') from None
        return cls(kind, spec, model, device, str(path), dtype)

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Run one forward pass on the batch."""
        import torch
        tensors = self.stager.stage(inputs, self._names)
        with torch.no_grad(), autocast(self.torch_device, self.dtype):
            output = self.model(*tensors)
        return model_output_to_numpy(output)


def checkpoint_paths(options: RuntimeOptions,
                     default_name: str) -> Tuple[pathlib.Path, pathlib.Path]:
    """Return the model file (``default_name`` inside a directory) and its manifest's path."""
    path = pathlib.Path(options.checkpoint)
    if path.is_dir():
        path = path / default_name
    if not path.is_file():
        raise RuntimeLoadError(f'checkpoint file {str(path)!r} does not exist')
    manifest = (pathlib.Path(options.manifest) if options.manifest
                else manifest_path_for(path))
    return path, manifest


def load_exported(path: pathlib.Path, spec: PolicySpec, device: Any,
                  leading: Sequence[Tuple[str, Tuple[int, ...]]] = ()) -> Tuple[Any, PolicySpec]:
    """Load a ``.pt2`` file's module on ``device``; check its inputs (see below)."""
    import torch
    program = torch.export.load(str(path))
    spec = _check_exported_inputs(program, spec, path, leading)
    return exported_module(program, device), spec


def exported_module(program: Any, device: Any):
    """Return an ExportedProgram's module on ``device``.

    A program exported on the CPU has the CPU burnt into the tensors it creates itself (a
    ``linspace`` or ``zeros`` with ``device=cpu`` in its graph: the flow policy's spatial
    softmax has two); moving its weights alone would leave those behind, so on another device
    the whole program is moved (``torch.export.passes.move_to_device_pass``).
    """
    if device.type != 'cpu':
        from torch.export.passes import move_to_device_pass
        program = move_to_device_pass(program, device)
    return program.module()


def _check_exported_inputs(program: Any, spec: PolicySpec, path: pathlib.Path,
                           leading: Sequence[Tuple[str, Tuple[int, ...]]] = ()) -> PolicySpec:
    """Compare an ExportedProgram's input shapes with the manifest; cap the batch size.

    ``leading`` are inputs before the features, as (name, shape of one sample).
    """
    nodes = {node.name: node for node in program.graph.nodes if node.op == 'placeholder'}
    user_inputs = list(program.graph_signature.user_inputs)
    expected_inputs = [(name, tuple(shape)) for name, shape in leading] + [
        (feature.name, tuple(feature.input_shape)) for feature in spec.features]
    if len(user_inputs) != len(expected_inputs):
        raise RuntimeLoadError(
            f'checkpoint {str(path)!r} takes {len(user_inputs)} inputs but '
            f'{len(expected_inputs)} are expected ({", ".join(n for n, _ in expected_inputs)})')
    static_batch = None
    for name, (input_name, input_shape) in zip(user_inputs, expected_inputs):
        value = nodes[name].meta.get('val') if name in nodes else None
        if value is None or not hasattr(value, 'shape'):
            continue
        shape = list(value.shape)
        expected = list(input_shape)
        dims = [int(d) if isinstance(d, int) else None for d in shape]
        if len(dims) != len(expected) + 1 or any(
                d is not None and d != e for d, e in zip(dims[1:], expected)):
            shown = ['B' if d is None else d for d in dims]
            raise RuntimeLoadError(
                f'checkpoint {str(path)!r} expects input {input_name!r} of shape {shown}, '
                f'the manifest declares [B, {", ".join(str(e) for e in expected)}]')
        if dims[0] is not None:
            static_batch = dims[0]
    if static_batch is not None and static_batch != 1:
        raise RuntimeLoadError(f'checkpoint {str(path)!r} was exported with a fixed batch of '
                               f'{static_batch}; export with batch 1 or a dynamic batch')
    if static_batch == 1 and spec.max_batch_size > 1:
        spec = dataclasses.replace(spec, max_batch_size=1)
    return spec
