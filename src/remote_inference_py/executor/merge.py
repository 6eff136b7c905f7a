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

"""All of the executor's merge logic: how a new chunk joins the plan (docs/design.md, s. 5-6).

Vocabulary, on the executor's own timeline (anchored when motion starts):

- An *action tick* j happens at `timeline_start + j / fps`.
- A chunk computed from an observation captured at `capture_time` has its step i at action
  tick `first_tick_after(capture_time) + action_offset + i` (`chunk_start_tick`). While the
  robot holds, the hold pauses the timeline and step 0 goes to the first free tick instead
  (`place_chunk`).
- The *plan* holds one target per action tick that has not been committed yet. A target is
  *committed* once it is being dispatched or interpolated toward; committed targets are never
  replaced. `first_free_tick` is the first action tick that may still change.

The four merge modes, each a pure function from (plan, chunk) to a new plan:

- `append_chunk`: play the whole chunk after the buffered steps (its capture time is ignored).
- `align_chunk` (default): drop the incoming steps whose tick is committed (*trimmed*), keep the
  buffered steps before the chunk's first kept tick, replace everything from there on with the
  chunk, then optionally blend the first overlapping steps (`blend_weights`, `blend`).
- `ensemble_chunk`: ACT temporal ensembling. Every tick's target is the weighted average of all
  predictions covering it, weight `exp(-coeff * i)` with i = 0 for the oldest prediction, so a
  positive coeff prefers older predictions and a negative one newer predictions.
- `rtc_chunk`: real-time chunking (docs/design.md, section 11). The request carried the plan
  and how many of its steps are frozen; the policy generated the chunk as their continuation.
  The old plan runs through the frozen steps (`frozen_until_tick`) even when the chunk lands
  early, and the chunk takes over from there exactly as `align_chunk` would.

A chunk whose every step targets a committed tick is unusable: the result then carries a reason
and the old plan unchanged. If a chunk starts after the end of the plan (e.g. with an
`action_offset`), the ticks in between repeat the last target (`gap_steps`).
"""

import dataclasses
from dataclasses import dataclass
import math

import numpy as np

# Tolerance when mapping a time onto the tick grid, so that float rounding never moves a time
# that lies exactly on a tick to the tick before it.
_TICK_EPSILON = 1e-9


@dataclass(frozen=True)
class Plan:
    """Targets for consecutive action ticks that have not been committed yet.

    Row r targets action tick `start_tick + r`. `counts[r]` is the number of predictions
    averaged into row r (ensemble mode); rows that only repeat a previous target (gap fill)
    have count 0.
    """

    start_tick: int
    positions: np.ndarray
    counts: np.ndarray

    @classmethod
    def empty(cls, joint_count: int, start_tick: int = 0) -> 'Plan':
        """Return a plan with no rows."""
        return cls(start_tick, np.zeros((0, joint_count)), np.zeros(0, dtype=np.int64))

    @classmethod
    def from_positions(cls, start_tick: int, positions) -> 'Plan':
        """Return a plan of single predictions (count 1 per row)."""
        positions = np.array(positions, dtype=np.float64, ndmin=2)
        return cls(start_tick, positions, np.ones(len(positions), dtype=np.int64))

    def __len__(self) -> int:
        """Return the number of rows."""
        return len(self.positions)

    @property
    def end_tick(self) -> int:
        """Return the first action tick after the plan (exclusive end)."""
        return self.start_tick + len(self.positions)

    def row(self, tick: int):
        """Return the target for an action tick, or None when the plan does not cover it."""
        index = tick - self.start_tick
        if 0 <= index < len(self.positions):
            return self.positions[index]
        return None

    def drop_before(self, tick: int) -> 'Plan':
        """Return the plan without the rows for ticks before `tick` (cheap views)."""
        if tick <= self.start_tick:
            return self
        cut = min(tick - self.start_tick, len(self.positions))
        return Plan(tick, self.positions[cut:], self.counts[cut:])


@dataclass(frozen=True)
class MergeResult:
    """The plan after a merge and what the merge did to the incoming chunk.

    `first_tick` is the action tick of the chunk's first step in the plan: from there on the
    plan's targets are the chunk's (blended or averaged in, where the mode does).
    """

    plan: Plan
    usable_steps: int
    first_tick: int = 0
    trimmed_steps: int = 0
    overlap_steps: int = 0
    gap_steps: int = 0
    seam: float = 0.0
    reason: str = ''

    @property
    def usable(self) -> bool:
        """Return True when at least one incoming step made it into the plan."""
        return self.usable_steps > 0


def first_tick_after(capture_time: float, timeline_start: float, fps: float) -> int:
    """Return the first action tick strictly after `capture_time`."""
    return math.floor((capture_time - timeline_start) * fps + _TICK_EPSILON) + 1


def chunk_start_tick(capture_time: float, timeline_start: float, fps: float,
                     action_offset: int = 0) -> int:
    """Return the action tick that step 0 of a chunk captured at `capture_time` targets."""
    return first_tick_after(capture_time, timeline_start, fps) + action_offset


def place_chunk(capture_time: float, timeline_start: float, fps: float, action_offset: int,
                first_free_tick: int, holding: bool) -> int:
    """Return the action tick for step 0 of an incoming chunk.

    While the robot is moving, step 0 belongs to the first action tick after the capture (plus
    `action_offset`), so the steps the robot has already passed get trimmed. While it holds
    (a wait, or synchronous mode), the robot has not moved since the capture: the hold pauses
    the timeline and step 0 plays at the first free tick (plus `action_offset`), exactly as in
    the classic observe-infer-act loop.
    """
    if holding:
        return first_free_tick + action_offset
    return chunk_start_tick(capture_time, timeline_start, fps, action_offset)


def merge_chunk(plan: Plan, positions: np.ndarray, start_tick: int, first_free_tick: int,
                previous_target: np.ndarray, mode: str, *, ensemble_coeff: float = 0.01,
                blend_steps: int = 0, blend_weight: float = 0.5,
                blend_mask=None, frozen_until_tick: int | None = None) -> MergeResult:
    """Merge a validated chunk into the plan with the named mode.

    `positions` is (steps, joints) in the plan's joint order; `start_tick` is the tick of step
    0; `previous_target` is the last target before `first_free_tick` (the committed one), used
    to fill gaps and to measure the seam when the plan is empty. `frozen_until_tick` is the
    first tick after the frozen steps of an rtc request (None: nothing frozen).
    """
    if mode == 'append':
        return append_chunk(plan, positions, first_free_tick, previous_target)
    if mode == 'aligned':
        return align_chunk(plan, positions, start_tick, first_free_tick, previous_target,
                           blend_steps=blend_steps, blend_weight=blend_weight,
                           blend_mask=blend_mask)
    if mode == 'ensemble':
        return ensemble_chunk(plan, positions, start_tick, first_free_tick, previous_target,
                              coeff=ensemble_coeff)
    if mode == 'rtc':
        return rtc_chunk(plan, positions, start_tick, first_free_tick, previous_target,
                         frozen_until_tick, blend_steps=blend_steps, blend_weight=blend_weight,
                         blend_mask=blend_mask)
    raise ValueError(f'unknown chunk_merge mode {mode!r}')


def append_chunk(plan: Plan, positions: np.ndarray, first_free_tick: int,
                 previous_target: np.ndarray) -> MergeResult:
    """Play the whole chunk after the buffered steps; nothing is trimmed or overlapped."""
    old = _future(plan, first_free_tick)
    reference = old.positions[-1] if len(old) else previous_target
    merged = Plan(old.start_tick,
                  np.concatenate([old.positions, positions]),
                  np.concatenate([old.counts, np.ones(len(positions), dtype=np.int64)]))
    return MergeResult(merged, usable_steps=len(positions), first_tick=old.end_tick,
                       seam=_max_abs(positions[0] - reference))


def align_chunk(plan: Plan, positions: np.ndarray, start_tick: int, first_free_tick: int,
                previous_target: np.ndarray, *, blend_steps: int = 0,
                blend_weight: float = 0.5, blend_mask=None) -> MergeResult:
    """Drop committed incoming steps, keep the plan before the chunk, replace the rest.

    The first `min(blend_steps, overlap)` overlapping steps are then blended with the old plan
    on the joints selected by `blend_mask` (all joints when None).
    """
    kept, kept_start, trimmed = trim_committed(positions, start_tick, first_free_tick)
    if not len(kept):
        return _unusable(plan, positions, start_tick, first_free_tick)
    old = _future(plan, first_free_tick)
    overlap = max(0, min(old.end_tick, kept_start + len(kept)) - kept_start)
    old, gap = _fill_gap(old, kept_start, previous_target)

    new = kept.copy()
    if overlap and blend_steps:
        first = kept_start - old.start_tick
        count = min(blend_steps, overlap)
        weights = blend_weights(blend_steps, blend_weight, overlap)
        new[:count] = blend(old.positions[first:first + count], new[:count], weights,
                            blend_mask)

    prefix = kept_start - old.start_tick
    reference = _reference(old, kept_start, previous_target)
    merged = Plan(old.start_tick,
                  np.concatenate([old.positions[:prefix], new]),
                  np.concatenate([old.counts[:prefix], np.ones(len(new), dtype=np.int64)]))
    return MergeResult(merged, usable_steps=len(kept), first_tick=kept_start,
                       trimmed_steps=trimmed, overlap_steps=overlap, gap_steps=gap,
                       seam=_max_abs(new[0] - reference))


def rtc_chunk(plan: Plan, positions: np.ndarray, start_tick: int, first_free_tick: int,
              previous_target: np.ndarray, frozen_until_tick: int | None, *,
              blend_steps: int = 0, blend_weight: float = 0.5, blend_mask=None) -> MergeResult:
    """Keep the old plan through the frozen steps, then align the chunk from there.

    The switch happens at `frozen_until_tick`, or earlier where the old plan ends (nothing to
    keep), or later when those ticks are already committed (the chunk landed late). Incoming
    steps before the switch count as trimmed.
    """
    old = _future(plan, first_free_tick)
    switch = first_free_tick
    if frozen_until_tick is not None:
        switch = max(first_free_tick, min(frozen_until_tick, old.end_tick))
    if switch == first_free_tick:
        return align_chunk(plan, positions, start_tick, first_free_tick, previous_target,
                           blend_steps=blend_steps, blend_weight=blend_weight,
                           blend_mask=blend_mask)
    frozen = old.positions[:switch - old.start_tick]
    result = align_chunk(old, positions, start_tick, switch, frozen[-1],
                         blend_steps=blend_steps, blend_weight=blend_weight,
                         blend_mask=blend_mask)
    if not result.usable:
        return dataclasses.replace(result, plan=plan)
    rest = result.plan
    merged = Plan(old.start_tick, np.concatenate([frozen, rest.positions]),
                  np.concatenate([old.counts[:len(frozen)], rest.counts]))
    return dataclasses.replace(result, plan=merged)


def ensemble_chunk(plan: Plan, positions: np.ndarray, start_tick: int, first_free_tick: int,
                   previous_target: np.ndarray, *, coeff: float = 0.01) -> MergeResult:
    """Average the chunk into the plan with ACT temporal-ensembling weights.

    A tick already averaged from c predictions moves toward the new prediction x by the gain
    `w_c / (w_0 + ... + w_c)` with `w_i = exp(-coeff * i)`, which is the running form of the
    weighted average over all predictions. Ticks the plan does not cover take x as is.
    """
    kept, kept_start, trimmed = trim_committed(positions, start_tick, first_free_tick)
    if not len(kept):
        return _unusable(plan, positions, start_tick, first_free_tick)
    old = _future(plan, first_free_tick)
    old, gap = _fill_gap(old, kept_start, previous_target)
    reference = _reference(old, kept_start, previous_target)

    first = kept_start - old.start_tick
    covered = min(len(old) - first, len(kept))
    merged_positions = np.concatenate([old.positions, kept[covered:]])
    merged_counts = np.concatenate([old.counts, np.zeros(len(kept) - covered, dtype=np.int64)])
    rows = slice(first, first + len(kept))
    counts = merged_counts[rows].copy()
    gains = ensemble_gains(coeff, counts)
    merged_positions[rows] += gains[:, None] * (kept - merged_positions[rows])
    merged_counts[rows] = counts + 1
    merged = Plan(old.start_tick, merged_positions, merged_counts)
    return MergeResult(merged, usable_steps=len(kept), first_tick=kept_start,
                       trimmed_steps=trimmed, overlap_steps=int(np.count_nonzero(counts)),
                       gap_steps=gap,
                       seam=_max_abs(merged_positions[first] - reference))


def ensemble_gains(coeff: float, counts: np.ndarray) -> np.ndarray:
    """Return, per tick, the share a new prediction takes when `counts` came before it.

    With weights `w_i = exp(-coeff * i)` (i = 0 oldest) the share of prediction number c is
    `w_c / sum(w_0..w_c) = 1 / (1 + sum_{d=1..c} exp(coeff * d))`, which cannot overflow into
    a NaN: a huge sum gives a share of 0, a tiny one a share of 1.
    """
    counts = np.asarray(counts, dtype=np.int64)
    largest = int(counts.max(initial=0))
    with np.errstate(over='ignore'):
        ratio = np.concatenate([[0.0], np.cumsum(np.exp(coeff * np.arange(1, largest + 1)))])
    return 1.0 / (1.0 + ratio[counts])


def blend_weights(blend_steps: int, blend_weight: float, overlap_steps: int) -> np.ndarray:
    """Return the old plan's weight for each blended step.

    `w_k = blend_weight * (1 - k / n)` for k = 0..n-1 with `n = min(blend_steps, overlap)`: the
    first overlapping step takes `blend_weight` of the old plan and the weight reaches zero at
    step n, the first step played purely from the new chunk. When the overlap is shorter than
    `blend_steps` the ramp is compressed into the overlap, so the end of the overlap never
    leaves a jump.
    """
    count = min(blend_steps, overlap_steps)
    if count <= 0:
        return np.zeros(0)
    return blend_weight * (1.0 - np.arange(count) / count)


def blend(old: np.ndarray, new: np.ndarray, weights: np.ndarray, mask=None) -> np.ndarray:
    """Return `w_k * old_k + (1 - w_k) * new_k` on the masked joints, `new` elsewhere."""
    out = np.array(new, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)[:, None]
    mixed = w * old + (1.0 - w) * out
    if mask is None:
        return mixed
    out[:, mask] = mixed[:, mask]
    return out


def trim_committed(positions: np.ndarray, start_tick: int, first_free_tick: int):
    """Return (kept steps, tick of the first kept step, number of trimmed steps)."""
    trimmed = min(max(first_free_tick - start_tick, 0), len(positions))
    return positions[trimmed:], start_tick + trimmed, trimmed


def _future(plan: Plan, first_free_tick: int) -> Plan:
    """Return the uncommitted part of the plan; an empty plan starts at first_free_tick."""
    old = plan.drop_before(first_free_tick)
    if not len(old):
        return Plan.empty(plan.positions.shape[1], first_free_tick)
    if old.start_tick > first_free_tick:
        raise ValueError(f'plan starts at tick {old.start_tick}, after the first free tick '
                         f'{first_free_tick}; a plan must be contiguous from the first free tick')
    return old


def _fill_gap(old: Plan, until_tick: int, previous_target: np.ndarray):
    """Extend the plan to `until_tick` by repeating its last target; return (plan, rows)."""
    gap = until_tick - old.end_tick
    if gap <= 0:
        return old, 0
    last = old.positions[-1] if len(old) else previous_target
    return Plan(old.start_tick,
                np.concatenate([old.positions, np.tile(last, (gap, 1))]),
                np.concatenate([old.counts, np.zeros(gap, dtype=np.int64)])), gap


def _reference(old: Plan, tick: int, previous_target: np.ndarray) -> np.ndarray:
    """Return what would have been dispatched at `tick` before the merge."""
    covered = old.row(tick)
    if covered is not None:
        return covered
    before = old.row(tick - 1)
    return before if before is not None else previous_target


def _unusable(plan, positions, start_tick, first_free_tick) -> MergeResult:
    last = start_tick + len(positions) - 1
    reason = (f'unusable: all {len(positions)} steps target committed ticks '
              f'(last step targets tick {last}, committed through tick {first_free_tick - 1})')
    return MergeResult(plan, usable_steps=0, trimmed_steps=len(positions), reason=reason)


def _max_abs(values: np.ndarray) -> float:
    return float(np.max(np.abs(values))) if values.size else 0.0
