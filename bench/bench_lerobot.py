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
A LeRobot ACT served on CPU: forward pass, server overhead, and 1, 2 and 4 robots batched.

The checkpoint is LeRobot's ACT at its default size (ResNet-18 backbone, dim_model 512, 4
encoder layers; 51.6 M parameters) for the SO-101: 6 joints, one 3x480x640 camera, chunk_size
100, random weights, saved with LeRobot's ``save_pretrained`` and processors
(test/lerobot_checkpoints.py). First the ``lerobot`` runtime in this process: preprocessor ->
``predict_action_chunk`` -> postprocessor at batch 1, 2 and 4 (one torch thread, the server's
``cpu_threads`` default). Then the installed ``policy_server`` with ``checkpoint:=<folder>``
serves 1, 2 and 4 robot namespaces from this process (batching on; and 4 robots with batching
off for comparison); each robot publishes a 640x480 frame and its joints, asks for a chunk
from that observation, and asks again as soon as the chunk arrives. Server overhead beyond the
forward pass = the chunk's preprocessing + postprocessing; queue wait is shown apart.
Throughput = chunks received per second over all robots.

SmolVLA beside ACT (``--models``, or ``--models-only`` to skip the served part): each model is
built offline at its real size with random weights (SmolVLA: LeRobot's default config on the
published sizes of its default backbone HuggingFaceTB/SmolVLM2-500M-Video-Instruct, built by
test/lerobot_checkpoints.py without the Hub), with one and with two 3x480x640 cameras, then
loaded by the ``lerobot`` runtime in a fresh process that reports the load time, its resident
memory (RSS) after loading and at its peak, and the forward pass (preprocessor +
predict_action_chunk + postprocessor, one torch thread). ``--smoke`` (bench/smoke.py) does the
same with a tiny ACT alone, measured in this process (one pass), and serves one robot from
it on a 64x48 camera for a second (a test runs it), writing nothing to bench/results.

Run: ``./run bench lerobot [--seconds 20] [--models | --models-only] [--smoke]``. Prints
markdown tables and writes bench/results/lerobot.md (served ACT) and
bench/results/lerobot_models.md (SmolVLA beside ACT). Not a test: it measures.
"""

import argparse
import json
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
import yaml

from remote_inference_py.common.service_call import RetriedCall
from remote_inference_py.contract.check import PROTOCOL_VERSION
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test')]
SERVER = ROOT / 'install' / 'remote_inference' / 'lib' / 'remote_inference' / 'policy_server'
JOINTS = list(SO101_JOINT_NAMES)
HEIGHT, WIDTH = 480, 640
CASES = ((1, 1), (2, 2), (4, 4), (4, 1))      # (robots, max_batch_size)
ACT_DEFAULTS = dict(chunk_size=100, n_action_steps=100, dim_model=512, n_heads=8,
                    dim_feedforward=3200, n_encoder_layers=4, n_decoder_layers=1,
                    n_vae_encoder_layers=4, latent_dim=32)


def make_act(directory, settings, image_size=(HEIGHT, WIDTH)):
    """Save an ACT for the SO-101 (random weights) with ``settings`` to directory/act."""
    import lerobot_checkpoints
    return lerobot_checkpoints.make_checkpoint(pathlib.Path(directory) / 'act', 'act',
                                               image_shape=(3, *image_size), **settings)


SMOLVLA_CAMERAS = ('front', 'wrist')


def make_model(directory, kind, cameras, smoke):
    """Save ACT or SmolVLA (real size, or tiny when ``smoke``) with ``cameras`` 480x640 views."""
    import lerobot_checkpoints
    names = SMOLVLA_CAMERAS[:cameras]
    path = pathlib.Path(directory) / f'{kind}_{cameras}'
    shape = (3, 64, 96) if smoke else (3, HEIGHT, WIDTH)
    if kind == 'act':
        return lerobot_checkpoints.make_checkpoint(path, 'act', image_shape=shape, cameras=names,
                                                   **({} if smoke else ACT_DEFAULTS))
    return lerobot_checkpoints.make_checkpoint(
        path, 'smolvla', image_shape=shape, cameras=names,
        backbone_size='tiny' if smoke else 'published')


def measure(folder, passes):
    """In a fresh process: load the runtime, time it, read RSS, time forward passes."""
    import torch
    from remote_inference_py.policy_server.loading import load_runtime
    from remote_inference_py.policy_server.runtimes import RuntimeOptions, zero_inputs
    torch.set_num_threads(1)
    began = time.perf_counter()
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    load_s = time.perf_counter() - began
    rss_loaded = resident_mb('VmRSS')
    inputs = zero_inputs(runtime.spec, 1)
    runtime.infer(inputs, ['pick up the cube'])               # warm-up
    times = []
    for _ in range(passes):
        began = time.perf_counter()
        runtime.infer(inputs, ['pick up the cube'])
        times.append((time.perf_counter() - began) * 1e3)
    return {'load_s': load_s, 'rss_mb': rss_loaded, 'peak_mb': resident_mb('VmHWM'),
            'parameters': sum(p.numel() for p in runtime.policy.parameters()),
            'chunk': runtime.spec.chunk_length, 'ms': times}


def resident_mb(field):
    """Return this process's VmRSS or VmHWM [MB] from /proc (0 where there is none)."""
    try:
        for line in pathlib.Path('/proc/self/status').read_text().splitlines():
            if line.startswith(field + ':'):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def model_rows(directory, passes, smoke):
    """Build each model and measure it in a child process; return markdown rows."""
    rows = []
    env = dict(os.environ)
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    # Smoke: a tiny ACT with one camera runs the same rows (SmolVLA's build is tested in
    # test/tools/test_lerobot_smolvla.py; importing transformers alone costs 7 CPU-seconds).
    for kind in ('act',) if smoke else ('smolvla', 'act'):
        for cameras in (1,) if smoke else (1, 2):
            began = time.perf_counter()
            folder = make_model(directory, kind, cameras, smoke)
            built = time.perf_counter() - began
            if smoke:   # the same measurement in this process: no fresh RSS, numbers moot
                result = measure(folder, passes)
            else:
                child = subprocess.run(
                    [sys.executable, __file__, '--measure', str(folder), '--passes',
                     str(passes)], capture_output=True, text=True, env=env)
                lines = [line for line in child.stdout.splitlines() if line.startswith('{')]
                if child.returncode != 0 or not lines:
                    raise SystemExit(f'bench_lerobot: measuring {kind} failed:\n{child.stderr}')
                result = json.loads(lines[-1])
            ms = result['ms']
            rows.append(f'| {kind} | {cameras} | {result["parameters"] / 1e6:.1f} | '
                        f'{result["chunk"]} | {built:.0f} | {result["load_s"]:.1f} | '
                        f'{result["rss_mb"]:.0f} | {result["peak_mb"]:.0f} | '
                        f'{np.percentile(ms, 50):.0f} | {min(ms):.0f} | {max(ms):.0f} |')
            print(rows[-1], flush=True)
    return rows


def forward_times(folder, batches, passes):
    """Time the lerobot runtime's infer() in this process; return {batch: [ms, ...]}."""
    import torch
    from remote_inference_py.policy_server.loading import load_runtime
    from remote_inference_py.policy_server.runtimes import RuntimeOptions, zero_inputs
    torch.set_num_threads(1)
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    parameters = sum(p.numel() for p in runtime.policy.parameters())
    times = {}
    for batch in batches:
        inputs = zero_inputs(runtime.spec, batch)
        runtime.infer(inputs, [''] * batch)          # warm-up
        times[batch] = []
        for _ in range(passes):
            began = time.perf_counter()
            runtime.infer(inputs, [''] * batch)
            times[batch].append((time.perf_counter() - began) * 1e3)
    return parameters, times


class Robots(Node):
    """Robot sides of several namespaces: observe, request, and request again on each chunk."""

    def __init__(self, namespaces, image_size=(HEIGHT, WIDTH)):
        super().__init__('bench_lerobot_robots')
        self.namespaces = namespaces
        self.height, self.width = image_size
        self.frame = np.random.default_rng(1).integers(0, 256, (*image_size, 3),
                                                       dtype=np.uint8).tobytes()
        self.pubs, self.clients_, self.sessions, self.sent = {}, {}, {}, {}
        self.results = []            # (robot, queue, pre, inference, post, round trip) [ms]
        self.running = False
        self.request_id = 0
        for ns in namespaces:
            self.pubs[ns] = (
                self.create_publisher(JointState, f'{ns}/joint_states', qos.JOINT_STATES),
                self.create_publisher(Image, f'{ns}/cameras/front/image_raw', qos.IMAGES),
                self.create_publisher(InferenceRequest, f'{ns}/policy/request', qos.COMMANDS))
            self.create_subscription(ActionChunk, f'{ns}/policy/chunk',
                                     lambda msg, ns=ns: self.on_chunk(ns, msg), qos.CHUNKS)
            self.clients_[ns] = (
                self.create_client(GetCapabilities, f'{ns}/policy/get_capabilities'),
                self.create_client(Admit, f'{ns}/policy/admit'))

    def observe_and_request(self, ns):
        stamp = self.get_clock().now().to_msg()
        joints_pub, image_pub, request_pub = self.pubs[ns]
        joints = JointState(name=JOINTS, position=[0.1] * 6)
        joints.header.stamp = stamp
        joints_pub.publish(joints)
        image = Image(height=self.height, width=self.width, encoding='rgb8',
                      step=self.width * 3, data=self.frame)
        image.header.stamp = stamp
        image_pub.publish(image)
        self.request_id += 1
        request = InferenceRequest(session_id=self.sessions[ns], request_id=self.request_id)
        request.header.stamp = stamp
        request.earliest_capture_stamp = stamp
        self.sent[self.request_id] = time.perf_counter()
        request_pub.publish(request)

    def on_chunk(self, ns, msg):
        received = time.perf_counter()
        sent = self.sent.pop(msg.request_id, None)
        if msg.error:
            print(f'{ns}: error: {msg.error}', file=sys.stderr)
        elif sent is not None:
            self.results.append((ns, msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms,
                                 msg.postprocess_ms, (received - sent) * 1e3))
        if self.running:
            self.observe_and_request(ns)


def call(spinner, client, request):
    """Return the reply to `request`, asked again every RETRY_S (a request can be lost)."""
    retried = RetriedCall(client, lambda: request)
    spinner.until(retried.answered, 30, client.srv_name)
    return retried.reply


def serve_robots(folder, count, max_batch, seconds, log_path, warmup_s=3.0,
                 image_size=(HEIGHT, WIDTH)):
    """Serve ``count`` robots from one server for ``seconds``; return (results, elapsed)."""
    namespaces = [f'/robot{i + 1}' for i in range(count)]
    params = log_path.with_suffix('.yaml')
    params.write_text(yaml.safe_dump({'policy_server': {'ros__parameters': {
        'checkpoint': str(folder), 'fps': 30.0, 'warmup_iterations': 2 if warmup_s else 1,
        'robot_namespaces': namespaces, 'max_clients': count, 'max_batch_size': max_batch,
        'observation_wait_s': 5.0}}}))
    env = dict(os.environ)
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    with open(log_path, 'wb') as log:
        server = subprocess.Popen([str(SERVER), '--ros-args', '--params-file', str(params)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
    robots = Robots(namespaces, image_size)
    executor = SingleThreadedExecutor()
    executor.add_node(robots)
    from ros_fixtures import Spinner   # test/ is on sys.path (above)
    spinner = Spinner(executor)
    try:
        spinner.until(lambda: 'Policy server ready' in log_path.read_text()
                      or server.poll() is not None, 300, 'the server to be ready')
        if server.poll() is not None:
            raise SystemExit(f'bench_lerobot: the server exited:\n{log_path.read_text()}')
        for ns in namespaces:
            caps_client, admit_client = robots.clients_[ns]
            spinner.until(caps_client.service_is_ready, 30, f'{ns} services')
            caps = call(spinner, caps_client, GetCapabilities.Request())
            answer = call(spinner, admit_client, Admit.Request(
                protocol_version=PROTOCOL_VERSION, client_name=f'{ns}/bench',
                deployment=caps.deployment, semantics=caps.semantics,
                action_names=caps.action_names, action_rate=caps.action_rate,
                merge_mode='aligned', hardware_position_hold=True,
                presence_lease_s=caps.presence_lease_s,
                features=[ObservationFeature(name=f.name, shape=f.shape, dtype=f.dtype,
                                             kind=f.kind) for f in caps.features]))
            if not answer.success:
                raise SystemExit(f'bench_lerobot: {ns} not admitted: {answer.message}')
            robots.sessions[ns] = answer.session_id
        spinner.until(lambda: all(pubs[2].get_subscription_count() > 0
                                  for pubs in robots.pubs.values()), 10, 'matching')
        robots.running = True
        for ns in namespaces:
            robots.observe_and_request(ns)
        warm_until = time.monotonic() + warmup_s  # the first rounds find the batch forming
        while time.monotonic() < warm_until:
            executor.spin_once(timeout_sec=0.05)
        robots.results.clear()
        began = time.monotonic()
        # At least one chunk, however slow the forward pass (a smoke run's window is short).
        while time.monotonic() < began + seconds or (
                not robots.results and time.monotonic() < began + 300):
            executor.spin_once(timeout_sec=0.05)
        elapsed = time.monotonic() - began
        results = list(robots.results)
        robots.running = False
        return results, elapsed
    finally:
        executor.remove_node(robots)
        robots.destroy_node()
        server.send_signal(subprocess.signal.SIGINT)
        server.wait(timeout=60)


def main(argv=None):
    """Measure and write bench/results/lerobot.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='measured time per case')
    parser.add_argument('--passes', type=int, default=8, help='timed forward passes per batch')
    parser.add_argument('--batches', type=int, nargs='+', default=[1, 2, 4],
                        help='batch sizes of the forward-pass table')
    parser.add_argument('--cases', type=int, nargs='+', default=list(range(len(CASES))),
                        help=f'indices into the served cases {CASES} (robots, max batch)')
    parser.add_argument('--act-size', choices=('default', 'tiny'), default='default',
                        help="default: LeRobot's ACT as configured by default; tiny: the "
                        "tests' two-layer ACT on the same camera")
    parser.add_argument('--warmup-s', type=float, default=3.0,
                        help='unmeasured serving before each case [s]')
    parser.add_argument('--image-size', type=int, nargs=2, default=[HEIGHT, WIDTH],
                        metavar=('HEIGHT', 'WIDTH'), help='the camera frame and model input')
    parser.add_argument('--models', action='store_true',
                        help='also measure SmolVLA beside ACT (load, memory, forward pass)')
    parser.add_argument('--models-only', action='store_true',
                        help='measure SmolVLA beside ACT only (no serving over DDS)')
    parser.add_argument('--measure', default='', help=argparse.SUPPRESS)   # the child process
    options = smoke.parse_args(parser, argv, seconds=1.0, passes=1, batches=[1], cases=[0],
                               act_size='tiny', warmup_s=0.0, image_size=[48, 64])
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(100, 200)))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    if options.measure:
        print(json.dumps(measure(options.measure, options.passes)), flush=True)
        return
    if options.smoke or options.models or options.models_only:
        passes = 1 if options.smoke else options.passes
        with tempfile.TemporaryDirectory() as directory:
            rows = model_rows(directory, passes, options.smoke)
        write_models(rows, passes, options, argv)
        if options.models_only:
            return
    p50 = np.percentile
    with tempfile.TemporaryDirectory() as directory:
        folder = make_act(directory, ACT_DEFAULTS if options.act_size == 'default' else {},
                          options.image_size)
        parameters, times = forward_times(folder, options.batches, options.passes)
        forward_rows = [f'| {batch} | {p50(ms, 50):.0f} | {min(ms):.0f} | {max(ms):.0f} | '
                        f'{p50(ms, 50) / batch:.0f} |' for batch, ms in times.items()]
        for line in forward_rows:
            print(line, flush=True)
        rclpy.init()
        serve_rows = []
        try:
            for count, max_batch in (CASES[index] for index in options.cases):
                results, elapsed = serve_robots(
                    folder, count, max_batch, options.seconds,
                    pathlib.Path(directory) / f'server_{count}_{max_batch}.log',
                    options.warmup_s, options.image_size)
                if not results:
                    raise SystemExit(f'bench_lerobot: no chunk with {count} robot(s)')
                _, queue, pre, inference, post, trip = (np.array(c) for c in zip(*results))
                # Every answer of one batched forward pass carries that pass's inference_ms.
                passes = len(set(inference.tolist()))
                serve_rows.append(
                    f'| {count} | {max_batch} | {len(results)} | {len(results) / elapsed:.2f} | '
                    f'{len(results) / passes:.2f} | {p50(inference, 50):.0f} | '
                    f'{p50(pre + post, 50):.1f} | {p50(pre, 50):.1f} | {p50(post, 50):.1f} | '
                    f'{p50(queue, 50):.1f} | {p50(trip, 50):.0f} | {p50(trip, 99):.0f} |')
                print(serve_rows[-1], flush=True)
        finally:
            rclpy.try_shutdown()
    import torch
    text = (
        f'# LeRobot ACT served on CPU\n\n{time.strftime("%Y-%m-%d")}, {platform.node()}, '
        f'{os.cpu_count()} cores, torch {torch.__version__}, lerobot 0.4.4; ACT '
        f'{parameters / 1e6:.1f} M parameters, 6 joints + one 3x480x640 camera, chunk 100, '
        'random weights; one torch thread.\n\n'
        '## Forward pass (lerobot runtime: preprocessor + predict_action_chunk + '
        'postprocessor)\n\n'
        '| batch | p50 [ms] | min [ms] | max [ms] | p50 per robot [ms] |\n|---|---|---|---|---|\n'
        + '\n'.join(forward_rows) + '\n\n'
        f'## Served over DDS ({options.seconds:.0f} s per case)\n\nEach robot asks again as '
        'soon as its chunk arrives. Server overhead beyond the forward pass = preprocessing + '
        'postprocessing (queue wait shown apart: with several robots it is mostly the forward '
        'pass of the batch in progress). Mean batch = chunks per forward pass.'
        '\n\n'
        '| robots | max batch | chunks | chunks/s | mean batch | forward p50 [ms] | '
        'overhead p50 [ms] | pre p50 | post p50 | queue p50 [ms] | round trip p50 [ms] | '
        'round trip p99 [ms] |\n'
        '|---|---|---|---|---|---|---|---|---|---|---|---|\n' + '\n'.join(serve_rows) + '\n')
    print('\n' + text)
    smoke.write_results(options, 'lerobot.md', text, __file__, argv)


def write_models(rows, passes, options, argv):
    """Print the SmolVLA-beside-ACT table; write bench/results/lerobot_models.md unless smoke."""
    import torch
    load = ', '.join(f'{v:.1f}' for v in os.getloadavg())
    sizes = ('tiny models (smoke run)' if options.smoke else
             "ACT at its default size (ResNet-18, dim_model 512); SmolVLA with LeRobot 0.4.4's "
             "defaults (16 of the backbone's 32 text layers, expert width 0.75, chunk 50, 10 "
             'flow steps, images padded to 512x512) on the published sizes of '
             'SmolVLM2-500M-Video-Instruct')
    text = (
        f'# SmolVLA beside ACT on CPU\n\n{time.strftime("%Y-%m-%d %H:%M")}, {platform.node()}, '
        f'{os.cpu_count()} cores, load average {load} (1/5/15 min, the machine shared), torch '
        f'{torch.__version__}, lerobot 0.4.4; {sizes}; random weights, built offline; cameras '
        f'{"3x64x96" if options.smoke else "3x480x640"}; one torch thread; {passes} timed passes '
        'after '
        'one warm-up; load = the lerobot runtime in a fresh process, imports included.\n\n'
        '| policy | cameras | parameters [M] | chunk | build [s] | load [s] | RSS loaded [MB] '
        '| RSS peak [MB] | forward p50 [ms] | min [ms] | max [ms] |\n'
        '|---|---|---|---|---|---|---|---|---|---|---|\n' + '\n'.join(rows) + '\n')
    print('\n' + text)
    if not options.smoke:
        smoke.write_results(options, 'lerobot_models.md', text, __file__, argv)


if __name__ == '__main__':
    main()
