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

r"""
Record a run as a LeRobot dataset while it runs: ``record_dataset:=<folder>`` at launch.

    ros2 run remote_inference record_dataset --ros-args -p dataset_dir:=my_dataset \
        -p repo_id:=me/so101_pick [-p start_executor:=true] [-r __ns:=/robot1]

A node of its own, in its own process, fed by topics: motion never waits on it. It asks the
policy server what the policy consumes (``policy/get_capabilities``) and the hardware what its
cameras publish (``hardware/info``), checks the dataset folder (another dataset's features, fps
or robot type is refused by name) and opens it with LeRobot; then it subscribes, and
recording is ready once a first frame of every camera and the joint states have come (nothing
of one within ``CAMERA_WAIT_S``: refused by name) and, as for the bag of ``record``, once its
subscriptions have matched a publisher of each topic a run is made of and each node writing
them was heard (:func:`~.record.start_waits_for`: a writer that matched this node's reader
late would lose the run's first commands, and the live dataset would be a row short of the
bag's); it says so on the latched ``dataset/state`` (``recording``, or ``refused: <why>``)
and, with ``start_executor`` (the launch sets it, with the executor's ``autostart`` off),
starts the executor then, so the arm moves only once recording can and the first tick has
its observation. Refused, it exits 1 and the executor is never started. Rows are built by
:mod:`.dataset_rows` (the same code as ``analyze BAG --dataset``) and written by
:mod:`.dataset_writer` on a thread behind a bounded queue: rows the writer has no room for are
dropped and counted, never waited for.

Asked to stop, it keeps recording until the robot side has left the graph (the return home
and the final states), or ``stop_timeout_s``; then it saves the open episode and finalizes the
dataset (LeRobot's ``finalize``).
"""

import logging
import threading
import time

from rclpy.duration import Duration
from rclpy.node import Node
from remote_inference.msg import (
    ActionChunk, ExecutorStatus, HardwareInfo, InferenceRequest, ServerPresence)
from remote_inference.srv import GetCapabilities
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger

from remote_inference_py import bringup
from remote_inference_py.analysis.dataset_rows import (
    camera_name, EpisodeEnd, feed, image_array, RowBuilder, schema_from_capabilities,
    SchemaError, stamp_ns)
from remote_inference_py.analysis.record import (
    deep, ExecutorStarter, HEARD_TOPICS, START_WAIT_SAY_S, start_waits_for)
from remote_inference_py.common.node_main import ConfigError, run_node
from remote_inference_py.common.params import declare_parameters, ParamSpec
from remote_inference_py.common.service_call import RetriedCall
from remote_inference_py.transport import qos

PARAMETERS = (
    ParamSpec('dataset_dir', 'string', '', 'Folder of the LeRobot dataset: new, or a dataset '
              'of the same features, fps and robot type to append to.'),
    ParamSpec('repo_id', 'string', '', "The dataset's repo id; empty: local/<folder name>."),
    ParamSpec('robot_type', 'string', 'so101_follower', "The dataset's robot_type."),
    ParamSpec('fps', 'double', 30.0, 'Frames per second: the executor fps (one row per '
              'dispatched control tick).', unit='Hz', low=1.0, high=1000.0),
    ParamSpec('vcodec', 'string', 'libsvtav1', "LeRobot's video codec: libsvtav1, h264, "
              'hevc.'),
    ParamSpec('calibration_file', 'string', '', "The arm's LeRobot calibration JSON (as the "
              "policy server's); empty: the default SO-101 calibration."),
    ParamSpec('camera_timeout_s', 'double', 1.0, 'A camera that sends no frame while the '
              'executor dispatches this long of ticks ends the episode, named.', unit='s',
              low=0.05, high=60.0),
    ParamSpec('queue_rows', 'int', 256, 'Rows waiting for the writer; beyond, rows are '
              'dropped and counted.', low=1, high=100000),
    ParamSpec('start_executor', 'bool', False, 'Call executor/start once the dataset is open, '
              'a first frame of every camera and the joint states came, and each node writing '
              "the run's topics was heard (the launch sets it and turns the executor's "
              'autostart off).'),
    ParamSpec('setup_timeout_s', 'double', 300.0, 'Give up (exit 1, nothing moved) when the '
              'policy server has not answered by then.', unit='s', low=1.0, high=3600.0),
    ParamSpec('stop_timeout_s', 'double', 30.0, 'Asked to stop, keep recording until the '
              'robot side has left the graph, or this long at most.', unit='s', low=0.0,
              high=3600.0),
)
ROBOT_SIDE_TOPICS = (bringup.STATUS.name, bringup.JOINT_STATES.name)
# Camera frames the recorder's queue keeps while it is busy: a second at 30 fps (a 640x480 RGB
# frame is 0.9 MB, so 28 MB a camera at most).
IMAGE_DEPTH = 30
# How long to wait for hardware/info to declare the cameras the policy reads (their size is the
# dataset's); then a camera not declared is recorded at the policy's input size [s].
CAMERA_WAIT_S = 30.0
# How long closing waits for dataset/state's subscribers to take the last state (a refusal) [s].
STATE_ACK_S = 1.0


class DatasetRecorderNode(Node):
    """Record the run in this node's namespace as a LeRobot dataset."""

    def __init__(self, **kwargs):
        super().__init__('dataset_recorder', **kwargs)
        self.settings = declare_parameters(self, PARAMETERS)
        folder = self.settings['dataset_dir']
        if not folder:
            raise ConfigError("parameter 'dataset_dir' is empty: name the dataset folder")
        self.repo_id = self.settings['repo_id'] or f'local/{folder.rstrip("/").split("/")[-1]}'
        self.finished = False
        self.exit_code = 0
        self.stop_deadline = None
        self.builder = None
        self.writer = None
        self.opening = None            # the thread that opens the dataset (imports LeRobot)
        self.open_result = None
        self.hardware = None
        self.capabilities = None
        self.began = time.monotonic()
        self.executor_seen = False
        self.notes_said = 0
        self.heard = set()             # the cameras (and 'joint_states') a message came from
        self.needed = set()            # ... every one of them, before recording is ready
        self.observing_since = None    # since when recording waits for a first frame
        self.readers = {}              # the run's topics: {topic: subscription}
        self.received = {}             # ... {topic: messages received}
        self.writers_said = False      # the wait for the run's writers was named in the log
        self.caps_call = RetriedCall(
            self.create_client(GetCapabilities, 'policy/get_capabilities'),
            GetCapabilities.Request)
        self.starter = ExecutorStarter(self, 'recording')
        self.create_subscription(HardwareInfo, bringup.HARDWARE_INFO.name, self.on_hardware,
                                 qos.LATCHED)
        # The operator's episodes (dataset_rows: RowBuilder.operator), kept in the bag too.
        self.episodes_pub = self.create_publisher(Header, bringup.DATASET_EPISODES.name,
                                                  qos.LATCHED)
        self.state_pub = self.create_publisher(String, bringup.DATASET_STATE.name, qos.LATCHED)
        for start in (True, False):
            self.create_service(Trigger, f'dataset/{"start" if start else "end"}_episode',
                                lambda _, response, s=start: self.on_operator(response, s))
        self.create_timer(0.2, self.step)
        self.get_logger().info(f'dataset {folder} ({self.repo_id}): waiting for the policy '
                               "server's capabilities")

    def on_operator(self, response, start):
        """Begin the next episode (start) or end this one until the next start, from now."""
        if self.builder is None:
            response.success, response.message = False, 'the dataset is not open yet'
            return response
        mark = Header(stamp=self.get_clock().now().to_msg(), frame_id='start' if start else 'end')
        self.builder.operator(stamp_ns(mark.stamp), start)
        self.episodes_pub.publish(mark)
        response.success = True
        response.message = ('the next episode begins at the next dispatched tick' if start else
                            'the episode ends at the next tick; nothing is recorded until '
                            'dataset/start_episode')
        self.get_logger().info(f'dataset: {response.message}')
        return response

    # ---- setup: capabilities, schema, dataset, subscriptions, start ----------------------

    def on_hardware(self, msg):
        """Keep the cameras' declared sizes."""
        self.hardware = msg

    def step(self):
        """Advance the setup; finish when stopped and the robot side is gone."""
        if self.finished:
            return
        if self.writer is None:
            self._setup()
            return
        self._say_notes()
        if self.observing_since is not None:
            self._ready_when_observed()
        present = self.robot_side_present()
        self.executor_seen = self.executor_seen or present
        if self.stop_deadline is not None and (
                not present or time.monotonic() >= self.stop_deadline):
            self.finished = True
        elif self.executor_seen and not present:
            self.get_logger().info('the robot side has left the graph: the run is over')
            self.finished = True

    def _setup(self):
        if self.stop_deadline is not None:
            self.finished = True
            return
        if time.monotonic() - self.began > self.settings['setup_timeout_s']:
            self._refuse(f'the policy server did not answer policy/get_capabilities within '
                         f'{self.settings["setup_timeout_s"]:.0f} s')
            return
        if self.capabilities is None:
            result = self.caps_call.poll()   # asked again while a reply does not come
            if result is not None and result.success:
                self.capabilities = result
                self.caps_at = time.monotonic()
            return
        if self.opening is None:
            if not self._cameras_declared() and time.monotonic() - self.caps_at < CAMERA_WAIT_S:
                return                  # real cameras declare their size once opened
            self.opening = threading.Thread(target=self._open, name='dataset-open', daemon=True)
            self.opening.start()
            return
        if self.opening.is_alive():
            return
        result, self.open_result = self.open_result, None
        if isinstance(result, str):
            self._refuse(result)
            return
        self._subscribe(result)

    def _cameras_declared(self):
        """Return True once hardware/info declares every camera the policy reads."""
        if self.hardware is None:
            return False
        declared = {c.topic.split('/')[1] for c in self.hardware.cameras
                    if c.topic.startswith('cameras/') and c.topic.count('/') >= 2}
        wanted = {camera_name(f.name, f.topic) for f in self.capabilities.features
                  if f.kind == 'rgb'}
        return wanted <= declared

    def _open(self):
        """Build the schema and open the dataset (a thread: LeRobot's import takes seconds)."""
        from remote_inference_py.analysis import dataset_writer
        from remote_inference_py.robot.calibration import Calibration
        caps = self.capabilities
        shapes = {}
        for camera in (self.hardware.cameras if self.hardware is not None else ()):
            parts = camera.topic.split('/')
            if len(parts) >= 2 and parts[0] == 'cameras':
                shapes[parts[1]] = [int(v) for v in camera.shape]
        notes = []
        try:
            schema = schema_from_capabilities(caps.features, caps.action_names, caps.semantics,
                                              self.settings['fps'],
                                              self.settings['robot_type'], shapes, notes)
            schema = dataset_writer.as_existing(self.settings['dataset_dir'], schema, notes)
            calibration = (Calibration.load(self.settings['calibration_file'])
                           if self.settings['calibration_file'] else None)
            dataset = dataset_writer.open_dataset(self.settings['dataset_dir'], self.repo_id,
                                                  schema, self.settings['vcodec'])
        except (ValueError, OSError) as error:
            self.open_result = f'{type(error).__name__}: {error}' if not isinstance(
                error, ValueError) else str(error)
            return
        except Exception as error:  # noqa: B902 - LeRobot's own errors, named
            self.open_result = f'LeRobot could not open the dataset: {error!r}'
            return
        self.open_result = (schema, calibration, dataset, notes)

    def _refuse(self, reason):
        self.get_logger().error(f'dataset {self.settings["dataset_dir"]!r} refused, the arm '
                                f'will not be started by the recorder: {reason}')
        self.state_pub.publish(String(data=f'refused: {reason}'))
        self.exit_code = 1
        self.finished = True

    def _subscribe(self, opened):
        from remote_inference_py.analysis.dataset_writer import DatasetWriter
        schema, calibration, dataset, notes = opened
        for note in notes:
            self.get_logger().info(f'dataset: {note}')
        self.builder = RowBuilder(schema, calibration, self.settings['camera_timeout_s'])
        levels = {logging.INFO: self.get_logger().info, logging.WARNING:
                  self.get_logger().warning, logging.ERROR: self.get_logger().error}
        self.writer = DatasetWriter(dataset, log=lambda level, text: levels.get(
            level, self.get_logger().info)(text), queue_rows=self.settings['queue_rows'])
        for camera in schema.cameras:
            self.create_subscription(Image, f'cameras/{camera.camera}/image_raw',
                                     lambda msg, c=camera.camera: self._image(c, msg),
                                     deep(qos.IMAGES, IMAGE_DEPTH))
        topics = ((JointState, 'joint_commands', qos.COMMANDS),
                  (JointState, 'joint_states', qos.JOINT_STATES),
                  (ExecutorStatus, 'executor/status', qos.LATCHED),
                  (String, 'executor/task', qos.LATCHED),
                  (InferenceRequest, 'policy/request', qos.COMMANDS),
                  (ActionChunk, 'policy/chunk', qos.CHUNKS),
                  (ServerPresence, 'policy/presence', qos.PRESENCE))
        # The readers of the topics each writing node is heard on last (start_waits_for).
        for kind, topic, profile in sorted(topics, key=lambda t: t[1] in HEARD_TOPICS):
            self.received[topic] = 0
            self.readers[topic] = self.create_subscription(
                kind, topic, lambda msg, t=topic: self._feed(t, msg), deep(profile))
        features = ', '.join(f'{k} {tuple(v["shape"])}' for k, v in schema.features().items())
        self.get_logger().info(f'recording dataset {self.settings["dataset_dir"]} at '
                               f'{schema.fps} fps: {features}')
        # The first tick must have its observation: the arm moves once every camera (and the
        # joint states) has come and the run's writers match, so the first rows are recorded
        # as from the bag.
        self.needed = {c.camera for c in schema.cameras} | (
            {'joint_states'} if schema.states else set())
        self.observing_since = time.monotonic()

    def _ready_when_observed(self):
        """Say 'recording' (and start the executor) once everything was heard, or refuse.

        A camera or the joint states silent for ``CAMERA_WAIT_S`` is refused: nothing could be
        recorded. A run's writer not matched or not heard yet (the executor or the policy
        server still starting) is waited for, and named once after ``START_WAIT_SAY_S``.
        """
        waiting = sorted(self.needed - self.heard)
        writers = start_waits_for(
            {t: s.get_publisher_count() for t, s in self.readers.items()}, self.received)
        waited = time.monotonic() - self.observing_since
        if not waiting and not writers:
            self.observing_since = None
            self.state_pub.publish(String(data='recording'))
            heard = ', '.join(sorted(self.needed))
            self.get_logger().info(f'recording: a first message of {heard} came, and each '
                                   "node writing the run's topics was heard (dataset/state: "
                                   'recording)')
            if self.settings['start_executor']:
                self.starter.start()
        elif waiting and waited > CAMERA_WAIT_S:
            self.observing_since = None
            self._refuse(f'nothing of {", ".join(repr(w) for w in waiting)} came within '
                         f'{CAMERA_WAIT_S:.0f} s of the dataset opening')
        elif writers and waited > START_WAIT_SAY_S and not self.writers_said:
            self.writers_said = True
            self.get_logger().warning(f'not recording yet: waiting for {", ".join(writers)} '
                                      f'for {START_WAIT_SAY_S:.0f} s')

    # ---- messages -----------------------------------------------------------------------

    def _feed(self, topic, msg):
        self.received[topic] += 1
        if topic == 'joint_states':
            self.heard.add(topic)
        self._handle(feed(self.builder, '/' + topic, msg))

    def _image(self, camera, msg):
        self.heard.add(camera)
        try:
            frame = image_array(msg, False)
        except SchemaError as error:
            self.get_logger().error(f'camera {camera!r}: {error}', throttle_duration_sec=5.0)
            return
        self._handle(self.builder.image(camera, stamp_ns(msg.header.stamp), frame))

    def _handle(self, events):
        for event in events:
            if isinstance(event, EpisodeEnd):
                say = self.get_logger().error if event.error else self.get_logger().info
                say(f'dataset: episode ends: {event.reason}')
                self.writer.put(event)
            else:
                self.writer.put(event)

    def _say_notes(self):
        notes = self.builder.notes
        for note in dict.fromkeys(notes[self.notes_said:]):
            self.get_logger().error(f'dataset: {note}')
        self.notes_said = len(notes)

    # ---- stop ---------------------------------------------------------------------------

    def robot_side_present(self):
        """Return True while the executor or the hardware interface still publishes."""
        return any(self.count_publishers(topic) > 0 for topic in ROBOT_SIDE_TOPICS)

    def request_stop(self, reason):
        """Keep recording until the robot side is gone (or the timeout), then finish."""
        self.get_logger().info(f'stop requested: {reason}')
        self.stop_deadline = time.monotonic() + self.get_parameter('stop_timeout_s').value

    def close(self):
        """Save the open episode, finalize the dataset and say what it holds."""
        # A refusal is latched, but only while this node lives: let it reach the subscribers.
        self.state_pub.wait_for_all_acked(Duration(seconds=STATE_ACK_S))
        if self.writer is None:
            return
        self._handle(self.builder.finish('the recording ended'))
        errors = self.writer.close()
        counts = self.builder.counts
        self.get_logger().info(
            f'dataset {self.settings["dataset_dir"]} finalized: '
            f'{self.writer.episodes_saved} episodes, {self.writer.frames_saved} frames saved; '
            f'left out: {counts["held_or_starved"]} held or starved ticks, '
            f'{counts["returning"]} returning home, {counts["no_observation"]} before every '
            f'observation had come, {counts["stale_observation"]} with an observation too '
            f'old, {counts["between_episodes"]} between episodes (the '
            f"operator's reset), {self.writer.dropped} dropped (the writer fell behind); "
            f'{counts["late_observation"]} rows written before an observation of theirs came')
        if errors:
            self.exit_code = 1


def main(args=None):
    """Run the dataset recorder (``ros2 run remote_inference record_dataset``)."""
    raise SystemExit(run_node(DatasetRecorderNode, args))
