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

"""Crossing between two clocks: the offset of a clock from the monotonic one, read safely."""

import time
from typing import Callable

TIGHT_S = 1e-4   # a bracket this narrow cannot hide a preemption worth a stamp
TRIES = 3


def clock_offset(other_now: Callable[[], float],
                 monotonic: Callable[[], float] = time.monotonic,
                 tries: int = TRIES) -> float:
    """Return ``other_now() - monotonic()`` [s], however the caller is preempted.

    Each try reads the other clock between two monotonic reads and takes the bracket's middle;
    the narrowest bracket of up to ``tries`` wins (the first under :data:`TIGHT_S` at once). Two
    reads back to back shifted the offset by however long the thread was preempted between
    them: on a loaded host, a status stamped 75 ms late, two action steps.
    """
    best_width, best = float('inf'), 0.0
    for _ in range(tries):
        before = monotonic()
        other = other_now()
        after = monotonic()
        if after - before < best_width:
            best_width, best = after - before, other - (before + after) / 2
        if best_width < TIGHT_S:
            break
    return best
