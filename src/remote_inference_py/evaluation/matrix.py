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
Run a matrix of configurations x episodes with either runner, and describe the run.

Every configuration runs the same episodes (the same cube seeds, :func:`~.task.episode_seeds`),
so configurations are compared on identical cube positions. The simulated-time runner builds
the policy once and reuses it; the real-node runner starts the nodes for every episode. A
crashed episode is a failed result with its seed and message; the matrix goes on.
"""

import datetime
import os
import pathlib
import platform
from typing import Callable, List, Optional, Sequence

from remote_inference_py.evaluation.settings import Configuration, EvalSettings, PolicyChoice
from remote_inference_py.evaluation.stats import EpisodeResult
from remote_inference_py.evaluation.task import TaskConfig

RUNNERS = ('sim', 'real')


def run_matrix(policy: PolicyChoice, configurations: Sequence[Configuration],
               seeds: Sequence[int], runner: str = 'sim',
               settings: Optional[EvalSettings] = None, task: TaskConfig = TaskConfig(),
               log_dir: Optional[os.PathLike] = None,
               progress: Callable[[EpisodeResult], None] = lambda result: None,
               trace_seeds: Sequence[int] = (), trace_dir: Optional[os.PathLike] = None
               ) -> List[EpisodeResult]:
    """Run every configuration on every seed; return the results in run order.

    Seed by seed: every configuration runs a seed before the next seed starts, so the results
    of a run stopped early (``results.jsonl``) still pair every configuration on the seeds
    done.

    With the simulated-time runner, the episodes of ``trace_seeds`` are traced
    (:mod:`.trace`) and their traces written to ``trace_dir``.
    """
    if runner not in RUNNERS:
        raise ValueError(f'unknown runner {runner!r}; choose from {", ".join(RUNNERS)}')
    if trace_seeds and runner != 'sim':
        raise ValueError('tracing needs the simulated-time runner (--runner sim)')
    settings = settings or EvalSettings.load()
    results = []
    if runner == 'sim':
        from remote_inference_py.evaluation.simtime import run_episode
        from remote_inference_py.evaluation.trace import EpisodeTrace
        runtime = policy.make_runtime(settings.node('policy_server'))
        renderers: dict = {}
        try:
            for seed in seeds:
                for configuration in configurations:
                    trace = None
                    if seed in trace_seeds:
                        trace = EpisodeTrace(configuration.mode, configuration.latency_s, seed)
                    result = run_episode(runtime, policy.name, settings, configuration, seed,
                                         task, renderers, trace=trace)
                    if trace is not None:
                        trace.save(pathlib.Path(trace_dir or 'traces') / trace.file_name())
                    results.append(result)
                    progress(result)
        finally:
            runtime.close()
            for renderer in renderers.values():
                renderer.close()
        return results
    from remote_inference_py.evaluation.realtime import RealTimeRunner
    real = RealTimeRunner(settings, policy, task, log_dir or pathlib.Path('runs/evaluation/logs'))
    try:
        for seed in seeds:
            for configuration in configurations:
                result = real.run_episode(configuration, seed)
                results.append(result)
                progress(result)
    finally:
        real.close()
    return results


def machine_description() -> str:
    """Return host name, CPU model, core count, OS and Python for the results header."""
    model = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return (f'{platform.node()}: {model}, {os.cpu_count()} cores, {platform.system()} '
            f'{platform.release()}, Python {platform.python_version()}')


def describe_run(policy: PolicyChoice, runner: str, seeds: Sequence[int], task: TaskConfig,
                 command: str, settings: EvalSettings) -> str:
    """Return the markdown header of a results file: what ran, where, when."""
    now = datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')
    runner_text = ('simulated time (executor and policy server cores, MuJoCo physics)'
                   if runner == 'sim' else 'real nodes over DDS in real time')
    return '\n'.join([
        f'# Closed-loop evaluation: {policy.name}',
        '',
        f'- date: {now}',
        f'- machine: {machine_description()}',
        f'- runner: {runner_text}',
        f'- policy: {policy.name} ({policy.policy_type}: {policy.checkpoint})',
        f'- task: pick the cube, success = lifted {task.lift_height_m * 100:g} cm and held '
        f'{task.hold_s:g} s within {task.time_limit_s:g} s',
        f'- episodes per configuration: {len(seeds)}; cube seeds: {_seeds_text(seeds)}',
        f'- node parameters: {settings.source}',
        f'- command: `{command}`',
        '',
    ]) + '\n'


def _seeds_text(seeds: Sequence[int]) -> str:
    if len(seeds) <= 12:
        return ', '.join(str(s) for s in seeds)
    return f'{", ".join(str(s) for s in seeds[:6])}, ..., {seeds[-1]} ({len(seeds)} seeds)'
