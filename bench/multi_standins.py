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
Lightweight robot stand-ins for the multi-robot benchmark: arms and cameras in one process.

``python bench/multi_standins.py /robot1 /robot2 ... [--camera-hz 30] [--arm-hz 50]``

Per namespace: the kinematic arm of the tests (``test/peers/fake_arm.py``: ``joint_states``,
``applied_command`` and the latched ``hardware/info`` declaring position hold, following each
command with a first-order lag) and a camera publishing one fixed 64x48 rgb8 frame on
``cameras/front/image_raw`` with a fresh stamp. All of them share one process and one DDS
participant, because eight MuJoCo simulations (or sixteen processes) do not fit on two cores
next to the executors and the policy server. Logs ``stand-ins ready`` once everything is up;
stops on SIGINT.
"""

import argparse
import pathlib
import sys

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import Image

from remote_inference_py.transport import qos

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'test' / 'peers'))
from fake_arm import FakeArm  # noqa: E402,I100 - a test peer, importable only from its folder

HEIGHT, WIDTH = 48, 64


class _InNamespace(Node):
    """Create the node in ``self.bench_namespace`` with ``self.bench_overrides``."""

    def __init__(self, name, **kwargs):
        super().__init__(name, namespace=self.bench_namespace,
                         parameter_overrides=self.bench_overrides, **kwargs)


class NamespacedArm(FakeArm, _InNamespace):
    """The tests' kinematic arm, created in a namespace (FakeArm itself takes no arguments)."""

    def __init__(self, namespace, rate_hz):
        self.bench_namespace = namespace
        self.bench_overrides = [Parameter('rate_hz', value=float(rate_hz)),
                                Parameter('log_commands', value=False)]
        super().__init__()


class Cameras(Node):
    """One fixed rgb8 frame per namespace, re-stamped and published at ``rate_hz``."""

    def __init__(self, namespaces, rate_hz):
        super().__init__('multi_cameras')
        rng = np.random.default_rng(0)
        self.streams = []
        for namespace in namespaces:
            frame = Image(height=HEIGHT, width=WIDTH, encoding='rgb8', step=WIDTH * 3)
            frame.header.frame_id = 'front'
            frame.data = rng.integers(0, 256, HEIGHT * WIDTH * 3, dtype=np.uint8).tobytes()
            topic = f'{namespace.rstrip("/")}/cameras/front/image_raw'
            self.streams.append((self.create_publisher(Image, topic, qos.IMAGES), frame))
        self.create_timer(1.0 / rate_hz, self.publish)

    def publish(self):
        """Publish every frame with the current stamp."""
        stamp = self.get_clock().now().to_msg()
        for publisher, frame in self.streams:
            frame.header.stamp = stamp
            publisher.publish(frame)


def main(argv=None):
    """Start the stand-ins for every namespace given; spin until SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('namespaces', nargs='+', help='robot namespaces, e.g. /robot1')
    parser.add_argument('--camera-hz', type=float, default=30.0)
    parser.add_argument('--arm-hz', type=float, default=50.0)
    options = parser.parse_args(argv)
    rclpy.init()
    nodes = [NamespacedArm(ns, options.arm_hz) for ns in options.namespaces]
    nodes.append(Cameras(options.namespaces, options.camera_hz))
    executor = SingleThreadedExecutor()
    for node in nodes:
        executor.add_node(node)
    print(f'stand-ins ready: {" ".join(options.namespaces)}', flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
