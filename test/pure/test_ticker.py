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

"""The executor's control loop thread: deadlines on a grid, stalls, errors, stopping."""

import math
import threading
import time

import pytest

from remote_inference_py.common.ticker import Handoff, Ticker


def run(period, tick, seconds):
    errors = []
    ticker = Ticker(period, tick, errors.append)
    ticker.start()
    time.sleep(seconds)
    ticker.stop()
    return ticker, errors


class SimulatedTime:
    """A clock that only the ticker's sleep and the tick's own work move forward."""

    def __init__(self):
        self.now = 0.0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        assert seconds > 0.0
        self.now += seconds


def simulated(period, work, ticks, oversleep=lambda index: 0.0):
    """Run a Ticker on simulated time for `ticks` ticks; `work(index)` is each tick's cost [s]
    and `oversleep(index)` how much later than asked the wait before it ends [s]."""
    sim, times = SimulatedTime(), []
    sleep = sim.sleep

    def late_sleep(seconds):
        sleep(seconds)
        sim.now += oversleep(len(times))
    ticker = None

    def tick():
        times.append(round(sim.now, 9))
        sim.now += work(len(times) - 1)
        if len(times) == ticks:
            ticker.stop()

    errors = []
    ticker = Ticker(period, tick, errors.append, clock=sim.clock, sleep=late_sleep)
    ticker.start()
    ticker._thread.join(5.0)
    assert not errors and not ticker.running
    return times


def test_ticks_follow_the_period_on_the_grid():
    times = simulated(0.02, lambda index: 0.003, 25)
    assert times == [round(0.02 * k, 9) for k in range(25)]


def test_after_a_stall_one_late_tick_then_back_on_the_grid():
    # The third tick (at 0.04) takes 0.105 s: it misses the deadlines 0.06 .. 0.14.
    times = simulated(0.02, lambda index: 0.105 if index == 2 else 0.0, 8)
    # One tick at once when the stall ends (0.145), then the grid (0.16, 0.18, ...): not a
    # burst replaying the missed ones.
    assert times == [0.0, 0.02, 0.04, 0.145, 0.16, 0.18, 0.2, 0.22]


def grid_indices(times, period):
    """The grid index nearest each tick's time, as the executor core counts a tick."""
    return [math.floor(t / period + 0.5) for t in times]


@pytest.mark.parametrize('late', [0.009, 0.011, 0.026, 0.029, 0.031])
def test_a_tick_that_began_late_is_not_followed_at_once_by_one_for_the_same_point(late):
    # The wait before the third tick (due 0.04) ends `late` s after its deadline: just inside
    # half a period (0.009) the tick stands for 0.04; just past it (0.011) and up to a period
    # and a half (0.029) for 0.06; past that (0.031) for 0.08. Whichever, the next tick is at
    # the grid point after it, and no two ticks stand for one point.
    period = 0.02
    times = simulated(period, lambda index: 0.001, 6,
                      oversleep=lambda index: late if index == 2 else 0.0)
    indices = grid_indices(times, period)
    assert indices == sorted(set(indices)), (times, indices)
    served = 2 + (late > 0.01) + (late > 0.03)
    assert indices[2] == served and times[3] == pytest.approx(period * (served + 1))


def test_a_stall_of_exactly_one_period_does_not_skip():
    times = simulated(0.02, lambda index: 0.02 if index == 1 else 0.0, 5)
    assert times == [0.0, 0.02, 0.04, 0.06, 0.08]   # late by less than a period: the grid


def test_the_real_clock_ticks_until_stopped():
    times = []
    ticker, errors = run(0.02, lambda: times.append(time.monotonic()), 0.3)
    assert not errors and not ticker.running and len(times) >= 2
    assert times == sorted(times)


def test_a_failing_tick_ends_the_loop_and_reports_the_error():
    calls = []

    def tick():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError('broken tick')

    ticker, errors = run(0.01, tick, 0.2)
    assert len(calls) == 2
    assert [str(e) for e in errors] == ['broken tick']


def test_stop_waits_for_the_tick_in_progress_and_no_tick_follows():
    inside = threading.Event()
    calls = []

    def tick():
        calls.append(time.monotonic())
        inside.set()
        time.sleep(0.1)

    ticker = Ticker(0.01, tick, print)
    ticker.start()
    assert inside.wait(2.0)
    ticker.stop()
    stopped = time.monotonic()
    assert not ticker.running and time.monotonic() - calls[-1] >= 0.09
    time.sleep(0.05)
    assert all(t < stopped for t in calls)


def test_the_period_must_be_positive():
    with pytest.raises(ValueError, match='must be positive, got 0.0'):
        Ticker(0.0, lambda: None, print)


def test_a_tick_takes_only_the_events_handed_at_or_before_its_time():
    # A tick reads its clock, then takes its events. One handed in between (a start asked
    # 30 ms into a tick on a loaded host) waits for the next tick, so the motion it starts is
    # not stamped before it was asked. Edges: handed at the tick's time (taken), a nanosecond
    # after it (not).
    now = [10.0]
    handoff = Handoff(lambda: now[0])
    handoff.put('before')
    tick = now[0] = 10.033                   # the tick reads its clock
    handoff.put('at the tick')
    now[0] = tick + 1e-9
    handoff.put('just after')
    now[0] = tick + 0.030
    handoff.put('during')
    assert handoff.take(tick) == ['before', 'at the tick']
    assert handoff.take(tick) == []          # none handed later, however often asked
    assert handoff.take(tick + 0.033) == ['just after', 'during']
    assert handoff.take(tick + 0.066) == []
