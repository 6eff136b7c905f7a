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

`ExecutorCore` owns the action plan and the control timeline. The caller feeds it one clock,
`now` in seconds (the node uses a monotonic clock and converts observation stamps into it),
calls `tick(now)` once per control tick and sends what it returns. Merge rules live in
`merge.py`, refill timing in `refill.py`.

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
  still bounds each wait (keep it above the worst turnaround; the default is 3 s).
- Requests. Up to `max_requests_in_flight` requests are in flight, staggered by
  `refill.another_request_due` (the chunk horizon comes from admission). A chunk answering
  any of them is taken; once one is merged, the older ones are closed and their chunks are
  dropped as superseded (never play an older prediction over a newer one). An abandoned
  request (drained at a wait, timed out, failed, superseded or answered) is no longer in
  flight; a chunk that answers it later is dropped, never used. Refill
  requests ask for a capture no older than one action period before sending; recovery and
  startup requests for a capture at or after the wait began; synchronous requests for a capture
  at or after sending. After a failed request the next one waits at least one action period.
  Turnaround samples come from every chunk that answers the in-flight request, even one dropped
  for its content: a late, unusable chunk is exactly the latency the refill must cover.
- Committed plan (rtc merge, docs/design.md section 11). A refill request carries the targets
  from its capture on (`RequestOrder.plan`): the committed target and the buffered plan. Its
  first `frozen_steps` rows are the ones the robot will execute before the chunk can land, from
  the recent maximum turnaround; the chunk then replaces the plan only after them.
- Safety. Limits are validated on every chunk, so plan targets are within limits; the command
  moves from the previous command toward its target by at most `max_step_rad` per control tick.
  Hold commands re-send the applied target unchanged. The return path is a straight line in
  joint space at `return_speed_rad_s` for the joint with the farthest to go (and at most
  `max_step_rad` per tick), ending exactly on the pose measured at start.
"""

from collections import deque, OrderedDict
from dataclasses import dataclass, field
import enum
import math

import numpy as np

from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.merge import first_tick_after, merge_chunk, place_chunk, Plan
from remote_inference_py.executor.refill import (
    another_request_due, effective_refill, request_spacing, TurnaroundEstimator)

RECENT_SEAMS = 50
_CLOSED_REQUESTS_KEPT = 64


class State(enum.IntEnum):
    """Executor state; values equal the ExecutorStatus.msg STATE_* constants."""

    IDLE = 0
    READY = 1
    RUNNING = 2
    WAITING = 3
    STOPPING = 4
    STOPPED = 5
    FAULT = 6


@dataclass(frozen=True)
class Chunk:
    """A chunk of future joint position targets [rad] computed from one observation.

    `positions` is (steps, joints) with columns in `joint_names` order, or flat row-major
    when `step_count` is given (as carried by ActionChunk.msg). `capture_time` is the capture
    stamp of the observation, on the core's clock.
    """

    session_id: str
    request_id: int
    capture_time: float
    joint_names: tuple
    step_period: float
    positions: np.ndarray
    step_count: int | None = None


@dataclass(frozen=True)
class RequestOrder:
    """A request the caller must send now."""

    request_id: int
    earliest_capture_time: float
    sent_time: float
    playback_at_submission: float
    kind: str
    plan: CommittedPlan | None = None


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


@dataclass(frozen=True)
class ExecutorStats:
    """Counters and timings for the status topic and the activity summary."""

    state: State
    message: str
    session_id: str
    buffered_playback_s: float
    refill_s: float
    effective_refill_s: float
    last_turnaround_s: float
    p50_turnaround_s: float
    max_turnaround_s: float
    ticks: int
    dispatched_ticks: int
    held_ticks: int
    starved_ticks: int
    skipped_ticks: int
    return_ticks: int
    requests: int
    request_timeouts: int
    request_failures: int
    drained_requests: int
    chunks_accepted: int
    chunks_dropped: int
    trimmed_steps: int
    last_drop_reason: str
    recent_seams: tuple
    max_seam: float
    requests_in_flight: int = 0


@dataclass
class _Request:
    request_id: int
    sent_time: float
    earliest_capture_time: float
    playback_at_submission: float
    kind: str
    frozen_until_tick: int | None = None


class ExecutorCore:
    """Plan, timeline, requests, validation, hold, faults and shutdown of the executor."""

    def __init__(self, config: ExecutorConfig):
        """Create an idle core for `config`."""
        if not isinstance(config, ExecutorConfig):
            raise TypeError(f'config must be an ExecutorConfig, got {type(config).__name__}')
        self._cfg = config
        joint_count = len(config.joint_names)
        self._joint_index = {name: i for i, name in enumerate(config.joint_names)}
        self._lower = np.array(config.lower_limits(), dtype=np.float64)
        self._upper = np.array(config.upper_limits(), dtype=np.float64)
        self._blend_mask = self._make_blend_mask(config)
        self._column_orders = {}

        self._state = State.IDLE
        self._message = ''
        self._session_id = ''
        self._events = []

        self._measured = None
        self._measurement_ok = True
        self._applied = None
        self._actuation_failed = False
        self._initial_pose = None
        self._last_command = None

        self._timeline_start = 0.0
        self._last_tick = -1
        self._committed_tick = -1
        self._segment_tick = None
        self._segment_target = None
        self._plan = Plan.empty(joint_count)
        self._motion_started = False
        self._waiting_since = None

        self._in_flight = OrderedDict()   # request_id -> _Request, oldest first
        self._chunk_horizon_s = 0.0
        self._closed_requests = OrderedDict()
        self._next_request_id = 1
        self._request_not_before = -math.inf
        self._server_lost = False
        self._turnaround = TurnaroundEstimator()

        self._stop_outcome = None
        self._stop_reason = ''
        self._return_path = None
        self._return_step = 0

        self._counts = dict.fromkeys(
            ('ticks', 'dispatched_ticks', 'held_ticks', 'starved_ticks', 'skipped_ticks',
             'return_ticks', 'requests', 'request_timeouts', 'request_failures',
             'drained_requests', 'chunks_accepted', 'chunks_dropped', 'trimmed_steps'), 0)
        self._last_drop_reason = ''
        self._seams = deque(maxlen=RECENT_SEAMS)
        self._max_seam = 0.0

    # ---------------------------------------------------------------- read-only views

    @property
    def config(self) -> ExecutorConfig:
        """Return the settings in effect."""
        return self._cfg

    @property
    def state(self) -> State:
        """Return the current state."""
        return self._state

    @property
    def session_id(self) -> str:
        """Return the admitted session id ('' before admission)."""
        return self._session_id

    @property
    def is_terminal(self) -> bool:
        """Return True once STOPPED or FAULT: nothing is left to send."""
        return self._state in (State.STOPPED, State.FAULT)

    @property
    def committed_tick(self) -> int:
        """Return the last action tick that is committed (-1 before the first tick)."""
        return self._committed_tick

    @property
    def committed_target(self):
        """Return a copy of the target being dispatched or interpolated toward, or None."""
        return None if self._segment_target is None else self._segment_target.copy()

    @property
    def plan(self) -> Plan:
        """Return the uncommitted targets (read-only; replaced, never modified)."""
        return self._plan

    @property
    def initial_pose(self):
        """Return a copy of the pose measured at start, or None before start."""
        return None if self._initial_pose is None else self._initial_pose.copy()

    @property
    def timeline_start(self) -> float:
        """Return the time of action tick 0 (the `now` given to start)."""
        return self._timeline_start

    # ---------------------------------------------------------------- robot feedback

    def on_measured(self, positions) -> bool:
        """Store the latest measured pose [rad, config joint order]; False if not finite.

        A non-finite pose marks the measurement unhealthy (no return path) until a finite one
        arrives. A vector of the wrong length raises ValueError.
        """
        vector = self._joint_vector('measured pose', positions)
        problem = _first_non_finite(vector, self._cfg.joint_names)
        if problem:
            if self._measurement_ok:
                self._event(f'measurement unhealthy: {problem} in the measured pose')
            self._measurement_ok = False
            return False
        if not self._measurement_ok:
            self._event('measurement healthy again')
        self._measurement_ok = True
        self._measured = vector
        return True

    def on_applied(self, positions) -> bool:
        """Store the latest target the driver applied [rad]; False (ignored) if not finite."""
        vector = self._joint_vector('applied target', positions)
        if _first_non_finite(vector, self._cfg.joint_names):
            return False
        self._applied = vector
        return True

    def on_actuation_failed(self, reason: str) -> None:
        """Fault at once and send nothing more: applying an action or a hold failed."""
        self._actuation_failed = True
        if self._state != State.FAULT:
            self._enter_terminal(State.FAULT, f'actuation failed: {reason}')

    def on_measurement_failed(self, reason: str) -> None:
        """Mark the measurement unhealthy (skips the return path) until on_measured succeeds."""
        if self._measurement_ok:
            self._event(f'measurement unhealthy: {reason}')
        self._measurement_ok = False

    # ---------------------------------------------------------------- lifecycle

    def admit(self, session_id: str, chunk_length: int = 0) -> None:
        """Record the admitted session (and the server's chunk length): IDLE -> READY.

        `chunk_length` (steps) gives the horizon a request in flight is expected to cover;
        0 (unknown) uses the length of the chunks received so far.
        """
        if self._state != State.IDLE:
            raise RuntimeError(f'cannot admit a session in state {self._state.name}')
        if not session_id:
            raise ValueError('session_id must not be empty')
        self._session_id = session_id
        self._chunk_horizon_s = max(0, int(chunk_length)) / self._cfg.fps
        self._set_state(State.READY, f"admitted session '{session_id}'")

    def start(self, now: float) -> None:
        """Anchor the timeline at `now` and start: READY -> RUNNING."""
        if self._state != State.READY:
            raise RuntimeError(f'cannot start in state {self._state.name}')
        if self._server_lost:
            raise RuntimeError('cannot start: the server was lost')
        if self._measured is None or not self._measurement_ok:
            raise RuntimeError('cannot start: no healthy measured pose yet')
        self._timeline_start = float(now)
        self._initial_pose = self._measured.copy()
        self._set_state(State.RUNNING, f"started session '{self._session_id}'")

    def stop(self, now: float) -> None:
        """Stop on user request: return to the initial pose if configured, then STOPPED."""
        if self._state in (State.STOPPING, State.STOPPED, State.FAULT):
            return
        if self._state in (State.IDLE, State.READY):
            self._enter_terminal(State.STOPPED, 'stopped before motion')
            return
        self._shut_down(State.STOPPED, 'stop requested')

    def fault(self, reason: str, now: float) -> None:
        """Fault for a reason found outside the core (returns home first when healthy)."""
        self._fault(reason)

    def server_lost(self, now: float) -> None:
        """Observe server loss: no more requests, buffered actions drain, never resumes."""
        if self._server_lost:
            return
        self._server_lost = True
        lost = self._close_all(f'the server was lost at t={now:.3f}')
        if lost:
            self._event(f'{_requests(lost)} abandoned: the server was lost')
        if self._state == State.READY:
            self._enter_terminal(State.FAULT, 'server lost before start')
        elif self._state in (State.RUNNING, State.WAITING):
            self._message = 'server lost: this session does not resume'
            self._event(f'server lost: no more requests; {self._buffered_playback():.2f} s '
                        'of buffered actions may drain, then hold until the grace expires')

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
        self._cfg = config
        self._blend_mask = self._make_blend_mask(config)
        if diff:
            self._event('settings updated: ' + ', '.join(diff))

    # ---------------------------------------------------------------- control tick

    def tick(self, now: float) -> TickOutput:
        """Advance one control tick; return the command, the request and the state."""
        if self._state in (State.IDLE, State.READY, State.STOPPED, State.FAULT):
            return TickOutput(None, False, None, self._state, self._take_events())
        tick = self._advance(now)
        if self._state == State.STOPPING:
            command = self._return_command()
            return TickOutput(command, False, None, self._state, self._take_events(), tick)

        command, held = self._dispatch(tick, now)
        if self._state == State.STOPPING:
            command, held = self._return_command(), False
        elif self._state == State.FAULT:
            command, held = None, False
        request = self._maybe_request(now)
        return TickOutput(command, held, request, self._state, self._take_events(), tick)

    def _advance(self, now: float) -> int:
        """Return the control tick due at `now`, never one already handled."""
        rate = self._cfg.fps * self._cfg.interpolation_multiplier
        due = math.floor((now - self._timeline_start) * rate + 0.5)
        tick = max(due, self._last_tick + 1)
        self._counts['skipped_ticks'] += tick - self._last_tick - 1
        self._counts['ticks'] += 1
        self._last_tick = tick
        return tick

    def _dispatch(self, tick: int, now: float):
        """Return (command, held) for control tick `tick` while RUNNING or WAITING."""
        multiplier = self._cfg.interpolation_multiplier
        action_tick = -(-tick // multiplier)
        if action_tick != self._segment_tick:
            self._plan = self._plan.drop_before(action_tick)
            target = self._plan.row(action_tick)
            if target is None:
                return self._hold(tick, now), True
            self._segment_tick = action_tick
            self._segment_target = target
            self._committed_tick = action_tick
            self._plan = self._plan.drop_before(action_tick + 1)

        previous = self._previous_command()
        remaining = action_tick * multiplier - tick + 1
        wanted = previous + (self._segment_target - previous) / remaining
        limit = self._cfg.max_step_rad
        command = previous + np.clip(wanted - previous, -limit, limit)
        self._last_command = command
        self._counts['dispatched_ticks'] += 1
        self._motion_started = True
        if self._state == State.WAITING:
            waited = now - self._waiting_since
            self._waiting_since = None
            self._set_state(State.RUNNING, f'resumed after {waited:.2f} s of waiting',
                            log=not self._cfg.synchronous)
        return command, False

    def _hold(self, tick: int, now: float) -> np.ndarray:
        """Re-send the hold target; begin the wait or fault when the grace has expired."""
        self._segment_tick = None
        self._segment_target = None
        self._committed_tick = max(self._committed_tick,
                                   tick // self._cfg.interpolation_multiplier)
        command = self._hold_target().copy()
        self._last_command = command
        self._counts['held_ticks'] += 1
        if self._motion_started and not self._cfg.synchronous:
            self._counts['starved_ticks'] += 1
        if self._waiting_since is None:
            self._begin_wait(tick, now)
        elif now - self._waiting_since > self._cfg.starvation_grace_s:
            grace = self._cfg.starvation_grace_s
            if self._server_lost:
                why = f'the server was lost and nothing was buffered for {grace:g} s'
            else:
                why = f'no usable chunk arrived within the {grace:g} s grace'
            self._fault(f'starved: {why} (waiting since t={self._waiting_since:.3f})')
        return command

    def _begin_wait(self, tick: int, now: float) -> None:
        self._waiting_since = now
        if self._cfg.synchronous:
            self._set_state(State.WAITING, 'waiting for the next chunk (synchronous)',
                            log=False)
            return
        drained = self._close_all(f'drained when the wait began at t={now:.3f}')
        self._counts['drained_requests'] += len(drained)
        if drained:
            self._event(f'{_requests(drained)} drained when the wait began')
        if self._motion_started:
            why = f'starved: nothing to dispatch at tick {tick}'
        else:
            why = 'waiting for the first chunk'
        self._set_state(State.WAITING, f'{why}; holding the last applied target, a fresh '
                        f'capture taken after t={now:.3f} is needed')

    def _hold_target(self) -> np.ndarray:
        if self._applied is not None:
            return self._applied
        if self._last_command is not None:
            return self._last_command
        return self._measured

    def _previous_command(self) -> np.ndarray:
        return self._last_command if self._last_command is not None else self._hold_target()

    def _buffered_playback(self) -> float:
        """Return the seconds of planned targets after the last handled control tick."""
        if len(self._plan):
            last_planned = self._plan.end_tick - 1
        elif self._segment_tick is not None:
            last_planned = self._segment_tick
        else:
            return 0.0
        remaining = last_planned * self._cfg.interpolation_multiplier - self._last_tick
        return max(0, remaining) * self._cfg.tick_period

    # ---------------------------------------------------------------- requests

    def _effective_refill(self) -> float:
        return effective_refill(self._cfg.refill_seconds, self._turnaround.recent_max_s,
                                self._cfg.fps)

    def _maybe_request(self, now: float):
        """Return a RequestOrder when one must be sent this tick."""
        if self._state not in (State.RUNNING, State.WAITING) or self._server_lost:
            return None
        cfg = self._cfg
        self._expire_requests(now)
        if now < self._request_not_before:
            return None
        buffered = self._buffered_playback()
        waiting = self._waiting_since is not None
        if cfg.synchronous:
            due = buffered <= 0.0 and not self._in_flight
            kind = 'synchronous'
        else:
            # While holding, one request at a time: the plan's end is unknown until a chunk
            # resumes motion (it then plays from step 0), so coverage cannot be judged.
            due = (not self._in_flight if waiting
                   else self._another_request_due(now, buffered))
            kind = 'refill' if not waiting else (
                'recovery' if self._motion_started else 'startup')
        if not due:
            return None
        if waiting:
            earliest = self._waiting_since
        elif cfg.synchronous:
            earliest = now
        else:
            earliest = now - cfg.action_period
        plan, frozen_until = None, None
        if cfg.chunk_merge == 'rtc' and kind == 'refill':
            plan, frozen_until = self._committed_plan(now, earliest)
        request = _Request(self._next_request_id, now, earliest, buffered, kind, frozen_until)
        self._next_request_id += 1
        self._in_flight[request.request_id] = request
        self._counts['requests'] += 1
        return RequestOrder(request.request_id, earliest, now, buffered, kind, plan)

    def _committed_plan(self, now: float, earliest: float):
        """Return (the plan from a capture at `earliest` on, first tick after its frozen rows).

        Row 0 is the tick a chunk captured just after `earliest` starts at (or the committed
        tick, if later). The frozen rows reach the first tick after the moment a chunk sent
        now lands, if it takes the recent maximum turnaround. (None, None) without targets.
        """
        cfg = self._cfg
        first = max(first_tick_after(earliest, self._timeline_start, cfg.fps) + cfg.action_offset,
                    self._committed_tick)
        rows = []
        if first == self._committed_tick and self._segment_target is not None:
            rows.append(self._segment_target)
        tick = first + len(rows)
        while (row := self._plan.row(tick)) is not None:
            rows.append(row)
            tick += 1
        if not rows:
            return None, None
        landing = now + self._turnaround.recent_max_s
        free_then = math.ceil((landing - self._timeline_start) * cfg.fps - 1e-9)
        frozen = min(len(rows), max(0, free_then - first))
        start = self._timeline_start + (first - cfg.action_offset) / cfg.fps
        return CommittedPlan(start, np.array(rows), frozen), first + frozen

    def _expire_requests(self, now: float) -> None:
        """Close every request in flight for longer than the timeout, naming each."""
        timeout = self._cfg.request_timeout_s
        for request in list(self._in_flight.values()):
            if now - request.sent_time > timeout:
                self._close_request(request.request_id,
                                    f'abandoned after the {timeout:g} s timeout')
                self._counts['request_timeouts'] += 1
                self._event(f'request {request.request_id} timed out after {timeout:g} s')

    def _another_request_due(self, now: float, buffered: float) -> bool:
        """Return True when the staggering rule (refill.py) asks for one more request now."""
        cfg = self._cfg
        requests = list(self._in_flight.values())
        return another_request_due(
            buffered,
            [r.earliest_capture_time + self._chunk_horizon_s - now for r in requests],
            now - requests[-1].sent_time if requests else math.inf,
            self._effective_refill(), cfg.max_requests_in_flight,
            request_spacing(self._turnaround.recent_max_s, cfg.max_requests_in_flight, cfg.fps))

    def on_request_failed(self, request_id: int, reason: str, now: float) -> bool:
        """Record that the server could not serve a request; False if it was not in flight."""
        if request_id not in self._in_flight:
            return False
        self._close_request(request_id, f'failed: {reason}')
        self._counts['request_failures'] += 1
        self._request_not_before = now + self._cfg.action_period
        self._event(f'request {request_id} failed: {reason}')
        return True

    def _close_request(self, request_id: int, why: str) -> None:
        del self._in_flight[request_id]
        self._closed_requests[request_id] = why
        while len(self._closed_requests) > _CLOSED_REQUESTS_KEPT:
            self._closed_requests.popitem(last=False)

    def _close_all(self, why: str, before: int | None = None) -> list:
        """Close the requests in flight (those older than request `before`); return their ids."""
        closed = [i for i in self._in_flight if before is None or i < before]
        for request_id in closed:
            self._close_request(request_id, why)
        return closed

    # ---------------------------------------------------------------- chunks

    def on_chunk(self, chunk: Chunk, now: float) -> ChunkVerdict:
        """Validate a chunk and merge it into the plan, or drop it whole with a reason."""
        request_id = chunk.request_id
        if self._state not in (State.RUNNING, State.WAITING):
            return self._drop(request_id, f'executor is {self._state.name}; chunk not used')
        if chunk.session_id != self._session_id:
            return self._drop(request_id, f"chunk from session '{chunk.session_id}' but "
                                          f"admitted session is '{self._session_id}'")
        if self._server_lost:
            return self._drop(request_id, f"server lost: session '{self._session_id}' does "
                                          'not resume')
        request = self._in_flight.get(request_id)
        if request is None:
            return self._drop(request_id, self._not_in_flight(request_id))

        turnaround = now - request.sent_time
        self._turnaround.add(max(0.0, turnaround),
                             steady=request.kind in ('refill', 'synchronous'))
        self._close_request(request_id, 'already answered')
        details = dict(turnaround=turnaround,
                       playback_at_submission=request.playback_at_submission,
                       observation_age=now - chunk.capture_time)

        positions, problem = self._validated_positions(chunk, now, request)
        if problem:
            return self._drop(request_id, problem, **details)

        cfg = self._cfg
        first_free = self._committed_tick + 1
        holding = self._state == State.WAITING or cfg.synchronous
        start_tick = place_chunk(chunk.capture_time, self._timeline_start, cfg.fps,
                                 cfg.action_offset, first_free, holding)
        previous = self._segment_target
        if previous is None:
            previous = self._previous_command()
        result = merge_chunk(self._plan, positions, start_tick, first_free, previous,
                             cfg.chunk_merge, ensemble_coeff=cfg.ensemble_coeff,
                             blend_steps=cfg.blend_steps, blend_weight=cfg.blend_weight,
                             blend_mask=self._blend_mask,
                             frozen_until_tick=request.frozen_until_tick)
        if not result.usable:
            return self._drop(request_id, result.reason, trimmed_steps=result.trimmed_steps,
                              **details)

        self._plan = result.plan
        if not self._cfg.synchronous:   # what the next request in flight will cover
            self._chunk_horizon_s = self._chunk_horizon_s or len(positions) / cfg.fps
        superseded = self._close_all(f'superseded by request {request_id}', before=request_id)
        if superseded:
            self._event(f'{_requests(superseded)} superseded by the chunk of request '
                        f'{request_id}')
        self._counts['chunks_accepted'] += 1
        self._counts['trimmed_steps'] += result.trimmed_steps
        self._seams.append(result.seam)
        self._max_seam = max(self._max_seam, result.seam)
        return ChunkVerdict(True, '', request_id, trimmed_steps=result.trimmed_steps,
                            usable_steps=result.usable_steps,
                            overlap_steps=result.overlap_steps, gap_steps=result.gap_steps,
                            seam=result.seam, **details)

    def _not_in_flight(self, request_id: int) -> str:
        why = self._closed_requests.get(request_id)
        if why == 'already answered':
            return f'duplicate: request {request_id} was already answered'
        if why is not None and why.startswith('superseded'):
            return (f'superseded: answers request {request_id}, older than request '
                    f'{why.rsplit(" ", 1)[-1]} already merged')
        if why is not None:
            return f'stale: answers request {request_id}, which was {why}'
        in_flight = _id_list(self._in_flight) or 'none'
        return f'unknown request {request_id} (in flight: {in_flight})'

    def _validated_positions(self, chunk: Chunk, now: float, request: _Request):
        """Return (positions in config joint order, '') or (None, reason)."""
        names = tuple(chunk.joint_names)
        order = self._column_order(names)
        if isinstance(order, str):
            return None, order
        try:
            positions = np.asarray(chunk.positions, dtype=np.float64)
        except (TypeError, ValueError):
            return None, 'positions are not numbers'
        if chunk.step_count is not None and positions.ndim == 1:
            expected = chunk.step_count * len(names)
            if positions.size != expected:
                return None, (f'positions has {positions.size} values, expected step_count '
                              f'{chunk.step_count} x {len(names)} joints = {expected}')
            positions = positions.reshape(chunk.step_count, len(names))
        if positions.ndim != 2:
            return None, f'positions must be (steps, joints), got shape {positions.shape}'
        if chunk.step_count is not None and positions.shape[0] != chunk.step_count:
            return None, (f'chunk has {positions.shape[0]} steps but step_count says '
                          f'{chunk.step_count}')
        if positions.shape[0] < 1:
            return None, 'chunk has no steps'
        if positions.shape[1] != len(names):
            return None, (f'chunk has {positions.shape[1]} columns but names '
                          f'{len(names)} joints')
        cfg = self._cfg
        period = float(chunk.step_period)
        if not abs(period * cfg.fps - 1.0) <= cfg.step_period_tolerance:
            return None, (f'step period {period:.6g} s does not match 1/fps = '
                          f'{cfg.action_period:.6g} s')
        if not np.isfinite(positions).all():
            step, column = np.argwhere(~np.isfinite(positions))[0]
            return None, f"non-finite value at step {step} joint '{names[column]}'"
        positions = positions[:, order]
        outside = (positions < self._lower) | (positions > self._upper)
        if outside.any():
            step, joint = np.argwhere(outside)[0]
            return None, (f"joint '{cfg.joint_names[joint]}' value "
                          f'{positions[step, joint]:.4g} at step {step} outside limits '
                          f'[{self._lower[joint]:.4g}, {self._upper[joint]:.4g}]')
        capture = float(chunk.capture_time)
        if not math.isfinite(capture):
            return None, 'capture time is not finite'
        if capture > now + cfg.capture_tolerance_s:
            return None, (f'capture time is in the future ({capture - now:.3f} s after '
                          'arrival)')
        if capture < request.earliest_capture_time:
            if request.kind in ('startup', 'recovery'):
                return None, (f'stale: captured at t={capture:.3f}, before the wait began '
                              f'at t={request.earliest_capture_time:.3f}')
            return None, (f'stale: captured at t={capture:.3f}, before the requested '
                          f'earliest capture t={request.earliest_capture_time:.3f}')
        return positions, ''

    def _column_order(self, names: tuple):
        """Return the column index of each config joint in `names`, or an error string."""
        order = self._column_orders.get(names)
        if order is not None:
            return order
        seen = set()
        for name in names:
            if name in seen:
                return f"joint '{name}' appears twice in chunk"
            seen.add(name)
            if name not in self._joint_index:
                return f"unexpected joint '{name}' in chunk"
        for name in self._cfg.joint_names:
            if name not in seen:
                return f"joint '{name}' missing from chunk"
        order = np.array([names.index(name) for name in self._cfg.joint_names])
        if len(self._column_orders) < 16:
            self._column_orders[names] = order
        return order

    def _drop(self, request_id: int, reason: str, **details) -> ChunkVerdict:
        self._counts['chunks_dropped'] += 1
        self._last_drop_reason = reason
        return ChunkVerdict(False, reason, request_id, **details)

    # ---------------------------------------------------------------- faults and shutdown

    def _fault(self, reason: str) -> None:
        if self._state in (State.STOPPED, State.FAULT):
            return
        if self._state == State.STOPPING:
            self._stop_outcome = State.FAULT
            self._stop_reason = reason
            self._message = f'fault: {reason}; still returning to the initial position'
            self._event(self._message)
            return
        if self._state in (State.IDLE, State.READY):
            self._enter_terminal(State.FAULT, reason)
            return
        self._shut_down(State.FAULT, reason)

    def _shut_down(self, outcome: State, reason: str) -> None:
        """Leave RUNNING or WAITING: return home when possible, else end at once."""
        abandoned = self._close_all('abandoned at shutdown')
        if abandoned:
            self._event(f'{_requests(abandoned)} abandoned at shutdown')
        self._plan = Plan.empty(len(self._cfg.joint_names))
        self._segment_tick = None
        self._segment_target = None
        self._waiting_since = None
        prefix = 'fault: ' if outcome == State.FAULT else ''
        can_return = (self._cfg.return_to_initial_position and not self._actuation_failed
                      and self._measurement_ok and self._initial_pose is not None)
        if not can_return:
            skipped = ('' if not self._cfg.return_to_initial_position
                       else '; return to the initial position skipped (unhealthy)')
            self._enter_terminal(outcome, f'{prefix}{reason}{skipped}')
            return
        self._stop_outcome = outcome
        self._stop_reason = reason
        self._return_path = None
        self._set_state(State.STOPPING,
                        f'{prefix}{reason}; returning to the initial position')

    def _return_command(self) -> np.ndarray:
        """Return the next point of the speed-limited path to the initial pose."""
        if self._return_path is None:
            start = self._hold_target().copy()
            delta = self._initial_pose - start
            per_tick = min(self._cfg.return_speed_rad_s * self._cfg.tick_period,
                           self._cfg.max_step_rad)
            distance = float(np.max(np.abs(delta)))
            steps = max(1, math.ceil(distance / per_tick - 1e-9))
            self._return_path = (start, delta, steps)
            self._return_step = 0
            self._event(f'returning to the initial position: {distance:.3f} rad at most, '
                        f'{steps} ticks ({steps * self._cfg.tick_period:.2f} s)')
        start, delta, steps = self._return_path
        self._return_step += 1
        self._counts['return_ticks'] += 1
        if self._return_step >= steps:
            command = self._initial_pose.copy()
            if self._stop_outcome == State.FAULT:
                message = f'fault: {self._stop_reason}; returned to the initial position'
            else:
                message = f'{self._stop_reason}; returned to the initial position'
            self._enter_terminal(self._stop_outcome, message)
        else:
            command = start + delta * (self._return_step / steps)
        self._last_command = command
        return command

    def _enter_terminal(self, state: State, message: str) -> None:
        self._plan = Plan.empty(len(self._cfg.joint_names))
        self._segment_tick = None
        self._segment_target = None
        self._in_flight.clear()
        self._set_state(state, message)

    # ---------------------------------------------------------------- status

    def stats(self) -> ExecutorStats:
        """Return the counters and timings for the status topic."""
        counts = self._counts
        return ExecutorStats(
            state=self._state,
            message=self._message,
            session_id=self._session_id,
            buffered_playback_s=self._buffered_playback(),
            refill_s=self._cfg.refill_seconds,
            effective_refill_s=self._effective_refill(),
            last_turnaround_s=self._turnaround.last_s,
            p50_turnaround_s=self._turnaround.p50_s,
            max_turnaround_s=self._turnaround.recent_max_s,
            recent_seams=tuple(self._seams),
            max_seam=self._max_seam,
            last_drop_reason=self._last_drop_reason,
            requests_in_flight=len(self._in_flight),
            **counts,
        )

    # ---------------------------------------------------------------- helpers

    def _set_state(self, state: State, message: str, log: bool = True) -> None:
        self._state = state
        self._message = message
        if log:
            self._event(f'{state.name}: {message}')

    def _event(self, text: str) -> None:
        self._events.append(text)

    def _take_events(self) -> list:
        events, self._events = self._events, []
        return events

    def _joint_vector(self, what: str, positions) -> np.ndarray:
        vector = np.array(positions, dtype=np.float64).reshape(-1)
        if vector.shape != (len(self._cfg.joint_names),):
            raise ValueError(f'{what} has {vector.size} values but joint_names has '
                             f'{len(self._cfg.joint_names)}')
        return vector

    @staticmethod
    def _make_blend_mask(config: ExecutorConfig):
        if not config.blend_components:
            return None
        names = set(config.blend_components)
        return np.array([name in names for name in config.joint_names])


def _id_list(request_ids) -> str:
    return ', '.join(str(i) for i in request_ids)


def _requests(request_ids) -> str:
    ids = list(request_ids)
    return f'request{"s" if len(ids) > 1 else ""} {_id_list(ids)}'


def _first_non_finite(vector: np.ndarray, names) -> str:
    bad = np.flatnonzero(~np.isfinite(vector))
    return f"non-finite value for joint '{names[bad[0]]}'" if bad.size else ''
