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
The loop closed offline: record, train with LeRobot, serve. ``./run loop --out DIR``.

1. Records ``--episodes`` runs of the simulated SO-101 with the scripted expert as the human
   on the leader arm (``./run demo --human --dataset DIR/dataset``: one episode each, appended
   to one LeRobot dataset, every frame marked ``intervention``).
2. Trains a small ACT on that dataset for ``--steps`` steps with LeRobot's own training code
   (``lerobot.scripts.lerobot_train``, in a process of its own; ``dim_model`` 64, one encoder
   and one decoder layer, chunks of ``--chunk`` steps, no pretrained backbone: nothing is
   downloaded), writing ``DIR/train/checkpoints/last/pretrained_model``.
3. Serves that folder with ``./run demo --policy FOLDER --semantics UNITS`` for ``--seconds``
   (the units the dataset was recorded in, from its ``meta/remote_inference.json``), with a
   starvation grace of :data:`SERVE_GRACE_S` (``--grace``) for a CPU host's slow passes.

The simulated camera renders at ``--camera`` (default 640x480) in the recording and the served
run alike, so the policy sees the frames it was trained on.

It must run end to end; a few training steps are not expected to pick the cube. Exit 0 when
every step ran and the served policy's chunks reached the executor; exit 1 naming the step
that failed or ran past its bound (:data:`STEP_TIMEOUT_S`, about eight times what a step takes
on a quiet 2-core machine), its processes ended with it.

Two things LeRobot 0.4.4's trainer needs that the pinned set does not install are given to its
process only: its module imports ``termcolor`` to colour log lines (a stand-in that returns the
text uncoloured), and its video decoding goes through
:func:`~remote_inference_py.analysis.dataset_writer.import_lerobot_dataset` (PyAV, as for
loading a dataset; docs/recording.md).
"""

import argparse
import json
import os
import pathlib
import re
import resource
import signal
import subprocess
import sys
import time
import types

from remote_inference_py.common.process import communicate_bounded, print_stacks_on_request
from remote_inference_py.demo import camera_size

REPO_ID = 'local/closed_loop'


STEP_TIMEOUT_S = {'record': 240.0, 'train': 400.0, 'serve': 200.0}
"""Each step's bound [s] (the serve step's adds ``--seconds``): a step that hangs is named."""

SERVE_GRACE_S = 20.0
"""The served executor's starvation grace [s] (the demo's ``--grace``). The trained ACT reads
640x480 frames through a ResNet-18 on the CPU: its first chunk took 3.7 s on a 2-core host busy
with other jobs, past the arm config's 3 s, and the run faulted before any chunk was used."""


def run(args, what, timeout_s, check=True):
    """Run a step in a process group of its own; return it done, or raise RuntimeError.

    A step still running after ``timeout_s`` prints its stacks, is ended with its whole group
    (the demo's nodes with it) and named; with ``check``, so is a step that exits non-zero.
    """
    print(f'closed_loop: {what}', flush=True)
    began, cpu = time.monotonic(), _children_cpu_s()
    process = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    stdout, stderr, ended = communicate_bounded(
        process, timeout_s, kill=lambda p: os.killpg(p.pid, signal.SIGKILL))
    if not ended:   # its stderr ends with where each of its threads was
        raise RuntimeError(f'{what} did not end within {timeout_s:.0f} s:\n{stdout[-3000:]}\n'
                           f'{stderr[-3000:]}')
    if check and process.returncode != 0:
        raise RuntimeError(f'{what} failed (exit {process.returncode}):\n{stdout[-3000:]}\n'
                           f'{stderr[-3000:]}')
    print(f'  took {time.monotonic() - began:.1f} s, {_children_cpu_s() - cpu:.1f} s of CPU',
          flush=True)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _children_cpu_s():
    """Return the CPU time [s] of the ended processes this one waited for (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def train(dataset, output, steps, chunk):
    """Train ACT with LeRobot's own training script (called in a process of its own)."""
    try:
        import termcolor  # noqa: F401 - the real one, when installed
    except ImportError:
        sys.modules['termcolor'] = types.SimpleNamespace(colored=lambda text, *a, **k: text)
    from remote_inference_py.analysis.dataset_writer import import_lerobot_dataset
    import_lerobot_dataset()
    from lerobot.scripts import lerobot_train
    sys.argv = ['lerobot-train', f'--dataset.repo_id={REPO_ID}', f'--dataset.root={dataset}',
                '--policy.type=act', '--policy.device=cpu', '--policy.push_to_hub=false',
                '--policy.dim_model=64', '--policy.n_heads=2', '--policy.dim_feedforward=128',
                '--policy.n_encoder_layers=1', '--policy.n_decoder_layers=1',
                f'--policy.chunk_size={chunk}', f'--policy.n_action_steps={chunk}',
                '--policy.pretrained_backbone_weights=null', '--policy.use_vae=false',
                f'--steps={steps}', '--batch_size=2', '--num_workers=0',
                f'--output_dir={output}', f'--save_freq={steps}', '--log_freq=1',
                '--wandb.enable=false', '--eval_freq=0']
    lerobot_train.main()


def main(argv=None):
    """Record, train, serve; exit 1 naming the step that failed."""
    print_stacks_on_request()
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--out', required=True, help='folder of the dataset, training, runs')
    parser.add_argument('--episodes', type=int, default=2, help='episodes recorded')
    parser.add_argument('--steps', type=int, default=5, help='ACT training steps')
    parser.add_argument('--chunk', type=int, default=30, help="ACT's chunk size [steps]")
    parser.add_argument('--seconds', type=float, default=5.0, help='served run [s]')
    parser.add_argument('--camera', default='640x480', metavar='WxH',
                        help='the simulated camera, recorded and served (default 640x480)')
    parser.add_argument('--train-only', action='store_true', help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    try:
        camera_size(options.camera)
    except ValueError as error:
        parser.error(str(error))
    out = pathlib.Path(options.out)
    dataset, output = out / 'dataset', out / 'train'
    if options.train_only:
        train(dataset, output, options.steps, options.chunk)
        return 0
    if output.exists():
        parser.error(f'{output} exists: name a new --out (LeRobot trains into a new folder)')
    try:
        for episode in range(options.episodes):
            said = run(['-m', 'remote_inference_py.demo', '--human', '--dataset', str(dataset),
                        '--repo-id', REPO_ID, '--camera', options.camera, '--no-video',
                        '--out', str(out / f'record_{episode}')],
                       f'recording episode {episode} with the scripted expert as the human',
                       STEP_TIMEOUT_S['record']).stdout
            print('  ' + next((line for line in said.splitlines()
                               if line.startswith('demo: dataset')), 'no dataset line'))
        run(['-m', 'remote_inference_py.evaluation.closed_loop', '--out', str(out),
             '--steps', str(options.steps), '--chunk', str(options.chunk), '--train-only'],
            f'training ACT for {options.steps} steps with LeRobot', STEP_TIMEOUT_S['train'])
        folder = output / 'checkpoints' / 'last' / 'pretrained_model'
        units = json.loads((dataset / 'meta' / 'remote_inference.json').read_text())['units']
        served = run(['-m', 'remote_inference_py.demo', '--policy', str(folder),
                      '--semantics', units['action'], '--seconds', str(options.seconds),
                      '--latency', '0.05', '--grace', str(SERVE_GRACE_S),
                      '--camera', options.camera, '--no-video', '--out', str(out / 'serve')],
                     f'serving {folder} ({units["action"]})',
                     STEP_TIMEOUT_S['serve'] + options.seconds, check=False)
        print(f'closed_loop: served {folder} ({units["action"]})')
    except (RuntimeError, OSError, KeyError, ValueError) as error:
        print(f'closed_loop: {error}', file=sys.stderr)
        return 1
    table = [line for line in served.stdout.splitlines() if line.startswith('|')]
    print('\n'.join(table))
    chunks = re.search(r'^\| requests / chunks accepted / dropped \| (\d+) / (\d+) / (\d+) \|$',
                       served.stdout, re.M)
    if not chunks or int(chunks.group(2)) + int(chunks.group(3)) == 0:
        print('closed_loop: no chunk of the served policy reached the executor:\n'
              f'{served.stdout[-2000:]}\n{served.stderr[-2000:]}', file=sys.stderr)
        return 1
    print(f'closed_loop: {chunks.group(1)} requests, {chunks.group(2)} chunks accepted, '
          f'{chunks.group(3)} dropped; logs in {out / "serve"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
