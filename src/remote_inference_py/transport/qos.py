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
QoS profiles by role, used by every node so publishers and subscribers always match.

- images: sensor data (best effort, keep last 1): a late frame is worth nothing.
- joint states: reliable, keep last 5: small, and the executor needs every pose it can get.
- chunks, requests, commands: reliable, keep last 10: never silently lost. Chunks carry no
  liveliness lease: a lease there runs from the last chunk or the last automatic assertion,
  so a freeze that began just before the next request was due cost the session well inside
  the lease. Presence has its own topic instead:
- presence (``policy/presence``): best effort, keep last 1. The server publishes a sample on
  its own cadence (:mod:`..contract.presence`); a late sample is worth nothing, and after a
  link drop the next one gets through at once, with no retransmission to wait for.
- status, capabilities, hardware info, task: reliable + transient local, depth 1: a late
  subscriber (or a bag started later) still gets the current value.
"""

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    LivelinessPolicy,
    QoSProfile,
    ReliabilityPolicy,
)

IMAGES = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)

JOINT_STATES = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=5,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

COMMANDS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=10,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


CHUNKS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=10,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE,
    liveliness=LivelinessPolicy.AUTOMATIC)

PRESENCE = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)

LATCHED = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

# Role names used in the launch table and its tests.
BY_ROLE = {
    'images': IMAGES,
    'joint_states': JOINT_STATES,
    'commands': COMMANDS,
    'chunks': CHUNKS,
    'presence': PRESENCE,
    'latched': LATCHED,
}
