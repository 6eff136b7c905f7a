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

"""The session's lifecycle: admission, start, server loss, failover, a pause, and the end.

:class:`Session` owns the admitted session id, whether its server was lost (and how that
showed), whether motion is paused for text work, and the shutdown in progress
(:class:`~.hold.ReturnHome`). It makes the transitions of the lifecycle over the core's
parts (the timeline, the request table, the hold and the status): IDLE -> READY (admit),
READY -> RUNNING (start), the holds of a failover and a pause (-> WAITING), and the end:
stop or fault -> STOPPING on the way home -> STOPPED or FAULT. The wait that a missing
chunk begins and a chunk ends is the core's (the control tick); when its grace runs out the
core asks this part to fault (:meth:`Session.starved`).

The rules:

- Admission records the session id and the chunk length the server publishes, the horizon
  a request in flight covers (0: learnt from the first merged chunk).
- Start needs a healthy measured pose; it anchors the timeline and keeps the pose to return
  to.
- Server loss (`lose`): no more requests (those in flight are closed as abandoned), the
  buffered actions may drain, then the arm holds until the grace runs out; before start it
  faults at once. `why` heads the status message and the starvation fault.
- Failover (`fail_over`): only while holding after a loss; a new session id of another
  server, nothing of the old plan kept, and a wait starting at `now`, so the first chunk must
  come from a capture taken after it.
- Text work (`pause`, `resume`; the query itself is `query.py`). A pause discards the
  buffered continuation (the plan and the target being interpolated toward) and closes the
  requests in flight, so no step of it is ever dispatched again; while paused every tick
  re-sends the last command sent before the pause (not the driver's applied target, which
  lags a cycle behind: holding it would step the arm back), no request is sent, chunks are
  dropped and the starvation grace does not run (the text work has its own timeout).
  `resume(now)` begins a wait at `now`: motion restarts only from a chunk computed on a
  capture taken after it, and the grace runs from then. Server loss observed while paused
  faults the query's session (the usual way home).
- The end. `stop(now)`, `fault(reason, now)` and every other way to a terminal state
  (`end(state, message, now)`: an actuation failure, the arrival home) close the requests
  still in flight as abandoned at shutdown at `now`. Before motion they end at once; while
  moving they return home when that is configured and safe (`Hold.can_return`), else end at
  once naming why the return was skipped. A fault during the return still ends home, in
  FAULT.
"""

import numpy as np

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.hold import Hold, ReturnHome
from remote_inference_py.executor.requests import Closed, Closure, requests_text, RequestTable
from remote_inference_py.executor.status import Counters, State, Status
from remote_inference_py.executor.timeline import Timeline

MOVING = (State.RUNNING, State.WAITING)


class Session:
    """The session's lifecycle over the core's parts (see the module docstring)."""

    def __init__(self, config: ExecutorConfig, timeline: Timeline, requests: RequestTable,
                 robot: Hold, status: Status, counters: Counters):
        """Create a session not yet admitted, acting on the core's parts."""
        self.config = config
        self._timeline = timeline
        self._requests = requests
        self._robot = robot
        self._status = status
        self._counters = counters
        self.id = ''          # the admitted session ('' before admission)
        self.lost = False     # the server was lost (until a failover)
        self.lost_why = ''
        self.paused = False   # holding for text work (pause .. resume)
        self._return = None   # ReturnHome while STOPPING

    @property
    def state(self) -> State:
        """Return the current state."""
        return self._status.state

    def admit(self, session_id: str, chunk_length: int) -> None:
        """Record the admitted session and its chunk length [steps]: IDLE -> READY."""
        if self.state != State.IDLE:
            raise RuntimeError(f'cannot admit a session in state {self.state.name}')
        if not session_id:
            raise ValueError('session_id must not be empty')
        self.id = session_id
        self._requests.horizon_s = max(0, int(chunk_length)) / self.config.fps
        self._status.set(State.READY, f"admitted session '{session_id}'")

    def start(self, now: float) -> None:
        """Anchor the timeline at `now` and keep the pose to return to: READY -> RUNNING."""
        if self.state != State.READY:
            raise RuntimeError(f'cannot start in state {self.state.name}')
        if self.lost:
            raise RuntimeError('cannot start: the server was lost')
        if not self._robot.can_start:
            raise RuntimeError('cannot start: no healthy measured pose yet')
        self._timeline.start = float(now)
        self._robot.initial_pose = self._robot.measured.copy()
        self._status.set(State.RUNNING, f"started session '{self.id}'")

    def chunk_refusal(self, session_id: str) -> str:
        """Return why a chunk of session `session_id` cannot be used now, or '' if it can."""
        if self.id and session_id != self.id:   # another executor's, on a shared server
            return f"chunk from session '{session_id}' but admitted session is '{self.id}'"
        if self.state not in MOVING:
            return f'executor is {self.state.name}; chunk not used'
        if self.lost:
            return f"server lost: session '{self.id}' does not resume"
        if self.paused:
            return 'paused for a query: the buffered continuation was discarded; chunk not used'
        return ''

    # ---------------------------------------------------------------- server loss

    def lose(self, now: float, why: str) -> None:
        """Observe server loss at `now`: no more requests, the buffer drains, never resumes.

        Before start it faults at once, and so does a loss while paused (the query's answer
        cannot come). `why` (which instance was lost and how it showed) heads the message.
        """
        if self.lost:
            return
        self.lost, self.lost_why = True, why
        lost = self._requests.close_all(Closure(Closed.SERVER_LOST, now))
        if lost:
            self._status.event(f'{requests_text(lost)} abandoned: the server was lost')
        if self.paused:
            self.paused = False
            self.fault('server lost during a query' + (f' ({why})' if why else '')
                       + ': the answer cannot come and this session does not resume', now)
        elif self.state == State.READY:
            self.end(State.FAULT, 'server lost before start' + (f': {why}' if why else ''),
                     now)
        elif self.state in MOVING:
            head = f'{why}; ' if why else ''
            self._status.message = f'server lost: {head}this session does not resume'
            buffered = self._timeline.buffered_playback()
            self._status.event(f'server lost: no more requests; {buffered:.2f} s of buffered '
                               'actions may drain, then hold until the grace expires')

    def fail_over(self, session_id: str, chunk_length: int, now: float) -> None:
        """Go on with a new session of another server after a loss, holding from `now`."""
        if not self.lost or self.state != State.WAITING:
            raise RuntimeError(f'fail over needs a lost server and WAITING, not '
                               f'{self.state.name} (server lost: {self.lost})')
        if not session_id or session_id == self.id:
            raise ValueError(f'fail over needs a new session id, got {session_id!r}')
        old, self.id = self.id, session_id
        self.lost = False
        self._timeline.clear()
        self._requests.horizon_s = max(0, int(chunk_length)) / self.config.fps
        self._robot.waiting_since = float(now)
        self._counters.add('failovers')
        self._status.set(State.WAITING, f"failed over from session '{old}' to '{session_id}';"
                         f' holding, a fresh capture taken after t={now:.3f} is needed')

    def starved(self, now: float) -> None:
        """Fault at `now`: the wait outlasted the grace (the server's loss named if lost)."""
        grace = self.config.starvation_grace_s
        lost = f' ({self.lost_why})' if self.lost_why else ''
        why = (f'the server was lost{lost} and nothing was buffered for {grace:g} s'
               if self.lost else f'no usable chunk arrived within the {grace:g} s grace')
        self.fault(f'starved: {why} (waiting since t={self._robot.waiting_since:.3f})', now)

    # ---------------------------------------------------------------- text work

    def pause(self, now: float, reason: str) -> None:
        """Hold for text work from `now` on, discarding the buffered continuation."""
        if self.state not in MOVING:
            raise RuntimeError(f'cannot pause in state {self.state.name}')
        if self.lost:
            raise RuntimeError('cannot pause: the server was lost')
        if self.paused:
            raise RuntimeError('already paused')
        discarded = self._timeline.buffered_playback()
        self._timeline.clear()
        closed = self._requests.close_all(Closure(Closed.DRAINED, now))
        self._counters.add('drained_requests', len(closed))
        self.paused = True
        self._robot.waiting_since = None
        self._robot.hold_last_command()
        if closed:
            self._status.event(f'{requests_text(closed)} drained: motion paused for {reason}')
        self._status.set(State.WAITING, f'holding for {reason} at t={now:.3f}: the last target '
                         f'sent is held, {discarded:.2f} s of buffered actions discarded')

    def resume(self, now: float, reason: str) -> None:
        """End a pause at `now`: move again only from a capture taken after `now`."""
        if not self.paused:
            return
        self.paused = False
        if self.state not in MOVING:
            return
        self._robot.waiting_since = now
        self._status.set(State.WAITING, f'resuming after {reason}: a fresh capture taken after '
                         f't={now:.3f} is needed')

    # ---------------------------------------------------------------- the end

    def stop(self, now: float) -> None:
        """Stop on user request at `now`: return home if configured, then STOPPED."""
        if self.state in (State.IDLE, State.READY):
            self.end(State.STOPPED, 'stopped before motion', now)
        elif self.state in MOVING:
            self._shut_down(False, 'stop requested', now)

    def fault(self, reason: str, now: float) -> None:
        """Fault at `now` for `reason` (returning home when that is safe)."""
        if self.state == State.STOPPING:
            self._status.message = self._return.fault(reason)
            self._status.event(self._status.message)
        elif self.state in (State.IDLE, State.READY):
            self.end(State.FAULT, reason, now)
        elif self.state in MOVING:
            self._shut_down(True, reason, now)

    def return_command(self, now: float) -> np.ndarray:
        """Return the next point of the speed-limited path home (STOPPING); end on arrival."""
        home = self._return
        command, arrived, event = home.next_command(self._robot, self.config)
        self._status.event(event)
        self._counters.add('return_ticks')
        if arrived:
            self.end(State.FAULT if home.faulted else State.STOPPED, home.message(arrived=True),
                     now)
        self._robot.dispatched(command)
        return command

    def end(self, state: State, message: str, now: float) -> None:
        """Enter the terminal `state` at `now`: nothing planned, nothing in flight."""
        self._abandon(now)
        self.paused = False
        self._timeline.clear()
        self._status.set(state, message)

    def _abandon(self, now: float) -> None:
        """Close the requests still in flight as abandoned at shutdown at `now`."""
        abandoned = self._requests.close_all(Closure(Closed.SHUTDOWN, now))
        if abandoned:
            self._status.event(f'{requests_text(abandoned)} abandoned at shutdown at t={now:.3f}')

    def _shut_down(self, faulted: bool, reason: str, now: float) -> None:
        """Leave RUNNING or WAITING at `now`: return home when possible, else end at once."""
        self.paused = False
        self._abandon(now)
        self._timeline.clear()
        self._robot.waiting_since = None
        outcome = State.FAULT if faulted else State.STOPPED
        if not self._robot.can_return(self.config):
            skipped = ('' if not self.config.return_to_initial_position
                       else '; return to the initial position skipped (unhealthy)')
            self.end(outcome, f'{"fault: " if faulted else ""}{reason}{skipped}', now)
            return
        self._return = ReturnHome(faulted, reason)
        self._status.set(State.STOPPING, self._return.message(arrived=False))
