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
The executor's session supervisor: every decision around the core, with no ROS in it.

The executor node (``node.py``) is an adapter: its callbacks turn messages, service calls,
goals and parameter changes into calls of this class, made in order by one thread (the
control tick's), and it carries out the actions this class returns. So every decision is made
by one thread in a known order, and nothing here needs a lock. The supervisor composes:

- the core (:class:`.core.ExecutorCore`): plan, merge, hold, requests, the session's states;
- admission over the candidate servers (:class:`.server_selection.Selection`, the handshake of
  :mod:`.handshake`), stepped once per tick;
- the admitted server's presence (:class:`.server_lease.ServerPresence`);
- the repeat of a session's first request (:class:`.first_request.FirstAnswer`);
- the running query (:class:`.query.Query`) and the task it may override;
- who drives (:class:`.driver.Driver`): the policy, or a human on the leader arm
  (``executor/set_driver``, the ``driver`` parameter). The human's hand-over pauses the core
  as a query does (plan discarded, requests drained); each tick then steers the core's hold
  toward the leader, rate-limited; the hand-back resumes the core, which moves again only from
  a fresh capture. A leader fault or silence holds the follower where it is.

It decides what the node used to: when motion may start (:meth:`start_refusal`, the one
rule for the ``executor/start`` service, ``autostart`` and the tick), when a failover begins
and when it comes too late, the task of the next request (the last subtask answer, else the
``task`` parameter; a new ``task`` parameter clears the answer), the order of a tick (events
first, then the query, then the core, so a query's pause lands before the tick decides and
the hold is the last target sent: the arm never steps back), and the exit code.

A tick returns actions for the node, in order (the types below, plus the admission actions
:class:`.handshake.AskCapabilities`, :class:`.handshake.AskAdmission`,
:class:`.server_selection.AskCandidate` and :class:`.handshake.Log`): publish a request or a
command, republish the first request, call a service, use another candidate's endpoints,
publish the task, a goal's feedback or end, the status, and finish.
"""

from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

from remote_inference_py.contract.check import publishes_presence
from remote_inference_py.executor import query as queries
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings
from remote_inference_py.executor.core import (
    Chunk, ChunkVerdict, ExecutorCore, RequestOrder, State)
from remote_inference_py.executor.driver import Driver, FollowLimits, HUMAN, POLICY
from remote_inference_py.executor.first_request import FirstAnswer
from remote_inference_py.executor.handshake import (
    Admitted, Client, Hardware, Log, Phase, Refused)
from remote_inference_py.executor.server_lease import ServerLoss, ServerPresence
from remote_inference_py.executor.server_selection import (
    candidate_label, Chosen, Selection, SelectionFacts)

SUMMARY_PERIOD_S = 5.0
STATUS_PERIOD_S = 0.1
START_WAIT_LOG_S = (1.0, 5.0)   # a start that waits is named after 1 s, then every 5 s


# ---- actions for the node ------------------------------------------------------------------

@dataclass(frozen=True)
class SendRequest:
    """Publish an InferenceRequest for `order` with `task`; then call :meth:`Supervisor.sent`."""

    order: RequestOrder
    task: str


@dataclass(frozen=True)
class Republish:
    """Publish `message` again, unchanged (the first request, unanswered so far)."""

    message: Any


@dataclass(frozen=True)
class SendCommand:
    """Publish joint targets [rad, config order], stamped with the tick's time `at`."""

    command: np.ndarray
    at: float


@dataclass(frozen=True)
class UseServer:
    """Use `candidate`'s policy endpoints from now on."""

    candidate: str


@dataclass(frozen=True)
class NewAdmission:
    """Admission starts again (a failover): forget the calls in flight of the last one."""


@dataclass(frozen=True)
class PublishTask:
    """Publish `task` on executor/task (latched)."""

    task: str


@dataclass(frozen=True)
class GoalFeedback:
    """Publish a Query.action feedback for the running goal."""

    goal: Any
    feedback: queries.Feedback


@dataclass(frozen=True)
class GoalDone:
    """End the goal with `finish` (a queries.Finish)."""

    goal: Any
    finish: queries.Finish


@dataclass(frozen=True)
class PublishStatus:
    """Publish executor/status now."""


@dataclass(frozen=True)
class Finished:
    """The executor is done: exit with `exit_code`."""

    exit_code: int


@dataclass(frozen=True)
class Answer:
    """A policy/chunk message as the supervisor reads it (chunk or error answer)."""

    session_id: str
    request_id: int
    instance_id: str
    error: str
    session_refused: bool
    chunk: Optional[Chunk]   # None for an error answer
    timings: str = ''        # the server's timings, for the debug line


@dataclass(frozen=True)
class Io:
    """What the node read of its I/O on one tick (service readiness, replies, matches)."""

    ready: dict
    answers: dict
    reply: Any = None
    request_subscribers: int = 0
    chunk_publishers: int = 0
    ask_reply: Optional[queries.Reply] = None
    joint_state_publishers: Optional[int] = None   # read while a start waits (for its log)


class Supervisor:
    """Decide everything around the core, stepped by one thread (see the module docstring)."""

    def __init__(self, config: ExecutorConfig, settings: NodeSettings, client_name: str,
                 now: float):
        """Begin admission at `now` for the executor named `client_name`."""
        self.config, self.settings, self.client_name = config, settings, client_name
        self.core = ExecutorCore(config)
        self.candidates = settings.policy_servers
        self.server = self.candidates[0]
        self.server_choice = ''
        self.lost_servers = []
        self.failing_over = False
        self.admission = Selection(self.client(), self.candidates, now)
        self.presence = ServerPresence(settings.presence_lease_s, config.tick_period)
        self.first_answer = FirstAnswer()
        self.hardware: Optional[Hardware] = None
        self.measured_once = False
        self.start_requested = settings.autostart
        self.start_log = None    # when a start that waits is named next
        self.capabilities = None
        self.task_override = None
        self.task_published = None
        self.query = None        # the running queries.Query
        self.goal = None         # its goal handle (opaque)
        self.cancel = False
        self.exit_code = None    # set once finished
        self.last_status = None
        self.last_summary = now
        self.last_stats = None
        self.driver = Driver(config.joint_names, self._follow_limits(),
                             settings.leader_timeout_s)
        self.driver_changed = False   # publish the status at the next tick
        self.status_source = 0   # the dispatched request the last status named

    def _follow_limits(self) -> FollowLimits:
        cfg, settings = self.config, self.settings
        return FollowLimits(lower=cfg.lower_limits(), upper=cfg.upper_limits(),
                            max_step_rad=cfg.max_step_rad,
                            catch_up_step_rad=settings.catch_up_speed_rad_s * cfg.tick_period,
                            catch_up_tolerance_rad=settings.catch_up_tolerance_rad)

    # ---- settings and admission's client ---------------------------------------------------

    def client(self) -> Client:
        """Return what we ask the policy server for, from the settings."""
        cfg, settings = self.config, self.settings
        return Client(client_name=self.client_name, deployment=settings.deployment,
                      semantics=settings.semantics, action_names=cfg.joint_names,
                      action_rate=cfg.fps,
                      merge_mode='synchronous' if cfg.synchronous else cfg.chunk_merge,
                      expected_features=settings.expected_features,
                      require_position_hold=settings.require_position_hold,
                      timeout_s=settings.admission_timeout_s,
                      presence_lease_s=settings.presence_lease_s,
                      max_requests_in_flight=cfg.max_requests_in_flight)

    def update_settings(self, config: ExecutorConfig, settings: NodeSettings,
                        changes: dict) -> None:
        """Use live changes from now on (validated before they were set)."""
        self.core.update_config(config)
        self.config, self.settings = config, settings
        if 'task' in changes:   # the user's task replaces a subtask answer
            self.task_override = None
        self.admission.update(self.client())
        self.driver.configure(self._follow_limits(), settings.leader_timeout_s)

    @property
    def task(self) -> str:
        """Return the task of the next request: the last subtask answer, else the parameter."""
        return self.task_override if self.task_override is not None else self.settings.task

    # ---- robot side ----------------------------------------------------------------------

    def on_measured(self, positions) -> str:
        """Hand the measured pose to the core; return an error to log, or ''."""
        if self.core.on_measured(positions):
            self.measured_once = True
            return ''
        return 'joint_states carries a non-finite position; ignored'

    def on_applied(self, positions) -> None:
        """Hand the target the driver really applied to the core (what a wait holds)."""
        self.core.on_applied(positions)

    def on_hardware(self, hardware: Hardware, message: str, now: float) -> None:
        """Remember what the hardware declares; a driver fault stops motion."""
        self.hardware = hardware
        if hardware.state == 'fault':
            self.core.on_actuation_failed(f'hardware interface fault: {message}', now)

    # ---- the leader arm and who drives ----------------------------------------------------

    def on_leader(self, positions, now: float) -> List[object]:
        """Take a leader sample [rad, config order] heard at `now`; return a log if bad."""
        problem = self.driver.on_leader(positions, now)
        return [Log('error', problem)] if problem else []

    def on_leader_fault(self, fault: str) -> List[object]:
        """Take the leader node's named fault ('' once healthy); log a change."""
        if fault == self.driver.leader_fault:
            return []
        self.driver.on_leader_fault(fault)
        if fault:
            return [Log('error', f'leader arm fault: {fault}' + (
                '; the follower holds' if self.driver.human else ''))]
        return [Log('info', 'leader arm healthy again')]

    def set_driver(self, human: bool, now: float):
        """Answer executor/set_driver: return (success, message)."""
        wanted = HUMAN if human else POLICY
        if self.driver.driver == wanted:
            return True, f'the {wanted} already drives'
        if self.query is not None:
            return False, 'a query is running (executor/query): cancel it first'
        if human:
            if self.core.state not in (State.RUNNING, State.WAITING):
                return False, (f'motion has not started (state {self.core.state.name}): start '
                               'it first, or launch with driver:=human')
            try:
                self._take(now)
            except RuntimeError as error:
                return False, f'cannot hand over to the human: {error}'
            problem = self.driver.problem(now)
            return True, 'the human drives' + (f'; holding: {problem}' if problem else '')
        self._hand_back(now)
        return True, ('the policy drives again from a fresh capture'
                      if self.core.state in (State.RUNNING, State.WAITING) else
                      f'the policy drives (state {self.core.state.name})')

    def _take(self, now: float) -> None:
        """Hand over to the human: pause the core (drain), follow the leader from the hold."""
        self.core.pause(now, 'the human on the leader arm')
        self.driver.take()
        self.driver_changed = True

    def _hand_back(self, now: float) -> None:
        self.driver.hand_back()
        self.driver_changed = True
        if self.core.paused:
            self.core.resume(now, 'the human handed back to the policy')

    def _follow(self, now: float, actions: List[object]) -> bool:
        """Steer the hold toward the leader (the human drives); return True on a change."""
        if not (self.core.paused and self.core.state in (State.RUNNING, State.WAITING)):
            return False
        previous = self.core.last_command
        target, problem = self.driver.target(previous, now)
        if target is not None:
            self.core.hold_at(target)
        if problem == self.driver.holding:
            return False
        if problem:
            actions.append(Log('error', f'the follower holds: {problem}'))
        else:
            actions.append(Log('info', 'following the leader arm'
                                       + (' (catching up first)' if self.driver.catching_up
                                          else '')))
        self.driver.holding = problem
        return True

    # ---- server side ---------------------------------------------------------------------

    def on_presence(self, instance_id: str, candidate: str, now: float) -> List[object]:
        """Note a presence sample; return the actions of a loss it reveals."""
        if candidate != self.server:
            return []   # another candidate: its presence says nothing of our session
        return self._lost(self.presence.heard(instance_id, now, 'a presence sample',
                                              sample=True))

    def on_answer(self, answer: Answer, candidate: str, now: float) -> List[object]:
        """Take a chunk or error answer: presence, first answer, then the core."""
        if candidate != self.server:
            return []   # another candidate's interface: we sent it no request
        ours = answer.session_id == self.core.session_id
        echo = ours and self.first_answer.echo(answer.request_id)
        sends = self.first_answer.heard(answer.request_id) if ours else 0
        if answer.session_refused:
            loss = self.presence.refused(answer.instance_id, answer.error, now)
        else:
            loss = self.presence.heard(answer.instance_id, now,
                                       'an answer' if answer.error else 'a chunk')
        actions = self._lost(loss)
        if sends > 1:
            actions.append(Log('info', f'first answer of session {answer.session_id} came '
                                       f'after {sends} sends of request {answer.request_id}'))
        if answer.session_refused:   # never retried: the loss above ends the requests
            actions.append(Log('warning', f'request {answer.request_id} refused: '
                                          f'{answer.error}'))
            return actions
        if echo:   # the same answer again, for a repeat that crossed the first answer
            actions.append(Log('debug', f'a second answer to repeated request '
                                        f'{answer.request_id} ignored'))
            return actions
        if answer.error:
            self.core.on_request_failed(answer.request_id, f'server: {answer.error}', now)
            actions.append(Log('warning', f'request {answer.request_id} not served: '
                                          f'{answer.error}'))
            return actions
        verdict = self.core.on_chunk(answer.chunk, now)
        actions.append(self._verdict_log(answer, verdict))
        return actions

    def _verdict_log(self, answer: Answer, verdict: ChunkVerdict) -> Log:
        if verdict.accepted:
            seam = verdict.seam if verdict.seam is not None else 0.0
            return Log('debug', f'chunk {answer.request_id}: turnaround '
                                f'{verdict.turnaround:.3f} s, playback at submission '
                                f'{verdict.playback_at_submission:.3f} s, observation age '
                                f'{verdict.observation_age:.3f} s, trimmed '
                                f'{verdict.trimmed_steps}, usable {verdict.usable_steps}, '
                                f'overlap {verdict.overlap_steps}, seam {seam:.4f} rad; '
                                f'server {answer.timings}')
        level = 'info' if self.core.state == State.STOPPING else 'warning'   # late answers
        return Log(level, f'dropped chunk {answer.request_id}: {verdict.reason}')

    def _lost(self, loss: Optional[ServerLoss]) -> List[object]:
        """Act on a loss of the admitted server (once): no more requests, hold, fault."""
        if loss is None:
            return []
        stopping = self.core.state in (State.STOPPING, State.STOPPED, State.FAULT)
        self.core.server_lost(loss.at, loss.describe())
        if stopping:   # a whole-system stop: the return needs no server
            return [Log('info', f'policy server gone while stopping ({loss.describe()})')]
        failover = self.settings.on_server_loss == 'failover'
        return [Log('error', f'{loss.describe()}; this session will not resume'
                    + (f' (server {candidate_label(self.server)}; on_server_loss failover: '
                       'another candidate once the arm holds)' if failover else ''))]

    def sent(self, message: Any, now: float) -> None:
        """Note a request published at `now` (the node calls it after a SendRequest)."""
        self.first_answer.sent(message, now)
        self.presence.requested(now)

    # ---- services and goals --------------------------------------------------------------

    def start_refusal(self) -> str:
        """Return why motion cannot start now ('' when it can): the one start rule."""
        return self.admission.not_ready_to_start(self.measured_once, self.hardware)

    @property
    def waiting_to_start(self) -> bool:
        """Return whether a start was asked for (or autostart is on) and READY waits."""
        return self.start_requested and self.core.state == State.READY

    def _start(self, now: float, io: Io) -> List[object]:
        """Start motion if nothing stops it; else name what it waits for, now and then."""
        why = self.start_refusal()
        if why:
            if self.start_log is None:
                self.start_log = now + START_WAIT_LOG_S[0]
            if now < self.start_log:
                return []
            self.start_log = now + START_WAIT_LOG_S[1]
            if io.joint_state_publishers is not None and not self.measured_once:
                why += f' ({io.joint_state_publishers} joint_states publisher(s) matched)'
            return [Log('warning', f'start requested but waiting: {why}')]
        self.core.start(now)
        self.start_requested, self.start_log = False, None
        actions = [Log('info', 'motion started')]
        if self.settings.driver == HUMAN:
            self._take(now)
            actions.append(Log('info', 'the human on the leader arm drives (driver human)'))
        return actions

    def request_start(self):
        """Answer executor/start: return (success, message).

        A start is safe to repeat (a caller whose reply was lost asks again): one while the
        run goes on, RUNNING or WAITING for a chunk, succeeds and changes nothing.
        """
        state = self.core.state
        if state in (State.RUNNING, State.WAITING):
            return True, f'already running ({state.name})'
        if state != State.READY and self.admission.phase is Phase.ADMITTED:
            return False, f'cannot start in state {state.name}'
        self.start_requested = True
        why = self.start_refusal()
        return True, 'starting' if not why else f'will start when ready: {why}'

    def request_stop(self, now: float) -> List[object]:
        """Begin a clean stop; the tick finishes once the core is terminal."""
        self.core.stop(now)
        return [PublishStatus()]

    def query_settings(self) -> queries.QuerySettings:
        """Return the limits of a query, from the settings."""
        s = self.settings
        return queries.QuerySettings(max_text_chars=s.query_max_text_chars,
                                     answer_timeout_s=s.query_answer_timeout_s,
                                     steering_period_s=s.steering_period_s)

    def begin_query(self, goal: Any, kind: str, text: str) -> str:
        """Accept a query goal, or return why it is refused (nothing moves then)."""
        if self.driver.human:
            return 'the human drives (executor/set_driver): hand back to the policy first'
        refused = queries.refusal(
            kind, text, offered=tuple(getattr(self.capabilities, 'text_commands', ())),
            admitted=self.admission.phase is Phase.ADMITTED, state=self.core.state.name,
            server_lost=self.core.server_is_lost, busy=self.query is not None,
            settings=self.query_settings())
        if not refused:
            self.query = queries.Query(kind, text, self.task, self.query_settings())
            self.goal, self.cancel = goal, False
        return refused

    def cancel_query(self, goal: Any) -> None:
        """Note a cancel of `goal`: the tick resumes from a fresh capture, then ends it."""
        if self.query is not None and self.goal == goal:
            self.cancel = True

    # ---- the tick ------------------------------------------------------------------------

    def tick(self, now: float, io: Io) -> List[object]:
        """Do one control tick at `now`; return the node's actions, in order."""
        actions: List[object] = []
        if (self.settings.on_server_loss == 'failover' and not self.failing_over
                and self.core.server_is_lost and self.core.state == State.WAITING):
            actions += self._begin_failover(now)   # the arm holds: ask another candidate
        if not self.admission.done:
            actions += self._admission_step(now, io)
        actions += self._lost(self.presence.check(now))
        if self.waiting_to_start:
            actions += self._start(now, io)
        changed = False
        if self.query is not None:   # before the core's tick: a pause holds the last sent
            changed = self._query_step(now, io.ask_reply, actions, dispatched=False)
        if self.driver.human:   # before the core's tick: it sends the steered hold
            self.driver_changed = self._follow(now, actions) or self.driver_changed
        self.core.server_silent = self.presence.silent(now)
        out = self.core.tick(now)
        if self.query is not None and not changed:
            changed = self._query_step(now, None, actions, dispatched=(
                out.command is not None and not out.held and self.core.state == State.RUNNING))
        if out.request is not None and not self.core.paused:
            actions.append(SendRequest(out.request, self.task))
            if self.task_published != self.task:
                self.task_published = self.task
                actions.append(PublishTask(self.task))
        if self.core.state == State.WAITING and not self.core.server_is_lost:
            repeat = self.first_answer.due(now)
            if repeat is not None:
                actions.append(Republish(repeat.message))
                actions.append(Log('info', f'no answer to request '
                                           f'{repeat.message.request_id} of session '
                                           f'{repeat.message.session_id} after '
                                           f'{repeat.waited:.2f} s: sent it again '
                                           f'({repeat.sends} sends; the server endpoints may '
                                           'not have matched ours yet)'))
        if out.command is not None:
            actions.append(SendCommand(out.command, now))
        actions += [Log('info', event) for event in out.events]
        source = self.core.dispatched_request_id   # a new chunk drives: say so at this tick
        if out.events or changed or self.driver_changed or source != self.status_source \
                or self.last_status is None or now - self.last_status >= STATUS_PERIOD_S:
            self.last_status, self.driver_changed, self.status_source = now, False, source
            actions.append(PublishStatus())
        if now - self.last_summary >= SUMMARY_PERIOD_S:
            self.last_summary = now
            actions.append(self._summary())
        if self.core.is_terminal and self.exit_code is None:
            actions += self._finish(now)
        return actions

    def _query_step(self, now: float, reply, actions: List[object], dispatched: bool) -> bool:
        """Step the running query; return True if it paused or resumed motion."""
        changed = False
        facts = queries.Facts(now, self.core.state.name, self.core.stats().message,
                              dispatched=dispatched, reply=reply, cancel=self.cancel)
        for action in self.query.step(facts):
            if isinstance(action, queries.Pause):
                self.core.pause(now, action.reason)
                changed = True
            elif isinstance(action, queries.Ask):
                if self.query.asks > 1:
                    actions.append(Log('info', f'no observation at or after the pause yet: '
                                               f'asking again ({self.query.missing})'))
                actions.append(action)
            elif isinstance(action, queries.SetTask):
                self.task_override = self.task_published = action.task
                actions.append(PublishTask(action.task))
                actions.append(Log('info', f'new task from the policy: {action.task!r}'))
            elif isinstance(action, queries.Resume):
                self.core.resume(now, action.reason)
                changed = True
            elif isinstance(action, queries.Feedback):
                actions.append(GoalFeedback(self.goal, action))
            elif isinstance(action, queries.Finish):
                actions.append(Log('info', f'query {action.status}: {action.message}; answer '
                                           f'{action.answer!r}; held {action.hold_s:.2f} s '
                                           f'(ask {action.ask_s:.2f} s, resume '
                                           f'{action.resume_s:.2f} s)'))
                actions.append(GoalDone(self.goal, action))
                self.query = self.goal = None
        return changed

    def _begin_failover(self, now: float) -> List[object]:
        """Ask the other candidates for a new session (on_server_loss failover, arm held)."""
        self.failing_over = True
        self.lost_servers.append(self.server)
        self.admission = Selection(self.client(), self.candidates, now,
                                   exclude=self.lost_servers)
        others = ', '.join(candidate_label(c) for c in self.admission.candidates)
        return [NewAdmission(),
                Log('warning', f'failing over: server {candidate_label(self.server)} lost and '
                               f'the arm holds; asking {others} for a new session')]

    def _admission_step(self, now: float, io: Io) -> List[object]:
        """Step admission; act on its outcome, pass the calls to make to the node."""
        actions: List[object] = []
        for action in self.admission.step(SelectionFacts(
                now=now, hardware=self.hardware, ready=io.ready, answers=io.answers,
                reply=io.reply, request_subscribers=io.request_subscribers,
                chunk_publishers=io.chunk_publishers)):
            if isinstance(action, Chosen):
                self.server_choice = action.choice.text()
                self.server = action.candidate
                self.presence = ServerPresence(self.settings.presence_lease_s,
                                               self.config.tick_period)
                actions += [UseServer(action.candidate),
                            Log('info', f'server choice: {candidate_label(action.candidate)} '
                                        f'({self.server_choice})')]
            elif isinstance(action, Admitted):
                actions += self._admitted(action, now)
            elif isinstance(action, Refused):
                actions += self._refused(action, now)
            else:   # AskCandidate, AskCapabilities, AskAdmission, Log: the node's to do
                actions.append(action)
        return actions

    def _admitted(self, action: Admitted, now: float) -> List[object]:
        self.capabilities = action.capabilities
        failover = self.failing_over
        self.failing_over = False
        if failover and not (self.core.server_is_lost and self.core.state == State.WAITING):
            return [Log('error', 'failover too late: the executor is '
                                 f'{self.core.state.name}')]   # the grace ran out meanwhile
        if failover:
            self.core.fail_over(action.session_id, action.chunk_length, now)
        else:
            self.core.admit(action.session_id, action.chunk_length)
        version = int(action.capabilities.protocol_version)
        self.presence.admit(action.instance_id, now, publishes_presence(version))
        self.first_answer = FirstAnswer()   # a new session: unanswered again
        logs = []
        if failover:
            logs.append(Log('warning', f'failed over to server {candidate_label(self.server)}: '
                                       f'new session {action.session_id} (instance '
                                       f'{action.instance_id}); moving again only from a '
                                       'fresh capture'))
        several = len(self.candidates) > 1
        logs.append(Log('info', f'admitted: session={action.session_id} '
                                f'instance={action.instance_id} '
                                + (f'server={candidate_label(self.server)} ' if several else '')
                                + f'deployment={self.settings.deployment} '
                                f'semantics={self.settings.semantics} '
                                f'chunk_length={action.chunk_length}; settings: '
                                f'{self.config.summary()}'))
        if not publishes_presence(version):
            logs.append(Log('info', f'the server speaks protocol {version}: it may publish no '
                                    'presence samples, so its lease is kept by its answers '
                                    'while a request is owed'))
        return logs

    def _refused(self, action: Refused, now: float) -> List[object]:
        if self.failing_over:   # hold, fault as on any loss
            self.core.fault(f'server lost and failover found no server: {action.reason}', now)
            return [Log('error', f'failover found no server: {action.reason}')]
        self.core.fault(f'admission refused: {action.reason}', now)   # never move
        return [Log('error', f'admission refused, the arm will not move: {action.reason}')]

    def _summary(self) -> Log:
        stats = self.core.stats()
        previous, self.last_stats = self.last_stats, stats
        requests = stats.requests - (previous.requests if previous else 0)
        dropped = f' (last: {stats.last_drop_reason})' if stats.chunks_dropped else ''
        return Log('info', f'[{stats.state.name}] last {SUMMARY_PERIOD_S:.0f} s: {requests} '
                           f'requests, turnaround p50 {stats.p50_turnaround_s * 1000:.0f} ms '
                           f'max {stats.max_turnaround_s * 1000:.0f} ms, buffered '
                           f'{stats.buffered_playback_s:.2f} s, effective refill '
                           f'{stats.effective_refill_s:.2f} s; totals: {stats.starved_ticks} '
                           f'starved ticks, {stats.request_retries} retried requests, '
                           f'{stats.chunks_dropped} dropped chunks{dropped}')

    def _finish(self, now: float) -> List[object]:
        """Decide the exit code once the core is terminal; name a server that never answered."""
        actions: List[object] = []
        first = self.first_answer
        if first.total_sends > 1 and not first.answered:
            actions.append(Log('error', f'server {candidate_label(self.server)} never answered '
                                        f'session {self.core.session_id}: {first.total_sends} '
                                        f'sends of its first request(s) over '
                                        f'{now - first.began:.2f} s; its policy/request '
                                        'subscription or policy/chunk publisher never matched '
                                        'ours, or it is stuck'))
        self.exit_code = 0 if self.core.state == State.STOPPED else 1
        message = f': {self.core.stats().message}' if self.exit_code else ''
        actions += [PublishStatus(), Log('info', f'executor finished: '
                                                 f'{self.core.state.name}{message}'),
                    Finished(self.exit_code)]
        return actions
