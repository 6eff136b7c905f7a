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
The main job on the embedded default: ``./run demo``.

Starts what ``bringup.launch.py`` starts (the same table, ``remote_inference_py.bringup``)
with the simulated SO-101, its simulated camera and the built-in policy, each node in its own
process over DDS; records the run to an MCAP bag; stops the executor after ``--seconds`` (it
returns the arm to its initial position); then prints the run summary and writes a plot.
"""

import argparse
import os
import pathlib
import random
import subprocess
import sys
import time

from remote_inference_py import bringup


def installed_paths():
    """Return (share dir, lib dir) of the installed remote_inference package."""
    from ament_index_python.packages import get_package_prefix, get_package_share_directory
    prefix = pathlib.Path(get_package_prefix('remote_inference'))
    return get_package_share_directory('remote_inference'), prefix / 'lib' / 'remote_inference'


def node_argv(lib_dir, node, extra):
    """Command line of one node, as launch_ros builds it."""
    argv = [str(lib_dir / node.executable), '--ros-args', '--params-file', node.params_file,
            '-r', f'__node:={node.name}']
    if node.namespace:
        argv += ['-r', f'__ns:=/{node.namespace.strip("/")}']
    return argv + bringup.param_args({**node.overrides, **extra.get(node.name, {})})


def main(argv=None):
    """Run the simulated system, record it, summarise it; exit non-zero if it failed."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=20.0,
                        help='how long the arm runs before the executor is stopped [s]')
    parser.add_argument('--latency', type=float, default=0.2,
                        help='inference latency injected in the policy server [s]')
    parser.add_argument('--merge', default='aligned', choices=['append', 'aligned', 'ensemble'])
    parser.add_argument('--synchronous', action='store_true', help='the classic loop')
    parser.add_argument('--task', default='pick up the cube')
    parser.add_argument('--out', default='', help='output folder (default runs/demo_<time>)')
    options = parser.parse_args(argv)

    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('MUJOCO_GL', 'egl')
    share, lib_dir = installed_paths()
    os.environ.setdefault('FASTDDS_DEFAULT_PROFILES_FILE',
                          os.path.join(share, 'config', 'fastdds_shm.xml'))
    out = pathlib.Path(options.out or time.strftime('runs/demo_%Y%m%d_%H%M%S'))
    out.mkdir(parents=True, exist_ok=True)

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from remote_inference.msg import ExecutorStatus

    from remote_inference_py.analysis.bag import read_bag
    from remote_inference_py.analysis.plot import plot_run
    from remote_inference_py.analysis.record import Recorder
    from remote_inference_py.analysis.summary import format_summary, summarize
    from remote_inference_py.common.node_main import STOP_WITH_PARENT_ENV
    from remote_inference_py.transport import qos

    extra = {
        'executor': {'autostart': True, 'chunk_merge': options.merge,
                     'synchronous': options.synchronous},
        'policy_server': {'extra_latency_s': options.latency},
    }
    plan = bringup.plan(side='both', backend='sim', task=options.task, share_dir=share)
    rclpy.init()
    node = rclpy.create_node('demo_recorder')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    statuses = []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    recorder = Recorder(node, out / 'bag')
    procs = {}
    print(f'demo: starting {", ".join(n.name for n in plan)} (logs in {out})', flush=True)
    for spec in plan:
        log = open(out / f'{spec.name}.log', 'wb')
        procs[spec.name] = subprocess.Popen(
            node_argv(lib_dir, spec, extra), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, STOP_WITH_PARENT_ENV: str(os.getpid())})

    def spin_until(predicate, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not predicate():
            executor.spin_once(timeout_sec=0.02)
        return predicate()

    def exited(name):
        return procs[name].poll() is not None

    executor_code = None
    try:
        running = spin_until(lambda: statuses and statuses[-1].state_name == 'RUNNING'
                             or any(p.poll() is not None for p in procs.values()), 90)
        if not running or not statuses or statuses[-1].state_name != 'RUNNING':
            dead = [n for n, p in procs.items() if p.poll() is not None]
            print(f'demo: the system did not start (exited: {dead or "none"}); see the logs '
                  f'in {out}', file=sys.stderr)
            return 1
        print(f'demo: arm moving; running for {options.seconds:.0f} s', flush=True)
        spin_until(lambda: exited('executor'), options.seconds)
        if not exited('executor'):
            procs['executor'].send_signal(subprocess.signal.SIGINT)
            print('demo: stopping: the executor returns the arm to its initial position',
                  flush=True)
        spin_until(lambda: exited('executor'), 30)
        executor_code = procs['executor'].poll()
        spin_until(lambda: False, 0.3)
    finally:
        recorder.close()
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(subprocess.signal.SIGINT)
        for name, proc in procs.items():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                print(f'demo: {name} ignored SIGINT; killed', file=sys.stderr)
        node.destroy_node()
        rclpy.try_shutdown()

    topics = read_bag(out / 'bag')
    summary = summarize(topics)
    print(format_summary(summary))
    png = plot_run(topics, out / 'run.png', title='remote_inference demo (simulated SO-101)')
    print(f'demo: plot {png}; bag {out / "bag"} (analyse again: analyze {out / "bag"})')
    ok = executor_code == 0 and summary.final_state == 'STOPPED'
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
