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
Fleet throughput: N simulated robots over M policy servers, each robot choosing its server.

Each cell starts what ``fleet.launch.py robots:=N servers:=M`` starts (the same plan,
``bringup.fleet_plan``, and ``config/so101_fleet.yaml``): M ``policy_server`` processes with
the built-in demo policy on the joints (``/server_<j>``, serving every robot namespace at
``/<robot>/server_<j>/policy/...``, ``max_clients`` ceil(N / M)), and per robot the
``hardware_interface`` (the MuJoCo SO-101, no rendering) and the ``executor`` listing every
server as a candidate. ``--refill-seconds`` (default 2.0, longer than a 1.67 s chunk) makes
every executor ask again as soon as a chunk is answered, at most once per 30 Hz tick: the
demand is the most a robot can ask, and the table shows what the servers and this host
deliver. ``--refill-seconds 1.0`` is the fleet config's own cadence (about 1.5 chunks/s per
robot).

Measured per cell, over ``--seconds`` after every robot has three chunks: chunks accepted per
second (all robots, and the slowest robot), starved ticks (summed over robots), dispatched
ticks per second of the slowest robot (30 when it keeps up), how the robots spread over the
servers, and process CPU time in % of one core: all servers, and per robot (hardware
interface + executor). Every process is restarted per cell.

Run: ``./run bench fleet`` (or ``python bench/bench_fleet.py --cells 2x1 4x2`` inside
``./run shell``). Prints a markdown table and writes bench/results/fleet.md; ``--smoke``
(bench/smoke.py): one robot, one server, one second.
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

from bench_multi_robot import cpu_seconds
import smoke

from remote_inference_py import bringup
from remote_inference_py.bringup import param_args

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test')]
CONFIG = ROOT / 'config' / 'so101_fleet.yaml'
CELLS = ('1x1', '2x1', '4x1', '4x2', '6x2', '6x3')


class Watch:
    """The executor status of every robot, seen from this process."""

    def __init__(self, namespaces):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from remote_inference.msg import ExecutorStatus
        from ros_fixtures import Spinner

        from remote_inference_py.transport import qos

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_fleet', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.spinner = Spinner(self.executor)
        self.namespaces = namespaces
        self.status = {}
        for ns in namespaces:
            self.node.create_subscription(
                ExecutorStatus, f'{ns}/executor/status',
                lambda m, ns=ns: self.status.__setitem__(ns, m), qos.LATCHED)

    def all_running(self, chunks):
        """Return True when every executor runs and has accepted ``chunks`` chunks."""
        return len(self.status) == len(self.namespaces) and all(
            s.state_name == 'RUNNING' and s.chunks_accepted >= chunks
            for s in self.status.values())

    def close(self):
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def run_cell(robots, servers, options, log_dir):
    """Start the fleet of one cell; measure; stop; return the numbers."""
    from ros_fixtures import NodeProcess
    cell_dir = log_dir / f'{robots}x{servers}'
    plan = bringup.fleet_plan(robots=robots, servers=servers, config_file=str(CONFIG))
    namespaces = [n.namespace for n in plan if n.executable == 'executor']
    watch = Watch(namespaces)
    procs, server_pids, robot_pids = [], [], {ns: [] for ns in namespaces}
    began = time.monotonic()
    try:
        for node in plan:
            overrides = dict(node.overrides)
            if node.executable == 'executor':
                overrides['refill_seconds'] = options.refill_seconds
            proc = NodeProcess.console_script(
                node.executable, cell_dir / node.namespace.strip('/'), params=node.params_file,
                node_name=node.name, namespace=node.namespace, ros_args=param_args(overrides))
            procs.append(proc)
            (server_pids if node.executable == 'policy_server'
             else robot_pids[node.namespace]).append(proc.pid)
        watch.spinner.until(lambda: watch.all_running(3) or any(
            p.proc.poll() is not None for p in procs), 240, f'{robots} robots running')
        dead = [' '.join(p.argv[:1]) for p in procs if p.proc.poll() is not None]
        if dead:
            raise RuntimeError(f'{robots}x{servers}: {dead} exited; see {cell_dir}')
        admitted_s = time.monotonic() - began
        watch.spinner.spin_for(1.0)
        before = dict(watch.status)
        pids = server_pids + [p for ps in robot_pids.values() for p in ps]
        cpu = {pid: cpu_seconds(pid) for pid in pids}
        started = time.monotonic()
        watch.spinner.spin_for(options.seconds)
        seconds = time.monotonic() - started
        cpu = {pid: (cpu_seconds(pid) - cpu[pid]) / seconds * 100 for pid in pids}
        after = dict(watch.status)
        load = os.getloadavg()[0]
    finally:
        for proc in reversed(procs):   # executors before their arms, servers last
            if proc.proc.poll() is None:
                proc.proc.send_signal(signal.SIGINT)
        for proc in reversed(procs):
            try:
                proc.stop(timeout=30)
            except AssertionError as error:
                print(f'warning: {error}', file=sys.stderr)
        watch.close()
    chunks = {ns: (after[ns].chunks_accepted - before[ns].chunks_accepted) / seconds
              for ns in namespaces}
    ticks = {ns: (after[ns].dispatched_ticks - before[ns].dispatched_ticks) / seconds
             for ns in namespaces}
    spread = {}
    for ns in namespaces:
        spread[after[ns].server] = spread.get(after[ns].server, 0) + 1
    return {
        'robots': robots, 'servers': servers, 'seconds': seconds, 'admitted_s': admitted_s,
        'chunks': sum(chunks.values()), 'slowest_chunks': min(chunks.values()),
        'slowest_ticks': min(ticks.values()),
        'starved': sum(after[ns].starved_ticks - before[ns].starved_ticks for ns in namespaces),
        'dropped': sum(after[ns].chunks_dropped - before[ns].chunks_dropped
                       for ns in namespaces),
        'p50_turnaround_ms': 1e3 * max(after[ns].p50_turnaround_s for ns in namespaces),
        'spread': '/'.join(str(spread[s]) for s in sorted(spread)),
        'cpu_servers': sum(cpu[p] for p in server_pids),
        'cpu_robot': sum(cpu[p] for ps in robot_pids.values() for p in ps) / robots,
        'load': load,
    }


def table(rows):
    """Return the markdown table of the cells."""
    lines = ['| robots | servers | robots per server | chunks/s (all) | chunks/s slowest robot | '
             'ticks/s slowest robot | starved ticks | dropped chunks | worst robot turnaround '
             'p50 [ms] | CPU all servers [%] | CPU per robot [%] | start to all running [s] | '
             'load |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(
            f'| {r["robots"]} | {r["servers"]} | {r["spread"]} | {r["chunks"]:.1f} | '
            f'{r["slowest_chunks"]:.1f} | {r["slowest_ticks"]:.1f} | {r["starved"]} | '
            f'{r["dropped"]} | {r["p50_turnaround_ms"]:.0f} | {r["cpu_servers"]:.0f} | '
            f'{r["cpu_robot"]:.0f} | {r["admitted_s"]:.0f} | {r["load"]:.1f} |')
    return lines


def parse_cell(text):
    """Parse 'NxM' (robots x servers)."""
    try:
        robots, servers = (int(v) for v in text.lower().split('x'))
    except ValueError:
        raise argparse.ArgumentTypeError(f"cell {text!r} is not 'ROBOTSxSERVERS'") from None
    return robots, servers


def main(argv=None):
    """Run every cell, print the table and write bench/results/fleet.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=10.0, help='measured time per cell [s]')
    parser.add_argument('--cells', type=parse_cell, nargs='+',
                        default=[parse_cell(c) for c in CELLS], help='e.g. 2x1 4x2')
    parser.add_argument('--refill-seconds', type=float, default=2.0,
                        help="the executors' refill_seconds (2.0: ask as fast as answered)")
    parser.add_argument('--no-write', action='store_true',
                        help='print only; leave bench/results alone')
    options = smoke.parse_args(parser, argv, seconds=1.0, cells=[(1, 1)])
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('RI_BENCH_DOMAIN_ID',
                                                 str(random.randint(100, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(ROOT / 'config' / 'fastdds_shm.xml')
    began = time.monotonic()
    load_before = os.getloadavg()
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix='bench_fleet_'))
    print(f'fleet: logs in {log_dir}', flush=True)
    rows = []
    for robots, servers in options.cells:
        row = run_cell(robots, servers, options, log_dir)
        rows.append(row)
        print(f'  {robots} robots x {servers} servers: {row["chunks"]:.1f} chunks/s, '
              f'{row["starved"]} starved ticks, load {row["load"]:.1f}', flush=True)
    elapsed = time.monotonic() - began
    loads = [r['load'] for r in rows]
    notes = [
        f'{time.strftime("%Y-%m-%d")}, {platform.node()}, {os.cpu_count()} cores, '
        f'{platform.python_version()}; whole run {elapsed:.0f} s; 1-min load average '
        f'{load_before[0]:.2f} before, {min(loads):.2f}-{max(loads):.2f} during the cells '
        '(other jobs were running on this machine).', '',
        'What `fleet.launch.py robots:=N servers:=M` starts, as separate processes on this '
        'one host (Fast DDS shared-memory profile): M `policy_server` with the built-in demo '
        'policy on the joints, `max_clients` ceil(N / M); per robot the `hardware_interface` '
        '(MuJoCo SO-101, `sim_render` false) and the `executor` (`config/so101_fleet.yaml`, '
        f'`refill_seconds` {options.refill_seconds:g}, every server a candidate). '
        f'{options.seconds:g} s measured per cell after every robot had three chunks. '
        '"robots per server" = how the choice spread them (sorted by server name); ticks/s '
        'is 30 when the slowest robot keeps up; CPU = process CPU time over the window in % '
        'of one core (per robot: hardware interface + executor); "start to all running" = '
        'from the first process started to every robot running with three chunks.']
    text = '\n'.join(table(rows) + [''] + notes)
    print(text)
    if not options.no_write:
        results = smoke.results_dir(options)
        smoke.write_results(options, 'fleet.md', f'# Fleet throughput benchmark\n\n{text}\n',
                            __file__, argv)
        print(f'fleet: wrote {results / "fleet.md"}')
    print(f'fleet: {elapsed:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
