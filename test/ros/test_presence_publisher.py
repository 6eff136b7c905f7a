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

"""The server's presence samples over DDS, in this process: their cadence while another thread
keeps the interpreter busy, and that closing stops them."""

import os
import threading
import time

from remote_inference.msg import ServerPresence

from remote_inference_py.transport import qos
from remote_inference_py.transport.presence_publisher import PresencePublisher


def test_samples_keep_their_cadence_while_another_thread_holds_the_interpreter(ros):
    node, spinner = ros
    topic = f'presence_cadence_{os.getpid()}'
    got = []
    node.create_subscription(ServerPresence, topic,
                             lambda msg: got.append((time.monotonic(), msg)), qos.PRESENCE)
    presence = PresencePublisher(node, [topic], 'inst1', 0.8)    # a sample every 0.1 s
    presence.start()
    try:
        spinner.until(lambda: len(got) >= 2, 10, 'presence samples')
        stop = threading.Event()

        def busy():   # pure Python: holds the GIL but for the interpreter's switch interval
            while not stop.is_set():
                sum(i * i for i in range(1000))

        worker = threading.Thread(target=busy)
        worker.start()
        try:
            began, before = time.monotonic(), len(got)
            spinner.spin_for(1.5)
            busy_samples = [t for t, _ in got[before:] if t >= began]
        finally:
            stop.set()
            worker.join()
    finally:
        presence.close()
    last = presence.sequence
    assert len(busy_samples) >= 10, f'{len(busy_samples)} samples in 1.5 s (expected ~15)'
    gaps = [b - a for a, b in zip(busy_samples, busy_samples[1:])]
    assert max(gaps) < 0.7, max(gaps)        # the tolerance: lease 0.8 s - period 0.1 s
    msgs = [msg for _, msg in got]
    assert {(m.instance_id, m.lease_s, m.period_s) for m in msgs} == {('inst1', 0.8, 0.1)}
    assert [m.sequence for m in msgs] == sorted({m.sequence for m in msgs})
    spinner.spin_for(0.3)
    assert max(m.sequence for _, m in got) <= last, 'samples published after close()'
