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

Today it starts the smoke node in its own process and talks to it over DDS (a service call and
a latched topic), which proves the build, the interfaces and the transport on this machine. The
bringup issue turns it into the whole simulated system (arm, camera, built-in policy).
"""

import argparse
import os
import random
import subprocess
import sys
import time

import rclpy
from rclpy.node import Node
from remote_inference.msg import ExecutorStatus
from remote_inference.srv import GetCapabilities

from remote_inference_py.common import qos


def main(argv=None):
    """Run the demo and print what happened; exit non-zero when something failed."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--timeout', type=float, default=15.0, help='seconds to wait [s]')
    options = parser.parse_args(argv)
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

    child = subprocess.Popen([sys.executable, '-m', 'remote_inference_py.smoke'])
    rclpy.init()
    node = Node('demo')
    statuses = []
    node.create_subscription(ExecutorStatus, 'smoke/status', statuses.append, qos.LATCHED)
    client = node.create_client(GetCapabilities, 'smoke/get_capabilities')
    ok = False
    try:
        if not client.wait_for_service(timeout_sec=options.timeout):
            print('demo: the smoke node did not come up', file=sys.stderr)
            return 1
        future = client.call_async(GetCapabilities.Request())
        deadline = time.monotonic() + options.timeout
        while time.monotonic() < deadline and not (future.done() and statuses):
            rclpy.spin_once(node, timeout_sec=0.05)
        if future.done() and statuses:
            caps = future.result()
            print(f'demo: smoke node answered over DDS: protocol {caps.protocol_version}, '
                  f'"{caps.message}"; status "{statuses[0].message}"')
            ok = True
        else:
            print('demo: no answer from the smoke node', file=sys.stderr)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        child.send_signal(subprocess.signal.SIGINT)
        child_code = child.wait(timeout=10)
    return 0 if ok and child_code == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
