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
Multi-robot serving: N robots in namespaces against one policy server, batching on and off.

One installed ``policy_server`` serves N in {1, 2, 4, 8} robots (``robot_namespaces:
[/robot1, ...]``, ``max_clients: N``) with a small CPU model with random weights (a strided
conv encoder on the 3x48x64 image plus an MLP on the six joints, 50 x 6 actions; about 3 ms
per forward pass at batch 1 on one core here), exported with ``save_pt2`` and a manifest to a
temporary folder. ``max_batch_size`` 8 (batching on) or 1 (off).

Each robot is the real ``executor`` node in its namespace, against stand-ins for the hardware
(``bench/multi_standins.py``, one process for all namespaces: the tests' kinematic arm
``test/peers/fake_arm.py`` at 50 Hz and a fixed 64x48 rgb8 frame at 30 Hz per namespace),
because eight MuJoCo simulations do not fit on two cores. The executors ask for chunks as
fast as they are answered (``refill_seconds`` 2.0, longer than a chunk, so a new request goes
out as soon as the previous one is answered; at most one in flight per robot). An executor
sends requests from its control tick, so one robot asks at most 30 times a second: at small N
the rate is bounded by that demand, at larger N by the server.

This process listens to every robot's ``policy/request`` and ``policy/chunk``: turnaround =
chunk received here minus the request's send stamp (the executor's clock; one host). Over the
measured window (requests sent in it, after every robot has three chunks and one more
second): total inferences per second, per-robot turnaround p50 / p99 (pooled over robots;
and the worst robot's p99), forward passes (chunks of one pass share their ``inference_ms``)
and the mean batch size. Every server, executor and stand-in is restarted for each cell.

The server runs with ``OMP_NUM_THREADS=1`` (``--torch-threads``; 0 keeps torch's default of
one thread per core). On this shared 2-core machine, with other jobs on the other core, a
batch-1 forward pass of models like this one took 50-100 ms with two torch threads instead of
0.3-3 ms with one (a stand-alone loop), and at N = 8 with batching the turnaround p99 was
570 ms with two threads against 179 ms with one (p50 44 vs 56 ms; separate runs, load 4-5).

Run: ``./run bench multi_robot`` (or ``python bench/bench_multi_robot.py --seconds 8`` inside
``./run shell``). Prints a markdown table and writes bench/results/multi_robot.md and
bench/results/multi_robot.png; ``--smoke`` (bench/smoke.py):
one robot with batching on for a second.
"""

import argparse
import os
import pathlib
import platform
import random
import signal
import sys
import tempfile
import time

import numpy as np
import smoke

from remote_inference_py.bringup import param_args
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport.values import stamp_ns

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test')]
CONFIG = ROOT / 'config' / 'so101_sim.yaml'

COUNTS = (1, 2, 4, 8)
BATCHING = {'on': 8, 'off': 1}
JOINTS = SO101_JOINT_NAMES
NAMES = [f'{joint}.pos' for joint in JOINTS]
SEMANTICS = 'si-radians-v1'
WIDTH = 96   # channels of the first conv layer: ~3 ms per forward pass at batch 1
EXECUTOR = {'autostart': True, 'semantics': SEMANTICS, 'refill_seconds': 2.0,
            'return_to_initial_position': False}


def manifest():
    """Return the manifest: six joints in SI radians and one 48x64 rgb8 camera."""
    return {
        'format_version': 1, 'policy': 'multi-robot-bench', 'semantics': SEMANTICS,
        'fps': 30.0, 'chunk_length': 50, 'max_batch_size': max(BATCHING.values()),
        'action': {'names': NAMES},
        'features': [
            {'name': 'observation.state', 'kind': 'state', 'shape': [6], 'dtype': 'float32',
             'names': NAMES},
            {'name': 'observation.images.front', 'kind': 'rgb', 'shape': [48, 64, 3],
             'dtype': 'uint8', 'model_shape': [3, 48, 64]},
        ]}


def export_model(directory):
    """Build the small policy with random weights and save it as .pt2 + manifest."""
    import torch

    from remote_inference_py.policy_server.export import save_pt2
    from remote_inference_py.policy_server.manifest import spec_from_dict

    class Policy(torch.nn.Module):
        """Conv encoder (3x48x64 -> 256) + joint embedding + MLP head -> 50 x 6 in +-0.3 rad."""

        def __init__(self, width):
            super().__init__()
            torch.manual_seed(0)
            self.encoder = torch.nn.Sequential(
                torch.nn.Conv2d(3, width, 3, stride=2, padding=1), torch.nn.ReLU(),
                torch.nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), torch.nn.ReLU(),
                torch.nn.Conv2d(2 * width, 4 * width, 3, stride=2, padding=1), torch.nn.ReLU(),
                torch.nn.Flatten(), torch.nn.Linear(4 * width * 6 * 8, 256), torch.nn.ReLU())
            self.state = torch.nn.Linear(6, 64)
            self.head = torch.nn.Sequential(torch.nn.Linear(256 + 64, 256), torch.nn.ReLU(),
                                            torch.nn.Linear(256, 50 * 6))

        def forward(self, state, image):
            hidden = torch.cat([self.encoder(image), torch.tanh(self.state(state))], dim=1)
            return 0.3 * torch.tanh(self.head(hidden)).reshape(-1, 50, 6)

    model = Policy(WIDTH).eval()
    path = save_pt2(model, spec_from_dict(manifest(), 'multi-robot benchmark policy'),
                    pathlib.Path(directory) / 'multi_policy.pt2')
    inputs = (torch.zeros(1, 6), torch.zeros(1, 3, 48, 64))
    with torch.no_grad():
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        for _ in range(5):
            model(*inputs)
        began = time.perf_counter()
        for _ in range(20):
            model(*inputs)
        forward_ms = (time.perf_counter() - began) / 20 * 1e3
        torch.set_num_threads(threads)
    return path, forward_ms


def cpu_seconds(pid):
    """User + system CPU time of a process so far [s] (0 when it is gone)."""
    try:
        fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class Watch:
    """Requests, chunks and executor statuses of every robot, seen from this process."""

    def __init__(self, namespaces):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from remote_inference.msg import ActionChunk, ExecutorStatus, InferenceRequest
        from ros_fixtures import Spinner

        from remote_inference_py.transport import qos

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_multi_robot', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.spinner = Spinner(self.executor)
        self.sent = {ns: {} for ns in namespaces}       # request id -> send stamp [ns]
        self.answered = {ns: {} for ns in namespaces}   # request id -> (receive ns, chunk)
        self.status = {}
        for ns in namespaces:
            self.node.create_subscription(
                InferenceRequest, f'{ns}/policy/request',
                lambda m, ns=ns: self.sent[ns].setdefault(
                    m.request_id, stamp_ns(m.header.stamp)),
                qos.COMMANDS)
            self.node.create_subscription(
                ActionChunk, f'{ns}/policy/chunk',
                lambda m, ns=ns: self.answered[ns].setdefault(m.request_id, (time.time_ns(), m)),
                qos.CHUNKS)
            self.node.create_subscription(
                ExecutorStatus, f'{ns}/executor/status',
                lambda m, ns=ns: self.status.__setitem__(ns, m), qos.LATCHED)

    def all_running(self, chunks):
        """Return True when every executor runs and has accepted ``chunks`` chunks."""
        return len(self.status) == len(self.sent) and all(
            s.state_name == 'RUNNING' and s.chunks_accepted >= chunks
            for s in self.status.values())

    def close(self):
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def run_cell(count, batching, model_path, options, log_dir):
    """Start server, stand-ins and ``count`` executors; measure; stop; return the numbers."""
    from ros_fixtures import NodeProcess
    namespaces = [f'/robot{i + 1}' for i in range(count)]
    cell_dir = log_dir / f'n{count}_batch_{batching}'
    server_env = os.environ.copy()
    if options.torch_threads > 0:
        server_env['OMP_NUM_THREADS'] = str(options.torch_threads)
    watch = Watch(namespaces)
    procs = []
    try:
        server = NodeProcess.console_script(
            'policy_server', cell_dir, node_name='policy_server', env=server_env, params={
                'deployment': 'so101', 'policy_type': 'torch_export',
                'checkpoint': str(model_path), 'semantics': SEMANTICS,
                'robot_namespaces': namespaces, 'max_clients': count,
                'max_batch_size': BATCHING[batching], 'extra_latency_s': 0.0})
        procs.append(server)
        standins = NodeProcess([sys.executable, str(BENCH / 'multi_standins.py')] + namespaces,
                               cell_dir / 'multi_standins.log')
        procs.append(standins)
        server.wait_for_output('Policy server ready', 120, watch.spinner)
        standins.wait_for_output('stand-ins ready', 60, watch.spinner)
        executors = []
        for ns in namespaces:
            executors.append(NodeProcess.console_script(
                'executor', cell_dir / ns.strip('/'), params=str(CONFIG), node_name='executor',
                namespace=ns, ros_args=param_args(EXECUTOR)))
        procs[:0] = executors
        watch.spinner.until(lambda: watch.all_running(3) or any(
            p.proc.poll() is not None for p in procs), 120, f'{count} robots running')
        dead = [p.argv[0] for p in procs if p.proc.poll() is not None]
        if dead:
            raise RuntimeError(f'N={count} batching {batching}: {dead} exited; see {cell_dir}')
        before = {ns: watch.status[ns] for ns in namespaces}
        watch.spinner.spin_for(1.0)
        groups = {'server': [server.pid], 'robots': [p.pid for p in executors + [standins]],
                  'bench': [os.getpid()]}
        cpu = {k: sum(cpu_seconds(pid) for pid in pids) for k, pids in groups.items()}
        start_ns = time.time_ns()
        watch.spinner.spin_for(options.seconds)
        end_ns = time.time_ns()
        cpu = {k: (sum(cpu_seconds(pid) for pid in pids) - cpu[k]) / options.seconds * 100
               for k, pids in groups.items()}
        after = {ns: watch.status[ns] for ns in namespaces}
        watch.spinner.spin_for(0.5)   # answers to the last requests of the window
        load = os.getloadavg()[0]
    finally:
        for proc in procs:            # executors first, then stand-ins and server
            if proc.proc.poll() is None:
                proc.proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.stop(timeout=30)
            except AssertionError as error:
                print(f'warning: {error}', file=sys.stderr)
        watch.close()
    turnaround, per_robot_p99, chunks, errors = [], [], [], 0
    for ns in namespaces:
        mine = []
        for request_id, sent_ns in watch.sent[ns].items():
            if not start_ns <= sent_ns < end_ns or request_id not in watch.answered[ns]:
                continue
            received_ns, chunk = watch.answered[ns][request_id]
            if chunk.error:
                errors += 1
                continue
            mine.append((received_ns - sent_ns) * 1e-6)
            chunks.append(chunk)
        turnaround += mine
        if mine:
            per_robot_p99.append(float(np.percentile(mine, 99)))
    seconds = (end_ns - start_ns) * 1e-9
    passes = len({c.inference_ms for c in chunks})
    return {
        'count': count, 'batching': batching, 'seconds': seconds,
        'rate': len(chunks) / seconds, 'errors': errors,
        'p50': float(np.percentile(turnaround, 50)) if turnaround else float('nan'),
        'p99': float(np.percentile(turnaround, 99)) if turnaround else float('nan'),
        'worst_p99': max(per_robot_p99) if per_robot_p99 else float('nan'),
        'passes': passes, 'mean_batch': len(chunks) / passes if passes else float('nan'),
        'inference_ms': float(np.median([c.inference_ms for c in chunks])) if chunks else
        float('nan'),
        'starved': sum(after[ns].starved_ticks - before[ns].starved_ticks for ns in namespaces),
        'dropped': sum(after[ns].chunks_dropped - before[ns].chunks_dropped
                       for ns in namespaces),
        'load': load, 'cpu': cpu,
    }


def table(rows):
    """Markdown table with the batching-on/off ratio at the same N."""
    off = {r['count']: r for r in rows if r['batching'] == 'off'}
    lines = ['| robots | batching | inferences/s | per robot /s | x batching off | '
             'turnaround p50 [ms] | p99 [ms] | worst robot p99 [ms] | mean batch | '
             'forward pass p50 [ms] | CPU server / robots / bench [%] | starved ticks | errors |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        base = off.get(r['count'])
        ratio = f'{r["rate"] / base["rate"]:.2f}' if base and base['rate'] else 'n/a'
        lines.append(
            f'| {r["count"]} | {r["batching"]} (max {BATCHING[r["batching"]]}) | '
            f'{r["rate"]:.1f} | {r["rate"] / r["count"]:.1f} | {ratio} | {r["p50"]:.1f} | '
            f'{r["p99"]:.1f} | {r["worst_p99"]:.1f} | {r["mean_batch"]:.2f} | '
            f'{r["inference_ms"]:.1f} | {r["cpu"]["server"]:.0f} / {r["cpu"]["robots"]:.0f} / '
            f'{r["cpu"]["bench"]:.0f} | '
            f'{r["starved"]} | {r["errors"] + r["dropped"]} |')
    return lines


def plot(rows, path):
    """Total inferences per second and turnaround p50/p99 against N, batching on and off."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (ax_rate, ax_time) = plt.subplots(1, 2, figsize=(11, 4.2))
    for batching, color in (('on', 'tab:blue'), ('off', 'tab:orange')):
        mine = sorted((r for r in rows if r['batching'] == batching), key=lambda r: r['count'])
        if not mine:
            continue
        counts = [r['count'] for r in mine]
        ax_rate.plot(counts, [r['rate'] for r in mine], marker='o', color=color,
                     label=f'batching {batching}')
        ax_time.plot(counts, [r['p50'] for r in mine], marker='o', color=color,
                     label=f'p50, batching {batching}')
        ax_time.plot(counts, [r['p99'] for r in mine], '--', marker='x', color=color,
                     label=f'p99, batching {batching}')
    ax_rate.plot(COUNTS, [30 * c for c in COUNTS], ':', color='grey',
                 label='demand bound: 30/s per robot')
    ax_rate.set_ylim(0, max([r['rate'] for r in rows] + [30]) * 1.3)
    ax_rate.set_ylabel('inferences per second (all robots)')
    ax_rate.set_title('server throughput, robots asking back to back')
    ax_time.set_ylabel('turnaround per request [ms]')
    ax_time.set_title('per-robot turnaround')
    for ax in (ax_rate, ax_time):
        ax.set_xlabel('robots (namespaces) on one server')
        ax.set_xscale('log', base=2)
        ax.set_xticks(COUNTS)
        ax.set_xticklabels([str(c) for c in COUNTS])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle('Multi-robot serving: one policy server, small CPU model')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    """Run every cell, print the table and write bench/results/multi_robot.md and .png."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=8.0, help='measured time per cell [s]')
    parser.add_argument('--counts', type=int, nargs='+', default=list(COUNTS))
    parser.add_argument('--batching', nargs='+', default=list(BATCHING),
                        choices=list(BATCHING))
    parser.add_argument('--torch-threads', type=int, default=1,
                        help="the server's OMP_NUM_THREADS; 0: torch's default")
    parser.add_argument('--no-write', action='store_true',
                        help='print only; leave bench/results alone')
    options = smoke.parse_args(parser, argv, seconds=1.0, counts=[1], batching=['on'])
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('RI_BENCH_DOMAIN_ID',
                                                 str(random.randint(100, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(ROOT / 'config' / 'fastdds_shm.xml')

    began = time.monotonic()
    load_before = os.getloadavg()
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix='bench_multi_robot_'))
    model_path, forward_ms = export_model(log_dir)
    print(f'multi_robot: logs and model in {log_dir}; forward pass {forward_ms:.2f} ms at batch '
          f'1 (one thread, this process)', flush=True)
    rows = []
    for index, count in enumerate(options.counts):
        # Alternate the order of the two settings so that slow drifts do not favour one.
        for batching in options.batching[::-1 if index % 2 else 1]:
            row = run_cell(count, batching, model_path, options, log_dir)
            rows.append(row)
            print(f'  N={count} batching {batching:3s}: {row["rate"]:6.1f} inferences/s, '
                  f'turnaround p50 {row["p50"]:.1f} p99 {row["p99"]:.1f} ms, mean batch '
                  f'{row["mean_batch"]:.2f}, load {row["load"]:.2f}', flush=True)
    elapsed = time.monotonic() - began
    rows.sort(key=lambda r: (r['count'], list(BATCHING).index(r['batching'])))
    loads = [r['load'] for r in rows]
    threads = (f'OMP_NUM_THREADS={options.torch_threads}' if options.torch_threads > 0
               else "torch's default threads")
    notes = [
        f'{time.strftime("%Y-%m-%d")}, {platform.node()}, {os.cpu_count()} cores, '
        f'{platform.python_version()}; whole run {elapsed:.0f} s; 1-min load average '
        f'{load_before[0]:.2f} before, {min(loads):.2f}-{max(loads):.2f} during the cells '
        '(other jobs were running on this machine).', '',
        'One `policy_server` (torch.export .pt2, random weights: conv encoder on 3x48x64 + MLP '
        f'on 6 joints -> 50 x 6; {forward_ms:.1f} ms per forward pass at batch 1 measured '
        f'in the benchmark process; {threads} in the server), `robot_namespaces` = '
        '[/robot1 .. /robotN], `max_clients` = N, `max_batch_size` 8 (on) or 1 (off). '
        'Each robot: the real `executor` node in its namespace with `refill_seconds` 2.0 '
        '(a new request as soon as the previous one is answered, at most one per control tick, '
        'i.e. 30/s per robot: at small N the rate is bounded by that demand). '
        "Robot stand-ins, not simulations: the tests' kinematic arm (`test/peers/fake_arm.py`, "
        '50 Hz) and a fixed 64x48 rgb8 frame at 30 Hz per namespace, all in one process '
        '(`bench/multi_standins.py`). Fast DDS shared-memory profile, loopback, one host.', '',
        f'{options.seconds:g} s measured per cell after every robot had three chunks; '
        "turnaround = chunk received by the benchmark process minus the request's send stamp; "
        'p50/p99 pooled over the robots\' requests; "worst robot p99" is the largest per-robot '
        'p99; "x batching off" = ratio of inferences/s to batching off at the same N; mean '
        "batch = chunks / forward passes; forward pass = the server's `inference_ms`; CPU = "
        'process CPU time over the window in % of one core (robots: executors + stand-ins; '
        "bench: this process; all share this host's two cores with the server and with other "
        'jobs, unlike a real deployment, so at N = 8 the server is short of CPU).']
    text = '\n'.join(table(rows) + [''] + notes)
    print(text)
    if not options.no_write:
        results = smoke.results_dir(options)
        png = plot(rows, results / 'multi_robot.png')
        smoke.write_results(
            options, 'multi_robot.md', '# Multi-robot serving benchmark\n\n'
            f'{text}\n\n![throughput and turnaround]({png.name})\n', __file__, argv)
        print(f'multi_robot: wrote {results / "multi_robot.md"} and {png}')
    print(f'multi_robot: {elapsed:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
