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
Paired comparisons of two configurations that ran the same cube seeds.

Every configuration of an evaluation runs the same seeds, so two configurations can be
compared seed by seed instead of as two independent samples. On a seed both either succeed,
both fail, or exactly one succeeds; only the last kind (the *discordant* seeds) carries
information about which configuration is better. That removes the seed-to-seed spread
(some cube positions are hard for every configuration) from the comparison, and it is why
two success rates whose separate intervals overlap can still differ, or why a 10-point gap
in two 30-episode rates can be two or three seeds.

For a baseline B (for example ``sync`` at L = 0.3 s) and another configuration O on the seeds
both ran (``a`` both succeed, ``b`` only B, ``c`` only O, ``d`` neither; ``n`` seeds):

- **McNemar's exact test**: under "no difference" each discordant seed is equally likely to
  favour either side, so ``b`` is Binomial(b + c, 1/2); the two-sided p-value is
  ``min(1, 2 * P(X <= min(b, c)))``, computed exactly with integer binomial coefficients
  (1.0 when there is no discordant seed).
- **Success difference** ``(c - b) / n`` (O minus B) with Newcombe's 95 % interval for paired
  proportions (his method 10, 1998: the two Wilson score intervals combined with the
  correlation of the paired outcomes, its phi corrected as he published). It behaves at
  0 % and 100 % and with few discordant seeds, where the Wald interval is too narrow.
- **Completion time difference** on the seeds both succeed: the mean of ``t_O - t_B`` with
  its 95 % Student-t interval, and the two-sided p-value of Wilcoxon's signed-rank test,
  exact (zero differences dropped, tied magnitudes given their mean rank, the p-value from
  the exact distribution of the rank sum under random signs, so no normal approximation).
- **Power**: with a discordance rate ``psi = (b + c) / n`` the seeds needed to detect a
  success difference ``delta`` with McNemar's test at 5 % two-sided and 80 % power are, by
  Connor's (1987) approximation, ``(z_0.975 sqrt(psi) + z_0.8 sqrt(psi - delta^2))^2 /
  delta^2`` (``psi`` is at least ``delta``: a difference needs that many discordant seeds).

:func:`default_comparisons` pairs every other mode with ``sync`` at the same latency, and
each latency with L = 0 in the same mode; :func:`markdown` writes the table ``evaluate``
saves as ``paired.md``.
"""

import dataclasses
import math
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from remote_inference_py.evaluation.stats import (
    EpisodeResult, mean_interval, wilson_interval, Z_95)

Z_80 = 0.8416212335729143
"""One-sided normal quantile for 80 % power."""
BASELINE_MODE = 'sync'
Key = Tuple[str, float]   # (mode, latency [s])


def mcnemar_exact_p(b: int, c: int) -> float:
    """Return the two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs."""
    if b < 0 or c < 0:
        raise ValueError(f'discordant counts must be >= 0, got b={b}, c={c}')
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def newcombe_paired_interval(a: int, b: int, c: int, d: int) -> Tuple[float, float, float]:
    """Return (difference, low, high): ``(c - b) / n`` and its 95 % Newcombe interval.

    ``a`` both succeed, ``b`` only the baseline, ``c`` only the other, ``d`` neither; the
    difference is the other's success rate minus the baseline's.
    """
    counts = (a, b, c, d)
    if any(v < 0 for v in counts):
        raise ValueError(f'counts must be >= 0, got {counts}')
    n = a + b + c + d
    if n == 0:
        return (0.0, -1.0, 1.0)
    p_other, p_base = (a + c) / n, (a + b) / n
    low_o, high_o = wilson_interval(a + c, n)
    low_b, high_b = wilson_interval(a + b, n)
    margins = (a + c) * (b + d) * (a + b) * (c + d)
    phi = 0.0
    if margins > 0:
        cross = a * d - b * c
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    diff = p_other - p_base
    down_o, up_b = p_other - low_o, high_b - p_base
    up_o, down_b = high_o - p_other, p_base - low_b
    low = diff - math.sqrt(max(0.0, down_o ** 2 - 2 * phi * down_o * up_b + up_b ** 2))
    high = diff + math.sqrt(max(0.0, up_o ** 2 - 2 * phi * up_o * down_b + down_b ** 2))
    return (diff, max(-1.0, low), min(1.0, high))


def signed_rank_p(differences: Sequence[float], zero_tolerance: float = 1e-9) -> Optional[float]:
    """Return the exact two-sided p-value of Wilcoxon's signed-rank test (None if no data).

    Differences within ``zero_tolerance`` of zero are dropped; tied magnitudes get their
    mean rank. The p-value is the probability, over the 2^m equally likely sign patterns of
    the m remaining magnitudes, of a positive rank sum at least as far from its mean as
    the observed one.
    """
    values = [float(v) for v in differences if abs(float(v)) > zero_tolerance]
    m = len(values)
    if m == 0:
        return None
    order = sorted(range(m), key=lambda i: abs(values[i]))
    doubled = [0] * m   # twice the mid-ranks: integers even with ties
    i = 0
    while i < m:
        j = i
        while j + 1 < m and abs(values[order[j + 1]]) - abs(values[order[i]]) <= zero_tolerance:
            j += 1
        for k in range(i, j + 1):
            doubled[order[k]] = i + j + 2   # ranks i+1 .. j+1, mean (i + j + 2) / 2, doubled
        i = j + 1
    total = sum(doubled)
    observed = sum(r for r, v in zip(doubled, values) if v > 0)
    ways = [0] * (total + 1)   # ways[s]: sign patterns whose positive doubled-rank sum is s
    ways[0] = 1
    reach = 0
    for rank in doubled:
        for s in range(reach, -1, -1):
            if ways[s]:
                ways[s + rank] += ways[s]
        reach += rank
    distance = abs(2 * observed - total)   # |W+ - mean| in doubled units, times 2
    extreme = sum(w for s, w in enumerate(ways) if abs(2 * s - total) >= distance)
    return min(1.0, extreme / 2 ** m)


def pairs_needed(discordance: float, difference: float = 0.05) -> Optional[int]:
    """Return the seeds needed to detect ``difference`` (McNemar, 5 % two-sided, 80 % power).

    Connor's approximation with discordance rate ``max(discordance, difference)``; None for
    a non-positive difference.
    """
    if difference <= 0:
        return None
    psi = min(1.0, max(discordance, difference))
    root = Z_95 * math.sqrt(psi) + Z_80 * math.sqrt(max(0.0, psi - difference ** 2))
    return math.ceil(root ** 2 / difference ** 2)


@dataclasses.dataclass(frozen=True)
class PairedComparison:
    """Configuration ``other`` against ``baseline`` on the seeds both ran."""

    policy: str
    baseline: Key
    other: Key
    n: int
    both: int
    only_baseline: int
    only_other: int
    neither: int
    p_mcnemar: float
    diff: float
    diff_low: float
    diff_high: float
    time_pairs: int
    time_diff: Optional[float]
    time_low: Optional[float]
    time_high: Optional[float]
    p_time: Optional[float]
    other_faster: int
    seeds_only_baseline: Tuple[int, ...]
    seeds_only_other: Tuple[int, ...]

    @property
    def discordance(self) -> float:
        """Return the fraction of seeds on which exactly one configuration succeeded."""
        return (self.only_baseline + self.only_other) / self.n if self.n else 0.0

    @property
    def label(self) -> str:
        """Return e.g. ``aligned vs sync, L=0.3``."""
        (mode_b, lat_b), (mode_o, lat_o) = self.baseline, self.other
        if lat_b == lat_o:
            return f'{mode_o} vs {mode_b}, L={lat_o:g}'
        if mode_b == mode_o:
            return f'{mode_o}: L={lat_o:g} vs L={lat_b:g}'
        return f'{mode_o} L={lat_o:g} vs {mode_b} L={lat_b:g}'


def _by_seed(results: Iterable[EpisodeResult]) -> Dict[Tuple[str, str, float],
                                                       Dict[int, EpisodeResult]]:
    table: Dict[Tuple[str, str, float], Dict[int, EpisodeResult]] = {}
    for r in results:
        table.setdefault((r.policy, r.mode, float(r.latency_s)), {})[r.seed] = r
    return table


def compare(results: Iterable[EpisodeResult], baseline: Key, other: Key,
            policy: Optional[str] = None) -> PairedComparison:
    """Compare ``other`` with ``baseline`` (each ``(mode, latency)``) on their common seeds.

    A crashed episode counts as a failure. ValueError when either configuration is absent.
    """
    table = _by_seed(results)
    policies = sorted({p for p, _, _ in table}) if policy is None else [policy]
    if len(policies) != 1:
        raise ValueError(f'results hold several policies {policies}; name one')
    policy = policies[0]
    keys = [(policy, baseline[0], float(baseline[1])), (policy, other[0], float(other[1]))]
    for key in keys:
        if key not in table:
            raise ValueError(f'no results for {key[1]} L={key[2]:g} ({policy})')
    base, oth = table[keys[0]], table[keys[1]]
    seeds = [s for s in base if s in oth]
    a = b = c = d = 0
    only_b, only_o, deltas = [], [], []
    for seed in seeds:
        x, y = base[seed].success, oth[seed].success
        if x and y:
            a += 1
            tx, ty = base[seed].completion_time_s, oth[seed].completion_time_s
            if tx is not None and ty is not None:
                deltas.append(ty - tx)
        elif x:
            b += 1
            only_b.append(seed)
        elif y:
            c += 1
            only_o.append(seed)
        else:
            d += 1
    diff, low, high = newcombe_paired_interval(a, b, c, d)
    mean, t_low, t_high = mean_interval(deltas)
    return PairedComparison(
        policy, (baseline[0], float(baseline[1])), (other[0], float(other[1])), len(seeds),
        a, b, c, d, mcnemar_exact_p(b, c), diff, low, high, len(deltas), mean, t_low, t_high,
        signed_rank_p(deltas), sum(1 for v in deltas if v < 0), tuple(only_b), tuple(only_o))


def default_comparisons(results: Sequence[EpisodeResult],
                        across_latency: bool = True) -> List[PairedComparison]:
    """Every mode vs ``sync`` at each latency; then each latency vs L = 0 within a mode."""
    table = _by_seed(results)
    out = []
    for policy in dict.fromkeys(p for p, _, _ in table):
        keys = [(m, lat) for p, m, lat in table if p == policy]
        modes = list(dict.fromkeys(m for m, _ in keys))
        latencies = sorted({lat for _, lat in keys})
        for latency in latencies:
            if (BASELINE_MODE, latency) not in keys:
                continue
            for mode in modes:
                if mode != BASELINE_MODE and (mode, latency) in keys:
                    out.append(compare(results, (BASELINE_MODE, latency), (mode, latency),
                                       policy))
        if across_latency and latencies and latencies[0] == 0.0:
            for mode in modes:
                for latency in latencies[1:]:
                    if (mode, 0.0) in keys and (mode, latency) in keys:
                        out.append(compare(results, (mode, 0.0), (mode, latency), policy))
    return out


def _p(value: Optional[float]) -> str:
    if value is None:
        return '-'
    return f'{value:.2g}' if value < 0.001 else f'{value:.3f}'


def _seeds(seeds: Sequence[int], limit: int = 12) -> str:
    if not seeds:
        return '-'
    text = ', '.join(str(s) for s in seeds[:limit])
    return text + (f', ... ({len(seeds)})' if len(seeds) > limit else '')


def markdown(comparisons: Sequence[PairedComparison], difference: float = 0.05) -> str:
    """Return the paired table, the discordant seeds and the power note (markdown)."""
    lines = [
        '| comparison (other vs baseline) | n | both succeed | only baseline (b) | '
        'only other (c) | McNemar p | success diff other - baseline [pts] (95 % CI) | '
        'time pairs | time diff [s] (95 % CI) | signed-rank p | other faster |',
        '|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|']
    for cmp in comparisons:
        time_text = '-' if cmp.time_diff is None else (
            f'{cmp.time_diff:+.2f}' + ('' if cmp.time_low is None else
                                       f' ({cmp.time_low:+.2f} to {cmp.time_high:+.2f})'))
        lines.append(
            f'| {cmp.label} | {cmp.n} | {cmp.both} | {cmp.only_baseline} | {cmp.only_other} | '
            f'{_p(cmp.p_mcnemar)} | {100 * cmp.diff:+.1f} ({100 * cmp.diff_low:+.1f} to '
            f'{100 * cmp.diff_high:+.1f}) | {cmp.time_pairs} | {time_text} | '
            f'{_p(cmp.p_time)} | {cmp.other_faster}/{cmp.time_pairs} |')
    lines += ['', 'Discordant seeds (b: only the baseline succeeded; c: only the other):', '']
    discordant = [cmp for cmp in comparisons if cmp.only_baseline or cmp.only_other]
    for cmp in discordant:
        lines.append(f'- {cmp.label}: b = {_seeds(cmp.seeds_only_baseline)}; '
                     f'c = {_seeds(cmp.seeds_only_other)}')
    if not discordant:
        lines.append('- none: every seed had the same outcome in both configurations')
    if comparisons:
        rates = [cmp.discordance for cmp in comparisons]
        typical = sorted(rates)[len(rates) // 2]
        largest = max(rates)
        lines += [
            '', f'Power: to detect a {100 * difference:g}-point success difference with '
            "McNemar's test (5 % two-sided, 80 % power, Connor 1987) a comparison needs "
            f'{pairs_needed(typical, difference)} seeds at the median discordance rate '
            f'measured here ({100 * typical:.1f} % of seeds) and '
            f'{pairs_needed(largest, difference)} at the largest ({100 * largest:.1f} %); '
            f'never fewer than {pairs_needed(0.0, difference)} (when every discordant seed '
            f'favours one side, the rate a {100 * difference:g}-point difference needs at '
            f'least). These runs have n = {min(c.n for c in comparisons)} to '
            f'{max(c.n for c in comparisons)}.']
    lines += ['', 'Methods: McNemar exact (two-sided binomial on the discordant seeds); '
              "success difference with Newcombe's paired interval (method 10); time "
              'difference on seeds both succeed, mean with Student-t interval, exact '
              'Wilcoxon signed-rank p; a negative time difference means the other '
              'configuration finished sooner.']
    return '\n'.join(lines) + '\n'
