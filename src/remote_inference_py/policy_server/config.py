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
The policy server's settings as one frozen, validated dataclass (no ROS).

Each field of :class:`ServerConfig` is one parameter of the node, declared once here with
:func:`~remote_inference_py.common.settings.setting` (type, default, unit, range or choices,
description, live or not), but for ``deployment`` and ``presence_lease_s``, which the executor
has too: those are declared once in ``contract/settings.py`` and embedded by
:func:`~remote_inference_py.common.settings.shared`. The node's parameters and
docs/parameters.md's table come from it. The core takes the config itself as its settings;
what the runtime registry needs to load the policy comes from
:meth:`.runtimes.RuntimeOptions.from_config`. Nothing repeats a declaration:
``RuntimeOptions`` takes its defaults from these fields and checks its values by them, and the
flow sampler reads the ranges of its manifest keys from the four sampler parameters
(``flow_steps``, ``rtc_execution_horizon``, ``rtc_prefix_schedule``,
``rtc_max_guidance_weight``). The live settings (:data:`LIVE_FIELDS`: the two timeouts and
the three injected delays) may change while serving; everything else is fixed at start-up.
"""

import dataclasses
import re
from typing import Dict, Tuple

from remote_inference_py.common.settings import check_settings, live_names, setting, shared
from remote_inference_py.contract.check import MAX_REQUESTS_IN_FLIGHT
from remote_inference_py.contract.settings import ContractSettings, MAX_ACTION_RATE_HZ
from remote_inference_py.policy_server.manifest import ENCODING_CONVERSIONS
from remote_inference_py.policy_server.topics import IMAGE_TRANSPORTS, parse_feature_topics

DTYPES = ('float32', 'bfloat16', 'float16')
"""The choices of the ``dtype`` setting (checked against the policy and device at load)."""
DEVICE_PATTERN = re.compile(r'^(auto|cpu|mps|cuda(:\d+)?)$')
"""What the ``device`` setting may say."""

POLICY_TYPES = ('auto', 'demo', 'torchscript', 'torch_export', 'flow_matching', 'lerobot',
                'python')
"""The runtimes ``policy_type`` may name (:mod:`.loading` loads them)."""


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """Every setting of the policy server; invalid values raise ValueError naming the field.

    Lists are accepted where tuples are expected and stored as tuples.
    """

    deployment: str = shared(ContractSettings, 'deployment')
    policy_type: str = setting(
        'auto', 'The runtime that serves the checkpoint; auto picks it from the checkpoint '
        '(none: the built-in demo policy; .pt2: torch_export, or flow_matching when its '
        'manifest says policy: flow_matching; .pt/.ts: torchscript; a LeRobot folder or Hub '
        'id: lerobot).', choices=POLICY_TYPES)
    checkpoint: str = setting(
        '', 'Model file (.pt2, .pt/.ts), LeRobot checkpoint directory or Hub id, or '
        'package.module:factory for python; empty: the built-in demo.')
    manifest: str = setting(
        '', 'Manifest (JSON/YAML); empty: <checkpoint stem>.json|.yaml beside it.')
    device: str = setting(
        'auto', 'Torch device: auto (cuda when torch.cuda.is_available(), else cpu), cpu, '
        'cuda, cuda:<n> or mps; an unavailable device stops start-up with a message naming '
        'it (docs/gpu.md).')
    dtype: str = setting(
        'float32', "Floating-point type of the policy's weights and inputs; bfloat16 or "
        'float16 only where the policy and the device allow (float16: not on the CPU); '
        'chunks are returned in float32 either way (docs/gpu.md).', choices=DTYPES)
    compile: bool = setting(
        False, 'Run the policy through torch.compile (compiled at warm-up, once per batch '
        'size; minutes on a large model); off: eager PyTorch (docs/gpu.md).')
    cpu_threads: int = setting(
        1, "CPU threads torch may use (0: torch's default, every core). 1 keeps the other "
        'cores for the robot side; measured 10-100x faster small-model passes on a busy'
        ' 2-core host.', low=0, high=256)
    semantics: str = setting(
        '', "Action units; empty: the policy's. Must equal the policy's when set (the demo "
        'policy speaks either registered semantics).')
    fps: float = setting(
        0.0, "Action rate; 0: the policy's. Required for LeRobot checkpoints without a "
        'manifest.', unit='Hz', low=0.0, high=MAX_ACTION_RATE_HZ)
    calibration_file: str = setting(
        '', 'LeRobot calibration JSON of the arm (for semantics that need it); empty: the '
        'default SO-101 calibration.')
    robot_namespaces: Tuple[str, ...] = setting(
        [''], "Robots served, one namespace each ('' = this node's namespace).")
    interface_namespace: str = setting(
        '', "Namespace of this server's policy interface (policy/request, policy/chunk, "
        "policy/get_capabilities, policy/admit) inside each robot namespace: '' = "
        "<robot>/policy/... (as before); 'gpu1' = <robot>/gpu1/policy/..., so that several "
        "servers can serve one robot (the executor's policy_servers lists them).")
    feature_topics: Tuple[str, ...] = setting(
        None, 'feature=topic overrides for image and privileged features; a topic ending in '
        '/compressed is read as sensor_msgs/CompressedImage.')
    image_transport: str = setting(
        'raw', 'raw (sensor_msgs/Image, or shared memory on the same host) or compressed (read '
        '<camera topic>/compressed: JPEG, for a server on another host); feature_topics '
        'entries are used as written.', choices=IMAGE_TRANSPORTS)
    rotate_180: Tuple[str, ...] = setting(
        None, 'Image features to rotate by 180 degrees (cameras mounted upside down).')
    convert_encodings: Tuple[str, ...] = setting(
        None, 'Encodings every 3-channel colour feature takes besides rgb8, converted, each '
        'said once in the log: bgr8 (channels reordered), rgba8 and bgra8 (alpha dropped; an '
        'RGBA PNG counts as rgba8), mono8 (also greyscale JPEG/PNG: grey repeated in three '
        "channels). A frame in another encoding than its feature's is refused by name unless "
        "listed here or in the feature's manifest entry.", choices=tuple(ENCODING_CONVERSIONS))
    convert_mono_to_rgb: bool = setting(
        False, 'The older spelling of convert_encodings [mono8]: true adds mono8 to it.')
    chunk_length: int = setting(
        0, "Steps per published chunk (first steps of the model's); 0: all.", low=0,
        high=100000)
    max_clients: int = setting(
        1, 'Admitted sessions at most, over all robots.', low=1, high=1000)
    max_requests_per_client: int = setting(
        4, 'Requests one client may keep in flight (queued and served in order); a client '
        'asking more at admission is refused.', low=1, high=MAX_REQUESTS_IN_FLIGHT)
    max_batch_size: int = setting(
        8, 'Requests batched into one forward pass at most (if the policy allows).', low=1,
        high=1024)
    observation_history: int = setting(
        10, "Samples kept per stream (at least each feature's history).", low=1, high=1000)
    warmup_iterations: int = setting(
        3, 'Warm-up forward passes before serving.', low=1, high=1000)
    demo_cameras: Tuple[str, ...] = setting(
        None, 'Cameras the built-in demo policy looks at (observation.images.<name>).')
    demo_image_size: Tuple[int, ...] = setting(
        [480, 640], "Declared [height, width] of the demo policy's camera images.", unit='px',
        low=1, high=100000)
    idle_timeout_s: float = setting(
        10.0, 'A client without requests this long is released when its slot is needed; '
        '0: never.', unit='s', low=0.0, high=86400.0, live=True)
    observation_wait_s: float = setting(
        0.25, "Wait this long for an observation captured at or after the request's earliest "
        'capture stamp, then answer with an error.', unit='s', low=0.0, high=60.0, live=True)
    inline_serve_max_ms: float = setting(
        2.0, 'Serve a ready request in the callback that completed it (no hand-off to the '
        'serving thread) when warm-up measured a forward pass this fast and one '
        'robot is served; 0: never.', unit='ms', low=0.0, high=100.0)
    presence_lease_s: float = shared(ContractSettings, 'presence_lease_s')
    flow_steps: int = setting(
        0, "Euler steps of a flow_matching policy's sampler; 0: the manifest's.", low=0,
        high=1000)
    rtc_execution_horizon: int = setting(
        0, 'flow_matching: rows of the committed plan a new chunk is steered toward (at '
        "most the chunk length); 0: the manifest's.", low=0, high=100000)
    rtc_prefix_schedule: str = setting(
        '', 'flow_matching: how the steering fades from the frozen rows to the execution '
        "horizon; empty: the manifest's.", choices=('', 'linear', 'exp', 'ones', 'zeros'))
    rtc_max_guidance_weight: float = setting(
        0.0, "flow_matching: cap of the guidance weight; 0: the manifest's.", low=0.0,
        high=1000000.0)
    text_model: str = setting(
        '', 'A transformers vision-language model folder (e.g. SmolVLM) that answers the '
        "executor's question and subtask queries about the first camera; empty: the "
        "policy's own text commands, if it has any.")
    text_max_new_tokens: int = setting(
        24, 'At most this many tokens per text_model answer.', low=1, high=4096)
    extra_latency_s: float = setting(
        0.0, 'Test/benchmark knob: hold every answer back this long after it is computed, '
        'without holding up the worker (a slow link or remote queue); keep 0 in '
        'production.', unit='s', low=0.0, high=60.0, live=True)
    extra_compute_s: float = setting(
        0.0, 'Test/benchmark knob: keep the worker busy this much longer per forward pass (a '
        'slower model; counted as inference time); keep 0 in production.', unit='s',
        low=0.0, high=60.0, live=True)
    extra_text_s: float = setting(
        0.0, 'Test/benchmark knob: each text answer takes this much longer (a slower text '
        'model; counted in generate_ms); keep 0 in production.', unit='s', low=0.0,
        high=60.0, live=True)

    def __post_init__(self):
        """Check every declared setting, then what the ranges cannot."""
        check_settings(self)
        for name in ('feature_topics', 'rotate_180', 'demo_cameras', 'convert_encodings'):
            object.__setattr__(self, name, getattr(self, name) or ())
        if self.convert_mono_to_rgb and 'mono8' not in self.convert_encodings:
            object.__setattr__(self, 'convert_encodings', (*self.convert_encodings, 'mono8'))
        if len(self.demo_image_size) != 2:
            raise ValueError(f"parameter 'demo_image_size' must be [height, width], got "
                             f'{list(self.demo_image_size)}')
        if not DEVICE_PATTERN.match(self.device):
            raise ValueError(f"parameter 'device' must be auto, cpu, cuda, cuda:<index> or mps,"
                             f' got {self.device!r}')
        if not self.deployment:
            raise ValueError("parameter 'deployment' must not be empty")
        robots = self.robot_namespaces
        if not robots or len(set(robots)) != len(robots):
            raise ValueError(f"parameter 'robot_namespaces' must be non-empty and unique, got "
                             f'{list(robots)}')
        space = self.interface_namespace
        if space and (space.startswith('/') or '' in space.rstrip('/').split('/')):
            raise ValueError(f"parameter 'interface_namespace' must be a relative name like "
                             f"'gpu1' (inside each robot namespace), got {space!r}")
        object.__setattr__(self, 'interface_namespace', space.strip('/'))
        self.topic_overrides()

    def topic_overrides(self) -> Dict[str, str]:
        """Return ``feature_topics`` as ``{feature: topic}``; ValueError names a bad entry."""
        return parse_feature_topics(self.feature_topics)


LIVE_FIELDS = live_names(ServerConfig)
"""Fields that may change while serving."""
