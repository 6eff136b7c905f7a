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
Transport benchmark: observation to chunk round trip over our ROS 2 path, gRPC and Zenoh.

The observation is one 640x480 rgb8 frame plus six joint positions; the answer a 50 x 6
float32 chunk from a zero-cost policy. Server and client run in separate processes on
127.0.0.1 only, back to back and paced at 30 Hz, each transport under two allocator settings:

- ours: the product's ``policy_server`` node (``policy_type: python``, the zero-cost policy of
  ``bench/transport_policy.py``, ``extra_latency_s: 0``) and a client node that sends an
  ``InferenceRequest`` ahead, then publishes ``JointState`` and the frame the way the hardware
  interface does (as shipped: through a shared-memory ring with a ``SharedImage`` reference;
  ``ours_topic``: as a ``sensor_msgs/Image``, the path to a server on another host) and
  receives the ``ActionChunk`` (``bench/transport_ros.py``; the executor always asks before the
  observation it is answered with is captured, so the round trip runs from the observation's
  publication to the chunk), Fast DDS with ``config/fastdds_shm.xml``,
  ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and a domain id of its own; each spins the rclpy
  executor of the node it is or stands for (``make_ros_executor``: the EventsExecutor, which the
  executor node spins beside its control-tick thread);
- ours with the request published together with the observation: a worst case the product
  does not produce, for comparison;
- gRPC + pickle as LeRobot's async inference ships it (``bench/transport_grpc.py``);
- Zenoh + msgpack with shared memory on and off (``bench/transport_zenoh.py``);
- references, not the product: the same client against a bare rclpy server written the usual
  way (deserialized messages, SingleThreadedExecutor) with the same topics, types and QoS,
  answering from its callbacks; and the same without any image (request + joints only: the
  round trip of two small messages, the floor of rclpy + Fast DDS on the machine).

The zero-cost policy takes the frame as it arrives (``model_dtype: uint8``, native size), like
the gRPC and Zenoh servers, which only unpack it. The ROS server's chunks carry its own
timings, so the tables also split our round trip into server work and the rest.

Allocator: ``default`` is glibc's (``REMOTE_INFERENCE_TUNE_MALLOC=0`` so our nodes keep it too);
``tuned`` is ``MALLOC_MMAP_THRESHOLD_=4194304 MALLOC_TRIM_THRESHOLD_=268435456`` in the
environment of both processes, except for ours, which is measured as shipped: both nodes call
``tune_allocator()`` (the same thresholds through ``mallopt``) themselves.

All server/client pairs start once and stay up; the measurement runs in rounds, and in each
round every cell runs one back-to-back block and one paced block in a shuffled order, so slow
drifts of this shared 2-core machine spread over all cells. The first round trips of each
block are discarded (warm-up). Minor page faults are counted per round trip for the client
(getrusage) and the server (/proc/<pid>/stat).

Run: ``./run bench transport`` (or ``python bench/bench_transport.py --rounds 8`` inside
``./run shell``). Prints markdown tables and writes bench/results/transport.md and
bench/results/transport.png. ``--smoke`` (bench/smoke.py): one round of three round trips per
block for one transport of each kind.
"""

import argparse
import json
import os
import pathlib
import platform
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import smoke

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test')]

TUNED_ENV = {'MALLOC_MMAP_THRESHOLD_': '4194304', 'MALLOC_TRIM_THRESHOLD_': '268435456'}
ALLOCATORS = ('default', 'tuned')
MODES = ('b2b', 'paced')
# key: (label, kind, zenoh shared memory)
TRANSPORTS = {
    'ours': ('ours as shipped: ROS 2 policy_server, frames through shared memory (one host)',
             'ros', False),
    'ours_topic': ('ours, frames on the Image topic (server on another host, or '
                   'share_images off), Fast DDS SHM profile', 'ros', False),
    'ours_together': ('ours, request published with the observation (not what the executor '
                      'does)', 'ros', False),
    'grpc': ('gRPC + pickle, 2 MB pieces (LeRobot)', 'grpc', False),
    'zenoh_shm': ('Zenoh + msgpack, shared memory on', 'zenoh', True),
    'zenoh': ('Zenoh + msgpack, shared memory off', 'zenoh', False),
    'ros_floor': ('reference: bare rclpy server, same messages + QoS (not the product)',
                  'ros_minimal', False),
    'ros_tiny': ('reference: bare rclpy server, request + joints only, no image (small-message '
                 'floor)', 'ros_minimal', False),
}
SHORT = {'ours': 'ours', 'ours_topic': 'ours, Image\ntopic',
         'ours_together': 'ours, req.\nwith obs.', 'grpc': 'gRPC',
         'zenoh_shm': 'Zenoh SHM', 'zenoh': 'Zenoh', 'ros_floor': 'rclpy ref.',
         'ros_tiny': 'rclpy ref.\nno image'}
SERVER_PARAMS = {
    'policy_type': 'python', 'checkpoint': 'transport_policy:zero_cost_policy',
    'semantics': 'si-radians-v1', 'extra_latency_s': 0.0,
}


def free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def cell_env(kind, allocator, domain_id):
    env = os.environ.copy()
    for name in list(TUNED_ENV) + ['REMOTE_INFERENCE_TUNE_MALLOC']:
        env.pop(name, None)
    if allocator == 'default':
        env['REMOTE_INFERENCE_TUNE_MALLOC'] = '0'
    elif kind not in ('ros', 'ros_minimal'):
        env.update(TUNED_ENV)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(BENCH)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    env['ROS_DOMAIN_ID'] = str(domain_id)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['FASTDDS_DEFAULT_PROFILES_FILE'] = str(ROOT / 'config' / 'fastdds_shm.xml')
    env['PYTHONUNBUFFERED'] = '1'
    return env


class Pair:
    """One server process and one client process of one cell (transport x allocator)."""

    def __init__(self, key, allocator, log_dir, domain_id):
        self.key, self.allocator = key, allocator
        self.label, self.kind, self.shm = TRANSPORTS[key]
        self.name = f'{key}.{allocator}'
        self.log_dir = log_dir
        self.env = cell_env(self.kind, allocator, domain_id)
        self.port = free_port()
        self.extra_args = ['--no-image'] if key == 'ros_tiny' else []
        self.server = None
        self.client = None
        self.lines = queue.Queue()
        self.results = {mode: [] for mode in MODES}

    def start_server(self):
        from ros_fixtures import NodeProcess
        if self.kind == 'ros':
            self.server = NodeProcess.console_script(
                'policy_server', self.log_dir, params=SERVER_PARAMS,
                node_name=f'policy_server_{self.key}_{self.allocator}', env=self.env)
            self.server_ready = 'Policy server ready'
        else:
            args = [sys.executable, str(BENCH / 'transport_peer.py'), self.kind, 'server',
                    '--port', str(self.port)] + (['--shm'] if self.shm else []) + \
                self.extra_args
            self.server = NodeProcess(args, self.log_dir / f'{self.name}.server.log',
                                      env=self.env)
            self.server_ready = 'server ready'
            if self.kind == 'ros_minimal':
                self.server_ready = 'minimal ROS server ready'

    def start_client(self):
        self.server.wait_for_output(self.server_ready, timeout=60)
        args = [sys.executable, str(BENCH / 'transport_peer.py'), self.kind, 'client',
                '--port', str(self.port), '--server-pid', str(self.server.pid)]
        if self.shm:
            args.append('--shm')
        if self.key == 'ours_together':
            args.append('--together')
        if self.key == 'ours_topic':
            args.append('--topic-frames')
        args += self.extra_args
        self.client_log = open(self.log_dir / f'{self.name}.client.log', 'wb')
        self.client = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.client_log,
            env=self.env, text=True, bufsize=1, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.client.stdout:
            self.lines.put(line.rstrip('\n'))
        self.lines.put(None)

    def expect(self, prefix, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise RuntimeError(f'{self.name}: no {prefix!r} within {timeout} s; see '
                                   f'{self.log_dir}') from None
            if line is None:
                raise RuntimeError(f'{self.name}: client exited; see {self.log_dir}')
            if line.startswith(prefix):
                return line[len(prefix):]

    def run(self, mode, count, warmup):
        self.client.stdin.write(f'run {mode} {count} {warmup}\n')
        self.client.stdin.flush()
        timeout = 30 + (count + warmup) * 1.5
        self.results[mode].append(json.loads(self.expect('RESULT ', timeout)))

    def stop(self):
        if self.client is not None and self.client.poll() is None:
            try:
                self.client.stdin.write('quit\n')
                self.client.stdin.flush()
                self.client.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.client.kill()
                self.client.wait()
        if self.server is not None:
            try:
                self.server.stop(timeout=15)
            except AssertionError as error:
                print(f'warning: {error}', file=sys.stderr)


def summarize(pair, mode):
    blocks = pair.results[mode]
    ms = np.concatenate([np.asarray(b['ms'], dtype=float) for b in blocks]) if blocks else \
        np.zeros(0)
    count = sum(b['count'] for b in blocks)
    out = {
        'n': int(ms.size), 'failures': sum(b['failures'] for b in blocks),
        'p50': float(np.percentile(ms, 50)) if ms.size else float('nan'),
        'p99': float(np.percentile(ms, 99)) if ms.size else float('nan'),
        'block_p50': [float(np.median(b['ms'])) for b in blocks if b['ms']],
        'client_faults': sum(b['client_faults'] for b in blocks) / max(count, 1),
        'server_faults': sum(b['server_faults'] for b in blocks) / max(count, 1),
    }
    server = [t for b in blocks for t in b.get('server_ms', [])]
    if server:
        out['server_work_p50'] = float(np.percentile([sum(t[1:]) for t in server], 50))
        out['queue_wait_p50'] = float(np.percentile([t[0] for t in server], 50))
        out['preprocess_p50'] = float(np.percentile([t[1] for t in server], 50))
    errors = {}
    for b in blocks:
        for text, n in b.get('errors', {}).items():
            errors[text] = errors.get(text, 0) + n
    out['errors'] = errors
    return out


def faults(cell, which):
    """Faults per round trip over both modes of a cell."""
    count = sum(cell[m]['n'] + cell[m]['failures'] for m in MODES)
    return sum(cell[m][which] * (cell[m]['n'] + cell[m]['failures']) for m in MODES) / \
        max(count, 1)


def ratio(a, b):
    return a / b if b else float('nan')


def tables(stats, options, elapsed):
    """Return the markdown text of the results."""
    lines = [
        '## Round trip [ms]: observation (640x480 rgb8 + 6 joints) to chunk (50 x 6 float32), '
        'zero-cost policy', '',
        f'{options.rounds} rounds x ({options.b2b} back-to-back + {options.paced} paced) '
        f'measured round trips per cell, {options.warmup} warm-up round trips per block '
        'excluded; faults = minor page faults per round trip.', '',
        '| transport | allocator | b2b p50 | b2b p99 | 30 Hz p50 | 30 Hz p99 | '
        '30 Hz p50 per round (min-max) | faults client | faults server | failed |',
        '|---|---|---|---|---|---|---|---|---|---|']
    present = [key for key in TRANSPORTS if (key, 'default') in stats]
    for key in present:
        label, kind, _ = TRANSPORTS[key]
        for allocator in ALLOCATORS:
            b2b, paced = stats[key, allocator]['b2b'], stats[key, allocator]['paced']
            name = allocator
            if kind in ('ros', 'ros_minimal') and allocator == 'tuned':
                name = 'tuned (as shipped)'
            rounds = paced['block_p50']
            spread = f'{min(rounds):.2f}-{max(rounds):.2f}' if rounds else '-'
            measured = b2b['n'] + paced['n']
            failed = b2b['failures'] + paced['failures']
            lines.append(
                f'| {label} | {name} | {b2b["p50"]:.2f} | {b2b["p99"]:.2f} | '
                f'{paced["p50"]:.2f} | {paced["p99"]:.2f} | {spread} | '
                f'{faults(stats[key, allocator], "client_faults"):.0f} | '
                f'{faults(stats[key, allocator], "server_faults"):.0f} | '
                f'{failed}/{measured + failed} |')

    def p50(key, allocator, mode):
        return stats[key, allocator][mode]['p50']

    def p99(key, allocator, mode):
        return stats[key, allocator][mode]['p99']

    lines += ['', '## Ratios (lower is better for ours)', '',
              '| comparison | b2b p50 | 30 Hz p50 | 30 Hz p99 | target | met |',
              '|---|---|---|---|---|---|']
    rows = [('ours as shipped / gRPC + pickle, default malloc (as LeRobot ships it)',
             ('ours', 'tuned'), ('grpc', 'default'), 1 / 3, '<= 0.33 (30 Hz p50)'),
            ('ours as shipped, request published with the observation / gRPC + pickle, '
             'default malloc', ('ours_together', 'tuned'), ('grpc', 'default'), None, ''),
            ('ours, frames on the Image topic (another host) / gRPC + pickle, default malloc',
             ('ours_topic', 'tuned'), ('grpc', 'default'), None, ''),
            ('ours as shipped / ours with frames on the Image topic, both tuned',
             ('ours', 'tuned'), ('ours_topic', 'tuned'), None, '')]
    for allocator in ALLOCATORS:
        for key in ('zenoh_shm', 'zenoh'):
            rows.append((f'ours / {TRANSPORTS[key][0]}, both {allocator} malloc',
                         ('ours', allocator), (key, allocator), 1.5, '<= 1.5 (30 Hz p50)'))
    for allocator in ALLOCATORS:
        rows.append((f'ours / gRPC + pickle, both {allocator} malloc', ('ours', allocator),
                     ('grpc', allocator), None, ''))
    for allocator in ALLOCATORS:
        rows.append((f'ours / bare rclpy reference server, both {allocator} malloc',
                     ('ours', allocator), ('ros_floor', allocator), None, ''))
    rows.append(('rclpy small-message floor (no image), tuned / gRPC + pickle, default malloc',
                 ('ros_tiny', 'tuned'), ('grpc', 'default'), None, ''))
    rows.append(('ours as shipped / rclpy small-message floor (no image), tuned',
                 ('ours', 'tuned'), ('ros_tiny', 'tuned'), None, ''))
    for text, ours, other, target, target_text in rows:
        if ours[0] not in present or other[0] not in present:
            continue
        paced_ratio = ratio(p50(*ours, 'paced'), p50(*other, 'paced'))
        met = '' if target is None else ('yes' if paced_ratio <= target else 'no')
        lines.append(f'| {text} | {ratio(p50(*ours, "b2b"), p50(*other, "b2b")):.2f} | '
                     f'{paced_ratio:.2f} | '
                     f'{ratio(p99(*ours, "paced"), p99(*other, "paced")):.2f} | '
                     f'{target_text} | {met} |')
    if 'ours' in present and 'grpc' in present:
        ours = stats['ours', 'tuned']
        rest = {m: ours[m]['p50'] - ours[m].get('server_work_p50', float('nan')) for m in MODES}
        lines.append('| ours as shipped minus its server work (p50 - p50 of preprocess + '
                     'inference + postprocess) / gRPC + pickle, default malloc | '
                     f'{ratio(rest["b2b"], p50("grpc", "default", "b2b")):.2f} | '
                     f'{ratio(rest["paced"], p50("grpc", "default", "paced")):.2f} | - | | |')
    lines += ['', '## Allocator effect: tuned / default, same transport', '',
              '| transport | b2b p50 | 30 Hz p50 | faults per round trip, client+server '
              '(default -> tuned) |', '|---|---|---|---|']
    for key in present:
        label = TRANSPORTS[key][0]
        d, t = stats[key, 'default'], stats[key, 'tuned']
        per_rt = [faults(c, 'client_faults') + faults(c, 'server_faults') for c in (d, t)]
        lines.append(f'| {label} | {ratio(t["b2b"]["p50"], d["b2b"]["p50"]):.2f} | '
                     f'{ratio(t["paced"]["p50"], d["paced"]["p50"]):.2f} | '
                     f'{per_rt[0]:.0f} -> {per_rt[1]:.0f} |')
    lines += ['', '## Ours: where the time goes (server timings carried by each ActionChunk)', '',
              '| allocator | mode | round trip p50 | request to worker start p50 (the request '
              'waits for its observation) | '
              'preprocess + inference + postprocess p50 | of which preprocess p50 | '
              'round trip minus server work |', '|---|---|---|---|---|---|---|']
    for allocator in ALLOCATORS if 'ours' in present else ():
        for mode in MODES:
            s = stats['ours', allocator][mode]
            work = s.get('server_work_p50', float('nan'))
            lines.append(f'| {allocator} | {"b2b" if mode == "b2b" else "30 Hz"} | '
                         f'{s["p50"]:.2f} | {s.get("queue_wait_p50", float("nan")):.2f} | '
                         f'{work:.2f} | '
                         f'{s.get("preprocess_p50", float("nan")):.2f} | '
                         f'{s["p50"] - work:.2f} |')
    errors = {f'{key}.{allocator}.{mode}': stats[key, allocator][mode]['errors']
              for key in present for allocator in ALLOCATORS for mode in MODES
              if stats[key, allocator][mode]['errors']}
    if errors:
        lines += ['', 'Failed round trips by reason: ' + json.dumps(errors)]
    lines += ['', 'Notes: ours = the installed policy_server node with the zero-cost policy of '
              'bench/transport_policy.py (it takes the frame as received: model_dtype uint8, '
              'native size); the client sends the request ahead of the observation like the '
              'executor, calls tune_allocator(), spins the EventsExecutor and decodes chunks '
              'like the executor node; its round trip runs from publishing the observation to '
              'the chunk. '
              'gRPC: two RPCs per round trip (SendObservations streamed, GetActions), '
              'actions pickled as numpy (LeRobot pickles torch tensors, which costs more). '
              'Zenoh: query/reply, the server replies from a direct callback; shared memory '
              'on = explicit ShmProvider buffer for the observation. The rclpy references '
              'answer from their subscription callbacks, written the usual way (deserialized '
              'messages, SingleThreadedExecutor).',
              '', f'Whole run: {elapsed:.0f} s.']
    return '\n'.join(lines)


def plot(stats, path):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    present = [key for key in TRANSPORTS if (key, 'default') in stats]
    labels = [f'{SHORT[key]}\n{allocator}' for key in present for allocator in ALLOCATORS]
    x = np.arange(len(labels))
    fig, axes = plt.subplots(1, 2, figsize=(14, 5), sharey=True)
    for ax, mode, title in zip(axes, MODES, ('back to back', 'paced 30 Hz')):
        p50 = [stats[key, a][mode]['p50'] for key in present for a in ALLOCATORS]
        p99 = [stats[key, a][mode]['p99'] for key in present for a in ALLOCATORS]
        ax.bar(x - 0.2, p50, 0.4, label='p50')
        ax.bar(x + 0.2, p99, 0.4, label='p99')
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8, rotation=60)
        ax.set_title(f'observation -> chunk round trip, {title}')
        ax.grid(axis='y', alpha=0.3)
    axes[0].set_ylabel('round trip [ms]')
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def clean_zenoh_segments(since):
    """
    Remove the shared-memory files our zenoh processes left in /dev/shm; return their names.

    zenoh 1.10 leaves a segment or two behind when a Python process exits (it removes orphans
    at the next start). Only files created during this run that no live process has open or
    mapped are removed.
    """
    shm = pathlib.Path('/dev/shm')
    candidates = {p.name: p for p in shm.glob('*.zenoh') if p.stat().st_mtime >= since}
    if not candidates:
        return []
    for proc in pathlib.Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            maps = (proc / 'maps').read_text()
            fds = [os.readlink(fd) for fd in (proc / 'fd').iterdir()]
        except OSError:
            continue
        for name in list(candidates):
            if name in maps or any(name in target for target in fds):
                del candidates[name]
    for path in candidates.values():
        path.unlink(missing_ok=True)
    return sorted(candidates)


def machine():
    model = ''
    try:
        for line in pathlib.Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    load = ', '.join(f'{v:.2f}' for v in os.getloadavg())
    return (f'{platform.node()}: {os.cpu_count()} cores {model}, Python '
            f'{platform.python_version()}, load average at start {load}')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--rounds', type=int, default=8)
    parser.add_argument('--b2b', type=int, default=40,
                        help='measured back-to-back round trips per cell and round')
    parser.add_argument('--paced', type=int, default=40,
                        help='measured 30 Hz round trips per cell and round')
    parser.add_argument('--warmup', type=int, default=3, help='unmeasured round trips per block')
    parser.add_argument('--only', nargs='+', choices=list(TRANSPORTS), default=list(TRANSPORTS))
    parser.add_argument('--seed', type=int, default=0)
    # The smoke run takes one transport of each kind (the others differ in a flag).
    options = smoke.parse_args(parser, argv, rounds=1, b2b=3, paced=3, warmup=1,
                               only=['ours', 'grpc', 'zenoh_shm', 'ros_floor'])
    started = time.monotonic()
    started_wall = time.time() - 1.0
    about = machine()
    # One domain per cell, counted up from RI_BENCH_DOMAIN_ID (the test suite gives a spare
    # block) or ROS_DOMAIN_ID.
    base_domain = int(os.environ.get('RI_BENCH_DOMAIN_ID', os.environ.get(
        'ROS_DOMAIN_ID', str(180 + os.getpid() % 40))))
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix='bench_transport_'))
    pairs = []
    for key in options.only:
        for allocator in ALLOCATORS:
            pairs.append(Pair(key, allocator, log_dir, (base_domain + len(pairs)) % 233))
    print(f'logs in {log_dir}', file=sys.stderr)
    try:
        for pair in pairs:
            pair.start_server()
        for pair in pairs:
            pair.start_client()
        for pair in pairs:
            pair.expect('READY', 60)
        for pair in pairs:   # one warm-up block per cell before the measurement
            pair.run('b2b', 1, 30)
        rng = random.Random(options.seed)
        for number in range(options.rounds):
            order = pairs[:]
            rng.shuffle(order)
            for pair in order:
                modes = MODES if rng.random() < 0.5 else MODES[::-1]
                for mode in modes:
                    pair.run(mode, options.b2b if mode == 'b2b' else options.paced,
                             options.warmup)
            print(f'round {number + 1}/{options.rounds} done '
                  f'({time.monotonic() - started:.0f} s)', file=sys.stderr, flush=True)
    finally:
        for pair in pairs:
            pair.stop()
        clean_zenoh_segments(started_wall)
    stats = {(p.key, p.allocator): {mode: summarize(p, mode) for mode in MODES}
             for p in pairs}
    text = tables(stats, options, time.monotonic() - started)
    print(text)
    if set(options.only) != set(TRANSPORTS) and not options.smoke:
        print('(a subset of the transports: bench/results/transport.md left as it was)',
              file=sys.stderr)
        return
    results = smoke.results_dir(options)
    picture = plot(stats, results / 'transport.png')
    smoke.write_results(options, 'transport.md', f'# Transport benchmark\n\n{about}\n\n{text}\n'
                        + ('\n![round trips](transport.png)\n' if picture else ''),
                        __file__, argv)


if __name__ == '__main__':
    main()
