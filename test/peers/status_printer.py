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
Print every executor status as one line.

For tests that cannot observe from their own process (e.g. the robot side runs in another
network namespace).

Line format: ``STATUS <state_name> ticks=<n> dispatched=<n> chunks=<n> starved=<n> dropped=<n>
presence=<p> seen=<s> maxturn=<s> session=<id> msg=<text>``.
"""


from peer_main import spin
from rclpy.node import Node
from remote_inference.msg import ExecutorStatus

from remote_inference_py.transport import qos


class StatusPrinter(Node):
    """Print executor/status."""

    def __init__(self):
        super().__init__('status_printer')
        self.create_subscription(ExecutorStatus, 'executor/status', self.on_status, qos.LATCHED)

    def on_status(self, msg):
        """Print one status line."""
        print(f'STATUS {msg.state_name} ticks={msg.ticks} dispatched={msg.dispatched_ticks} '
              f'chunks={msg.chunks_accepted} '
              f'starved={msg.starved_ticks} skipped={msg.skipped_ticks} '
              f'dropped={msg.chunks_dropped} '
              f'presence={msg.server_presence} seen={msg.server_last_seen_s:.2f} '
              f'maxturn={msg.max_turnaround_s:.3f} session={msg.session_id} msg={msg.message}',
              flush=True)


def main():
    """Spin until SIGINT."""
    spin(StatusPrinter)


if __name__ == '__main__':
    main()
