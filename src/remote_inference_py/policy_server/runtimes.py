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
The policy runtime interface and the start-up checks every runtime passes (no ROS).

A :class:`PolicyRuntime` has a :class:`~.manifest.PolicySpec` and one method,
``infer(inputs, tasks)``: float32 (or declared uint8) model inputs by feature name, each with
a leading batch dimension, and one task string per batch row; it returns
``[batch, steps, actions]`` in normalized policy units (the server unnormalizes and converts to
SI).

A runtime that generates chunks conditioned on what the robot is committed to (real-time
chunking, docs/design.md section 11) sets ``supports_prefix = True``; the server then calls
``infer(inputs, tasks, prefixes)`` with one :class:`Prefix` (or None) per batch row: the
executor's committed plan in the same normalized policy units the runtime returns, row 0 at the
observation's capture time. Other runtimes are called without it. A runtime that draws random
numbers reseeds them in ``reset(seed)``, called by the evaluation at the start of each
episode.

A runtime that generates text (the executor's queries while the arm holds, docs/ask.md)
lists the query kinds it answers in ``text_commands`` (``question``, ``subtask``,
``steering``) and implements ``generate_text(kind, text, task, inputs)``: the same model inputs
as ``infer`` without the batch dimension, returning a :class:`TextAnswer`. The default offers
none, and the server refuses every query to it by name.

The runtimes themselves live in modules of their own (:mod:`.demo_policy`,
:mod:`.torch_runtime`, :mod:`.flow_runtime`, :mod:`.lerobot_runtime`) and :mod:`.loading`
picks one; they import this module, never the other way round. Where a policy runs (the
``device``, ``dtype`` and ``compile`` settings) is resolved here (:func:`resolve_device`,
:func:`resolve_dtype`) and applied by each runtime with :mod:`.devices` (docs/gpu.md).

:func:`warm_up` is the start-up validation: it runs the model on zero inputs of the declared
shapes (every batch size the server will use: 1 up to the largest) and checks the output
against the declared action names and chunk length, raising :class:`RuntimeLoadError` that
names the checkpoint and what differed.
"""

import dataclasses
import time
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.common.settings import check_value, declared
from remote_inference_py.policy_server.config import DEVICE_PATTERN, DTYPES, ServerConfig
from remote_inference_py.policy_server.manifest import PolicySpec
from remote_inference_py.robot.calibration import Calibration


class RuntimeLoadError(ValueError):
    """A checkpoint, manifest or device cannot be used; the message names it."""


@dataclasses.dataclass(frozen=True)
class RuntimeOptions:
    """Everything a runtime needs to load: the server's parameters, checked as it declares them.

    Each field but ``calibration`` is the :class:`~.config.ServerConfig` setting of the same
    name: its default is that setting's, and a value is checked against that setting's
    declaration (type, range, choices) when the options are made, so a runtime receives
    validated values and a bad one is a ValueError naming the parameter. The sampler
    parameters of a ``flow_matching`` policy (``flow_steps`` and the three ``rtc_*``) keep the
    manifest's value when 0 or empty (see :mod:`.sampler`).
    """

    policy_type: str = ServerConfig.policy_type
    checkpoint: str = ServerConfig.checkpoint
    manifest: str = ServerConfig.manifest
    device: str = ServerConfig.device
    dtype: str = ServerConfig.dtype
    compile: bool = ServerConfig.compile
    semantics: str = ServerConfig.semantics
    fps: float = ServerConfig.fps
    calibration: Optional[Calibration] = None
    demo_cameras: Tuple[str, ...] = ()
    demo_image_size: Tuple[int, int] = ServerConfig.demo_image_size
    flow_steps: int = ServerConfig.flow_steps
    rtc_execution_horizon: int = ServerConfig.rtc_execution_horizon
    rtc_prefix_schedule: str = ServerConfig.rtc_prefix_schedule
    rtc_max_guidance_weight: float = ServerConfig.rtc_max_guidance_weight

    @classmethod
    def from_config(cls, config: ServerConfig,
                    calibration: Optional[Calibration] = None) -> 'RuntimeOptions':
        """Return the options of a server's `config` (the fields of the same names)."""
        names = {field.name for field in dataclasses.fields(cls)} - {'calibration'}
        values = {name: getattr(config, name) for name in names}
        return cls(calibration=calibration, **{
            name: tuple(value) if isinstance(value, list) else value
            for name, value in values.items()})

    def __post_init__(self):
        """Check each field by the server setting of its name (ValueError names it)."""
        specs = declared(ServerConfig)
        for field in dataclasses.fields(self):
            if field.name in specs:
                value = check_value(specs[field.name], getattr(self, field.name))
                object.__setattr__(self, field.name, value)
        object.__setattr__(self, 'demo_cameras', self.demo_cameras or ())


@dataclasses.dataclass(frozen=True)
class Prefix:
    """The committed plan of one request, in normalized policy units.

    ``positions`` is ``[steps, actions]``; row 0 targets the first action step after the
    observation's capture, as row 0 of the chunk the policy returns. The first
    ``frozen_steps`` rows will be executed whatever the policy answers (they cover the
    expected turnaround); the rest is the buffered plan the new chunk replaces.
    """

    positions: np.ndarray
    frozen_steps: int


@dataclasses.dataclass(frozen=True)
class TextAnswer:
    """Text a runtime generated, and how many tokens that took (0 when not a model)."""

    text: str
    generated_tokens: int = 0


class PolicyRuntime:
    """The interface every runtime implements."""

    kind = ''
    supports_prefix = False
    """True when ``infer`` takes ``prefixes`` and conditions the chunk on them."""
    text_commands: Tuple[str, ...] = ()
    """The query kinds ``generate_text`` answers (question, subtask, steering); () = none."""

    def __init__(self, spec: PolicySpec, device: str = 'cpu', source: str = ''):
        """Store the spec, the device and a description of where the policy came from."""
        self.spec = spec
        self.device = device
        self.source = source or self.kind
        self.max_batch_size = spec.max_batch_size

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Return ``[batch, steps, actions]`` normalized policy actions for a batch."""
        raise NotImplementedError

    def generate_text(self, kind: str, text: str, task: str,
                      inputs: Dict[str, np.ndarray]) -> TextAnswer:
        """Answer a query of ``kind`` (one of ``text_commands``) about one observation."""
        raise NotImplementedError(f'{self.kind or type(self).__name__} runtime generates no '
                                  'text')

    def reset(self, seed: int) -> None:
        """Start a new episode: a runtime that draws random numbers reseeds them from ``seed``.

        The evaluation calls it before each episode, so an episode's chunks depend on its seed
        and not on the episodes before it. Nothing to do by default.
        """

    def close(self) -> None:
        """Release the model (nothing to do by default)."""


def check_device_name(device: str) -> None:
    """Raise RuntimeLoadError unless ``device`` is auto, cpu, cuda, cuda:N or mps."""
    if not DEVICE_PATTERN.match(device or ''):
        raise RuntimeLoadError(f'device {device!r} is not one of cpu, cuda, cuda:<index>, mps '
                               'or auto')


def resolve_device(device: str):
    """Return the torch.device for ``device``; RuntimeLoadError names an unavailable one.

    ``auto`` is the first GPU when ``torch.cuda.is_available()``, else the CPU.
    """
    check_device_name(device)
    import torch
    if device == 'auto':
        device = 'cuda:0' if torch.cuda.is_available() else 'cpu'
    if device.startswith('cuda'):
        if not torch.cuda.is_available():
            why = ('this torch was built without CUDA' if torch.version.cuda is None else
                   f'this torch (CUDA {torch.version.cuda}) finds no GPU or driver')
            raise RuntimeLoadError(
                f'device {device!r} requested but torch.cuda.is_available() is False: torch '
                f"{torch.__version__}, {why}; use device 'auto' or 'cpu' on this machine")
        index = int(device.split(':')[1]) if ':' in device else torch.cuda.current_device()
        if index >= torch.cuda.device_count():
            raise RuntimeLoadError(f'device {device!r} is not available: '
                                   f'{torch.cuda.device_count()} CUDA device(s)')
        device = f'cuda:{index}'
    if device == 'mps' and not (getattr(torch.backends, 'mps', None)
                                and torch.backends.mps.is_available()):
        raise RuntimeLoadError(f"device 'mps' is not available with torch {torch.__version__} "
                               'on this machine (Apple silicon only)')
    return torch.device(device)


def resolve_dtype(dtype: str, device, allowed: Sequence[str] = DTYPES, what: str = ''):
    """Return the torch dtype named ``dtype`` for a policy on ``device`` (a torch.device).

    ``allowed`` are the dtypes the policy runs in (``what`` names it in the message). float16
    is refused on the CPU (PyTorch's CPU kernels for half precision are few and slow);
    RuntimeLoadError names the refused combination.
    """
    import torch
    if dtype not in DTYPES:
        raise RuntimeLoadError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if dtype not in allowed:
        raise RuntimeLoadError(f'dtype {dtype!r} is not supported by {what or "this policy"}; '
                               f'it runs in {", ".join(allowed)}')
    if dtype == 'float16' and device.type == 'cpu':
        raise RuntimeLoadError("dtype 'float16' is not supported on device 'cpu': use "
                               'bfloat16 or float32 there (float16 needs a GPU)')
    return getattr(torch, dtype)


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


def first_line(error: BaseException) -> str:
    """Return the first line of an error message, at most 300 characters."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


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


def serving_batch_sizes(runtime: PolicyRuntime, max_batch: int = 0) -> Tuple[int, ...]:
    """Return every batch size a server may hand ``runtime``: 1 up to the largest.

    The largest is the runtime's limit, capped by ``max_batch`` when given (the server passes
    the smaller of ``max_batch_size`` and ``max_clients``: the scheduler batches the ready
    heads of the sessions' queues, at most one per session, so it forms every size from 1 to
    that and no larger).
    """
    largest = min(runtime.max_batch_size, max_batch) if max_batch else runtime.max_batch_size
    return tuple(range(1, max(largest, 1) + 1))


def warm_up(runtime: PolicyRuntime, iterations: int, max_batch: int = 0) -> WarmupReport:
    """Validate the model against its declarations and warm it up; return the timings.

    The first iteration runs every batch size the server will use
    (:func:`serving_batch_sizes`), so a model that cannot batch fails here, not at run time,
    and what a device does once per input shape (CUDA kernel selection, ``torch.compile``,
    the flow runtime's traced steps) is done before the first request; the other iterations
    run batch 1. A runtime on a GPU is synchronized by its ``infer`` (its output is copied to
    the host), so the times are the device's.
    """
    batches = list(serving_batch_sizes(runtime, max_batch))
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
                                       f'inputs ({shapes}): {first_line(error)}') from None
            last = (time.perf_counter() - began) * 1000.0
            runs += 1
            check_output(runtime, np.asarray(output), batch)
    return WarmupReport(iterations=runs, total_s=time.perf_counter() - start, last_ms=last,
                        batch_sizes=tuple(batches))
