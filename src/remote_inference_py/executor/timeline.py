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

"""The plan and the control timeline: which target each control tick moves toward.

It owns the timeline's anchor (`start`), the last control tick handled, the committed action
tick and its target (the segment being interpolated toward), the uncommitted plan, and
whether any target was dispatched yet. Control tick n is due at `start + n / (fps * m)`
(m = interpolation_multiplier), action tick j at `start + j / fps`; a late tick skips the ticks
it missed. Control ticks (j-1)*m+1 .. j*m move linearly from the previous command to action
j's target, at most `max_step_rad` per tick. A validated chunk joins the plan through
`merge.py` (placed from its capture, or at the first free tick while holding); a refill
request of the rtc merge carries the plan from its capture on (`committed_plan`).

It also knows whose targets it dispatches: `source` is the request whose chunk the committed
target came from. A merged chunk takes over at its `first_tick` (after the committed ticks,
after an rtc request's frozen steps, after the plan in append mode), and a later chunk that
takes over earlier cancels a takeover not reached yet, so a chunk dropped, or replaced before
it drove, never becomes the source.

What to do when no target is planned (hold, wait, fault) is the core's decision; this part
only records that the tick was held.
"""

import math

import numpy as np

from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.merge import (
    first_tick_after, merge_chunk, MergeResult, place_chunk, Plan)


class Timeline:
    """Control ticks on one clock, the committed target, and the plan after it."""

    def __init__(self, config: ExecutorConfig):
        """Create an empty timeline for `config` (anchored later by `start`)."""
        self.config = config
        self.start = 0.0
        self.last_tick = -1
        self.committed_tick = -1
        self.segment_tick = None
        self.segment_target = None
        self.plan = Plan.empty(len(config.joint_names))
        self.motion_started = False
        self.blend_mask = None
        self.source = 0          # the request whose chunk the committed target came from
        self._takeovers = []     # [(action tick, request)] merged, not committed yet
        self.configure(config)

    def configure(self, config: ExecutorConfig) -> None:
        """Use `config`'s tunables (merge blending) from now on."""
        self.config = config
        names = set(config.blend_components)
        self.blend_mask = (np.array([name in names for name in config.joint_names])
                           if names else None)

    @property
    def first_free_tick(self) -> int:
        """Return the first action tick a new chunk may still change."""
        return self.committed_tick + 1

    def advance(self, now: float):
        """Return (the control tick due at `now`, never one already handled; ticks skipped)."""
        rate = self.config.fps * self.config.interpolation_multiplier
        due = math.floor((now - self.start) * rate + 0.5)
        tick = max(due, self.last_tick + 1)
        skipped = tick - self.last_tick - 1
        self.last_tick = tick
        return tick, skipped

    def target(self, tick: int):
        """Return the target control tick `tick` moves toward, committing it; None if unplanned.

        The first control tick of an action tick commits that action tick's plan row.
        """
        action_tick = -(-tick // self.config.interpolation_multiplier)
        if action_tick != self.segment_tick:
            self.plan = self.plan.drop_before(action_tick)
            target = self.plan.row(action_tick)
            if target is None:
                return None
            self.segment_tick = action_tick
            self.segment_target = target
            self.committed_tick = action_tick
            while self._takeovers and self._takeovers[0][0] <= action_tick:
                self.source = self._takeovers.pop(0)[1]
            self.plan = self.plan.drop_before(action_tick + 1)
        return self.segment_target

    def step_toward(self, tick: int, previous: np.ndarray) -> np.ndarray:
        """Return the command for `tick` (after `target`): interpolated, speed-limited."""
        remaining = self.segment_tick * self.config.interpolation_multiplier - tick + 1
        wanted = previous + (self.segment_target - previous) / remaining
        limit = self.config.max_step_rad
        self.motion_started = True
        return previous + np.clip(wanted - previous, -limit, limit)

    def hold(self, tick: int) -> None:
        """Record that control tick `tick` had nothing planned: its action tick is spent."""
        self.segment_tick = None
        self.segment_target = None
        self.committed_tick = max(self.committed_tick,
                                  tick // self.config.interpolation_multiplier)

    def clear(self) -> None:
        """Drop the plan and the committed target (the executor stops moving along it)."""
        self.plan = Plan.empty(len(self.config.joint_names))
        self.segment_tick = None
        self.segment_target = None
        self._takeovers = []

    def buffered_playback(self) -> float:
        """Return the seconds of planned targets after the last handled control tick."""
        if len(self.plan):
            last_planned = self.plan.end_tick - 1
        elif self.segment_tick is not None:
            last_planned = self.segment_tick
        else:
            return 0.0
        remaining = last_planned * self.config.interpolation_multiplier - self.last_tick
        return max(0, remaining) * self.config.tick_period

    def merge(self, positions: np.ndarray, capture_time: float, holding: bool,
              previous: np.ndarray, frozen_until_tick: int | None = None,
              source: int = 0) -> MergeResult:
        """Place a validated chunk and merge it; the plan changes only if it is usable.

        `holding` places step 0 at the first free tick (the robot held still since the
        capture); `previous` is the command to blend from when nothing is committed; `source`
        is the request the chunk answers.
        """
        cfg = self.config
        start_tick = place_chunk(capture_time, self.start, cfg.fps, cfg.action_offset,
                                 self.first_free_tick, holding)
        if self.segment_target is not None:
            previous = self.segment_target
        result = merge_chunk(self.plan, positions, start_tick, self.first_free_tick, previous,
                             cfg.chunk_merge, ensemble_coeff=cfg.ensemble_coeff,
                             blend_steps=cfg.blend_steps, blend_weight=cfg.blend_weight,
                             blend_mask=self.blend_mask, frozen_until_tick=frozen_until_tick)
        if result.usable:
            self.plan = result.plan
            self._takeovers = [t for t in self._takeovers if t[0] < result.first_tick]
            self._takeovers.append((result.first_tick, source))
        return result

    def committed_plan(self, now: float, earliest: float, turnaround_s: float):
        """Return (the plan from a capture at `earliest` on, first tick after its frozen rows).

        Row 0 is the tick a chunk captured just after `earliest` starts at (or the committed
        tick, if later). The frozen rows reach the first tick after the moment a chunk sent
        now lands, if it takes `turnaround_s`. (None, None) without targets.
        """
        cfg = self.config
        first = max(first_tick_after(earliest, self.start, cfg.fps) + cfg.action_offset,
                    self.committed_tick)
        rows = []
        if first == self.committed_tick and self.segment_target is not None:
            rows.append(self.segment_target)
        tick = first + len(rows)
        while (row := self.plan.row(tick)) is not None:
            rows.append(row)
            tick += 1
        if not rows:
            return None, None
        landing = now + turnaround_s
        free_then = math.ceil((landing - self.start) * cfg.fps - 1e-9)
        frozen = min(len(rows), max(0, free_then - first))
        start = self.start + (first - cfg.action_offset) / cfg.fps
        return CommittedPlan(start, np.array(rows), frozen), first + frozen
