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
The leader arm node (``leader_arm``): a thin ROS 2 adapter over :class:`.leader.LeaderArm`.

Topics (relative names; remap in the launch file):

=======================  =====  ======================  ========================================
name                     dir    type                    role
=======================  =====  ======================  ========================================
``leader/joint_states``  out    sensor_msgs/JointState  the leader's positions, follower radians
``leader/fault``         out    std_msgs/String         latched: the named fault, '' when healthy
=======================  =====  ======================  ========================================

One read per tick at ``publish_rate_hz`` on a thread of its own (``common/ticker.py``); a tick
whose read fails publishes no positions, publishes the named fault on ``leader/fault`` when it
changes and logs it once (then every few seconds while it lasts). The executor holds the
follower meanwhile (executor/driver.py). Torque stays off on every motor: the human moves it.
"""

import time
import traceback

from rclpy.node import Node
from std_msgs.msg import String

from remote_inference_py.common.node_main import run_node
from remote_inference_py.common.params import build_config, declare_parameters
from remote_inference_py.common.settings import declared
from remote_inference_py.common.ticker import Ticker
from remote_inference_py.teleop.leader import LeaderArm, LeaderConfig, LeaderFault
from remote_inference_py.transport import qos
from remote_inference_py.transport.endpoints import JointStatePublisher

PARAMETERS = declared(LeaderConfig)
REPEAT_S = 5.0   # a lasting fault is logged again this often


class LeaderArmNode(Node):
    """Publish the leader arm's positions in the follower's semantics; name its faults."""

    def __init__(self, **kwargs):
        """Declare the parameters, load the calibrations, start reading the leader."""
        super().__init__('leader_arm', **kwargs)
        self.config = build_config(LeaderConfig, declare_parameters(self, PARAMETERS.values()))
        self.arm = LeaderArm(self.config)
        self.finished, self.exit_code = False, 0
        self.fault = None            # the last published fault text (None: none published)
        self.fault_logged = 0.0
        self.reads = 0
        self.positions_pub = JointStatePublisher(self, 'leader/joint_states',
                                                 self.config.joint_names, qos.JOINT_STATES)
        self.fault_pub = self.create_publisher(String, 'leader/fault', qos.LATCHED)
        self.get_logger().info(
            f'leader arm on {self.config.port!r} (torque off), publishing leader/joint_states '
            f'at {self.config.publish_rate_hz:g} Hz')
        self.ticker = Ticker(1.0 / self.config.publish_rate_hz, self.on_tick, self._failed,
                             'leader')
        self.ticker.start()

    def on_tick(self):
        """Read the leader once; publish its positions, or its named fault."""
        now = time.monotonic()
        try:
            positions = self.arm.read(now)
        except LeaderFault as fault:
            self._set_fault(str(fault), now)
            return
        stamp = self.get_clock().now().seconds_nanoseconds()
        self.positions_pub.publish(stamp[0], stamp[1], positions)
        self.reads += 1
        if self.arm.warning:
            self.get_logger().warning(f'leader: {self.arm.warning}',
                                      throttle_duration_sec=REPEAT_S)
        self._set_fault('', now)

    def _set_fault(self, text, now):
        if text != self.fault:
            self.fault_pub.publish(String(data=text))
            if text:
                self.get_logger().error(f'{text}; publishing no leader positions')
                self.fault_logged = now
            elif self.fault is not None:
                self.get_logger().info('leader healthy again')
            self.fault = text
        elif text and now - self.fault_logged >= REPEAT_S:
            self.get_logger().error(f'still: {text}')
            self.fault_logged = now

    def _failed(self, error):
        self.get_logger().fatal('leader tick failed: ' + ''.join(
            traceback.format_exception(type(error), error, error.__traceback__)))
        self.exit_code, self.finished = 1, True

    def request_stop(self, reason):
        """Stop reading (the leader has no motion of its own to end)."""
        self.get_logger().info(f'stop requested: {reason}')
        self.finished = True

    def close(self):
        """Stop ticking and close the port."""
        self.ticker.stop()
        self.arm.close()
        self.get_logger().info(f'leader arm stopped after {self.reads} reads; port closed')


def main(args=None):
    """Run the leader arm node."""
    raise SystemExit(run_node(LeaderArmNode, args, config_errors=(ValueError,)))


if __name__ == '__main__':
    main()
