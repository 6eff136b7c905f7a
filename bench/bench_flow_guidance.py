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
Flow policy: CPU per chunk, plain and guided (real-time chunking), four ways of sampling.

``whole``: the sampler integrates ``model.pt2`` (image encoder + velocity head) at every Euler
step, op by op, and a guided step pulls the plan's error back through all of it with autograd
(the first version). ``split``: the export's ``split`` (``model.encoder.pt2`` +
``model.head.pt2``), the image encoded once per chunk and only the head run (and
differentiated) per step, still op by op. ``traced`` (the previous default): the split, each Euler
step one traced graph (the guided one with its vector-Jacobian product inside). ``numpy`` (the
default now): the split's head run in numpy, its vector-Jacobian product written by hand
(:mod:`remote_inference_py.policy_server.flow_head`), the encoder a traced graph. All four
load the same export through ``FlowMatchingRuntime.load`` (``use_split``, ``trace``,
``by_hand``) and sample the same chunks: the table gives the largest difference to ``whole``
for the same seed. A second table times the parts of a ``numpy`` chunk alone.

The policy is ``--policy DIR/model.pt2`` (a trained export with a split), or by default the
shipped architecture (:func:`remote_inference_py.evaluation.flow.make_flow_model` with the
CNN's 32-channel encoder) with random weights, which costs the same per pass. Each round
times one chunk of each of the four variants in turn, so a change of machine load hits them
alike; the table gives the median over rounds of process CPU time and wall time, torch on
``--threads`` threads (the policy server's ``cpu_threads``).

Run: ``./run bench flow_guidance`` (writes bench/results/flow_guidance.md); ``--smoke``: 2
rounds.
"""

import argparse
import os
import pathlib
import tempfile
import time

import numpy as np
import smoke

from remote_inference_py.evaluation import flow
from remote_inference_py.policy_server.flow_runtime import FlowMatchingRuntime
from remote_inference_py.policy_server.runtimes import Prefix, RuntimeOptions, zero_inputs
from remote_inference_py.policy_server.sampler import SamplerSettings


def make_policy(folder: pathlib.Path, steps: int, hidden: int) -> pathlib.Path:
    """Export the shipped flow architecture with random weights; return its model.pt2."""
    import torch
    torch.manual_seed(0)
    joints = 6
    mean, std = np.zeros(joints), np.full(joints, 0.1)
    model = flow.make_flow_model(mean, std, channels=32, hidden=hidden)
    return flow.export_flow(model, (96, 96), mean, std, folder, SamplerSettings(steps=steps))


VARIANTS = {'whole': (False, False, False), 'split': (True, False, False),
            'traced': (True, True, False), 'numpy': (True, False, True)}
"""Variant: (use_split, trace, by_hand)."""


def measure(path: pathlib.Path, rounds: int, frozen: int):
    """Return {(variant, guided): (cpu ms list, wall ms list)} and the chunk differences."""
    runtimes = {
        variant: FlowMatchingRuntime.load(RuntimeOptions(checkpoint=str(path)),
                                          use_split=split, trace=trace, by_hand=by_hand)
        for variant, (split, trace, by_hand) in VARIANTS.items()}
    if runtimes['split'].encoder is None:
        raise SystemExit(f'{path} has no split section in its manifest; re-export it')
    if runtimes['traced'].steps is None:
        raise SystemExit(f'the steps of {path} were not traced: {runtimes["traced"].trace_error}')
    if runtimes['numpy'].hand is None:
        raise SystemExit(f'{path} is not sampled by the numpy head: '
                         f'{runtimes["numpy"].hand_error}')
    spec = runtimes['split'].spec
    rng = np.random.default_rng(0)
    values = zero_inputs(spec, 1)
    for name, value in values.items():
        if value.dtype == np.uint8:
            value[:] = rng.integers(0, 256, value.shape)
        else:
            value[:] = rng.normal(0.0, 0.3, value.shape)
    plan = rng.normal(0.0, 1.0, (spec.chunk_length, len(spec.action_names))).astype(np.float32)
    prefixes = {False: None, True: [Prefix(plan, frozen)]}
    times = {(v, g): ([], []) for v in runtimes for g in (False, True)}
    chunks = {}
    for runtime in runtimes.values():
        runtime.infer(values, [''], prefixes[True])   # warm-up
    for index in range(rounds):
        for guided in (False, True):
            for variant, runtime in runtimes.items():
                runtime.reset(index)
                cpu, wall = time.process_time(), time.perf_counter()
                chunk = runtime.infer(values, [''], prefixes[guided])
                times[variant, guided][0].append((time.process_time() - cpu) * 1e3)
                times[variant, guided][1].append((time.perf_counter() - wall) * 1e3)
                chunks[variant, guided, index] = chunk
    difference = {(v, g): max(float(np.abs(chunks[v, g, i] - chunks['whole', g, i]).max())
                              for i in range(rounds)) for v in runtimes for g in (False, True)}
    return times, difference, runtimes['numpy'].sampler, parts(runtimes['numpy'], values,
                                                               plan, rounds)


def parts(runtime: FlowMatchingRuntime, values, plan: np.ndarray, rounds: int):
    """Return {part: median CPU ms} of a numpy-head chunk's parts, each timed alone."""
    import torch
    from remote_inference_py.policy_server.flow_head import OneBlasThread
    from remote_inference_py.policy_server.flow_runtime import encode
    head = runtime.hand
    features = [torch.from_numpy(values[f.name]) for f in runtime.spec.features]
    encoding = encode(runtime.traced_encoder, features)[0].numpy()
    context = head.prepare(encoding)
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, (1, head.size)).astype(np.float32)
    weights = np.ones((1, head.size), np.float32)
    targets = plan.reshape(1, -1)
    row = rng.normal(0.0, 1.0, (1, head.weights[1].shape[1])).astype(np.float32)
    hidden = head.weights[1]
    functions = {
        'encoder, exported (op by op)': (1, lambda: encode(runtime.encoder, features)),
        'encoder, traced': (1, lambda: encode(runtime.traced_encoder, features)),
        'plain step (numpy)': (10, lambda: head.velocity(context, x, 0.3)),
        'guided step (numpy)': (10, lambda: head.velocity(context, x, 0.3, 2.0, targets,
                                                          weights)),
        f'one product [1, {hidden.shape[1]}] x [{hidden.shape[1]}, {hidden.shape[0]}]': (
            10, lambda: row @ hidden.T)}
    times = {name: [] for name in functions}
    with OneBlasThread():
        for _ in range(rounds):
            for name, (repeat, function) in functions.items():
                function()   # untimed: the part's data in cache, as within a chunk
                cpu = time.process_time()
                for _ in range(repeat):
                    function()
                times[name].append((time.process_time() - cpu) * 1e3 / repeat)
    return {name: float(np.median(values)) for name, values in times.items()}


def main(argv=None):
    """Time the four variants, print the table and write bench/results/flow_guidance.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--policy', default='',
                        help='a flow export (model.pt2 with a split); default: the shipped '
                             'architecture with random weights')
    parser.add_argument('--rounds', type=int, default=60, help='chunks timed per variant')
    parser.add_argument('--steps', type=int, default=SamplerSettings.steps,
                        help='Euler steps (for the default policy)')
    parser.add_argument('--hidden', type=int, default=512,
                        help='width of the velocity head (for the default policy)')
    parser.add_argument('--frozen', type=int, default=8, help='frozen rows of the plan')
    parser.add_argument('--threads', type=int, default=1, help='torch threads')
    options = smoke.parse_args(parser, argv, rounds=2)
    import torch
    torch.set_num_threads(options.threads)
    with tempfile.TemporaryDirectory(prefix='bench_flow_') as folder:
        path = (pathlib.Path(options.policy) if options.policy
                else make_policy(pathlib.Path(folder), options.steps,
                                 options.hidden))
        times, difference, sampler, part_times = measure(path, options.rounds, options.frozen)
    policy = options.policy or (f'shipped architecture (head width {options.hidden}), random '
                                'weights')
    lines = [f'Policy: {policy}; {sampler.steps} Euler steps, a plan with {options.frozen} '
             f'frozen rows, execution horizon {sampler.execution_horizon}; {options.rounds} '
             f'chunks per variant, torch on {options.threads} thread(s). Median CPU [ms] per '
             'chunk (wall in brackets).', '',
             '| chunk | whole | split | traced | numpy | whole / numpy | split / numpy | '
             'traced / numpy | max chunk difference to whole |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    median = {key: (np.median(cpu), np.median(wall)) for key, (cpu, wall) in times.items()}
    for guided in (False, True):
        cells = [median[v, guided] for v in VARIANTS]
        numpy_cpu = cells[-1][0]
        lines.append(f'| {"guided (rtc)" if guided else "plain"} | '
                     + ' | '.join(f'{cpu:.1f} ({wall:.0f})' for cpu, wall in cells) + ' | '
                     + ' | '.join(f'{cpu / numpy_cpu:.1f}x' for cpu, _ in cells[:-1])
                     + f' | {max(difference[v, guided] for v in VARIANTS):.1e} |')
    ratio = median['numpy', True][0] / median['whole', False][0]
    lines += ['', f'A guided chunk with the numpy head costs {ratio:.2f}x '
              'an unguided chunk of the first version.', '',
              'Parts of a numpy-head chunk, each timed alone after an untimed call (median CPU '
              'per call, one BLAS thread):', '', '| part | CPU [ms] |', '|---|---:|']
    lines += [f'| {name} | {value:.3f} |' for name, value in part_times.items()]
    text = '\n'.join(lines)
    print(text)
    smoke.write_results(
        options, 'flow_guidance.md', '# Flow policy: guided sampling cost, whole, split, '
        f'traced and numpy\n\n{os.cpu_count()} cores\n\n{text}\n', __file__, argv)


if __name__ == '__main__':
    main()
