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

"""When to ask for the next chunk: turnaround estimate, effective refill, requests in flight.

    effective_refill = max(refill_seconds, recent_max_turnaround + 1 / fps)

With one request in flight, the next one goes out when the buffered playback falls to the
effective refill and nothing is in flight. With up to k in flight (docs/design.md, section 4),
each request still unanswered counts as the chunk it will bring: that chunk is placed from
its capture, which is no older than the request's earliest capture time, so it covers the
plan at least until that time plus the chunk horizon H (chunk_length / fps). The plan is
*covered* until the latest of the buffered plan's end and those ends, and another request
goes out when

- fewer than k are in flight,
- the newest request in flight was sent at least `request_spacing` ago, and
- the coverage left from now has fallen to the effective refill, that is: a chunk asked for
  now, landing one turnaround later, would find at most one action period of plan left.

Counting from the earliest capture rather than the send time costs one action period of
spacing and keeps that one period of margin real: a request is sent one action period after
its earliest capture, and counted from its send time the chunk would land exactly when the
covered plan runs out. In steady state the coverage rule alone staggers the requests by
H - effective_refill - 1 / fps, so k requests in flight hide a turnaround T while
T <= k (H - 2 / fps) / (k + 1). The
spacing only stops bursts when coverage is short for several ticks at once (after a recovery,
or a turnaround that grew beyond what k requests can hide): it is the recent maximum
turnaround divided by k, so k requests spread evenly over one turnaround and their chunks land
evenly, and at least one action period, so no two requests ask for the same capture. It never
binds while k requests can keep up. With k = 1 both extra conditions are moot (nothing may be
in flight), and the rule is the one-request rule.

Turnaround is request sent -> chunk received on the executor's clock. The first answered
request supplies the initial estimate (it often includes a cold start). Once requests sent
while the robot was moving ("steady state") have been answered, the estimate is the maximum
over the last `window` of those samples only.
"""

from collections import deque
import statistics

STEADY_WINDOW = 100
# Comparisons of playback against the threshold tolerate float rounding of tick multiples.
_EPSILON_S = 1e-9


def effective_refill(refill_seconds: float, recent_max_turnaround_s: float, fps: float) -> float:
    """Return the playback [s] at or below which the next request is sent."""
    return max(refill_seconds, recent_max_turnaround_s + 1.0 / fps)


def refill_due(buffered_playback_s: float, effective_refill_s: float) -> bool:
    """Return True when the buffered playback has fallen to the effective refill."""
    return buffered_playback_s <= effective_refill_s + _EPSILON_S


def coverage_s(buffered_playback_s: float, in_flight_covers_s) -> float:
    """Return how long [s] from now the plan is covered once the requests in flight land.

    `in_flight_covers_s` says, per request in flight, how long from now its chunk will cover
    the plan at least (its earliest capture time + the chunk horizon - now).
    """
    return max([buffered_playback_s, *in_flight_covers_s])


def request_spacing(recent_max_turnaround_s: float, max_in_flight: int, fps: float) -> float:
    """Return the least time [s] between two requests in flight at once."""
    return max(1.0 / fps, recent_max_turnaround_s / max_in_flight)


def another_request_due(buffered_playback_s: float, in_flight_covers_s,
                        since_newest_request_s, effective_refill_s: float, max_in_flight: int,
                        spacing_s: float) -> bool:
    """Return True when one more request should go out now (see the module docstring).

    `in_flight_covers_s` is as for :func:`coverage_s`; `since_newest_request_s` is the time
    since the newest request in flight was sent (ignored when none is in flight).
    """
    covers = list(in_flight_covers_s)
    if len(covers) >= max_in_flight:
        return False
    if covers and since_newest_request_s < spacing_s - _EPSILON_S:
        return False
    return refill_due(coverage_s(buffered_playback_s, covers), effective_refill_s)


class TurnaroundEstimator:
    """Keep recent turnaround samples and report last, median and recent maximum."""

    def __init__(self, window: int = STEADY_WINDOW):
        """Create an empty estimator that keeps up to `window` steady-state samples."""
        if window < 1:
            raise ValueError(f'window must be >= 1, got {window}')
        self._initial = None
        self._steady = deque(maxlen=window)
        self._last = None
        self._recent_max = 0.0

    def add(self, turnaround_s: float, steady: bool) -> None:
        """Record one sample; `steady` is False for startup and recovery requests."""
        if not turnaround_s >= 0.0:
            raise ValueError(f'turnaround_s must be >= 0, got {turnaround_s}')
        self._last = turnaround_s
        if self._initial is None:
            self._initial = turnaround_s
        if steady:
            self._steady.append(turnaround_s)
        self._recent_max = max(self._samples(), default=0.0)

    @property
    def sample_count(self) -> int:
        """Return how many samples the estimate currently uses."""
        return len(self._samples())

    @property
    def last_s(self) -> float:
        """Return the latest sample [s], 0 before any."""
        return self._last if self._last is not None else 0.0

    @property
    def recent_max_s(self) -> float:
        """Return the maximum over the samples in use [s], 0 before any."""
        return self._recent_max

    @property
    def p50_s(self) -> float:
        """Return the median over the samples in use [s], 0 before any."""
        samples = self._samples()
        return statistics.median(samples) if samples else 0.0

    def _samples(self):
        if self._steady:
            return self._steady
        return (self._initial,) if self._initial is not None else ()
