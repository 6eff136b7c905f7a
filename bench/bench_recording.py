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
Does recording a LeRobot dataset slow the control loop? Recording on and off, in one run.

Each cell is a whole ``./run demo`` of the simulated SO-101 (the scripted expert, 0.2 s of
injected inference latency, ``--seconds`` of motion), its nodes in their own processes over
DDS. Both cells render the simulated camera at ``--camera`` (640x480) and 30 Hz, so the only
difference is the dataset recorder: ``on`` adds ``--dataset`` (the recorder node subscribing
to the raw frames, writing one PNG per dispatched tick and encoding the episode's video with
LeRobot at the end; the demo's bag then also takes the camera as JPEG), ``off`` does not.
Cells alternate, ``--rounds`` of each, so a load change on the host hits both.

Per cell, from the run's bag: the ticks held and starved while moving (the executor's own
counters, ``executor/status``), the ticks it skipped (a late tick), and the tick lateness:
each ``joint_commands`` stamp after motion started against the tick grid of the executor's fps,
anchored so that the earliest tick is on time (lateness 0), p50 / p99 / max. With recording
on, also the rows the dataset got and the rows the writer dropped (the recorder's last log
line).

Run: ``./run bench recording`` (or ``python bench/bench_recording.py --rounds 3`` inside
``./run shell``). Prints a markdown table and writes bench/results/recording.md; ``--smoke``
(bench/smoke.py): one round of 2 s with a 160x120 camera.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import smoke

from remote_inference_py.analysis.bag import read_bag
from remote_inference_py.transport.values import stamp_ns

FPS = 30.0


def run_cell(record, seconds, camera, folder):
    """Run one demo; return its numbers (see the module docstring)."""
    out = folder / 'demo'
    args = [sys.executable, '-m', 'remote_inference_py.demo', '--seconds', str(seconds),
            '--no-video', '--render', '--camera', camera, '--out', str(out)]
    if record:
        args += ['--dataset', str(folder / 'dataset')]
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    env['HF_HUB_OFFLINE'] = '1'
    if os.environ.get('RI_BENCH_DOMAIN_ID'):
        env['ROS_DOMAIN_ID'] = os.environ['RI_BENCH_DOMAIN_ID']
    began = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f'demo failed ({"on" if record else "off"}):\n'
                           f'{done.stdout[-2000:]}\n{done.stderr[-2000:]}')
    topics = read_bag(out / 'bag')
    statuses = [m for _, m in topics['/executor/status']]
    moving = [m for m in statuses if m.state_name in ('RUNNING', 'WAITING')]
    last = moving[-1]
    started = next(m for m in statuses if m.state_name in ('RUNNING', 'WAITING'))
    start_ns, end_ns = stamp_ns(started.header.stamp), stamp_ns(last.header.stamp)
    stamps = np.array([stamp_ns(m.header.stamp) for _, m in topics['/joint_commands']],
                      dtype=np.int64)
    stamps = stamps[(stamps >= start_ns) & (stamps <= end_ns)]
    period = 1e9 / FPS
    offset = np.mod(stamps - stamps[0] + period / 2, period) - period / 2
    lateness = (offset - offset.min()) / 1e6
    result = {'record': 'on' if record else 'off', 'ticks': int(last.ticks),
              'held': int(last.held_ticks), 'starved': int(last.starved_ticks),
              'skipped': int(last.skipped_ticks),
              'late_p50': float(np.percentile(lateness, 50)),
              'late_p99': float(np.percentile(lateness, 99)), 'late_max': float(lateness.max()),
              'rows': '', 'dropped': '', 'wall_s': time.monotonic() - began}
    if record:
        said = re.search(r'(\d+) frames saved; .* (\d+) dropped', done.stdout)
        if said:
            result['rows'], result['dropped'] = int(said.group(1)), int(said.group(2))
    return result


def table(results):
    """Return the markdown table of the cells."""
    lines = ['| recording | ticks | held | starved | skipped | lateness p50 / p99 / max [ms] '
             '| dataset rows | dropped | wall [s] |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in results:
        lines.append(f'| {r["record"]} | {r["ticks"]} | {r["held"]} | {r["starved"]} | '
                     f'{r["skipped"]} | {r["late_p50"]:.2f} / {r["late_p99"]:.2f} / '
                     f'{r["late_max"]:.2f} | {r["rows"]} | {r["dropped"]} | '
                     f'{r["wall_s"]:.0f} |')
    return '\n'.join(lines)


def main(argv=None):
    """Run the cells, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--rounds', type=int, default=3, help='cells of each kind')
    parser.add_argument('--seconds', type=float, default=10.0, help='motion per cell [s]')
    parser.add_argument('--camera', default='640x480', metavar='WxH',
                        help='the simulated camera (default 640x480, as the demo)')
    options = smoke.parse_args(parser, argv, rounds=1, seconds=2.0, camera='160x120')
    results = []
    with tempfile.TemporaryDirectory(prefix='bench_recording_') as scratch:
        for round_ in range(options.rounds):
            for record in (False, True):
                folder = pathlib.Path(scratch) / f'{round_}_{int(record)}'
                folder.mkdir()
                results.append(run_cell(record, options.seconds, options.camera, folder))
                print(table(results[-1:]).splitlines()[-1], flush=True)
    text = table(results)
    host = (f'{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end; '
            f'{options.rounds} rounds of {options.seconds:g} s, camera {options.camera}')
    print(text)
    path = smoke.write_results(options, 'recording.md',
                               f'# Recording on and off\n\n{host}\n\n{text}\n', __file__, argv)
    print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
