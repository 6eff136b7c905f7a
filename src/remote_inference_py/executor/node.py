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
The executor node: a thin ROS 2 adapter over the session supervisor and the core.

It maps parameters to an :class:`ExecutorConfig` and :class:`NodeSettings`, messages to
events for the :class:`~.supervisor.Supervisor`, and the supervisor's actions to messages and
service calls. All decisions (admission, refill, merge, blend, hold, faults, failover, start,
queries, the return and the exit code) are the supervisor's and the core's.

Topics (relative names; remap in the launch file):

=========================  =====  ===========================  ==================================
name                       dir    type                         role
=========================  =====  ===========================  ==================================
``joint_states``           in     sensor_msgs/JointState       measured pose (by name)
``applied_command``        in     sensor_msgs/JointState       target the driver really applied
``hardware/info``          in     remote_inference/HardwareInfo  position-hold declaration
``policy/chunk``           in     remote_inference/ActionChunk   chunks and error answers
``policy/presence``        in     remote_inference/ServerPresence  the server's presence samples
``leader/joint_states``    in     sensor_msgs/JointState       the leader arm, follower radians
``leader/fault``           in     std_msgs/String              the leader's named fault ('' ok)
``policy/request``         out    remote_inference/InferenceRequest
``joint_commands``         out    JointState / Float64MultiArray / JointTrajectory (one point)
``executor/status``        out    remote_inference/ExecutorStatus  latched, 10 Hz and on change
``executor/task``          out    std_msgs/String              latched task of dispatched actions
=========================  =====  ===========================  ==================================

Services: ``policy/get_capabilities``, ``policy/admit`` and ``policy/ask`` (client),
``executor/start`` and ``executor/stop`` (``std_srvs/Trigger``), ``executor/set_driver``
(``std_srvs/SetBool``: true, the human on the leader arm drives; false, the policy drives;
see :mod:`.driver`).

Action: ``executor/query`` (remote_inference/action/Query): ask the policy a question, for the
next subtask, or steer, while the arm holds (docs/ask.md). The pure state machine
is :mod:`.query`; here the goal is checked (:func:`.query.refusal`: a refusal aborts the goal
with its reason and nothing moves), then the control tick steps the query, pauses and resumes
the core, calls ``policy/ask`` and publishes feedback; the goal's coroutine only awaits the
end. A subtask answer becomes the task of every later request (and of ``executor/task``) until
the next answer or a ``task`` parameter change.

With several candidate servers (``policy_servers``, e.g. ``[gpu1, gpu2]``) the four
``policy/`` names exist once per candidate, ``<candidate>/policy/...``; admission surveys them
and uses the chosen one (``executor/server_selection.py``), and ``on_server_loss: failover``
moves to another after a loss, once the arm holds.

Threads: one owner. The control tick runs on a thread of its own with absolute deadlines
(``common/ticker.py``) and is the only thread that touches the decisions: it steps the
session supervisor (:mod:`.supervisor`: admission, presence, failover, start, the query, the
task, the exit code) and through it the core. Messages, services, goals and parameter changes
arrive on rclpy's EventsExecutor thread (``run_node``); their callbacks only convert the
message and hand an event, stamped with its arrival time, to the owner through a queue (a
service or goal that needs the owner's answer awaits a future the owner resolves at its next
tick). The tick takes the events handed before its time, in order (one handed while it runs
waits for the next tick: nothing the tick decides is stamped before an event it acted on),
then ticks, then carries out the actions in order. No lock guards the core: only one thread
uses it.
"""

import collections
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
    ExecutorStatus, HardwareInfo, InferenceRequest, ObservationFeature,
    ServerPresence as ServerPresenceMsg)
from remote_inference.srv import Admit, Ask, GetCapabilities
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from remote_inference_py.common.clock import clock_offset
from remote_inference_py.common.node_main import run_node
from remote_inference_py.common.params import (
    build_configs, declare_parameters, declared, LiveSettings)
from remote_inference_py.common.ticker import Handoff, Ticker
from remote_inference_py.executor import query as queries
from remote_inference_py.executor import supervisor as sv
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings
from remote_inference_py.executor.core import Chunk
from remote_inference_py.executor.handshake import AskAdmission, AskCapabilities, Hardware, Log
from remote_inference_py.executor.server_selection import AskCandidate, candidate_label
from remote_inference_py.transport import qos
from remote_inference_py.transport.endpoints import (
    subscribe_chunks, subscribe_joint_states, TransportChoiceError)

TICK_WINDOW = 1000
OUTPUTS = {'joint_state': JointState, 'float64_multi_array': Float64MultiArray,
           'joint_trajectory': JointTrajectory}

# Declared once, as the fields of ExecutorConfig (the core's) and NodeSettings (the node's).
PARAMETERS = declared(ExecutorConfig, NodeSettings)


class ExecutorNode(Node):
    """Dispatch one target per control tick from a buffer refilled by the policy server."""

    def __init__(self, **kwargs):
        super().__init__('executor', **kwargs)
        self.config, self.settings = build_configs(
            declare_parameters(self, PARAMETERS.values()), ExecutorConfig, NodeSettings)
        self.finished, self.exit_code = False, 0
        self.events = Handoff()   # (function, args) for the owner, in order
        self.sup = sv.Supervisor(self.config, self.settings, self.get_fully_qualified_name(),
                                 time.monotonic())
        self.survey, self.admission_call, self.ask_call = {}, None, None   # calls in flight
        self.goals = {}                     # id(goal handle) -> (handle, future of its end)
        self.tick_time = None          # the current (or last) tick's time, monotonic
        self.tick_periods = collections.deque(maxlen=TICK_WINDOW)

        io = MutuallyExclusiveCallbackGroup()
        waits = ReentrantCallbackGroup()    # coroutines awaiting the owner block nothing
        # The measured pose, the target the driver applied, the leader arm (follower radians).
        self.measured_sub, _, _ = (
            subscribe_joint_states(self, topic, self._positions(topic, function, stamped), role,
                                   callback_group=io)
            for topic, function, role, stamped in (
                ('joint_states', self._measured, qos.JOINT_STATES, False),
                ('applied_command', self.sup.on_applied, qos.COMMANDS, False),
                ('leader/joint_states', self.sup.on_leader, qos.JOINT_STATES, True)))
        self.create_subscription(HardwareInfo, 'hardware/info', self.on_hardware_info,
                                 qos.LATCHED, callback_group=io)
        self.create_subscription(
            String, 'leader/fault', lambda msg: self.hand(self.sup.on_leader_fault, msg.data),
            qos.LATCHED, callback_group=io)
        # One policy interface per candidate server (policy_servers; '' = policy/... here).
        self.chunk_subs, self.request_pubs = {}, {}
        self.capabilities_clients, self.admit_clients, self.ask_clients = {}, {}, {}
        for candidate in self.sup.candidates:
            def name(relative, c=candidate):
                return f'{c}/{relative}' if c else relative
            self.chunk_subs[candidate] = subscribe_chunks(
                self, name('policy/chunk'), lambda msg, c=candidate: self.on_chunk(msg, c),
                qos.CHUNKS, callback_group=io)
            self.create_subscription(
                ServerPresenceMsg, name('policy/presence'),
                lambda msg, c=candidate: self.hand(self.sup.on_presence, msg.instance_id, c,
                                                   time.monotonic()),
                qos.PRESENCE, callback_group=io)
            self.request_pubs[candidate] = self.create_publisher(
                InferenceRequest, name('policy/request'), qos.COMMANDS)
            self.capabilities_clients[candidate] = self.create_client(
                GetCapabilities, name('policy/get_capabilities'), callback_group=io)
            self.admit_clients[candidate] = self.create_client(
                Admit, name('policy/admit'), callback_group=io)
            self.ask_clients[candidate] = self.create_client(
                Ask, name('policy/ask'), callback_group=io)
        self.command_pub = self.create_publisher(OUTPUTS[self.settings.output_format],
                                                 'joint_commands', qos.COMMANDS)
        self.status_pub = self.create_publisher(ExecutorStatus, 'executor/status', qos.LATCHED)
        self.task_pub = self.create_publisher(String, 'executor/task', qos.LATCHED)
        self.query_server = ActionServer(self, QueryAction, 'executor/query', self.on_query,
                                         cancel_callback=self.on_query_cancel,
                                         callback_group=waits)
        self.create_service(Trigger, 'executor/start', self.on_start, callback_group=waits)
        self.create_service(Trigger, 'executor/stop', self.on_stop, callback_group=io)
        self.create_service(SetBool, 'executor/set_driver', self.on_set_driver,
                            callback_group=waits)
        self.live = LiveSettings(self, (self.config, self.settings), self.apply_settings)
        several = len(self.sup.candidates) > 1
        self.get_logger().info(
            f'executor up: {self.config.summary()}, output={self.settings.output_format}; '
            'waiting for the policy server to admit us'
            + (f' (candidates: {", ".join(candidate_label(c) for c in self.sup.candidates)}; '
               f'on server loss: {self.settings.on_server_loss})' if several else ''))
        self.ticker = Ticker(self.config.tick_period, self.on_tick, self._tick_failed, 'control')
        self.ticker.start()

    # ---- callbacks: convert, stamp, hand to the owner -----------------------------------

    def hand(self, function, *args):
        """Queue `function(*args)` for the owner thread (it returns actions or None)."""
        self.events.put((function, args))   # taken by the first tick after it

    def apply_settings(self, configs, changes):
        """Hand live changes to the owner (validated by LiveSettings before they were set)."""
        self.hand(self._use_settings, configs, changes)

    def _use_settings(self, configs, changes):
        self.config, self.settings = configs
        return self.sup.update_settings(*configs, changes)

    def _positions(self, topic, function, stamped):
        """Return a JointState callback handing `function` the positions (and arrival time)."""
        def callback(msg):
            positions, problem = positions_by_name(msg, self.config.joint_names, topic)
            if problem:
                self.get_logger().error(problem, throttle_duration_sec=2.0)
            else:
                self.hand(function, positions, *((time.monotonic(),) if stamped else ()))
        return callback

    def _measured(self, positions):
        problem = self.sup.on_measured(positions)
        return [Log('error', problem)] if problem else []

    async def _owner_answer(self, function, *args):
        """Await what `function(*args)` returns, called on the owner's thread."""
        answer = Future()
        self.hand(lambda: answer.set_result(function(*args)))
        return await answer

    async def on_set_driver(self, request, response):
        """Switch who drives: true, the human on the leader arm; false, the policy."""
        response.success, response.message = await self._owner_answer(
            self.sup.set_driver, request.data, time.monotonic())
        self.get_logger().info(f'set_driver {"human" if request.data else "policy"}: '
                               f'{response.message}')
        return response

    def on_hardware_info(self, msg):
        """Hand what the hardware declares to the owner (a driver fault stops motion)."""
        self.hand(self.sup.on_hardware, Hardware.from_message(msg), msg.message,
                  time.monotonic())

    def on_chunk(self, msg, candidate):
        """Hand a chunk or error answer, its capture stamp on the core's clock, to the owner."""
        now = time.monotonic()
        chunk = None if msg.error else Chunk(
            session_id=msg.session_id, request_id=msg.request_id,
            capture_time=msg.stamp_ns * 1e-9 - self._clock_offset(),
            joint_names=tuple(msg.joint_names), step_period=msg.step_period,
            positions=np.asarray(msg.positions, dtype=np.float64), step_count=msg.step_count)
        timings = (f'queue {msg.queue_wait_ms:.1f} pre {msg.preprocess_ms:.1f} infer '
                   f'{msg.inference_ms:.1f} post {msg.postprocess_ms:.1f} ms')
        self.hand(self.sup.on_answer, sv.Answer(msg.session_id, msg.request_id, msg.instance_id,
                                                msg.error, msg.session_refused, chunk, timings),
                  candidate, now)

    async def on_start(self, request, response):
        """Start motion once admitted, measured and (if required) position hold declared."""
        response.success, response.message = await self._owner_answer(self.sup.request_start)
        return response

    def on_stop(self, request, response):
        """Stop: return to the initial position (if configured), then finish."""
        self.request_stop('executor/stop called')
        response.success, response.message = True, 'stopping'
        return response

    def request_stop(self, reason):
        """Begin a clean stop; the node finishes when the core is terminal."""
        self.get_logger().info(f'stop requested: {reason}')
        self.hand(self.sup.request_stop, time.monotonic())

    async def on_query(self, handle):
        """Run an executor/query goal: refuse it by name, or await what the owner makes of it."""
        goal, end = handle.request, Future()
        self.hand(self._begin_query, handle, end, goal.kind, goal.text)
        finish = await end
        if isinstance(finish, tuple):   # refused: nothing moved
            handle.abort()
            return QueryAction.Result(success=False, message=finish[0], task=finish[1])
        if handle.is_active:
            {'succeeded': handle.succeed, 'canceled': handle.canceled,
             'aborted': handle.abort}[finish.status]()
        return QueryAction.Result(
            success=finish.status == 'succeeded', message=finish.message,
            answer=finish.answer, task=finish.task, rounds=finish.rounds, hold_s=finish.hold_s,
            ask_s=finish.ask_s, generate_ms=finish.generate_ms, resume_s=finish.resume_s)

    def _begin_query(self, handle, end, kind, text):
        self.goals[id(handle)] = handle, end    # the owner's alone, as are config and settings
        refused = self.sup.begin_query(id(handle), kind, text)
        if refused:
            self.goals.pop(id(handle))
            end.set_result((refused, self.sup.task))   # the owner's task, read here
            return [Log('warning', f'query refused, nothing moves: {refused}')]
        return [Log('info', f'query accepted: {kind} {text!r}')]

    def on_query_cancel(self, handle):
        """Accept a cancel: the owner resumes from a fresh capture, then ends the goal."""
        self.hand(self.sup.cancel_query, id(handle))
        return CancelResponse.ACCEPT

    # ---- the owner: one control tick ----------------------------------------------------

    def on_tick(self):
        """Take the queued events, tick the supervisor, carry out its actions."""
        now = time.monotonic()
        if self.tick_time is not None:
            self.tick_periods.append(now - self.tick_time)
        self.tick_time = now
        for function, args in self.events.take(now):
            self.carry_out(function(*args) or ())
        self.carry_out(self.sup.tick(now, self._io()))

    def _io(self):
        """Read what came back of the calls in flight (and, while admitting, the graph)."""
        server = self.sup.server
        reply = self.admission_call.result() if self.admission_call is not None \
            and self.admission_call.done() else None
        ask = None
        if self.ask_call is not None and self.ask_call.done():
            result, self.ask_call = self.ask_call.result(), None
            ask = (queries.Reply(False, 'policy/ask failed') if result is None else
                   queries.Reply(result.success, result.message, result.answer,
                                 result.generate_ms, result.observation_missing))
        if self.sup.admission.done:   # no graph queries on the tick once admitted ...
            return sv.Io(ready={}, answers={}, reply=reply, ask_reply=ask,
                         joint_state_publishers=(   # ... but while a start waits
                             self.measured_sub.get_publisher_count()
                             if self.sup.waiting_to_start else None))
        return sv.Io(
            ready={c: client.service_is_ready()
                   for c, client in self.capabilities_clients.items()},
            answers={c: f.result() for c, f in self.survey.items() if f.done()},
            reply=reply, ask_reply=ask,
            request_subscribers=self.request_pubs[server].get_subscription_count(),
            chunk_publishers=self.chunk_subs[server].get_publisher_count())

    def carry_out(self, actions):
        """Do what the supervisor decided, in order."""
        for action in actions:
            if isinstance(action, sv.SendCommand):
                self._send_command(action.command, action.at)
            elif isinstance(action, sv.SendRequest):
                self._send_request(action.order, action.task)
            elif isinstance(action, sv.Republish):
                self.request_pubs[self.sup.server].publish(action.message)
            elif isinstance(action, sv.PublishStatus):
                self.publish_status()
            elif isinstance(action, Log):
                log(self.get_logger(), action.level, action.text)
            elif isinstance(action, queries.Ask):
                self.ask_call = self._ask(action)
            elif isinstance(action, sv.PublishTask):
                self.task_pub.publish(String(data=action.task))
            elif isinstance(action, sv.GoalFeedback):
                self.goals[action.goal][0].publish_feedback(QueryAction.Feedback(
                    phase=action.feedback.phase, round=action.feedback.round,
                    answer=action.feedback.answer))
            elif isinstance(action, sv.GoalDone):
                self.goals.pop(action.goal)[1].set_result(action.finish)
            elif isinstance(action, AskCandidate):
                self.survey[action.candidate] = self.capabilities_clients[
                    action.candidate].call_async(GetCapabilities.Request())
            elif isinstance(action, AskCapabilities):
                self.admission_call = self.capabilities_clients[self.sup.server].call_async(
                    GetCapabilities.Request())
            elif isinstance(action, AskAdmission):
                self.admission_call = self.admit_clients[self.sup.server].call_async(
                    admit_message(action))
            elif isinstance(action, sv.UseServer):
                self.admission_call = None   # the chosen candidate's handshake begins
            elif isinstance(action, sv.NewAdmission):
                self.survey, self.admission_call = {}, None
            elif isinstance(action, sv.Finished):
                self.exit_code, self.finished = action.exit_code, True
            else:
                raise TypeError(f'the executor node cannot carry out {action!r}')

    def _tick_failed(self, error):
        """Finish with an error after a tick raised (no more ticks: the arm holds its target)."""
        self.get_logger().fatal('control tick failed: ' + ''.join(
            traceback.format_exception(type(error), error, error.__traceback__)))
        self.exit_code, self.finished = 1, True

    # ---- messages out -------------------------------------------------------------------

    def _clock_offset(self):
        """Return ROS time minus the core's clock [s]: read anew each time (it may step)."""
        return clock_offset(lambda: self.get_clock().now().nanoseconds * 1e-9)

    def _stamp(self, core_time):
        return Time(nanoseconds=int(round((core_time + self._clock_offset()) * 1e9))).to_msg()

    def _send_request(self, order, task):
        msg = request_message(order, task, self.sup.core.session_id, self._stamp)
        self.request_pubs[self.sup.server].publish(msg)
        self.sup.sent(msg, time.monotonic())
        self.get_logger().debug(f'request {order.request_id} ({order.kind}): playback at '
                                f'submission {order.playback_at_submission:.3f} s')

    def _send_command(self, command, at):
        """Publish the targets decided at tick time `at`, stamped with that time."""
        self.command_pub.publish(command_message(
            self.settings.output_format, self.config.joint_names, command, self._stamp(at),
            self.config.tick_period))

    def _ask(self, ask):
        msg = Ask.Request(session_id=self.sup.core.session_id, kind=ask.kind, text=ask.text,
                          task=ask.task)
        msg.earliest_capture_stamp = self._stamp(ask.earliest)
        return self.ask_clients[self.sup.server].call_async(msg)

    def publish_status(self, final=False):
        """Publish the current numbers on executor/status (the owner's thread, or close).

        Stamped with the tick the numbers are of, so its counts and stamp agree on the grid.
        """
        now = time.monotonic() if final or self.tick_time is None else self.tick_time
        self.status_pub.publish(status_message(self.sup, self.tick_periods, self._stamp(now),
                                               now))

    def close(self):
        """Stop ticking; publish the final status and let it reach subscribers."""
        self.ticker.stop()
        self.publish_status(final=True)
        for publisher in (self.command_pub, self.status_pub, *self.request_pubs.values()):
            publisher.wait_for_all_acked(Duration(seconds=1.0))


def positions_by_name(msg, joint_names, what):
    """Return a JointState's positions in `joint_names` order and '', or None and the problem."""
    index = {name: i for i, name in enumerate(msg.names)}
    missing = [n for n in joint_names if n not in index]
    if len(msg.positions) != len(msg.names) or missing:
        return None, (f"joint '{missing[0]}' missing from {what}" if missing else
                      f'{what} has {len(msg.names)} names but {len(msg.positions)} positions')
    return np.array([msg.positions[index[n]] for n in joint_names]), ''


def request_message(order, task, session_id, stamp):
    """Return the InferenceRequest of `order`; `stamp` turns core times into ROS stamps."""
    msg = InferenceRequest(session_id=session_id, request_id=order.request_id, task=task)
    msg.header.stamp = stamp(order.sent_time)
    msg.earliest_capture_stamp = stamp(order.earliest_capture_time)
    if order.plan is not None:
        msg.plan_start_stamp = stamp(order.plan.start)
        msg.plan_steps, msg.frozen_steps = order.plan.steps, order.plan.frozen_steps
        msg.plan_positions = order.plan.positions.reshape(-1).tolist()
    return msg


def status_message(sup, tick_periods, stamp, now):
    """Return the ExecutorStatus of supervisor `sup` at monotonic time `now`."""
    stats = sup.core.stats()
    msg = ExecutorStatus(state=int(stats.state), state_name=stats.state.name,
                         message=stats.message, session_id=stats.session_id)
    msg.header.stamp = stamp
    silence = sup.presence.silence(now)
    msg.server_presence = sup.presence.state
    msg.server_last_seen_s = -1.0 if silence is None else silence
    msg.presence_lease_s = float(sup.settings.presence_lease_s)
    msg.server, msg.server_choice = sup.server, sup.server_choice
    msg.driver = sup.driver.driver
    msg.leader_fault = sup.driver.holding if sup.driver.human else ''
    msg.dispatched_request_id = sup.core.dispatched_request_id
    for name in ('failovers', 'buffered_playback_s', 'refill_s', 'effective_refill_s',
                 'last_turnaround_s', 'p50_turnaround_s', 'max_turnaround_s', 'ticks',
                 'requests', 'requests_in_flight', 'request_retries', 'chunks_accepted',
                 'chunks_dropped', 'starved_ticks', 'trimmed_steps', 'last_drop_reason',
                 'dispatched_ticks', 'held_ticks', 'skipped_ticks'):
        setattr(msg, name, getattr(stats, name))
    msg.last_seam_rad = float(stats.recent_seams[-1]) if stats.recent_seams else 0.0
    msg.max_seam_rad = float(stats.max_seam)
    periods = np.array(tick_periods)
    if len(periods):
        msg.tick_period_p50_s, msg.tick_period_p99_s, msg.tick_period_max_s = (
            float(v) for v in np.percentile(periods, [50, 99, 100]))
    return msg


def log(logger, level, text):
    """Log `text` at `level` ('error', 'warning', 'debug' or 'info')."""
    if level == 'error':   # rclpy wants one severity per call site
        logger.error(text)
    elif level == 'warning':
        logger.warning(text)
    elif level == 'debug':
        logger.debug(text)
    else:
        logger.info(text)


def command_message(fmt, joint_names, command, stamp, period_s):
    """Return the joint_commands message of `fmt` for `command` [rad, joint order]."""
    names, values = list(joint_names), [float(v) for v in command]
    if fmt == 'float64_multi_array':
        return Float64MultiArray(data=values)
    if fmt == 'joint_state':
        msg = JointState(name=names, position=values)
    else:
        point = JointTrajectoryPoint(positions=values)
        point.time_from_start = Duration(seconds=period_s).to_msg()
        msg = JointTrajectory(joint_names=names, points=[point])
    msg.header.stamp = stamp
    return msg


def admit_message(ask):
    """Build the Admit request message; we offer the features the server consumes."""
    request, msg = ask.request, Admit.Request()
    for name in ('protocol_version', 'client_name', 'deployment', 'semantics',
                 'action_rate', 'merge_mode', 'hardware_position_hold', 'presence_lease_s',
                 'max_requests_in_flight'):
        setattr(msg, name, getattr(request, name))
    msg.action_names = list(request.action_names)
    offered = {f.name: f for f in request.features}   # images at the cameras' sizes
    msg.features = [ObservationFeature(
        name=f.name, shape=[int(v) for v in offered[f.name].shape],
        dtype=offered[f.name].dtype, kind=offered[f.name].kind, names=f.names,
        semantics=f.semantics, topic=f.topic) for f in ask.capabilities.features]
    return msg


def main(args=None):
    """Run the executor node; exit non-zero after a terminal fault."""
    raise SystemExit(run_node(ExecutorNode, args,   # the tick has its own thread (Ticker)
                              config_errors=(TransportChoiceError,)))


if __name__ == '__main__':
    main()
