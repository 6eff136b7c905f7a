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

"""What the executor reports: its state and message, the events to log, and the counters.

:class:`State` lists the states; :class:`Status` owns the current one, its message and the
events not yet taken (the core and the session decide the transitions). :class:`Counters`
owns what the status topic and the activity summary count (:class:`ExecutorStats`); the core
adds to it and reads the rest (buffered playback, turnarounds) from its parts.
"""

from collections import deque
from dataclasses import dataclass
import enum

RECENT_SEAMS = 50

COUNTERS = ('ticks', 'dispatched_ticks', 'held_ticks', 'starved_ticks', 'skipped_ticks',
            'return_ticks', 'requests', 'request_timeouts', 'request_failures',
            'request_retries', 'drained_requests', 'chunks_accepted', 'chunks_dropped',
            'trimmed_steps', 'failovers')


@dataclass(frozen=True)
class ExecutorStats:
    """Counters and timings for the status topic and the activity summary."""

    state: object
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
    request_retries: int
    drained_requests: int
    chunks_accepted: int
    chunks_dropped: int
    trimmed_steps: int
    failovers: int   # new sessions with another server after a loss (failover)
    last_drop_reason: str
    recent_seams: tuple
    max_seam: float
    requests_in_flight: int = 0


class State(enum.IntEnum):
    """Executor state; values equal the ExecutorStatus.msg STATE_* constants."""

    IDLE = 0
    READY = 1
    RUNNING = 2
    WAITING = 3
    STOPPING = 4
    STOPPED = 5
    FAULT = 6


class Counters:
    """The counts of `COUNTERS`, the recent seams and the last reason a chunk was dropped."""

    def __init__(self):
        """Start every count at zero."""
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.last_drop_reason = ''
        self.seams = deque(maxlen=RECENT_SEAMS)
        self.max_seam = 0.0

    def add(self, name: str, count: int = 1) -> None:
        """Add `count` to the counter `name` (KeyError for an unknown one)."""
        self.counts[name] += count

    def accepted(self, trimmed_steps: int, seam: float) -> None:
        """Count an accepted chunk, its trimmed steps and its seam [rad]."""
        self.counts['chunks_accepted'] += 1
        self.counts['trimmed_steps'] += trimmed_steps
        self.seams.append(seam)
        self.max_seam = max(self.max_seam, seam)

    def dropped(self, reason: str) -> None:
        """Count a dropped chunk and keep its reason."""
        self.counts['chunks_dropped'] += 1
        self.last_drop_reason = reason

    def snapshot(self, **rest) -> ExecutorStats:
        """Return the stats: these counts plus `rest` (state, message, timings...)."""
        return ExecutorStats(recent_seams=tuple(self.seams), max_seam=self.max_seam,
                             last_drop_reason=self.last_drop_reason, **self.counts, **rest)


class Status:
    """The current state, its message, and the events to log since they were last taken."""

    def __init__(self, state):
        """Start in `state` with no message and no events."""
        self.state = state
        self.message = ''
        self._events = []

    def set(self, state, message: str, log: bool = True) -> None:
        """Enter `state` with `message`; log it as an event 'STATE: message' unless not `log`."""
        self.state = state
        self.message = message
        if log:
            self.event(f'{state.name}: {message}')

    def event(self, text: str) -> None:
        """Keep an event to log ('' is ignored)."""
        if text:
            self._events.append(text)

    def take_events(self) -> list:
        """Return the events kept since the last call, oldest first, and forget them."""
        events, self._events = self._events, []
        return events
