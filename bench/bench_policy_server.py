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
Policy server overhead: (request received -> chunk published) minus the model's forward time.

The installed ``policy_server`` runs in its own process with a small torch.export (.pt2)
policy (random weights) that takes one 640x480 RGB camera and 6 joints. This process plays
the robot: ``joint_states`` at 100 Hz, ``cameras/front/image_raw`` (rgb8, 640x480) at 30 Hz,
and one ``policy/request`` per camera frame (paced at 30 Hz, as a robot does), each asking
for an observation no older than the previous frame (as the executor does: no older than one
action period), so the server does not wait for a frame still in transit. Every chunk
reports the server's own timings; overhead = queue wait + preprocessing + postprocessing
(which includes building the message), i.e. everything but ``inference_ms``.
The client-side round trip (request published -> chunk received) is reported for context.

Two model inputs: the full 3x480x640 image (conversion and normalization only), and 3x96x96
(plus a resize), the size a small ACT-style encoder takes. Target: overhead p50 <= 2 ms.

Run: ``./run bench policy_server [--seconds 10]``. Prints a markdown table and writes
bench/results/policy_server.md; ``--smoke`` (bench/smoke.py): the resize case for one second.
"""

import argparse
import os
import pathlib
import platform
import random
import subprocess
import sys
import tempfile
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from remote_inference.msg import ActionChunk, InferenceRequest, ObservationFeature
from remote_inference.srv import Admit, GetCapabilities
from sensor_msgs.msg import Image, JointState
import smoke
import torch
import yaml

from remote_inference_py.common.service_call import RetriedCall
from remote_inference_py.contract.check import PROTOCOL_VERSION
from remote_inference_py.policy_server.export import save_pt2
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
SERVER = ROOT / 'install' / 'remote_inference' / 'lib' / 'remote_inference' / 'policy_server'
JOINTS = list(SO101_JOINT_NAMES)
HEIGHT, WIDTH = 480, 640
INPUTS = {'full': (HEIGHT, WIDTH), 'resize': (96, 96)}   # model input (height, width)


class Policy(torch.nn.Module):
    """A small chunking policy: strided conv encoder + MLP head, 50 x 6 actions."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.encoder = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 8, stride=8), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.state = torch.nn.Linear(6, 32)
        self.head = torch.nn.Linear(40, 50 * 6)

    def forward(self, state, image):
        hidden = torch.cat([torch.tanh(self.state(state)), self.encoder(image)], dim=1)
        return self.head(hidden).reshape(-1, 50, 6)


def export_policy(directory, model_hw):
    """Export the policy for a model input of model_hw = (height, width); return the path."""
    names = [f'{joint}.pos' for joint in JOINTS]
    spec = spec_from_dict({
        'policy': 'bench', 'semantics': 'so101-degrees-gripper-percent-v1', 'fps': 30,
        'chunk_length': 50, 'action': {'names': names, 'normalization': {
            'mode': 'mean_std', 'mean': [0.0] * 6, 'std': [10.0] * 6}},
        'features': [
            {'name': 'observation.state', 'kind': 'state', 'shape': [6], 'names': names,
             'normalization': {'mode': 'mean_std', 'mean': [0.0] * 6, 'std': [30.0] * 6}},
            {'name': 'observation.images.front', 'kind': 'rgb', 'shape': [HEIGHT, WIDTH, 3],
             'model_shape': [3, *model_hw], 'normalization': {
                 'mode': 'mean_std', 'mean': [[[0.485]], [[0.456]], [[0.406]]],
                 'std': [[[0.229]], [[0.224]], [[0.225]]]}}]})
    return save_pt2(Policy(), spec, pathlib.Path(directory) / f'policy_{model_hw[0]}')


class Robot(Node):
    """Publish observations and paced requests; record every answer."""

    def __init__(self):
        super().__init__('bench_robot')
        self.joint_pub = self.create_publisher(JointState, 'joint_states', qos.JOINT_STATES)
        self.image_pub = self.create_publisher(Image, 'cameras/front/image_raw', qos.IMAGES)
        self.request_pub = self.create_publisher(InferenceRequest, 'policy/request',
                                                 qos.COMMANDS)
        self.create_subscription(ActionChunk, 'policy/chunk', self.on_chunk, qos.CHUNKS)
        self.caps = self.create_client(GetCapabilities, 'policy/get_capabilities')
        self.admit = self.create_client(Admit, 'policy/admit')
        rng = np.random.default_rng(1)
        self.frame = rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8).tobytes()
        self.session = ''
        self.sent = {}
        self.results = []
        self.request_id = 0
        self.running = False
        self.previous_stamp = None
        self.create_timer(0.01, self.publish_joints)
        self.create_timer(1 / 30, self.publish_frame_and_request)

    def publish_joints(self):
        msg = JointState(name=JOINTS, position=[0.1] * 6)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.joint_pub.publish(msg)

    def publish_frame_and_request(self):
        stamp = self.get_clock().now().to_msg()
        image = Image(height=HEIGHT, width=WIDTH, encoding='rgb8', step=WIDTH * 3,
                      data=self.frame)
        image.header.stamp = stamp
        self.image_pub.publish(image)
        previous, self.previous_stamp = self.previous_stamp, stamp
        if not self.running or previous is None:
            return
        self.request_id += 1
        request = InferenceRequest(session_id=self.session, request_id=self.request_id)
        request.header.stamp = self.get_clock().now().to_msg()
        request.earliest_capture_stamp = previous
        self.sent[self.request_id] = time.perf_counter()
        self.request_pub.publish(request)

    def on_chunk(self, msg):
        received = time.perf_counter()
        sent = self.sent.pop(msg.request_id, None)
        if sent is None or msg.error:
            if msg.error:
                print(f'error: {msg.error}', file=sys.stderr)
            return
        self.results.append((msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms,
                             msg.postprocess_ms, (received - sent) * 1e3))


def wait(executor, predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        executor.spin_once(timeout_sec=0.02)
    raise SystemExit(f'bench_policy_server: timed out waiting for {what}')


def run_case(model_path, seconds, log_path, warmup_iterations=10):
    """Start a server on model_path, drive it for seconds; return the result rows."""
    params = log_path.with_suffix('.yaml')
    params.write_text(yaml.safe_dump({'policy_server': {'ros__parameters': {
        'checkpoint': str(model_path), 'warmup_iterations': warmup_iterations}}}))
    env = dict(os.environ)
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    with open(log_path, 'wb') as log:
        server = subprocess.Popen([str(SERVER), '--ros-args', '--params-file', str(params)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
    robot = Robot()
    executor = SingleThreadedExecutor()
    executor.add_node(robot)
    try:
        # Loading the .pt2 took 43-53 s with the 1-min load average at 16-22 on 2 cores.
        wait(executor, lambda: 'Policy server ready' in log_path.read_text(), 180,
             'the server to be ready')
        # Asked again every RETRY_S: a request sent before both sides matched can be lost.
        caps_call = RetriedCall(robot.caps, GetCapabilities.Request)
        wait(executor, caps_call.answered, 30, 'capabilities')
        caps = caps_call.reply
        request = Admit.Request(
            protocol_version=PROTOCOL_VERSION, client_name='/bench', deployment=caps.deployment,
            semantics=caps.semantics, action_names=caps.action_names,
            action_rate=caps.action_rate, merge_mode='aligned', hardware_position_hold=True,
            presence_lease_s=caps.presence_lease_s,
            features=[ObservationFeature(name=f.name, shape=f.shape, dtype=f.dtype,
                                         kind=f.kind) for f in caps.features])
        admit_call = RetriedCall(robot.admit, lambda: request)   # the last call's reply counts
        wait(executor, admit_call.answered, 30, 'admission')
        robot.session = admit_call.reply.session_id
        wait(executor, lambda: robot.request_pub.get_subscription_count() > 0, 10, 'matching')
        robot.running = True
        end = time.monotonic() + 1.0 + seconds
        warm = time.monotonic() + 1.0
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
            if time.monotonic() < warm:
                robot.results.clear()
        robot.running = False
        executor.spin_once(timeout_sec=0.2)
        return np.array(robot.results)
    finally:
        executor.remove_node(robot)
        robot.destroy_node()
        server.send_signal(subprocess.signal.SIGINT)
        server.wait(timeout=20)


def row(label, results):
    queue, pre, inference, post, round_trip = results.T
    overhead = queue + pre + post
    p = np.percentile
    return (f'| {label} | {len(results)} | {p(overhead, 50):.2f} | {p(overhead, 99):.2f} | '
            f'{p(queue, 50):.2f} | {p(pre, 50):.2f} | {p(post, 50):.2f} | '
            f'{p(inference, 50):.2f} | {p(round_trip, 50):.2f} | {p(round_trip, 99):.2f} |')


def main(argv=None):
    """Run both cases and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=10.0, help='measured time per case')
    parser.add_argument('--inputs', nargs='+', choices=list(INPUTS), default=list(INPUTS),
                        help='model inputs to measure')
    parser.add_argument('--warmup-iterations', type=int, default=10,
                        help="the server's warmup_iterations")
    options = smoke.parse_args(parser, argv, seconds=1.0, inputs=['resize'],
                               warmup_iterations=1)
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(100, 200)))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    rclpy.init()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as directory:
            for model_hw in (INPUTS[name] for name in options.inputs):
                path = export_policy(directory, model_hw)
                results = run_case(path, options.seconds,
                                   pathlib.Path(directory) / f'server_{model_hw[0]}.log',
                                   options.warmup_iterations)
                label = f'3x{model_hw[0]}x{model_hw[1]}' + (
                    '' if model_hw == (HEIGHT, WIDTH) else ' (resize)')
                rows.append(row(label, results))
                print(rows[-1], flush=True)
    finally:
        rclpy.try_shutdown()
    header = ('| model input | requests | overhead p50 [ms] | overhead p99 [ms] | queue p50 | '
              'pre p50 | post p50 | forward p50 [ms] | round trip p50 [ms] | '
              'round trip p99 [ms] |\n|---|---|---|---|---|---|---|---|---|---|')
    text = (f'# Policy server overhead\n\n{time.strftime("%Y-%m-%d")}, {platform.node()}, '
            f'{os.cpu_count()} cores, torch {torch.__version__}; one 640x480 rgb8 camera + 6 '
            f'joints, requests paced at 30 Hz, {options.seconds:.0f} s per case.\n'
            'Overhead = (request received -> chunk published) - forward time = queue + pre + '
            'post.\n\n' + header + '\n' + '\n'.join(rows) + '\n')
    print('\n' + text)
    smoke.write_results(options, 'policy_server.md', text, __file__, argv)


if __name__ == '__main__':
    main()
