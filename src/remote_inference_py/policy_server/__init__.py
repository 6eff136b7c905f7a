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

Pure (no ROS), from messages to answers:

- :mod:`.config`: the settings as one frozen, validated dataclass, one declaration per
  parameter.
- :mod:`.topics`: which topic feeds each observation feature.
- :mod:`.observation`: each robot's buffers of recent samples per stream, and the observation
  a request selects from them by name.
- :mod:`.images`: camera images to model inputs (checked from metadata on arrival, decoded and
  converted when used).
- :mod:`.core`: requests in, chunks out; single-threaded, composed of :mod:`.clients` (the
  table of admitted sessions), :mod:`.queues` (each session's queue of requests, and those
  answered without a forward pass), :mod:`.forward` (one batched forward pass over ready
  requests, the committed plan handed to a runtime that asks for it) and :mod:`.timings`
  (per-request timings, outcome counters).
- :mod:`.scheduler`: the one serving loop, turned by its thread, by the inline fast path, or
  on a manual clock (tests, simulated time): the lock around the core, held-back answers.
- :mod:`.delivery`: answers held back for an injected link latency, released in order by the
  serving loop.
- :mod:`.text`: the text work: the executor's queries answered on a thread of their own, one
  at a time, while chunks go on being served.

Pure, the policies:

- :mod:`.manifest`: what a model consumes and produces (the manifest beside a model file).
- :mod:`.runtimes`: the runtime interface, and the start-up checks and warm-up every runtime
  passes.
- :mod:`.loading`: the runtime registry: which runtime serves a checkpoint, and the whole
  start-up.
- :mod:`.demo_policy`: the built-in demo policy (plausible SO-101 motion, no files, no torch).
- :mod:`.torch_runtime`: TorchScript (``.pt``, ``.ts``) and ``torch.export`` (``.pt2``) models
  with their manifest.
- :mod:`.flow_runtime`: a flow-matching ``.pt2`` velocity field, Euler-sampled and steered by
  the committed plan; :mod:`.sampler` is its sampler's settings and arithmetic (no torch),
  :mod:`.flow_head` the shipped policy's head in numpy with its hand-written
  vector-Jacobian product.
- :mod:`.lerobot_runtime`: LeRobot checkpoints (ACT, diffusion, SmolVLA) through ``lerobot``,
  imported only through :mod:`.lerobot_import` (the version gate); a folder saved by LeRobot
  0.5 or 0.6 is read through a mapped copy (:mod:`.lerobot_folder`, which also checks the
  weights, over the pure mapping of :mod:`.lerobot_compat`).
- :mod:`.vlm_text`: text generation with a transformers vision-language model folder (the
  ``text_model``) for the executor's queries.
- :mod:`.export`: policies saved as ``.pt2`` or TorchScript with their manifest, and
  ``export_lerobot`` (a LeRobot ACT checkpoint to ``.pt2``).

ROS: :mod:`.node` loads the policy at start-up and maps parameters, topics and services onto
the scheduler and the text worker.
"""
