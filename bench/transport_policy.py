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
A zero-cost policy for the transport benchmark, loaded by the real ``policy_server`` node.

Start the server with ``policy_type: python`` and ``checkpoint:
transport_policy:zero_cost_policy`` (with ``bench/`` on ``PYTHONPATH``). The policy declares
what the benchmark's client publishes (``observation.state``: six SO-101 joints in SI radians;
``observation.images.front``: 480x640 rgb8, taken as it arrives: ``model_dtype: uint8``,
``layout: hwc``, no resize, like the other transports' servers, which only unpack the frame)
and returns one constant 50 x 6 chunk without computing anything, so a round trip measures the
message path: transport, the server's observation handling and its worker thread.
"""

import numpy as np

from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import PolicyRuntime
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

SEMANTICS = 'si-radians-v1'
FPS = 30.0
CHUNK_LENGTH = 50
IMAGE_SHAPE = (480, 640, 3)
NAMES = tuple(f'{joint}.pos' for joint in SO101_JOINT_NAMES)


class ZeroCostRuntime(PolicyRuntime):
    """Return the same chunk for every request (no computation)."""

    kind = 'python'

    def __init__(self):
        """Declare one state and one camera feature; prepare the constant chunk."""
        spec = spec_from_dict({
            'policy': 'zero-cost', 'semantics': SEMANTICS, 'fps': FPS,
            'chunk_length': CHUNK_LENGTH, 'max_batch_size': 1,
            'action': {'names': list(NAMES)},
            'features': [
                {'name': 'observation.state', 'kind': 'state', 'shape': [len(NAMES)],
                 'dtype': 'float32', 'names': list(NAMES)},
                {'name': 'observation.images.front', 'kind': 'rgb', 'shape': list(IMAGE_SHAPE),
                 'dtype': 'uint8', 'layout': 'hwc', 'model_dtype': 'uint8'},
            ]}, 'zero-cost benchmark policy')
        super().__init__(spec, 'cpu', 'zero-cost benchmark policy')
        steps = np.linspace(0.0, 0.1, CHUNK_LENGTH, dtype=np.float32)[:, None]
        self.chunk = (steps + np.zeros(len(NAMES), dtype=np.float32))[None]

    def infer(self, inputs, tasks):
        """Return the constant chunk once per batch row."""
        return np.repeat(self.chunk, len(tasks), axis=0)


def zero_cost_policy(options):
    """Build the runtime (the ``python`` policy type calls ``factory(options)``)."""
    return ZeroCostRuntime()
