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
A smoke node: proves the build, the interfaces and DDS work on this machine.

It serves ``GetCapabilities`` with this package's protocol version and publishes one latched
``ExecutorStatus``. ``ros2 run remote_inference smoke`` on a ROS install does the same.
"""

from rclpy.node import Node
from remote_inference.msg import ExecutorStatus
from remote_inference.srv import GetCapabilities

from remote_inference_py.common.node_main import run_node
from remote_inference_py.contract.check import PROTOCOL_VERSION
from remote_inference_py.transport import qos


class SmokeNode(Node):
    """Answer GetCapabilities and publish a latched status until stopped."""

    def __init__(self):
        super().__init__('smoke')
        self.finished = False
        self.exit_code = 0
        self.create_service(GetCapabilities, 'smoke/get_capabilities', self.on_capabilities)
        self.status_pub = self.create_publisher(ExecutorStatus, 'smoke/status', qos.LATCHED)
        status = ExecutorStatus(state=ExecutorStatus.STATE_READY, state_name='READY',
                                message='smoke node up')
        status.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(status)
        self.get_logger().info('smoke node ready')

    def on_capabilities(self, request, response):
        """Describe this package."""
        response.success = True
        response.message = 'remote_inference smoke node'
        response.protocol_version = PROTOCOL_VERSION
        response.deployment = 'smoke'
        return response

    def request_stop(self, reason):
        """Stop at once: the smoke node owns no hardware."""
        self.get_logger().info(f'stopping: {reason}')
        self.finished = True

    def close(self):
        """Nothing to release."""


def main(args=None):
    """Run the smoke node."""
    raise SystemExit(run_node(SmokeNode, args))


if __name__ == '__main__':
    main()
