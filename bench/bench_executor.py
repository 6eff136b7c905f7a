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
Executor benchmarks: core cost of validating and merging a chunk, and control tick jitter.

1. Core cost: ``ExecutorCore.on_chunk`` (validate + merge) for a 50 x 6 chunk, per merge mode,
   and ``tick()``; target <= 0.2 ms per chunk.
2. Tick jitter: the installed executor node at 30, 100 and 200 Hz while chunks arrive at the
   refill cadence (scripted policy server, kinematic arm, real DDS), with and without a busy
   loop on the other core. The node measures its own tick periods and publishes p50/p99/max on
   ``executor/status``; target p99 <= 1 ms off the nominal period at 100 Hz, no missed ticks.
   The tick runs on the node's own control thread (``common/ticker.py``) while rclpy's
   EventsExecutor handles its messages, as shipped; at 100 Hz also with the
   SingleThreadedExecutor for the messages (``REMOTE_INFERENCE_ROS_EXECUTOR=single``).

Run: ``./run bench executor`` (or ``python bench/bench_executor.py`` inside ``./run shell``).
Prints markdown tables and writes bench/results/executor.md; ``--smoke`` (bench/smoke.py): one
short idle run at 30 Hz.
"""

import argparse
import multiprocessing
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import smoke

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.core import Chunk, ExecutorCore
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

BENCH = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent / 'test'), str(BENCH.parent / 'test' / 'peers')]

JOINTS = SO101_JOINT_NAMES


def core_cost(samples=2000):
    """Time on_chunk and tick for each merge mode; return markdown rows."""
    rows = []
    rng = np.random.default_rng(0)
    for mode, blend in (('append', 0), ('aligned', 0), ('aligned', 5), ('ensemble', 0)):
        cfg = ExecutorConfig(joint_names=JOINTS, fps=30.0, chunk_merge=mode, blend_steps=blend,
                             refill_seconds=1.0, max_step_rad=10.0)
        core = ExecutorCore(cfg)
        core.on_measured(np.zeros(6))
        core.admit('bench')
        now = 0.0
        core.start(now)
        chunk_times, tick_times = [], []
        names = tuple(reversed(JOINTS))  # columns reordered by name on every chunk
        while len(chunk_times) < samples:
            t0 = time.perf_counter()
            out = core.tick(now)
            tick_times.append(time.perf_counter() - t0)
            if out.request is not None:
                positions = rng.uniform(-0.5, 0.5, (50, 6)).astype(np.float32)
                chunk = Chunk('bench', out.request.request_id, now, names, 1 / 30,
                              positions)
                t0 = time.perf_counter()
                verdict = core.on_chunk(chunk, now + 0.001)
                chunk_times.append(time.perf_counter() - t0)
                assert verdict.accepted, verdict.reason
            now += 1 / 30
        c = np.array(chunk_times) * 1e3
        t = np.array(tick_times) * 1e3
        label = mode + (f' + blend {blend}' if blend else '')
        rows.append(f'| {label} | {np.percentile(c, 50):.3f} | {np.percentile(c, 99):.3f} | '
                    f'{np.percentile(t, 50):.4f} | {np.percentile(t, 99):.4f} |')
    return rows


def _burn(seconds):
    os.sched_setaffinity(0, {1 % os.cpu_count()})
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


def tick_jitter(fps, load, seconds, spin='events'):
    """Run the executor node (spinning ``spin``) at fps for seconds; return its status."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from remote_inference.msg import ExecutorStatus
    from ros_fixtures import NodeProcess, Spinner

    from remote_inference_py.transport import qos

    log_dir = pathlib.Path(tempfile.mkdtemp(prefix=f'bench_exec_{int(fps)}_'))
    burner = None
    if load:
        burner = multiprocessing.Process(target=_burn, args=(seconds + 15,), daemon=True)
        burner.start()
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('bench_executor', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = Spinner(executor)
    statuses = []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    procs = [
        NodeProcess.peer('fake_arm.py', log_dir, params={'log_commands': False},
                         node_name='fake_arm'),
        NodeProcess.peer('scripted_server.py', log_dir,
                         params={'fps': float(fps), 'chunk_length': 50, 'delay_s': 0.05},
                         node_name='scripted_server'),
        NodeProcess.console_script('executor', log_dir, node_name='executor', params={
            'deployment': 'test', 'autostart': True, 'fps': float(fps),
            'refill_seconds': 0.2, 'max_step_rad': 1.0},
            env=dict(os.environ, REMOTE_INFERENCE_ROS_EXECUTOR=spin)),
    ]
    try:
        spinner.until(lambda: statuses and statuses[-1].state_name == 'RUNNING', 30,
                      'executor running')
        first = statuses[-1]
        spinner.spin_for(seconds)
        last = statuses[-1]
    finally:
        for proc in reversed(procs):
            proc.stop()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        if burner is not None:
            burner.terminate()
            burner.join()
    period = 1.0 / fps
    return {
        'fps': fps, 'load': load, 'ticks': last.ticks - first.ticks,
        'p50_ms': (last.tick_period_p50_s - period) * 1e3,
        'p99_ms': (last.tick_period_p99_s - period) * 1e3,
        'max_ms': (last.tick_period_max_s - period) * 1e3,
        'skipped': last.skipped_ticks - first.skipped_ticks,
        'starved': last.starved_ticks - first.starved_ticks,
        'chunks': last.chunks_accepted - first.chunks_accepted,
    }


def main(argv=None):
    """Run both benchmarks, print the tables and write bench/results/executor.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=8.0,
                        help='duration of each jitter run [s]')
    parser.add_argument('--rates', type=float, nargs='+', default=[30.0, 100.0, 200.0])
    parser.add_argument('--samples', type=int, default=2000,
                        help='chunks timed per merge mode in the core cost')
    parser.add_argument('--other-core', nargs='+', choices=('idle', 'busy'),
                        default=['idle', 'busy'], help='runs without and with a busy loop')
    options = smoke.parse_args(parser, argv, seconds=1.0, rates=[30.0], samples=20,
                               other_core=['idle'])
    os.environ.setdefault('ROS_DOMAIN_ID', str(150 + os.getpid() % 50))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'

    lines = ['## Executor core cost (50 x 6 chunk, columns reordered by name)', '',
             '| merge | on_chunk p50 [ms] | on_chunk p99 [ms] | tick p50 [ms] | tick p99 [ms] |',
             '|---|---|---|---|---|']
    lines += core_cost(options.samples)
    lines += ['', '## Executor node tick period error (measured period minus nominal)', '',
              '| rate [Hz] | rclpy executor (messages) | other core | ticks | p50 [ms] | '
              'p99 [ms] | max [ms] | missed ticks | starved ticks | chunks |',
              '|---|---|---|---|---|---|---|---|---|---|']
    # As shipped (EventsExecutor) at every rate; the SingleThreadedExecutor at 100 Hz.
    runs = [(fps, 'events') for fps in options.rates]
    if 100.0 in options.rates:
        runs.insert(runs.index((100.0, 'events')) + 1, (100.0, 'single'))
    for fps, spin in runs:
        for load in (other == 'busy' for other in options.other_core):
            r = tick_jitter(fps, load, options.seconds, spin)
            lines.append(f'| {fps:.0f} | {spin} | {"busy loop" if load else "idle"} | '
                         f'{r["ticks"]} | {r["p50_ms"]:+.3f} | {r["p99_ms"]:+.3f} | '
                         f'{r["max_ms"]:+.3f} | {r["skipped"]} | {r["starved"]} | '
                         f'{r["chunks"]} |')
    text = '\n'.join(lines)
    print(text)
    smoke.write_results(options, 'executor.md',
                        f'# Executor benchmark\n\n{os.cpu_count()} cores\n\n{text}\n',
                        __file__, argv)


if __name__ == '__main__':
    main()
