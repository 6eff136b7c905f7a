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
Camera frames to another host: raw ``sensor_msgs/Image`` vs JPEG ``CompressedImage``.

Side by side in one run, 640x480 rgb8 at 30 Hz, one and two cameras: a sender process
publishes each frame the way the hardware interface does (``ImagePublisher`` as shipped:
shared-memory ring, the raw Image only while subscribed, JPEG only while subscribed, at
``jpeg_quality`` 80) and a receiver process, the stand-in for the policy server on the GPU
host, subscribes either the raw or the compressed topic, decodes each frame to an RGB array
with the policy server's own decoders (``policy_server/images.py``: the raw view, or PIL for
JPEG) and answers with a small ``std_msgs/Header`` carrying the frame's stamp. Both processes
use Fast DDS over UDP only (shared memory off, as between two hosts) on 127.0.0.1, with a
domain id of their own.

Per cell: bytes per second the sender puts on the link (message bytes x frames sent per
second), what that is in Mbit/s, the sender's publish time (JPEG encode included), the
receiver's decode time, and the round trip from just before ``publish()`` to the answer's
arrival (p50 and p95 over all frames after a one-second warm-up), plus the frames answered.
On loopback the link is not the bottleneck; the time a frame needs on a real link is
bytes x 8 / link rate (the 100 Mbit/s column computes it; a good Wi-Fi link carries 100-300
Mbit/s, often less).

The frames are the simulated SO-101's front camera (MuJoCo, rendered once) with sensor-like
noise (Gaussian, sigma 2 levels) drawn anew for each of 30 frames, since JPEG size depends on
content and a real camera is noisy; without the simulator, a smooth synthetic scene.

Run: ``./run bench cameras [--seconds 8]``. Prints a markdown table and writes
bench/results/cameras.md; ``--smoke`` (bench/smoke.py): one camera, half a second per cell.
"""

import argparse
import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import smoke

HERE = pathlib.Path(__file__).resolve().parent
WIDTH, HEIGHT, RATE_HZ, QUALITY = 640, 480, 30.0, 80


def frames(count=30):
    """Return ``count`` 640x480 rgb8 frames: the sim's front camera plus fresh noise each."""
    try:
        from remote_inference_py.hardware.sim import SimConfig, So101Sim
        from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
        sim = So101Sim(SimConfig(joint_names=tuple(SO101_JOINT_NAMES), width=WIDTH,
                                 height=HEIGHT))
        base = sim.render_once('front').astype(np.float32)
        source = 'the simulated front camera'
    except Exception as error:  # noqa: B902 - no EGL here: a synthetic scene instead
        y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
        base = np.stack([x * 255.0 / WIDTH, y * 255.0 / HEIGHT, np.full(x.shape, 90.0)], 2)
        base[100:220, 200:320] = (220, 30, 30)
        source = f'a synthetic scene (no simulator: {type(error).__name__})'
    rng = np.random.default_rng(0)
    out = [np.clip(base + rng.normal(0.0, 2.0, base.shape), 0, 255).astype(np.uint8)
           for _ in range(count)]
    return out, source


def pct(values, q):
    return float(np.percentile(values, q)) if len(values) else float('nan')


# ---- receiver (the policy server's side) ------------------------------------------------

def receiver(mode, cameras, seconds):
    """Subscribe, decode like the policy server, answer each frame; print decode times."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import CompressedImage as CompressedMsg, Image
    from std_msgs.msg import Header

    from remote_inference_py.policy_server import images
    from remote_inference_py.policy_server.manifest import FeatureSpec
    from remote_inference_py.transport import qos
    from remote_inference_py.transport.compressed import decode_compressed_image
    from remote_inference_py.transport.image_cdr import decode_image

    rclpy.init()
    node = rclpy.create_node('camera_bench_receiver')
    echo = node.create_publisher(Header, 'bench/echo', qos.COMMANDS)
    feature = FeatureSpec(name='observation.images.cam', kind='rgb',
                          shape=(HEIGHT, WIDTH, 3), dtype='float32')
    decode_ms = []

    def on_raw(camera, raw):
        started = time.perf_counter()
        msg = decode_image(raw)
        array = images.decode_raw(images.RawImage(msg.encoding, msg.height, msg.width,
                                                  msg.step, msg.data))
        assert array.shape == (HEIGHT, WIDTH, 3)
        decode_ms.append((time.perf_counter() - started) * 1000)
        answer(camera, msg.sec, msg.nanosec)

    def on_jpeg(camera, raw):
        started = time.perf_counter()
        sec, nanosec, _, fmt, data = decode_compressed_image(raw)
        array = images.decode_compressed(images.CompressedImage(fmt, data), feature)
        assert array.shape == (HEIGHT, WIDTH, 3)
        decode_ms.append((time.perf_counter() - started) * 1000)
        answer(camera, sec, nanosec)

    def answer(camera, sec, nanosec):
        header = Header(frame_id=camera)
        header.stamp.sec, header.stamp.nanosec = sec, nanosec
        echo.publish(header)

    for index in range(cameras):
        topic, name = f'cameras/cam{index}/image_raw', f'cam{index}'
        if mode == 'jpeg':
            node.create_subscription(CompressedMsg, topic + '/compressed',
                                     lambda raw, n=name: on_jpeg(n, raw), qos.IMAGES, raw=True)
        else:
            node.create_subscription(Image, topic, lambda raw, n=name: on_raw(n, raw),
                                     qos.IMAGES, raw=True)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = time.monotonic() + seconds
    # The sender closes our stdin once its last frame is answered: stop then, or at `stop`.
    while time.monotonic() < stop and not select.select([sys.stdin], [], [], 0)[0]:
        executor.spin_once(timeout_sec=0.1)
    print(json.dumps({'decode_ms': decode_ms}), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


# ---- sender (the hardware interface's side) ---------------------------------------------

def run_cell(mode, cameras, seconds, pictures, env):
    """Run one cell: start the receiver, publish for ``seconds``, collect the numbers."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Header

    from remote_inference_py.transport import qos
    from remote_inference_py.transport.shared_images import ImagePublisher

    warmup, settle = 1.0, 4.0
    proc = subprocess.Popen(
        [sys.executable, __file__, '--receiver', mode, '--cameras', str(cameras),
         '--seconds', str(seconds + warmup + settle + 2.0)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'camera_bench_sender_{mode}_{cameras}', context=context)
    pubs = [ImagePublisher(node, f'cameras/cam{i}/image_raw', qos.IMAGES, True, f'cam{i}',
                           jpeg_quality=QUALITY) for i in range(cameras)]
    sent, answered, publish_ms, sizes = {}, {}, [], []
    lock = threading.Lock()

    def on_echo(msg):
        now = time.perf_counter()
        key = (msg.frame_id, msg.stamp.sec, msg.stamp.nanosec)
        with lock:
            if key in sent:
                answered[key] = now - sent[key]
    node.create_subscription(Header, 'bench/echo', on_echo, qos.COMMANDS)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinning = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.05)
                                               for _ in iter(spinning.is_set, True)])
    spinner.start()
    topic = 'image_raw/compressed' if mode == 'jpeg' else 'image_raw'
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline and not all(
            node.count_subscribers(f'cameras/cam{i}/{topic}') for i in range(cameras)):
        time.sleep(0.05)
    time.sleep(0.5)   # let the match settle on both sides
    period = 1.0 / RATE_HZ
    start = time.monotonic()
    tick, index = start, 0
    measured_from = start + warmup
    while tick < start + warmup + seconds:
        time.sleep(max(0.0, tick - time.monotonic()))
        now_ns = node.get_clock().now().nanoseconds
        for i, pub in enumerate(pubs):
            sec, nanosec = divmod(now_ns + i, 1_000_000_000)
            before_bytes = pub.jpeg.bytes
            t0 = time.perf_counter()
            with lock:
                key = (f'cam{i}', sec, nanosec)
                if tick >= measured_from:
                    sent[key] = t0
            pub.publish(sec, nanosec, f'cam{i}_camera', pictures[index % len(pictures)],
                        'rgb8')
            t1 = time.perf_counter()
            if tick >= measured_from:
                publish_ms.append((t1 - t0) * 1000)
                sizes.append(pub.jpeg.bytes - before_bytes + 64 if mode == 'jpeg'
                             else WIDTH * HEIGHT * 3 + 64)
        index += 1
        tick += period
    time.sleep(1.0)   # the last answers
    out, _ = proc.communicate('', timeout=seconds + warmup + settle + 30)   # closes its stdin
    spinning.set()
    spinner.join()
    for pub in pubs:
        pub.close()
    node.destroy_node()
    rclpy.try_shutdown(context=context)
    decode_ms = json.loads(out.strip().splitlines()[-1])['decode_ms']
    round_trips = [v * 1000 for v in answered.values()]
    per_s = len(sizes) / seconds
    bytes_per_s = float(np.mean(sizes)) * per_s if sizes else 0.0
    return {
        'mode': mode, 'cameras': cameras, 'frame_bytes': float(np.mean(sizes)),
        'bytes_per_s': bytes_per_s, 'publish_p50_ms': pct(publish_ms, 50),
        'decode_p50_ms': pct(decode_ms, 50), 'rtt_p50_ms': pct(round_trips, 50),
        'rtt_p95_ms': pct(round_trips, 95), 'answered': len(round_trips) / max(1, len(sent)),
    }


def table(rows):
    lines = ['| frames | cameras | bytes/frame | MB/s | Mbit/s | encode+publish p50 [ms] | '
             'decode p50 [ms] | round trip p50 [ms] | p95 [ms] | on 100 Mbit/s [ms/frame] | '
             'answered |', '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        label = 'raw rgb8' if r['mode'] == 'raw' else f'JPEG q{QUALITY}'
        lines.append(
            f"| {label} | {r['cameras']} | {r['frame_bytes'] / 1000:.0f} kB | "
            f"{r['bytes_per_s'] / 1e6:.2f} | {r['bytes_per_s'] * 8 / 1e6:.0f} | "
            f"{r['publish_p50_ms']:.2f} | {r['decode_p50_ms']:.2f} | {r['rtt_p50_ms']:.1f} | "
            f"{r['rtt_p95_ms']:.1f} | {r['frame_bytes'] * 8 / 100e6 * 1000:.1f} | "
            f"{r['answered'] * 100:.0f} % |")
    return '\n'.join(lines)


def main(argv=None):
    """Run the four cells and write bench/results/cameras.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=8.0)
    parser.add_argument('--receiver', choices=('raw', 'jpeg'))
    parser.add_argument('--cameras', type=int, default=1)
    parser.add_argument('--camera-counts', type=int, nargs='+', default=[1, 2],
                        help='cameras per cell (the sender side)')
    options = smoke.parse_args(parser, argv, seconds=0.5, camera_counts=[1])
    if options.receiver:
        receiver(options.receiver, options.cameras, options.seconds)
        return 0
    profile = HERE.parent / 'test' / 'fastdds_udp_only.xml'
    os.environ.update(FASTDDS_DEFAULT_PROFILES_FILE=str(profile),
                      ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                      ROS_DOMAIN_ID=os.environ.get('RI_BENCH_DOMAIN_ID',
                                                   str(150 + os.getpid() % 50)))
    pictures, source = frames()
    rows = []
    for cameras in options.camera_counts:
        for mode in ('raw', 'jpeg'):
            rows.append(run_cell(mode, cameras, options.seconds, pictures, dict(os.environ)))
            print(f'{mode} x{cameras}: {rows[-1]}', file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    text = (f'# Camera frames to another host: raw vs JPEG\n\n'
            f'`./run bench cameras --seconds {options.seconds:g}`\n\n'
            f'{WIDTH}x{HEIGHT} rgb8 at {RATE_HZ:g} Hz per camera, frames from {source} with '
            f'sensor-like noise; sender and receiver are separate processes, Fast DDS over '
            f"UDP only on 127.0.0.1; JPEG quality {QUALITY}; decode = the policy server's "
            f'decoders to an RGB array. {options.seconds:g} s per cell after a 1 s warm-up.\n\n'
            + table(rows) + '\n\n'
            'answered: frames that reached the receiver whole and were answered. A raw frame '
            'is ~15 UDP fragments under best-effort QoS (the images role): one lost fragment '
            'drops the frame. The round trip counts answered frames only.\n\n'
            f'{time.strftime("%Y-%m-%d")}, {os.cpu_count()} cores, 1-min load average '
            f'{load:.2f} after the run (other jobs share this machine).\n')
    print(text)
    smoke.write_results(options, 'cameras.md', text, __file__, argv)
    return 0


if __name__ == '__main__':
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
