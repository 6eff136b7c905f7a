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
The policy server room: turns observations into chunks of actions with a policy.

Pure: :mod:`.manifest` (what a model declares), :mod:`.observation` and :mod:`.images` (inputs
from messages), :mod:`.runtimes` (the runtime interface and warm-up), :mod:`.loading` (which
runtime serves a checkpoint, and the whole start-up), :mod:`.config` (frozen settings),
:mod:`.topics` (which topic feeds each feature), :mod:`.demo_policy`, :mod:`.torch_runtime` and
:mod:`.lerobot_runtime` (the runtimes; LeRobot imported through :mod:`.lerobot_import`, a
folder of a newer LeRobot mapped by :mod:`.lerobot_folder`), :mod:`.export` (checkpoints to
``.pt2``),
:mod:`.sessions` (admitted clients), :mod:`.timings` (timings and outcome accounting),
:mod:`.queues` (each session's queue of requests), :mod:`.forward` (the batched forward pass),
:mod:`.core` (requests in, chunks out; single-threaded, composed of the four before),
:mod:`.scheduler` (the one serving path: the lock around the core, the inference and delivery
threads, the inline fast path), :mod:`.delivery` (answers held back).
ROS: :mod:`.node`.
"""
