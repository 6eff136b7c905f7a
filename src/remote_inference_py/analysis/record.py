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
Record topics to a rosbag2 MCAP bag from inside a node, where ``ros2 bag`` is not installed.

Raw subscriptions hand over the serialized CDR bytes exactly as rosbag2 stores them (not
``serialize_message``, whose output carries padding rosbags rejects), stamped with the
receive time on the node's clock, as ``ros2 bag record`` does.
"""

import importlib
import threading

from remote_inference_py import bringup
from remote_inference_py.analysis.bag import BagWriter
from remote_inference_py.common import qos


def message_class(type_name):
    """Import a message class from 'package/msg/Name'."""
    package, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.msg'), name)


class Recorder:
    """Subscribe raw to the run's topics under a namespace and write them to an MCAP bag."""

    def __init__(self, node, bag_path, namespace='', topics=bringup.RECORD_TOPICS):
        self.node = node
        self.writer = BagWriter(bag_path)
        self.lock = threading.Lock()
        self.counts = {}
        self.closed = False
        types = bringup.topic_types()
        roles = {t.name: t.qos for n in bringup.NODES for t in n.publishes}
        prefix = '/' + namespace.strip('/') if namespace.strip('/') else ''
        for topic in topics:
            full = f'{prefix}/{topic}'
            self.writer.add_topic(full, types[topic])
            self.counts[full] = 0
            node.create_subscription(
                message_class(types[topic]), full,
                lambda raw, full=full: self._write(full, raw),
                qos.BY_ROLE[roles[topic]], raw=True)

    def _write(self, topic, raw):
        with self.lock:
            if self.closed:
                return
            self.writer.write(topic, self.node.get_clock().now().nanoseconds, raw)
            self.counts[topic] += 1

    def close(self):
        """Finish the bag; later messages are ignored."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.writer.close()
