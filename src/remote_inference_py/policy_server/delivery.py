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
Answers held back for an injected link latency, released in order (no ROS).

The policy server's ``extra_latency_s`` stands for a link or a remote queue between the
executor and the model: an answer leaves that long after it was computed, and the worker goes
on serving meanwhile, so several requests of one client can be on their way at once (as they
would be over a slow link). :class:`DelayLine` keeps the answers in the order they were put:
each is due ``delay_s`` after it was put, but never before the one put before it (a delay
lowered while answers wait cannot reorder them). The node's delivery thread loops over
:meth:`DelayLine.take` and publishes what it returns.
"""

import collections
import threading
import time
from typing import Any, Callable, List


class DelayLine:
    """A first-in, first-out line of items, each released once its delay has passed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        """Create an empty line on ``clock`` [s]."""
        self._clock = clock
        self._items = collections.deque()   # (due, item), due never decreasing
        self._cond = threading.Condition()
        self._stopped = False

    def __len__(self) -> int:
        """Return how many items wait."""
        with self._cond:
            return len(self._items)

    def put(self, item: Any, delay_s: float) -> float:
        """Queue ``item`` to be released ``delay_s`` from now (after the ones before it)."""
        with self._cond:
            due = self._clock() + max(0.0, delay_s)
            if self._items:
                due = max(due, self._items[-1][0])
            self._items.append((due, item))
            self._cond.notify()
        return due

    def take(self, timeout: float) -> List[Any]:
        """Block until items are due (or ``timeout`` passes, or stop); return them in order."""
        give_up = self._clock() + timeout
        with self._cond:
            while not self._stopped:
                now = self._clock()
                due = []
                while self._items and self._items[0][0] <= now:
                    due.append(self._items.popleft()[1])
                if due or now >= give_up:
                    return due
                wake = min(give_up, self._items[0][0]) if self._items else give_up
                self._cond.wait(max(wake - now, 0.0005))
        return []

    def stop(self) -> List[Any]:
        """Make take return at once from now on; return the items still waiting."""
        with self._cond:
            self._stopped = True
            left = [item for _, item in self._items]
            self._items.clear()
            self._cond.notify_all()
        return left
