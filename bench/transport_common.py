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
What every transport of the transport benchmark shares: the payload and the client loop.

The observation is one 640x480 rgb8 camera frame plus six joint positions (float32); the
answer is a chunk of 50 x 6 float32 targets. Every server answers with a constant chunk (a
zero-cost policy), so a round trip measures serialization, transport and the server's own
handling, nothing else.

A client process connects to its server, prints ``READY`` and then obeys lines on stdin:
``run <b2b|paced> <count> <warmup>`` runs ``warmup`` unmeasured round trips and ``count``
measured ones, back to back or started on a 30 Hz clock, and prints ``RESULT <json>`` with
the round-trip times [ms], failures, and the minor page faults of the client and the server
over the measured round trips; ``quit`` ends it.
"""

import json
import resource
import sys
import time

import numpy as np

from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

IMAGE_SHAPE = (480, 640, 3)
JOINTS = SO101_JOINT_NAMES
CHUNK_SHAPE = (50, 6)
FPS = 30.0
PACED_HZ = 30.0


def make_frame(seed=0):
    """Return a 480x640x3 uint8 camera frame of noise (incompressible, like a real image)."""
    return np.random.default_rng(seed).integers(0, 256, IMAGE_SHAPE, dtype=np.uint8)


def make_joints():
    """Return six joint positions [rad] as float32."""
    return np.linspace(-0.5, 0.5, len(JOINTS), dtype=np.float32)


def constant_chunk():
    """Return the zero-cost policy's answer: a constant 50 x 6 float32 chunk."""
    steps = np.linspace(0.0, 0.1, CHUNK_SHAPE[0], dtype=np.float32)[:, None]
    return np.ascontiguousarray(steps + np.zeros(CHUNK_SHAPE[1], dtype=np.float32))


def own_minor_faults():
    """Minor page faults of this process so far (all threads)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def process_minor_faults(pid):
    """Minor page faults of another process so far (all threads), from /proc/<pid>/stat."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            text = stat.read()
    except OSError:
        return 0
    fields = text[text.rindex(')') + 2:].split()
    return int(fields[7])   # field 10 (minflt); fields here start at field 3 (state)


def run_block(client, mode, count, warmup, server_pid):
    """Run one block of round trips; return the measurements as a dict."""
    period = 1.0 / PACED_HZ
    paced = mode == 'paced'
    next_start = time.perf_counter()

    def wait_turn():
        nonlocal next_start
        if not paced:
            return
        delay = next_start - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        next_start = max(next_start + period, time.perf_counter())

    for _ in range(warmup):
        wait_turn()
        client.prepare()
        client.roundtrip()
    client.reset_stats()
    samples = []
    failures = 0
    client_faults = own_minor_faults()
    server_faults = process_minor_faults(server_pid)
    for _ in range(count):
        wait_turn()
        client.prepare()
        began = time.perf_counter()
        ok = client.roundtrip()
        elapsed = time.perf_counter() - began
        if ok:
            samples.append(elapsed * 1e3)
        else:
            failures += 1
    result = {
        'mode': mode, 'ms': samples, 'failures': failures, 'count': count,
        'client_faults': own_minor_faults() - client_faults,
        'server_faults': process_minor_faults(server_pid) - server_faults,
    }
    result.update(client.stats())
    return result


class Client:
    """Base class of the benchmark clients: ``roundtrip()`` returns True on success."""

    def prepare(self):
        """Do what precedes the measured round trip (ROS: send the request ahead)."""

    def roundtrip(self):
        raise NotImplementedError

    def reset_stats(self):
        """Forget per-block statistics (server timings, error texts)."""

    def stats(self):
        """Return extra per-block statistics for the result line."""
        return {}

    def close(self):
        """Release the connection."""


def serve_commands(client, server_pid, stdin=sys.stdin, stdout=sys.stdout):
    """Print READY, then obey ``run``/``quit`` lines (see the module docstring)."""
    print('READY', file=stdout, flush=True)
    try:
        for line in stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == 'quit':
                break
            if words[0] == 'run':
                result = run_block(client, words[1], int(words[2]), int(words[3]), server_pid)
                print('RESULT ' + json.dumps(result), file=stdout, flush=True)
    finally:
        client.close()


def connect_with_retries(client, timeout=30.0):
    """Round-trip until one succeeds (discovery, connection set-up); raise after timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client.prepare()
        if client.roundtrip():
            return
        time.sleep(0.05)
    raise RuntimeError(f'no successful round trip within {timeout} s')
