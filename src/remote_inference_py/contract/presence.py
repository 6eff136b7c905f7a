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
Server presence: the cadence the policy server asserts it on, and the tolerance that gives.

The server publishes a presence sample (remote_inference/ServerPresence, carrying its
instance id) every ``lease / PRESENCE_SAMPLES_PER_LEASE`` seconds from a thread of its own,
whatever the chunk traffic and however busy its serving thread is; the executor counts the
admitted instance lost when nothing of it (presence sample or chunk) came for a whole lease.
A silence (a frozen server, a link down) that begins at any moment, even just before the next
sample is due, began at most one period after the last sample that got through, so

    tolerance = lease - period = lease * (1 - 1 / PRESENCE_SAMPLES_PER_LEASE)

(3.5 s with the default 4 s lease): a silence up to this long never costs a session, a longer
one may. Samples are best effort: one lost sample costs one period of margin, never a session.
"""

PRESENCE_SAMPLES_PER_LEASE = 8
"""Presence samples the server publishes per lease."""


def presence_period(lease_s: float) -> float:
    """Return the time between two presence samples [s] for a lease of ``lease_s``."""
    return lease_s / PRESENCE_SAMPLES_PER_LEASE


def presence_tolerance(lease_s: float) -> float:
    """Return the longest silence that never costs a session [s]: lease minus one period."""
    return lease_s - presence_period(lease_s)
