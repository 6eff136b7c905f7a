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
A control loop on its own thread with absolute deadlines, as ros2_control runs its update loop.

The executor node's control tick used to be an rclpy timer, which ties its precision to the
rclpy executor the node spins. Measured side by side at 100 Hz on our 2-core machines: the
EventsExecutor's timers fired with a period p99 0.8-1.5 ms off when idle (the
SingleThreadedExecutor's: 0.2-0.9 ms), while the SingleThreadedExecutor's Python wait-set loop
added ~0.3 ms to every received chunk at 30 Hz. A :class:`Ticker` sleeps until each deadline
on its own thread (``time.sleep`` is an absolute ``clock_nanosleep`` on CLOCK_MONOTONIC) and
calls the tick there, so the node can spin the EventsExecutor for its messages. Deadlines stay
on the grid ``start + k * period``; after a stall the loop ticks once at once and skips the
other deadlines it missed instead of running them back to back (as rclpy's timers do; the
executor core counts the skipped ticks from its time stamps). A tick stands for the grid point
nearest to when it began, as the core counts it, and the next deadline is the point after that
one: a tick that began late (past half a period) is not followed at once by a second tick for
the same point. Before, it was, the core moved that second tick on to the next index, and the
executor stayed a tick ahead of its grid from then on (a loaded fleet test saw two such ticks).
"""

import math
import queue
import threading
import time
from typing import Callable


class Ticker:
    """Call ``tick()`` every ``period_s`` seconds on a thread of its own until stopped."""

    def __init__(self, period_s: float, tick: Callable[[], None],
                 on_error: Callable[[BaseException], None], name: str = 'ticker',
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        """Tick every `period_s` on `clock`, waiting with `sleep` (tests inject both)."""
        if not period_s > 0.0:
            raise ValueError(f'a ticker period must be positive, got {period_s}')
        self.period_s = period_s
        self._tick, self._on_error = tick, on_error
        self._clock, self._sleep = clock, sleep
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start ticking (the first tick is due at once)."""
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop after the tick in progress, if any; wait up to ``timeout`` s for it."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether the loop is still running."""
        return self._thread.is_alive()

    def _run(self) -> None:
        period = self.period_s
        origin = deadline = self._clock()
        while not self._stop.is_set():
            delay = deadline - self._clock()
            if delay > 0.0:
                self._sleep(delay)
                if self._stop.is_set():
                    return
            began = self._clock()
            try:
                self._tick()
            except BaseException as error:  # noqa: B902 - handed to the owner, loop ends
                self._on_error(error)
                return
            # The next deadline is the one after the grid point this tick stood for (the
            # nearest to when it began): at once if that is past, never one a tick served.
            served = math.floor((began - origin) / period + 0.5)
            deadline = origin + (served + 1) * period


class Handoff:
    """Events handed to a ticking owner by other threads, each taken by the first tick after it.

    ``put`` stamps an event with the clock as it is handed over. ``take(now)`` returns, in
    order, the events handed at or before ``now``, the time of the tick taking them; one handed
    later (while that tick ran, after it read its clock) waits for the next tick. So nothing a
    tick decides is stamped before an event it acted on: a start handed 30 ms into a tick that
    read its clock first used to start the motion at the tick's time, before the start was
    asked (on a loaded host, before the camera frame that the asker had waited for).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        """Stamp events with ``clock`` (the owner's tick clock)."""
        self._clock = clock
        self._queue = queue.SimpleQueue()   # (handed at, event), in the order handed
        self._next = None                   # the first event handed after the last take

    def put(self, event) -> None:
        """Hand ``event`` over (any thread)."""
        self._queue.put((self._clock(), event))

    def take(self, now: float) -> list:
        """Return the events handed at or before ``now``, in order (the owner's thread)."""
        taken = []
        while True:
            if self._next is None:
                try:
                    self._next = self._queue.get_nowait()
                except queue.Empty:
                    return taken
            if self._next[0] > now:
                return taken
            taken.append(self._next[1])
            self._next = None
