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
The ``main()`` of every test peer: spin one node until SIGINT, then shut down cleanly.

Tearing the node's DDS endpoints down is bounded as in the product's nodes
(``node_main.destroy_bounded``): Fast DDS 3.2 can deadlock there, and a peer still in it
names it, prints every thread's stack, removes its shared-memory segments and exits with 1
(``ros_fixtures.teardown_deadlocked``).
"""

import sys

import rclpy
from rclpy.executors import ExternalShutdownException

from remote_inference_py.common.node_main import destroy_bounded


def spin(node_class):
    """Create the node and spin it until SIGINT (rclpy's default signal handling)."""
    rclpy.init(args=sys.argv)
    node = node_class()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        destroy_bounded(node, shutdown=True)
