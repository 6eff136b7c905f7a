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
Record a run's topics to a rosbag2 MCAP bag, with or without ``ros2 bag``.

:class:`Recorder` subscribes raw to the topics that describe a run: the serialized CDR bytes
go to the bag exactly as rosbag2 stores them (not ``serialize_message``, whose output carries
padding rosbags rejects), stamped with the receive time on the node's clock, as
``ros2 bag record`` does. ``ros2 bag info/play``, ``analyze`` and the ``mcap`` readers open the
result.

:class:`RecorderNode` is the ``record`` console script (what ``record:=true`` starts):

    ros2 run remote_inference record --ros-args -p bag_dir:=my_run [-r __ns:=/robot1]

Unlike ``ros2 bag record``, it does not end on the same Ctrl+C as the robot: asked to stop,
it keeps recording until the robot side's nodes (executor, hardware interface) have left the
graph, so the bag holds the return to the initial position and the final states, or until
``stop_timeout_s``; then it closes the bag.

With ``start_executor`` (the launch sets it with ``record:=true``, the executor's ``autostart``
off) it calls ``executor/start`` once its subscriptions have matched a publisher of each topic
the run is made of (:data:`START_TOPICS`), instead of missing everything before they matched,
and once it has heard each node that writes them (:func:`start_waits_for`): matching is seen
from each side on its own, and a writer that matched this node's reader later than the reader
matched it lost its first message (a bag once missed the run's first chunk so).

With ``record_images`` (``record_images:=true`` at launch) it also records every camera as
JPEG: it subscribes to each ``cameras/<name>/image_raw/compressed`` topic as it appears in the
graph (the hardware interface compresses only while something subscribes), so the bag shows
what the policy saw and ``analyze`` can make a contact sheet or a video of the run.
"""

import copy
import importlib
import os
import re
import threading
import time

from rclpy.node import Node
from std_srvs.srv import Trigger

from remote_inference_py import bringup
from remote_inference_py.analysis.bag import BagWriter
from remote_inference_py.common.node_main import ConfigError, run_node
from remote_inference_py.common.params import declare_parameters, ParamSpec
from remote_inference_py.common.service_call import RetriedCall
from remote_inference_py.transport import qos


def message_class(type_name):
    """Import a message class from 'package/msg/Name'."""
    package, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.msg'), name)


RECORD_DEPTH = 100

# What a run is made of: with start_executor, motion starts once each has a matched publisher.
START_TOPICS = tuple(t.name for t in (bringup.STATUS, bringup.JOINT_COMMANDS, bringup.REQUEST,
                                      bringup.CHUNK, bringup.JOINT_STATES))
# The topic each node writing one of START_TOPICS writes all the time (executor, policy server,
# hardware interface): their readers are created last (see start_waits_for).
HEARD_TOPICS = tuple(t.name for t in (bringup.STATUS, bringup.PRESENCE, bringup.JOINT_STATES))


def start_waits_for(publishers, received):
    """
    Return what starting the executor still waits for (empty: start now).

    `publishers` and `received`: each recorded topic's matched publishers and messages so far.
    A topic of :data:`START_TOPICS` needs a matched publisher. Matching is seen from each side
    on its own: a writer that has not matched this node's reader yet sends it nothing. So a
    node writing one also needs to have been heard on its :data:`HEARD_TOPICS` topic, whose
    reader :class:`Recorder` creates after the others: a participant learns of another's
    readers in the order they were announced (a reliable stream), and a message received there
    means that node's writers have matched every earlier reader too. A topic of HEARD_TOPICS
    with no publisher (a server too old to publish presence) is not waited for.
    """
    waiting = [f'{topic} (no publisher)' for topic in START_TOPICS
               if not publishers.get(topic, 0)]
    waiting += [f'{topic} (matched, nothing received yet)' for topic in HEARD_TOPICS
                if publishers.get(topic, 0) and not received.get(topic, 0)]
    return waiting


def deep(profile, depth=RECORD_DEPTH):
    """Return ``profile`` with a reader queue of at least ``depth`` messages.

    The nodes' own profiles keep the last status (or camera frame) only: a late reader needs
    no more. A recorder that falls behind by 30 ms would then lose a status published just
    before another (a query's hold and its answer, 30 ms apart), and one busy for a second on
    a loaded host every frame of that second.
    """
    profile = copy.copy(profile)
    profile.depth = max(profile.depth, depth)
    return profile


class Recorder:
    """Subscribe raw to the run's topics under a namespace and write them to an MCAP bag."""

    def __init__(self, node, bag_path, namespace='', topics=bringup.RECORD_TOPICS):
        self.node = node
        self.writer = BagWriter(bag_path)
        self.lock = threading.Lock()
        self.counts = {}
        self.subscriptions = {}
        self.closed = False
        types = bringup.topic_types()
        roles = {t.name: t.qos for n in bringup.NODES for t in n.publishes}
        self.prefix = '/' + namespace.strip('/') if namespace.strip('/') else ''
        for topic in sorted(topics, key=lambda name: name in HEARD_TOPICS):   # those last
            full = f'{self.prefix}/{topic}'
            self.writer.add_topic(full, types[topic])
            self.counts[full] = 0
            self.subscriptions[full] = node.create_subscription(
                message_class(types[topic]), full,
                lambda raw, full=full: self._write(full, raw),
                deep(qos.BY_ROLE[roles[topic]]), raw=True)

    def add_topic(self, full, type_name, qos_profile):
        """Record one more topic from now on (absolute name)."""
        with self.lock:
            if full in self.counts or self.closed:
                return False
            self.writer.add_topic(full, type_name)
            self.counts[full] = 0
        self.node.create_subscription(message_class(type_name), full,
                                      lambda raw, full=full: self._write(full, raw),
                                      qos_profile, raw=True)
        return True

    def _write(self, topic, raw):
        with self.lock:
            if self.closed:
                return
            self.writer.write(topic, self.node.get_clock().now().nanoseconds, raw)
            self.counts[topic] += 1

    def unmatched(self):
        """Return the recorded topics that no publisher has matched yet."""
        return [topic for topic, subscription in self.subscriptions.items()
                if subscription.get_publisher_count() == 0]

    def start_waits(self):
        """Return what starting the executor still waits for (:func:`start_waits_for`)."""
        topics = {topic: f'{self.prefix}/{topic}' for topic in START_TOPICS + HEARD_TOPICS}
        with self.lock:
            received = {topic: self.counts.get(full, 0) for topic, full in topics.items()}
        return start_waits_for({topic: self.subscriptions[full].get_publisher_count()
                                for topic, full in topics.items() if full in self.subscriptions},
                               received)

    def close(self):
        """Finish the bag; later messages are ignored."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.writer.close()


class ExecutorStarter:
    """Call executor/start once the service is there, again until it answers (starts a run).

    A request sent right after discovery can be lost, and a start that never arrives leaves the
    executor READY for good: the call is asked again every
    :data:`~remote_inference_py.common.service_call.RETRY_S` until a reply comes
    (:class:`~remote_inference_py.common.service_call.RetriedCall`). A start is safe to repeat:
    the executor answers a second one while the run goes on with ``already running`` and
    refuses one after the run, naming the state it is in.
    """

    def __init__(self, node, who, clock=time.monotonic):
        """Prepare the call for `node`; `who` heads the log lines."""
        self.node, self.who = node, who
        self.call = RetriedCall(node.create_client(Trigger, 'executor/start'), Trigger.Request,
                                clock=clock)
        self.timer = None

    def start(self):
        """Call executor/start now, or once the service appears; again until it answers."""
        if self.timer is None:
            self.timer = self.node.create_timer(0.2, self._poll)
            self._poll()

    def _poll(self):
        asked = self.call.asked
        reply = self.call.poll()
        if self.call.asked > asked:
            self.node.get_logger().info(
                f'{self.who}: executor/start called'
                + (f' (again: no reply to {asked} call(s))' if asked else ''))
        if reply is not None:
            self.timer.cancel()
            log = self.node.get_logger()
            (log.info if reply.success else log.warning)(
                f'{self.who}: executor/start answered: {reply.message}')


# Publishers whose presence means the robot side still runs (and may still move).
ROBOT_SIDE_TOPICS = (bringup.STATUS.name, bringup.HARDWARE_INFO.name, bringup.JOINT_STATES.name)
# How long before the recorder says which of START_TOPICS it still waits for [s].
START_WAIT_SAY_S = 30.0
PARAMETERS = (
    ParamSpec('bag_dir', 'string', '', 'Folder of the new bag (must not exist yet).'),
    ParamSpec('record_images', 'bool', False,
              'Also record every camera as JPEG (cameras/<name>/image_raw/compressed, '
              'subscribed as each appears).'),
    ParamSpec('stop_timeout_s', 'double', 30.0,
              'Asked to stop, keep recording until the robot side has left the graph, or '
              'this long at most.', unit='s', low=0.0, high=3600.0, live=True),
    ParamSpec('start_executor', 'bool', False,
              'Call executor/start once a publisher of each topic a run is made of (executor '
              'status, commands and requests, chunks, joint states) matched and each node '
              'writing them was heard, so the bag holds the run from its first request '
              "(record:=true sets it and turns the executor's autostart off)."),
)


class RecorderNode(Node):
    """Record the run's topics in this node's namespace until the robot side is gone."""

    def __init__(self, **kwargs):
        super().__init__('recorder', **kwargs)
        self.settings = declare_parameters(self, PARAMETERS)
        bag_dir = self.settings['bag_dir']
        if not bag_dir:
            raise ConfigError("parameter 'bag_dir' is empty: name the folder of the new bag")
        if os.path.exists(bag_dir):
            raise ConfigError(f"parameter 'bag_dir': {bag_dir!r} exists already; a bag is "
                              'written to a new folder')
        namespace = self.get_namespace()
        self.recorder = Recorder(self, bag_dir, namespace)
        self.prefix = '' if namespace == '/' else namespace
        self.finished = False
        self.exit_code = 0
        self.stop_deadline = None
        self.create_timer(0.2, self.check_stop)
        # Recorded when a dataset recorder publishes it (not waited for: it may not run).
        self.recorder.add_topic(f'{self.prefix}/{bringup.DATASET_EPISODES.name}',
                                bringup.DATASET_EPISODES.type, qos.LATCHED)
        if self.settings['start_executor']:
            self.starter = ExecutorStarter(self, 'recording')
            self.start_wait = (time.monotonic(), self.create_timer(0.1, self.start_when_matched))
        if self.settings['record_images']:
            self.image_pattern = re.compile(
                '^' + re.escape(self.prefix) + r'/cameras/[A-Za-z0-9_]+/image_raw/compressed$')
            self.create_timer(0.5, self.find_cameras)
            self.find_cameras()
        self.get_logger().info(f'recording {len(self.recorder.counts)} topics to {bag_dir}')

    def start_when_matched(self):
        """Start the executor once :func:`start_waits_for` waits for nothing more."""
        since, timer = self.start_wait
        waiting = self.recorder.start_waits()
        if not waiting:
            timer.cancel()
            self.get_logger().info('every topic of the run has matched, and each node writing '
                                   'them was heard')
            self.starter.start()
        elif since is not None and time.monotonic() - since > START_WAIT_SAY_S:
            self.start_wait = (None, timer)
            self.get_logger().warning(
                f'the executor is not started yet: waiting for {", ".join(waiting)} '
                f'for {START_WAIT_SAY_S:.0f} s')

    def find_cameras(self):
        """Subscribe to camera JPEG topics that appeared since the last look."""
        for name, types in self.get_topic_names_and_types():
            if self.image_pattern.match(name) and 'sensor_msgs/msg/CompressedImage' in types:
                if self.recorder.add_topic(name, 'sensor_msgs/msg/CompressedImage',
                                           deep(qos.IMAGES)):
                    self.get_logger().info(f'recording {name}')

    def robot_side_present(self):
        """Return True while a robot-side node still publishes."""
        return any(self.count_publishers(f'{self.prefix}/{topic}') > 0
                   for topic in ROBOT_SIDE_TOPICS)

    def request_stop(self, reason):
        """Keep recording until the robot side is gone (or the timeout), then finish."""
        self.get_logger().info(f'stop requested: {reason}; recording until the robot side '
                               f'has stopped (at most {self.settings["stop_timeout_s"]} s)')
        self.stop_deadline = time.monotonic() + self.get_parameter('stop_timeout_s').value

    def check_stop(self):
        """Finish once asked to stop and the robot side has left (or time is up)."""
        if self.stop_deadline is None or self.finished:
            return
        if not self.robot_side_present() or time.monotonic() >= self.stop_deadline:
            self.finished = True

    def close(self):
        """Close the bag and say what it holds."""
        self.recorder.close()
        total = sum(self.recorder.counts.values())
        self.get_logger().info(f'bag {self.settings["bag_dir"]} closed: {total} messages')


def main(args=None):
    """Run the recorder node (``ros2 run remote_inference record``)."""
    raise SystemExit(run_node(RecorderNode, args))
