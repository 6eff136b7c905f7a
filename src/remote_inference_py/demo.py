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
with the simulated SO-101 and a policy, each node in its own process over DDS, and records the
run to an MCAP bag. By default the policy is the scripted expert of the evaluation picking up
the cube (served by the policy server like any model, with ``--latency`` of inference latency
injected): the run ends 2 s after the cube has been held up for 1 s (at most ``--seconds``);
then the executor is stopped (it returns the arm to its initial position). From the bag it
prints the summary (did the pick succeed, and when, from the simulated cube pose; the
asynchronous execution's numbers) and writes a plot and a video of the run.

``--ask TEXT`` asks the policy while the arm works (``--ask-at`` seconds after motion
started; ``--ask-kind`` question, the default, or subtask), through the executor's
``executor/query`` action as ``ros2 action send_goal`` does, and prints the answer and how long
the arm held for it: the scripted expert answers from the simulated cube (docs/ask.md). The
video captions the question while the arm holds, then the answer.

``--human`` lets the scripted expert play the human on the leader arm (the ``expert_leader``
node publishes ``leader/joint_states``; docs/recording.md, "A human on the leader arm"): the
executor starts with ``driver`` human and follows it, rate-limited, while the policy is served
but not asked; ``--hand-back S`` hands the arm to the policy S seconds after motion started
(``executor/set_driver``), so one run holds frames of both, ``intervention`` true then false,
in ``--dataset``.

``--policy demo`` serves the built-in demo policy (a loop in joint space), ``--policy idle``
one that does nothing (the pick fails), and ``--policy PATH`` a ``.pt2`` / TorchScript
checkpoint with its manifest or a LeRobot checkpoint folder. A LeRobot folder does not record
its action rate: it runs at ``--fps`` (default: the simulated arm's rate, the executor's
``fps`` in ``config/so101_sim.yaml``), and the simulated camera publishes its default 640x480
frames, which the policy server resizes to the policy's input size. A checkpoint with a
manifest runs at the manifest's ``fps`` and the camera renders at the size it declares.
"""

import argparse
import dataclasses
import os
import pathlib
import random
import re
import subprocess
import sys
import time
from typing import Dict

from remote_inference_py import bringup
from remote_inference_py.common.process import print_stacks_on_request
from remote_inference_py.common.service_call import RetriedCall
from remote_inference_py.common.settings import declared
from remote_inference_py.executor.config import ExecutorConfig, from_parameters_file
from remote_inference_py.hardware.config import HardwareConfig

# The hardware interface's declared ranges of the simulated camera's size (--camera).
CAMERA_SETTINGS = {'width': declared(HardwareConfig)['sim_image_width'],
                   'height': declared(HardwareConfig)['sim_image_height']}
EXPERT = 'expert'
DEMO = 'demo'
IDLE = 'idle'
POLICIES = (EXPERT, DEMO, IDLE)
SI_RADIANS = 'si-radians-v1'
# How long the cube is shown held after the pick succeeded, before the stop [s].
SHOW_HELD_S = 2.0
DEFAULT_LIMIT_S = 20.0
# How long the system may take to be ready to start (the executor admitted, the recorders
# ready) [s]: every node imports and loads at once, and LeRobot alone took 30-40 s on a busy
# 2-core host. The executor's admission timeout too, so that it never gives up before the demo.
START_WAIT_S = 150.0
# How many of an exited node's last log lines the demo repeats when the system did not start.
LAST_WORDS = 3


@dataclasses.dataclass(frozen=True)
class DemoPolicy:
    """A policy the demo serves: a label and the parameters that select it, per node."""

    label: str
    overrides: Dict[str, Dict[str, object]]
    picks: bool     # meant to do the pick-the-cube task (the run ends once it is done)


def sim_rate_hz(share_dir):
    """Return the simulated arm's action rate [Hz]: the executor's fps with so101_sim.yaml."""
    config, _ = from_parameters_file(str(pathlib.Path(share_dir) / 'config' / 'so101_sim.yaml'))
    return config.fps


def demo_policy(name, fps=None, default_fps=None, semantics=''):
    """Return the :class:`DemoPolicy` called ``name``; ValueError names a bad one.

    ``fps`` [Hz] (``--fps``, else ``default_fps``, the simulated arm's rate) is the action
    rate of a LeRobot folder, which does not record it; a checkpoint with a manifest takes the
    manifest's, and ``fps``, when given, must equal it. ``semantics`` (``--semantics``) names
    the units of a LeRobot folder (default: the config file's).
    """
    from remote_inference_py.evaluation import expert
    if name in (EXPERT, IDLE):
        factory = 'expert_runtime' if name == EXPERT else 'idle_runtime'
        semantics = {'semantics': expert.SEMANTICS}
        return DemoPolicy(
            f'scripted expert (python runtime, {expert.__name__}:{factory})'
            if name == EXPERT else 'do-nothing policy (holds still)',
            {'policy_server': {'policy_type': 'python',
                               'checkpoint': f'{expert.__name__}:{factory}', **semantics},
             'executor': semantics,
             # It reads the simulated cube pose, not the camera: no rendering needed.
             'hardware_interface': {'sim_render': False}}, picks=True)
    if name == DEMO:
        return DemoPolicy('built-in demo policy (a loop in joint space)', {}, picks=False)
    path = pathlib.Path(name)
    if not path.exists():
        raise ValueError(f'policy {name!r} is neither {", ".join(POLICIES)} nor an existing '
                         'checkpoint (a .pt2 / TorchScript file with its manifest, or a LeRobot '
                         'checkpoint folder)')
    checkpoint = str(path.resolve())
    server = {'policy_type': 'auto', 'checkpoint': checkpoint}
    if path.is_dir():   # a LeRobot folder speaks the config's units; 640x480 frames resized
        fps = fps or default_fps
        if not fps:
            raise ValueError(f'policy {name!r} is a LeRobot folder, which does not record its '
                             'action rate: give --fps')
        units = {'semantics': semantics} if semantics else {}
        return DemoPolicy(f'LeRobot checkpoint {checkpoint} at {fps:g} Hz', {
            'policy_server': {**server, 'fps': float(fps), **units},
            'executor': {'fps': float(fps), **units}},
            picks=True)
    from remote_inference_py.policy_server.manifest import (
        load_manifest, ManifestError, manifest_path_for)
    try:
        spec = load_manifest(manifest_path_for(path))
    except ManifestError as error:
        raise ValueError(f'policy {name!r}: {error}') from None
    if fps and abs(fps - spec.fps) > 1e-9 * spec.fps:
        raise ValueError(f'--fps {fps:g} differs from the {spec.fps:g} Hz of the manifest of '
                         f'{name!r} (leave --fps out)')
    hardware = {'sim_render': False}
    for feature in spec.features:
        if feature.is_image:   # publish the frames at the size the policy declares
            height, width = feature.shape[:2]
            hardware = {'sim_render': True, 'sim_image_width': int(width),
                        'sim_image_height': int(height)}
    return DemoPolicy(f'checkpoint {checkpoint}', {
        'policy_server': {**server, 'semantics': spec.semantics},
        'executor': {'semantics': spec.semantics, 'fps': float(spec.fps)},
        'hardware_interface': hardware}, picks=True)


def last_words(log, count=LAST_WORDS):
    """Return the last ``count`` lines of a node's log file, indented (or why there are none)."""
    try:
        lines = log.read_text(errors='replace').splitlines()[-count:]
    except OSError as error:
        return f'  ({error.strerror}: {log})'
    return '\n'.join(f'  {line}' for line in lines) if lines else f'  ({log} is empty)'


def installed_paths():
    """Return (share dir, lib dir) of the installed remote_inference package."""
    from ament_index_python.packages import get_package_prefix, get_package_share_directory
    prefix = pathlib.Path(get_package_prefix('remote_inference'))
    return get_package_share_directory('remote_inference'), prefix / 'lib' / 'remote_inference'


def node_argv(lib_dir, node, extra):
    """Command line of one node, as launch_ros builds it."""
    argv = [str(lib_dir / node.executable), '--ros-args', '-r', f'__node:={node.name}']
    if node.params_file:
        argv += ['--params-file', node.params_file]
    if node.namespace:
        argv += ['-r', f'__ns:=/{node.namespace.strip("/")}']
    return argv + bringup.param_args({**node.overrides, **extra.get(node.name, {})})


def argument_parser():
    """Return the demo's command-line parser."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--policy', default=EXPERT,
                        help=f'{EXPERT} (default: the scripted pick), {DEMO} (the built-in '
                        f'loop), {IDLE}, or a checkpoint (.pt2 / TorchScript file with its '
                        'manifest, LeRobot folder)')
    parser.add_argument('--seconds', type=float, default=None,
                        help='how long the arm runs before the executor is stopped [s] '
                        f'(default: until the cube has been held up for {SHOW_HELD_S:g} s '
                        f'after the pick succeeded, at most {DEFAULT_LIMIT_S:g} s)')
    parser.add_argument('--latency', type=float, default=0.2,
                        help='inference latency injected in the policy server [s]')
    parser.add_argument('--grace', type=float, default=None, metavar='S',
                        help="the executor's starvation_grace_s: how long it waits for a usable "
                        "chunk before it faults (default: the arm config's, 3 s); a model whose "
                        'forward pass takes seconds on this host needs more')
    parser.add_argument('--merge', default='aligned', choices=['append', 'aligned', 'ensemble'])
    parser.add_argument('--synchronous', action='store_true', help='the classic loop')
    parser.add_argument('--fps', type=float, default=None,
                        help='action rate of a LeRobot folder [Hz] (default: the simulated '
                        "arm's, the executor's fps in config/so101_sim.yaml); a checkpoint "
                        "with a manifest runs at the manifest's")
    parser.add_argument('--semantics', default='',
                        help="units of a LeRobot folder's state and actions (default: the "
                        "config file's, LeRobot's SO-101 degrees); e.g. si-radians-v1 for a "
                        'policy trained on a dataset of the scripted expert')
    parser.add_argument('--task', default='pick up the cube')
    parser.add_argument('--ask', default='', help='ask the policy this while the arm works '
                        '(executor/query), e.g. "is the cube held?"')
    parser.add_argument('--ask-at', type=float, default=3.0,
                        help='when to ask, after motion started [s] (default 3)')
    parser.add_argument('--ask-kind', default='question', choices=['question', 'subtask'])
    parser.add_argument('--dataset', default='', metavar='FOLDER',
                        help='also record the run as a LeRobot dataset (docs/recording.md); '
                        'the bag then holds the camera as JPEG, so analyze BAG --dataset '
                        'converts it too')
    parser.add_argument('--repo-id', default='', help='repo id of --dataset (default '
                        'local/<folder name>)')
    parser.add_argument('--render', action='store_true', help='render the simulated camera '
                        'even when the policy does not read it (as --dataset does)')
    parser.add_argument('--camera', default='', metavar='WxH',
                        help='render the simulated camera at this size, e.g. 160x120 (default '
                        '640x480; a checkpoint with a manifest: the size it declares)')
    parser.add_argument('--no-video', action='store_true', help='skip the video of the run')
    parser.add_argument('--out', default='', help='output folder (default runs/demo_<time>)')
    parser.add_argument('--human', action='store_true', help='the scripted expert plays the '
                        'human on the leader arm (the executor follows it; driver human)')
    parser.add_argument('--hand-back', type=float, default=None, metavar='S',
                        help='with --human: hand the arm to the policy S s after motion '
                        'started (executor/set_driver)')
    parser.add_argument('--next-episode', type=float, default=None, metavar='S',
                        help='with --dataset: begin the next episode S s after motion started '
                        '(dataset/start_episode), as an operator would')
    return parser


def node_overrides(options, policy):
    """Return the parameters the demo sets on each node for ``options``: {node: {name: value}}.

    The executor waits for this script's start and is admitted within :data:`START_WAIT_S`
    (the script's own wait), so it never faults while the others still load.
    """
    extra = {
        # Started by this script once every topic of the bag matched and each node writing
        # them was heard (record's rule), so the bag holds the whole run from the first command.
        'executor': {'autostart': False, 'chunk_merge': options.merge,
                     'synchronous': options.synchronous, 'admission_timeout_s': START_WAIT_S},
        'policy_server': {'extra_compute_s': options.latency},   # the policy thinks this long
    }
    for name, values in policy.overrides.items():
        extra[name] = {**extra.get(name, {}), **values}
    if options.dataset:   # this script starts the executor once both recorders can record
        extra['dataset_recorder'] = {'start_executor': False}
    if options.human:   # the expert's leader arm drives from the start
        extra['executor']['driver'] = 'human'
    if options.grace is not None:
        extra['executor']['starvation_grace_s'] = options.grace
    if options.dataset or options.render:
        # A dataset holds the camera even when the policy does not read it (the expert).
        extra['hardware_interface'] = {**extra.get('hardware_interface', {}),
                                       'sim_render': True}
    if options.camera:
        width, height = camera_size(options.camera)
        extra['hardware_interface'] = {**extra.get('hardware_interface', {}),
                                       'sim_image_width': width, 'sim_image_height': height}
    return extra


def camera_size(text, policy=None):
    """Return (width, height) of ``--camera WxH``; ValueError naming what is wrong.

    A `policy` whose manifest declares its frames' size takes no other (see demo_policy).
    """
    match = re.fullmatch(r'(\d+)x(\d+)', text)
    if not match:
        raise ValueError(f'--camera takes WIDTHxHEIGHT in pixels, e.g. 160x120; got {text!r}')
    size = int(match.group(1)), int(match.group(2))
    for (name, setting), value in zip(CAMERA_SETTINGS.items(), size):
        if not setting.low <= value <= setting.high:
            raise ValueError(f'--camera {text}: the {name} must be {setting.low:g}-'
                             f'{setting.high:g} px (the range of the hardware interface)')
    hardware = policy.overrides.get('hardware_interface', {}) if policy else {}
    if 'sim_image_width' in hardware and size != (hardware['sim_image_width'],
                                                  hardware['sim_image_height']):
        raise ValueError(f'--camera {text}: {policy.label} declares its frames as '
                         f'{hardware["sim_image_width"]}x{hardware["sim_image_height"]} '
                         '(leave --camera out)')
    return size


def main(argv=None):
    """Run the simulated system, record it, summarise it; exit non-zero if it failed."""
    print_stacks_on_request()
    parser = argument_parser()
    options = parser.parse_args(argv)
    if options.fps is not None and not 0 < options.fps <= 1000:
        parser.error(f'--fps must be in (0, 1000] Hz, got {options.fps:g}')
    share, lib_dir = installed_paths()
    try:
        policy = demo_policy(options.policy, options.fps, sim_rate_hz(share),
                             options.semantics)
    except ValueError as error:
        parser.error(str(error))
    if options.semantics and not policy.label.startswith('LeRobot checkpoint'):
        parser.error('--semantics names the units of a LeRobot folder (--policy FOLDER)')
    if options.seconds is not None and not options.seconds > 0:
        parser.error(f'--seconds must be > 0, got {options.seconds:g}')
    if not 0 <= options.ask_at <= 600:
        parser.error(f'--ask-at must be between 0 and 600 s, got {options.ask_at:g}')
    if options.hand_back is not None and not (options.human and options.hand_back > 0):
        parser.error('--hand-back needs --human and a time > 0 s')
    if options.next_episode is not None and not (options.dataset and options.next_episode > 0):
        parser.error('--next-episode needs --dataset and a time > 0 s')
    if not 0 <= options.latency <= 10:
        parser.error(f'--latency must be between 0 and 10 s, got {options.latency:g}')
    if options.camera:
        try:
            camera_size(options.camera, policy)
        except ValueError as error:
            parser.error(str(error))
    grace = declared(ExecutorConfig)['starvation_grace_s']   # the executor's own range
    if options.grace is not None and not grace.low <= options.grace <= grace.high:
        parser.error(f'--grace must be between {grace.low:g} and {grace.high:g} s, got '
                     f'{options.grace:g}')

    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('MUJOCO_GL', 'egl')
    os.environ.setdefault('FASTDDS_DEFAULT_PROFILES_FILE',
                          os.path.join(share, 'config', 'fastdds_shm.xml'))
    out = pathlib.Path(options.out or time.strftime('runs/demo_%Y%m%d_%H%M%S'))
    out.mkdir(parents=True, exist_ok=True)

    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.action import ActionClient
    from remote_inference.action import Query
    from rclpy.executors import SingleThreadedExecutor
    from remote_inference.msg import ExecutorStatus
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from remote_inference_py.analysis.bag import read_bag
    from remote_inference_py.analysis.plot import plot_run
    from remote_inference_py.analysis.record import Recorder
    from remote_inference_py.analysis.summary import format_summary, summarize
    from remote_inference_py.common.node_main import destroy_bounded, STOP_WITH_PARENT_ENV
    from remote_inference_py.evaluation.task import LiftMonitor, TaskConfig
    from remote_inference_py.transport import qos
    from remote_inference_py.transport.values import stamp_ns

    extra = node_overrides(options, policy)
    try:
        plan = bringup.plan(side='both', backend='sim', task=options.task, share_dir=share,
                            record_dataset=options.dataset, dataset_repo_id=options.repo_id)
    except ValueError as error:
        print(f'demo: {error}', file=sys.stderr)
        return 2
    if options.human:   # the expert's leader arm drives from the start
        plan.append(bringup.NodeLaunch('expert_leader', 'leader_arm', '', '',
                                       {'publish_rate_hz': sim_rate_hz(share)}))
    rclpy.init()
    node = rclpy.create_node('demo_recorder')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    statuses = []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    # Success is watched live only to end the run; the summary computes it again from the bag.
    lift = LiftMonitor(TaskConfig())
    lifted_at = []

    def on_cube_pose(msg):
        if lift.update(stamp_ns(msg.header.stamp) * 1e-9,
                       msg.pose.position.z) and not lifted_at:
            lifted_at.append(time.monotonic())
    node.create_subscription(PoseStamped, 'sim/cube_pose', on_cube_pose, qos.JOINT_STATES)
    dataset_state = []   # the recorder's: 'recording' once it can record the first tick
    node.create_subscription(String, bringup.DATASET_STATE.name,
                             lambda msg: dataset_state.append(msg.data), qos.LATCHED)
    recorder = Recorder(node, out / 'bag')
    if options.dataset:
        recorder.add_topic('/cameras/front/image_raw/compressed',
                           'sensor_msgs/msg/CompressedImage', qos.IMAGES)
        recorder.add_topic('/' + bringup.DATASET_EPISODES.name, bringup.DATASET_EPISODES.type,
                           qos.LATCHED)
    procs = {}
    print(f'demo: policy: {policy.label}; inference latency {options.latency:g} s injected',
          flush=True)
    if options.human:
        print('demo: the scripted expert plays the human on the leader arm (driver human'
              + (f'; handed back to the policy at {options.hand_back:g} s)' if
                 options.hand_back is not None else ')'), flush=True)
    print(f'demo: starting {", ".join(n.name for n in plan)} (logs in {out})', flush=True)
    for spec in plan:
        log = open(out / f'{spec.name}.log', 'wb')
        procs[spec.name] = subprocess.Popen(
            node_argv(lib_dir, spec, extra), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, STOP_WITH_PARENT_ENV: str(os.getpid())})

    asker = Asker(ActionClient(node, Query, 'executor/query'), Query, options)
    from std_srvs.srv import SetBool
    timed = [CallAt(node, SetBool, 'executor/set_driver', SetBool.Request(data=False),
                    options.hand_back, 'handed back to the policy'),
             CallAt(node, Trigger, 'dataset/start_episode', Trigger.Request(),
                    options.next_episode, 'the next episode began')]

    def spin_until(predicate, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not predicate():
            executor.spin_once(timeout_sec=0.02)
            asker.poll(time.monotonic())
            for call in timed:
                call.poll(time.monotonic())
        return predicate()

    def exited(name):
        return procs[name].poll() is not None

    def any_exited():
        return any(p.poll() is not None for p in procs.values())

    def dataset_ready():
        """Return True once the dataset recorder can record the first tick (dataset/state)."""
        return not options.dataset or 'recording' in dataset_state

    def dataset_refusal():
        """Return the dataset recorder's 'refused: <why>', or ''."""
        return next((s for s in dataset_state if s.startswith('refused: ')), '')

    def bag_ready():
        return not recorder.unmatched() and not recorder.start_waits()

    def start_executor():
        """Wait for admission and recorders, start; return '' or which wait ran out."""
        waited = spin_until(lambda: statuses and statuses[-1].state_name == 'READY'
                            and bag_ready() and dataset_ready()
                            or dataset_refusal() or any_exited(), START_WAIT_S)
        if options.dataset and exited('dataset_recorder'):
            spin_until(dataset_refusal, 2.0)   # its last state may still be queued here
        if dataset_refusal():
            return f'the dataset recorder {dataset_refusal()}'
        if any_exited():
            dead = ' and '.join(n for n in procs if exited(n))
            return f'{dead} exited before the system was ready'
        if not waited:
            waits = [what for what, done in (
                ('the executor READY', statuses and statuses[-1].state_name == 'READY'),
                ("the bag's topics", bag_ready()),
                ("the dataset recorder's 'recording'", dataset_ready())) if not done]
            return f'no {", ".join(waits)} within {START_WAIT_S:g} s'
        client = node.create_client(Trigger, 'executor/start')
        if not spin_until(client.service_is_ready, 30):
            return 'no executor/start service within 30 s'
        start = RetriedCall(client, Trigger.Request)   # a lost start is asked again
        if not spin_until(start.answered, 30):
            return f'no answer from executor/start within 30 s ({start.asked} calls)'
        if not start.reply.success:
            return f'executor/start refused: {start.reply.message}'
        if not spin_until(lambda: statuses and statuses[-1].state_name in ('RUNNING', 'WAITING')
                          or any_exited(), 30) or any_exited():
            return 'the executor was not RUNNING within 30 s of its start'
        return ''

    executor_code = None
    video = None
    try:
        why = start_executor()
        if why:
            print(f'demo: the system did not start: {why}; see the logs in {out}',
                  file=sys.stderr)
            for name, proc in procs.items():
                if proc.poll() is not None:
                    print(f'demo: {name} exited {proc.returncode}; the end of its log:\n'
                          + last_words(out / f'{name}.log'), file=sys.stderr)
            return 1
        asker.started = time.monotonic()
        for call in timed:
            call.started = asker.started
        if options.seconds is not None or not policy.picks:
            limit = options.seconds or DEFAULT_LIMIT_S
            print(f'demo: arm moving; running for {limit:g} s', flush=True)
            spin_until(lambda: exited('executor'), limit)
        else:
            print(f'demo: arm moving: {options.task!r} (at most {DEFAULT_LIMIT_S:g} s)',
                  flush=True)
            spin_until(lambda: exited('executor') or lifted_at, DEFAULT_LIMIT_S)
            if lifted_at:
                print(f'demo: cube lifted and held; showing it for {SHOW_HELD_S:g} s',
                      flush=True)
                spin_until(lambda: exited('executor'),
                           lifted_at[0] + SHOW_HELD_S - time.monotonic())
        if not exited('executor'):
            procs['executor'].send_signal(subprocess.signal.SIGINT)
            print('demo: stopping: the executor returns the arm to its initial position',
                  flush=True)
        spin_until(lambda: exited('executor'), 30)
        executor_code = procs['executor'].poll()
        spin_until(lambda: False, 0.3)
    finally:
        recorder.close()
        if executor_code is not None and not options.no_video:
            # Rendered from the closed bag by a process of its own, while the nodes finish
            # and this one summarises: the robot has stopped, nothing waits for a frame.
            video = subprocess.Popen(
                [sys.executable, '-m', 'remote_inference_py.analysis.video', str(out / 'bag'),
                 '--out', str(out / 'run.webp')], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(subprocess.signal.SIGINT)
        for name, proc in procs.items():
            try:   # the dataset recorder saves its episode first: LeRobot encodes the video
                proc.wait(timeout=180 if name == 'dataset_recorder' else 20)
            except subprocess.TimeoutExpired:
                proc.kill()
                print(f'demo: {name} ignored SIGINT; killed', file=sys.stderr)
        # The nodes are done; what is left is DDS tearing this process's endpoints down, which
        # Fast DDS can deadlock (docs/tests.md). A clean-clone run's demo outlived its stopped
        # nodes until its test's 300 s timeout, most likely here. Bounded as the nodes' own
        # teardown is: named, exit 1.
        destroy_bounded(node, 1, shutdown=True)

    topics = read_bag(out / 'bag')
    summary = summarize(topics)
    print(format_summary(summary))
    png = plot_run(topics, out / 'run.png',
                   title=f'remote_inference demo: {policy.label.split(" (")[0]}, '
                   f'{options.latency:g} s inference latency')
    human = human_ticks(topics) if options.human else 0
    for line in headline(summary, options.latency, options.synchronous, human):
        print(f'demo: {line}')
    outputs = f'plot {png}'
    if video is not None:
        text = video.communicate()[0].strip()
        if video.returncode == 0:
            outputs += f'; video {out / "run.webp"}'
            for line in text.splitlines():   # the query the frames caption
                if line.startswith('video: query at'):
                    print(f'demo: the video shows the {line[len("video: "):]}')
        else:
            print(f'demo: no video: {text.splitlines()[-1] if text else "renderer failed"}',
                  file=sys.stderr)
    print(f'demo: {outputs}; bag {out / "bag"} (analyse again: analyze {out / "bag"} '
          '--video)')
    ok = executor_code == 0 and summary.final_state == 'STOPPED'
    if options.dataset:
        code = procs['dataset_recorder'].returncode
        lines = [line for line in (out / 'dataset_recorder.log').read_text(
            errors='replace').splitlines() if 'dataset' in line]
        said = lines[-1].split(']: ', 1)[-1] if lines else 'no word from the recorder'
        print(f'demo: dataset {options.dataset}: {said}'
              + ('' if code == 0 else f' (the recorder exited {code}; see '
                 f'{out / "dataset_recorder.log"})'))
        ok = ok and code == 0
    return 0 if ok else 1


class Asker:
    """Send the ``--ask`` goal to executor/query once, ``--ask-at`` s after start; print."""

    def __init__(self, client, action, options):
        """Ask through ``client`` (an ActionClient of ``action``) what ``options`` say."""
        self.client, self.action, self.options = client, action, options
        self.started = None
        self.goal = None
        self.result = None
        self.done = False

    def poll(self, now):
        """Send the goal when due, then print the result once it came."""
        options = self.options
        if not options.ask or self.started is None or self.done:
            return
        if self.goal is None and now - self.started >= options.ask_at:
            self.goal = self.client.send_goal_async(self.action.Goal(kind=options.ask_kind,
                                                                     text=options.ask))
            print(f'demo: asking the policy ({options.ask_kind}): {options.ask!r}', flush=True)
        elif self.goal is not None and self.result is None and self.goal.done():
            self.result = self.goal.result().get_result_async()
        elif self.result is not None and self.result.done():
            self.done = True
            result = self.result.result().result
            if not result.success:
                print(f'demo: the query failed: {result.message}', flush=True)
                return
            print(f'demo: the policy answered {result.answer!r}; the arm held '
                  f'{result.hold_s:.2f} s for it (answer after {result.ask_s:.2f} s, then '
                  f'{result.resume_s:.2f} s to the first target of a fresh chunk)', flush=True)


class CallAt:
    """Call a service once, ``at`` s after motion started (``--hand-back``, ``--next-episode``)."""

    def __init__(self, node, service_type, name, request, at, what):
        """Call `name` at `at` s after ``started`` is set (never with None); say `what`."""
        self.at, self.started, self.future, self.request, self.what = at, None, None, request, what
        self.client = node.create_client(service_type, name) if at else None

    def poll(self, now):
        """Call the service when due; print its answer when it came."""
        if self.client is None or self.started is None:
            return
        if self.future is None and now - self.started >= self.at:
            self.future = self.client.call_async(self.request)
        elif self.future is not None and self.future.done():
            reply, self.client = self.future.result(), None
            print(f'demo: {self.what} at {now - self.started:.2f} s: {reply.message}',
                  flush=True)


def human_ticks(topics):
    """Count the commands sent while the human drove and the leader was followed.

    A command counts when the newest ``executor/status`` at or before it says ``driver``
    human and no ``leader_fault`` (the rule of the dataset's ``intervention`` rows).
    """
    import bisect
    from remote_inference_py.analysis.summary import stamped
    statuses = stamped(topics.get('/executor/status', []))
    stamps = [ns for ns, _ in statuses]
    count = 0
    for ns, _ in stamped(topics.get('/joint_commands', [])):
        index = bisect.bisect_right(stamps, ns) - 1
        if index >= 0:
            status = statuses[index][1]
            count += getattr(status, 'driver', '') == 'human' and not getattr(
                status, 'leader_fault', '')
    return count


def headline(summary, latency_s, synchronous=False, human=0):
    """Say in two lines what the run showed: the task, and that the arm did not wait.

    ``human`` of the held ticks followed the human on the leader arm (the executor holds the
    policy's side meanwhile, and moves its hold toward the leader).
    """
    lines = []
    if summary.task is not None and summary.task.success:
        lines.append(f'the arm picked up the cube {summary.task.completion_time_s:.1f} s after '
                     'it started (cube lifted 5 cm and held 1 s, from the simulated pose)')
    elif summary.task is not None:
        lines.append(f'the cube was not picked up (highest lift '
                     f'{summary.task.max_lift_m * 100:.1f} cm)')
    mode = 'one after another (synchronous)' if synchronous else 'while the arm moved'
    lines.append(
        f'{summary.chunks_accepted} chunks computed {mode}, '
        f'{summary.turnaround_p50_s * 1e3:.0f} ms each (p50; {latency_s:g} s injected): '
        f'{summary.dispatched_ticks} ticks played from the buffer, {summary.held_ticks} held '
        + (f'({human} following the human on the leader arm, the rest ' if human else '')
        + ('waiting for chunks' if synchronous else 'waiting for the first chunk')
        + (')' if human else '') + f', {summary.starved_ticks} starved')
    return lines


if __name__ == '__main__':
    sys.exit(main())
