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

"""When to ask for the next chunk: turnaround estimate and effective refill.

    effective_refill = max(refill_seconds, recent_max_turnaround + 1 / fps)

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
