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

"""Hand-computed cases for merge.py: placement, append, aligned, blend and ensemble."""

import math

import numpy as np
import pytest

from remote_inference_py.executor.merge import (
    align_chunk, append_chunk, blend, blend_weights, chunk_start_tick, ensemble_chunk,
    ensemble_gains, first_tick_after, merge_chunk, place_chunk, Plan, trim_committed)


def plan(start, values):
    """Return a one-joint plan (or several joints when rows are lists)."""
    if not values:
        return Plan.empty(1, start)
    return Plan.from_positions(start, [v if isinstance(v, list) else [v] for v in values])


def column(values):
    return np.array([v if isinstance(v, list) else [v] for v in values], dtype=float)


def rows(result_plan):
    return result_plan.positions[:, 0].tolist()


PREVIOUS = np.array([100.0])


# ----------------------------------------------------------------------------- placement

@pytest.mark.parametrize('capture, start, fps, expected', [
    (0.0, 0.0, 10.0, 1),       # strictly after: a capture on tick 0 maps to tick 1
    (0.05, 0.0, 10.0, 1),
    (0.0999, 0.0, 10.0, 1),
    (0.1, 0.0, 10.0, 2),       # exactly on tick 1 -> tick 2, despite float rounding
    (0.3, 0.0, 10.0, 4),
    (100.25, 100.0, 10.0, 3),
    (-0.05, 0.0, 10.0, 0),     # captured before the timeline started
    (1.0, 0.0, 30.0, 31),
    (0.7, 0.0, 10.0, 8),
    # On a tick, though (0.3 - 0.1) * 10 = 1.9999999999999998 in floats: the tolerance keeps it
    # on tick 2, so the first tick after it is 3 (2 without the tolerance).
    (0.3, 0.1, 10.0, 3),
    (1.0, 0.9, 10.0, 2),
    # The tolerance is 1e-9 of a tick: a capture 1e-10 tick before tick 1 counts as on it,
    # one 1e-8 tick before does not.
    (0.1 - 1e-11, 0.0, 10.0, 2),
    (0.1 - 1e-9, 0.0, 10.0, 1),
])
def test_first_tick_after(capture, start, fps, expected):
    assert first_tick_after(capture, start, fps) == expected


@pytest.mark.parametrize('capture, offset, expected', [
    (0.05, 0, 1), (0.05, 2, 3), (0.31, 1, 5),
])
def test_chunk_start_tick_adds_the_action_offset(capture, offset, expected):
    assert chunk_start_tick(capture, 0.0, 10.0, offset) == expected


@pytest.mark.parametrize('holding, offset, expected', [
    (False, 0, 3),   # moving: from the capture (0.25 s -> tick 3)
    (False, 2, 5),
    (True, 0, 7),    # holding: the first free tick, whatever the capture
    (True, 1, 8),
])
def test_place_chunk(holding, offset, expected):
    assert place_chunk(0.25, 0.0, 10.0, offset, first_free_tick=7, holding=holding) == expected


@pytest.mark.parametrize('start, first_free, expected_kept, expected_trimmed', [
    (5, 5, [1, 2, 3], 0),
    (5, 3, [1, 2, 3], 0),
    (4, 5, [2, 3], 1),
    (3, 5, [3], 2),
    (2, 5, [], 3),
    (0, 5, [], 3),
])
def test_trim_committed(start, first_free, expected_kept, expected_trimmed):
    kept, kept_start, trimmed = trim_committed(column([1, 2, 3]), start, first_free)
    assert kept[:, 0].tolist() == expected_kept
    assert trimmed == expected_trimmed
    assert kept_start == start + trimmed


# ----------------------------------------------------------------------------- append

@pytest.mark.parametrize('old, first_free, chunk, expected_start, expected, seam', [
    # empty plan: the chunk starts at the first free tick; seam against the previous target
    (plan(0, []), 5, [1, 2, 3], 5, [1, 2, 3], 99),
    # buffered steps first, then the whole chunk
    (plan(5, [10, 11]), 5, [1, 2], 5, [10, 11, 1, 2], 10),
    # committed rows of the old plan are gone (ticks 3 and 4)
    (plan(3, [10, 11, 12]), 5, [1, 2], 5, [12, 1, 2], 11),
    # the whole old plan is in the past
    (plan(3, [10, 11]), 8, [1, 2], 8, [1, 2], 99),
])
def test_append(old, first_free, chunk, expected_start, expected, seam):
    result = append_chunk(old, column(chunk), first_free, PREVIOUS)
    assert result.plan.start_tick == expected_start
    assert result.first_tick == result.plan.end_tick - len(chunk)   # after the buffered steps
    assert rows(result.plan) == expected
    assert result.usable_steps == len(chunk)
    assert result.trimmed_steps == 0
    assert result.overlap_steps == 0
    assert result.seam == pytest.approx(seam)


def test_append_ignores_the_capture_tick():
    # Through merge_chunk the start tick is irrelevant for append.
    result = merge_chunk(plan(5, [10, 11]), column([1]), 0, 5, PREVIOUS, 'append')
    assert rows(result.plan) == [10, 11, 1]


# ----------------------------------------------------------------------------- aligned

@pytest.mark.parametrize(
    'old, chunk_start, first_free, chunk, exp_start, expected, trimmed, overlap, gap, seam', [
        # ticks 4 and 5 are committed: 2 steps trimmed, the rest replaces ticks 6..8
        (plan(5, [10, 11, 12, 13]), 4, 6, [0, 1, 2, 3, 4], 6, [2, 3, 4], 2, 3, 0, 9),
        # the chunk starts later than the first free tick: keep old ticks 5 and 6
        (plan(5, [10, 11, 12, 13]), 7, 5, [1, 2, 3], 5, [10, 11, 1, 2, 3], 0, 2, 0, 11),
        # the chunk is shorter than the old plan: the old tail is replaced (dropped) too
        (plan(5, [10, 11, 12, 13, 14]), 6, 5, [1, 2], 5, [10, 1, 2], 0, 2, 0, 10),
        # gap between the end of the plan and the chunk: repeat the last target
        (plan(5, [10, 11]), 9, 5, [1, 2], 5, [10, 11, 11, 11, 1, 2], 0, 0, 2, 10),
        # empty plan with a gap: repeat the previous (committed) target
        (plan(0, []), 7, 5, [1], 5, [100, 100, 1], 0, 0, 2, 99),
        # empty plan, chunk right at the first free tick
        (plan(0, []), 5, 5, [1, 2], 5, [1, 2], 0, 0, 0, 99),
        # old plan partly committed: its rows before the first free tick are gone
        (plan(2, [10, 11, 12, 13]), 4, 4, [7, 8], 4, [7, 8], 0, 2, 0, 5),
    ])
def test_aligned(old, chunk_start, first_free, chunk, exp_start, expected, trimmed, overlap,
                 gap, seam):
    result = align_chunk(old, column(chunk), chunk_start, first_free, PREVIOUS)
    assert result.usable
    assert result.first_tick == max(chunk_start, first_free)   # its first step not committed
    assert result.plan.start_tick == exp_start
    assert rows(result.plan) == expected
    assert result.trimmed_steps == trimmed
    assert result.usable_steps == len(chunk) - trimmed
    assert result.overlap_steps == overlap
    assert result.gap_steps == gap
    assert result.seam == pytest.approx(seam)


def test_aligned_chunk_entirely_committed_is_unusable_and_leaves_the_plan():
    old = plan(5, [10, 11])
    result = align_chunk(old, column([1, 2, 3]), 2, 5, PREVIOUS)
    assert not result.usable
    assert result.plan is old
    assert 'all 3 steps target committed ticks' in result.reason
    assert 'last step targets tick 4' in result.reason
    assert 'committed through tick 4' in result.reason


def test_merge_never_modifies_the_old_plan_arrays():
    old = plan(5, [10, 11, 12])
    before = old.positions.copy()
    for mode in ('append', 'aligned', 'ensemble'):
        merge_chunk(old, column([1, 2, 3]), 6, 5, PREVIOUS, mode, blend_steps=0)
    align_chunk(old, column([1, 2, 3]), 6, 5, PREVIOUS, blend_steps=2)
    np.testing.assert_array_equal(old.positions, before)


def test_plan_must_be_contiguous_from_the_first_free_tick():
    with pytest.raises(ValueError, match='after the first free tick'):
        align_chunk(plan(8, [1.0]), column([1]), 5, 5, PREVIOUS)


# ----------------------------------------------------------------------------- blend

@pytest.mark.parametrize('steps, weight, overlap, expected', [
    (4, 0.5, 10, [0.5, 0.375, 0.25, 0.125]),
    (4, 0.5, 4, [0.5, 0.375, 0.25, 0.125]),
    (4, 0.5, 2, [0.5, 0.25]),               # ramp compressed into a short overlap
    (3, 1.0, 3, [1.0, 2 / 3, 1 / 3]),
    (1, 0.8, 5, [0.8]),
    (0, 0.5, 5, []),
    (5, 0.5, 0, []),
    (2, 0.0, 5, [0.0, 0.0]),
])
def test_blend_weights(steps, weight, overlap, expected):
    assert blend_weights(steps, weight, overlap).tolist() == pytest.approx(expected)


def test_blend_formula_on_masked_components_only():
    old = np.array([[10.0, 10.0], [10.0, 10.0]])
    new = np.array([[0.0, 0.0], [2.0, 2.0]])
    out = blend(old, new, np.array([0.5, 0.25]), np.array([True, False]))
    # target_k = w_k * old_k + (1 - w_k) * new_k on joint 0 only
    assert out.tolist() == [[5.0, 0.0], [4.0, 2.0]]


@pytest.mark.parametrize('blend_steps, weight, old, chunk_start, first_free, expected', [
    # four blended steps out of a long overlap: 10 -> 0 through 5, 3.75, 2.5, 1.25
    (4, 0.5, plan(0, [10] * 8), 0, 0, [5.0, 3.75, 2.5, 1.25, 0, 0, 0, 0]),
    # overlap of 2 only: the ramp fits into it (0.5, 0.25), then the new chunk alone
    (4, 0.5, plan(0, [10, 10]), 0, 0, [5.0, 2.5, 0, 0, 0, 0, 0, 0]),
    # blend_weight 1: the first overlapping step keeps the old target
    (2, 1.0, plan(0, [10] * 8), 0, 0, [10.0, 5.0, 0, 0, 0, 0, 0, 0]),
    # no blending
    (0, 0.5, plan(0, [10] * 8), 0, 0, [0.0] * 8),
    # after trimming: step 0 (tick 4) is committed, blend starts at tick 5
    (2, 0.5, plan(3, [10] * 5), 4, 5, [5.0, 2.5, 0, 0, 0, 0, 0]),
    # the chunk starts after the first free tick: old prefix kept, blend from the chunk start
    (2, 0.5, plan(0, [10] * 8), 2, 0, [10, 10, 5.0, 2.5, 0, 0, 0, 0, 0, 0]),
])
def test_aligned_blend(blend_steps, weight, old, chunk_start, first_free, expected):
    result = align_chunk(old, column([0.0] * 8), chunk_start, first_free, PREVIOUS,
                         blend_steps=blend_steps, blend_weight=weight)
    assert rows(result.plan) == pytest.approx(expected)


def test_blend_touches_only_the_listed_components():
    old = plan(0, [[10.0, 20.0, 30.0]] * 4)
    chunk = np.zeros((4, 3))
    mask = np.array([False, True, False])
    result = align_chunk(old, chunk, 0, 0, np.zeros(3), blend_steps=2, blend_weight=0.5,
                         blend_mask=mask)
    assert result.plan.positions.tolist() == [
        [0.0, 10.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_blend_seam_is_measured_after_blending():
    result = align_chunk(plan(0, [10] * 4), column([0] * 4), 0, 0, PREVIOUS, blend_steps=2,
                         blend_weight=0.5)
    assert result.seam == pytest.approx(5.0)


# ----------------------------------------------------------------------------- ensemble

@pytest.mark.parametrize('coeff, counts, expected', [
    (0.0, [0, 1, 2, 3], [1.0, 1 / 2, 1 / 3, 1 / 4]),          # equal weights: running mean
    (math.log(2), [1], [0.5 / 1.5]),                         # w = 1, 1/2
    (math.log(2), [2], [0.25 / 1.75]),                       # w = 1, 1/2, 1/4
    (-math.log(2), [1], [2 / 3]),                            # w = 1, 2: newer preferred
    (0.01, [1], [math.exp(-0.01) / (1 + math.exp(-0.01))]),  # ACT default
    (10.0, [100], [0.0]),                                    # no overflow into NaN
    (-10.0, [100], [1.0]),
])
def test_ensemble_gains(coeff, counts, expected):
    gains = ensemble_gains(coeff, np.array(counts))
    assert gains.tolist() == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    'coeff, old, chunk_start, first_free, chunk, exp_start, expected, counts, overlap', [
        # first prediction: taken as is
        (0.0, plan(0, []), 0, 0, [1, 2, 3], 0, [1, 2, 3], [1, 1, 1], 0),
        # second prediction, equal weights: plain average where both cover a tick
        (0.0, plan(0, [1, 2, 3]), 1, 1, [5, 5, 5], 1, [3.5, 4, 5], [2, 2, 1], 2),
        # third prediction: mean of 3, 5 and 8 at tick 2; of 5 and 8 at tick 3
        (0.0, Plan(1, column([3.5, 4, 5]), np.array([2, 2, 1])), 2, 2, [8, 8], 2,
         [16 / 3, 6.5], [3, 2], 2),
        # w_i = 2^-i (older preferred): (0 * 1 + 3 * 0.5) / 1.5 = 1
        (math.log(2), plan(0, [0]), 0, 0, [3], 0, [1.0], [2], 1),
        # w_i = 2^i (newer preferred): (0 * 1 + 3 * 2) / 3 = 2
        (-math.log(2), plan(0, [0]), 0, 0, [3], 0, [2.0], [2], 1),
        # trimmed: tick 0 is committed, so step 0 is dropped
        (0.0, plan(0, [1, 1]), 0, 1, [9, 9, 9], 1, [5, 9], [2, 1], 1),
        # gap rows repeat the last target but count 0: a later prediction replaces them
        (0.0, plan(0, [1]), 2, 0, [5], 0, [1, 1, 5], [1, 0, 1], 0),
        # old rows after the chunk are kept
        (0.0, plan(0, [1, 1, 1, 1]), 0, 0, [3], 0, [2, 1, 1, 1], [2, 1, 1, 1], 1),
    ])
def test_ensemble(coeff, old, chunk_start, first_free, chunk, exp_start, expected, counts,
                  overlap):
    result = ensemble_chunk(old, column(chunk), chunk_start, first_free, PREVIOUS, coeff=coeff)
    assert result.plan.start_tick == exp_start
    assert result.first_tick == max(chunk_start, first_free)
    assert rows(result.plan) == pytest.approx(expected)
    assert result.plan.counts.tolist() == counts
    assert result.overlap_steps == overlap


def test_ensemble_replaces_gap_rows_entirely():
    first = ensemble_chunk(plan(0, [1]), column([5]), 2, 0, PREVIOUS, coeff=0.0).plan
    second = ensemble_chunk(first, column([9, 9]), 1, 1, PREVIOUS, coeff=0.0).plan
    assert second.start_tick == 1
    assert rows(second) == pytest.approx([9, 7])   # gap row -> 9; tick 2 -> mean of 5, 9


def test_ensemble_matches_the_direct_weighted_average():
    coeff = 0.3
    predictions = [[2.0, 4.0, 6.0], [3.0, 5.0, 7.0], [1.0, 1.0, 1.0]]
    current = plan(0, [])
    for index, values in enumerate(predictions):
        # prediction `index` starts at tick `index`; its step 0 targets that tick
        current = ensemble_chunk(current, column(values), index, index, PREVIOUS,
                                 coeff=coeff).plan
    # tick 2 was covered by all three, oldest first: 6, 5, 1
    weights = np.exp(-coeff * np.arange(3))
    expected = (weights * np.array([6.0, 5.0, 1.0])).sum() / weights.sum()
    assert current.row(2)[0] == pytest.approx(expected)


def test_ensemble_all_committed_is_unusable():
    result = ensemble_chunk(plan(3, [1]), column([1, 2]), 0, 3, PREVIOUS)
    assert not result.usable
    assert 'unusable' in result.reason


def test_merge_chunk_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="'latest'"):
        merge_chunk(plan(0, []), column([1]), 0, 0, PREVIOUS, 'latest')


# ----------------------------------------------------------------------------- plan

def test_plan_rows_and_dropping():
    p = plan(5, [10, 11, 12])
    assert p.end_tick == 8
    assert p.row(4) is None and p.row(8) is None
    assert p.row(6)[0] == 11
    assert rows(p.drop_before(7)) == [12]
    assert p.drop_before(7).start_tick == 7
    assert len(p.drop_before(20)) == 0
    assert p.drop_before(2) is p
