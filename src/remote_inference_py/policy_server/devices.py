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
Where a torch runtime's policy runs: its inputs on the device, its dtype, ``torch.compile``.

The ``device``, ``dtype`` and ``compile`` settings (:mod:`.config`) are resolved by
:func:`.runtimes.resolve_device` and :func:`.runtimes.resolve_dtype`; each torch runtime then
uses this module the same way (docs/gpu.md):

- :class:`InputStager` moves a batch's inputs (frames and state, stacked by the server) to the
  device once per forward pass. On CUDA each input goes through a page-locked (pinned) host
  buffer kept per input name, shape and type, so the copy is one DMA that does not wait for the
  pageable memory to be staged by the driver; on the CPU the arrays are wrapped without a copy.
  Floating-point inputs are cast to the policy's dtype on the device (after the copy: a uint8
  frame travels as bytes); integer inputs keep their type.
- :func:`autocast` runs the forward pass in a 16-bit dtype: the weights are cast to it at load
  (:func:`cast_module`: half the memory and the bandwidth), and ``torch.autocast`` makes the
  tensors a model creates itself in float32 (ACT's latent, the flow encoder's spatial-softmax
  grid, an export's constants) meet them in the same dtype; float32 runs without it.
- :func:`compile_module` wraps a module in ``torch.compile`` (the ``compile`` setting); the
  first call per input shape compiles, which the warm-up does for every batch size.
- :func:`synchronize` waits for the device (a benchmark's timer; a runtime's own output copy
  to the host synchronizes already).

A pinned buffer is reused by the next batch of the same shapes: that is safe because every
runtime copies its output to the host before ``infer`` returns, which waits for the
host-to-device copies queued before it on the same stream.
"""

from typing import Any, Dict, Sequence, Tuple

import numpy as np


class InputStager:
    """Model inputs (numpy, batch first) as tensors on ``device`` in ``dtype``."""

    def __init__(self, device, dtype=None):
        """Stage inputs for ``device`` (a torch.device); floats become ``dtype`` (None: kept)."""
        self.device = device
        self.dtype = dtype
        self.pinned = device.type == 'cuda'
        self._buffers: Dict[Tuple[str, Tuple[int, ...], str], Any] = {}

    def tensor(self, name: str, value: np.ndarray):
        """Return one input on the device (through its pinned buffer on CUDA), cast."""
        import torch
        array = np.ascontiguousarray(value)
        tensor = torch.from_numpy(array)
        if self.pinned:
            key = (name, tuple(array.shape), str(array.dtype))
            buffer = self._buffers.get(key)
            if buffer is None:
                buffer = self._buffers[key] = torch.empty(
                    array.shape, dtype=tensor.dtype).pin_memory()
            buffer.copy_(tensor)
            tensor = buffer.to(self.device, non_blocking=True)
        elif tensor.device != self.device:
            tensor = tensor.to(self.device)
        if self.dtype is not None and tensor.is_floating_point() and tensor.dtype != self.dtype:
            tensor = tensor.to(self.dtype)
        return tensor

    def stage(self, inputs: Dict[str, np.ndarray], names: Sequence[str]) -> list:
        """Return the inputs ``names`` (in that order) on the device."""
        return [self.tensor(name, inputs[name]) for name in names]

    def stage_dict(self, inputs: Dict[str, np.ndarray]) -> Dict[str, Any]:
        """Return every input on the device, by name."""
        return {name: self.tensor(name, value) for name, value in inputs.items()}

    @property
    def pinned_bytes(self) -> int:
        """Bytes of page-locked host memory held (0 off CUDA)."""
        return sum(b.numel() * b.element_size() for b in self._buffers.values())


def to_device(value: np.ndarray, device, dtype=None):
    """Return one array as a tensor on ``device``, floats cast to ``dtype`` (no pinned buffer)."""
    import torch
    tensor = torch.from_numpy(np.ascontiguousarray(value)).to(device)
    if dtype is not None and tensor.is_floating_point():
        tensor = tensor.to(dtype)
    return tensor


def compile_module(module, enabled: bool):
    """Return ``torch.compile(module)`` when ``enabled``, else ``module`` itself."""
    if not enabled:
        return module
    import torch
    return torch.compile(module)


def synchronize(device) -> None:
    """Wait until ``device`` (a torch.device or its name) has finished its queued work."""
    import torch
    device = torch.device(device)
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
    elif device.type == 'mps':
        torch.mps.synchronize()


def autocast(device, dtype):
    """Return the context a forward pass on ``device`` runs in: autocast to a 16-bit dtype."""
    import contextlib
    import torch
    if dtype is None or dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def cast_module(module, dtype):
    """Cast ``module``'s floating-point parameters and buffers to ``dtype``; return it."""
    import torch
    if dtype is None or dtype == torch.float32:
        return module
    return module.to(dtype)
