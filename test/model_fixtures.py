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
Small real torch policies with random weights, and the reference computation of a chunk.

Shared by the runtime tests and the node tests. :func:`expected_chunk` recomputes a chunk from
raw joint positions and an RGB frame with torch, Pillow and the semantics registry directly,
independently of the server's preprocessing code, so a node test can compare what the server
published.
"""

import json

import numpy as np
from PIL import Image
import torch

from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.robot.units import JointConverter

JOINTS = list(SO101_JOINT_NAMES)
SEMANTICS = 'so101-degrees-gripper-percent-v1'
CAMERA = (48, 64)        # published height, width
MODEL_IMAGE = (24, 32)   # what the model takes
STEPS = 20
STATE_MEAN = [5.0, -10.0, 20.0, 0.0, 3.0, 50.0]
STATE_STD = [30.0, 25.0, 40.0, 35.0, 60.0, 20.0]
IMAGE_MEAN = [[[0.45]], [[0.4]], [[0.35]]]
IMAGE_STD = [[[0.25]], [[0.2]], [[0.3]]]
ACTION_MEAN = [2.0, -5.0, 10.0, 1.0, 0.0, 45.0]
ACTION_STD = [10.0, 8.0, 12.0, 9.0, 20.0, 15.0]


class TinyPolicy(torch.nn.Module):
    """A small chunking policy: state [B, 6] and image [B, 3, 24, 32] -> [B, STEPS, actions]."""

    def __init__(self, steps: int = STEPS, actions: int = 6, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.steps = steps
        self.actions = actions
        self.state = torch.nn.Linear(6, 32)
        self.conv = torch.nn.Conv2d(3, 8, kernel_size=5, stride=4)
        self.head = torch.nn.Linear(40, steps * actions)

    def forward(self, state: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.conv(image)).mean(dim=(2, 3))
        hidden = torch.tanh(self.state(state))
        out = self.head(torch.cat([hidden, features], dim=1))
        return out.reshape(-1, self.steps, self.actions)


def manifest(steps: int = STEPS, max_batch_size: int = 1, model_image=MODEL_IMAGE):
    """Return the plain-data manifest describing TinyPolicy."""
    names = [f'{joint}.pos' for joint in JOINTS]
    return {
        'format_version': 1, 'policy': 'tiny', 'semantics': SEMANTICS, 'fps': 30.0,
        'chunk_length': steps, 'max_batch_size': max_batch_size,
        'action': {'names': names, 'normalization': {'mode': 'mean_std', 'mean': ACTION_MEAN,
                                                     'std': ACTION_STD}},
        'features': [
            {'name': 'observation.state', 'kind': 'state', 'shape': [6], 'dtype': 'float32',
             'names': names, 'normalization': {'mode': 'mean_std', 'mean': STATE_MEAN,
                                               'std': STATE_STD}},
            {'name': 'observation.images.front', 'kind': 'rgb', 'shape': [*CAMERA, 3],
             'dtype': 'uint8', 'model_shape': [3, *model_image],
             'normalization': {'mode': 'mean_std', 'mean': IMAGE_MEAN, 'std': IMAGE_STD}},
        ],
    }


def write_manifest(path, **kwargs):
    """Write TinyPolicy's manifest as JSON; return the path."""
    path.write_text(json.dumps(manifest(**kwargs), indent=2))
    return path


def save_torchscript(directory, model=None, **kwargs):
    """Save TinyPolicy (or ``model``) with plain torch.jit; return the .pt path."""
    model = (model or TinyPolicy()).eval()
    path = directory / 'tiny.pt'
    torch.jit.save(torch.jit.script(model), str(path))
    write_manifest(directory / 'tiny.json', **kwargs)
    return path


def save_exported(directory, model=None, batch=1, **kwargs):
    """Save TinyPolicy with plain torch.export (static batch); return the .pt2 path."""
    model = (model or TinyPolicy()).eval()
    example = (torch.zeros(batch, 6), torch.zeros(batch, 3, *MODEL_IMAGE))
    path = directory / 'tiny.pt2'
    torch.export.save(torch.export.export(model, example, strict=False), str(path))
    write_manifest(directory / 'tiny.json', **kwargs)
    return path


def test_pattern(seed: int = 1):
    """Return a deterministic RGB frame of the published size (uint8, H x W x 3)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (*CAMERA, 3), dtype=np.uint8)


test_pattern.__test__ = False   # a helper, not a test


def expected_chunk(model, radians, rgb, steps: int = STEPS) -> np.ndarray:
    """Compute the SI chunk [steps, 6] the server must publish, independently of it."""
    converter = JointConverter(SEMANTICS, JOINTS)
    state = (converter.to_policy(np.asarray(radians, dtype=np.float64)) - STATE_MEAN) / (
        np.asarray(STATE_STD) + 1e-8)
    resized = np.asarray(Image.fromarray(rgb).resize(MODEL_IMAGE[::-1], Image.BILINEAR))
    image = resized.transpose(2, 0, 1).astype(np.float64) / 255.0
    image = (image - np.asarray(IMAGE_MEAN)) / (np.asarray(IMAGE_STD) + 1e-8)
    with torch.no_grad():
        out = model(torch.tensor(state[None], dtype=torch.float32),
                    torch.tensor(image[None], dtype=torch.float32))[0].numpy()
    policy = out[:steps].astype(np.float64) * (np.asarray(ACTION_STD) + 1e-8) + ACTION_MEAN
    return converter.to_si(policy)
