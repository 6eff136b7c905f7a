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
What discovery costs as the graph grows: simple discovery vs a Fast DDS discovery server.

N light participants (``bench/discovery_standin.py``: one node each, 7 publishers and 7
subscriptions of its own beside rclpy's parameter services, ``/rosout`` and
``/parameter_events``, paired robot/server, no data sent), each alone in
its own network namespace ("host") on one switch (``test/netns.py``), UDP
only. With ``server``, one more host runs the discovery server
(``ros2 run remote_inference discovery_server``, the shipped profile) and every participant is
its client; ``server-20s`` is the same with Fast DDS's default lease for the server (20 s,
announced every 3 s) instead of the shipped 2 s; with ``simple``, Fast DDS's default
multicast discovery on the subnet.

Per cell, from each host's link byte counters and ``/proc``:

- **admitted [s]**: from starting the N processes to the last pair matched both ways (the
  "every robot admitted" moment, minus the admission service itself); **after start [s]**:
  the same from the last participant's endpoints existing (discovery alone, without the
  processes' start-up on 2 shared cores); **graph [s]**: to every node seeing all N nodes.
- **start-up [kB/host]**: bytes received + sent per participant host from the start to the
  last admission.
- **steady [B/s per host]**: bytes received + sent per participant host per second over
  ``--window-s`` once everything is discovered (announcements and liveliness only); the
  discovery server's host separately.
- **RSS [MB]**: resident memory per participant process (a Python node: most of it is the
  interpreter and rclpy), and the discovery server's.

Run: ``./run bench discovery`` (4, 8, 16, 32 participants, the three modes; needs root), or
``python bench/bench_discovery.py --sizes 4 8 --window-s 5`` in ``./run shell``. Prints a
markdown table and writes bench/results/discovery.md. ``--smoke``: 4 participants, simple and
server, 1 s window.
"""

import argparse
import os
import pathlib
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

import smoke

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test')]
from netns import Lan  # noqa: E402,I100 - test/ is not a package
PROFILE = ROOT / 'test' / 'fastdds_udp_only.xml'
INSTALL_LIB = pathlib.Path(os.environ.get('RI_INSTALL_BASE', ROOT / 'install')) / \
    'remote_inference' / 'lib' / 'remote_inference'
MILESTONE = re.compile(r'^(READY|ADMITTED|GRAPH) (\d+\.\d+)$', re.M)
PORT = 11811
# The shipped server profile without its short lease: Fast DDS's defaults (20 s, announced
# every 3 s), to show what the 2 s lease costs.
DEFAULT_LEASE_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com"><profiles>
  <transport_descriptors><transport_descriptor>
    <transport_id>udp</transport_id><type>UDPv4</type>
  </transport_descriptor></transport_descriptors>
  <participant profile_name="default_lease" is_default_profile="true"><rtps>
    <userTransports><transport_id>udp</transport_id></userTransports>
    <useBuiltinTransports>false</useBuiltinTransports>
    <builtin><discovery_config><discoveryProtocol>SERVER</discoveryProtocol></discovery_config>
    </builtin>
  </rtps></participant>
</profiles></dds>
"""


def rss_mb(pid):
    """Return the resident memory of process ``pid`` [MB] (None once it is gone)."""
    try:
        text = pathlib.Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return None
    return int(re.search(r'^VmRSS:\s+(\d+) kB', text, re.M).group(1)) / 1024


def milestones(log):
    """Return ``{'READY': t, 'ADMITTED': t, 'GRAPH': t}`` found so far in a stand-in's log."""
    return {kind: float(t) for kind, t in MILESTONE.findall(log.read_text(errors='replace'))}


def traffic(lan, hosts):
    """Return the bytes received + sent by each host so far."""
    return {host: sum(lan.bytes(host)) for host in hosts}


def stop(procs):
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_cell(mode, count, window_s, timeout_s, log_dir):
    """Measure one mode at one size; return a dict of the table's numbers."""
    hosts = [f'p{i}' for i in range(count)]
    log_dir.mkdir(parents=True, exist_ok=True)
    with Lan(['ds'] + hosts, subnet='10.234.0') as lan:
        env = {k: v for k, v in os.environ.items() if k != 'ROS_STATIC_PEERS'}
        env.update(FASTDDS_DEFAULT_PROFILES_FILE=str(PROFILE),
                   ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET')
        env.pop('ROS_DISCOVERY_SERVER', None)
        procs = []
        try:
            server = None
            if mode != 'simple':
                env['ROS_DISCOVERY_SERVER'] = f'{lan.addresses["ds"]}:{PORT}'
                profile = []
                if mode == 'server-20s':
                    (log_dir / 'default_lease.xml').write_text(DEFAULT_LEASE_PROFILE)
                    profile = ['--profile', str(log_dir / 'default_lease.xml')]
                with open(log_dir / 'discovery_server.log', 'wb') as out:
                    server = subprocess.Popen(
                        lan.prefix('ds') + [str(INSTALL_LIB / 'discovery_server'), '--listen',
                                            lan.addresses['ds'], '--port', str(PORT)] + profile,
                        env=env, stdout=out, stderr=subprocess.STDOUT)
                procs.append(server)
                time.sleep(0.5)
            logs = [log_dir / f'{host}.log' for host in hosts]
            start_bytes = traffic(lan, ['ds'] + hosts)
            began = time.time()
            for i, (host, log) in enumerate(zip(hosts, logs)):
                with open(log, 'wb') as out:
                    procs.append(subprocess.Popen(
                        lan.prefix(host) + [sys.executable, str(BENCH / 'discovery_standin.py'),
                                            str(i), str(count)],
                        env=env, stdout=out, stderr=subprocess.STDOUT))
            deadline = time.monotonic() + timeout_s
            while True:
                seen = [milestones(log) for log in logs]
                if all({'ADMITTED', 'GRAPH'} <= set(s) for s in seen):
                    break
                if time.monotonic() > deadline:
                    missing = sum('ADMITTED' not in s for s in seen)
                    raise RuntimeError(f'{mode} {count}: {missing} participants not admitted '
                                       f'after {timeout_s} s (logs in {log_dir})')
                time.sleep(0.05)
            up_bytes = traffic(lan, ['ds'] + hosts)
            time.sleep(1.0)
            before = traffic(lan, ['ds'] + hosts)
            time.sleep(window_s)
            after = traffic(lan, ['ds'] + hosts)
            rss = [rss_mb(proc.pid) for proc in procs[1 if server else 0:]]
            server_rss = rss_mb(server.pid) if server else None
        finally:
            stop(procs)
    admitted = max(s['ADMITTED'] for s in seen)
    return {
        'mode': mode, 'count': count,
        'admitted': admitted - began,
        'after_start': admitted - max(s['READY'] for s in seen),
        'graph': max(s['GRAPH'] for s in seen) - began,
        'startup_kb': sum(up_bytes[h] - start_bytes[h] for h in hosts) / count / 1000,
        'steady': sum(after[h] - before[h] for h in hosts) / count / window_s,
        'server_steady': (after['ds'] - before['ds']) / window_s if server else None,
        'rss': sum(r for r in rss if r) / max(1, sum(1 for r in rss if r)),
        'server_rss': server_rss}


def table(rows):
    """Return the markdown table of the cells measured."""
    lines = ['| discovery | participants | admitted [s] | after start [s] | graph [s] | '
             'start-up [kB/host] | steady [B/s per host] | server host [B/s] | RSS [MB] | '
             'server RSS [MB] |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        if 'skipped' in r:
            lines.append(f'| {r["mode"]} | {r["count"]} | {r["skipped"]} | | | | | | | |')
            continue
        server = '-' if r['server_steady'] is None else f'{r["server_steady"]:.0f}'
        server_rss = '-' if r['server_rss'] is None else f'{r["server_rss"]:.1f}'
        lines.append(
            f'| {r["mode"]} | {r["count"]} | {r["admitted"]:.2f} | {r["after_start"]:.2f} | '
            f'{r["graph"]:.2f} | {r["startup_kb"]:.1f} | {r["steady"]:.0f} | {server} | '
            f'{r["rss"]:.1f} | {server_rss} |')
    return lines


def main(argv=None):
    """Measure every size in both modes, print the table and write bench/results/discovery.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--sizes', type=int, nargs='+', default=[4, 8, 16, 32],
                        help='participant counts (even: robot/server pairs)')
    parser.add_argument('--modes', nargs='+', default=['simple', 'server', 'server-20s'],
                        choices=['simple', 'server', 'server-20s'])
    parser.add_argument('--window-s', type=float, default=10.0,
                        help='steady-state traffic window once all are discovered [s]')
    parser.add_argument('--timeout-s', type=float, default=180.0)
    parser.add_argument('--no-write', action='store_true')
    options = smoke.parse_args(parser, argv, sizes=[4], window_s=1.0, timeout_s=300.0,
                               modes=['simple', 'server'])
    if any(size < 2 or size % 2 for size in options.sizes):
        parser.error(f'--sizes must be even numbers of at least 2, not {options.sizes}')
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('RI_BENCH_DOMAIN_ID',
                                                 str(random.randint(100, 200)))
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix='bench_discovery_'))
    print(f'discovery: logs in {log_dir}', flush=True)
    rows = []
    for count in options.sizes:
        for mode in options.modes:
            if os.geteuid() != 0:
                rows.append({'mode': mode, 'count': count,
                             'skipped': 'needs root (network namespaces)'})
                continue
            rows.append(run_cell(mode, count, options.window_s, options.timeout_s,
                                 log_dir / f'{mode}_{count}'))
            print('\n'.join(table(rows[-1:])), flush=True)
    notes = [f'{time.strftime("%Y-%m-%d")}, {platform.node()}, {os.cpu_count()} cores, '
             f'Python {platform.python_version()}; each participant a Python process with one '
             "node of 7 publishers and 7 subscriptions (plus rclpy's parameter services, "
             '/rosout, /parameter_events), alone on its host (network '
             'namespace), UDP only; "server": every participant a client of one Fast DDS '
             'discovery server on a host of its own (lease 2 s, announced every 0.5 s; '
             '"server-20s": Fast DDS\'s default lease, 20 s announced every 3 s). '
             f'Steady traffic over {options.window_s:g} s with no data sent. The processes '
             'start together on the shared cores: "admitted" includes their start-up, '
             '"after start" does not.']
    text = '\n'.join(table(rows) + [''] + notes)
    print(text)
    if not options.no_write:
        smoke.write_results(options, 'discovery.md', '# Discovery cost\n\n' + text + '\n',
                            __file__, argv)
    return 0


if __name__ == '__main__':
    sys.exit(main())
