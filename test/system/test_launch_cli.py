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
The documented commands, typed as a user types them: ``ros2 launch``, ``ros2 param``,
``ros2 service call``, ``ros2 node list``; and every way a launch gets stopped.

Each stop must end with the measured pose back within 0.05 rad of the pose before motion
and no node process left 20 s later, whether launch got SIGINT from its terminal, SIGINT
without a terminal, SIGINT to its whole process group (each node then gets it twice),
SIGTERM, or SIGKILL (its nodes then stop on their own: parent-death signal).
"""

import os
import pathlib
import re
import signal
import subprocess

from camera_sources import write_video
from emulator import EmulatorProcess
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from remote_inference.msg import ExecutorStatus
from ros2_cli import Launch, node_list, ros2_or_skip, run_cli, stop_daemon
from ros_fixtures import clean_dead_segments
from sensor_msgs.msg import JointState
from timing_rules import grid_error_ticks, GRID_SLACK_TICKS, seconds, starvation_explained
import yaml

from remote_inference_py import bringup
from remote_inference_py.analysis.summary import joint_vector
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos

ROOT = pathlib.Path(__file__).resolve().parents[2]
POSE_TOLERANCE_RAD = 0.05
JOINTS = SO101_JOINT_NAMES
# Commands at 30 Hz for minutes: the observer keeps every one (qos.COMMANDS keeps 10).
ALL_COMMANDS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope='module')
def ros2():
    """The ros2 executable (skips, or fails in CI, without the tools); stops its daemon."""
    path = ros2_or_skip()
    yield path
    stop_daemon(path)


def rest_pose():
    """
    The pose the simulated arm measures before any motion: the model's initial pose after it
    settled under gravity, computed here from the same model and settings as the launched
    hardware interface (so the check does not depend on seeing the first joint_states).
    """
    from remote_inference_py.hardware.sim import SimConfig, So101Sim
    sim = So101Sim(SimConfig(joint_names=JOINTS, render=False))
    try:
        return sim.positions()
    finally:
        sim.close()


REST_POSE = rest_pose()


class Observer:
    """Watch one robot from the test process: poses, commands, executor status."""

    def __init__(self, ros, namespace=''):
        self.node, self.spinner = ros
        prefix = f'/{namespace}' if namespace else ''
        self.poses = []
        self.command_stamps = []
        self.statuses = []
        self.subscriptions = [
            self.node.create_subscription(JointState, f'{prefix}/joint_states',
                                          self._on_pose, qos.JOINT_STATES),
            self.node.create_subscription(JointState, f'{prefix}/joint_commands',
                                          self._on_command, ALL_COMMANDS),
            self.node.create_subscription(ExecutorStatus, f'{prefix}/executor/status',
                                          self.statuses.append, qos.LATCHED)]
        self.initial = REST_POSE

    def _on_pose(self, msg):
        self.poses.append(joint_vector(msg))

    def _on_command(self, msg):
        self.command_stamps.append(seconds(msg.header.stamp))

    def state(self):
        return self.statuses[-1].state_name if self.statuses else ''

    def wait_moving(self, launch, timeout=120, seconds=3.0):
        """Wait until the arm has run ``seconds`` and moved away from its initial pose."""
        started = []

        def ready():
            if launch.proc.poll() is not None:
                raise AssertionError(f'launch exited {launch.proc.returncode}:\n'
                                     f'{launch.output()[-4000:]}')
            if self.state() == 'RUNNING' and not started:
                started.append(len(self.command_stamps))
            return started and self.poses and \
                len(self.command_stamps) - started[0] >= 30 * seconds and \
                np.max(np.abs(self.poses[-1] - self.initial)) > 0.1
        try:
            self.spinner.until(ready, timeout, 'the arm moving away from its initial pose')
        except AssertionError as error:
            raise AssertionError(f'{error}: {len(self.poses)} poses, state '
                                 f'{self.state()!r}') from None
        launch.remember_children()

    def wait_stopped(self, launch, timeout=40):
        """Spin until launch's nodes are gone; return the last measured pose."""
        def gone():
            launch.remember_children()
            return not launch.alive_children(timeout=0)
        self.spinner.until(gone, timeout, 'every node process ended')
        self.spinner.spin_for(0.2)
        return self.poses[-1]

    def check_returned(self, launch):
        """
        The last measured pose is the initial one; nothing is left running; the stop (all
        that launch printed after the stop was sent) logged no error.
        """
        final = self.wait_stopped(launch)
        error = float(np.max(np.abs(final - self.initial)))
        assert error < POSE_TOLERANCE_RAD, (
            f'final pose {np.round(final, 3)} is {error:.3f} rad from the initial '
            f'{np.round(self.initial, 3)}\n{launch.output()[-6000:]}')
        assert not launch.alive_children(timeout=20.0)
        stop = launch.output()[launch.stop_mark:]
        assert 'will not resume' not in stop and '[ERROR]' not in stop, stop[-6000:]


@pytest.fixture
def launch_factory(ros2, tmp_path, request):
    """Start launches; on a failure print their output; never leave a process behind."""
    launches = []

    def start(*args, terminal=False, name='launch'):
        launch = Launch(ros2, args, tmp_path / f'{name}.log', terminal=terminal)
        launches.append(launch)
        return launch
    yield start
    report = getattr(request.node, 'report_call', None)
    for launch in launches:
        if report is not None and report.failed:
            print(f'----- {launch.log_path.name} (last 80 lines) -----')
            print('\n'.join(launch.output().splitlines()[-80:]))
        launch.close()
    clean_dead_segments()   # a launch killed with SIGKILL leaves its own DDS segments


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    """
    ``config_file:=`` the shipped sim config with a 64x48 camera at 15 Hz (the demo policy
    looking at 48x64): rendering 640x480 at 30 Hz costs a CPU core on this machine. The
    shipped config itself runs in test_ctrl_c_in_a_terminal_with_a_namespace.
    """
    config = yaml.safe_load((ROOT / 'config' / 'so101_sim.yaml').read_text())
    sections = {name.split('/')[-1]: section['ros__parameters']
                for name, section in config.items()}
    sections['hardware_interface'].update(sim_image_width=64, sim_image_height=48,
                                          sim_camera_rate_hz=15.0)
    sections['policy_server'].update(demo_image_size=[48, 64])
    path = tmp_path_factory.mktemp('config') / 'so101_sim_small.yaml'
    path.write_text(yaml.safe_dump(
        {f'/**/{node}': {'ros__parameters': values} for node, values in sections.items()}))
    return f'config_file:={path}'


def test_bringup_live_parameters_and_the_stop_service(ros2, ros, launch_factory, small):
    watch = Observer(ros)
    launch = launch_factory(small)
    watch.wait_moving(launch)
    expected = {'/executor', '/policy_server', '/hardware_interface'}
    assert expected <= node_list(ros2, expected)

    # The control grid at 30 Hz within a tick, on the executor's own stamps over ~5 s: every
    # tick is handled (a command sent) or, when the host stalled its thread past a tick,
    # counted as skipped (the ticker's rule: one late tick, then the grid); a stalled host
    # lowers the command rate, never the grid. A loaded CI run sent 23 commands/s here.
    count, first = len(watch.command_stamps), watch.statuses[-1]
    watch.spinner.until(lambda: len(watch.command_stamps) >= count + 150, 30, '150 commands')
    off = grid_error_ticks(first, watch.statuses[-1], 30)
    assert abs(off) <= GRID_SLACK_TICKS, f'the tick count {off:+.2f} off its grid'
    periods = np.diff(watch.command_stamps[count:])   # each command stamped by its own tick
    assert np.all(periods > 0.0), periods

    describe = run_cli(ros2, 'param', 'describe', '/executor', 'refill_seconds')
    assert re.search(r'Min value:\s*0\.0', describe) and re.search(r'Max value:\s*60\.0',
                                                                   describe), describe
    for typed, value in (('1.2', 1.2), ('1', 1.0)):   # users type integers for doubles
        assert 'Set parameter successful' in run_cli(
            ros2, 'param', 'set', '/executor', 'refill_seconds', typed)
        assert f'{value}' in run_cli(ros2, 'param', 'get', '/executor', 'refill_seconds')
        requests = watch.statuses[-1].requests
        watch.spinner.until(
            lambda: watch.statuses[-1].requests > requests + 1
            and abs(watch.statuses[-1].effective_refill_s - value) < 1e-6, 30,
            f'effective refill {value} s on executor/status after the next request')
    refused = run_cli(ros2, 'param', 'set', '/executor', 'refill_seconds', '-1', check=False)
    assert 'Set parameter successful' not in refused, refused

    answer = run_cli(ros2, 'service', 'call', '/executor/stop', 'std_srvs/srv/Trigger')
    assert 'success=True' in answer, answer
    watch.spinner.until(lambda: watch.state() == 'STOPPED', 30, 'executor STOPPED')
    watch.spinner.until(lambda: re.search(r'\[executor-\d+\]: process has finished cleanly',
                                          launch.output()), 20, 'the executor exiting with 0')
    watch.spinner.spin_for(1.0)   # the hardware interface holds where the return ended
    error = float(np.max(np.abs(watch.poses[-1] - watch.initial)))
    assert error < POSE_TOLERANCE_RAD, (f'{error:.3f} rad from the initial pose: '
                                        f'{watch.poses[-1]} vs {watch.initial}; first pose '
                                        f'{watch.poses[0]}')
    launch.signal(signal.SIGINT)
    assert launch.wait(timeout=40) == 0
    assert not launch.alive_children(timeout=20.0)


def test_ctrl_c_in_a_terminal_with_a_namespace(ros2, ros, launch_factory):
    watch = Observer(ros, 'robot1')
    launch = launch_factory('namespace:=robot1', terminal=True)
    watch.wait_moving(launch)
    expected = {'/robot1/executor', '/robot1/policy_server', '/robot1/hardware_interface'}
    assert expected <= node_list(ros2, expected)
    launch.ctrl_c()
    watch.check_returned(launch)
    assert launch.wait(timeout=20) == 0


def test_sigint_without_a_terminal_records_a_bag(ros2, ros, launch_factory, small, tmp_path):
    bag = tmp_path / 'bag'
    watch = Observer(ros)
    launch = launch_factory('record:=true', f'bag_dir:={bag}', small)
    watch.wait_moving(launch)
    launch.signal(signal.SIGINT)
    watch.check_returned(launch)
    assert launch.wait(timeout=20) == 0

    summary = subprocess.run([str(ROOT / 'install' / 'remote_inference' / 'lib' /
                                  'remote_inference' / 'analyze'), str(bag)],
                             capture_output=True, text=True, timeout=120)
    assert summary.returncode == 0, summary.stderr
    assert re.search(r'final state \| STOPPED', summary.stdout), summary.stdout
    # The MCAP reference reader decodes every message of the bag.
    decoded, answered = {}, set()
    files = sorted(bag.glob('*.mcap'))
    assert files, f'no MCAP file in {bag}'
    for path in files:
        with open(path, 'rb') as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, channel, _, message in reader.iter_decoded_messages():
                decoded[channel.topic] = decoded.get(channel.topic, 0) + 1
                if channel.topic == '/policy/chunk':
                    answered.add(message.request_id)
    assert decoded.get('/joint_commands', 0) > 100 and decoded.get('/policy/chunk', 0) > 2
    # From the first request on: the recorder started the executor once it had heard each
    # node writing the run (a writer matching it late lost the first chunk to the bag twice).
    assert 1 in answered, f'the answer to request 1 is not in the bag: {sorted(answered)}'
    # It kept recording through the stop: the return and the final state are in it.
    assert decoded.get('/executor/status', 0) > 0


def test_sigint_to_the_process_group_does_not_cut_the_return(ros, launch_factory, small):
    watch = Observer(ros)
    launch = launch_factory(small)
    watch.wait_moving(launch)
    launch.signal(signal.SIGINT, group=True)   # every node: once direct, once from launch
    watch.check_returned(launch)
    # A node logs 'already stopping' for the second copy only if Python ran its handler for
    # the first one before the second arrived (it runs one handler for both otherwise, as in
    # a clean-clone run); test_node_main.py sends the repeat once the stop began.
    assert launch.wait(timeout=20) == 0


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGKILL])
def test_the_nodes_stop_safely_when_launch_is_terminated_or_killed(ros, launch_factory,
                                                                   small, signum):
    watch = Observer(ros)
    launch = launch_factory(small)
    watch.wait_moving(launch)
    launch.signal(signum)
    launch.wait(timeout=20)
    watch.check_returned(launch)


def test_server_and_robot_sides_as_two_launches(ros, launch_factory, small):
    watch = Observer(ros)
    server = launch_factory('side:=server', small, name='server')
    robot = launch_factory('side:=robot', small, name='robot')
    watch.wait_moving(robot)
    server.remember_children()
    assert len(server.children) == 1 and len(robot.children) == 2
    robot.signal(signal.SIGINT)
    watch.check_returned(robot)
    server.signal(signal.SIGINT)
    assert server.wait(timeout=30) == 0
    assert not server.alive_children(timeout=20.0)


@pytest.mark.parametrize('args, named', [
    # ros2 launch itself refuses a value outside an argument's choices (launch_arguments.py).
    (['backend:=gazebo'], 'Argument "backend" provided value "gazebo" is not valid'),
    (['side:=laptop'], 'Argument "side" provided value "laptop" is not valid'),
    (['driver:=robot'], 'Argument "driver" provided value "robot" is not valid'),
    (['config_file:=/nonexistent.yaml'], "config file '/nonexistent.yaml' does not exist"),
    (['checkpoint:=/nonexistent/act.pt2'], "checkpoint '/nonexistent/act.pt2' does not exist"),
    (['backend:=feetech', 'port:=/dev/ttyNOPE'], "serial port '/dev/ttyNOPE' does not exist"),
    (['record:=true', 'bag_dir:=/'], "bag_dir '/' exists already"),
    (['discovery_server:=10.0.0.5'], "discovery_server '10.0.0.5': '10.0.0.5' is not HOST:PORT"),
])
def test_a_bad_argument_stops_the_launch_before_any_node_starts(launch_factory, args, named):
    launch = launch_factory(*args)
    code = launch.wait(timeout=60)
    output = launch.output()
    assert code != 0 and named in output, output
    assert 'process started' not in output, output


def test_discovery_server_start_runs_the_nodes_through_a_server(ros2, launch_factory):
    # A port of this test run's own (two pytest workers), above the DDS ports of our domains.
    port = 58000 + os.getpid() % 7000
    launch = launch_factory('side:=server', f'discovery_server:=start:{port}', name='server')
    client = dict(os.environ, ROS_DISCOVERY_SERVER=f'127.0.0.1:{port}')
    names = set()
    for _ in range(10):
        names = set(subprocess.run(
            [ros2, 'node', 'list', '--no-daemon', '--spin-time', '3'], capture_output=True,
            text=True, timeout=60, env=dict(client, ROS_SUPER_CLIENT='TRUE')).stdout.split())
        if '/policy_server' in names:
            break
    assert '/policy_server' in names, launch.output()
    # The node is a client of the server only: simple discovery does not find it.
    assert '/policy_server' not in run_cli(ros2, 'node', 'list', '--no-daemon', '--spin-time',
                                           '2')
    assert f'discovery through the Fast DDS discovery server at 127.0.0.1:{port}' in \
        launch.output()
    launch.remember_children()
    assert len(launch.children) == 2, launch.children   # the policy server and the server
    launch.signal(signal.SIGINT)
    assert launch.wait(timeout=30) == 0
    assert not launch.alive_children(timeout=20.0)


def test_show_args_lists_the_arguments(ros2):
    shown = run_cli(ros2, 'launch', 'remote_inference', 'bringup.launch.py', '--show-args')
    for name in ('backend', 'checkpoint', 'namespace', 'side', 'record', 'bag_dir'):
        assert f"'{name}'" in shown, shown
    # The choices come from the declarations (the hardware's backends, the executor's drivers).
    for choices in (list(bringup.BACKENDS), ['', *bringup.DRIVERS]):
        assert f'Valid choices are: {choices}' in shown, shown


def test_the_readme_setup_bash_is_sourced_by_bash(ros2):
    """``source install/setup.bash`` (docs/ros2-install.md) finds the package and its launch."""
    script = (f'set -e; source {ROOT}/install/setup.bash; ros2 pkg prefix remote_inference; '
              'ros2 launch remote_inference bringup.launch.py --show-args >/dev/null; '
              'echo sourced-ok')
    result = subprocess.run(['bash', '-c', script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and 'sourced-ok' in result.stdout, result.stderr
    assert str(ROOT / 'install' / 'remote_inference') in result.stdout


def test_a_lerobot_act_folder_through_ros2_launch(ros, launch_factory, tmp_path):
    """
    ``checkpoint:=<LeRobot folder>`` with the user's copy of the config file.

    The ACT is built and saved by LeRobot itself (random weights, chunk_size 100,
    n_action_steps 50, camera at the simulator's 48x64); the config copy sets what a LeRobot
    folder does not record (the action rate) and a small camera, as docs/ros2-install.md says.
    """
    import lerobot_checkpoints as checkpoints
    folder = checkpoints.make_checkpoint(tmp_path / 'act', 'act', image_shape=(3, 48, 64),
                                         spread=0.2)
    config = yaml.safe_load((ROOT / 'config' / 'so101_sim.yaml').read_text())
    params = {name.split('/')[-1]: section['ros__parameters']
              for name, section in config.items()}
    params['hardware_interface'].update(sim_image_width=64, sim_image_height=48,
                                        sim_camera_rate_hz=15.0)
    params['policy_server'].update(fps=30.0, warmup_iterations=1)
    # 100-step chunks (3.3 s): ask 1 s ahead, margin for a loaded 2-core host. Importing
    # LeRobot and loading the folder took over 30 s (the default admission timeout) there.
    params['executor'].update(refill_seconds=1.0, admission_timeout_s=120.0)
    config_file = tmp_path / 'my_so101.yaml'
    config_file.write_text(yaml.safe_dump(
        {f'/**/{node}': {'ros__parameters': values} for node, values in params.items()}))

    watch = Observer(ros)
    launch = launch_factory(f'checkpoint:={folder}', f'config_file:={config_file}')
    watch.wait_moving(launch, seconds=1.0)
    assert re.search(r"policy 'act' from .* chunk_length=100/100", launch.output())
    since = len(watch.statuses) - 1
    first = watch.statuses[since]
    watch.spinner.spin_for(8.0)   # a request about every 2.3 s
    last = watch.statuses[-1]
    assert last.state_name in ('RUNNING', 'WAITING'), last.message   # WAITING: starved
    # No starved tick but what the refill rule explains (test/timing_rules.py); a starve
    # drains the request in flight, and only its late chunk may be dropped.
    assert starvation_explained(watch.statuses[since:]), last.message
    assert last.chunks_accepted - first.chunks_accepted >= 2
    assert last.chunks_dropped == first.chunks_dropped or (
        last.starved_ticks > first.starved_ticks
        and last.chunks_dropped - first.chunks_dropped <= 1
        and 'drained when' in last.last_drop_reason), last.last_drop_reason
    # The real turnaround of a served LeRobot ACT: measured, not injected.
    assert 0.0 < last.p50_turnaround_s < 1.0 and last.max_turnaround_s < 2.0
    launch.signal(signal.SIGINT)
    watch.check_returned(launch)


def test_the_real_arm_with_a_camera_through_ros2_launch(ros, launch_factory, tmp_path):
    # backend:=feetech with the shipped config, the servos on the bus emulator and the
    # camera given as LeRobot's dictionary on the command line (launch must pass it on as one
    # string, not read it as YAML).
    video = write_video(tmp_path / 'front.avi', 64, 48)
    cameras = (f'{{front: {{type: opencv, index_or_path: {video}, width: 64, height: 48, '
               'fps: 30, warmup_s: 0}}')
    shafts = (850, 3400, 800, 3600, 950, 4000)   # mid-range with the default calibration
    with EmulatorProcess(positions=shafts, speed=4000.0) as emulator:
        launch = launch_factory('backend:=feetech', f'port:={emulator.port}', 'side:=robot',
                                f'cameras:={cameras}')
        node, spinner = ros
        line = f"cameras: camera 'front' ({video}) 64x48 rgb8 -> cameras/front/image_raw"
        spinner.until(lambda: line in launch.output() and 'active: torque on' in
                      launch.output(), 60, 'the camera opened and the arm active')
        launch.signal(signal.SIGINT)
        assert launch.wait(timeout=40) == 0, launch.output()
