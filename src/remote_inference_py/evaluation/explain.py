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
``evaluate --explain DIR``: re-run the discordant seeds of a finished evaluation with traces.

Reads ``DIR/results.jsonl``, pairs every mode with ``sync`` at the same latency
(:func:`~.paired.default_comparisons`), and re-runs, in simulated time, each discordant seed
(at most ``limit`` per comparison, alternating between the two directions) in ``sync`` and in
every mode discordant with it there, tracing each episode (:mod:`.trace`). The simulated
runner is deterministic, so a re-run must reproduce the recorded outcome; the table says
when one does not.

Writes to ``DIR/explain/``: the traces (JSON), one plot per (latency, seed) with ``sync`` and
the discordant modes side by side, and ``explain.md``: per discordant episode, what the
failing run did to the cube (never reached it, pushed it, lifted and dropped it, lifted it too
little or too late), when the two runs parted, the chunk switch in the second before the
decisive moment (its seam, how much it changed the plan and on which joint, the age of the
observation behind it), and how many switches fell while the jaws were at the cube; then a
count of the failure kinds per comparison.
"""

import dataclasses
import json
import pathlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.evaluation import paired
from remote_inference_py.evaluation.settings import Configuration, EvalSettings, PolicyChoice
from remote_inference_py.evaluation.stats import EpisodeResult
from remote_inference_py.evaluation.task import TaskConfig
from remote_inference_py.evaluation.trace import (
    describe, divergence, EpisodeTrace, Facts, plot_seed)

LIFTED_M = 0.01


def load_results(directory: pathlib.Path) -> List[EpisodeResult]:
    """Read ``results.jsonl`` of an evaluation folder; ValueError if it is missing or empty."""
    path = pathlib.Path(directory) / 'results.jsonl'
    if not path.is_file():
        raise ValueError(f'{path} does not exist: --explain needs a finished evaluation folder')
    results = [EpisodeResult.from_dict(json.loads(line))
               for line in path.read_text().splitlines() if line.strip()]
    if not results:
        raise ValueError(f'{path} holds no episode')
    return results


@dataclasses.dataclass(frozen=True)
class Discordant:
    """One seed on which exactly one of ``sync`` and ``mode`` succeeded at ``latency_s``."""

    mode: str
    latency_s: float
    seed: int
    winner: str     # the mode that succeeded


def pick_discordant(results: Sequence[EpisodeResult], limit: int) -> List[Discordant]:
    """Return up to ``limit`` discordant seeds per comparison with ``sync`` (both directions)."""
    out = []
    for cmp in paired.default_comparisons(results, across_latency=False):
        mode, latency = cmp.other
        base_wins, other_wins = list(cmp.seeds_only_baseline), list(cmp.seeds_only_other)
        chosen: List[Discordant] = []
        while (base_wins or other_wins) and len(chosen) < limit:
            if base_wins:
                chosen.append(Discordant(mode, latency, base_wins.pop(0), cmp.baseline[0]))
            if other_wins and len(chosen) < limit:
                chosen.append(Discordant(mode, latency, other_wins.pop(0), mode))
        out.extend(chosen)
    return out


def category(facts: Facts, error: str = '') -> str:
    """Return what a failed run did to the cube, in a few words."""
    if error:
        return 'crashed'
    if facts.first_contact_s is None:
        return 'never moved the cube'
    if facts.max_lift_m >= 0.05:
        return 'lifted 5 cm, not held 1 s in time'
    if facts.dropped:
        return 'lifted, then dropped'
    if facts.max_lift_m >= LIFTED_M:
        return 'lifted < 5 cm, stuck'
    if facts.pushed_m >= 0.01:
        return 'pushed the cube, no lift'
    return 'touched the cube, no lift'


def decisive_time(trace: EpisodeTrace) -> Optional[float]:
    """Return when a failed run went wrong: the cube's fall, else its first contact."""
    cube = np.asarray(trace.cube, dtype=float).reshape(-1, 3)
    t = np.asarray(trace.t, dtype=float)
    if not len(cube):
        return None
    lift = cube[:, 2] - cube[0, 2]
    peak = int(np.argmax(lift))
    if lift[peak] >= LIFTED_M:
        falling = np.nonzero(lift[peak:] < lift[peak] - LIFTED_M)[0]
        if len(falling):
            return float(t[peak + falling[0]])
    moved = np.nonzero(np.linalg.norm(cube - cube[0], axis=1) > 0.005)[0]
    return float(t[moved[0]]) if len(moved) else None


def _switch_text(trace: EpisodeTrace, moment: Optional[float]) -> str:
    if moment is None:
        return '-'
    near = [s for s in trace.switches if s['accepted'] and moment - 1.0 <= s['t'] <= moment]
    if not near:
        return f'none in the second before {moment:.2f} s'
    s = max(near, key=lambda item: item['disagreement'] or item['seam'] or 0.0)
    change = ('-' if s['disagreement'] is None
              else f'{s["disagreement"]:.2f} rad ({s["disagreement_joint"]})')
    age = '-' if s['observation_age'] is None else f'{s["observation_age"]:.2f} s'
    seam = '-' if s['seam'] is None else f'{s["seam"]:.3f}'
    return (f'{s["t"]:.2f} s (decisive {moment:.2f} s): seam {seam} rad, plan change '
            f'{change}, observation age {age}')


def explain(directory: pathlib.Path, policy: PolicyChoice, settings: EvalSettings,
            task: TaskConfig = TaskConfig(), limit: int = 4,
            progress: Callable[[str], None] = print) -> pathlib.Path:
    """Re-run and trace the discordant seeds of ``directory``; return ``explain.md``'s path."""
    from remote_inference_py.evaluation.simtime import run_episode
    directory = pathlib.Path(directory)
    results = load_results(directory)
    recorded: Dict[Tuple[str, float, int], EpisodeResult] = {
        (r.mode, float(r.latency_s), r.seed): r for r in results}
    chosen = pick_discordant(results, limit)
    out = directory / 'explain'
    out.mkdir(parents=True, exist_ok=True)
    runs: Dict[Tuple[float, int], List[str]] = {}
    for item in chosen:
        modes = runs.setdefault((item.latency_s, item.seed), [paired.BASELINE_MODE])
        if item.mode not in modes:
            modes.append(item.mode)
    traces: Dict[Tuple[str, float, int], EpisodeTrace] = {}
    mismatches: List[str] = []
    runtime = policy.make_runtime(settings.node('policy_server'))
    renderers: dict = {}
    try:
        for (latency, seed), modes in runs.items():
            for mode in modes:
                trace = EpisodeTrace(mode, latency, seed)
                result = run_episode(runtime, policy.name, settings,
                                     Configuration(mode, latency), seed, task, renderers,
                                     trace=trace)
                trace.save(out / trace.file_name())
                traces[(mode, latency, seed)] = trace
                before = recorded.get((mode, latency, seed))
                same = before is not None and before.success == result.success and (
                    before.completion_time_s is None or result.completion_time_s is None
                    or abs(before.completion_time_s - result.completion_time_s) < 1e-6)
                if not same:
                    mismatches.append(f'{mode} L={latency:g} seed {seed}')
                progress(f'explain: {trace.label}: '
                         f'{"success" if result.success else "failure"}'
                         f'{"" if same else " (differs from the recorded run)"}')
    finally:
        runtime.close()
        for renderer in renderers.values():
            renderer.close()
    plots = []
    for (latency, seed), modes in runs.items():
        name = f'seed{seed}_L{latency:g}.png'
        plots.append(plot_seed([traces[(m, latency, seed)] for m in modes], out / name))
    text = _report(directory, policy, chosen, traces, mismatches, plots, limit)
    path = out / 'explain.md'
    path.write_text(text)
    return path


def _report(directory, policy, chosen, traces, mismatches, plots, limit) -> str:
    lines = [f'# Why episodes differ: {policy.name}', '',
             f'- evaluation: {directory}',
             f'- discordant seeds re-run with traces: at most {limit} per comparison with sync',
             f'- reproduced: {"all" if not mismatches else "not " + ", ".join(mismatches)}',
             '',
             '| comparison | seed | succeeded | failed run: what happened | first contact '
             '[s] | max lift [cm] | runs part at [s] | switch before the decisive moment | '
             'switches at the cube (failed / succeeded) |',
             '|---|---:|---|---|---:|---:|---|---|---|']
    kinds: Dict[str, Dict[str, int]] = {}
    for item in chosen:
        base = traces[(paired.BASELINE_MODE, item.latency_s, item.seed)]
        other = traces[(item.mode, item.latency_s, item.seed)]
        failed, won = (other, base) if item.winner == paired.BASELINE_MODE else (base, other)
        facts, won_facts = describe(failed), describe(won)
        kind = category(facts, failed.meta.get('error', ''))
        label = f'{item.mode} vs sync, L={item.latency_s:g}'
        side = f'{failed.meta["mode"]} failed'
        kinds.setdefault(label, {}).setdefault(f'{side}: {kind}', 0)
        kinds[label][f'{side}: {kind}'] += 1
        part = divergence(base, other)
        part_text = '-' if part is None else f'{part["t"]:.2f} ({part["joint"]})'
        contact = '-' if facts.first_contact_s is None else f'{facts.first_contact_s:.2f}'
        lines.append(
            f'| {label} | {item.seed} | {item.winner} | {kind} | {contact} | '
            f'{100 * facts.max_lift_m:.1f} | {part_text} | '
            f'{_switch_text(failed, decisive_time(failed))} | '
            f'{facts.near_switches} / {won_facts.near_switches} |')
    lines += ['', 'Failure kinds per comparison:', '']
    for label, counts in kinds.items():
        lines.append(f'- {label}: ' + '; '.join(f'{k} x{v}' for k, v in sorted(counts.items())))
    lines += ['', 'Plots (sync first, then the modes discordant with it on that seed):', '']
    lines += [f'- {p.name}' for p in plots]
    return '\n'.join(lines) + '\n'
