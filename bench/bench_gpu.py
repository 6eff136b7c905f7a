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
The policy server's runtimes on a GPU, with LeRobot's own inference beside them.

Four policies with random weights: LeRobot's ACT at its default size (51.6 M parameters, one
3x480x640 camera, chunk 100), LeRobot's diffusion policy (its default U-Net, one 3x480x640
camera, 10 denoising steps), this project's flow policy (evaluation/flow.py, split encoder and
head, 10 Euler steps) and SmolVLA at its real size (the published SmolVLM2-500M backbone
sizes, built offline by test/lerobot_checkpoints.py; one camera). Each is loaded by the
server's runtime registry (``load_runtime``: what ``policy_server`` loads) with the ``device``,
``dtype`` and ``compile`` settings of the cell, warmed up over every batch size (``warm_up``),
then its ``infer`` (inputs staged on the device, the model, the chunk copied back: the
server's model boundary) is timed over fresh random inputs at batch 1, 4 and 8 (SmolVLA: 1,
the runtime serves one request per pass). Beside each float32 eager cell, the same folder
through LeRobot's own path on the same device and inputs (preprocessor ->
``predict_action_chunk``, diffusion ``select_action`` after ``reset`` -> postprocessor): the
ratio is our overhead. Then the cost of a guided chunk (real-time chunking) against a plain
one: the flow runtime's guidance and SmolVLA's (LeRobot's RTC). Then an ACT and a SmolVLA
saved by the installed LeRobot itself (0.6.1 on the device machine) served through the
server's core (``served_chunk``) and compared action for action with that LeRobot's own chunk
on the same observation (CPU, float32; and the served chunk on the GPU beside it).

Timing (the device entry's METHOD.md): warm-up first, each pass synchronized (its output is
copied to the host), fresh inputs every pass, the median and the 99th percentile of many. GPU
memory: the peak allocated by torch in the cell (``torch.cuda.max_memory_allocated``).
Cells run in priority order (float32 eager, bfloat16 eager, guidance, the LeRobot comparison,
then compiled cells) and stop when ``--budget-s`` is spent: a skipped cell says so.

Run: ``./run bench gpu`` on a GPU host (results to bench/results/gpu.md), or on the device
machine ``bash bench/gpu_check.sh`` (docs/gpu.md). Without CUDA it refuses unless ``--smoke``
(bench/smoke.py): tiny models on the CPU, batch 1 and 2, a few passes, seconds, the same
tables (numbers meaningless, never results). Not a test: it measures.
"""

import argparse
import contextlib
import datetime
import gc
import json
import os
import pathlib
import platform
import shlex
import sys
import tempfile
import time
import traceback

import numpy as np
import smoke

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test'), str(ROOT / 'src')]

MODELS = ('act', 'diffusion', 'flow', 'smolvla')
ACT_DEFAULTS = dict(chunk_size=100, n_action_steps=100, dim_model=512, n_heads=8,
                    dim_feedforward=3200, n_encoder_layers=4, n_decoder_layers=1,
                    n_vae_encoder_layers=4, latent_dim=32)
DIFFUSION_SETTINGS = dict(crop_shape=None, num_inference_steps=10)
FLOW_STEPS = 10
HEIGHT, WIDTH = 480, 640
SMOKE_IMAGE = (3, 64, 96)
COMPARE_TOLERANCE = 1e-3     # degrees / gripper percent: float32 rounding (docs/lerobot.md)
SEED = 5


def build(kind, directory, smoke_run):
    """Write ``kind``'s checkpoint (random weights) under ``directory``; return its path."""
    import lerobot_checkpoints as checkpoints
    image = SMOKE_IMAGE if smoke_run else (3, HEIGHT, WIDTH)
    path = pathlib.Path(directory) / kind
    if kind == 'act':
        return checkpoints.make_checkpoint(path, 'act', image_shape=image,
                                           **({} if smoke_run else ACT_DEFAULTS))
    if kind == 'diffusion':
        return checkpoints.make_checkpoint(path, 'diffusion', image_shape=image,
                                           **({} if smoke_run else DIFFUSION_SETTINGS))
    if kind == 'smolvla':
        return checkpoints.make_checkpoint(path, 'smolvla', image_shape=image,
                                           backbone_size='tiny' if smoke_run else 'published')
    if kind == 'flow':
        import torch
        from remote_inference_py.evaluation import flow
        from remote_inference_py.policy_server.sampler import SamplerSettings
        torch.manual_seed(0)
        mean, std = np.zeros(6), np.full(6, 0.3)
        model = (flow.make_flow_model(mean, std, hidden=64) if smoke_run
                 else flow.make_flow_model(mean, std))
        size = image[1:]
        return flow.export_flow(model, size, mean, std, path, SamplerSettings(
            steps=FLOW_STEPS, execution_horizon=25, prefix_schedule='exp',
            max_guidance_weight=10.0), max_batch_size=8)
    raise ValueError(kind)


def random_inputs(spec, batch, rng):
    """Return model inputs of the declared shapes with fresh random values."""
    from remote_inference_py.policy_server.runtimes import zero_inputs
    inputs = zero_inputs(spec, batch)
    for name, value in inputs.items():
        if value.dtype == np.uint8:
            value[:] = rng.integers(0, 256, value.shape)
        elif value.ndim == 4:
            value[:] = rng.random(value.shape, dtype=np.float32)
        else:
            value[:] = rng.normal(0.0, 1.0, value.shape)
    return inputs


def percentiles(ms):
    """Return (p50, p99) of ``ms``."""
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def synchronize():
    """Wait for the GPU (nothing on the CPU)."""
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(function, inputs_list, passes):
    """Call ``function(inputs)`` over ``inputs_list`` (cycled) ``passes`` times; return ms."""
    times = []
    for index in range(passes):
        inputs = inputs_list[index % len(inputs_list)]
        synchronize()
        began = time.perf_counter()
        function(inputs)
        synchronize()
        times.append((time.perf_counter() - began) * 1e3)
    return times


@contextlib.contextmanager
def gpu_peak():
    """Yield a dict whose 'mb' is the peak GPU memory allocated inside the block."""
    import torch
    out = {'mb': float('nan')}
    if torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    yield out
    if torch.cuda.is_available():
        out['mb'] = torch.cuda.max_memory_allocated() / 2 ** 20


class LeRobotOwn:
    """LeRobot's own inference on a folder: preprocessor, policy, postprocessor (no server)."""

    def __init__(self, folder, device):
        """Load the policy and its processors with LeRobot's factory on ``device``."""
        from remote_inference_py.policy_server.lerobot_import import import_lerobot
        import_lerobot()
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
        config = PreTrainedConfig.from_pretrained(str(folder))
        config.device = str(device)
        self.policy = get_policy_class(config.type).from_pretrained(str(folder), config=config)
        self.policy.to(device).eval()
        self.pre, self.post = make_pre_post_processors(
            self.policy.config, pretrained_path=str(folder),
            preprocessor_overrides={'device_processor': {'device': str(device)}})
        self.device = device

    def __call__(self, inputs, task='pick'):
        """Return the postprocessed chunk for model inputs (as the server stages them)."""
        import torch
        batch = {name: torch.from_numpy(value).to(self.device) for name, value in inputs.items()}
        rows = next(iter(inputs.values())).shape[0]
        if self.policy.config.type == 'diffusion':
            # The server stacks n_obs_steps samples; select_action queues single ones.
            batch = {name: value[:, -1] for name, value in batch.items()}
        batch['task'] = [task] * rows
        with torch.no_grad():
            batch = self.pre(batch)
            if self.policy.config.type == 'diffusion':
                self.policy.reset()   # select_action generates a new chunk from empty queues
                actions = self.policy.select_action(batch)
            else:
                actions = self.policy.predict_action_chunk(batch)
            return self.post(actions).cpu()


def parameters(runtime):
    """Return the runtime's parameter count [M] (0 when it has no torch module)."""
    modules = [getattr(runtime, name, None) for name in ('policy', 'model')]
    module = next((m for m in modules if m is not None and hasattr(m, 'parameters')), None)
    return sum(p.numel() for p in module.parameters()) / 1e6 if module is not None else 0.0


def serve_cell(folder, kind, dtype, compiled, batches, passes, device, reference):
    """Load, warm up and time one (model, dtype, compile) cell; return its rows.

    The GPU memory column is the peak of our runtime alone: LeRobot's own copy of the policy
    is loaded after our passes are timed and the peak is read.
    """
    import torch
    from remote_inference_py.policy_server.loading import load_runtime
    from remote_inference_py.policy_server.runtimes import RuntimeOptions, warm_up
    rows, inputs = [], {}
    with gpu_peak() as peak:
        began = time.perf_counter()
        runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0, device=device,
                                              dtype=dtype, compile=compiled))
        load_s = time.perf_counter() - began
        served = [b for b in batches if b <= runtime.max_batch_size]
        report = warm_up(runtime, 3, max(served))
        rng = np.random.default_rng(SEED)
        for batch in batches:
            if batch not in served:
                rows.append(dict(model=kind, dtype=dtype, compile=compiled, batch=batch,
                                 note=f'the runtime serves {runtime.max_batch_size} per pass'))
                continue
            inputs[batch] = [random_inputs(runtime.spec, batch, rng) for _ in range(4)]
            tasks = ['pick up the cube'] * batch
            ours = timed(lambda x: runtime.infer(x, tasks), inputs[batch], passes)
            rows.append(dict(model=kind, dtype=dtype, compile=compiled, batch=batch,
                             params=parameters(runtime), load_s=load_s, warm_s=report.total_s,
                             ours=percentiles(ours)))
        torch_device = runtime.torch_device
        runtime.close()
        runtime = None
    for row in rows:
        row['gpu_mb'] = peak['mb']
    if reference:
        gc.collect()
        own = LeRobotOwn(folder, torch_device)
        for row in rows:
            if row['batch'] in inputs:
                own(inputs[row['batch']][0])   # its own warm-up at this batch size
                row['lerobot'] = percentiles(timed(own, inputs[row['batch']], passes))
        own = None
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return rows


def guidance_rows(folder, kind, device, passes, batches):
    """Time a plain and a guided (real-time chunking) chunk; return rows."""
    from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
    from remote_inference_py.policy_server.loading import load_runtime
    from remote_inference_py.policy_server.runtimes import Prefix, RuntimeOptions, warm_up
    os.environ.setdefault(SEED_VARIABLE, str(SEED))
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0, device=device))
    warm_up(runtime, 2, max(batches))
    rng = np.random.default_rng(SEED + 1)
    rows = []
    for batch in [b for b in batches if b <= runtime.max_batch_size]:
        inputs = [random_inputs(runtime.spec, batch, rng) for _ in range(4)]
        tasks = ['pick'] * batch
        plain = timed(lambda x: runtime.infer(x, tasks, [None] * batch), inputs, passes)
        chunk = runtime.infer(inputs[0], tasks)[0]
        prefixes = [Prefix(chunk + 0.1, 5)] * batch
        runtime.infer(inputs[0], tasks, prefixes)   # the guided graph's warm-up
        guided = timed(lambda x: runtime.infer(x, tasks, prefixes), inputs, passes)
        rows.append(dict(model=kind, batch=batch, plain=percentiles(plain),
                         guided=percentiles(guided), how=runtime.kind))
    runtime.close()
    return rows


def compare_rows(directory, kinds, smoke_run):
    """Serve folders saved by the installed LeRobot and compare with its own chunk."""
    import lerobot_checkpoints as checkpoints
    import torch
    from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
    from remote_inference_py.policy_server.loading import load_runtime
    from remote_inference_py.policy_server.runtimes import RuntimeOptions
    version, gate = lerobot_version()
    gate = ' (gate lifted)' if gate else ''
    rows = []
    devices = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
    for kind in kinds:
        try:
            extra = {} if smoke_run or kind != 'act' else ACT_DEFAULTS
            size = {'backbone_size': 'tiny' if smoke_run else 'published'} \
                if kind == 'smolvla' else {}
            folder = checkpoints.make_checkpoint(pathlib.Path(directory) / f'saved_{kind}',
                                                 kind, **extra, **size)
            sample = [checkpoints.observation(1, reach=0.5)]
            expected = checkpoints.lerobot_chunk(folder, sample, SEED, 'pick up the red cube')
            for device in devices:
                os.environ[SEED_VARIABLE] = str(SEED)
                runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0,
                                                      device=device))
                got = checkpoints.served_chunk(runtime, sample, 'pick up the red cube',
                                               timeout=120.0)
                runtime.close()
                difference = float(np.abs(got - expected).max())
                rows.append(dict(model=kind, version=version + gate, device=device,
                                 shape=list(got.shape), difference=difference,
                                 agree=difference < COMPARE_TOLERANCE))
        except Exception as error:  # noqa: B902 - a failed cell is reported, not fatal
            rows.append(dict(model=kind, version=version + gate, device='-', shape=[],
                             difference=float('nan'), agree=False,
                             note=f'failed: {first_line(error)}'))
            traceback.print_exc()
    return rows


def lerobot_version():
    """Return (the installed LeRobot's version, a note when the server's gate was lifted).

    The server refuses LeRobot 0.5 and later (policy_server/lerobot_import.py). This benchmark
    is how we learn whether that refusal can go, so in its own process only it lifts it for
    the installed version and says so in its output. ('not installed', '') without LeRobot.
    """
    from remote_inference_py.policy_server import lerobot_import
    try:
        lerobot_import.import_torchvision()
    except ImportError:
        pass
    try:
        import lerobot
    except ImportError:
        return 'not installed', ''
    version = str(getattr(lerobot, '__version__', '') or '?')
    if lerobot_import.parse_version(version)[:2] == lerobot_import.SUPPORTED_SERIES:
        return version, ''
    lerobot_import.check_version = lambda _version: None
    return version, ("the server's LeRobot version gate (tested "
                     f'{lerobot_import.TESTED_VERSION}) is lifted in this process to serve '
                     f'with {version}')


def first_line(error):
    """Return the type and first line of an error."""
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ''
    return f'{type(error).__name__}: {text}'


def fmt(value, digits=1):
    """Format a number, or '-' for None/NaN."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return '-'
    return f'{value:.{digits}f}'


def serving_table(rows):
    """Return the serving table (markdown lines)."""
    lines = ['| model | params M | dtype | compile | load s | warm-up s | batch | ours p50 ms | '
             'ours p99 ms | LeRobot p50 ms | ours / LeRobot | GPU MB | note |',
             '|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|']
    for row in rows:
        ours = row.get('ours') or (None, None)
        theirs = row.get('lerobot') or (None, None)
        ratio = ours[0] / theirs[0] if ours[0] and theirs[0] else None
        lines.append(
            f'| {row["model"]} | {fmt(row.get("params"))} | {row["dtype"]} | '
            f'{"on" if row["compile"] else "off"} | {fmt(row.get("load_s"))} | '
            f'{fmt(row.get("warm_s"))} | {row["batch"]} | {fmt(ours[0], 2)} | '
            f'{fmt(ours[1], 2)} | {fmt(theirs[0], 2)} | {fmt(ratio, 2)} | '
            f'{fmt(row.get("gpu_mb"), 0)} | {row.get("note", "")} |')
    return lines


def guidance_table(rows):
    """Return the guidance table (markdown lines)."""
    lines = ['| model | batch | plain p50 ms | guided p50 ms | guided p99 ms | guided / plain |'
             ' note |', '|---|---:|---:|---:|---:|---:|---|']
    for row in rows:
        plain, guided = row.get('plain') or (None, None), row.get('guided') or (None, None)
        ratio = guided[0] / plain[0] if plain[0] and guided[0] else None
        lines.append(f'| {row["model"]} | {row.get("batch", "-")} | {fmt(plain[0], 2)} | '
                     f'{fmt(guided[0], 2)} | {fmt(guided[1], 2)} | {fmt(ratio, 2)} | '
                     f'{row.get("note", "")} |')
    return lines


def compare_table(rows):
    """Return the action-for-action table (markdown lines)."""
    lines = ['| model | saved by and run with lerobot | served on | chunk | max abs difference '
             '(deg, %) | agree (< 1e-3) | note |', '|---|---|---|---|---:|---|---|']
    for row in rows:
        lines.append(f'| {row["model"]} | {row["version"]} | {row["device"]} | '
                     f'{"x".join(map(str, row["shape"])) or "-"} | '
                     f'{fmt(row["difference"], 6)} | {"yes" if row["agree"] else "no"} | '
                     f'{row.get("note", "")} |')
    return lines


def describe_device():
    """Return a line naming the machine, torch and the GPU."""
    import torch
    gpu = (f'{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda}, '
           f'{torch.cuda.get_device_properties(0).total_memory / 2 ** 30:.0f} GiB)'
           if torch.cuda.is_available() else 'no GPU (CPU)')
    try:
        import lerobot
        lerobot_version = lerobot.__version__
    except ImportError:
        lerobot_version = 'not installed'
    return (f'{gpu}; torch {torch.__version__}; Python {platform.python_version()}; lerobot '
            f'{lerobot_version}; {os.cpu_count()} CPU cores')


def write(options, command, started, gate, serving, guidance, compared, final=False):
    """Write the tables so far to gpu.md (and gpu.json); print them when ``final``.

    Rewritten after every stage, so a run stopped from outside leaves what it measured.
    """
    took = time.monotonic() - started
    title = ' (smoke run: numbers meaningless)' if options.smoke else ''
    state = '' if final else ' (partial: the run was stopped before its end)'
    lines = [f'# The policy server on a GPU{title}', '',
             f'- device: {describe_device()}', *([f'- {gate}'] if gate else []),
             f'- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC',
             f'- command: `{command}` ({took:.0f} s{state})', '',
             "## Serving: load, warm-up, forward pass (ours: the runtime's infer; LeRobot: its "
             'own preprocessor, policy and postprocessor on the same device and inputs)', '',
             *serving_table(serving), '',
             '## Real-time chunking: a guided chunk against a plain one', '',
             *guidance_table(guidance), '',
             '## A folder saved by the installed LeRobot, served by ours, against its own chunk',
             '', *compare_table(compared), '']
    text = '\n'.join(lines)
    out = options.results / 'gpu.md'
    out.write_text(text)
    (out.parent / 'gpu.json').write_text(json.dumps(
        dict(serving=serving, guidance=guidance, compared=compared), default=str, indent=1))
    if final:
        print(text, flush=True)
        print(f'bench_gpu: wrote {out}', file=sys.stderr)


def main(argv=None):
    """Measure the cells in priority order within the budget; print and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--models', nargs='+', default=list(MODELS), choices=MODELS)
    parser.add_argument('--dtypes', nargs='+', default=['float32', 'bfloat16'],
                        choices=['float32', 'bfloat16', 'float16'])
    parser.add_argument('--compile', choices=('off', 'on', 'both'), default='both',
                        help='cells without and/or with torch.compile (compiled cells last)')
    parser.add_argument('--batches', nargs='+', type=int, default=[1, 4, 8])
    parser.add_argument('--passes', type=int, default=50, help='timed passes per cell')
    parser.add_argument('--budget-s', type=float, default=480.0,
                        help='stop starting cells after this long (the device allows 600 s)')
    parser.add_argument('--compare', nargs='*', default=['act', 'smolvla'],
                        help='models saved by the installed LeRobot and compared action for '
                        'action (none: skip)')
    parser.add_argument('--work-dir', default='', help='where checkpoints are written')
    options = smoke.parse_args(parser, argv, models=['act', 'flow'], batches=[1, 2],
                               passes=3, compile='off', compare=['act'], budget_s=120.0)
    import torch
    if not options.smoke and not torch.cuda.is_available():
        print('bench_gpu: no CUDA device: this benchmark measures a GPU (use --smoke for the '
              'CPU check of its code; docs/gpu.md)', file=sys.stderr)
        return 2
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    if options.smoke:
        torch.set_num_threads(1)
    command = ' '.join(['bench/bench_gpu.py'] + [shlex.quote(a) for a in (
        argv if argv is not None else sys.argv[1:])])
    started = time.monotonic()
    options.results = smoke.results_dir(options)
    work = pathlib.Path(options.work_dir or tempfile.mkdtemp(prefix='bench_gpu_'))
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    version, gate = lerobot_version()

    def left():
        return options.budget_s - (time.monotonic() - started)

    folders, serving, guidance, compared = {}, [], [], []
    for kind in options.models:
        try:
            began = time.perf_counter()
            folders[kind] = build(kind, work, options.smoke)
            print(f'bench_gpu: built {kind} in {time.perf_counter() - began:.1f} s', flush=True)
        except Exception as error:  # noqa: B902 - a failed model is reported, not fatal
            traceback.print_exc()
            serving.append(dict(model=kind, dtype='-', compile=False, batch='-',
                                note=f'build failed: {first_line(error)}'))
    compiles = {'off': [False], 'on': [True], 'both': [False, True]}[options.compile]
    plan = [(kind, dtype, False) for dtype in options.dtypes for kind in folders]
    late = [(kind, dtype, True) for dtype in options.dtypes for kind in folders]
    cells = (plan if False in compiles else []) + (late if True in compiles else [])
    stages = [('serve', cell) for cell in cells if not cell[2]]
    stages += [('guide', kind) for kind in folders if kind in ('flow', 'smolvla')]
    stages += [('compare', tuple(options.compare))] if options.compare else []
    stages += [('serve', cell) for cell in cells if cell[2]]
    for stage, what in stages:
        write(options, command, started, gate, serving, guidance, compared)
        if left() <= 0 or (stage == 'serve' and what[2] and left() < 60):
            note = f'skipped: the {options.budget_s:.0f} s budget was spent'
            if stage == 'serve':
                serving.append(dict(model=what[0], dtype=what[1], compile=what[2], batch='-',
                                    note=note))
            elif stage == 'guide':
                guidance.append(dict(model=what, note=note))
            else:
                compared += [dict(model=k, version='-', device='-', shape=[],
                                  difference=float('nan'), agree=False, note=note)
                             for k in what]
            continue
        print(f'bench_gpu: {stage} {what} ({left():.0f} s left)', flush=True)
        try:
            if stage == 'serve':
                kind, dtype, compiled = what
                reference = kind != 'flow' and dtype == 'float32' and not compiled
                serving += serve_cell(folders[kind], kind, dtype, compiled, options.batches,
                                      options.passes, device, reference)
            elif stage == 'guide':
                guidance += guidance_rows(folders[what], what, device, options.passes,
                                          options.batches)
            else:
                compared += compare_rows(work, what, options.smoke)
        except Exception as error:  # noqa: B902 - a failed cell is reported, not fatal
            traceback.print_exc()
            note = f'failed: {first_line(error)}'
            if stage == 'serve':
                serving.append(dict(model=what[0], dtype=what[1], compile=what[2], batch='-',
                                    note=note))
            elif stage == 'guide':
                guidance.append(dict(model=what, note=note))
    write(options, command, started, gate, serving, guidance, compared, final=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
