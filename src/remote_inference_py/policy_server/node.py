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
The policy server node: a thin ROS 2 wrapper over :class:`PolicyServerCore`.

Start-up loads the policy once, validates its declarations against the model and warms it up
(:func:`.loading.load_policy`, before any topic exists), then creates its topics and services
and logs ``Policy server ready: deployment=<name> instance=<id>; awaiting one client``. A
missing checkpoint or manifest, a model whose outputs do not match its action names, an unknown
semantics or an unavailable device stops start-up with a message naming it (exit code 2).

Per robot namespace ``<ns>`` in ``robot_namespaces`` (``''``: the node's own namespace):

=============================  =====  ===============================  ========================
name                           dir    type                             QoS
=============================  =====  ===============================  ========================
``<ns>/joint_states``          in     sensor_msgs/JointState           joint_states (reliable)
``<ns>/<camera topic>``        in     sensor_msgs/Image, or            images (best effort)
                                      CompressedImage for ``.../compressed``
``<ns>/<privileged topic>``    in     std_msgs/Float64MultiArray or    best effort
                                      geometry_msgs/PoseStamped
``<ns>/policy/request``        in     remote_inference/InferenceRequest  commands
``<ns>/policy/chunk``          out    remote_inference/ActionChunk      chunks (reliable)
``<ns>/policy/presence``       out    remote_inference/ServerPresence   presence (best effort)
``<ns>/policy/get_capabilities``  srv  remote_inference/GetCapabilities
``<ns>/policy/admit``          srv    remote_inference/Admit
``<ns>/policy/ask``            srv    remote_inference/Ask             (text queries)
=============================  =====  ===============================  ========================

With ``interface_namespace`` ``<space>`` the ``policy/`` names are
``<ns>/<space>/policy/...``: several servers then serve one robot namespace side by side, and
the robot's executor chooses among them (its ``policy_servers``).

Text queries (docs/ask.md): ``policy/ask`` answers the executor's question,
subtask and steering queries with the runtime's ``generate_text`` (or the ``text_model``'s),
on a text thread of its own (:class:`.text.TextWorker`): the service callback is a coroutine
that awaits the text thread's answer, so the node's executor goes on taking samples and
requests and the serving thread goes on serving chunks while text is generated.
``GetCapabilities.text_commands`` lists the kinds offered; a query of another kind is refused
by name at once.

Camera topics: ``observation.images.<camera>`` reads ``cameras/<camera>/image_raw`` unless the
manifest's ``topic`` or the ``feature_topics`` parameter (``feature=topic``) says otherwise.
With ``image_transport: compressed`` (a server on another host than the arm) the default and
manifest camera topics get ``/compressed`` appended: the hardware interface then sends JPEG
frames (``sensor_msgs/CompressedImage``) and no raw Image crosses the link.
A raw camera whose publisher offers its frames through shared memory on this host
(``<camera topic>/shm``, remote_inference/SharedImage, see :mod:`..transport.shared_images`) is
read from there once a frame has come through; the Image topic is read otherwise, and again
whenever the shared frames stop or cannot be opened here (another host or user).

Presence: a thread of its own publishes a presence sample (this instance's id) on every
``<ns>/policy/presence`` every ``presence_lease_s / 8``
(:mod:`..transport.presence_publisher`), whatever the chunk traffic and however busy serving
is; every chunk and error answer carries the
instance id too. An executor counts the server lost after a lease without any of them.

Threads: callbacks hand samples, admissions and requests to the :class:`.scheduler.Scheduler`
(the node spins one rclpy executor, see ``run_node``), which owns the one serving loop and
calls the core; its ``publish`` is this node's :meth:`PolicyServerNode.publish_answer`. The
serving thread turns the loop: it serves ready requests (preprocessing, the forward pass,
postprocessing), answers observation deadlines and releases the answers ``extra_latency_s``
holds back. When warm-up measured a forward pass within ``inline_serve_max_ms`` (default
2 ms) and one robot is served, the callback that makes a request ready turns the same loop
itself (one thread hand-off less; the serving thread still serves what waits, e.g. a request
whose observation is late); a slower model or several robots (batched) always go through the
serving thread. Four working threads in all (:data:`.scheduler.THREADS`): the rclpy spinner,
the serving thread, the text thread and the presence thread. Nothing is pickled:
observations and chunks are ROS messages.

A chunk's ``header.stamp`` is the capture stamp of the observation used; when the joint
sample and the camera frames differ, the oldest of them (see :mod:`.observation`). A request
that cannot be served is answered with ``error`` set and no positions (unknown session,
no usable observation within ``observation_wait_s``, a failed forward pass, a non-finite
output, pushed out of a full queue). A session's requests are served in order, one at a time;
beyond what the client keeps in flight (``max_requests_per_client`` at most) a newer request
replaces the oldest one still waiting, which is answered at once with an error headed
``superseded`` (one in flight) or ``dropped from a full queue`` (counted as superseded). The
warning that a request was not served is throttled per robot and kind of error
(:data:`.queues.ANSWER_KINDS`).

Three test and benchmark knobs, all 0 in production: ``extra_latency_s`` holds every answer
back that long after it is computed, without holding up serving (a slow link or a remote
queue; answers still leave in order, :mod:`.delivery`), ``extra_compute_s`` keeps each
forward pass busy that much longer (a slower model, reported as inference time), and
``extra_text_s`` makes each text answer that much slower (a slower text model).
"""

import copy
import functools
import threading
import time
import uuid

from geometry_msgs.msg import PoseStamped
import numpy as np
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.task import Future
from remote_inference.msg import InferenceRequest, ObservationFeature
from remote_inference.srv import Admit, Ask, GetCapabilities
from sensor_msgs.msg import CompressedImage as CompressedImageMsg
from std_msgs.msg import Float64MultiArray

from remote_inference_py.common.node_main import ConfigError, run_node
from remote_inference_py.common.params import (
    build_config, declare_parameters, declared, LiveSettings)
from remote_inference_py.contract.check import (
    AdmitRequest, PROTOCOL_VERSION)
from remote_inference_py.contract.plan import plan_from_fields
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import Answer, Request
from remote_inference_py.policy_server.images import CompressedImage, InputError, RawImage
from remote_inference_py.policy_server.loading import load_policy
from remote_inference_py.policy_server.scheduler import Scheduler
from remote_inference_py.policy_server.text import ask_refusal, AskJob, TextWorker
from remote_inference_py.policy_server.topics import COMPRESSED_SUFFIX, topic_name
from remote_inference_py.transport import qos
from remote_inference_py.transport.endpoints import (
    ChunkPublisher, subscribe_joint_states, TransportChoiceError)
from remote_inference_py.transport.presence_publisher import PresencePublisher
from remote_inference_py.transport.shared_images import ImageInput
from remote_inference_py.transport.values import stamp_ns

SUMMARY_PERIOD_S = 5.0
# The commands profile, read with a deeper history: a burst of requests waits to be answered
# (each one is, see the core) instead of being overwritten before a callback takes it.
REQUESTS_QOS = copy.copy(qos.COMMANDS)
REQUESTS_QOS.depth = 100
IMAGE_PATH_CHECK_S = 1.0
ERROR_LOG_PERIOD_S = 5.0

# Declared once, as the fields of ServerConfig.
PARAMETERS = declared(ServerConfig)


class PolicyServerNode(Node):
    """Serve action chunks computed by one policy to admitted executors."""

    def __init__(self, **kwargs):
        super().__init__('policy_server', **kwargs)
        params = declare_parameters(self, PARAMETERS.values())
        self.finished = False
        self.exit_code = 0
        self.instance_id = uuid.uuid4().hex[:12]
        self._log_lock = threading.Lock()
        self._last_logged = {}
        self._suppressed = {}
        self._zero_stamp_warned = set()
        self._stop_event = threading.Event()
        self.runtime = None
        self.core = None
        self.scheduler = None
        self.chunk_pubs = {}
        self.presence = None
        self.image_inputs = []

        self.config = build_config(ServerConfig, params)
        try:
            loaded = load_policy(self.config, log=self.get_logger().info,
                                 sleep=self._stop_event.wait)
        except ValueError as error:   # RuntimeLoadError included
            raise ConfigError(str(error)) from None
        self.runtime, self.core, self.topics = loaded.runtime, loaded.core, loaded.topics
        self.text = loaded.text
        self.text_worker = TextWorker(self.text, self.scheduler_text_inputs,
                                      lambda: self.core.settings.observation_wait_s,
                                      extra_s=lambda: self.core.settings.extra_text_s)
        self.scheduler = Scheduler(
            self.core, self.publish_answer, inline=loaded.inline, rejected=self._rejected,
            log_error=lambda where, text: self.log_throttled('error', (where,), text))
        settings = self.core.settings

        for robot in settings.robot_namespaces:
            self._create_robot_entities(robot)
        self.live = LiveSettings(self, (self.config,), self.apply_settings)
        self.create_timer(SUMMARY_PERIOD_S, self.log_summary)
        self.create_timer(IMAGE_PATH_CHECK_S, self.check_image_paths)
        self.presence = PresencePublisher(
            self, [topic_name(r, self._interface('policy/presence'))
                   for r in settings.robot_namespaces],
            self.instance_id, settings.presence_lease_s)
        self.scheduler.start()
        self.presence.start()
        self.text_worker.start()
        clients = 'one client' if settings.max_clients == 1 else \
            f'{settings.max_clients} clients'
        robots = ', '.join(repr(r) for r in settings.robot_namespaces)
        self.get_logger().info(f'serving robot namespace(s) {robots}; inputs: '
                               f'{self._inputs_text()}')
        self.get_logger().info(f'Policy server ready: deployment={settings.deployment} '
                               f'instance={self.instance_id}; awaiting {clients}')

    # ---- set-up -------------------------------------------------------------------------

    def _create_robot_entities(self, robot):
        spec = self.runtime.spec
        if self.core.assembler.state_joints:
            subscribe_joint_states(
                self, topic_name(robot, 'joint_states'),
                lambda msg, r=robot: self.on_joint_states(r, msg), qos.JOINT_STATES,
                on_malformed=lambda text, r=robot: self._rejected(
                    r, 'joint_states', InputError('malformed', f'malformed JointState: {text}')))
        for name, topic in self.topics.items():
            feature = spec.feature(name)
            full = topic_name(robot, topic)
            if feature.is_image and topic.endswith(COMPRESSED_SUFFIX):
                self.create_subscription(
                    CompressedImageMsg, full,
                    lambda msg, r=robot, f=name: self.on_compressed(r, f, msg), qos.IMAGES)
            elif feature.is_image:   # raw: the pixels stay in the received buffer
                self.image_inputs.append(ImageInput(
                    self, full, qos.IMAGES, lambda msg, r=robot, f=name: self.on_image(r, f, msg),
                    lambda code, text, r=robot, f=name: self._rejected(
                        r, f, InputError(code, text))))
            elif feature.message == 'geometry_msgs/PoseStamped':
                self.create_subscription(
                    PoseStamped, full, lambda msg, r=robot, f=name: self.on_pose(r, f, msg),
                    qos.IMAGES)
            else:
                self.create_subscription(
                    Float64MultiArray, full,
                    lambda msg, r=robot, f=name: self.on_vector(r, f, msg), qos.IMAGES)
        self.create_subscription(InferenceRequest,
                                 topic_name(robot, self._interface('policy/request')),
                                 lambda msg, r=robot: self.on_request(r, msg), REQUESTS_QOS)
        self.chunk_pubs[robot] = ChunkPublisher(
            self, topic_name(robot, self._interface('policy/chunk')), qos.CHUNKS)
        self.create_service(GetCapabilities,
                            topic_name(robot, self._interface('policy/get_capabilities')),
                            lambda req, res, r=robot: self.on_capabilities(r, req, res))
        self.create_service(Admit, topic_name(robot, self._interface('policy/admit')),
                            lambda req, res, r=robot: self.on_admit(r, req, res))
        self.create_service(Ask, topic_name(robot, self._interface('policy/ask')),
                            functools.partial(self.on_ask, robot),   # a coroutine
                            callback_group=ReentrantCallbackGroup())   # awaits the text thread

    def _interface(self, name):
        """Return a policy interface name inside a robot namespace (interface_namespace)."""
        space = self.core.settings.interface_namespace
        return f'{space}/{name}' if space else name

    def _inputs_text(self):
        parts = []
        if self.core.assembler.state_joints:
            parts.append(f'joint_states ({", ".join(self.core.assembler.state_joints)})')
        for name, topic in self.topics.items():
            feature = self.runtime.spec.feature(name)
            resized = (f' (frames of any size resized to {feature.model_size[1]}x'
                       f'{feature.model_size[0]}, {feature.interpolation})'
                       if feature.resizes else '')
            parts.append(f'{topic} -> {name}{resized}')
        return '; '.join(parts)

    # ---- parameters ---------------------------------------------------------------------

    def apply_settings(self, configs, changes):
        """Hand live changes to the core (validated by LiveSettings before they were set)."""
        self.config, = configs
        self.scheduler.update_settings(**changes)

    # ---- inputs -------------------------------------------------------------------------

    def _stamp(self, robot, stream, stamp):
        value = stamp if isinstance(stamp, int) else stamp_ns(stamp)
        if value == 0:
            if (robot, stream) not in self._zero_stamp_warned:
                self._zero_stamp_warned.add((robot, stream))
                self.get_logger().warning(
                    f'{topic_name(robot, stream)} messages have no header stamp; using the '
                    "server's receive time as capture time (only correct on one host)")
            value = self.get_clock().now().nanoseconds
        return value

    def _rejected(self, robot, stream, error):
        """Log a rejected sample (throttled per robot, stream and reason)."""
        if error is not None:
            where = f'{robot}/{stream}' if robot else stream
            self.log_throttled('error', (robot, stream, error.code),
                               f'rejected {where} sample [{error.code}]: {error}')

    def on_joint_states(self, robot, msg):
        """Hand a joint_states sample to the scheduler (validated by name in the core)."""
        self._rejected(robot, 'joint_states', self.scheduler.on_joint_states(
            robot, self._stamp(robot, 'joint_states', msg.stamp_ns), msg.names,
            msg.positions))

    def on_image(self, robot, feature, msg):
        """Hand an image to the scheduler (pixels converted only when used)."""
        image = RawImage(msg.encoding, msg.height, msg.width, msg.step, msg.data,
                         msg.is_bigendian)
        self._rejected(robot, feature, self.scheduler.on_image(
            robot, feature, self._stamp(robot, feature, msg.stamp_ns), image))
        self._log_conversions(robot)

    def on_compressed(self, robot, feature, msg):
        """Hand a compressed image to the scheduler."""
        image = CompressedImage(msg.format, msg.data)
        self._rejected(robot, feature, self.scheduler.on_image(
            robot, feature, self._stamp(robot, feature, msg.header.stamp), image))
        self._log_conversions(robot)

    def _log_conversions(self, robot):
        """Say once how frames of a new size or encoding are resized or converted."""
        for text in self.scheduler.take_notes():
            self.get_logger().info(f'{robot + "/" if robot else ""}{text}')

    def on_pose(self, robot, feature, msg):
        """Hand a pose (x, y, z, qx, qy, qz, qw) to the scheduler."""
        p, q = msg.pose.position, msg.pose.orientation
        self._rejected(robot, feature, self.scheduler.on_privileged(
            robot, feature, self._stamp(robot, feature, msg.header.stamp),
            [p.x, p.y, p.z, q.x, q.y, q.z, q.w]))

    def on_vector(self, robot, feature, msg):
        """Hand a Float64MultiArray (no stamp: the receive time is used) to the scheduler."""
        self._rejected(robot, feature, self.scheduler.on_privileged(
            robot, feature, self.get_clock().now().nanoseconds, list(msg.data)))

    def on_request(self, robot, msg):
        """Hand a request to the scheduler (a malformed plan is refused there at once)."""
        plan, problem = plan_from_fields(
            stamp_ns(msg.plan_start_stamp), msg.plan_steps, msg.frozen_steps,
            msg.plan_positions, self.core.spec.action_joints)
        request = Request(robot, msg.session_id, msg.request_id,
                          stamp_ns(msg.earliest_capture_stamp), msg.task,
                          stamp_ns(msg.header.stamp), plan)
        if problem:
            self.scheduler.refuse(request, f'bad request: {problem}')
        else:
            self.scheduler.on_request(request)

    # ---- services -----------------------------------------------------------------------

    def on_capabilities(self, robot, request, response):
        """Describe what this server serves."""
        contract = self.core.contract
        response.success = True
        response.message = (f'{self.runtime.kind} policy {self.runtime.spec.policy!r} from '
                            f'{self.runtime.source}')
        response.protocol_version = PROTOCOL_VERSION
        response.deployment = contract.deployment
        response.instance_id = self.instance_id
        response.semantics = contract.semantics
        response.action_names = list(contract.action_names)
        response.action_rate = float(contract.action_rate)
        response.chunk_length = int(contract.chunk_length)
        response.features = [self._feature_msg(f) for f in self.runtime.spec.features]
        response.supported_merge_modes = list(contract.merge_modes)
        response.presence_lease_s = float(contract.presence_lease_s)
        response.max_requests_in_flight = int(contract.max_requests_in_flight)
        response.max_clients = self.core.settings.max_clients
        response.active_clients = self.scheduler.active_clients
        response.text_commands = list(self.text.text_commands)
        return response

    def scheduler_text_inputs(self, robot, session_id, earliest_ns):
        """Select a text query's observation (the text thread calls it)."""
        return self.scheduler.text_inputs(robot, session_id, earliest_ns)

    async def on_ask(self, robot, request, response):
        """Answer a text query from the text thread; refuse what cannot be answered at once."""
        refused = ask_refusal(self.text, request.kind, request.text)
        where = f' for robot {robot!r}' if robot else ''
        if refused:
            response.success, response.message = False, refused
            self.get_logger().warning(f'query refused{where}: {refused}')
            return response
        future = Future()
        self.text_worker.submit(AskJob(robot, request.session_id, request.kind, request.text,
                                       request.task, stamp_ns(request.earliest_capture_stamp)),
                                future.set_result)
        result = await future
        response.success, response.message = result.success, result.message
        response.answer = result.answer
        sec, nanosec = divmod(result.capture_ns, 1_000_000_000)
        response.capture_stamp.sec, response.capture_stamp.nanosec = sec, nanosec
        response.queue_wait_ms = result.queue_wait_ms
        response.preprocess_ms = result.preprocess_ms
        response.generate_ms = result.generate_ms
        response.generated_tokens = result.generated_tokens
        response.observation_missing = result.observation_missing
        if result.success:
            self.get_logger().info(
                f'{request.kind} answered{where} (session {request.session_id}) in '
                f'{result.generate_ms:.0f} ms: {request.text!r} -> {result.answer!r}')
        else:
            self.get_logger().warning(f'{request.kind} query not answered{where}: '
                                      f'{result.message}')
        return response

    def _feature_msg(self, feature):
        return ObservationFeature(
            name=feature.name, shape=[int(v) for v in feature.shape], dtype=feature.dtype,
            kind=feature.kind, names=list(feature.joints if feature.kind == 'state'
                                          else feature.names),
            semantics=feature.semantics,
            topic=self.topics.get(feature.name, 'joint_states'), resizes=feature.resizes)

    def on_admit(self, robot, request, response):
        """Admit a client whose contract matches, or say what differed."""
        result = self.scheduler.admit(robot, AdmitRequest.from_message(request))
        response.success = result.success
        response.message = result.message
        response.instance_id = self.instance_id
        where = f' for robot {robot!r}' if robot else ''
        if result.success:
            response.session_id = result.session_id
            self.get_logger().info(
                f'admitted {request.client_name or "a client"}{where}: session '
                f'{result.session_id}, merge mode {request.merge_mode}; '
                f'{self.scheduler.active_clients}/{self.core.settings.max_clients} client(s)')
        else:
            self.get_logger().warning(f'admission refused for {request.client_name or "a client"}'
                                      f'{where}: {result.message}')
        for released in result.released:
            self.get_logger().info(f'session {released} released')
        return response

    # ---- answers ------------------------------------------------------------------------

    def publish_answer(self, answer: Answer):
        """Publish an answer as an ActionChunk (the scheduler's ``publish``)."""
        positions = answer.positions if answer.positions is not None else np.zeros((0, 0))
        timings = answer.timings
        sec, nanosec = divmod(answer.capture_stamp_ns, 1_000_000_000)
        self.chunk_pubs[answer.robot].publish(
            sec=sec, nanosec=nanosec, session_id=answer.session_id,
            request_id=answer.request_id, joint_names=answer.joint_names,
            step_period=answer.step_period, positions=positions, error=answer.error,
            timings=(timings.queue_wait_ms, timings.preprocess_ms, timings.inference_ms,
                     timings.postprocess_ms), instance_id=self.instance_id,
            session_refused=answer.session_refused)
        where = f' robot {answer.robot!r}' if answer.robot else ''
        if answer.error:   # throttled per robot and kind of failure
            self.log_throttled('warning', (answer.robot, 'failed', answer.kind),
                               f'request {answer.request_id}{where} not served: {answer.error}')
            return
        age = (answer.sent_ns - answer.capture_stamp_ns) * 1e-9 if answer.sent_ns else 0.0
        self.get_logger().debug(
            f'request {answer.request_id}{where} session {answer.session_id}: batch '
            f'{answer.batch_size}, queue {timings.queue_wait_ms:.2f} pre '
            f'{timings.preprocess_ms:.2f} infer {timings.inference_ms:.2f} post '
            f'{timings.postprocess_ms:.2f} ms; observation {age * 1000:.1f} ms older than the '
            f'request; {positions.shape[0]} steps')

    # ---- observability and shutdown -----------------------------------------------------

    def log_throttled(self, level, key, text):
        """Log ``text`` now, or count it when the same key was logged recently."""
        now = time.monotonic()
        with self._log_lock:
            last = self._last_logged.get(key)
            if last is not None and now - last < ERROR_LOG_PERIOD_S:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return
            self._last_logged[key] = now
            suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            text += f' ({suppressed} more like it since the last report)'
        # One call site per severity: rclpy refuses to log from one line at two severities.
        if level == 'error':
            self.get_logger().error(text)
        else:
            self.get_logger().warning(text)

    def check_image_paths(self):
        """Move each camera between shared memory and its Image topic as publishers change."""
        for image_input in self.image_inputs:
            image_input.update()

    def log_summary(self):
        """Log the activity summary (about every 5 s)."""
        text = self.scheduler.summary()
        if text:
            self.get_logger().info(text)

    def request_stop(self, reason):
        """Stop serving; close() joins the scheduler's threads."""
        self.get_logger().info(f'stop requested: {reason}')
        self.finished = True

    def close(self):
        """Stop serving, release the model and let the last chunks reach subscribers."""
        self._stop_event.set()
        if self.presence is not None:
            self.presence.close()
        if self.scheduler is not None:
            self.scheduler.stop()
            self.text_worker.stop()
        if self.runtime is not None:
            self.runtime.close()
        for publisher in self.chunk_pubs.values():
            publisher.wait_for_all_acked(Duration(seconds=0.5))
        for image_input in self.image_inputs:
            image_input.close()


def main(args=None):
    """Run the policy server; exit 2 when the policy or the configuration is invalid."""
    raise SystemExit(run_node(PolicyServerNode, args, config_errors=(TransportChoiceError,)))


if __name__ == '__main__':
    main()
