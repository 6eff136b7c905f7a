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

Exit codes: 0 when the matrix ran (whatever the success rate), 2 for bad input (unknown
policy or mode, negative latency, zero episodes), named in the message.
"""

import argparse
import pathlib
import shlex
import sys
import time
from typing import Optional, Sequence

from remote_inference_py.evaluation import matrix, paired, settings as eval_settings, stats
from remote_inference_py.evaluation.task import episode_seeds, TaskConfig


def build_parser() -> argparse.ArgumentParser:
    """Return the command line parser of ``evaluate``."""
    parser = argparse.ArgumentParser(
        prog='evaluate', description='Closed-loop evaluation on the simulated SO-101: '
        'success rate and completion time, synchronous vs asynchronous execution.')
    parser.add_argument('--policy', default='expert',
                        help='expert, idle, or a .pt2/.pt checkpoint with its manifest '
                             '(default: expert)')
    parser.add_argument('--episodes', type=int, default=20,
                        help='episodes per configuration (default: 20)')
    parser.add_argument('--modes', default=','.join(eval_settings.MODES),
                        help='comma-separated execution modes (default: all: '
                             f'{",".join(eval_settings.MODES)})')
    parser.add_argument('--latencies', default=','.join(
        f'{v:g}' for v in eval_settings.DEFAULT_LATENCIES),
        help='comma-separated injected inference latencies [s] (default: 0,0.1,0.3,0.6)')
    parser.add_argument('--runner', default='sim', choices=matrix.RUNNERS,
                        help='sim: the executor and server cores in simulated time '
                             '(deterministic, fast); real: the nodes over DDS in real time')
    parser.add_argument('--seed', type=int, default=0,
                        help='first cube seed; episode k uses the k-th seed >= it whose cube '
                             'is in the task region (default: 0)')
    parser.add_argument('--time-limit', type=float, default=TaskConfig().time_limit_s,
                        help='episode length [s] (default: %(default)s)')
    parser.add_argument('--config', default='',
                        help='node parameters file (default: the installed '
                             'config/eval_sim.yaml)')
    parser.add_argument('--out', default='',
                        help='output folder (default: runs/evaluation/<policy>_<runner>_<time>)')
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the evaluation; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        episodes = eval_settings.check_episodes(args.episodes)
        modes = eval_settings.parse_modes([args.modes])
        latencies = eval_settings.parse_latencies([args.latencies])
        policy = eval_settings.resolve_policy(args.policy)
        task = TaskConfig(time_limit_s=args.time_limit)
        settings = eval_settings.EvalSettings.load(args.config or None)
        seeds = episode_seeds(args.seed, episodes, task.cube_region)
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
                                    out / 'logs', progress)
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
    print(f'evaluate: wrote {out / "results.md"}, {png}, '
          f'{out / "paired.md" if paired_text else "no paired.md (one configuration)"} and '
          f'{out / "results.jsonl"} ({elapsed:.0f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
