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
Soak: server presence through a loaded CPU and a flaky link, and whether anything grows.

Two runs of the whole simulated system (hardware interface with the MuJoCo SO-101, policy
server with the built-in demo policy and ``extra_latency_s`` 0.1 s, executor with autostart),
each node its own process over DDS:

- ``load``: one host, with one busy process per core beside the nodes for the whole run.
- ``link``: two network namespaces joined by a veth pair made here (needs root), the policy
  server on one side and the robot (hardware interface, executor) on the other, UDP only; the
  link goes down for ``--drop-s`` once a minute.

Per run, from the executor's status (printed by ``test/peers/status_printer.py`` on the robot
side) and ``/proc``: false server losses (the executor reports the server lost or faults while
the server process runs; target 0), the longest silence (no presence sample, no chunk),
starved ticks, dropped chunks (stale or late) and the last reason, command rate (dispatched
ticks per second of status time), and each node's resident memory at the start and the end of
the run, sampled every 10 s.

Run: ``./run bench presence`` (30 min loaded + 10 min link drops), or inside ``./run shell``
``python bench/bench_presence.py --load-minutes 5 --link-minutes 3`` for a shorter soak.
Prints a markdown table and writes bench/results/presence.md. ``--smoke`` (bench/smoke.py):
three seconds of the load soak, no link soak.
"""

import argparse
import os
import pathlib
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid

import smoke

from remote_inference_py.contract.check import PRESENCE_LEASE_S

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / 'test'), str(ROOT / 'test' / 'peers')]
CONFIG = ROOT / 'config' / 'so101_sim.yaml'

CAMERA = {'sim_image_width': 64, 'sim_image_height': 48, 'sim_camera_rate_hz': 30.0}
SERVER = {'demo_image_size': [48, 64], 'extra_latency_s': 0.1}
EXECUTOR = {'autostart': True, 'return_speed_rad_s': 2.0, 'admission_timeout_s': 120.0}
SAMPLE_S = 10.0
LOADER = 'import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass'
STATUS = re.compile(r'^STATUS (\w+) ticks=(\d+) dispatched=(\d+) chunks=(\d+) starved=(\d+) '
                    r'skipped=\d+ dropped=(\d+) presence=(\w+) seen=(-?[\d.]+) maxturn=[\d.]+ '
                    r'session=(\w*) msg=(.*)$', re.M)


def rss_mb(pid):
    """Resident memory of a process [MB], or None when it is gone."""
    try:
        text = pathlib.Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return None
    match = re.search(r'^VmRSS:\s+(\d+) kB', text, re.M)
    return int(match.group(1)) / 1024 if match else None


def ip(*args):
    subprocess.run(['ip', *args], check=True, capture_output=True)


class Namespaces:
    """Two network namespaces joined by a veth pair: 'server' and 'robot'."""

    def __init__(self):
        tag = uuid.uuid4().hex[:6]
        self.hosts = {'server': (f'ri_soak_s{tag}', f'ri_ss{tag}', '10.232.7.1'),
                      'robot': (f'ri_soak_r{tag}', f'ri_sr{tag}', '10.232.7.2')}
        for netns, _, _ in self.hosts.values():
            ip('netns', 'add', netns)
        ip('link', 'add', self.hosts['server'][1], 'type', 'veth', 'peer', 'name',
           self.hosts['robot'][1])
        for netns, dev, address in self.hosts.values():
            ip('link', 'set', dev, 'netns', netns)
            ip('-n', netns, 'addr', 'add', f'{address}/24', 'dev', dev)
            ip('-n', netns, 'link', 'set', dev, 'up')
            ip('-n', netns, 'link', 'set', 'lo', 'up')
            ip('-n', netns, 'route', 'add', '224.0.0.0/4', 'dev', dev)

    def prefix(self, host):
        return ['ip', 'netns', 'exec', self.hosts[host][0]]

    def set_link(self, up):
        netns, dev, _ = self.hosts['robot']
        ip('-n', netns, 'link', 'set', dev, 'up' if up else 'down')
        if up:
            subprocess.run(['ip', '-n', netns, 'route', 'replace', '224.0.0.0/4', 'dev', dev],
                           capture_output=True)

    def close(self):
        for netns, _, _ in self.hosts.values():
            subprocess.run(['ip', 'netns', 'del', netns], capture_output=True)


def soak(kind, minutes, drop_s, lease_s, log_dir):
    """Run the system for ``minutes`` under ``kind`` (load or link); return one result row."""
    from ros_fixtures import NodeProcess

    from remote_inference_py import bringup
    from remote_inference_py.bringup import param_args

    log_dir.mkdir(parents=True)
    plan = {spec.name: spec for spec in bringup.plan(share_dir=str(ROOT),
                                                     config_file=str(CONFIG))}
    env = os.environ.copy()
    net = None
    hosts = {'hardware_interface': 'robot', 'executor': 'robot', 'policy_server': 'server',
             'printer': 'robot'}
    if kind == 'link':
        profile = ROOT / 'test' / 'fastdds_udp_only.xml'
        env.update(FASTDDS_DEFAULT_PROFILES_FILE=str(profile),
                   ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET')
        net = Namespaces()
    lease = {'presence_lease_s': lease_s}
    overrides = {'hardware_interface': CAMERA, 'policy_server': {**SERVER, **lease},
                 'executor': {**EXECUTOR, **lease}}
    procs, loaders = {}, []
    try:
        for name in ('hardware_interface', 'policy_server', 'executor'):
            spec = plan[name]
            procs[name] = NodeProcess.console_script(
                spec.executable, log_dir, params=str(CONFIG), node_name=name,
                ros_args=param_args({**spec.overrides, **overrides[name]}),
                prefix=net.prefix(hosts[name]) if net else (), env=env)
        printer = NodeProcess.peer('status_printer.py', log_dir,
                                   prefix=net.prefix('robot') if net else (), env=env)
        deadline = time.monotonic() + 180
        while not any(m.group(1) == 'RUNNING' for m in STATUS.finditer(printer.output())):
            if time.monotonic() > deadline:
                raise RuntimeError(f'{kind}: the executor never ran; logs in {log_dir}')
            time.sleep(0.5)
        if kind == 'load':
            # Busy until stopped, or until this benchmark dies without stopping them (a
            # SIGKILL, an interrupted test run): an orphan's parent changes.
            loaders = [subprocess.Popen([sys.executable, '-c', LOADER])
                       for _ in range(os.cpu_count() or 2)]
        began = time.monotonic()
        rss = {name: [rss_mb(proc.proc.pid)] for name, proc in procs.items()}
        loads, drops, next_sample = [], 0, began + SAMPLE_S
        next_drop = began + 60.0
        while time.monotonic() - began < minutes * 60:
            now = time.monotonic()
            if net and now >= next_drop:
                net.set_link(False)
                time.sleep(drop_s)
                net.set_link(True)
                drops += 1
                next_drop += 60.0
            if now >= next_sample:
                for name, proc in procs.items():
                    rss[name].append(rss_mb(proc.proc.pid))
                loads.append(os.getloadavg()[0])
                next_sample += SAMPLE_S
            if procs['executor'].proc.poll() is not None:
                break
            time.sleep(0.2)
        elapsed = time.monotonic() - began
    finally:
        for loader in loaders:
            loader.kill()
            loader.wait()
        lines = STATUS.findall(printer.output()) if 'printer' in locals() else []
        executor_log = procs['executor'].output() if 'executor' in procs else ''
        server_alive = 'policy_server' in procs and procs['policy_server'].proc.poll() is None
        for name in ('executor', 'policy_server', 'hardware_interface'):
            if name in procs:
                try:
                    procs[name].stop(timeout=40)
                except AssertionError as error:
                    print(f'warning: {error}', file=sys.stderr)
        if 'printer' in locals():
            printer.stop(timeout=10)
        if net:
            net.close()
    running = [line for line in lines if line[0] in ('RUNNING', 'WAITING')]
    first, last = running[0], running[-1]
    status_s = (int(last[1]) - int(first[1])) / 30.0   # control ticks at 30 Hz
    losses = len(re.findall(r'policy server instance \w+ (lost|refused)', executor_log))
    faults = sum(1 for line in lines if line[0] == 'FAULT')
    drop_reasons = re.findall(r'dropped chunk \d+: (.*)$', executor_log, re.M)
    silences = [float(line[7]) for line in running]
    return {
        'kind': kind, 'lease': lease_s, 'longest_silence': max(silences, default=0.0),
        'minutes': elapsed / 60, 'link_drops': drops, 'drop_s': drop_s,
        'false_losses': losses if server_alive else 0, 'faults': int(faults > 0),
        'starved': int(last[4]) - int(first[4]), 'dropped': int(last[5]) - int(first[5]),
        'drop_reason': drop_reasons[-1][:120] if drop_reasons else '',
        'rate': (int(last[2]) - int(first[2])) / max(status_s, 1e-9),
        'rss': {name: (values[0], max(v for v in values if v is not None), values[-1])
                for name, values in rss.items() if values and values[0] is not None},
        'load': (min(loads), max(loads)) if loads else (0.0, 0.0),
        'last_state': last[0], 'log_dir': str(log_dir),
    }


def table(rows):
    lines = ['| run | lease [s] | minutes | link drops | false server losses | faults | '
             'longest silence [s] | starved ticks | dropped chunks | command rate [Hz] | '
             'RSS MB start / max / end | load |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for row in rows:
        rss = '; '.join(f'{name.split("_")[0]} {a:.0f} / {b:.0f} / {c:.0f}'
                        for name, (a, b, c) in row['rss'].items())
        drops = f'{row["link_drops"]} x {row["drop_s"]:g} s' if row['kind'] == 'link' else '-'
        lines.append(f'| {row["kind"]} | {row["lease"]:g} | {row["minutes"]:.1f} | {drops} '
                     f'| {row["false_losses"]} | {row["faults"]} '
                     f'| {row["longest_silence"]:.2f} | {row["starved"]} | {row["dropped"]} '
                     f'| {row["rate"]:.2f} | {rss} | {row["load"][0]:.1f}-{row["load"][1]:.1f} |')
    reasons = [f'{row["kind"]}: {row["drop_reason"]}' for row in rows if row['drop_reason']]
    if reasons:
        lines += ['', 'Last drop reason: ' + '; '.join(reasons) + '.']
    return lines


def main(argv=None):
    """Run the soaks, print the table and write bench/results/presence.md."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--load-minutes', type=float, default=30.0)
    parser.add_argument('--link-minutes', type=float, default=10.0)
    parser.add_argument('--drop-s', type=float, default=1.0,
                        help='how long the link is down once a minute [s]')
    parser.add_argument('--leases', type=float, nargs='+', default=[PRESENCE_LEASE_S],
                        help='presence leases to soak, each a run of its own [s]')
    parser.add_argument('--no-write', action='store_true')
    options = smoke.parse_args(parser, argv, load_minutes=0.05, link_minutes=0.0)
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('RI_BENCH_DOMAIN_ID',
                                                 str(random.randint(100, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(ROOT / 'config' / 'fastdds_shm.xml')
    os.environ.setdefault('MUJOCO_GL', 'egl')
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix='bench_presence_'))
    print(f'presence: logs in {log_dir}', flush=True)
    rows = []
    for lease in options.leases:
        if options.load_minutes > 0:
            rows.append(soak('load', options.load_minutes, 0.0, lease,
                             log_dir / f'load_{lease:g}'))
            print('\n'.join(table(rows[-1:])), flush=True)
        if options.link_minutes > 0 and os.geteuid() != 0:
            print('presence: the link soak needs root (network namespaces); skipped',
                  file=sys.stderr)
        elif options.link_minutes > 0:
            rows.append(soak('link', options.link_minutes, options.drop_s, lease,
                             log_dir / f'link_{lease:g}'))
            print('\n'.join(table(rows[-1:])), flush=True)
    notes = [f'{time.strftime("%Y-%m-%d")}, {platform.node()}, {os.cpu_count()} cores, '
             f'Python {platform.python_version()}; default presence lease '
             f'{PRESENCE_LEASE_S:g} s, starvation grace 3 s, request timeout 2 s, demo policy '
             'with 0.1 s injected latency, camera 64x48 at 30 Hz. "load": one busy process per '
             'core beside the nodes; "link": server and robot in two network namespaces, the '
             'link down once a minute. False server losses count executor reports of a lost '
             'server while the server process was running (target 0). Longest silence: the '
             'longest time the executor went without a presence sample or a chunk from the '
             'server while running; the server samples its presence every lease / 8, so a '
             'silence up to 7/8 of the lease costs no session.']
    text = '\n'.join(table(rows) + [''] + notes)
    print(text)
    if not options.no_write:
        smoke.write_results(options, 'presence.md', '# Presence soak\n\n' + text + '\n',
                            __file__, argv)
    return 0


if __name__ == '__main__':
    sys.exit(main())
