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

"""A service call asked again when its reply does not come: a reply can be lost.

A request sent right after discovery can be lost while the server's reply writer is not
matched yet, and on a loaded host Fast DDS gives up sending a reply (the server logs
``failed to send response (timeout)``): a client that waits for that one reply waits forever.
The dataset recorder did, at the start of a loaded test run: the policy server had answered
its ``policy/get_capabilities``, the reply never came, and the recorder waited for the
capabilities until the demo gave up. :class:`RetriedCall` drops a call unanswered after
:data:`RETRY_S` (the executor's admission handshake keeps the same rule) and asks again.
Only for a call that is safe to repeat: a question (capabilities), or ``executor/start``, which
the executor answers again without starting twice; never for one that must not run twice.
"""

import time

RETRY_S = 2.0
"""Ask again when a request got no reply within this long [s]."""


class RetriedCall:
    """Poll a service call; ask again after `retry_s` without a reply (see the module)."""

    def __init__(self, client, make_request, retry_s: float = RETRY_S, clock=time.monotonic):
        """Ask `client` (an rclpy Client) for `make_request()`, again every `retry_s`."""
        if not retry_s > 0:
            raise ValueError(f'retry_s must be > 0, got {retry_s}')
        self.client, self.make_request, self.retry_s, self.clock = (
            client, make_request, retry_s, clock)
        self.future = None
        self.sent = None
        self.asked = 0
        self.reply = None
        """The last reply that came (None before the first)."""

    def poll(self):
        """Return the reply once it has come (None until then); send or resend as due."""
        if self.future is not None and self.future.done():
            self.reply, self.future = self.future.result(), None
            return self.reply
        now = self.clock()
        if self.future is not None and now - self.sent >= self.retry_s:
            self.client.remove_pending_request(self.future)   # its reply is not awaited
            self.future = None
        if self.future is None and self.client.service_is_ready():
            self.future, self.sent = self.client.call_async(self.make_request()), now
            self.asked += 1
        return None

    def answered(self) -> bool:
        """Poll until a reply has come (it is in :attr:`reply`); from then on send nothing."""
        return self.reply is not None or self.poll() is not None
