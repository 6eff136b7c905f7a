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
Answers held back for an injected link latency, released in order (no ROS, no thread).

The policy server's ``extra_latency_s`` stands for a link or a remote queue between the
executor and the model: an answer leaves that long after it was computed, and serving goes
on meanwhile, so several requests of one client can be on their way at once (as they would
be over a slow link). :class:`DelayLine` keeps the answers in the order they were put: each
is due ``delay_s`` after it was put, but never before the one put before it (a delay lowered
while answers wait cannot reorder them). It never waits and holds no lock: the serving loop
(:class:`.scheduler.Scheduler`) calls it under its lock, releases what :meth:`DelayLine.
take_due` returns on each turn and turns again at :meth:`DelayLine.next_due`.
"""

import collections
import time
from typing import Any, Callable, List, Optional


class DelayLine:
    """A first-in, first-out line of items, each released once its delay has passed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, slack_s: float = 0.0):
        """Create an empty line on ``clock`` [s].

        An item is due once ``clock()`` is within ``slack_s`` of its time: 0 for a real
        clock; a simulated one that adds up periods passes its float noise (a due time and a
        tick meant to be the same instant may differ by 1e-16 s).
        """
        self._clock = clock
        self._slack_s = slack_s
        self._items = collections.deque()   # (due, item), due never decreasing

    def __len__(self) -> int:
        """Return how many items wait."""
        return len(self._items)

    def put(self, item: Any, delay_s: float) -> float:
        """Queue ``item`` to be released ``delay_s`` from now (after the ones before it)."""
        due = self._clock() + max(0.0, delay_s)
        if self._items:
            due = max(due, self._items[-1][0])
        self._items.append((due, item))
        return due

    def next_due(self) -> Optional[float]:
        """Return when the first item is due (``clock`` time), or None when none waits."""
        return self._items[0][0] if self._items else None

    def take_due(self) -> List[Any]:
        """Remove and return the items due now, in order (never waits)."""
        now = self._clock() + self._slack_s
        due = []
        while self._items and self._items[0][0] <= now:
            due.append(self._items.popleft()[1])
        return due

    def clear(self) -> List[Any]:
        """Remove and return every item still waiting."""
        left = [item for _, item in self._items]
        self._items.clear()
        return left
