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

"""The simulated backend: the MuJoCo SO-101 arm, its cameras and the cube (no ROS).

See :mod:`remote_inference_py.hardware.backend` for what a backend promises.
"""

from typing import Callable, Dict, Optional

import numpy as np

from remote_inference_py.hardware.backend import (
    Backend, BackendFault, BackendOpenError, Measurement)
from remote_inference_py.hardware.sim import FrameCallback, SimConfig, So101Sim
from remote_inference_py.hardware.sim_scene import SimError


CubePoseCallback = Callable[[np.ndarray, np.ndarray, float], None]
"""``on_cube_pose(position [m], quaternion wxyz, stamp)``."""


class SimBackend(Backend):
    """The MuJoCo SO-101 arm; its cameras and cube pose go to the given callbacks."""

    name = 'sim'

    def __init__(self, config: SimConfig, on_frame: Optional[FrameCallback] = None,
                 on_cube_pose: Optional[CubePoseCallback] = None,
                 cube_pose_rate_hz: float = 10.0):
        """Keep the sim settings; open() builds the model."""
        super().__init__(config.joint_names)
        self.config = config
        self.sim = None
        self._on_frame = on_frame
        self._on_cube_pose = on_cube_pose
        self._cube_period = 1.0 / cube_pose_rate_hz
        self._next_cube = 0.0
        self._stamp = 0.0

    def open(self) -> None:
        """Build the scene, start real-time stepping and the cameras."""
        try:
            sim = So101Sim(self.config, on_frame=self._on_frame)
            sim.start()
        except SimError as error:
            raise BackendOpenError(str(error)) from None
        self.lower, self.upper = sim.lower.copy(), sim.upper.copy()
        self.sim = sim
        self.notes.append(
            f'SO-101 simulation ready: cube at ({sim.cube_xy[0]:.3f}, {sim.cube_xy[1]:.3f}) m, '
            f'cameras {list(self.config.cameras) if self.config.render else "off"}')

    def _require_sim(self):
        if self.sim is None:
            raise BackendFault('the simulation is not running')
        return self.sim

    def read(self, now: float) -> Measurement:
        """Step the physics up to ``now`` and return the joint positions."""
        sim = self._require_sim()
        self._stamp = sim.advance(now)
        return Measurement(sim.positions(), self._stamp)

    def write(self, target: np.ndarray) -> np.ndarray:
        """Set the position actuators' targets; return them as applied."""
        return self._require_sim().set_targets(target)

    def set_torque(self, enabled: bool) -> None:
        """Power the actuators (holding the present pose) or switch them off."""
        self._require_sim().set_torque(enabled)

    @property
    def torque_enabled(self) -> Optional[bool]:
        """True while the simulated actuators are powered."""
        return self.sim is not None and self.sim.torque_enabled

    def poll(self, now: float) -> None:
        """Report the cube pose at its rate."""
        if self.sim is None or self._on_cube_pose is None or now < self._next_cube:
            return
        self._next_cube = max(self._next_cube + self._cube_period, now - self._cube_period)
        position, orientation = self.sim.cube_pose()
        self._on_cube_pose(position, orientation, self._stamp)

    def close(self, disable_torque: bool) -> str:
        """Stop the cameras and drop the simulation."""
        sim, self.sim = self.sim, None
        if sim is not None:
            sim.close()
        return ''

    def counters(self) -> Dict[str, int]:
        """Return frame and timing counters of the simulation."""
        sim = self.sim
        if sim is None:
            return {}
        counters = {'frames': sim.frames, 'late_frames': sim.late_frames,
                    'skipped_ms': int(sim.skipped_s * 1000)}
        return {key: value for key, value in counters.items() if value}
