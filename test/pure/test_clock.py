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

"""The offset between two clocks, read on fake clocks that preempt the reader."""

import pytest

from remote_inference_py.common.clock import clock_offset, TIGHT_S

OFFSET = 1000.0   # the other clock is 1000 s ahead of the monotonic one


class Clocks:
    """A monotonic clock that jumps by the given preemptions, one per read of the other."""

    def __init__(self, preemptions):
        self.time, self.preemptions, self.reads = 0.0, list(preemptions), 0

    def monotonic(self):
        self.time += 1e-6
        return self.time

    def other(self):
        self.reads += 1
        now = self.time + OFFSET
        self.time += self.preemptions.pop(0) if self.preemptions else 0.0
        return now


def test_a_preemption_between_the_reads_does_not_skew_the_offset():
    clocks = Clocks([0.075, 0.0])    # 75 ms away right after the first read of the other
    offset = clock_offset(clocks.other, clocks.monotonic)
    assert offset == pytest.approx(OFFSET, abs=2e-6)
    assert clocks.reads == 2         # the second bracket was tight: no third try


def test_the_narrowest_bracket_wins_when_every_try_is_preempted():
    clocks = Clocks([0.075, 0.040, 0.060])
    offset = clock_offset(clocks.other, clocks.monotonic)
    assert offset == pytest.approx(OFFSET - 0.020, abs=2e-6)   # the 40 ms one, halved
    assert clocks.reads == 3


def test_a_bracket_just_inside_tight_ends_the_tries_and_one_just_outside_does_not():
    inside = Clocks([TIGHT_S - 3e-6])   # plus the 2 us of the two monotonic reads
    clock_offset(inside.other, inside.monotonic)
    assert inside.reads == 1
    outside = Clocks([TIGHT_S])
    clock_offset(outside.other, outside.monotonic)
    assert outside.reads == 2
