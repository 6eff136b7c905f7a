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
The policy server's presence samples: a thread of their own, on their own cadence.

:class:`PresencePublisher` publishes a ``remote_inference/ServerPresence`` (the instance id,
the lease, the period and a sequence number) on each of its topics every ``lease / 8``
(:func:`~..contract.presence.presence_period`), on absolute deadlines, from a plain thread:
not an rclpy timer, so neither the node's executor (a callback serving a request inline) nor
chunk traffic can delay it, and a busy serving thread only competes for the GIL, which the
forward pass releases. After the process was frozen (SIGSTOP) it publishes the moment it runs
again and then keeps to its deadlines (missed ones are skipped, not caught up).
"""

import threading
import time
from typing import Sequence

from remote_inference.msg import ServerPresence

from remote_inference_py.contract.presence import presence_period
from remote_inference_py.transport import qos


class PresencePublisher:
    """Publish presence samples of ``instance_id`` on ``topics`` until :meth:`close`."""

    def __init__(self, node, topics: Sequence[str], instance_id: str, lease_s: float):
        """Create the publishers (``qos.PRESENCE``); :meth:`start` starts the thread."""
        self.instance_id = instance_id
        self.lease_s = float(lease_s)
        self.period_s = presence_period(self.lease_s)
        self.sequence = 0
        self._clock = node.get_clock()
        self._publishers = [node.create_publisher(ServerPresence, topic, qos.PRESENCE)
                            for topic in topics]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='presence', daemon=True)

    def start(self) -> None:
        """Start publishing (the first sample at once)."""
        self._thread.start()

    def publish(self) -> None:
        """Publish one sample on every topic."""
        self.sequence += 1
        msg = ServerPresence(instance_id=self.instance_id, lease_s=self.lease_s,
                             period_s=self.period_s, sequence=self.sequence)
        msg.stamp = self._clock.now().to_msg()
        for publisher in self._publishers:
            publisher.publish(msg)

    def _run(self) -> None:
        start = time.monotonic()
        deadline = start
        while not self._stop.is_set():
            try:
                self.publish()
            except Exception:  # noqa: B902 - the context is shutting down; nothing to say
                pass
            now = time.monotonic()
            deadline += self.period_s
            if deadline <= now:   # frozen or starved: next deadline after now, none caught up
                deadline = start + (int((now - start) / self.period_s) + 1) * self.period_s
            if self._stop.wait(deadline - now):
                return

    def close(self) -> None:
        """Stop the thread (returns within a moment) and destroy nothing: the node does."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)
