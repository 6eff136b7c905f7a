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
The committed plan a request carries in rtc mode (docs/design.md, section 11); pure, no ROS.

While a chunk is being computed the robot keeps executing its plan. In rtc mode the executor
sends that plan with the request, so a policy that supports it generates the new chunk as a
continuation of what the robot will do anyway (real-time chunking: the frozen rows are
inpainted, the rows after them softly guided).

The timing is anchored so that neither side needs the other's tick grid: plan row 0 is the
target a chunk would start with if its observation was captured in the step period before
``start`` (a chunk's row 0 targets the first action step after its capture). A chunk captured
``k`` step periods later starts at plan row ``k`` (:meth:`CommittedPlan.for_capture`). The
first ``frozen_steps`` rows will run whatever the chunk says: they cover the turnaround the
executor expects. Times are in whatever unit the caller uses (the executor seconds, the
server nanoseconds), the same for ``start``, the capture and the step period.
"""

import dataclasses
import math
from typing import Optional, Sequence, Tuple

import numpy as np

_GRID_EPSILON = 1e-6
"""Fraction of a step period tolerated when mapping a capture onto the plan's grid."""


@dataclasses.dataclass(frozen=True)
class CommittedPlan:
    """The executor's targets from a request's capture on: ``positions`` [steps, joints] SI."""

    start: float
    positions: np.ndarray
    frozen_steps: int

    @property
    def steps(self) -> int:
        """Return the number of rows."""
        return int(self.positions.shape[0])

    def for_capture(self, capture: float, step_period: float) -> Optional[
            Tuple[np.ndarray, int]]:
        """Return (rows from the chunk's row 0 on, frozen rows among them) for a capture.

        A capture before the plan's first step repeats row 0 for the steps the plan does not
        cover (they are already executed by the time the chunk lands). None when the capture is
        after the whole plan.
        """
        offset = math.floor((capture - self.start) / step_period + _GRID_EPSILON) + 1
        if offset >= self.steps:
            return None
        if offset >= 0:
            return self.positions[offset:], max(0, self.frozen_steps - offset)
        head = np.repeat(self.positions[:1], -offset, axis=0)
        return np.concatenate([head, self.positions]), self.frozen_steps - offset


def plan_from_fields(start: float, steps: int, frozen_steps: int, values: Sequence[float],
                     joints: Sequence[str]) -> Tuple[Optional[CommittedPlan], str]:
    """Check the plan fields of a request; return (plan or None when empty, '') or (None, why)."""
    count = len(joints)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if steps == 0:
        if values.size:
            return None, f'plan_positions has {values.size} values but plan_steps is 0'
        return None, ''
    if values.size != steps * count:
        return None, (f'plan_positions has {values.size} values, expected plan_steps {steps} x '
                      f'{count} joints = {steps * count}')
    if frozen_steps > steps:
        return None, f'frozen_steps {frozen_steps} is more than plan_steps {steps}'
    positions = values.reshape(steps, count)
    if not np.isfinite(positions).all():
        step, column = np.argwhere(~np.isfinite(positions))[0]
        return None, f"plan_positions: non-finite value at step {step} joint '{joints[column]}'"
    return CommittedPlan(start, positions, int(frozen_steps)), ''
