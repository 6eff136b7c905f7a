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
A policy that continues the committed plan it is given.

The demo loop, with rows 0..n-1 replaced by the plan and the rest of the demo chunk shifted to
start where the plan ends.

For tests of the rtc path through the real nodes (``policy_type: python``,
``checkpoint: plan_echo_policy:make_runtime``): every chunk agrees with the plan exactly, so
the executor's seams at the switch are zero up to unit conversions, whatever the latency.
"""

from remote_inference_py.policy_server.demo_policy import DemoRuntime


class PlanEchoRuntime(DemoRuntime):
    """The demo policy, continuing the committed plan when a request carries one."""

    kind = 'plan_echo'
    supports_prefix = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.prefixes = []

    def infer(self, inputs, tasks, prefixes=None):
        """Return the demo chunks with each row's committed plan spliced in."""
        chunks = super().infer(inputs, tasks).copy()
        for row, prefix in enumerate(prefixes or ()):
            self.prefixes.append(prefix)
            if prefix is None:
                continue
            count = min(len(prefix.positions), chunks.shape[1])
            rest = chunks[row, count:] - chunks[row, count - 1] + prefix.positions[count - 1]
            chunks[row, :count] = prefix.positions[:count]
            chunks[row, count:] = rest
        return chunks


def make_runtime(options=None):
    """Build it as the policy server's ``python`` policy type does."""
    return PlanEchoRuntime() if options is None else PlanEchoRuntime.from_options(options)
