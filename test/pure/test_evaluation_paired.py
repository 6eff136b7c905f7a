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

"""Paired statistics: McNemar, Newcombe's paired interval, signed-rank test, the table."""

import pytest

from remote_inference_py.evaluation.paired import (
    compare, default_comparisons, markdown, mcnemar_exact_p, newcombe_paired_interval,
    pairs_needed, signed_rank_p)
from remote_inference_py.evaluation.stats import EpisodeResult


def result(mode, latency, seed, success, time_s=None, error=''):
    return EpisodeResult(policy='learned', mode=mode, latency_s=latency, seed=seed,
                         runner='sim-time', success=success, completion_time_s=time_s,
                         error=error)


def test_mcnemar_exact_known_values():
    assert mcnemar_exact_p(0, 6) == pytest.approx(0.03125)
    assert mcnemar_exact_p(6, 0) == pytest.approx(0.03125)
    assert mcnemar_exact_p(3, 3) == 1.0
    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(1, 9) == pytest.approx(2 * 11 / 1024)   # 2 (1 + 10) / 2^10
    assert mcnemar_exact_p(0, 5) == pytest.approx(0.0625)           # 5 pairs cannot reach 5 %
    assert mcnemar_exact_p(2, 4) == pytest.approx(2 * 22 / 64)      # 2 (1 + 6 + 15) / 2^6
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 2)


def test_newcombe_paired_interval_matches_the_published_example():
    # Fagerland, Lydersen and Laake's paired example (Cavo et al.): 59, 6 / 16, 80; the
    # first proportion is the row margin: here that is the "other" configuration.
    diff, low, high = newcombe_paired_interval(a=59, b=16, c=6, d=80)
    assert diff == pytest.approx(-0.0621, abs=1e-4)
    assert low == pytest.approx(-0.1186, abs=1e-4) and high == pytest.approx(-0.0046, abs=1e-4)
    # Mirror image: swapping the roles flips the interval.
    diff2, low2, high2 = newcombe_paired_interval(a=59, b=6, c=16, d=80)
    assert (diff2, low2, high2) == pytest.approx((-diff, -high, -low))
    # No discordant pair: zero difference with an interval around it inside [-1, 1].
    diff, low, high = newcombe_paired_interval(30, 0, 0, 0)
    assert diff == 0.0 and -1.0 <= low < 0.0 < high <= 1.0


def test_signed_rank_exact_p_values():
    assert signed_rank_p([1, 2, 3, 4, 5]) == pytest.approx(2 / 32)
    assert signed_rank_p([-1, -2, -3, -4, -5, -6]) == pytest.approx(2 / 64)
    assert signed_rank_p([1, -2, 3, -4, 5]) == pytest.approx(1 - 6 / 32)
    assert signed_rank_p([1, 2, 3, 4, 5, -6]) == pytest.approx(28 / 64)
    # Ties share the mean rank: |1| and |-1| get 1.5 each, W+ = 1.5 + 3 = 4.5 (mean 3);
    # the sign patterns' W+ are 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6: six are 1.5 or more away.
    assert signed_rank_p([1, -1, 2]) == pytest.approx(6 / 8)
    assert signed_rank_p([0.0, 0.0]) is None           # zeros are dropped
    assert signed_rank_p([0.0, 1.0]) == 1.0


def test_pairs_needed_grows_with_discordance():
    assert pairs_needed(0.10, 0.05) == 312
    assert pairs_needed(0.20, 0.05) > pairs_needed(0.10, 0.05)
    assert pairs_needed(0.0, 0.05) == pairs_needed(0.05, 0.05) == 155
    assert pairs_needed(0.1, 0.0) is None


def test_compare_counts_discordant_seeds_and_times():
    results = []
    for seed in range(10):
        results.append(result('sync', 0.3, seed, seed != 9, 4.0 + 0.1 * seed))
        # aligned fails on seeds 0-2, succeeds on 9, is 0.5 s faster elsewhere
        ok = seed not in (0, 1, 2)
        results.append(result('aligned', 0.3, seed, ok, 3.5 + 0.1 * seed if ok else None))
    results.append(result('aligned', 0.3, 99, True, 1.0))   # seed only one side ran
    cmp = compare(results, ('sync', 0.3), ('aligned', 0.3))
    assert (cmp.n, cmp.both, cmp.only_baseline, cmp.only_other, cmp.neither) == (10, 6, 3, 1, 0)
    assert cmp.seeds_only_baseline == (0, 1, 2) and cmp.seeds_only_other == (9,)
    assert cmp.p_mcnemar == pytest.approx(mcnemar_exact_p(3, 1))
    assert cmp.diff == pytest.approx(-0.2) and cmp.diff_low < -0.2 < cmp.diff_high
    assert cmp.time_pairs == 6 and cmp.time_diff == pytest.approx(-0.5)
    assert cmp.time_low == pytest.approx(-0.5) and cmp.time_high == pytest.approx(-0.5)
    assert cmp.p_time == pytest.approx(2 / 64) and cmp.other_faster == 6
    assert cmp.label == 'aligned vs sync, L=0.3' and cmp.discordance == pytest.approx(0.4)
    with pytest.raises(ValueError, match='ensemble'):
        compare(results, ('sync', 0.3), ('ensemble', 0.3))


def test_crashed_episodes_count_as_failures():
    results = [result('sync', 0.0, 1, True, 3.0),
               result('aligned', 0.0, 1, False, error='simulation crashed: boom')]
    cmp = compare(results, ('sync', 0.0), ('aligned', 0.0))
    assert cmp.only_baseline == 1 and cmp.time_pairs == 0 and cmp.time_diff is None


def test_default_comparisons_and_table():
    results = [result(mode, latency, seed, True, 3.0)
               for latency in (0.0, 0.3) for mode in ('sync', 'aligned', 'ensemble')
               for seed in range(4)]
    comparisons = default_comparisons(results)
    labels = [c.label for c in comparisons]
    assert labels == ['aligned vs sync, L=0', 'ensemble vs sync, L=0',
                      'aligned vs sync, L=0.3', 'ensemble vs sync, L=0.3',
                      'sync: L=0.3 vs L=0', 'aligned: L=0.3 vs L=0', 'ensemble: L=0.3 vs L=0']
    assert len(default_comparisons(results, across_latency=False)) == 4
    text = markdown(comparisons)
    assert text.count('\n| ') == len(comparisons)   # one row each after the header
    assert '| aligned vs sync, L=0.3 | 4 | 4 | 0 | 0 | 1.000 | +0.0' in text
    assert '155 seeds' in text and 'none: every seed had the same outcome' in text
    results[0] = result('sync', 0.0, 0, False)
    text = markdown(default_comparisons(results))
    assert '- aligned vs sync, L=0: b = -; c = 0' in text
    assert '- sync: L=0.3 vs L=0: b = -; c = 0' in text and 'none: every' not in text
