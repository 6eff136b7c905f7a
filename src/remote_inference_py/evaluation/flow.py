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
A small flow-matching chunk policy for the pick-the-cube task, trained on CPU (RTC-capable).

It learns from the demonstrations of :mod:`.learned` (same recorder, dataset, camera and image
size) and is served by :mod:`~remote_inference_py.policy_server.flow_runtime`, which can
steer a new chunk toward the plan the robot has committed to (real-time chunking).

**Units.** The policy samples in the manifest's normalized action units: per joint,
``(radians - mean) / std`` with ``mean`` the joint's mean over every chunk step of the data
and ``std`` the spread of the chunk steps *around the current joint position* (how far a
chunk moves a joint), so one unit is a typical move of that joint within a chunk and the
Gaussian noise the flow starts from has the scale of the moves it has to make. A committed
plan handed over by the server in these units is used as it is.

**Network** (:func:`make_flow_model`): ``v = model(x_t, t, state, image)``. The image goes
through :mod:`.learned`'s conv encoder and spatial soft-argmax (32 keypoints); ``t`` through
a sinusoidal embedding; the chunk ``x_t`` is first expressed relative to the current joint
positions (``x_t - t s``, ``s`` the state in action units: the interpolation between noise
and the chunk's offsets from the state), and an MLP over [offsets, time, keypoints, state]
predicts the finished chunk's offsets ``d``. The clean chunk is ``x_1 = s + d`` and the
velocity ``v = (x_1 - x_t) / (1 - t)`` (``1 - t`` floored at 0.05), so the exported function
is a velocity field in normalized action units, as the sampler expects, and
``x_t + (1 - t) v`` is the network's estimate of the chunk, whose Jacobian the guidance uses.

**Training** (:func:`train_flow`): rectified flow, ``x_t = (1 - t) x_0 + t x_1`` with
``x_0`` Gaussian noise and ``t`` uniform in [0, 1); the loss is the L1 distance of the
predicted clean chunk to the demonstrated one (the same target and loss as the CNN, so the
sampler's last Euler step lands on a regression-quality chunk), with several noise draws per
image sharing one encoder pass; random image shifts of +-3 pixels, Adam, cosine schedule,
on 2 CPU threads (``--threads``).

**Export** (:func:`export_flow`): ``model.pt2`` (torch.export, dynamic batch up to
``max_batch_size``) and ``model.json``: :func:`.learned.learned_spec_dict`'s manifest with
``policy: flow_matching``, the action normalization above and the ``sampler`` section
(:mod:`~remote_inference_py.policy_server.sampler`); and the same network split in two,
``model.encoder.pt2`` (state, image -> encoding: the keypoints and the state) and
``model.head.pt2`` (x_t, t, encoding -> v), named in the manifest's ``split`` section, so the
sampler encodes the image once per chunk, not at every Euler step.

``python -m remote_inference_py.evaluation.flow --dataset DATASET --out DIR --epochs N``
(console script ``train_flow_policy``); then ``evaluate --policy DIR/model.pt2``. ``--init
DIR/model.pt2`` continues training from an exported model's weights (``--learning-rate`` to
restart the schedule lower).
"""

import argparse
import dataclasses
import json
import math
import pathlib
import sys
import time
from typing import Optional, Sequence

import numpy as np

from remote_inference_py.evaluation.expert import CHUNK_LENGTH
from remote_inference_py.evaluation.learned import (
    batch_images, DATASET_FILE, fit, frames_tensor, learned_spec_dict, load_dataset,
    make_keypoint_encoder, MODEL_FILE, MODEL_IMAGE_SIZE, start_training, TrainSettings,
    write_training_record)
from remote_inference_py.policy_server.manifest import FLOW_MATCHING
from remote_inference_py.policy_server.sampler import sampler_from_dict, SamplerSettings

MIN_REMAINING_TIME = 0.05
"""Floor of ``1 - t`` when the network's chunk estimate is turned into a velocity."""
MIN_STD = 1e-3
"""Floor of the per-joint action std [rad] (a joint that never moves)."""


def action_statistics(states: np.ndarray, chunks: np.ndarray):
    """Return per-joint (mean, std) of the normalized action units (module docstring)."""
    joints = chunks.shape[-1]
    mean = chunks.reshape(-1, joints).mean(axis=0)
    offsets = (chunks - states[:, None, :]).reshape(-1, joints)
    std = np.sqrt((offsets ** 2).mean(axis=0)) + MIN_STD
    return mean.astype(np.float64), std.astype(np.float64)


def flow_spec_dict(image_size: Sequence[int], mean: np.ndarray, std: np.ndarray,
                   sampler: SamplerSettings = SamplerSettings(),
                   chunk_length: int = CHUNK_LENGTH, max_batch_size: int = 1) -> dict:
    """Return the flow policy's manifest (with its ``sampler`` section) as plain data."""
    data = learned_spec_dict(image_size, MODEL_IMAGE_SIZE, chunk_length)
    data['policy'] = FLOW_MATCHING
    data['max_batch_size'] = int(max_batch_size)
    data['action']['normalization'] = {'mode': 'mean_std', 'mean': [float(v) for v in mean],
                                       'std': [float(v) for v in std]}
    data['sampler'] = sampler_from_dict(dataclasses.asdict(sampler)).to_dict()
    return data


def make_flow_model(mean: np.ndarray, std: np.ndarray, chunk_length: int = CHUNK_LENGTH,
                    channels: int = 16, keypoints: int = 32, hidden: int = 512,
                    time_features: int = 32):
    """Return the velocity network (torch.nn.Module): ``model(x_t, t, state, image) -> v``.

    ``x_t`` [B, chunk_length, joints] and ``v`` are in normalized action units (``mean``,
    ``std`` per joint, radians), ``t`` [B] flow time, ``state`` [B, joints] radians and
    ``image`` [B, 3, H, W] in [0, 1]. :meth:`predict_clean` returns the network's chunk
    estimate (used in training).
    """
    import torch
    from torch import nn
    joints = len(mean)

    class FlowPolicy(nn.Module):
        """Keypoints + state + time + chunk -> MLP -> clean chunk estimate -> velocity."""

        def __init__(self):
            super().__init__()
            self.chunk_length = chunk_length
            self.joints = joints
            self.encoder, self.keypoints = make_keypoint_encoder(channels, keypoints)
            size = chunk_length * joints
            self.head = nn.Sequential(
                nn.Linear(size + 2 * time_features + 2 * keypoints + joints, hidden), nn.SiLU(),
                nn.Linear(hidden, hidden), nn.SiLU(),
                nn.Linear(hidden, hidden), nn.SiLU(),
                nn.Linear(hidden, size))
            self.register_buffer('mean', torch.tensor(mean, dtype=torch.float32))
            self.register_buffer('std', torch.tensor(np.asarray(std) + 1e-8,
                                                     dtype=torch.float32))
            frequencies = torch.exp(torch.linspace(0.0, math.log(1000.0), time_features))
            self.register_buffer('frequencies', frequencies)

        def features(self, image):
            """Return the image keypoints [B, 2 * keypoints]."""
            return self.keypoints(self.encoder(image))

        def predict_clean(self, x_t, t, state, points):
            """Return the clean chunk estimate (normalized units) from precomputed keypoints."""
            anchor = ((state - self.mean) / self.std)[:, None, :]
            offsets = x_t - t[:, None, None] * anchor
            angles = t[:, None] * self.frequencies[None, :]
            inputs = torch.cat([offsets.reshape(offsets.shape[0], -1), torch.sin(angles),
                                torch.cos(angles), points, state], dim=1)
            predicted = self.head(inputs).reshape(-1, self.chunk_length, self.joints)
            return anchor + predicted

        def encode(self, state, image):
            """Return the encoding the velocity head reads: [keypoints, state] [B, 2K + J]."""
            return torch.cat([self.features(image), state], dim=1)

        def head_velocity(self, x_t, t, encoding):
            """Return the velocity from an encoding made by :meth:`encode`."""
            points, state = encoding[:, :-self.joints], encoding[:, -self.joints:]
            clean = self.predict_clean(x_t, t, state, points)
            remaining = torch.clamp(1.0 - t, min=MIN_REMAINING_TIME)[:, None, None]
            return (clean - x_t) / remaining

        def forward(self, x_t, t, state, image):
            return self.head_velocity(x_t, t, self.encode(state, image))

    return FlowPolicy()


@dataclasses.dataclass(frozen=True)
class FlowTrainSettings(TrainSettings):
    """Training hyper-parameters: the CNN's, fewer epochs, and noise draws per frame."""

    epochs: int = 12
    noise_draws: int = 8
    hidden: int = 512
    """Width of the velocity head's three hidden layers."""


def train_flow(dataset_path: pathlib.Path, settings: FlowTrainSettings = FlowTrainSettings(),
               max_samples: Optional[int] = None, progress=print,
               init: Optional[pathlib.Path] = None,
               encoder_from: Optional[pathlib.Path] = None):
    """Train on a recorded dataset; return (model, image_size, (mean, std), loss history).

    ``init``: an exported ``model.pt2`` of this network whose weights training continues
    from (its manifest's action statistics are kept). ``encoder_from``: an exported model
    with the same image encoder (the learned CNN policy's ``model.pt2``): its encoder is
    copied and frozen, every frame's keypoints are computed once, and only the velocity head
    trains, which takes minutes on a CPU where training the encoder takes an hour.
    """
    import torch
    start_training(settings)
    frames, states, chunks, image_size = load_dataset(dataset_path, max_samples)
    mean, std = action_statistics(states, chunks)
    if init is not None:
        normalization = json.loads(pathlib.Path(init).with_suffix('.json').read_text())[
            'action']['normalization']
        mean, std = np.asarray(normalization['mean']), np.asarray(normalization['std'])
    model = make_flow_model(mean, std, chunks.shape[1],
                            channels=32 if encoder_from is not None else 16,
                            hidden=settings.hidden)
    if init is not None:
        model.load_state_dict(torch.export.load(str(init)).state_dict)
    cached_points = None
    if encoder_from is not None:
        cached_points = _frozen_keypoints(model, encoder_from, frames)
    frames_t = frames_tensor(frames)
    states_t = torch.from_numpy(states)
    targets_t = (torch.from_numpy(chunks) - model.mean) / model.std
    draws = max(1, settings.noise_draws)

    def batch_loss(index, generator):
        if cached_points is not None:
            points = cached_points[index].repeat_interleave(draws, dim=0)
        else:
            images = batch_images(frames_t, index, settings.shift_px, generator)
            points = model.features(images).repeat_interleave(draws, dim=0)
        state = states_t[index].repeat_interleave(draws, dim=0)
        clean = targets_t[index].repeat_interleave(draws, dim=0)
        t = torch.rand(len(clean), generator=generator)
        noise = torch.randn(clean.shape, generator=generator)
        x_t = (1.0 - t)[:, None, None] * noise + t[:, None, None] * clean
        return (model.predict_clean(x_t, t, state, points) - clean).abs().mean()

    trained = [p for p in model.parameters() if p.requires_grad]
    history = fit(model, trained, settings, len(states), batch_loss, progress)
    return model, image_size, (mean, std), history


def _frozen_keypoints(model, source: pathlib.Path, frames: np.ndarray):
    """Copy and freeze ``source``'s encoder in ``model``; return every frame's keypoints."""
    import torch
    weights = {key[len('encoder.'):]: value for key, value in
               torch.export.load(str(source)).state_dict.items() if key.startswith('encoder.')}
    if not weights:
        raise ValueError(f'{source} has no encoder weights (encoder.*) to start from')
    try:
        model.encoder.load_state_dict(weights)
    except RuntimeError as error:
        raise ValueError(f'the encoder of {source} does not fit this network: '
                         f'{str(error).splitlines()[0]}') from None
    for parameter in model.encoder.parameters():
        parameter.requires_grad_(False)
    points = []
    with torch.no_grad():
        for start in range(0, len(frames), 512):
            batch = torch.from_numpy(frames[start:start + 512]).permute(0, 3, 1, 2).float()
            points.append(model.features(batch / 255.0))
    return torch.cat(points)


def export_flow(model, image_size: Sequence[int], mean: np.ndarray, std: np.ndarray,
                out_dir: pathlib.Path, sampler: SamplerSettings = SamplerSettings(),
                max_batch_size: int = 4, split: bool = True) -> pathlib.Path:
    """Write ``model.pt2`` (the velocity field) and ``model.json`` to ``out_dir``.

    With ``split`` (the default) also the same network in two parts, ``model.encoder.pt2``
    (``encoding = encoder(state, image)``) and ``model.head.pt2`` (``v = head(x_t, t,
    encoding)``), named in the manifest's ``split`` section, so the sampler encodes the image
    once per chunk instead of at every Euler step.
    """
    import torch
    from remote_inference_py.policy_server.manifest import spec_from_dict
    from remote_inference_py.policy_server.runtimes import zero_inputs
    data = flow_spec_dict(image_size, mean, std, sampler, model.chunk_length, max_batch_size)
    spec = spec_from_dict(data, 'flow policy')
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / MODEL_FILE
    batch = 2 if max_batch_size > 1 else 1
    features = tuple(torch.from_numpy(v) for v in zero_inputs(spec, batch).values())
    leading = (torch.zeros(batch, spec.chunk_length, len(spec.action_names)),
               torch.full((batch,), 0.5))
    model = model.eval()
    dim = torch.export.Dim('batch', min=1, max=max_batch_size) if batch > 1 else None

    def save(module, inputs, target: pathlib.Path):
        dynamic = tuple({0: dim} for _ in inputs) if dim is not None else None
        program = torch.export.export(module, inputs, dynamic_shapes=dynamic, strict=False)
        torch.export.save(program, str(target))

    save(model, leading + features, path)
    if split:
        encoder, head = _split_modules(model)
        with torch.no_grad():
            encoding = encoder(*features)
        names = {'encoder': path.stem + '.encoder.pt2', 'head': path.stem + '.head.pt2'}
        save(encoder, features, out_dir / names['encoder'])
        save(head, leading + (encoding,), out_dir / names['head'])
        data['split'] = names
    path.with_suffix('.json').write_text(json.dumps(data, indent=2) + '\n')
    return path


def _split_modules(model):
    """Return (encoder, head) modules sharing ``model``'s weights (see :func:`export_flow`).

    The head holds a shallow copy of ``model`` without the image encoder, so its export
    carries only the weights it uses.
    """
    import copy
    from torch import nn
    body = copy.copy(model)
    body._modules = {name: module for name, module in model._modules.items()
                     if name not in ('encoder', 'keypoints')}

    class Encoder(nn.Module):
        """``encoding = encoder(state, image)``: the image keypoints and the state."""

        def __init__(self):
            super().__init__()
            self.policy = model

        def forward(self, state, image):
            return self.policy.encode(state, image)

    class Head(nn.Module):
        """``v = head(x_t, t, encoding)``: the velocity field after the encoder."""

        def __init__(self):
            super().__init__()
            self.policy = body

        def forward(self, x_t, t, encoding):
            return self.policy.head_velocity(x_t, t, encoding)

    return Encoder().eval(), Head().eval()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Train and export the flow policy (see the module docstring)."""
    parser = argparse.ArgumentParser(description='Train a small flow-matching chunk policy on '
                                     'recorded demonstrations (CPU) and export it.')
    parser.add_argument('--dataset', default=f'runs/evaluation/learned/{DATASET_FILE}',
                        help='demonstrations recorded by train_eval_policy record')
    parser.add_argument('--out', default='runs/evaluation/flow')
    parser.add_argument('--epochs', type=int, default=FlowTrainSettings.epochs)
    parser.add_argument('--max-samples', type=int, default=0)
    parser.add_argument('--init', default='',
                        help='continue training from the weights of an exported model.pt2')
    parser.add_argument('--encoder-from', default='',
                        help='start from (and freeze) the image encoder of an exported model, '
                             "e.g. the learned CNN policy's model.pt2: minutes instead of an hour")
    parser.add_argument('--learning-rate', type=float, default=FlowTrainSettings.learning_rate)
    parser.add_argument('--noise-draws', type=int, default=FlowTrainSettings.noise_draws,
                        help='noise samples per frame and step')
    parser.add_argument('--hidden', type=int, default=FlowTrainSettings.hidden,
                        help="width of the velocity head's hidden layers")
    parser.add_argument('--threads', type=int, default=FlowTrainSettings.threads,
                        help='torch threads for training (1 on a host busy with other work)')
    parser.add_argument('--steps', type=int, default=SamplerSettings.steps,
                        help='Euler steps of the sampler (manifest sampler.steps)')
    parser.add_argument('--execution-horizon', type=int,
                        default=SamplerSettings.execution_horizon)
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    sampler = SamplerSettings(steps=args.steps, execution_horizon=args.execution_horizon)
    sampler_from_dict(sampler.to_dict())   # a bad value is named before training
    began = time.perf_counter()
    model, image_size, (mean, std), history = train_flow(
        pathlib.Path(args.dataset),
        FlowTrainSettings(epochs=args.epochs, learning_rate=args.learning_rate,
                          noise_draws=args.noise_draws, hidden=args.hidden,
                          threads=args.threads),
        max_samples=args.max_samples or None, init=pathlib.Path(args.init) if args.init else None,
        encoder_from=pathlib.Path(args.encoder_from) if args.encoder_from else None)
    seconds = time.perf_counter() - began
    path = export_flow(model, image_size, mean, std, out, sampler)
    write_training_record(out, epochs=args.epochs, loss=history, seconds=seconds,
                          dataset=str(args.dataset), init=args.init,
                          encoder_from=args.encoder_from, learning_rate=args.learning_rate,
                          hidden=args.hidden, noise_draws=args.noise_draws,
                          threads=args.threads)
    print(f'trained in {seconds:.0f} s (final loss {history[-1]:.4f}); exported {path} and '
          f'{path.with_suffix(".json")}; evaluate it with: evaluate --policy {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
