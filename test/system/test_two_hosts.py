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
Two hosts on one machine: the policy server in one network namespace, the robot side in
another, joined by a veth pair this test creates (addresses exist only inside the two
namespaces). DDS runs over UDP on the link only: shared memory is off, since namespaces do not
separate /dev/shm and the link would otherwise not be the only path.

The arm keeps moving across the link. A drop inside the presence tolerance (lease - lease / 8,
3.5 s by default; a Wi-Fi hiccup) costs at most a hold: the session carries on. When the link
stays down, the executor holds, faults after the grace, returns the arm and exits non-zero. A
camera policy on the server host gets the robot's frames as JPEG (``image_transport:
compressed``): no raw Image crosses.
"""

import os
import pathlib
import re
import shutil
import subprocess
import time
import uuid

from camera_sources import write_video
from node_fixtures import cameras, params
import pytest

from remote_inference_py.contract.check import PRESENCE_LEASE_S
from remote_inference_py.contract.presence import presence_tolerance


def ip(*args):
    subprocess.run(['ip'] + list(args), check=True, capture_output=True)


@pytest.fixture
def two_hosts():
    """Create namespaces 'server' and 'robot' joined by a veth pair; remove them after."""
    if os.geteuid() != 0:
        pytest.skip('creating network namespaces needs root')
    if shutil.which('ip') is None:
        pytest.skip('iproute2 (ip) is not installed')
    tag = uuid.uuid4().hex[:6]
    hosts = {'server': (f'ri_srv_{tag}', f'ri_s{tag}', '10.231.7.1'),
             'robot': (f'ri_bot_{tag}', f'ri_r{tag}', '10.231.7.2')}
    try:
        for netns, _, _ in hosts.values():
            ip('netns', 'add', netns)
        ip('link', 'add', hosts['server'][1], 'type', 'veth', 'peer', 'name', hosts['robot'][1])
        for netns, dev, address in hosts.values():
            ip('link', 'set', dev, 'netns', netns)
            ip('-n', netns, 'addr', 'add', f'{address}/24', 'dev', dev)
            ip('-n', netns, 'link', 'set', dev, 'up')
            ip('-n', netns, 'link', 'set', 'lo', 'up')
            ip('-n', netns, 'route', 'add', '224.0.0.0/4', 'dev', dev)
    except subprocess.CalledProcessError as error:
        for netns, _, _ in hosts.values():
            subprocess.run(['ip', 'netns', 'del', netns], capture_output=True)
        pytest.skip(f'cannot create network namespaces here: {error.stderr.decode().strip()}')
    yield hosts
    for netns, _, _ in hosts.values():
        subprocess.run(['ip', 'netns', 'del', netns], capture_output=True)


def udp_only_env(tmp_path):
    profile = pathlib.Path(__file__).resolve().parents[1] / 'fastdds_udp_only.xml'
    env = {k: v for k, v in os.environ.items() if k != 'ROS_STATIC_PEERS'}
    env.update(FASTDDS_DEFAULT_PROFILES_FILE=str(profile),
               ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET')
    return env


def status_lines(printer):
    return re.findall(r'^STATUS (\w+) .*chunks=(\d+) .*presence=(\w+) .*session=(\w*) ',
                      printer.output(), re.M)


def wait_running_after(printer, before, chunks=5, timeout=30):
    """Wait until the executor is RUNNING with ``chunks`` more accepted; return that line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        after = status_lines(printer)[-1]
        if after[0] == 'RUNNING' and int(after[1]) >= int(before[1]) + chunks:
            break
        time.sleep(0.2)
    return after


def test_link_drops_inside_the_presence_tolerance_cost_no_session_and_a_cut_faults_cleanly(
        two_hosts, processes, tmp_path):
    # One run, three link events: drops of 0.5 s and of the tolerance - 0.3 s (3.2 s with
    # the default lease), each followed by five more chunks of the same session; then the
    # link stays down: the executor holds, loses the server, faults, returns and exits non-zero.
    env = udp_only_env(tmp_path)

    def on(host):
        return ['ip', 'netns', 'exec', two_hosts[host][0]]

    server = processes.peer('scripted_server.py', node_name='scripted_server',
                            params={'delay_s': 0.1}, prefix=on('server'), env=env)
    arm = processes.peer('fake_arm.py', node_name='fake_arm', prefix=on('robot'), env=env)
    printer = processes.peer('status_printer.py', prefix=on('robot'), env=env)
    executor = processes.console_script(
        'executor', node_name='executor', prefix=on('robot'), env=env,
        params={'deployment': 'test', 'autostart': True, 'return_speed_rad_s': 1.0,
                'max_step_rad': 0.5, 'admission_timeout_s': 60.0,   # the default lease
                'starvation_grace_s': 8.0})   # the hold outlasts a drop: only presence counts
    printer.wait_for_output(r'STATUS RUNNING .*chunks=[3-9]', timeout=60)
    moving = [float(v) for line in re.findall(r'^CMD t=\d+ (.*)$', arm.output(), re.M)
              for v in line.split()]
    assert max(abs(v) for v in moving) > 0.05, 'the arm did not move across the link'
    netns, dev, _ = two_hosts['robot']
    for drop_s in (0.5, presence_tolerance(PRESENCE_LEASE_S) - 0.3):
        before = status_lines(printer)[-1]
        ip('-n', netns, 'link', 'set', dev, 'down')
        time.sleep(drop_s)
        ip('-n', netns, 'link', 'set', dev, 'up')
        subprocess.run(['ip', '-n', netns, 'route', 'replace', '224.0.0.0/4', 'dev', dev],
                       capture_output=True)
        after = wait_running_after(printer, before)
        states = {line[0] for line in status_lines(printer)}
        assert after[0] == 'RUNNING' and int(after[1]) >= int(before[1]) + 5, (drop_s, after)
        assert 'FAULT' not in states and after[3] == before[3], \
            f'the session did not carry on over a {drop_s} s drop'
        assert after[2] == 'alive'
        assert 'policy server instance' not in executor.output()

    ip('-n', netns, 'link', 'set', dev, 'down')
    printer.wait_for_output(r'STATUS WAITING', timeout=15)
    printer.wait_for_output(r'STATUS FAULT', timeout=15)
    assert executor.wait(20) != 0
    log = executor.output()
    assert 'policy server instance scripted lost' in log, log
    final = re.findall(r'^CMD t=\d+ (.*)$', arm.output(), re.M)[-1]
    assert max(abs(float(v)) for v in final.split()) < 1e-3, 'did not return to initial pose'
    assert server.proc.poll() is None, 'the server should still be running on its host'


def test_a_camera_policy_on_the_server_host_gets_jpeg_frames_across_the_link(
        two_hosts, emulator, processes, tmp_path):
    # The robot host: servos through the bus emulator, a camera OpenCV reads from a video
    # file. The server host: the demo policy looking at that camera. Only JPEG crosses.
    env = udp_only_env(tmp_path)

    def on(host):
        return ['ip', 'netns', 'exec', two_hosts[host][0]]

    video = write_video(tmp_path / 'front.avi', 160, 120, frames=60)
    server = processes.console_script(
        'policy_server', node_name='policy_server', prefix=on('server'), env=env,
        params={'deployment': 'test', 'demo_cameras': ['front'], 'demo_image_size': [120, 160],
                'image_transport': 'compressed', 'observation_wait_s': 0.5,
                'semantics': 'si-radians-v1'})
    hardware = processes.console_script(
        'hardware_interface', node_name='hardware_interface', prefix=on('robot'), env=env,
        params=params(emulator, latency_timer_ms=16.0, cameras=cameras(
            video, 160, 120)))
    printer = processes.peer('status_printer.py', prefix=on('robot'), env=env)
    processes.console_script(
        'executor', node_name='executor', prefix=on('robot'), env=env,
        params={'deployment': 'test', 'autostart': True, 'starvation_grace_s': 2.0,
                'return_speed_rad_s': 1.0, 'max_step_rad': 0.5, 'admission_timeout_s': 60.0,
                'joint_lower_limits': [-3.0] * 6, 'joint_upper_limits': [3.0] * 6})
    printer.wait_for_output(r'STATUS RUNNING .*chunks=([5-9]|\d\d)', timeout=90)
    assert 'cameras/front/image_raw/compressed -> observation.images.front' in server.output()
    assert 'shared memory' not in server.output()
    # The hardware interface says what it sent: JPEG frames, and not one raw Image.
    sent = hardware.wait_for_output(r'sent: front (\d+) raw, \d+ shm, ([1-9]\d*) jpeg', 30)
    assert sent.group(1) == '0', sent.group(0)
