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
- chunks, requests, commands: reliable, keep last 10: never silently lost.
- chunks also carry a liveliness lease (automatic; ``presence_lease_s`` on both sides, default
  :data:`~remote_inference_py.contract.admission.PRESENCE_LEASE_S`): when the server process
  dies, freezes or its link stays down for a lease, the executor's subscription is told, which
  is how the executor observes server loss without any heartbeat code. A subscriber's lease
  must be at least the publisher's for the two to match; tools that only listen use
  :data:`CHUNKS_ANY_LEASE`.
- status, capabilities, hardware info, task: reliable + transient local, depth 1: a late
  subscriber (or a bag started later) still gets the current value.
"""

from rclpy.duration import Duration
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    LivelinessPolicy,
    QoSProfile,
    ReliabilityPolicy,
)

from remote_inference_py.contract.admission import PRESENCE_LEASE_S

IMAGES = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)

JOINT_STATES = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=5,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

COMMANDS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=10,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def chunks(lease_s: float) -> QoSProfile:
    """Return the chunk profile with a liveliness lease of ``lease_s`` seconds."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=10,
        reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE,
        liveliness=LivelinessPolicy.AUTOMATIC,
        liveliness_lease_duration=Duration(nanoseconds=int(lease_s * 1e9)))


CHUNKS = chunks(PRESENCE_LEASE_S)

CHUNKS_ANY_LEASE = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=10,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE,
    liveliness=LivelinessPolicy.AUTOMATIC)

LATCHED = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

# Role names used in the launch table and its tests.
BY_ROLE = {
    'images': IMAGES,
    'joint_states': JOINT_STATES,
    'commands': COMMANDS,
    'chunks': CHUNKS_ANY_LEASE,
    'latched': LATCHED,
}
