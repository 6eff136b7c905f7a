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
Run an episode through the real nodes over DDS, in real time.

Per episode the runner starts the three installed nodes (``hardware_interface`` with the
simulated SO-101, ``policy_server`` with the policy, ``executor``), each in its own process
with ``config/eval_sim.yaml`` plus the episode's overrides (cube seed, mode, injected
latency as the server's ``extra_latency_s``, the policy; ``autostart`` off). Once the
executor is admitted (READY) and a cube pose has arrived, the runner calls
``executor/start``, as a user would; the episode's time 0 is the executor's start, derived
from the status messages of that session. The runner watches ``sim/cube_pose`` (10 Hz) with
the same :class:`~remote_inference_py.evaluation.task.LiftMonitor` as the simulated-time
runner, ends the episode at success, at the time limit, or when the executor stops or
faults, and stops every node with SIGINT. The nodes' logs go to
``<log_dir>/<mode>_L<latency>_seed<n>/``.

A node that does not start or dies, or a system that does not start within
``startup_timeout_s``, makes the episode a crashed failure whose message names the node and
its log; the evaluation continues with the next episode.
"""

import os
import pathlib
import random
import signal
import subprocess
import time
from typing import Dict, List, Optional

from remote_inference_py.bringup import param_args
from remote_inference_py.common.service_call import RetriedCall
from remote_inference_py.evaluation.settings import (
    Configuration, EvalSettings, PolicyChoice)
from remote_inference_py.evaluation.stats import EpisodeResult
from remote_inference_py.evaluation.task import LiftMonitor, TaskConfig
from remote_inference_py.hardware.sim_scene import cube_position
from remote_inference_py.transport.values import stamp_ns

RUNNER = 'real-time'
NODE_ORDER = ('policy_server', 'hardware_interface', 'executor')
STOP_TIMEOUT_S = 15.0
ACTIVE_STATES = ('RUNNING', 'WAITING', 'STOPPING', 'STOPPED')


def installed_lib_dir() -> pathlib.Path:
    """Return lib/remote_inference of the installed package (where the nodes' scripts are)."""
    from ament_index_python.packages import get_package_prefix
    return pathlib.Path(get_package_prefix('remote_inference')) / 'lib' / 'remote_inference'


def episode_overrides(settings: EvalSettings, policy: PolicyChoice,
                      configuration: Configuration, seed: int,
                      render: bool) -> Dict[str, Dict[str, object]]:
    """Return the per-node parameter overrides of one episode."""
    executor = {key: value for key, value in settings.executor_parameters(
        configuration.mode).items() if key in ('synchronous', 'chunk_merge', 'blend_steps')}
    return {
        'hardware_interface': {'sim_cube_seed': seed, 'sim_render': render},
        'policy_server': {**policy.server_parameters,
                          'extra_latency_s': float(configuration.latency_s)},
        'executor': {**executor, 'autostart': False},
    }


def episode_name(mode: str, latency_s: float, seed: int) -> str:
    """Return the folder name of an episode's node logs: ``<mode>_L<latency>_seed<n>``."""
    return f'{mode}_L{latency_s:g}_seed{seed}'.replace('+', '_')


def node_argv(executable: List[str], node: str, params_file: str,
              overrides: Dict[str, object]) -> List[str]:
    """Return the command line of one node, as ``ros2 run`` with a params file builds it."""
    argv = list(executable) + ['--ros-args', '--params-file', params_file,
                               '-r', f'__node:={node}']
    return argv + param_args(overrides)


class RealTimeRunner:
    """Start the nodes per episode, watch the cube, stop the nodes; one rclpy context."""

    def __init__(self, settings: EvalSettings, policy: PolicyChoice, task: TaskConfig,
                 log_dir: os.PathLike, startup_timeout_s: float = 60.0,
                 env: Optional[Dict[str, str]] = None):
        """Initialise rclpy (own context) and the environment the nodes get."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.settings = settings
        self.policy = policy
        self.task = task
        self.log_dir = pathlib.Path(log_dir)
        self.startup_timeout_s = startup_timeout_s
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
        self.env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        self.env.setdefault('MUJOCO_GL', 'egl')
        # This process's own participant must be on the nodes' domain and discovery range.
        os.environ['ROS_DOMAIN_ID'] = self.env['ROS_DOMAIN_ID']
        os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = self.env['ROS_AUTOMATIC_DISCOVERY_RANGE']
        lib_dir = installed_lib_dir()
        self.executables = {node: [str(lib_dir / node)] for node in NODE_ORDER}
        self.render = self._policy_uses_camera()
        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('evaluation_monitor', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def _policy_uses_camera(self) -> bool:
        if self.policy.policy_type == 'python':
            return False
        runtime = self.policy.make_runtime()
        try:
            return any(f.is_image for f in runtime.spec.features)
        finally:
            runtime.close()

    def close(self) -> None:
        """Shut down this runner's rclpy context."""
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)

    def _spin(self, seconds: float) -> None:
        self.executor.spin_once(timeout_sec=seconds)

    def run_episode(self, configuration: Configuration, seed: int) -> EpisodeResult:
        """Run one episode through the nodes; never raises for a failed episode."""
        from geometry_msgs.msg import PoseStamped
        from remote_inference.msg import ExecutorStatus
        from remote_inference_py.transport import qos
        began = time.perf_counter()
        result = EpisodeResult(policy=self.policy.name, mode=configuration.mode,
                               latency_s=configuration.latency_s, seed=seed, runner=RUNNER,
                               cube_xy=cube_position(seed))
        logs = self.log_dir / episode_name(configuration.mode, configuration.latency_s, seed)
        logs.mkdir(parents=True, exist_ok=True)
        statuses: List = []
        poses: List = []
        status_sub = self.node.create_subscription(ExecutorStatus, 'executor/status',
                                                   statuses.append, qos.LATCHED)
        pose_sub = self.node.create_subscription(PoseStamped, 'sim/cube_pose', poses.append,
                                                 qos.JOINT_STATES)
        processes: Dict[str, subprocess.Popen] = {}
        session = ''
        overrides = episode_overrides(self.settings, self.policy, configuration, seed,
                                      self.render)
        try:
            for node in NODE_ORDER:
                log = open(logs / f'{node}.log', 'wb')
                processes[node] = subprocess.Popen(
                    node_argv(self.executables[node], node, self.settings.source,
                              overrides[node]),
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self.env, start_new_session=True)
                log.close()
            session = self._watch(result, processes, statuses, poses, logs)
        except Exception as error:  # noqa: B902 - one broken episode must not stop the matrix
            result.error = result.error or f'{type(error).__name__}: {error}'
        finally:
            self._stop(processes, result, logs)
            _fill_counters(result, [s for s in statuses if s.session_id == session])
            self.node.destroy_subscription(status_sub)
            self.node.destroy_subscription(pose_sub)
        result.wall_s = time.perf_counter() - began
        return result

    def _check_alive(self, result, processes, logs, when: str) -> bool:
        dead = [n for n, p in processes.items() if p.poll() is not None]
        if dead:
            result.error = (f'{dead[0]} exited with code {processes[dead[0]].returncode} '
                            f'{when} (log: {logs / (dead[0] + ".log")})')
        return not dead

    def _spin_until(self, predicate, result, processes, logs, what: str) -> bool:
        """Spin until predicate() holds; False (error set) on timeout or a dead node."""
        deadline = time.monotonic() + self.startup_timeout_s
        while not predicate():
            self._spin(0.05)
            if not self._check_alive(result, processes, logs, f'while {what}'):
                return False
            if time.monotonic() > deadline:
                result.error = (f'timed out after {self.startup_timeout_s:g} s {what} '
                                f'(logs: {logs})')
                return False
        return True

    def _start_executor(self, result, processes, statuses, poses, logs) -> str:
        """Wait for the executor's admission (READY) and a cube pose, call executor/start.

        Return the admitted session id ('' when the episode cannot start; error set).
        """
        from std_srvs.srv import Trigger
        if not self._spin_until(lambda: any(s.state_name == 'READY' for s in statuses),
                                result, processes, logs, 'waiting for the executor to be '
                                'admitted'):
            return ''
        session = next(s.session_id for s in statuses if s.state_name == 'READY')
        if not self._spin_until(lambda: poses, result, processes, logs,
                                'waiting for sim/cube_pose'):
            return ''
        client = self.node.create_client(Trigger, 'executor/start')
        try:
            if not self._spin_until(client.service_is_ready, result, processes, logs,
                                    'waiting for executor/start'):
                return ''
            start = RetriedCall(client, Trigger.Request)   # a lost start is asked again
            if not self._spin_until(start.answered, result, processes, logs,
                                    'calling executor/start'):
                return ''
            if not start.reply.success:
                result.error = f'executor/start refused: {start.reply.message}'
                return ''
            return session
        finally:
            self.node.destroy_client(client)

    def _watch(self, result, processes, statuses, poses, logs) -> str:
        """Start the executor, then feed the cube poses to the success monitor until the end.

        The episode's time 0 is the executor's start, estimated from every status published
        after it as ``stamp - (ticks + skipped_ticks - 1) / tick rate`` (the earliest
        estimate wins; the status right after the start tick is exact to a fraction of a
        millisecond). The result is computed again at the end from all poses with the final
        estimate. Return the executor's session id ('' if it never started).
        """
        session = self._start_executor(result, processes, statuses, poses, logs)
        if not session:
            return ''
        config = self.settings.executor_config('aligned')
        rate = config.fps * config.interpolation_multiplier
        start_ns = None

        def estimate(status):
            ticks = status.ticks + status.skipped_ticks
            return stamp_ns(status.header.stamp) - int((ticks - 1) / rate * 1e9)

        started = time.monotonic()
        used_statuses = 0
        last = None
        monitor = None
        reference_ns = 0
        used = 0
        while True:
            self._spin(0.02)
            for status in statuses[used_statuses:]:
                if status.session_id != session:
                    continue   # not from this episode's executor
                last = status
                if status.state_name in ACTIVE_STATES and status.ticks > 0:
                    value = estimate(status)
                    start_ns = value if start_ns is None else min(start_ns, value)
            used_statuses = len(statuses)
            if last is not None and last.state_name == 'FAULT':
                result.error = f'executor fault: {last.message}'
                break
            if start_ns is None:
                if not self._check_alive(result, processes, logs, 'after the start'):
                    break
                if time.monotonic() > started + self.startup_timeout_s:
                    result.error = f'no executor status after the start (logs: {logs})'
                    break
                continue
            if monitor is None:   # times from the first estimate: later ones are earlier
                monitor, reference_ns = LiftMonitor(self.task), start_ns
            for pose in poses[used:]:
                stamp = stamp_ns(pose.header.stamp)
                if stamp < reference_ns:
                    monitor.rest_z = pose.pose.position.z
                else:
                    monitor.update((stamp - reference_ns) * 1e-9, pose.pose.position.z)
            used = len(poses)
            now_ns = self.node.get_clock().now().nanoseconds
            if monitor.success or now_ns > start_ns + int(self.task.time_limit_s * 1e9):
                break
            if last is not None and last.state_name == 'STOPPED':
                break
            if not self._check_alive(result, processes, logs, 'during the episode'):
                break
        if start_ns is None:
            return session
        monitor = LiftMonitor(self.task)
        for pose in sorted(poses, key=lambda p: stamp_ns(p.header.stamp)):
            stamp = stamp_ns(pose.header.stamp)
            if stamp < start_ns:
                monitor.rest_z = pose.pose.position.z
            elif stamp - start_ns <= self.task.time_limit_s * 1e9:
                monitor.update((stamp - start_ns) * 1e-9, pose.pose.position.z)
        outcome = monitor.outcome()
        result.success = outcome.success
        result.completion_time_s = outcome.completion_time_s
        result.max_lift_m = outcome.max_lift_m
        return session

    def _stop(self, processes, result, logs) -> None:
        """Stop the executor first, then the others, each with SIGINT; kill the stubborn."""
        for node in reversed(NODE_ORDER):
            process = processes.get(node)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
            if node == 'executor':
                self._spin(0.2)
        for node in reversed(NODE_ORDER):
            process = processes.get(node)
            if process is None:
                continue
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                if not result.error:
                    result.error = f'{node} ignored SIGINT (log: {logs / (node + ".log")})'


def _fill_counters(result: EpisodeResult, statuses: List) -> None:
    """Copy the executor's counters from its last status into the result."""
    if not statuses:
        return
    last = statuses[-1]
    result.executor_state = last.state_name
    for field in ('requests', 'chunks_accepted', 'chunks_dropped', 'held_ticks',
                  'starved_ticks', 'skipped_ticks'):
        setattr(result, field, int(getattr(last, field)))
