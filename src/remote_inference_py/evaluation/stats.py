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
Episode results, their statistics, the markdown table and the plot.

- Success rate: the fraction of episodes that succeeded, with the 95 % Wilson score interval
  (sensible at 0 % and 100 % and for small counts, unlike the normal approximation).
- Completion time: over the successful episodes only, the mean with the 95 % Student-t
  interval of the mean (no interval from fewer than two successes).
- A crashed episode (the simulation or a node failed) counts as a failure and is listed
  with its seed under the table.
"""

import dataclasses
import json
import math
import os
import pathlib
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

Z_95 = 1.959963984540054
# Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom.
T_95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


@dataclasses.dataclass
class EpisodeResult:
    """What one episode did; ``error`` is set when it crashed (a failure)."""

    policy: str
    mode: str
    latency_s: float
    seed: int
    runner: str
    success: bool = False
    completion_time_s: Optional[float] = None
    max_lift_m: float = 0.0
    cube_xy: Tuple[float, float] = (0.0, 0.0)
    error: str = ''
    requests: int = 0
    chunks_accepted: int = 0
    chunks_dropped: int = 0
    held_ticks: int = 0
    starved_ticks: int = 0
    skipped_ticks: int = 0     # ticks the executor's timer missed (a stalled host; real time)
    seam_mean_rad: Optional[float] = None   # mean largest joint jump where a chunk took over
    seam_max_rad: Optional[float] = None    # (the first chunk, which starts from rest, excluded)
    executor_state: str = ''
    wall_s: float = 0.0

    def to_json(self) -> str:
        """Return the result as one JSON line."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Dict) -> 'EpisodeResult':
        """Build from a parsed JSON line (unknown keys ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        if 'cube_xy' in values:
            values['cube_xy'] = tuple(values['cube_xy'])
        return cls(**values)


def t_quantile_95(degrees: int) -> float:
    """Return the two-sided 95 % quantile of Student's t with ``degrees`` of freedom."""
    if degrees < 1:
        raise ValueError(f'degrees of freedom must be >= 1, got {degrees}')
    if degrees <= len(T_95):
        return T_95[degrees - 1]
    # Cornish-Fisher expansion around the normal quantile (error < 1e-3 above 30).
    z = Z_95
    return z + (z ** 3 + z) / (4 * degrees) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (
        96 * degrees ** 2)


def wilson_interval(successes: int, total: int) -> Tuple[float, float]:
    """Return the 95 % Wilson score interval of a success probability."""
    if total <= 0:
        return (0.0, 1.0)
    p = successes / total
    z2 = Z_95 ** 2
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = Z_95 * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return (max(0.0, centre - half), min(1.0, centre + half))


Interval = Tuple[Optional[float], Optional[float], Optional[float]]


def mean_interval(values: Sequence[float]) -> Interval:
    """Return (mean, low, high): the mean and its 95 % t interval (None where undefined)."""
    n = len(values)
    if n == 0:
        return (None, None, None)
    mean = sum(values) / n
    if n < 2:
        return (mean, None, None)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile_95(n - 1) * math.sqrt(variance / n)
    return (mean, mean - half, mean + half)


@dataclasses.dataclass(frozen=True)
class Summary:
    """The statistics of one configuration."""

    policy: str
    mode: str
    latency_s: float
    episodes: int
    successes: int
    success_low: float
    success_high: float
    time_mean: Optional[float]
    time_low: Optional[float]
    time_high: Optional[float]
    crashed: Tuple[int, ...]
    seam_mean: Optional[float] = None
    seam_max: Optional[float] = None

    @property
    def success_rate(self) -> float:
        """Return the fraction of successful episodes."""
        return self.successes / self.episodes if self.episodes else 0.0


def summarize(results: Iterable[EpisodeResult]) -> List[Summary]:
    """Group results by (policy, mode, latency) in first-seen order and summarize each."""
    groups: Dict[Tuple[str, str, float], List[EpisodeResult]] = {}
    for result in results:
        groups.setdefault((result.policy, result.mode, result.latency_s), []).append(result)
    out = []
    for (policy, mode, latency), items in groups.items():
        successes = sum(1 for r in items if r.success)
        low, high = wilson_interval(successes, len(items))
        times = [r.completion_time_s for r in items
                 if r.success and r.completion_time_s is not None]
        mean, t_low, t_high = mean_interval(times)
        seams = [r.seam_mean_rad for r in items if r.seam_mean_rad is not None]
        largest = [r.seam_max_rad for r in items if r.seam_max_rad is not None]
        out.append(Summary(policy, mode, latency, len(items), successes, low, high, mean,
                           t_low, t_high, tuple(r.seed for r in items if r.error),
                           sum(seams) / len(seams) if seams else None,
                           max(largest) if largest else None))
    return out


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return '-' if value is None else f'{value:.{digits}f}'


def markdown_table(summaries: Sequence[Summary]) -> str:
    """Return the results as a markdown table (one row per configuration)."""
    lines = ['| policy | mode | latency L [s] | episodes | success | success 95 % CI | '
             'completion time [s] | time 95 % CI [s] | seam mean / max [rad] |',
             '|---|---|---:|---:|---:|---|---:|---|---|']
    for s in summaries:
        time_ci = ('-' if s.time_low is None
                   else f'{_fmt(s.time_low)} - {_fmt(s.time_high)}')
        lines.append(
            f'| {s.policy} | {s.mode} | {s.latency_s:g} | {s.episodes} | '
            f'{100 * s.success_rate:.0f} % | {100 * s.success_low:.0f} - '
            f'{100 * s.success_high:.0f} % | {_fmt(s.time_mean)} | {time_ci} | '
            f'{_fmt(s.seam_mean, 3)} / {_fmt(s.seam_max, 3)} |')
    crashed = [(s, seed) for s in summaries for seed in s.crashed]
    if crashed:
        lines.append('')
        lines.append('Crashed episodes (counted as failures): ' + ', '.join(
            f'{s.mode} L={s.latency_s:g} seed {seed}' for s, seed in crashed))
    return '\n'.join(lines) + '\n'


def plot(summaries: Sequence[Summary], path: os.PathLike, title: str = '') -> pathlib.Path:
    """Plot completion time and success rate against latency, one line per mode (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    path = pathlib.Path(path)
    figure, (time_axis, success_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    lines: Dict[Tuple[str, str], List[Summary]] = {}
    for s in summaries:
        lines.setdefault((s.policy, s.mode), []).append(s)
    several_policies = len({s.policy for s in summaries}) > 1
    latencies = sorted({s.latency_s for s in summaries})
    spacing = min([b - a for a, b in zip(latencies, latencies[1:])] or [1.0])
    for number, ((policy, mode), items) in enumerate(lines.items()):
        items = sorted(items, key=lambda s: s.latency_s)
        label = f'{policy} {mode}' if several_policies else mode
        dodge = (number - (len(lines) - 1) / 2) * 0.04 * spacing   # keep error bars apart
        timed = [s for s in items if s.time_mean is not None]
        if timed:
            x = [s.latency_s + dodge for s in timed]
            y = [s.time_mean for s in timed]
            low = [s.time_mean - (s.time_low if s.time_low is not None else s.time_mean)
                   for s in timed]
            high = [(s.time_high if s.time_high is not None else s.time_mean) - s.time_mean
                    for s in timed]
            time_axis.errorbar(x, y, yerr=[low, high], marker='o', capsize=3, label=label)
        x = [s.latency_s + dodge for s in items]
        y = [100 * s.success_rate for s in items]
        err = [[100 * (s.success_rate - s.success_low) for s in items],
               [100 * (s.success_high - s.success_rate) for s in items]]
        success_axis.errorbar(x, y, yerr=err, marker='o', capsize=3, label=label)
    time_axis.set_xlabel('injected inference latency L [s]')
    time_axis.set_ylabel('completion time of successful episodes [s]')
    time_axis.set_title('completion time (mean, 95 % CI)')
    success_axis.set_xlabel('injected inference latency L [s]')
    success_axis.set_ylabel('success rate [%]')
    success_axis.set_ylim(-5, 105)
    success_axis.set_title('success rate (95 % Wilson CI)')
    for axis in (time_axis, success_axis):
        axis.grid(True, alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
