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
How tests judge timing on a shared host: by the rules the executor declares, on its own stamps.

- **The control grid.** The ticker keeps its grid: every tick is handled, or, when the host
  stalled the tick thread past it, counted as skipped. So ticks + skipped ticks advance with
  the executor's own status stamps, however loaded the host (:func:`grid_error_ticks`); a
  stall lowers the command rate, never the grid.
- **The refill rule** (docs/design.md). A refill goes out once the plan left is at most the
  refill and its chunk plays from its capture (up to one action period before sending), so it
  lands in time unless its turnaround exceeds the refill less two action periods. A stall of
  the executor itself eats into the same margin: the clock plays the plan on while it cannot
  tick, and it counts those ticks as skipped (a loaded host paused every process for about a
  second at once). A starved or held tick is a failure unless the executor's own turnarounds
  and skipped ticks show that much: a stalled host, which the rule explains, not a bug.
"""

from remote_inference_py.transport.values import stamp_ns

GRID_SLACK_TICKS = 1.5
"""A tick's index is at most half a tick before its time or one after it (two ticks late by
more than half a period each, the second moved on): 1.5 ticks between two statuses."""


def seconds(stamp):
    """Return a builtin_interfaces Time as seconds."""
    return stamp_ns(stamp) * 1e-9


def grid_error_ticks(first, last, tick_rate):
    """Return how many ticks the count between two ExecutorStatus messages is off their stamps.

    The executor counts a tick as handled or skipped at the grid index nearest its time
    (``executor/timeline.py``; a tick that finds its index taken moves on to the next), and
    stamps each status with the time of the tick it reports on, so the count (ticks + skipped)
    matches the stamps on any host within :data:`GRID_SLACK_TICKS`.
    """
    span = seconds(last.header.stamp) - seconds(first.header.stamp)
    counted = last.ticks - first.ticks + last.skipped_ticks - first.skipped_ticks
    return counted - span * tick_rate


def refill_rule_explains(worst_turnaround_s, refill_s, fps, skipped_ticks=0):
    """Return True when a turnaround plus the executor's stall explain a hold.

    Explained: the worst turnaround plus the ticks the executor skipped (its own stall) exceed
    the refill less two action periods.
    """
    return worst_turnaround_s + skipped_ticks / fps > refill_s - 2.0 / fps


def starvation_explained(statuses, fps=30.0):
    """Return True when ExecutorStatus messages show no starved tick or the refill rule's.

    ``statuses`` are the executor's over the window judged, in order (the first one from
    before it). Starved ticks are explained when the worst turnaround in the window plus the
    ticks the executor skipped in it exceed the smallest refill less two action periods.
    """
    first, last = statuses[0], statuses[-1]
    return last.starved_ticks == first.starved_ticks or refill_rule_explains(
        max(s.max_turnaround_s for s in statuses), min(s.refill_s for s in statuses), fps,
        last.skipped_ticks - first.skipped_ticks)


def late_answer_s(requests, answers, statuses, fps, end_ns):
    """Return the seconds by which answers came later than the refill rule lands them in time.

    ``requests``, ``answers`` and ``statuses`` are a bag's ``/policy/request``,
    ``/policy/chunk`` and ``/executor/status`` (receive ns, message) pairs. A request counts
    from its first send to its first chunk or error answer, or else to ``end_ns`` (the stop).
    An answer later than the effective refill the executor had when it sent the request
    (``effective_refill_s``: it grows with the recent turnarounds) less two action periods
    can starve the arm for that excess, and only that. The first request is left out: the
    wait for its chunk is held, not starved.
    """
    sent, answered = {}, {}
    for _, m in requests:
        sent.setdefault(m.request_id, stamp_ns(m.header.stamp))
    for received, m in answers:
        answered.setdefault(m.request_id, received)
    refills = sorted((stamp_ns(m.header.stamp), m.effective_refill_s or m.refill_s)
                     for _, m in statuses)
    late = 0.0
    for request_id, ns in sorted(sent.items())[1:]:
        refill = next((r for stamp, r in reversed(refills) if stamp <= ns), refills[0][1])
        late += max(0.0, (answered.get(request_id, end_ns) - ns) * 1e-9
                    - (refill - 2.0 / fps))
    return late
