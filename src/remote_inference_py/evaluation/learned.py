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
A small learned policy for the pick-the-cube task: record, train on CPU, export, evaluate.

1. **Record** demonstrations from the scripted expert in simulated time
   (:func:`record_demonstrations`): the expert runs through the executor (aligned, no
   latency); at every control tick the recorder stores what a camera policy observes (the
   ``front`` camera frame as published, converted to the model's input size exactly as the
   policy server converts it, and the measured joint positions; *not* the cube pose) and,
   as the label, the expert's chunk planned from that very observation. Half of the episodes
   add slowly varying noise to the executed commands, so the data also shows how to recover
   from states the clean expert never visits (DART).
2. **Train** :func:`make_model`: a compact conv encoder with a spatial soft-argmax (where
   things are in the image: 32 keypoints) plus the joint state, into an MLP that predicts
   the 50-step chunk as offsets from the current joint positions [rad]; L1 loss, random
   image shifts of +-3 pixels, Adam, on CPU in minutes. The loop (:func:`fit`: epochs,
   shuffled batches, Adam with a cosine schedule, progress lines) is the flow policy's too
   (:mod:`.flow`); each gives it only the loss of a batch.
3. **Export** to the policy server's format (:func:`export`): ``model.pt2`` (torch.export)
   and ``model.json`` (the manifest: state [6] and the ``front`` camera as published,
   96x96 rgb8, model input 3x64x64; SI radians, 30 Hz, 50 steps).
4. **Evaluate** it like any policy: ``evaluate --policy <out>/model.pt2``.

``python -m remote_inference_py.evaluation.learned --out runs/evaluation/learned`` does 1-3
(``--episodes``, ``--epochs``; ``record`` / ``train`` to do one step).
"""

import argparse
import dataclasses
import json
import pathlib
import sys
import time
from typing import Dict, Optional, Sequence

import numpy as np

from remote_inference_py.evaluation.expert import (
    CHUNK_LENGTH, ExpertRuntime, FPS, SEMANTICS, STATE_FEATURE)
from remote_inference_py.evaluation.settings import Configuration, EvalSettings
from remote_inference_py.evaluation.task import episode_seeds, JOINT_NAMES, TaskConfig

CAMERA = 'front'
IMAGE_FEATURE = f'observation.images.{CAMERA}'
MODEL_IMAGE_SIZE = (64, 64)   # (height, width) the model looks at
DATASET_FILE = 'demonstrations.npz'
MODEL_FILE = 'model.pt2'


def learned_spec_dict(image_size: Sequence[int], model_size: Sequence[int] = MODEL_IMAGE_SIZE,
                      chunk_length: int = CHUNK_LENGTH) -> dict:
    """Return the learned policy's manifest as plain data (no privileged feature)."""
    height, width = (int(v) for v in image_size)
    return {
        'policy': 'small_chunking_cnn', 'semantics': SEMANTICS, 'fps': FPS,
        'chunk_length': chunk_length, 'max_batch_size': 1,
        'action': {'names': list(JOINT_NAMES)},
        'features': [
            {'name': STATE_FEATURE, 'kind': 'state', 'shape': [len(JOINT_NAMES)],
             'dtype': 'float32', 'names': list(JOINT_NAMES), 'semantics': SEMANTICS},
            {'name': IMAGE_FEATURE, 'kind': 'rgb', 'shape': [height, width, 3],
             'dtype': 'uint8', 'model_shape': [3, *model_size]},
        ]}


# ---- recording ------------------------------------------------------------------------------

class _OUNoise:
    """Slowly varying offsets on the arm joints (the gripper is left alone) [rad]."""

    def __init__(self, rng: np.random.Generator, sigma: float, decay: float = 0.95):
        self.rng = rng
        self.sigma = sigma
        self.decay = decay
        self.offset = np.zeros(len(JOINT_NAMES))

    def __call__(self, command: np.ndarray) -> np.ndarray:
        self.offset[:5] = self.decay * self.offset[:5] + self.rng.normal(0, self.sigma, 5)
        return command + self.offset


def record_demonstrations(out_path: pathlib.Path, episodes: int, first_seed: int = 1000,
                          settings: Optional[EvalSettings] = None,
                          task: TaskConfig = TaskConfig(), noise_rad: float = 0.01,
                          model_size: Sequence[int] = MODEL_IMAGE_SIZE,
                          progress=print) -> Dict[str, float]:
    """Record expert episodes to ``out_path`` (.npz); return counts.

    Seeds start at ``first_seed`` (default 1000, away from the evaluation's seeds 0...).
    Episodes the expert fails are left out.
    """
    from remote_inference_py.evaluation.simtime import FrameRenderer, SimulatedSystem
    from remote_inference_py.policy_server import images
    from remote_inference_py.policy_server.manifest import spec_from_dict
    settings = settings or EvalSettings.load()
    hardware = settings.hardware_config()
    size = (hardware.sim_image_height, hardware.sim_image_width)
    feature = spec_from_dict(learned_spec_dict(size, model_size)).feature(IMAGE_FEATURE)
    runtime = ExpertRuntime()
    expert = runtime.expert
    renderer = FrameRenderer(size[1], size[0])
    frames, states, chunks, episode_ids = [], [], [], []
    kept = 0
    try:
        for number, seed in enumerate(episode_seeds(first_seed, episodes, task.cube_region)):
            rng = np.random.default_rng(seed)
            perturb = _OUNoise(rng, noise_rad) if number % 2 else None
            episode = {'frames': [], 'states': [], 'chunks': []}

            def on_tick(system, out, episode=episode):
                if system.measured is None or out.command is None:
                    return
                position, quaternion = system.sim.cube_pose()
                pose = np.array([*position, *quaternion[1:], quaternion[0]])
                frame = renderer.render(system.sim.data.qpos, CAMERA)
                model_input = images.to_model_input(frame, feature)
                episode['frames'].append(
                    np.round(np.transpose(model_input, (1, 2, 0)) * 255).astype(np.uint8))
                episode['states'].append(system.measured.astype(np.float32))
                episode['chunks'].append(expert.plan(system.measured, pose).astype(np.float32))

            system = SimulatedSystem(runtime, settings, Configuration('aligned', 0.0), seed,
                                     task, perturb=perturb, on_tick=on_tick)
            try:
                system.run()
                success = system.monitor.success
            finally:
                system.close()
            if success:
                kept += 1
                frames += episode['frames']
                states += episode['states']
                chunks += episode['chunks']
                episode_ids += [number] * len(episode['states'])
            progress(f'episode {number + 1}/{episodes} (seed {seed}, '
                     f'{"noisy" if perturb else "clean"}): {"kept" if success else "failed"}, '
                     f'{len(episode["states"])} frames')
    finally:
        renderer.close()
    if not frames:
        raise RuntimeError('the expert failed every episode; nothing recorded')
    out_path = pathlib.Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_path, frames=np.stack(frames), states=np.stack(states),
                        chunks=np.stack(chunks), episodes=np.array(episode_ids),
                        image_size=np.array(size))
    return {'episodes': episodes, 'kept': kept, 'frames': len(frames)}


# ---- the model ------------------------------------------------------------------------------

def make_keypoint_encoder(channels: int = 32, keypoints: int = 32):
    """Return (conv encoder, spatial soft-argmax): image [B, 3, H, W] -> [B, 2 * keypoints].

    The soft-argmax gives each of the encoder's ``keypoints`` channels the expected (x, y)
    image position of its softmax, in [-1, 1]: where things are in the image.
    """
    import torch
    from torch import nn

    class SpatialSoftArgmax(nn.Module):
        """Expected (x, y) image position of each channel's softmax [-1, 1]."""

        def forward(self, features):
            batch, count, height, width = features.shape
            weights = torch.softmax(features.reshape(batch, count, height * width), dim=-1)
            ys = torch.linspace(-1.0, 1.0, height, device=features.device)
            xs = torch.linspace(-1.0, 1.0, width, device=features.device)
            grid_y = ys[:, None].expand(height, width).reshape(-1)
            grid_x = xs[None, :].expand(height, width).reshape(-1)
            return torch.cat([(weights * grid_x).sum(-1), (weights * grid_y).sum(-1)], dim=1)

    encoder = nn.Sequential(
        nn.Conv2d(3, channels, 5, stride=2, padding=2), nn.ReLU(),
        nn.Conv2d(channels, channels, 3, stride=1, padding=1), nn.ReLU(),
        nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(2 * channels, keypoints, 3, stride=1, padding=1))
    return encoder, SpatialSoftArgmax()


def make_model(chunk_length: int = CHUNK_LENGTH, joints: int = len(JOINT_NAMES),
               delta_scale: Optional[np.ndarray] = None, channels: int = 32,
               keypoints: int = 32, hidden: int = 256):
    """Return the policy network (torch.nn.Module): ``model(state, image) -> chunk``.

    ``state`` [B, joints] radians, ``image`` [B, 3, H, W] in [0, 1]; the output is
    [B, chunk_length, joints] radians: the state plus predicted offsets times
    ``delta_scale`` (the per-joint spread of the offsets in the data).
    """
    import torch
    from torch import nn

    class ChunkPolicy(nn.Module):
        """Conv encoder + spatial soft-argmax + state -> MLP -> chunk of joint targets."""

        def __init__(self):
            super().__init__()
            self.chunk_length = chunk_length
            self.joints = joints
            self.encoder, self.keypoints = make_keypoint_encoder(channels, keypoints)
            self.head = nn.Sequential(
                nn.Linear(2 * keypoints + joints, hidden), nn.ReLU(),
                nn.Linear(hidden, hidden), nn.ReLU(),
                nn.Linear(hidden, chunk_length * joints))
            scale = np.ones(joints) if delta_scale is None else np.asarray(delta_scale)
            self.register_buffer('delta_scale', torch.tensor(scale, dtype=torch.float32))

        def forward(self, state, image):
            points = self.keypoints(self.encoder(image))
            offsets = self.head(torch.cat([points, state], dim=1))
            offsets = offsets.reshape(-1, self.chunk_length, self.joints) * self.delta_scale
            return state[:, None, :] + offsets

    return ChunkPolicy()


# ---- training -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """Training hyper-parameters."""

    epochs: int = 30
    batch_size: int = 64
    learning_rate: float = 1e-3
    shift_px: int = 3
    seed: int = 0
    threads: int = 2


def load_dataset(dataset_path: pathlib.Path, max_samples: Optional[int] = None):
    """Return (frames, states, chunks, image size) of a recorded dataset (the first samples)."""
    data = np.load(dataset_path)
    frames, states, chunks = data['frames'], data['states'], data['chunks']
    if max_samples:
        frames, states, chunks = frames[:max_samples], states[:max_samples], chunks[:max_samples]
    return frames, states, chunks, tuple(int(v) for v in data['image_size'])


def start_training(settings: TrainSettings) -> None:
    """Seed torch and set its threads, before the model is made (its initial weights)."""
    import torch
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)


def fit(model, parameters, settings: TrainSettings, samples: int, batch_loss,
        progress=print):
    """
    Train ``model`` with Adam and a cosine schedule; return the mean loss of every epoch.

    Each epoch shuffles the ``samples`` indices and takes ``samples // batch_size`` batches
    (at least one); ``batch_loss(index, generator)`` returns the loss of the batch of those
    indices, drawing any randomness (image shifts, noise) from ``generator``, which is seeded
    with ``settings.seed``. Only ``parameters`` are optimized. The model is left in eval mode.
    """
    import torch
    optimizer = torch.optim.Adam(parameters, lr=settings.learning_rate)
    steps_per_epoch = max(1, samples // settings.batch_size)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=settings.epochs * steps_per_epoch)
    generator = torch.Generator().manual_seed(settings.seed)
    history = []
    began = time.perf_counter()
    for epoch in range(settings.epochs):
        order = torch.randperm(samples, generator=generator)
        total = 0.0
        model.train()
        for step in range(steps_per_epoch):
            index = order[step * settings.batch_size:(step + 1) * settings.batch_size]
            loss = batch_loss(index, generator)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item()
        history.append(total / steps_per_epoch)
        progress(f'epoch {epoch + 1}/{settings.epochs}: loss {history[-1]:.4f} '
                 f'({time.perf_counter() - began:.0f} s)')
    model.eval()
    return history


def frames_tensor(frames: np.ndarray):
    """Return recorded frames (N, H, W, 3) uint8 as a uint8 NCHW tensor."""
    import torch
    return torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()


def batch_images(frames_t, index, shift_px: int, generator):
    """Return the frames of ``index`` in [0, 1], shifted by up to ``shift_px`` pixels."""
    images = frames_t[index].float() / 255.0
    return random_shift(images, shift_px, generator) if shift_px else images


def train(dataset_path: pathlib.Path, settings: TrainSettings = TrainSettings(),
          max_samples: Optional[int] = None, progress=print):
    """Train the model on a recorded dataset; return (model, image_size, history)."""
    import torch
    start_training(settings)
    frames, states, chunks, image_size = load_dataset(dataset_path, max_samples)
    offsets = chunks - states[:, None, :]
    delta_scale = offsets.reshape(-1, offsets.shape[-1]).std(axis=0) + 1e-3
    model = make_model(chunks.shape[1], chunks.shape[2], delta_scale)
    frames_t = frames_tensor(frames)
    states_t = torch.from_numpy(states)
    targets_t = torch.from_numpy(chunks)
    scale_t = torch.tensor(delta_scale, dtype=torch.float32)

    def batch_loss(index, generator):
        images = batch_images(frames_t, index, settings.shift_px, generator)
        predicted = model(states_t[index], images)
        return ((predicted - targets_t[index]).abs() / scale_t).mean()

    history = fit(model, model.parameters(), settings, len(states), batch_loss, progress)
    return model, image_size, history


def write_training_record(out_dir: pathlib.Path, **record) -> None:
    """Write what a training run did (epochs, loss history, seconds, ...) to training.json."""
    (pathlib.Path(out_dir) / 'training.json').write_text(json.dumps(record, indent=1))


def random_shift(images, pad: int, generator):
    """Shift each image by up to ``pad`` pixels (replicated edges), as DrQ does."""
    import torch
    import torch.nn.functional as functional
    batch, _, height, width = images.shape
    padded = functional.pad(images, (pad, pad, pad, pad), mode='replicate')
    dx = torch.randint(0, 2 * pad + 1, (batch,), generator=generator)
    dy = torch.randint(0, 2 * pad + 1, (batch,), generator=generator)
    rows = (torch.arange(height)[None, :] + dy[:, None])[:, None, :, None]
    columns = (torch.arange(width)[None, :] + dx[:, None])[:, None, None, :]
    samples = torch.arange(batch)[:, None, None, None]
    channels = torch.arange(images.shape[1])[None, :, None, None]
    return padded[samples, channels, rows, columns]


def export(model, image_size: Sequence[int], out_dir: pathlib.Path) -> pathlib.Path:
    """Write ``model.pt2`` and its manifest ``model.json`` to ``out_dir``; return the path."""
    from remote_inference_py.policy_server.export import save_pt2
    from remote_inference_py.policy_server.manifest import spec_from_dict
    spec = spec_from_dict(learned_spec_dict(image_size, MODEL_IMAGE_SIZE, model.chunk_length),
                          'learned policy')
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return save_pt2(model, spec, out_dir / MODEL_FILE)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Record, train and export the learned policy (see the module docstring)."""
    parser = argparse.ArgumentParser(description='Record expert demonstrations, train a small '
                                     'action-chunking policy on CPU and export it.')
    parser.add_argument('step', nargs='?', default='all', choices=('all', 'record', 'train'))
    parser.add_argument('--out', default='runs/evaluation/learned')
    parser.add_argument('--episodes', type=int, default=120)
    parser.add_argument('--epochs', type=int, default=TrainSettings.epochs)
    parser.add_argument('--first-seed', type=int, default=1000)
    parser.add_argument('--noise', type=float, default=0.01,
                        help='command noise of the noisy half of the episodes [rad]')
    parser.add_argument('--threads', type=int, default=TrainSettings.threads,
                        help='torch threads for training (1 on a host busy with other work)')
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    dataset = out / DATASET_FILE
    if args.step in ('all', 'record'):
        began = time.perf_counter()
        counts = record_demonstrations(dataset, args.episodes, args.first_seed,
                                       noise_rad=args.noise)
        print(f'recorded {counts["frames"]} frames from {counts["kept"]}/{counts["episodes"]} '
              f'episodes in {time.perf_counter() - began:.0f} s: {dataset}', flush=True)
    if args.step in ('all', 'train'):
        began = time.perf_counter()
        model, image_size, history = train(
            dataset, TrainSettings(epochs=args.epochs, threads=args.threads))
        path = export(model, image_size, out)
        write_training_record(out, epochs=args.epochs, loss=history, threads=args.threads,
                              seconds=time.perf_counter() - began)
        print(f'trained in {time.perf_counter() - began:.0f} s; exported {path} and '
              f'{path.with_suffix(".json")}; evaluate it with: evaluate --policy {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
