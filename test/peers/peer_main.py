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

import signal
import sys
import threading

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from remote_inference_py.common.node_main import destroy_bounded
from remote_inference_py.common.process import print_stacks_on_request


def spin(node_class):
    """Create the node and spin it until SIGINT or SIGTERM, then tear it down (bounded).

    The signal only sets a flag, as the product's nodes do (``node_main.run_node``): with
    rclpy's own handler, which shuts the context down from the signal, a scripted_server peer
    of a loaded test run was still alive 20 s after SIGINT, three times in eight runs, before
    any teardown began.
    """
    print_stacks_on_request()   # as nodes do
    rclpy.init(args=sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = node_class()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.remove_node(node)
        destroy_bounded(node, shutdown=True)
