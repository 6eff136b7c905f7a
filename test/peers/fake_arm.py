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
A kinematic arm for executor node tests: the hardware interface's topics, no physics.

It publishes ``joint_states`` at ``rate_hz`` with positions that follow the last command with
a first-order lag, publishes every command it applies on ``applied_command``, and declares
``position_hold`` (a parameter) on the latched ``hardware/info``. It records every command it
received so a test can read them back from its log: one ``CMD t=<ns> <p0> <p1> ...`` line each.
"""


from peer_main import spin
from rclpy.node import Node
from remote_inference.msg import HardwareInfo
from sensor_msgs.msg import JointState

from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos
from remote_inference_py.transport.values import stamp_ns

JOINTS = list(SO101_JOINT_NAMES)


class FakeArm(Node):
    """Follow commands with a lag and report what was applied."""

    def __init__(self):
        super().__init__('fake_arm')
        self.joint_names = list(self.declare_parameter('joint_names', JOINTS).value)
        self.position = list(self.declare_parameter(
            'initial_positions', [0.0] * len(self.joint_names)).value)
        rate = self.declare_parameter('rate_hz', 50.0).value   # the hardware interface's
        self.alpha = self.declare_parameter('follow_gain', 0.5).value
        hold = self.declare_parameter('position_hold', True).value
        self.log_commands = self.declare_parameter('log_commands', True).value
        self.target = list(self.position)
        self.state_pub = self.create_publisher(JointState, 'joint_states', qos.JOINT_STATES)
        self.applied_pub = self.create_publisher(JointState, 'applied_command', qos.COMMANDS)
        info_pub = self.create_publisher(HardwareInfo, 'hardware/info', qos.LATCHED)
        self.create_subscription(JointState, 'joint_commands', self.on_command, qos.COMMANDS)
        self.create_timer(1.0 / rate, self.step)
        info = HardwareInfo(backend='fake', joint_names=self.joint_names, position_hold=hold,
                            torque_enabled=True, state='active')
        info.lower_limits = [-3.0] * len(self.joint_names)
        info.upper_limits = [3.0] * len(self.joint_names)
        info.header.stamp = self.get_clock().now().to_msg()
        info_pub.publish(info)
        self.get_logger().info('fake arm ready')

    def on_command(self, msg):
        """Apply a command by name and echo it on applied_command."""
        index = {name: i for i, name in enumerate(msg.name)}
        self.target = [msg.position[index[name]] for name in self.joint_names]
        applied = JointState(name=self.joint_names, position=self.target)
        applied.header.stamp = self.get_clock().now().to_msg()
        self.applied_pub.publish(applied)
        if self.log_commands:
            stamp = stamp_ns(applied.header.stamp)
            values = ' '.join(f'{v:.6f}' for v in self.target)
            print(f'CMD t={stamp} {values}', flush=True)

    def step(self):
        """Move toward the target and publish the measured state."""
        self.position = [p + self.alpha * (t - p) for p, t in zip(self.position, self.target)]
        msg = JointState(name=self.joint_names, position=self.position)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.state_pub.publish(msg)


def main():
    """Spin until SIGINT."""
    spin(FakeArm)


if __name__ == '__main__':
    main()
