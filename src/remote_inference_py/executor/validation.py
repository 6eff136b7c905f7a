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

"""Chunk validation: whether a chunk's content can be played, and if not, why.

It owns the checks of one chunk against the settings, in this order: joint names (none
missing, unknown or repeated; columns reordered into the configured joint order), shape and
step count, step period (1 / fps within `step_period_tolerance`, relative), finite values,
joint limits, and the capture time (finite, not after arrival beyond `capture_tolerance_s`,
not before the request's earliest capture). The first problem found is the reason the whole
chunk is dropped; a chunk is never used in part. Whether the chunk answers a request in
flight is the request table's question (`requests.py`), where it lands the plan's (`merge.py`).
"""

from dataclasses import dataclass
import math

import numpy as np

from remote_inference_py.executor.config import ExecutorConfig

COLUMN_ORDERS_KEPT = 16
"""How many distinct joint orders the validator remembers the column order of."""


@dataclass(frozen=True)
class Chunk:
    """A chunk of future joint position targets [rad] computed from one observation.

    `positions` is (steps, joints) with columns in `joint_names` order, or flat row-major
    when `step_count` is given (as carried by ActionChunk.msg). `capture_time` is the capture
    stamp of the observation, on the core's clock.
    """

    session_id: str
    request_id: int
    capture_time: float
    joint_names: tuple
    step_period: float
    positions: np.ndarray
    step_count: int | None = None


class ChunkValidator:
    """Check chunks against the joints, rate, limits and tolerances of a configuration."""

    def __init__(self, config: ExecutorConfig):
        """Validate against `config` (its joints and limits are fixed for the core's life)."""
        self.config = config
        self._joint_index = {name: i for i, name in enumerate(config.joint_names)}
        self._lower = np.array(config.lower_limits(), dtype=np.float64)
        self._upper = np.array(config.upper_limits(), dtype=np.float64)
        self._column_orders = {}

    def positions(self, chunk: Chunk, now: float, earliest_capture_time: float,
                  waited: bool):
        """Return (positions in config joint order, '') or (None, the reason to drop it).

        `now` is the arrival time, `earliest_capture_time` the request's; `waited` says the
        request was sent while holding (the reason for a stale capture names the wait).
        """
        names = tuple(chunk.joint_names)
        order = self._column_order(names)
        if isinstance(order, str):
            return None, order
        positions, problem = self._shaped(chunk, len(names))
        if problem:
            return None, problem
        cfg = self.config
        period = float(chunk.step_period)
        if not abs(period * cfg.fps - 1.0) <= cfg.step_period_tolerance:
            return None, (f'step period {period:.6g} s does not match 1/fps = '
                          f'{cfg.action_period:.6g} s')
        if not np.isfinite(positions).all():
            step, column = np.argwhere(~np.isfinite(positions))[0]
            return None, f"non-finite value at step {step} joint '{names[column]}'"
        positions = positions[:, order]
        outside = (positions < self._lower) | (positions > self._upper)
        if outside.any():
            step, joint = np.argwhere(outside)[0]
            return None, (f"joint '{cfg.joint_names[joint]}' value "
                          f'{positions[step, joint]:.4g} at step {step} outside limits '
                          f'[{self._lower[joint]:.4g}, {self._upper[joint]:.4g}]')
        problem = self._capture_problem(float(chunk.capture_time), now, earliest_capture_time,
                                        waited)
        return (None, problem) if problem else (positions, '')

    @staticmethod
    def _shaped(chunk: Chunk, joints: int):
        """Return (positions as (steps, joints), '') or (None, why the shape is wrong)."""
        try:
            positions = np.asarray(chunk.positions, dtype=np.float64)
        except (TypeError, ValueError):
            return None, 'positions are not numbers'
        if chunk.step_count is not None and positions.ndim == 1:
            expected = chunk.step_count * joints
            if positions.size != expected:
                return None, (f'positions has {positions.size} values, expected step_count '
                              f'{chunk.step_count} x {joints} joints = {expected}')
            positions = positions.reshape(chunk.step_count, joints)
        if positions.ndim != 2:
            return None, f'positions must be (steps, joints), got shape {positions.shape}'
        if chunk.step_count is not None and positions.shape[0] != chunk.step_count:
            return None, (f'chunk has {positions.shape[0]} steps but step_count says '
                          f'{chunk.step_count}')
        if positions.shape[0] < 1:
            return None, 'chunk has no steps'
        if positions.shape[1] != joints:
            return None, f'chunk has {positions.shape[1]} columns but names {joints} joints'
        return positions, ''

    def _capture_problem(self, capture: float, now: float, earliest: float,
                         waited: bool) -> str:
        if not math.isfinite(capture):
            return 'capture time is not finite'
        if capture > now + self.config.capture_tolerance_s:
            return f'capture time is in the future ({capture - now:.3f} s after arrival)'
        if capture < earliest:
            if waited:
                return (f'stale: captured at t={capture:.3f}, before the wait began '
                        f'at t={earliest:.3f}')
            return (f'stale: captured at t={capture:.3f}, before the requested '
                    f'earliest capture t={earliest:.3f}')
        return ''

    def _column_order(self, names: tuple):
        """Return the column index of each config joint in `names`, or an error string."""
        order = self._column_orders.get(names)
        if order is not None:
            return order
        seen = set()
        for name in names:
            if name in seen:
                return f"joint '{name}' appears twice in chunk"
            seen.add(name)
            if name not in self._joint_index:
                return f"unexpected joint '{name}' in chunk"
        for name in self.config.joint_names:
            if name not in seen:
                return f"joint '{name}' missing from chunk"
        order = np.array([names.index(name) for name in self.config.joint_names])
        if len(self._column_orders) < COLUMN_ORDERS_KEPT:
            self._column_orders[names] = order
        return order
