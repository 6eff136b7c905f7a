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

"""The executor's state machine, with no ROS in it (docs/design.md, sections 3-7).

`ExecutorCore` is the state machine; the caller feeds it one clock, `now` in seconds (the node
uses a monotonic clock and converts observation stamps into it), calls `tick(now)` once per
control tick and sends what it returns. The core is a composition of parts that each own one
concern and are tested alone:

- `timeline.py` (:class:`Timeline`): the plan, the control ticks, the committed target;
  how a chunk joins the plan is `merge.py`.
- `requests.py` (:class:`RequestTable`): requests in flight and why each was closed (typed),
  the turnaround samples, and when the next request is due (the staggering is `refill.py`).
- `validation.py` (:class:`ChunkValidator`): whether a chunk's content can be played.
- `hold.py` (:class:`Hold`, :class:`ReturnHome`): the robot's feedback, the hold target, the
  wait, and the return to the initial pose.
- `session.py` (:class:`Session`): the session's lifecycle, admission to the end: the
  session id, server loss, failover, the pause for text work, stop, fault and the return.
- `status.py` (:class:`State`, :class:`Status`, :class:`Counters`): the state, its message and
  the events to log; the counters of the status topic.

The core composes them: `tick` advances the timeline, dispatches or holds (beginning the wait,
ending it, or having the session fault when its grace has run out) and asks the request table
whether to send; `on_chunk` asks the session whether a chunk can be used, then the request
table, the validator and the timeline. `stop(now)` and `fault(reason, now)` date the shutdown:
the requests still in flight are closed then.

The rules in detail (docs/design.md explains why):

- Timeline. `start(now)` anchors it: control tick n is due at `start + n / (fps * m)` with
  m = interpolation_multiplier, action tick j at `start + j / fps` (= control tick j * m).
  `tick(now)` handles control tick `round((now - start) * fps * m)`, but never one that was
  already handled: a late tick skips the ticks it missed (counted in `skipped_ticks`) so the
  timeline stays on the clock the capture stamps use.
- Interpolation. Control ticks (j-1)*m+1 .. j*m move linearly from the previous command to
  action j, which is committed from the first of them on.
- Holding pauses the timeline. A chunk accepted while waiting (and every chunk in synchronous
  mode) plays step 0 at the first free tick: the robot held still since the capture, so no step
  is stale (`merge.place_chunk`).
- Waiting. The hold target is the last target the driver reported applied (`on_applied`),
  else the last command, else the measured pose. The initial wait for the first chunk is a wait
  like any other (same grace), but its held ticks are not counted as starved. In synchronous
  mode holding while the policy computes is the normal cycle: held ticks are counted in
  `held_ticks`, not `starved_ticks`, nothing is drained, no event is logged, and the grace
  still bounds each wait (keep it above the worst turnaround; the default is 3 s). While the
  caller says the server has gone silent (`server_silent`: it missed its presence samples),
  an expired grace waits for the presence lease to say whether the server is lost, so a dead
  server's wait faults naming it, whatever was buffered when it died.
- Requests. Up to `max_requests_in_flight` requests are in flight, staggered by
  `refill.another_request_due` (the chunk horizon comes from admission). A chunk answering
  any of them is taken; once one is merged, the older ones are closed and their chunks are
  dropped as superseded (never play an older prediction over a newer one). An abandoned
  request (drained at a wait, timed out, failed, superseded or answered) is no longer in
  flight; a chunk that answers it later is dropped, never used. Refill
  requests ask for a capture no older than one action period before sending; recovery and
  startup requests for a capture at or after the wait began; synchronous requests for a capture
  at or after sending. After a failed request the next one (a retry, counted in
  `request_retries`) waits one action period, doubling with every failure in a row up to
  `requests.RETRY_PAUSE_MAX_S`; an answer ends the streak. A refusal that retrying cannot
  change is no failure: the caller reports it as the server lost (`server_lost`).
  Turnaround samples come from every chunk that answers the in-flight request, even one dropped
  for its content, and from a chunk answering a request drained when a wait began (it came
  too late to play): a late, unusable chunk is exactly the latency the refill must cover.
- Committed plan (rtc merge, docs/design.md section 11). A refill request carries the targets
  from its capture on (`RequestOrder.plan`): the committed target and the buffered plan. Its
  first `frozen_steps` rows are the ones the robot will execute before the chunk can land, from
  the recent maximum turnaround; the chunk then replaces the plan only after them.
- Safety. Limits are validated on every chunk, so plan targets are within limits; the command
  moves from the previous command toward its target by at most `max_step_rad` per control tick.
  Hold commands re-send the applied target unchanged. The return path is a straight line in
  joint space at `return_speed_rad_s` for the joint with the farthest to go (and at most
  `max_step_rad` per tick), ending exactly on the pose measured at start.
- Text work, server loss and failover: `session.py`.
"""

from dataclasses import dataclass, field

import numpy as np

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.hold import Hold
from remote_inference_py.executor.requests import (
    Closed, Closure, Kind, RequestOrder, requests_text, RequestTable)
from remote_inference_py.executor.session import Session
from remote_inference_py.executor.status import Counters, ExecutorStats, State, Status
from remote_inference_py.executor.timeline import Timeline
from remote_inference_py.executor.validation import Chunk, ChunkValidator

__all__ = ['Chunk', 'ChunkVerdict', 'ExecutorCore', 'ExecutorStats', 'RequestOrder', 'State',
           'TickOutput']


@dataclass(frozen=True)
class TickOutput:
    """What to do on one control tick."""

    command: np.ndarray | None
    held: bool
    request: RequestOrder | None
    state: State
    events: list = field(default_factory=list)
    tick_index: int | None = None


@dataclass(frozen=True)
class ChunkVerdict:
    """Whether a chunk was used, and why not when it was dropped."""

    accepted: bool
    reason: str
    request_id: int
    trimmed_steps: int = 0
    usable_steps: int = 0
    overlap_steps: int = 0
    gap_steps: int = 0
    seam: float | None = None
    turnaround: float | None = None
    playback_at_submission: float | None = None
    observation_age: float | None = None


class ExecutorCore:
    """The executor's states and decisions over its parts (see the module docstring)."""

    def __init__(self, config: ExecutorConfig):
        """Create an idle core for `config`."""
        if not isinstance(config, ExecutorConfig):
            raise TypeError(f'config must be an ExecutorConfig, got {type(config).__name__}')
        self._cfg = config
        self._timeline = Timeline(config)
        self._requests = RequestTable()
        self._validator = ChunkValidator(config)
        self._robot = Hold(config.joint_names)   # feedback, hold target, the wait
        self._counters = Counters()
        self._status = Status(State.IDLE)   # the state, its message, the events to log
        self._session = Session(config, self._timeline, self._requests, self._robot,
                                self._status, self._counters)   # admission .. the end
        # Set by the caller before each tick: the admitted server has gone silent and its
        # presence lease, not the grace, decides whether it is lost (server_lease.py).
        self.server_silent = False

    # ---------------------------------------------------------------- read-only views

    config = property(lambda self: self._cfg, doc='The settings in effect.')
    state = property(lambda self: self._status.state, doc='The current state.')
    session_id = property(lambda self: self._session.id,
                          doc="The admitted session id ('' before admission).")
    is_terminal = property(lambda self: self.state in (State.STOPPED, State.FAULT),
                           doc='True once STOPPED or FAULT: nothing is left to send.')
    committed_tick = property(lambda self: self._timeline.committed_tick,
                              doc='The last committed action tick (-1 before the first).')
    plan = property(lambda self: self._timeline.plan,
                    doc='The uncommitted targets (read-only; replaced, never modified).')
    timeline_start = property(lambda self: self._timeline.start,
                              doc='The time of action tick 0 (the `now` given to start).')
    dispatched_request_id = property(
        lambda self: self._timeline.source,
        doc='The request whose chunk the last dispatched target came from (0 before any).')
    committed_target = property(lambda self: _copy(self._timeline.segment_target),
                                doc='A copy of the target being dispatched or interpolated '
                                    'toward, or None.')
    paused = property(lambda self: self._session.paused,
                      doc='True while holding for text work (between pause and resume).')
    server_is_lost = property(lambda self: self._session.lost,
                              doc='True after server_lost (until a fail_over).')
    initial_pose = property(lambda self: _copy(self._robot.initial_pose),
                            doc='A copy of the pose measured at start, or None before start.')

    # ---------------------------------------------------------------- robot feedback

    def on_measured(self, positions) -> bool:
        """Store the latest measured pose [rad, config joint order]; False if not finite.

        A non-finite pose marks the measurement unhealthy (no return path) until a finite one
        arrives. A vector of the wrong length raises ValueError.
        """
        finite, event = self._robot.measure(positions)
        self._status.event(event)
        return finite

    def on_applied(self, positions) -> bool:
        """Store the latest target the driver applied [rad]; False (ignored) if not finite."""
        return self._robot.apply(positions)

    def on_actuation_failed(self, reason: str, now: float) -> None:
        """Fault at `now` and send nothing more: applying an action or a hold failed.

        No return home; the requests still in flight are closed as abandoned at shutdown.
        """
        self._robot.actuation_failed = True
        if self.state != State.FAULT:
            self._session.end(State.FAULT, f'actuation failed: {reason}', now)

    def on_measurement_failed(self, reason: str) -> None:
        """Mark the measurement unhealthy (skips the return path) until on_measured succeeds."""
        self._status.event(self._robot.measurement_failed(reason))

    # ---------------------------------------------------------------- lifecycle (session.py)

    def admit(self, session_id: str, chunk_length: int = 0) -> None:
        """Record the admitted session (and the server's chunk length): IDLE -> READY.

        `chunk_length` (steps) gives the horizon a request in flight is expected to cover;
        0 (unknown) uses the length of the chunks received so far.
        """
        self._session.admit(session_id, chunk_length)

    def start(self, now: float) -> None:
        """Anchor the timeline at `now` and start: READY -> RUNNING."""
        self._session.start(now)

    def stop(self, now: float) -> None:
        """Stop on user request at `now`: return to the initial pose if configured, then STOPPED.

        `now` dates the shutdown: the requests still in flight are closed as abandoned then.
        """
        self._session.stop(now)

    def fault(self, reason: str, now: float) -> None:
        """Fault at `now` for a reason found outside the core (returns home when healthy)."""
        self._session.fault(reason, now)

    def server_lost(self, now: float, why: str = '') -> None:
        """Observe server loss: no more requests, buffered actions drain, never resumes.

        `why` (e.g. which instance was lost and how it showed) heads the status message.
        """
        self._session.lose(now, why)

    def fail_over(self, session_id: str, chunk_length: int, now: float) -> None:
        """Go on with a new session of another server after a loss, while holding.

        Only in WAITING after :meth:`server_lost` (the buffer has drained and the arm holds).
        The old session's chunks are dropped from now on (another session id), nothing of its
        plan is kept, and the wait starts again at `now`: the first chunk must come from a
        capture taken after `now` and within the grace, like after any wait.
        """
        self._session.fail_over(session_id, chunk_length, now)

    def pause(self, now: float, reason: str) -> np.ndarray:
        """Hold for text work from `now` on: discard the buffered continuation (session.py).

        Return the hold command: the last command the core returned, so the arm never steps
        back wherever in a tick the pause falls (the executor's supervisor pauses before the
        tick; a caller that pauses after :meth:`tick` may send this one instead of that tick's
        command, which it equals). RuntimeError names why it cannot pause (not moving, the
        server lost, already paused).
        """
        self._session.pause(now, reason)
        return self._robot.hold_command()

    def resume(self, now: float, reason: str) -> None:
        """End a pause at `now`: move again only from a capture taken after `now`."""
        self._session.resume(now, reason)

    def hold_at(self, command) -> None:
        """While paused, hold `command` [rad] from the next tick on (the human's target).

        The executor's supervisor steers the hold toward the leader arm while the human
        drives; a resume then waits from this target, so the arm never steps back to where
        the pause began. RuntimeError when not paused; ValueError for a wrong length.
        """
        if not self._session.paused:
            raise RuntimeError(f'cannot steer the hold in state {self.state.name} unpaused')
        vector = self._robot.joint_vector('human target', command)
        self._robot.held = vector.copy()

    @property
    def last_command(self):
        """Return a copy of the last command returned (None before the first)."""
        return _copy(self._robot.last_command)

    def update_config(self, config: ExecutorConfig) -> None:
        """Apply new tunables at once; raise ValueError if a structural field changes."""
        if not isinstance(config, ExecutorConfig):
            raise TypeError(f'config must be an ExecutorConfig, got {type(config).__name__}')
        changes = self._cfg.structural_changes(config)
        if changes:
            raise ValueError('cannot change at run time: ' + ', '.join(changes))
        old = self._cfg.as_dict()
        diff = [f'{name} {old[name]!r} -> {value!r}'
                for name, value in config.as_dict().items() if old[name] != value]
        self._cfg = self._validator.config = self._session.config = config
        self._timeline.configure(config)
        if diff:
            self._status.event('settings updated: ' + ', '.join(diff))

    # ---------------------------------------------------------------- control tick

    def tick(self, now: float) -> TickOutput:
        """Advance one control tick; return the command, the request and the state."""
        if self.state in (State.IDLE, State.READY, State.STOPPED, State.FAULT):
            return self._output()
        tick, skipped = self._timeline.advance(now)
        self._counters.add('skipped_ticks', skipped)
        self._counters.add('ticks')
        if self.state == State.STOPPING:
            return self._output(self._session.return_command(now), tick=tick)
        if self._session.paused:   # text work: hold, no request, no grace
            self._timeline.hold(tick)
            self._counters.add('held_ticks')
            return self._output(self._robot.hold_command(), True, None, tick)
        command, held = self._dispatch(tick, now)
        if self.state == State.STOPPING:
            command, held = self._session.return_command(now), False
        elif self.state == State.FAULT:
            command, held = None, False
        return self._output(command, held, self._maybe_request(now), tick)

    def _output(self, command=None, held=False, request=None, tick=None) -> TickOutput:
        return TickOutput(command, held, request, self.state, self._status.take_events(), tick)

    def _dispatch(self, tick: int, now: float):
        """Return (command, held) for control tick `tick` while RUNNING or WAITING."""
        if self._timeline.target(tick) is None:
            return self._hold(tick, now), True
        command = self._timeline.step_toward(tick, self._robot.previous_command())
        self._robot.dispatched(command)
        self._counters.add('dispatched_ticks')
        if self.state == State.WAITING:
            waited = now - self._robot.waiting_since
            self._robot.waiting_since = None
            self._status.set(State.RUNNING, f'resumed after {waited:.2f} s of waiting',
                             log=not self._cfg.synchronous)
        return command, False

    def _hold(self, tick: int, now: float) -> np.ndarray:
        """Re-send the hold target; begin the wait or fault when the grace has expired."""
        self._timeline.hold(tick)
        command = self._robot.hold_command()
        self._counters.add('held_ticks')
        if self._timeline.motion_started and not self._cfg.synchronous:
            self._counters.add('starved_ticks')
        if self._robot.waiting_since is None:
            self._begin_wait(tick, now)
        elif (self._robot.grace_expired(now, self._cfg.starvation_grace_s)
              and not self.server_silent):
            self._session.starved(now)
        return command

    def _begin_wait(self, tick: int, now: float) -> None:
        self._robot.waiting_since = now
        if self._cfg.synchronous:
            self._status.set(State.WAITING, 'waiting for the next chunk (synchronous)',
                             log=False)
            return
        drained = self._requests.close_all(Closure(Closed.DRAINED, now))
        self._counters.add('drained_requests', len(drained))
        if drained:
            self._status.event(f'{requests_text(drained)} drained when the wait began')
        why = (f'starved: nothing to dispatch at tick {tick}' if self._timeline.motion_started
               else 'waiting for the first chunk')
        self._status.set(State.WAITING, f'{why}; holding the last applied target, a fresh '
                         f'capture taken after t={now:.3f} is needed')

    # ---------------------------------------------------------------- requests

    def _maybe_request(self, now: float):
        """Return a RequestOrder when one must be sent this tick (requests.py decides)."""
        if self.state not in (State.RUNNING, State.WAITING) or self._session.lost:
            return None
        timeout = self._cfg.request_timeout_s
        for request_id in self._requests.expire(now, timeout):
            self._counters.add('request_timeouts')
            self._status.event(f'request {request_id} timed out after {timeout:g} s')
        retry = self._requests.failures_in_a_row > 0
        order = self._requests.order(now, self._cfg, self._timeline, self._robot.waiting_since)
        if order is not None:
            self._counters.add('requests')
            if retry:
                self._counters.add('request_retries')
        return order

    def on_request_failed(self, request_id: int, reason: str, now: float) -> bool:
        """Record that the server could not serve a request; False if it was not in flight."""
        if not self._requests.fail(request_id, reason, now, self._cfg.action_period):
            return False
        self._counters.add('request_failures')
        self._status.event(f'request {request_id} failed: {reason}')
        return True

    # ---------------------------------------------------------------- chunks

    def on_chunk(self, chunk: Chunk, now: float) -> ChunkVerdict:
        """Validate a chunk and merge it into the plan, or drop it whole with a reason."""
        request_id = chunk.request_id
        refusal = self._session.chunk_refusal(chunk.session_id)
        if refusal:
            return self._drop(request_id, refusal)
        request, turnaround, why = self._requests.answer(request_id, now)
        if request is None:
            return self._drop(request_id, why)
        details = dict(turnaround=turnaround,
                       playback_at_submission=request.playback_at_submission,
                       observation_age=now - chunk.capture_time)
        positions, problem = self._validator.positions(
            chunk, now, request.earliest_capture_time,
            waited=request.kind in (Kind.STARTUP, Kind.RECOVERY))
        if problem:
            return self._drop(request_id, problem, **details)

        holding = self.state == State.WAITING or self._cfg.synchronous
        result = self._timeline.merge(positions, chunk.capture_time, holding,
                                      self._robot.previous_command(),
                                      request.frozen_until_tick, request_id)
        if not result.usable:
            return self._drop(request_id, result.reason, trimmed_steps=result.trimmed_steps,
                              **details)
        steps = 0 if self._cfg.synchronous else len(positions)   # sync: no horizon needed
        superseded = self._requests.answered_with(request_id, steps, now, self._cfg.fps)
        if superseded:
            self._status.event(f'{requests_text(superseded)} superseded by the chunk of '
                               f'request {request_id}')
        self._counters.accepted(result.trimmed_steps, result.seam)
        return ChunkVerdict(True, '', request_id, result.trimmed_steps, result.usable_steps,
                            result.overlap_steps, result.gap_steps, result.seam, **details)

    def _drop(self, request_id: int, reason: str, **details) -> ChunkVerdict:
        self._counters.dropped(reason)
        return ChunkVerdict(False, reason, request_id, **details)

    # ---------------------------------------------------------------- status

    def stats(self) -> ExecutorStats:
        """Return the counters and timings for the status topic."""
        return self._counters.snapshot(
            state=self.state, message=self._status.message, session_id=self._session.id,
            buffered_playback_s=self._timeline.buffered_playback(),
            refill_s=self._cfg.refill_seconds,
            effective_refill_s=self._requests.effective_refill(self._cfg),
            last_turnaround_s=self._requests.turnaround.last_s,
            p50_turnaround_s=self._requests.turnaround.p50_s,
            max_turnaround_s=self._requests.turnaround.recent_max_s,
            requests_in_flight=len(self._requests))


def _copy(array):
    return None if array is None else array.copy()
