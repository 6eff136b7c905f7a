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
One light participant of the discovery benchmark: ``python bench/discovery_standin.py INDEX N``.

A node ``/p<INDEX>/standin`` with about the endpoint count of one of our nodes (``--topics``
publishers and as many subscriptions on topics of its own, beside rclpy's parameter services,
``/rosout`` and ``/parameter_events``), paired with one other participant
(0 with 1, 2 with 3, ...): the even one publishes ``/pair<k>/observation`` and subscribes to
``/pair<k>/chunk``, the odd one the reverse, like a robot and its policy server. No data is
sent: every byte on the wire is discovery and liveliness.

Prints, as wall-clock times (``time.time()``, the same clock in every namespace):
``READY <t>`` once its endpoints exist, ``ADMITTED <t>`` once both pair endpoints are matched
(its partner is discovered both ways), ``GRAPH <t>`` once it sees all N nodes. Stops on SIGINT.
"""

import argparse
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from std_msgs.msg import Float32MultiArray


def main():
    """Create the endpoints, report the discovery milestones, spin until SIGINT."""
    parser = argparse.ArgumentParser()
    parser.add_argument('index', type=int)
    parser.add_argument('count', type=int)
    parser.add_argument('--topics', type=int, default=6)
    options = parser.parse_args()
    rclpy.init()
    node = Node('standin', namespace=f'/p{options.index}')
    kept = []
    for k in range(options.topics):
        kept.append(node.create_publisher(Float32MultiArray, f'out{k}', 1))
        kept.append(node.create_subscription(Float32MultiArray, f'in{k}', lambda m: None, 1))
    pair = f'/pair{options.index // 2}'
    sends, receives = ('observation', 'chunk') if options.index % 2 == 0 else \
        ('chunk', 'observation')
    publisher = node.create_publisher(Float32MultiArray, f'{pair}/{sends}', 1)
    subscription = node.create_subscription(Float32MultiArray, f'{pair}/{receives}',
                                            lambda m: None, 1)
    print(f'READY {time.time():.6f}', flush=True)
    admitted = graph = False
    try:
        while rclpy.ok():
            # Poll at 50 Hz until discovered, then idle (the steady window measures traffic).
            rclpy.spin_once(node, timeout_sec=1.0 if admitted and graph else 0.02)
            if not admitted and publisher.get_subscription_count() > 0 \
                    and subscription.get_publisher_count() > 0:
                admitted = True
                print(f'ADMITTED {time.time():.6f}', flush=True)
            if not graph and len(node.get_node_names()) >= options.count:
                graph = True
                print(f'GRAPH {time.time():.6f}', flush=True)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
