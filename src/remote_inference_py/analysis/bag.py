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
Read and write rosbag2 files (MCAP or sqlite3) with ``rosbags``, without a ROS install.

Our custom types are registered from the ``.msg`` files installed with the package, so bags
written by ``ros2 bag record`` on a real ROS install and bags written by :class:`BagWriter`
(from the raw CDR bytes of subscriptions, which is what rosbag2 stores) read the same way.
"""

import pathlib

from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import get_types_from_msg, get_typestore, Stores

PACKAGE = 'remote_inference'


def interface_dir():
    """Return the folder holding our msg/ files (installed share/ or the source tree)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        share = pathlib.Path(get_package_share_directory(PACKAGE))
        if (share / 'msg').is_dir():
            return share
    except (ImportError, LookupError, ValueError):
        pass
    return pathlib.Path(__file__).resolve().parents[3]


def typestore():
    """Return a Kilted typestore with remote_inference's messages registered."""
    store = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for path in sorted((interface_dir() / 'msg').glob('*.msg')):
        types.update(get_types_from_msg(path.read_text(), f'{PACKAGE}/msg/{path.stem}'))
    store.register(types)
    return store


class BagWriter:
    """Write raw CDR messages to a rosbag2 MCAP bag."""

    def __init__(self, path, store=None):
        self.store = store or typestore()
        self.writer = Writer(pathlib.Path(path), version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.connections = {}

    def add_topic(self, topic, msgtype):
        """Declare a topic, e.g. ('/executor/status', 'remote_inference/msg/ExecutorStatus')."""
        self.connections[topic] = self.writer.add_connection(topic, msgtype,
                                                             typestore=self.store)

    def write(self, topic, timestamp_ns, raw):
        """Store one message received at timestamp_ns (serialized CDR bytes)."""
        self.writer.write(self.connections[topic], timestamp_ns, bytes(raw))

    def close(self):
        """Finish the bag (writes metadata.yaml)."""
        self.writer.close()


def read_bag(path, namespace=''):
    """
    Return {topic: [(receive_ns, message), ...]} for a rosbag2 folder (MCAP or sqlite3).

    Topics under ``namespace`` (e.g. ``/robot1``) are returned without it, so the analysis of
    one robot's run does not depend on its namespace; other topics are skipped.
    """
    path = pathlib.Path(path)
    if not (path / 'metadata.yaml').exists():
        raise ValueError(f'{path} is not a rosbag2 folder (no metadata.yaml)')
    prefix = '/' + namespace.strip('/') if namespace.strip('/') else ''
    store = typestore()
    out = {}
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic.startswith(prefix + '/')]
        for connection, timestamp, raw in reader.messages(connections=connections):
            try:
                msg = store.deserialize_cdr(raw, connection.msgtype)
            except KeyError as error:
                raise ValueError(f'{path}: unknown message type {connection.msgtype}') from error
            out.setdefault(connection.topic[len(prefix):], []).append((timestamp, msg))
    return out
