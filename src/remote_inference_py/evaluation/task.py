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
The pick-the-cube task on the simulated SO-101: episodes, success and completion time.

The scene is the hardware interface's MuJoCo SO-101 (:mod:`remote_inference_py.hardware.sim`):
a 4 cm cube on a table, the arm at :data:`INITIAL_POSITIONS`. An episode is one cube position,
drawn from a seed; it starts when the executor starts (time 0) and lasts at most
``time_limit_s``.

- **Cube positions.** ``episode_seeds(base_seed, n)`` returns the first ``n`` seeds at or after
  ``base_seed`` whose cube (:func:`~remote_inference_py.hardware.sim_scene.cube_position`, the seed
  the hardware interface's ``sim_cube_seed`` takes) lies in ``cube_region``. The default region
  is the part of the sim's sampling box that the ``front`` camera sees whole (x <= 0.32 m; the
  camera does not see cubes beyond x = 0.35 m), so a camera policy can solve every episode.
- **Success** is computed from the simulated cube pose only: the cube's centre is at least
  ``lift_height_m`` above where it rested at the start, continuously for ``hold_s`` (nothing
  but the gripper can hold it up there). **Completion time** is the time, from the start,
  at which that final lift crossed the height. :class:`LiftMonitor` evaluates both from a
  stream of (time, cube z) samples, so the simulated-time runner (every physics read) and the
  real-node runner (``sim/cube_pose`` at 10 Hz) apply the same predicate.
- **Jaw pads.** Grasps need the fingertip pads to collide; the simulation switches them on
  itself (:func:`remote_inference_py.hardware.sim_scene.enable_jaw_pads`).
"""

import dataclasses
import math
from typing import List, Optional, Sequence, Tuple

from remote_inference_py.hardware.sim_scene import (
    CUBE_HALF_SIZE_M, cube_position, CUBE_SAMPLING_BOUNDS)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINT_NAMES = tuple(SO101_JOINT_NAMES)
INITIAL_POSITIONS = (0.0, -1.0, 1.0, 0.9, 0.0, 0.3)
"""Start pose [rad]: gripper raised above the table's near edge, jaws half open."""
VISIBLE_REGION = ((0.2, -0.1), (0.32, 0.1))
"""Cube (x, y) box [m] the ``front`` camera sees whole: the sim's box with x <= 0.32 m."""
MAX_SEED_SCAN = 10_000
MIN_REGION_FRACTION = 0.01


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """The pick-the-cube task; invalid values raise ValueError naming the field."""

    # Cube centre above its resting height that counts as lifted [m].
    lift_height_m: float = 0.05
    # How long the cube must stay lifted [s].
    hold_s: float = 1.0
    # Episode length from the executor's start [s]; no success within it is a failure.
    time_limit_s: float = 15.0
    # Cube positions: ((x_min, y_min), (x_max, y_max)) [m] within the sim's sampling box.
    cube_region: Tuple[Tuple[float, float], Tuple[float, float]] = VISIBLE_REGION
    # Pose the arm starts from [rad], in JOINT_NAMES order.
    initial_positions: Tuple[float, ...] = INITIAL_POSITIONS

    def __post_init__(self):
        """Validate every field."""
        for name in ('lift_height_m', 'hold_s', 'time_limit_s'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be a number > 0, got {value!r}')
        (x0, y0), (x1, y1) = self.cube_region
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f'cube_region {self.cube_region!r} is not a box (min < max)')
        object.__setattr__(self, 'initial_positions',
                           tuple(float(v) for v in self.initial_positions))
        if len(self.initial_positions) != len(JOINT_NAMES):
            raise ValueError(f'initial_positions has {len(self.initial_positions)} values for '
                             f'{len(JOINT_NAMES)} joints')


def in_region(xy: Sequence[float], region) -> bool:
    """Return True when the point (x, y) lies in the box ``region``."""
    (x0, y0), (x1, y1) = region
    return x0 <= xy[0] <= x1 and y0 <= xy[1] <= y1


def episode_seeds(base_seed: int, count: int,
                  region=VISIBLE_REGION) -> List[int]:
    """Return the first ``count`` sim cube seeds >= ``base_seed`` whose cube is in ``region``."""
    if isinstance(base_seed, bool) or not isinstance(base_seed, int) or base_seed < 0:
        raise ValueError(f'seed must be an integer >= 0, got {base_seed!r}')
    (x0, y0), (x1, y1) = region
    (bx0, by0), (bx1, by1) = CUBE_SAMPLING_BOUNDS
    overlap = max(0.0, min(x1, bx1) - max(x0, bx0)) * max(0.0, min(y1, by1) - max(y0, by0))
    if overlap < MIN_REGION_FRACTION * (bx1 - bx0) * (by1 - by0):
        raise ValueError(f'cube_region {region!r} holds almost no cube position of the sim '
                         f'(it samples the box {CUBE_SAMPLING_BOUNDS!r})')
    seeds = []
    seed = base_seed
    while len(seeds) < count:
        if seed - base_seed > MAX_SEED_SCAN:
            raise ValueError(f'cube_region {region!r} holds almost no cube position of the '
                             f'sim; found {len(seeds)} in {MAX_SEED_SCAN} seeds')
        if in_region(cube_position(seed), region):
            seeds.append(seed)
        seed += 1
    return seeds


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How an episode ended, from the task's point of view."""

    success: bool
    completion_time_s: Optional[float]
    max_lift_m: float


class LiftMonitor:
    """Success predicate and completion time from (time [s], cube centre z [m]) samples.

    Times are seconds since the episode started. The cube's resting height is the first
    sample's z unless given.
    """

    def __init__(self, task: TaskConfig, rest_z: Optional[float] = None):
        """Watch for a lift of ``task.lift_height_m`` held ``task.hold_s``."""
        self.task = task
        self.rest_z = rest_z
        self._lift_began: Optional[float] = None
        self._confirmed: Optional[float] = None
        self.max_lift_m = 0.0
        self.samples = 0

    @property
    def success(self) -> bool:
        """Return True once a lift has been held long enough."""
        return self._confirmed is not None

    @property
    def completion_time_s(self) -> Optional[float]:
        """Return when the successful lift crossed the height, or None."""
        return self._confirmed

    def update(self, time_s: float, cube_z: float) -> bool:
        """Add a sample; return True when the task is done (success confirmed)."""
        if self._confirmed is not None:
            return True
        if self.rest_z is None:
            self.rest_z = float(cube_z)
        self.samples += 1
        lift = float(cube_z) - self.rest_z
        if not math.isfinite(lift):
            self._lift_began = None
            return False
        self.max_lift_m = max(self.max_lift_m, lift)
        if lift >= self.task.lift_height_m:
            if self._lift_began is None:
                self._lift_began = float(time_s)
            if time_s - self._lift_began >= self.task.hold_s - 1e-9:
                self._confirmed = self._lift_began
                return True
        else:
            self._lift_began = None
        return False

    def outcome(self) -> Outcome:
        """Return the result so far."""
        return Outcome(self.success, self._confirmed, self.max_lift_m)


def cube_rest_z() -> float:
    """Return the height of a cube's centre resting on the table [m]."""
    return CUBE_HALF_SIZE_M
