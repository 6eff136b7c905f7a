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

"""The shipped Fast DDS profiles are read whole by the Fast DDS the nodes run on.

Fast DDS drops a profile file with an element it does not know, with an error on the
console, and the nodes then run on its defaults (a 512 KB shared-memory segment, 3 s
announcements and heartbeats): nothing else would fail. Each profile is loaded by a process
that sends itself a reliable message through it.
"""

import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NS = {'d': 'http://www.eprosima.com'}

LOOPBACK = """
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('profile_check')
qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
got = []
node.create_subscription(String, 'profile_check', got.append, qos)
publisher = node.create_publisher(String, 'profile_check', qos)
for _ in range(200):
    publisher.publish(String(data='through the profile'))
    rclpy.spin_once(node, timeout_sec=0.05)
    if got:
        break
print('loopback:', 'received' if got else 'nothing', flush=True)
node.destroy_node()
rclpy.shutdown()
"""


def load(profile):
    """Run LOOPBACK with `profile` as the default profile file; return its output."""
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    env['FASTDDS_DEFAULT_PROFILES_FILE'] = str(profile)
    done = subprocess.run([sys.executable, '-c', LOOPBACK], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize('name', ['fastdds_shm.xml', 'fastdds_lan.xml'])
def test_a_shipped_profile_is_read_without_an_error(name):
    profile = ROOT / 'config' / name
    output = load(profile)
    assert 'XMLPARSER' not in output and 'loopback: received' in output, output
    # What the note in the file promises: every reliable writer heartbeats every 0.1 s.
    root = ElementTree.parse(profile).getroot()
    writer = root.find('d:profiles/d:data_writer', NS)
    assert writer.get('is_default_profile') == 'true'
    period = writer.find('d:times/d:heartbeat_period', NS)
    assert (period.find('d:sec', NS).text, period.find('d:nanosec', NS).text) == \
        ('0', '100000000')


def test_a_profile_with_an_unknown_element_is_dropped_with_an_error(tmp_path):
    # The check above can fail: Fast DDS 2's name of the heartbeat period, not Fast DDS 3's.
    shipped = (ROOT / 'config' / 'fastdds_shm.xml').read_text()
    assert shipped.count('heartbeat_period>') == 2
    (tmp_path / 'old.xml').write_text(shipped.replace('heartbeat_period>', 'heartbeatPeriod>'))
    output = load(tmp_path / 'old.xml')
    assert 'XMLPARSER' in output and 'Error parsing' in output, output
