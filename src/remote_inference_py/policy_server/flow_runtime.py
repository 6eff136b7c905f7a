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
A flow-matching policy served from ``.pt2``: Euler sampling, steered by the committed plan.

The ``.pt2`` file holds a velocity field ``v = model(x_t, t, *inputs)``: ``x_t``
``[batch, chunk_length, actions]`` in the manifest's normalized action units, ``t`` ``[batch]``
flow time (0: Gaussian noise, 1: actions), then one tensor per manifest feature as for any
``.pt2`` policy. The manifest says ``policy: flow_matching`` and carries a ``sampler``
section (:mod:`.sampler`); ``policy_type: auto`` picks this runtime for such a manifest.

Sampling a chunk: draw ``x_0`` from the runtime's own ``torch.Generator`` (seeded from
``sampler.noise_seed``, reseeded by :meth:`FlowMatchingRuntime.reset`), then ``steps`` Euler
steps ``x <- x + v / steps`` at ``t = 0, 1/steps, ...``. A batch row without a committed
plan (``prefix`` None, e.g. warm-up or a first chunk) is sampled plainly.

A row with a committed plan ``Y`` (real-time chunking): the sampler inpaints the plan's first
rows by guidance. At each step it predicts the finished chunk ``x_1 = x_t + (1 - t) v``,
weighs its distance to the plan row by row (``e = W (Y - x_1)``, :func:`.sampler.prefix_weights`:
1 on the frozen rows, fading to 0 at the execution horizon, 0 past the plan), pulls ``e``
back through the network to ``x_t`` (a vector-Jacobian product, ``torch.autograd.grad``) and
adds it, times :func:`.sampler.guidance_weight`, to the velocity, so the predicted chunk moves
toward the plan while the rest follows what the network makes of it. Rows of ``Y`` past the
plan's end are zero and weigh nothing. Guided rows cost one backward pass per step.

Encoder and head (optional): a manifest ``split`` section ``{encoder: FILE, head: FILE}``
(files beside the manifest) names the same network in two ``.pt2`` parts, ``encoding =
encoder(*features)`` (any number of output tensors) and ``v = head(x_t, t, *encoding)``. The
runtime then encodes the observation once per chunk and runs, and differentiates, only the
head at every step; the chunks are the same as with ``model.pt2`` alone (checked at load on a
probe input: :func:`load_split`). Without the section, ``model.pt2`` runs at every step as
before.

Traced steps (the default): the Euler step runs as one traced graph instead of the exported
module op by op. At load, and then once per batch size, :class:`StepGraphs` traces the plain
step (``v = field(x_t, t, *inputs)``) and the guided step (the velocity and its
vector-Jacobian product, ``torch.func.vjp`` under ``make_fx``: forward and backward in one
graph, no autograd engine at run time) and hands each to ``torch.jit.trace``, so an Euler step
costs one call into TorchScript's C++ interpreter, not ~35 Python-dispatched operations plus an
autograd pass. Both are checked at load on a probe input against the untraced step (within
``TRACE_TOLERANCE``); a field that cannot be traced, or is traced differently, is sampled
untraced (:attr:`FlowMatchingRuntime.trace_error` says why). ``trace=False`` samples untraced
(the benchmark's "before").

The numpy head (the default when it applies): the shipped flow policy's head is a small MLP,
and at batch 1 a traced step still spends most of its time running ~100 small operations one
at a time. :mod:`.flow_head` runs the head's forward pass and its vector-Jacobian product in
numpy, written out by hand (the matrix products and the activation derivatives), with the
weights read from the exported head at load and what does not depend on ``x_t`` computed
once per chunk. It is used only when the exported head has the flow policy's parameters
(by name and shape) and its plain and guided steps equal the exported head's within
``HAND_TOLERANCE`` on probe inputs (:func:`checked_hand_head`); otherwise, or with a head
not on the CPU or an export without a split, the sampler uses the traced steps and
:attr:`FlowMatchingRuntime.hand_error` says why. ``by_hand=False`` turns it off. No
re-export is needed: it is derived from the existing ``model.head.pt2``. With the numpy head
the encoder, too, runs as a graph traced per input shapes (:class:`TracedEncoder`, checked at
load on random inputs; :attr:`FlowMatchingRuntime.encoder_trace_error` says why not).

Device, dtype and compile (docs/gpu.md): the exported parts run on the ``device`` setting's
device, cast to its ``dtype`` after the split check (which runs in float32); the inputs are
staged there once per chunk (:class:`.devices.InputStager`), the noise is drawn on the CPU
generator as always (the same chunks on any device, up to rounding) and the chunk comes back as
float32. The numpy head runs in float32 on the CPU only; in bfloat16 or float16 the traced
steps are checked with the tolerance of that dtype (:func:`step_tolerance`). With ``compile``
the field and the encoder run through ``torch.compile`` instead of the numpy head or the
traced steps (guided steps differentiate through the compiled field).

Determinism: the same inputs, plans and generator state give the same chunk. The evaluation
calls :meth:`~FlowMatchingRuntime.reset` with each episode's seed before the episode, so an
episode does not depend on the ones run before it; a server process never resets, its noise
runs on from ``noise_seed``.
"""

import pathlib
from typing import Dict, Optional, Sequence

import numpy as np

from remote_inference_py.policy_server.devices import (
    autocast, cast_module, compile_module, InputStager, to_device)
from remote_inference_py.policy_server.flow_head import HeadMismatch, MlpHead, OneBlasThread
from remote_inference_py.policy_server.manifest import (
    FLOW_MATCHING, load_manifest, ManifestError, PolicySpec, read_manifest_data)
from remote_inference_py.policy_server.runtimes import (
    first_line, PolicyRuntime, Prefix, resolve_device, resolve_dtype, RuntimeLoadError,
    RuntimeOptions)
from remote_inference_py.policy_server.sampler import (
    guidance_weight, prefix_weights, sampler_from_dict, SamplerError, SamplerOverrides,
    SamplerSettings)
from remote_inference_py.policy_server.torch_runtime import (
    checkpoint_paths, exported_module, load_exported)


SPLIT_TOLERANCE = 1e-4
"""Largest difference between the split and the whole velocity field at load [action units]."""
TRACE_TOLERANCE = 1e-4
"""Largest difference between a traced and an untraced step at load [action units]."""
HAND_TOLERANCE = 1e-5
"""Largest difference between the numpy head's step and the exported head's at load, relative
to the largest velocity of the probe (at least 1 action unit per unit of flow time)."""
HAND_PROBE_TIMES = (0.0, 0.3, 0.97)
"""Flow times of the load check of the numpy head (0.97: where ``1 - t`` is floored)."""
LOW_PRECISION_TOLERANCE = {'bfloat16': 5e-2, 'float16': 5e-3}
"""Relative tolerance of the traced-step check in a 16-bit dtype (about 8 and 2 units of the
last place of bfloat16's 8-bit and float16's 11-bit significand)."""


def step_tolerance(dtype, reference) -> float:
    """Return the largest difference a traced step may have from ``reference`` (a tensor)."""
    name = str(dtype).replace('torch.', '')
    if name not in LOW_PRECISION_TOLERANCE:
        return TRACE_TOLERANCE
    scale = max(1.0, float(reference.detach().abs().max().float()))
    return LOW_PRECISION_TOLERANCE[name] * scale


def overrides_from_options(options: RuntimeOptions) -> SamplerOverrides:
    """Return the sampler parameters of ``options`` (checked when the options were made)."""
    return SamplerOverrides(
        flow_steps=options.flow_steps, rtc_execution_horizon=options.rtc_execution_horizon,
        rtc_prefix_schedule=options.rtc_prefix_schedule,
        rtc_max_guidance_weight=options.rtc_max_guidance_weight)


def episode_seed(noise_seed: int, seed: int) -> int:
    """Return the generator seed of an episode: both seeds mixed into 63 bits."""
    state = np.random.SeedSequence([int(noise_seed), int(seed) & (2 ** 63 - 1)])
    return int(state.generate_state(1, np.uint64)[0] >> np.uint64(1))


class FlowMatchingRuntime(PolicyRuntime):
    """Sample chunks from an exported velocity field, guided by the committed plan."""

    kind = FLOW_MATCHING
    supports_prefix = True

    def __init__(self, spec: PolicySpec, model, device, source: str,
                 sampler: SamplerSettings, split=None, trace: bool = True,
                 by_hand: bool = True, dtype=None, compiled: bool = False):
        """Wrap a loaded velocity field (and its (encoder, head) split); use :meth:`load`.

        The modules are on ``device`` in ``dtype`` already (None: float32); ``compiled``:
        they are wrapped in torch.compile, so neither the numpy head nor the traced steps.
        """
        super().__init__(spec, str(device), source)
        import torch
        self.model = model
        self.encoder, self.head = split if split is not None else (None, None)
        self.torch_device = device
        self.dtype = dtype or torch.float32
        self.stager = InputStager(device, self.dtype)
        self.sampler = sampler
        self._names = [f.name for f in spec.features]
        self.actions = len(spec.action_names)
        self.generator = torch.Generator(device='cpu')
        self.generator.manual_seed(int(sampler.noise_seed))
        for module in (model, self.encoder, self.head):
            # Guidance differentiates with respect to the chunk only.
            for parameter in (module.parameters() if module is not None else ()):
                parameter.requires_grad_(False)
        self.steps: Optional[StepGraphs] = None
        self.trace_error = ''
        self.hand: Optional[MlpHead] = None
        self.hand_error = ''
        if compiled:
            by_hand = trace = False
            self.hand_error = self.trace_error = 'compile is on: torch.compile runs the field'
        if by_hand:
            if self.encoder is None:
                self.hand_error = 'the export has no split (encoder and head)'
            elif self.dtype != torch.float32:
                self.hand_error = f'the numpy head computes in float32, not {self.dtype}'
            elif device.type != 'cpu':
                self.hand_error = f'the head runs on {device.type}, the numpy head on the CPU'
            else:
                self.hand, self.hand_error = checked_hand_head(self.head, spec, self._probe())
        self.traced_encoder: Optional[TracedEncoder] = None
        self.encoder_trace_error = ''
        if self.hand is not None:
            self.traced_encoder, self.encoder_trace_error = TracedEncoder.checked(
                self.encoder, [self._random_features(seed) for seed in (0, 1)])
        if trace and self.hand is None:
            with autocast(device, self.dtype):   # traced as infer runs them
                self.steps, self.trace_error = StepGraphs.checked(
                    self.head if self.encoder is not None else model, self._probe())

    def _probe(self):
        """Return (x_t, t, features) for the field the sampler integrates, batch 1."""
        import torch
        from remote_inference_py.policy_server.runtimes import zero_inputs
        features = [to_device(v, self.torch_device, self.dtype)
                    for v in zero_inputs(self.spec, 1).values()]
        if self.encoder is not None:
            features = encode(self.encoder, features)
        generator = torch.Generator(device='cpu').manual_seed(0)
        x_t = torch.randn((1, self.spec.chunk_length, self.actions), generator=generator)
        return x_t.to(self.torch_device, self.dtype), features

    def _random_features(self, seed: int = 0):
        """Return the manifest's inputs at batch 1 filled with seeded random values."""
        from remote_inference_py.policy_server.runtimes import zero_inputs
        rng = np.random.default_rng(seed)
        features = []
        for value in zero_inputs(self.spec, 1).values():
            if value.dtype == np.uint8:
                value[:] = rng.integers(0, 256, value.shape)
            else:
                value[:] = rng.normal(0.0, 0.5, value.shape)
            features.append(to_device(value, self.torch_device, self.dtype))
        return features

    @classmethod
    def load(cls, options: RuntimeOptions, use_split: bool = True,
             trace: bool = True, by_hand: bool = True) -> 'FlowMatchingRuntime':
        """Load ``model.pt2`` and its manifest, apply the sampler parameters; check both.

        With ``use_split`` (the default) and a manifest ``split`` section, the encoder and
        head files are loaded too and checked against ``model.pt2``; ``use_split=False``
        samples with ``model.pt2`` alone. ``by_hand`` (the default) runs the split's head in
        numpy with its backward pass written by hand when it is the flow policy's MLP;
        otherwise ``trace`` (the default) runs each Euler step as a traced graph (module
        docstring); ``use_split=False, trace=False, by_hand=False`` is the benchmark's
        "before".
        """
        overrides = overrides_from_options(options)
        path, manifest = checkpoint_paths(options, 'model.pt2')
        if path.suffix != '.pt2':
            raise RuntimeLoadError(f'a {FLOW_MATCHING} policy is a .pt2 file (torch.export), '
                                   f'got {str(path)!r}')
        spec = load_manifest(manifest)
        if spec.policy != FLOW_MATCHING:
            raise RuntimeLoadError(f'manifest {str(manifest)!r} declares policy '
                                   f'{spec.policy!r}, not {FLOW_MATCHING!r}')
        sampler = read_sampler(manifest)
        sampler = overrides.apply(sampler)
        if sampler.execution_horizon > spec.chunk_length:
            name = ("parameter 'rtc_execution_horizon'" if options.rtc_execution_horizon
                    else f'manifest {str(manifest)!r}: sampler.execution_horizon')
            raise RuntimeLoadError(f'{name} is {sampler.execution_horizon}, more than the '
                                   f'chunk length {spec.chunk_length}')
        device = resolve_device(options.device)
        dtype = resolve_dtype(options.dtype, device)
        leading = (('x_t', (spec.chunk_length, len(spec.action_names))), ('t', ()))
        try:
            model, spec = load_exported(path, spec, device, leading)
        except RuntimeLoadError:
            raise
        except Exception as error:  # noqa: B902 - torch raises many types for a bad file
            raise RuntimeLoadError(f'cannot load {FLOW_MATCHING} checkpoint {str(path)!r}: '
                                   f'{first_line(error)}') from None
        split = load_split(manifest, spec, model, device) if use_split else None
        # Cast after the split check (float32), then compile (once per shape, at warm-up).
        model = compile_module(cast_module(model, dtype), options.compile)
        if split is not None:
            split = tuple(compile_module(cast_module(part, dtype), options.compile)
                          for part in split)
        return cls(spec, model, device, str(path), sampler, split, trace, by_hand, dtype,
                   options.compile)

    def reset(self, seed: int) -> None:
        """Reseed the sampling noise for an episode (from ``noise_seed`` and ``seed``)."""
        self.generator.manual_seed(episode_seed(self.sampler.noise_seed, seed))

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str],
              prefixes: Optional[Sequence[Optional[Prefix]]] = None) -> np.ndarray:
        """Sample one chunk per batch row; rows with a prefix are guided toward it."""
        import torch
        features = self.stager.stage(inputs, self._names)
        batch = int(features[0].shape[0])
        shape = (batch, self.spec.chunk_length, self.actions)
        targets, weights = self._guidance(prefixes, batch)
        noise = torch.randn(shape, generator=self.generator, dtype=torch.float32)
        if self.hand is not None:
            encoding, = encode(self.traced_encoder or self.encoder, features)
            with OneBlasThread():
                return sample_by_hand(self.hand, noise.numpy(), encoding.numpy(), self.sampler,
                                      targets, weights)
        if targets is not None:
            targets, weights = (torch.from_numpy(v).to(self.torch_device, self.dtype)
                                for v in (targets, weights))
        with autocast(self.torch_device, self.dtype):
            field = self.model
            if self.encoder is not None:
                # The image is encoded once per chunk; only the head runs at every Euler step.
                field, features = self.head, encode(self.encoder, features)
            chunk = sample(field, noise.to(self.torch_device, self.dtype), features,
                           self.sampler, targets, weights, self.steps)
        return chunk.detach().to('cpu', torch.float32).numpy()

    def _guidance(self, prefixes: Optional[Sequence[Optional[Prefix]]], batch: int):
        """Return (targets Y, weights W) as arrays, or (None, None) when nothing is guided."""
        if prefixes is None or all(p is None for p in prefixes):
            return None, None
        if len(prefixes) != batch:
            raise ValueError(f'{len(prefixes)} prefixes for a batch of {batch}')
        steps, actions = self.spec.chunk_length, self.actions
        targets = np.zeros((batch, steps, actions), dtype=np.float32)
        weights = np.zeros((batch, steps, 1), dtype=np.float32)
        for row, prefix in enumerate(prefixes):
            if prefix is None:
                continue
            positions = np.asarray(prefix.positions, dtype=np.float32)
            if positions.ndim != 2 or positions.shape[1] != actions:
                raise ValueError(f'prefix of row {row} has shape {list(positions.shape)}; '
                                 f'expected [steps, {actions}]')
            if not np.all(np.isfinite(positions)):
                raise ValueError(f'prefix of row {row} has non-finite values')
            if int(prefix.frozen_steps) < 0:
                raise ValueError(f'prefix of row {row} has frozen_steps '
                                 f'{prefix.frozen_steps} < 0')
            used = min(len(positions), steps)
            targets[row, :used] = positions[:used]
            weights[row, :, 0] = prefix_weights(
                prefix.frozen_steps, self.sampler.execution_horizon, used, steps,
                self.sampler.prefix_schedule)
        return targets, weights

    def close(self) -> None:
        """Drop the model."""
        self.model = self.encoder = self.head = self.steps = self.hand = None
        self.traced_encoder = None


def read_sampler(manifest: pathlib.Path) -> SamplerSettings:
    """Return the manifest's ``sampler`` section; RuntimeLoadError names a bad field."""
    try:
        data = read_manifest_data(manifest)
        section = data.get('sampler') if isinstance(data, dict) else None
        return sampler_from_dict(section)
    except (ManifestError, SamplerError) as error:
        raise RuntimeLoadError(f'manifest {str(manifest)!r}: {error}') from None


def encode(encoder, features):
    """Return the encoder's outputs on ``features`` as a list (no gradient)."""
    import torch
    with torch.no_grad():
        encoding = encoder(*features)
    return [encoding] if torch.is_tensor(encoding) else list(encoding)


def load_split(manifest: pathlib.Path, spec: PolicySpec, model, device):
    """Return (encoder, head) named by the manifest's ``split`` section, or None without one.

    The files are relative to the manifest. Both are checked on zero inputs (and a random
    chunk) against ``model``: ``head(x_t, t, *encoder(features))`` must equal
    ``model(x_t, t, *features)`` within ``SPLIT_TOLERANCE``; a missing file, a bad section or
    a different velocity is a RuntimeLoadError naming the file.
    """
    import torch
    from remote_inference_py.policy_server.runtimes import zero_inputs
    try:
        data = read_manifest_data(manifest)
    except ManifestError as error:
        raise RuntimeLoadError(str(error)) from None
    section = data.get('split') if isinstance(data, dict) else None
    if section is None:
        return None
    where = f'manifest {str(manifest)!r}'
    if not isinstance(section, dict) or set(section) != {'encoder', 'head'} or not all(
            isinstance(v, str) and v for v in section.values()):
        raise RuntimeLoadError(f'{where}: split must map exactly "encoder" and "head" to file '
                               f'names, got {section!r}')
    parts = []
    for key in ('encoder', 'head'):
        path = manifest.parent / section[key]
        if not path.is_file():
            raise RuntimeLoadError(f'{where}: split.{key} file {str(path)!r} does not exist')
        try:
            part = exported_module(torch.export.load(str(path)), device)
        except Exception as error:  # noqa: B902 - torch raises many types for a bad file
            raise RuntimeLoadError(f'{where}: cannot load split.{key} {str(path)!r}: '
                                   f'{first_line(error)}') from None
        parts.append(part)
    encoder, head = parts
    features = [torch.from_numpy(v).to(device) for v in zero_inputs(spec, 1).values()]
    generator = torch.Generator(device='cpu').manual_seed(0)
    x_t = torch.randn((1, spec.chunk_length, len(spec.action_names)), generator=generator)
    t = torch.full((1,), 0.5)
    try:
        with torch.no_grad():
            expected = model(x_t.to(device), t.to(device), *features)
            got = head(x_t.to(device), t.to(device), *encode(encoder, features))
        difference = float((got - expected).abs().max())
    except Exception as error:  # noqa: B902 - a mismatched graph raises many types
        raise RuntimeLoadError(f'{where}: split.encoder and split.head cannot be run on the '
                               f"manifest's inputs: {first_line(error)}") from None
    if not difference <= SPLIT_TOLERANCE:
        raise RuntimeLoadError(f'{where}: split.head(split.encoder) differs from the velocity '
                               f'field {difference:.3g} > {SPLIT_TOLERANCE} on a probe input; the '
                               'split files do not belong to this model')
    return encoder, head


def sample(model, noise, features, sampler: SamplerSettings, targets=None, weights=None,
           steps: Optional['StepGraphs'] = None):
    """Integrate the velocity field from ``noise`` with Euler steps; guide when ``targets``.

    ``targets`` ``[batch, steps, actions]`` and ``weights`` ``[batch, steps, 1]`` are the
    committed plan and its row weights (zero weights: a row is not guided); see the module
    docstring. ``steps``: the traced steps of ``model`` (None: run ``model`` untraced).
    """
    import torch
    x = noise
    count = int(sampler.steps)
    dt = 1.0 / count
    batch = x.shape[0]
    for index in range(count):
        t = index * dt
        t_batch = torch.full((batch,), t, dtype=x.dtype, device=x.device)
        weight = None if targets is None else guidance_weight(t, sampler.max_guidance_weight)
        if steps is not None:
            velocity = steps.velocity(x, t_batch, features, t, weight, targets, weights)
        else:
            velocity = untraced_velocity(model, x, t_batch, features, t, weight, targets,
                                         weights)
        x = x.detach() + dt * velocity
    return x


def untraced_velocity(field, x, t_batch, features, t: float, weight, targets, weights):
    """Return one Euler step's velocity, run op by op (guided when ``targets``)."""
    import torch
    if targets is None:
        with torch.no_grad():
            return field(x, t_batch, *features)
    with torch.enable_grad():
        x_in = x.detach().requires_grad_(True)
        velocity = field(x_in, t_batch, *features)
        predicted = x_in + (1.0 - t) * velocity
        error = weights * (targets - predicted)
        correction, = torch.autograd.grad(predicted, x_in, error)
    return velocity.detach() + weight * correction


def sample_by_hand(head: MlpHead, noise: np.ndarray, encoding: np.ndarray,
                   sampler: SamplerSettings, targets: Optional[np.ndarray] = None,
                   weights: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`sample` with the numpy head: the same Euler steps and guidance, in float32.

    ``noise`` ``[batch, steps, actions]``, ``encoding`` the encoder's output; ``targets`` and
    ``weights`` ``[batch, steps, 1]`` as :meth:`FlowMatchingRuntime._guidance` makes them.
    """
    shape = noise.shape
    batch = shape[0]
    context = head.prepare(encoding)
    x = np.ascontiguousarray(noise, dtype=np.float32).reshape(batch, -1)
    if targets is not None:
        targets = targets.reshape(batch, -1)
        weights = np.ascontiguousarray(np.broadcast_to(weights, shape)).reshape(batch, -1)
    count = int(sampler.steps)
    dt = 1.0 / count
    for index in range(count):
        t = index * dt
        weight = None if targets is None else guidance_weight(t, sampler.max_guidance_weight)
        velocity = head.velocity(context, x, t, weight, targets, weights)
        velocity *= np.float32(dt)
        x = x + velocity
    return x.reshape(shape)


def checked_hand_head(head, spec: PolicySpec, probe):
    """Return (MlpHead, '') if the exported ``head`` is the flow policy's MLP, else (None, why).

    The weights are read by name (:meth:`.flow_head.MlpHead.from_state`); then the numpy
    head's plain and guided steps must equal the exported head's (:func:`untraced_velocity`)
    within ``HAND_TOLERANCE`` (relative) on the probe's chunk, a random encoding and plan, at
    each of ``HAND_PROBE_TIMES``.
    """
    import itertools
    import torch
    x_t, features = probe
    if len(features) != 1:
        return None, f'the encoder gives {len(features)} tensors; the numpy head reads one'
    state = {name: value.detach().cpu().numpy() for name, value in itertools.chain(
        head.named_parameters(), head.named_buffers())}
    try:
        hand = MlpHead.from_state(state, spec.chunk_length, len(spec.action_names))
    except HeadMismatch as error:
        return None, f"the head is not the flow policy's MLP: {error}"
    generator = torch.Generator(device='cpu').manual_seed(1)
    shape = x_t.shape
    encoding = features[0] + torch.randn(features[0].shape, generator=generator)
    targets = torch.randn(shape, generator=generator)
    weights = torch.linspace(1.0, 0.0, shape[1], dtype=x_t.dtype).reshape(1, -1, 1)
    flat = (shape[0], -1)
    largest = 0.0
    try:
        context = hand.prepare(encoding.numpy())
        for t in HAND_PROBE_TIMES:
            t_batch = torch.full((shape[0],), t, dtype=x_t.dtype)
            weight = guidance_weight(t, 10.0)
            for kind, guide in (('plain', (None, None, None)), ('guided', (
                    weight, targets, weights))):
                expected = untraced_velocity(head, x_t, t_batch, [encoding], t, *guide)
                arrays = () if guide[1] is None else (
                    weight, targets.numpy().reshape(flat),
                    np.broadcast_to(weights.numpy(), shape).reshape(flat))
                got = hand.velocity(context, x_t.numpy().reshape(flat), t, *arrays)
                expected = expected.numpy().reshape(flat)
                scale = max(1.0, float(np.abs(expected).max()))
                difference = float(np.abs(got - expected).max()) / scale
                if not difference <= HAND_TOLERANCE:
                    return None, (f"the numpy head's {kind} step at t = {t} differs from the "
                                  f'exported head by {difference:.3g} (relative) > '
                                  f'{HAND_TOLERANCE}')
                largest = max(largest, difference)
    except (HeadMismatch, ValueError) as error:
        return None, f'the numpy head cannot run on the probe: {first_line(error)}'
    hand.checked_difference = largest
    return hand, ''


def plain_step(field, x_t, t, *features):
    """Return the velocity ``field(x_t, t, *features)`` (the function traced for plain steps)."""
    return field(x_t, t, *features)


def guided_step(field, x_t, t, remaining, weight, targets, weights, *features):
    """Return the guided velocity ``v + weight * J^T (weights * (targets - x_t - remaining v))``.

    ``J`` is the Jacobian of the predicted chunk ``x_t + remaining * v`` with respect to
    ``x_t``; ``remaining`` (``1 - t``) and ``weight`` are 0-d tensors. The same arithmetic as
    :func:`untraced_velocity`, written with ``torch.func.vjp`` so that ``make_fx``
    records forward and backward as one graph.
    """
    import torch

    def predict(x_in):
        velocity = field(x_in, t, *features)
        return x_in + remaining * velocity, velocity

    predicted, pull_back, velocity = torch.func.vjp(predict, x_t, has_aux=True)
    correction, = pull_back(weights * (targets - predicted))
    return velocity + weight * correction


class TracedEncoder:
    """The split's encoder as a graph traced once per input shapes (``torch.jit.trace``).

    The exported encoder runs op by op from Python, with its input checks; the traced graph
    runs the same operations in TorchScript's interpreter, about twice as fast at batch 1.
    """

    def __init__(self, encoder):
        """Trace ``encoder`` lazily, once per input shapes and types."""
        self.encoder = encoder
        self.graphs = {}

    @classmethod
    def checked(cls, encoder, probes):
        """Return (TracedEncoder, '') if it encodes each of ``probes`` as ``encoder`` does.

        The graph is traced on the first probe and compared on all of them, so a value the
        trace froze from the first probe's data shows on the others. Otherwise (None, the
        reason): the runtime then runs the exported encoder.
        """
        traced = cls(encoder)
        differences = []
        for features in probes:
            try:
                got = encode(traced, features)
            except Exception as error:  # noqa: B902 - tracing raises many types
                return None, f'the encoder cannot be traced: {first_line(error)}'
            expected = encode(encoder, features)
            if len(got) != len(expected) or any(a.shape != b.shape
                                                for a, b in zip(got, expected)):
                return None, 'the traced encoder gives other outputs than the exported one'
            differences += [float((a - b).abs().max()) for a, b in zip(got, expected)]
        if not all(d <= TRACE_TOLERANCE for d in differences):
            return None, (f'the traced encoder differs from the exported one by '
                          f'{max(differences):.3g} > {TRACE_TOLERANCE}')
        return traced, ''

    def __call__(self, *features):
        """Return the encoder's output(s) for ``features``."""
        import warnings
        import torch
        key = tuple((tuple(f.shape), f.dtype) for f in features)
        graph = self.graphs.get(key)
        if graph is None:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter('ignore')
                graph = self.graphs[key] = torch.jit.trace(self.encoder, tuple(features),
                                                           check_trace=False)
        return graph(*features)


class StepGraphs:
    """A velocity field's plain and guided Euler steps as traced graphs, per input shapes."""

    def __init__(self, field):
        """Trace ``field`` lazily, once per kind of step and input shapes."""
        self.field = field
        self.graphs = {}

    @classmethod
    def checked(cls, field, probe):
        """Return (StepGraphs, '') if both steps trace equal to ``field`` on ``probe``.

        Otherwise (None, the reason): the sampler then runs ``field`` untraced.
        """
        import torch
        x_t, features = probe
        steps = cls(field)
        shape = x_t.shape
        targets = torch.linspace(-1.0, 1.0, x_t.numel(), dtype=x_t.dtype,
                                 device=x_t.device).reshape(shape)
        weights = torch.linspace(1.0, 0.0, shape[1], dtype=x_t.dtype,
                                 device=x_t.device).reshape(1, -1, 1)
        t, weight = 0.3, 2.5
        t_batch = torch.full((shape[0],), t, dtype=x_t.dtype, device=x_t.device)
        try:
            got = [steps.velocity(x_t, t_batch, features, t, None, None, None),
                   steps.velocity(x_t, t_batch, features, t, weight, targets, weights)]
        except Exception as error:  # noqa: B902 - tracing raises many types
            return None, f'the velocity field cannot be traced: {first_line(error)}'
        expected = [untraced_velocity(field, x_t, t_batch, features, t, None, None, None),
                    untraced_velocity(field, x_t, t_batch, features, t, weight, targets,
                                      weights)]
        for kind, value, reference in zip(('plain', 'guided'), got, expected):
            difference = float((value - reference).abs().max())
            tolerance = step_tolerance(x_t.dtype, reference)
            if not difference <= tolerance:
                return None, (f'the traced {kind} step differs from the velocity field by '
                              f'{difference:.3g} > {tolerance:.3g}')
        return steps, ''

    def velocity(self, x_t, t_batch, features, t: float, weight, targets, weights):
        """Return the step's velocity: plain when ``targets`` is None, else guided."""
        import torch
        if targets is None:
            arguments = (x_t, t_batch, *features)
            kind, function = 'plain', plain_step
        else:
            scalars = [torch.tensor(v, dtype=x_t.dtype, device=x_t.device)
                       for v in (1.0 - t, weight)]
            arguments = (x_t, t_batch, *scalars, targets, weights, *features)
            kind, function = 'guided', guided_step
        key = (kind,) + tuple(tuple(a.shape) for a in arguments)
        graph = self.graphs.get(key)
        if graph is None:
            graph = self.graphs[key] = self.trace(function, arguments)
        with torch.no_grad():
            return graph(*arguments)

    def trace(self, function, arguments):
        """Return ``function(self.field, *arguments)`` traced for these shapes."""
        import functools
        import warnings
        import torch
        from torch.fx.experimental.proxy_tensor import make_fx
        graph = make_fx(functools.partial(function, self.field))(*arguments)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter('ignore')
            return torch.jit.trace(graph, arguments, check_trace=False)
