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
The built-in demo policy: plausible SO-101 motion that needs no files and no torch.

It behaves like a chunking policy in LeRobot's units: it takes ``observation.state`` in its
semantics (``so101-degrees-gripper-percent-v1`` by default; ``si-radians-v1`` works too) and
optionally camera images, and returns 50 steps at 30 Hz in the same semantics.

The motion is a closed loop through joint space, ``q(phi) = center + amplitude * sin(harmonic
* phi + phase)`` [rad], one lap every 8 s: the shoulder pans left and right while the arm
reaches down and out and back, the wrist follows and the gripper opens and closes twice per
lap. Each chunk starts from the observed pose: the server finds the loop phase ``phi*``
closest to the observed joint positions and plans ``q(phi* + omega t) + (s - q(phi*)) *
exp(-t / 0.5 s)``: the plan begins where the arm is, converges smoothly onto the loop and
continues it, so consecutive chunks describe one curve, a pushed arm is picked up where it
is, and the output is deterministic for a given observation. With cameras configured, the
loop's pan centre shifts toward the red-weighted centroid of each image (up to 0.3 rad): the
arm leans toward a red object it sees.
"""

import math
from typing import Dict, Sequence

import numpy as np

from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import PolicyRuntime, RuntimeOptions
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.robot.units import JointConverter

DEFAULT_SEMANTICS = 'so101-degrees-gripper-percent-v1'
FPS = 30.0
CHUNK_LENGTH = 50
PERIOD_S = 8.0
SETTLE_S = 0.5
MAX_PAN_SHIFT_RAD = 0.3
MODEL_IMAGE_SIZE = (48, 64)   # (height, width) the demo looks at
PHASE_GRID = 720
STATE_NAMES = tuple(f'{joint}.pos' for joint in SO101_JOINT_NAMES)

# Loop in SI radians, SO-101 joint order (within the SO-101 MJCF joint ranges).
CENTER = np.array([0.0, -0.35, 0.35, 0.55, 0.0, 0.6])
AMPLITUDE = np.array([0.6, 0.3, 0.3, 0.25, 0.5, 0.45])
PHASE = np.array([0.0, 0.5 * math.pi, 1.5 * math.pi, math.pi, 0.0, 0.0])
HARMONIC = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 2.0])


def loop_positions(phi: np.ndarray) -> np.ndarray:
    """Return loop positions [rad] for phases ``phi`` (any shape) -> ``(*phi.shape, 6)``."""
    phi = np.asarray(phi, dtype=np.float64)[..., None]
    return CENTER + AMPLITUDE * np.sin(HARMONIC * phi + PHASE)


def red_centroid_x(image: np.ndarray) -> float:
    """Return the red-weighted horizontal centroid of a ``[3, H, W]`` [0, 1] image in [-1, 1]."""
    red, green, blue = image[0], image[1], image[2]
    weight = np.maximum(red - 0.5 * (green + blue), 0.0)
    total = float(weight.sum())
    if total < 1e-4 * weight.size:   # no red to speak of
        return 0.0
    columns = np.linspace(-1.0, 1.0, image.shape[2])
    return float((weight.sum(axis=0) * columns).sum() / total)


def plan(state_si: np.ndarray, pan_shift: np.ndarray, steps: int = CHUNK_LENGTH,
         fps: float = FPS) -> np.ndarray:
    """Plan ``[batch, steps, 6]`` SI targets from ``[batch, 6]`` observed SI positions."""
    state_si = np.atleast_2d(state_si)
    shift = np.zeros_like(state_si)
    shift[:, 0] = pan_shift
    grid = np.linspace(0.0, 2.0 * math.pi, PHASE_GRID, endpoint=False)
    candidates = loop_positions(grid)                                 # [G, 6]
    distance = (((state_si - shift)[:, None, :] - candidates[None]) ** 2).sum(axis=2)
    phi = grid[np.argmin(distance, axis=1)]                           # [B]
    times = np.arange(1, steps + 1) / fps                             # [T]
    omega = 2.0 * math.pi / PERIOD_S
    ahead = loop_positions(phi[:, None] + omega * times[None, :]) + shift[:, None, :]
    offset = state_si - (loop_positions(phi) + shift)                 # [B, 6]
    decay = np.exp(-times / SETTLE_S)[None, :, None]
    return ahead + offset[:, None, :] * decay


class DemoRuntime(PolicyRuntime):
    """The built-in demo policy (see the module docstring)."""

    kind = 'demo'

    def __init__(self, semantics: str = DEFAULT_SEMANTICS, cameras: Sequence[str] = (),
                 image_size=(480, 640), calibration=None):
        """Declare the state and one rgb feature per camera; bind the unit conversion."""
        features = [{'name': 'observation.state', 'kind': 'state', 'shape': [6],
                     'dtype': 'float32', 'names': list(STATE_NAMES), 'semantics': semantics}]
        height, width = (int(v) for v in image_size)
        for camera in cameras:
            features.append({'name': f'observation.images.{camera}', 'kind': 'rgb',
                             'shape': [height, width, 3], 'dtype': 'uint8',
                             'model_shape': [3, *MODEL_IMAGE_SIZE]})
        spec = spec_from_dict({
            'policy': 'demo', 'semantics': semantics, 'fps': FPS,
            'chunk_length': CHUNK_LENGTH, 'max_batch_size': 16,
            'action': {'names': list(STATE_NAMES)}, 'features': features},
            'built-in demo policy')
        super().__init__(spec, 'cpu', 'built-in demo policy')
        self.converter = JointConverter(semantics, SO101_JOINT_NAMES, calibration)
        self.image_names = [f['name'] for f in features[1:]]

    @classmethod
    def from_options(cls, options: RuntimeOptions) -> 'DemoRuntime':
        """Build from the server's options (semantics, cameras, image size, calibration)."""
        return cls(options.semantics or DEFAULT_SEMANTICS, options.demo_cameras,
                   options.demo_image_size, options.calibration)

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Plan one chunk per batch row, in the policy's units."""
        state = np.asarray(inputs['observation.state'], dtype=np.float64)
        state_si = self.converter.to_si(state)
        pan_shift = np.zeros(state.shape[0])
        for name in self.image_names:
            pan_shift += np.array([red_centroid_x(image) for image in inputs[name]])
        if self.image_names:
            pan_shift *= MAX_PAN_SHIFT_RAD / len(self.image_names)
        targets = plan(state_si, pan_shift, self.spec.chunk_length, self.spec.fps)
        return self.converter.to_policy(targets).astype(np.float32)
