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
The executor node: a thin ROS 2 wrapper over :class:`ExecutorCore`.

It maps parameters to an :class:`ExecutorConfig` and :class:`NodeSettings`, messages to core
calls and core results to messages, and service calls and topic matches to the admission
handshake (:mod:`.admission`, one step per control tick). All decisions (admission, refill,
merge, blend, hold, faults, return) are the handshake's and the core's.

Topics (relative names; remap in the launch file):

=========================  =====  ===========================  ==================================
name                       dir    type                         role
=========================  =====  ===========================  ==================================
``joint_states``           in     sensor_msgs/JointState       measured pose (by name)
``applied_command``        in     sensor_msgs/JointState       target the driver really applied
``hardware/info``          in     remote_inference/HardwareInfo  position-hold declaration
``policy/chunk``           in     remote_inference/ActionChunk   chunks and error answers
``policy/presence``        in     remote_inference/ServerPresence  the server's presence samples
``policy/request``         out    remote_inference/InferenceRequest
``joint_commands``         out    JointState / Float64MultiArray / JointTrajectory (one point)
``executor/status``        out    remote_inference/ExecutorStatus  latched, 10 Hz and on change
``executor/task``          out    std_msgs/String              latched task of dispatched actions
=========================  =====  ===========================  ==================================

Services: ``policy/get_capabilities``, ``policy/admit`` and ``policy/ask`` (client),
``executor/start`` and ``executor/stop`` (``std_srvs/Trigger``).

Action: ``executor/query`` (remote_inference/action/Query): ask the policy a question, for the
next subtask, or steer, while the arm holds (docs/ask.md). The pure state machine
is :mod:`.query`; here the goal is checked (:func:`.query.refusal`: a refusal aborts the goal
with its reason and nothing moves), then the control tick steps the query, pauses and resumes
the core, calls ``policy/ask`` and publishes feedback; the goal's coroutine only awaits the
end. A subtask answer becomes the task of every later request (and of ``executor/task``) until
the next answer or a ``task`` parameter change.

With several candidate servers (``policy_servers``, e.g. ``[gpu1, gpu2]``) the four
``policy/`` names exist once per candidate, ``<candidate>/policy/...``; admission surveys them
and uses the chosen one (``executor/choice.py``), and ``on_server_loss: failover`` moves to
another after a loss, once the arm holds.

Threads: the control tick runs on a thread of its own with absolute deadlines
(``common/ticker.py``); messages, services and the status timer are handled by rclpy's
EventsExecutor on another (``run_node``). Every callback only hands data to the core and
returns in well under a millisecond, and every core call is made under one lock.

Server presence (:mod:`.presence`): every presence sample, chunk and error answer is noted
with the instance id it carries, and every tick checks the lease; a loss of the admitted
instance (lease expired, another instance heard, or a refusal retrying cannot change) is
reported once, through :meth:`ExecutorNode.on_server_lost`.
"""

import collections
from dataclasses import replace
import threading
import time
import traceback

import numpy as np
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.task import Future
from rclpy.time import Time
from remote_inference.action import Query as QueryAction
from remote_inference.msg import (
    ExecutorStatus,
    HardwareInfo,
    InferenceRequest,
    ObservationFeature,
    ServerPresence as ServerPresenceMsg,
)
from remote_inference.srv import Admit, Ask, GetCapabilities
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from remote_inference_py.common.node_main import run_node
from remote_inference_py.common.params import (
    build_configs, declare_parameters, declared, LiveSettings)
from remote_inference_py.common.ticker import Ticker
from remote_inference_py.contract.admission import publishes_presence
from remote_inference_py.executor import query as queries
from remote_inference_py.executor.admission import (
    Admitted, AskAdmission, AskCapabilities, Client, Hardware, Phase, Refused)
from remote_inference_py.executor.choice import (
    AskCandidate, candidate_label, Chosen, Selection, SelectionFacts)
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings
from remote_inference_py.executor.core import Chunk, ExecutorCore, State
from remote_inference_py.executor.first_answer import FirstAnswer
from remote_inference_py.executor.presence import ServerLoss, ServerPresence
from remote_inference_py.transport import qos
from remote_inference_py.transport.endpoints import (
    subscribe_chunks, subscribe_joint_states, TransportChoiceError)

SUMMARY_PERIOD_S = 5.0
STATUS_PERIOD_S = 0.1
TICK_WINDOW = 1000


# Declared once, as the fields of ExecutorConfig (the core's) and NodeSettings (the node's).
PARAMETERS = declared(ExecutorConfig, NodeSettings)


class ExecutorNode(Node):
    """Dispatch one target per control tick from a buffer refilled by the policy server."""

    def __init__(self, **kwargs):
        super().__init__('executor', **kwargs)
        self.config, self.settings = build_configs(
            declare_parameters(self, PARAMETERS.values()), ExecutorConfig, NodeSettings)

        self.finished = False
        self.exit_code = 0
        self.lock = threading.RLock()
        self.core = ExecutorCore(self.config)
        self.hardware = None   # what hardware/info declares (admission.Hardware)
        self.measured_once = False
        self.candidates = self.settings.policy_servers
        self.server = self.candidates[0]   # the candidate in use (policy_servers)
        self.server_choice = ''            # what admission found at each candidate
        self.lost_servers = []             # candidates lost so far (failover skips them)
        self.failing_over = False
        self.admission = Selection(self._admission_client(), self.candidates, time.monotonic())
        self.admission_future = None   # the service call whose reply admission waits for
        self.survey_futures = {}       # candidate -> its capabilities call (the survey)
        self.start_requested = self.settings.autostart
        self.presence = ServerPresence(self.settings.presence_lease_s)   # under self.lock
        self.first_answer = FirstAnswer()   # repeats a session's first request (under the lock)
        self.last_summary = time.monotonic()
        self.last_stats = None
        self.capabilities = None
        self.task_published = None
        self.last_tick_time = None
        self.tick_periods = collections.deque(maxlen=TICK_WINDOW)
        self.task_override = None     # the last subtask answer (executor/query)
        self.query = None             # the running executor/query goal (QueryGoal)

        io = MutuallyExclusiveCallbackGroup()
        subscribe_joint_states(self, 'joint_states', self.on_joint_states, qos.JOINT_STATES,
                               callback_group=io)
        subscribe_joint_states(self, 'applied_command', self.on_applied, qos.COMMANDS,
                               callback_group=io)
        self.create_subscription(HardwareInfo, 'hardware/info', self.on_hardware_info,
                                 qos.LATCHED, callback_group=io)
        # One policy interface per candidate server (policy_servers; '' = policy/... here).
        self.chunk_subs, self.request_pubs = {}, {}
        self.capabilities_clients, self.admit_clients, self.ask_clients = {}, {}, {}
        for candidate in self.candidates:
            def name(relative, c=candidate):
                return f'{c}/{relative}' if c else relative
            self.chunk_subs[candidate] = subscribe_chunks(
                self, name('policy/chunk'), lambda msg, c=candidate: self.on_chunk(msg, c),
                qos.CHUNKS, callback_group=io)
            self.create_subscription(
                ServerPresenceMsg, name('policy/presence'),
                lambda msg, c=candidate: self.on_presence(msg, c), qos.PRESENCE,
                callback_group=io)
            self.request_pubs[candidate] = self.create_publisher(
                InferenceRequest, name('policy/request'), qos.COMMANDS)
            self.capabilities_clients[candidate] = self.create_client(
                GetCapabilities, name('policy/get_capabilities'), callback_group=io)
            self.admit_clients[candidate] = self.create_client(
                Admit, name('policy/admit'), callback_group=io)
            self.ask_clients[candidate] = self.create_client(
                Ask, name('policy/ask'), callback_group=io)
        self.chunk_sub = self.chunk_subs[self.server]
        self.request_pub = self.request_pubs[self.server]
        self.command_pub = self.create_publisher(
            {'joint_state': JointState, 'float64_multi_array': Float64MultiArray,
             'joint_trajectory': JointTrajectory}[self.settings.output_format],
            'joint_commands', qos.COMMANDS)
        self.status_pub = self.create_publisher(ExecutorStatus, 'executor/status', qos.LATCHED)
        self.task_pub = self.create_publisher(String, 'executor/task', qos.LATCHED)
        self.capabilities_client = self.capabilities_clients[self.server]
        self.admit_client = self.admit_clients[self.server]
        self.ask_client = self.ask_clients[self.server]
        self.query_server = ActionServer(
            self, QueryAction, 'executor/query', self.on_query,
            cancel_callback=self.on_query_cancel,
            callback_group=ReentrantCallbackGroup())   # a goal awaits its end: block nothing
        self.create_service(Trigger, 'executor/start', self.on_start, callback_group=io)
        self.create_service(Trigger, 'executor/stop', self.on_stop, callback_group=io)
        self.live = LiveSettings(self, (self.config, self.settings), self.apply_settings)
        self.create_timer(STATUS_PERIOD_S, self.publish_status, callback_group=io)
        self.get_logger().info(
            f'executor up: fps={self.config.fps} x{self.config.interpolation_multiplier}, '
            f'merge={self.config.chunk_merge}, synchronous={self.config.synchronous}, '
            f'refill_seconds={self.config.refill_seconds}, output={self.settings.output_format}'
            f'; waiting for the policy server to admit us'
            + (f' (candidates: {", ".join(candidate_label(c) for c in self.candidates)}; on '
               f'server loss: {self.settings.on_server_loss})' if len(self.candidates) > 1
               else ''))
        self.ticker = Ticker(self.config.tick_period, self.on_tick, self._tick_failed, 'control')
        self.ticker.start()

    # ---- parameters ---------------------------------------------------------------------

    def apply_settings(self, configs, changes):
        """Use live changes from now on (validated by LiveSettings before they were set)."""
        config, settings = configs
        with self.lock:
            self.core.update_config(config)
            self.config, self.settings = config, settings
            if 'task' in changes:   # the user's task replaces a subtask answer
                self.task_override = None
            self.admission.update(self._admission_client())

    # ---- inputs -------------------------------------------------------------------------

    def _by_name(self, msg, what):
        """Positions of a JointState in joint_names order; raise naming a missing joint."""
        index = {name: i for i, name in enumerate(msg.names)}
        if len(msg.positions) != len(msg.names):
            raise ValueError(f'{what} has {len(msg.names)} names but {len(msg.positions)} '
                             f'positions')
        missing = [n for n in self.config.joint_names if n not in index]
        if missing:
            raise ValueError(f"joint '{missing[0]}' missing from {what}")
        return np.array([msg.positions[index[n]] for n in self.config.joint_names])

    def on_joint_states(self, msg):
        """Hand the measured pose to the core."""
        try:
            positions = self._by_name(msg, 'joint_states')
        except ValueError as error:
            self.get_logger().error(str(error), throttle_duration_sec=2.0)
            return
        with self.lock:
            if self.core.on_measured(positions):
                self.measured_once = True
            else:
                self.get_logger().error('joint_states carries a non-finite position; ignored',
                                        throttle_duration_sec=2.0)

    def on_applied(self, msg):
        """Hand the target the driver really applied to the core (it is what we hold)."""
        try:
            positions = self._by_name(msg, 'applied_command')
        except ValueError as error:
            self.get_logger().error(str(error), throttle_duration_sec=2.0)
            return
        with self.lock:
            self.core.on_applied(positions)

    def on_hardware_info(self, msg):
        """Remember what the hardware declares; a driver fault stops motion."""
        self.hardware = Hardware.from_message(msg)
        if msg.state == 'fault':
            with self.lock:
                self.core.on_actuation_failed(f'hardware interface fault: {msg.message}',
                                              time.monotonic())

    def on_presence(self, msg, candidate=None):
        """Note a presence sample of the server (another instance loses the admitted one)."""
        if candidate is not None and candidate != self.server:
            return   # another candidate: its presence says nothing of our session
        now = time.monotonic()
        with self.lock:
            loss = self.presence.heard(msg.instance_id, now, 'a presence sample', sample=True)
        if loss is not None:
            self.on_server_lost(loss)

    def on_chunk(self, msg, candidate=None):
        """Validate and merge a chunk (the core drops it whole, with a reason, if bad)."""
        if candidate is not None and candidate != self.server:
            return   # another candidate's interface: we sent it no request
        now = time.monotonic()
        with self.lock:
            ours = msg.session_id == self.core.session_id
            echo = ours and self.first_answer.echo(msg.request_id)
            sends = self.first_answer.heard(msg.request_id) if ours else 0
            if msg.session_refused:
                loss = self.presence.refused(msg.instance_id, msg.error, now)
            else:
                loss = self.presence.heard(msg.instance_id, now,
                                           'an answer' if msg.error else 'a chunk')
        if loss is not None:
            self.on_server_lost(loss)
        if sends > 1:
            self.get_logger().info(f'first answer of session {msg.session_id} came after '
                                   f'{sends} sends of request {msg.request_id}')
        if msg.session_refused:   # never retried: the loss above ends the requests
            self.get_logger().warning(f'request {msg.request_id} refused: {msg.error}')
            return
        if echo:   # the same answer again, for a repeat that crossed the first answer
            self.get_logger().debug(f'a second answer to repeated request {msg.request_id} '
                                    'ignored')
            return
        chunk = Chunk(session_id=msg.session_id, request_id=msg.request_id,
                      capture_time=msg.stamp_ns * 1e-9 - self._clock_offset(),
                      joint_names=tuple(msg.joint_names), step_period=msg.step_period,
                      positions=np.asarray(msg.positions, dtype=np.float64),
                      step_count=msg.step_count)
        with self.lock:
            if msg.error:
                self.core.on_request_failed(msg.request_id, f'server: {msg.error}', now)
                self.get_logger().warning(f'request {msg.request_id} not served: {msg.error}')
                return
            verdict = self.core.on_chunk(chunk, now)
        if verdict.accepted:
            self.get_logger().debug(
                f'chunk {msg.request_id}: turnaround {verdict.turnaround:.3f} s, playback at '
                f'submission {verdict.playback_at_submission:.3f} s, observation age '
                f'{verdict.observation_age:.3f} s, trimmed {verdict.trimmed_steps}, usable '
                f'{verdict.usable_steps}, overlap {verdict.overlap_steps}, seam '
                f'{verdict.seam if verdict.seam is not None else 0.0:.4f} rad; server '
                f'queue {msg.queue_wait_ms:.1f} pre {msg.preprocess_ms:.1f} infer '
                f'{msg.inference_ms:.1f} post {msg.postprocess_ms:.1f} ms')
        elif self.core.state == State.STOPPING:   # late answers to the last request
            self.get_logger().info(f'dropped chunk {msg.request_id}: {verdict.reason}')
        else:
            self.get_logger().warning(f'dropped chunk {msg.request_id}: {verdict.reason}')

    def on_server_lost(self, loss: ServerLoss):
        """Report the loss of the admitted server (once): no more requests, hold, fault.

        The one place a loss is acted on; ``loss.reason`` says how it showed (a
        :class:`.presence.LossReason`).
        """
        with self.lock:
            stopping = self.core.state in (State.STOPPING, State.STOPPED, State.FAULT)
            self.core.server_lost(loss.at, loss.describe())
        if stopping:   # a whole-system stop: the return needs no server
            self.get_logger().info(f'policy server gone while stopping ({loss.describe()})')
        else:
            self.get_logger().error(
                f'{loss.describe()}; this session will not resume'
                + (f' (server {candidate_label(self.server)}; on_server_loss failover: another '
                   'candidate once the arm holds)'
                   if self.settings.on_server_loss == 'failover' else ''))

    # ---- time ---------------------------------------------------------------------------

    def _clock_offset(self):
        """Return ROS time minus the core's monotonic clock [s], the two read back to back.

        Stamps cross between the clocks through this offset only: a conversion against a
        `now` read earlier in a callback would shift by however long the callback waited
        (milliseconds under load), enough to move a capture onto the next action step.
        """
        ros_now = self.get_clock().now().nanoseconds
        return ros_now * 1e-9 - time.monotonic()

    # ---- admission ----------------------------------------------------------------------

    def _admission_client(self):
        """Return what we ask the policy server for, from the parameters."""
        cfg, settings = self.config, self.settings
        return Client(client_name=self.get_fully_qualified_name(),
                      deployment=settings.deployment, semantics=settings.semantics,
                      action_names=cfg.joint_names, action_rate=cfg.fps,
                      merge_mode='synchronous' if cfg.synchronous else cfg.chunk_merge,
                      expected_features=settings.expected_features,
                      require_position_hold=settings.require_position_hold,
                      timeout_s=settings.admission_timeout_s,
                      presence_lease_s=settings.presence_lease_s,
                      max_requests_in_flight=cfg.max_requests_in_flight)

    def _use_server(self, candidate):
        """Make ``candidate`` the server in use: its endpoints and a fresh presence."""
        self.server = candidate
        self.chunk_sub = self.chunk_subs[candidate]
        self.request_pub = self.request_pubs[candidate]
        self.capabilities_client = self.capabilities_clients[candidate]
        self.admit_client = self.admit_clients[candidate]
        self.ask_client = self.ask_clients[candidate]
        with self.lock:   # a new server: its presence starts afresh (admission admits it)
            self.presence = ServerPresence(self.settings.presence_lease_s)

    def _begin_failover(self, now_mono):
        """Ask the other candidates for a new session (on_server_loss failover, arm held)."""
        self.failing_over = True
        self.lost_servers.append(self.server)
        self.admission_future = None
        self.survey_futures = {}
        self.admission = Selection(self._admission_client(), self.candidates, now_mono,
                                   exclude=self.lost_servers)
        self.get_logger().warning(
            f'failing over: server {candidate_label(self.server)} lost and the arm holds; '
            f'asking {", ".join(candidate_label(c) for c in self.admission.candidates)} '
            'for a new session')

    def _advance_admission(self, now_mono):
        """Run the admission handshake one step per tick (executor/choice.py); never block."""
        future = self.admission_future
        facts = SelectionFacts(
            now=now_mono, hardware=self.hardware,
            ready={c: client.service_is_ready()
                   for c, client in self.capabilities_clients.items()},
            answers={c: f.result() for c, f in self.survey_futures.items() if f.done()},
            reply=future.result() if future is not None and future.done() else None,
            request_subscribers=self.request_pub.get_subscription_count(),
            chunk_publishers=self.chunk_sub.get_publisher_count())
        for action in self.admission.step(facts):
            if isinstance(action, AskCandidate):
                self.survey_futures[action.candidate] = \
                    self.capabilities_clients[action.candidate].call_async(
                        GetCapabilities.Request())
            elif isinstance(action, Chosen):
                self.admission_future = None
                self.server_choice = action.choice.text()
                self._use_server(action.candidate)
                self.get_logger().info(f'server choice: {candidate_label(action.candidate)} '
                                       f'({self.server_choice})')
            elif isinstance(action, AskCapabilities):
                self.admission_future = self.capabilities_client.call_async(
                    GetCapabilities.Request())
            elif isinstance(action, AskAdmission):
                self.admission_future = self.admit_client.call_async(self._admit_message(action))
            elif isinstance(action, Admitted):
                self.admission_future = None
                self.capabilities = action.capabilities
                with self.lock:
                    if self.failing_over and not (self.core.server_is_lost
                                                  and self.core.state == State.WAITING):
                        self.failing_over = False   # the grace ran out meanwhile: faulted
                        self.get_logger().error(f'failover too late: the executor is '
                                                f'{self.core.state.name}')
                        return
                    if self.failing_over:
                        self.core.fail_over(action.session_id, action.chunk_length,
                                            time.monotonic())
                    else:
                        self.core.admit(action.session_id, action.chunk_length)
                    self.presence.admit(action.instance_id, now_mono, publishes_presence(
                        int(action.capabilities.protocol_version)))
                    self.first_answer = FirstAnswer()   # a new session: unanswered again
                if self.failing_over:
                    self.failing_over = False
                    self.get_logger().warning(
                        f'failed over to server {candidate_label(self.server)}: new session '
                        f'{action.session_id} (instance {action.instance_id}); moving again '
                        'only from a fresh capture')
                self.get_logger().info(
                    f'admitted: session={action.session_id} instance={action.instance_id} '
                    + (f'server={candidate_label(self.server)} ' if len(self.candidates) > 1
                       else '') +
                    f'deployment={self.settings.deployment} '
                    f'semantics={self.settings.semantics} '
                    f'chunk_length={action.chunk_length}; settings: {self._settings_text()}')
                version = int(action.capabilities.protocol_version)
                if not publishes_presence(version):
                    self.get_logger().info(
                        f'the server speaks protocol {version}: it may publish no presence '
                        'samples, so its lease is kept by its answers while a request is owed')
            elif isinstance(action, Refused) and self.failing_over:   # hold, fault as today
                self.admission_future = None
                self.get_logger().error(f'failover found no server: {action.reason}')
                with self.lock:
                    self.core.fault(f'server lost and failover found no server: '
                                    f'{action.reason}', time.monotonic())
            elif isinstance(action, Refused):   # never move, say why, exit non-zero
                self.admission_future = None
                self.get_logger().error(f'admission refused, the arm will not move: '
                                        f'{action.reason}')
                with self.lock:
                    self.core.fault(f'admission refused: {action.reason}', time.monotonic())
            elif action.level == 'warning':
                self.get_logger().warning(action.text)
            else:
                self.get_logger().info(action.text)

    def _admit_message(self, ask):
        """Build the Admit request message; we offer the features the server consumes."""
        request = ask.request
        msg = Admit.Request()
        msg.protocol_version = request.protocol_version
        msg.client_name = request.client_name
        msg.deployment = request.deployment
        msg.semantics = request.semantics
        msg.action_names = list(request.action_names)
        msg.action_rate = request.action_rate
        offered = {f.name: f for f in request.features}   # images at the cameras' sizes
        msg.features = [ObservationFeature(
            name=f.name, shape=[int(v) for v in offered[f.name].shape],
            dtype=offered[f.name].dtype, kind=offered[f.name].kind, names=f.names,
            semantics=f.semantics, topic=f.topic) for f in ask.capabilities.features]
        msg.merge_mode = request.merge_mode
        msg.hardware_position_hold = request.hardware_position_hold
        msg.presence_lease_s = request.presence_lease_s
        msg.max_requests_in_flight = request.max_requests_in_flight
        return msg

    # ---- control tick -------------------------------------------------------------------

    def on_tick(self):
        """Do one control tick: admission step, core tick, request and command out."""
        now = time.monotonic()
        if self.last_tick_time is not None:
            self.tick_periods.append(now - self.last_tick_time)
        self.last_tick_time = now
        if (self.settings.on_server_loss == 'failover' and not self.failing_over
                and self.core.server_is_lost and self.core.state == State.WAITING):
            self._begin_failover(now)   # the arm holds: ask another candidate
        if not self.admission.done:
            self._advance_admission(now)
        with self.lock:
            loss = self.presence.check(now)
        if loss is not None:
            self.on_server_lost(loss)
        with self.lock:
            if self.start_requested and self.core.state == State.READY:
                why = self.admission.not_ready_to_start(self.measured_once, self.hardware)
                if not why:
                    self.core.start(now)
                    self.start_requested = False
                    self.get_logger().info('motion started')
            out = self.core.tick(now)
            held_or_resumed = False
            if self.query is not None:
                held_or_resumed, out = self._step_query(now, out)
        if out.request is not None and not self.core.paused:   # a pause drained it at once
            self._send_request(out.request)
        self._repeat_first_request(now)
        if out.command is not None:
            self._send_command(out.command)
        for event in out.events:
            self.get_logger().info(event)
        if out.events or held_or_resumed:   # a query's hold and resume are on the status too
            self.publish_status()
        if now - self.last_summary >= SUMMARY_PERIOD_S:
            self.last_summary = now
            self._log_summary()
        if self.core.is_terminal and not self.finished:
            first = self.first_answer
            if first.total_sends > 1 and not first.answered:
                self.get_logger().error(
                    f'server {candidate_label(self.server)} never answered session '
                    f'{self.core.session_id}: {first.total_sends} sends of its first '
                    f'request(s) over {now - first.began:.2f} s; its policy/request '
                    'subscription or policy/chunk publisher never matched ours, or it is stuck')
            self.publish_status()
            self.exit_code = 0 if self.core.state == State.STOPPED else 1
            self.get_logger().info(f'executor finished: {self.core.state.name}'
                                   f'{": " + self.core.stats().message if self.exit_code else ""}')
            self.finished = True

    def _tick_failed(self, error):
        """Finish with an error after a tick raised (no more ticks: the arm holds its target)."""
        self.get_logger().fatal('control tick failed: ' + ''.join(
            traceback.format_exception(type(error), error, error.__traceback__)))
        self.exit_code = 1
        self.finished = True

    def _send_request(self, order):
        msg = InferenceRequest()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.session_id = self.core.session_id
        msg.request_id = order.request_id
        offset = self._clock_offset()

        def stamp(core_time):
            return Time(nanoseconds=int(round((core_time + offset) * 1e9))).to_msg()

        msg.earliest_capture_stamp = stamp(order.earliest_capture_time)
        msg.task = self.current_task
        if order.plan is not None:
            msg.plan_start_stamp = stamp(order.plan.start)
            msg.plan_steps = order.plan.steps
            msg.frozen_steps = order.plan.frozen_steps
            msg.plan_positions = order.plan.positions.reshape(-1).tolist()
        self.request_pub.publish(msg)
        with self.lock:
            self.first_answer.sent(msg, time.monotonic())
            self.presence.requested(time.monotonic())
        if self.task_published != msg.task:
            self.task_published = msg.task
            self.task_pub.publish(String(data=msg.task))
        self.get_logger().debug(f'request {order.request_id} ({order.kind}): playback at '
                                f'submission {order.playback_at_submission:.3f} s')

    def _repeat_first_request(self, now):
        """Publish the session's first request again while nothing of it came back.

        Only while the core waits for that answer (first_answer.py says why and when).
        """
        with self.lock:
            waiting = self.core.state == State.WAITING and not self.core.server_is_lost
            repeat = self.first_answer.due(now) if waiting else None
        if repeat is None:
            return
        self.request_pub.publish(repeat.message)
        self.get_logger().info(
            f'no answer to request {repeat.message.request_id} of session '
            f'{repeat.message.session_id} after {repeat.waited:.2f} s: sent it again '
            f'({repeat.sends} sends; the server endpoints may not have matched ours yet)')

    def _send_command(self, command):
        names = list(self.config.joint_names)
        values = [float(v) for v in command]
        stamp = self.get_clock().now().to_msg()
        fmt = self.settings.output_format
        if fmt == 'joint_state':
            msg = JointState(name=names, position=values)
            msg.header.stamp = stamp
        elif fmt == 'float64_multi_array':
            msg = Float64MultiArray(data=values)
        else:
            point = JointTrajectoryPoint(positions=values)
            point.time_from_start = Duration(seconds=self.config.tick_period).to_msg()
            msg = JointTrajectory(joint_names=names, points=[point])
            msg.header.stamp = stamp
        self.command_pub.publish(msg)

    # ---- executor/query -----------------------------------------------------------------

    @property
    def current_task(self):
        """Return the task of the next request: the last subtask answer, else the parameter."""
        return self.task_override if self.task_override is not None else self.settings.task

    def _query_settings(self):
        s = self.settings
        return queries.QuerySettings(max_text_chars=s.query_max_text_chars,
                                     answer_timeout_s=s.query_answer_timeout_s,
                                     steering_period_s=s.steering_period_s)

    async def on_query(self, handle):
        """Run an executor/query goal: refuse it by name, or await what the tick makes of it."""
        goal = handle.request
        with self.lock:
            offered = tuple(getattr(self.capabilities, 'text_commands', ()))
            refused = queries.refusal(
                goal.kind, goal.text, offered=offered,
                admitted=self.admission.phase is Phase.ADMITTED, state=self.core.state.name,
                server_lost=self.core.server_is_lost, busy=self.query is not None,
                settings=self._query_settings())
            if not refused:
                self.query = QueryGoal(handle, queries.Query(
                    goal.kind, goal.text, self.current_task, self._query_settings()))
        if refused:
            self.get_logger().warning(f'query refused, nothing moves: {refused}')
            handle.abort()
            return QueryAction.Result(success=False, message=refused,
                                      task=self.current_task)
        self.get_logger().info(f'query accepted: {goal.kind} {goal.text!r}')
        finish = await self.query.finished
        status = {'succeeded': handle.succeed, 'canceled': handle.canceled,
                  'aborted': handle.abort}[finish.status]
        if handle.is_active:
            status()
        return QueryAction.Result(
            success=finish.status == 'succeeded', message=finish.message,
            answer=finish.answer, task=finish.task, rounds=finish.rounds, hold_s=finish.hold_s,
            ask_s=finish.ask_s, generate_ms=finish.generate_ms, resume_s=finish.resume_s)

    def on_query_cancel(self, handle):
        """Accept a cancel: the tick resumes from a fresh capture, then ends the goal."""
        with self.lock:
            if self.query is not None and self.query.handle is handle:
                self.query.cancel = True
        return CancelResponse.ACCEPT

    def _step_query(self, now, out):
        """Step the running query (under the lock) and carry out its actions.

        Return (True if it paused or resumed motion, the tick's output). A pause replaces the
        tick's command, not sent yet, with the hold: the arm holds from the pausing tick on.
        """
        run = self.query
        changed = False
        reply = None
        if run.future is not None and run.future.done():
            result = run.future.result()
            run.future = None
            reply = (queries.Reply(False, 'policy/ask failed') if result is None else
                     queries.Reply(result.success, result.message, result.answer,
                                   result.generate_ms, result.observation_missing))
        facts = queries.Facts(now, self.core.state.name, self.core.stats().message,
                              dispatched=out.command is not None and not out.held
                              and self.core.state == State.RUNNING,
                              reply=reply, cancel=run.cancel)
        for action in run.query.step(facts):
            if isinstance(action, queries.Pause):
                out = replace(out, command=self.core.pause(now, action.reason), held=True)
                changed = True
            elif isinstance(action, queries.Ask):
                run.future = self._ask(action)
            elif isinstance(action, queries.SetTask):
                self.task_override = action.task
                self.task_published = action.task
                self.task_pub.publish(String(data=action.task))
                self.get_logger().info(f'new task from the policy: {action.task!r}')
            elif isinstance(action, queries.Resume):
                self.core.resume(now, action.reason)
                changed = True
            elif isinstance(action, queries.Feedback):
                run.handle.publish_feedback(QueryAction.Feedback(
                    phase=action.phase, round=action.round, answer=action.answer))
            elif isinstance(action, queries.Finish):
                self.query = None
                self.get_logger().info(
                    f'query {action.status}: {action.message}; answer {action.answer!r}; '
                    f'held {action.hold_s:.2f} s (ask {action.ask_s:.2f} s, resume '
                    f'{action.resume_s:.2f} s)')
                run.finished.set_result(action)
        return changed, out

    def _ask(self, ask):
        msg = Ask.Request(session_id=self.core.session_id, kind=ask.kind, text=ask.text,
                          task=ask.task)
        msg.earliest_capture_stamp = Time(nanoseconds=int(round(
            (ask.earliest + self._clock_offset()) * 1e9))).to_msg()
        return self.ask_client.call_async(msg)

    # ---- services and shutdown ----------------------------------------------------------

    def on_start(self, request, response):
        """Start motion once admitted, measured and (if required) position hold declared."""
        why = self.admission.not_ready_to_start(self.measured_once, self.hardware)
        if self.core.state == State.RUNNING:
            response.success, response.message = True, 'already running'
        elif self.core.state != State.READY and self.admission.phase is Phase.ADMITTED:
            response.success = False
            response.message = f'cannot start in state {self.core.state.name}'
        else:
            with self.lock:
                self.start_requested = True
            response.success = True
            response.message = 'starting' if not why else f'will start when ready: {why}'
        return response

    def on_stop(self, request, response):
        """Stop: return to the initial position (if configured), then finish."""
        self.request_stop('executor/stop called')
        response.success = True
        response.message = 'stopping'
        return response

    def request_stop(self, reason):
        """Begin a clean stop; the node finishes when the core is terminal."""
        self.get_logger().info(f'stop requested: {reason}')
        with self.lock:
            if self.core.state in (State.IDLE, State.READY):
                self.core.stop(time.monotonic())
                if not self.core.is_terminal:
                    self.finished = True
            else:
                self.core.stop(time.monotonic())

    def close(self):
        """Stop ticking; publish the final status and let it reach subscribers."""
        self.ticker.stop()
        self.publish_status()
        for publisher in (self.command_pub, self.status_pub, self.request_pub):
            publisher.wait_for_all_acked(Duration(seconds=1.0))

    # ---- observability ------------------------------------------------------------------

    def publish_status(self):
        """Publish the current numbers on executor/status."""
        with self.lock:
            stats = self.core.stats()
        msg = ExecutorStatus()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.state = int(stats.state)
        msg.state_name = stats.state.name
        msg.message = stats.message
        msg.session_id = stats.session_id
        with self.lock:
            msg.server_presence = self.presence.state
            silence = self.presence.silence(time.monotonic())
        msg.server_last_seen_s = -1.0 if silence is None else silence
        msg.presence_lease_s = float(self.settings.presence_lease_s)
        msg.server = self.server
        msg.server_choice = self.server_choice
        msg.failovers = stats.failovers
        msg.buffered_playback_s = stats.buffered_playback_s
        msg.refill_s = stats.refill_s
        msg.effective_refill_s = stats.effective_refill_s
        msg.last_turnaround_s = stats.last_turnaround_s
        msg.p50_turnaround_s = stats.p50_turnaround_s
        msg.max_turnaround_s = stats.max_turnaround_s
        msg.ticks = stats.ticks
        msg.requests = stats.requests
        msg.requests_in_flight = stats.requests_in_flight
        msg.request_retries = stats.request_retries
        msg.chunks_accepted = stats.chunks_accepted
        msg.chunks_dropped = stats.chunks_dropped
        msg.starved_ticks = stats.starved_ticks
        msg.trimmed_steps = stats.trimmed_steps
        msg.last_drop_reason = stats.last_drop_reason
        msg.dispatched_ticks = stats.dispatched_ticks
        msg.held_ticks = stats.held_ticks
        msg.skipped_ticks = stats.skipped_ticks
        msg.last_seam_rad = float(stats.recent_seams[-1]) if stats.recent_seams else 0.0
        msg.max_seam_rad = float(stats.max_seam)
        periods = np.array(self.tick_periods)
        if len(periods):
            msg.tick_period_p50_s, msg.tick_period_p99_s, msg.tick_period_max_s = (
                float(v) for v in np.percentile(periods, [50, 99, 100]))
        self.status_pub.publish(msg)

    def _log_summary(self):
        with self.lock:
            stats = self.core.stats()
        previous, self.last_stats = self.last_stats, stats
        requests = stats.requests - (previous.requests if previous else 0)
        self.get_logger().info(
            f'[{stats.state.name}] last {SUMMARY_PERIOD_S:.0f} s: {requests} requests, '
            f'turnaround p50 {stats.p50_turnaround_s * 1000:.0f} ms max '
            f'{stats.max_turnaround_s * 1000:.0f} ms, buffered {stats.buffered_playback_s:.2f} s,'
            f' effective refill {stats.effective_refill_s:.2f} s; totals: '
            f'{stats.starved_ticks} starved ticks, {stats.request_retries} retried requests, '
            f'{stats.chunks_dropped} dropped chunks'
            f'{" (last: " + stats.last_drop_reason + ")" if stats.chunks_dropped else ""}')

    def _settings_text(self):
        cfg = self.config
        return (f'fps={cfg.fps} interpolation_multiplier={cfg.interpolation_multiplier} '
                f'chunk_merge={cfg.chunk_merge} synchronous={cfg.synchronous} '
                f'refill_seconds={cfg.refill_seconds} '
                f'max_requests_in_flight={cfg.max_requests_in_flight} '
                f'blend_steps={cfg.blend_steps} '
                f'blend_weight={cfg.blend_weight} '
                f'blend_components={list(cfg.blend_components) or "all"} '
                f'starvation_grace_s={cfg.starvation_grace_s} '
                f'request_timeout_s={cfg.request_timeout_s} '
                f'return_to_initial_position={cfg.return_to_initial_position}')


class QueryGoal:
    """The executor/query goal being run: its handle, its query, its pending ask."""

    def __init__(self, handle, query):
        """Run `query` (a queries.Query) for the goal `handle`."""
        self.handle = handle
        self.query = query
        self.cancel = False
        self.future = None          # the policy/ask call in flight
        self.finished = Future()    # set to the queries.Finish action


def main(args=None):
    """Run the executor node; exit non-zero after a terminal fault."""
    raise SystemExit(run_node(ExecutorNode, args,   # the tick has its own thread (Ticker)
                              config_errors=(TransportChoiceError,)))


if __name__ == '__main__':
    main()
