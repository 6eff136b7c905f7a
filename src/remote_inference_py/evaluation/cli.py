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
``evaluate``: success rate and completion time of a policy, synchronous vs asynchronous.

Runs N episodes of the pick-the-cube task per configuration (execution mode x injected
inference latency), prints one line per episode and then the table (success rate with its
95 % interval, completion time mean with its 95 % interval), and writes to ``--out``:
``results.md`` (the table with date, machine, seeds and command), ``results.png`` (the plot),
``results.jsonl`` (one line per episode) and ``paired.md`` (every mode against ``sync`` at the
same latency, and each latency against L = 0, seed by seed: :mod:`.paired`)::

    evaluate --policy expert --episodes 20                      # simulated time, fast
    evaluate --policy expert --episodes 3 --runner real --modes sync,aligned --latencies 0.3
    evaluate --policy runs/evaluation/learned/model.pt2          # a learned policy
    evaluate --policy idle --episodes 5                          # does nothing: scores 0
    evaluate --policy expert --trace-seeds 3,17                  # also trace two seeds
    evaluate --explain runs/evaluation/<folder>                  # trace the discordant seeds

``--trace-seeds`` records a trace (:mod:`.trace`) of those seeds' episodes in every
configuration into ``--out``/traces and plots each seed and latency with the modes side by
side. ``--explain DIR`` re-runs the discordant seeds of a finished evaluation with traces
(:mod:`.explain`; the policy, parameters file and time limit come from ``DIR/run.json``,
which every evaluation writes, unless given) and writes ``DIR/explain/explain.md`` and
its plots.

Exit codes: 0 when the matrix ran (whatever the success rate), 2 for bad input (unknown
policy or mode, negative latency, zero episodes, a folder without results), named in the
message.
"""

import argparse
import json
import pathlib
import shlex
import sys
import time
from typing import Optional, Sequence

from remote_inference_py.common.process import print_stacks_on_request
from remote_inference_py.evaluation import matrix, paired, settings as eval_settings, stats
from remote_inference_py.evaluation.task import episode_seeds, TaskConfig


def build_parser() -> argparse.ArgumentParser:
    """Return the command line parser of ``evaluate``."""
    parser = argparse.ArgumentParser(
        prog='evaluate', description='Closed-loop evaluation on the simulated SO-101: '
        'success rate and completion time, synchronous vs asynchronous execution.')
    parser.add_argument('--policy', default=None,
                        help='expert, idle, or a .pt2/.pt checkpoint with its manifest '
                             '(default: expert; with --explain: the one the run used)')
    parser.add_argument('--episodes', type=int, default=20,
                        help='episodes per configuration (default: 20)')
    parser.add_argument('--modes', default='',
                        help='comma-separated execution modes (default: every mode the '
                             f'policy supports: {",".join(eval_settings.PLAIN_MODES)}, and rtc '
                             'for a policy that conditions on the committed plan)')
    parser.add_argument('--latencies', default=','.join(
        f'{v:g}' for v in eval_settings.DEFAULT_LATENCIES),
        help='comma-separated injected inference latencies [s] (default: 0,0.1,0.3,0.6)')
    parser.add_argument('--runner', default='sim', choices=matrix.RUNNERS,
                        help='sim: the executor and server cores in simulated time '
                             '(deterministic, fast); real: the nodes over DDS in real time')
    parser.add_argument('--seed', type=int, default=0,
                        help='first cube seed; episode k uses the k-th seed >= it whose cube '
                             'is in the task region (default: 0)')
    parser.add_argument('--time-limit', type=float, default=None,
                        help=f'episode length [s] (default: {TaskConfig().time_limit_s:g})')
    parser.add_argument('--config', default='',
                        help='node parameters file (default: the installed '
                             'config/eval_sim.yaml)')
    parser.add_argument('--out', default='',
                        help='output folder (default: runs/evaluation/<policy>_<runner>_<time>)')
    parser.add_argument('--trace-seeds', default='',
                        help='comma-separated cube seeds to trace in every configuration '
                             '(simulated time only): traces and plots in <out>/traces')
    parser.add_argument('--explain', default='', metavar='DIR',
                        help='re-run the discordant seeds of the evaluation in DIR with '
                             'traces; writes DIR/explain/explain.md and plots')
    parser.add_argument('--explain-limit', type=int, default=4,
                        help='discordant seeds re-run per comparison with sync (default: 4)')
    return parser


def _run_file(directory: pathlib.Path) -> dict:
    path = directory / 'run.json'
    return json.loads(path.read_text()) if path.is_file() else {}


def _parse_seeds(text: str):
    try:
        return {int(v) for v in text.split(',') if v.strip()}
    except ValueError:
        raise ValueError(f'--trace-seeds {text!r} is not a comma-separated list of seeds') \
            from None


def _explain(args, parser) -> int:
    from remote_inference_py.evaluation import explain
    directory = pathlib.Path(args.explain)
    recorded = _run_file(directory)
    try:
        policy = eval_settings.resolve_policy(args.policy or recorded.get('policy', 'expert'))
        task = TaskConfig(time_limit_s=args.time_limit if args.time_limit is not None
                          else recorded.get('time_limit_s', TaskConfig().time_limit_s))
        settings = eval_settings.EvalSettings.load(args.config or recorded.get('config')
                                                   or None)
        if args.explain_limit < 1:
            raise ValueError(f'--explain-limit must be at least 1, got {args.explain_limit}')
        results = explain.load_results(directory)
    except ValueError as error:
        parser.error(str(error))
    comparisons = paired.default_comparisons(results)
    if comparisons and not (directory / 'paired.md').is_file():
        (directory / 'paired.md').write_text(f'# Paired comparison: {policy.name}\n\n'
                                             + paired.markdown(comparisons))
    path = explain.explain(directory, policy, settings, task, args.explain_limit)
    print(path.read_text())
    print(f'evaluate: wrote {path} and its traces and plots')
    return 0


def _plot_traces(trace_dir: pathlib.Path) -> list:
    from remote_inference_py.evaluation.trace import EpisodeTrace, plot_seed
    groups: dict = {}
    for path in sorted(trace_dir.glob('*.json')):
        trace = EpisodeTrace.load(path)
        groups.setdefault((trace.meta['latency_s'], trace.meta['seed']), []).append(trace)
    order = list(eval_settings.MODES)
    plots = []
    for (latency, seed), traces in groups.items():
        traces.sort(key=lambda t: order.index(t.meta['mode']) if t.meta['mode'] in order
                    else len(order))
        plots.append(plot_seed(traces, trace_dir / f'seed{seed}_L{latency:g}.png'))
    return plots


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the evaluation; return the exit code."""
    print_stacks_on_request()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.explain:
        return _explain(args, parser)
    try:
        episodes = eval_settings.check_episodes(args.episodes)
        modes = eval_settings.parse_modes([args.modes]) if args.modes else None
        latencies = eval_settings.parse_latencies([args.latencies])
        policy = eval_settings.resolve_policy(args.policy or eval_settings.EXPERT)
        task = TaskConfig(time_limit_s=args.time_limit if args.time_limit is not None
                          else TaskConfig().time_limit_s)
        settings = eval_settings.EvalSettings.load(args.config or None)
        seeds = episode_seeds(args.seed, episodes, task.cube_region)
        trace_seeds = _parse_seeds(args.trace_seeds)
        if trace_seeds and args.runner != 'sim':
            raise ValueError('--trace-seeds needs the simulated-time runner (--runner sim)')
        modes = modes or eval_settings.default_modes(policy)
    except ValueError as error:
        parser.error(str(error))
    configurations = eval_settings.configurations(modes, latencies)
    stamp = time.strftime('%Y%m%d_%H%M%S')
    out = pathlib.Path(args.out or f'runs/evaluation/{policy.name}_{args.runner}_{stamp}')
    out.mkdir(parents=True, exist_ok=True)
    command = 'evaluate ' + ' '.join(shlex.quote(a) for a in (
        sys.argv[1:] if argv is None else argv))
    total = len(configurations) * len(seeds)
    print(f'evaluate: {policy.name}, {len(configurations)} configurations x {len(seeds)} '
          f'episodes = {total} episodes ({args.runner} runner); results in {out}', flush=True)
    (out / 'run.json').write_text(json.dumps({
        'policy': policy.name if policy.policy_type == 'python' else policy.checkpoint,
        'config': settings.source, 'time_limit_s': task.time_limit_s,
        'runner': args.runner, 'seeds': seeds, 'command': command}, indent=1))
    results_file = open(out / 'results.jsonl', 'w')
    done = [0]

    def progress(result: stats.EpisodeResult) -> None:
        done[0] += 1
        results_file.write(result.to_json() + '\n')
        results_file.flush()
        outcome = (f'success in {result.completion_time_s:.2f} s' if result.success
                   else f'failure{": " + result.error if result.error else ""}')
        print(f'[{done[0]}/{total}] {result.mode} L={result.latency_s:g} seed {result.seed}: '
              f'{outcome} ({result.wall_s:.1f} s)', flush=True)

    began = time.perf_counter()
    try:
        results = matrix.run_matrix(policy, configurations, seeds, args.runner, settings, task,
                                    out / 'logs', progress, trace_seeds=trace_seeds,
                                    trace_dir=out / 'traces')
    finally:
        results_file.close()
    summaries = stats.summarize(results)
    table = stats.markdown_table(summaries)
    header = matrix.describe_run(policy, args.runner, seeds, task, command, settings)
    elapsed = time.perf_counter() - began
    (out / 'results.md').write_text(
        header + table + f'\nWall time: {elapsed:.0f} s for {total} episodes.\n')
    png = stats.plot(summaries, out / 'results.png',
                     title=f'{policy.name}: pick the cube ({args.runner} runner, '
                           f'{len(seeds)} episodes per point)')
    comparisons = paired.default_comparisons(results)
    paired_text = ''
    if comparisons:
        paired_text = paired.markdown(comparisons)
        (out / 'paired.md').write_text(
            header.replace('# Closed-loop evaluation:', '# Paired comparison:', 1)
            + paired_text)
    print()
    print(table)
    if paired_text:
        print(paired_text)
    if trace_seeds:
        for path in _plot_traces(out / 'traces'):
            print(f'evaluate: traced {path}')
    print(f'evaluate: wrote {out / "results.md"}, {png}, '
          f'{out / "paired.md" if paired_text else "no paired.md (one configuration)"} and '
          f'{out / "results.jsonl"} ({elapsed:.0f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
