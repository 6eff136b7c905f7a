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

The node maps its declared ROS parameters one to one onto the fields of :class:`ServerConfig`
(same names). From it come what the runtime registry needs to load the policy
(:meth:`ServerConfig.runtime_options`) and the core's settings
(:meth:`ServerConfig.server_settings`); ``idle_timeout_s``, ``observation_wait_s``,
``extra_latency_s`` and ``extra_compute_s`` may change while serving, everything else is
fixed at start-up.
"""

import dataclasses
from typing import Dict, Optional, Tuple

from remote_inference_py.contract.admission import PRESENCE_LEASE_S
from remote_inference_py.policy_server.core import ServerSettings
from remote_inference_py.policy_server.runtimes import RuntimeOptions
from remote_inference_py.policy_server.sampler import SamplerOverrides
from remote_inference_py.policy_server.topics import IMAGE_TRANSPORTS, parse_feature_topics
from remote_inference_py.robot.calibration import Calibration

LIVE_FIELDS = ('idle_timeout_s', 'observation_wait_s', 'extra_latency_s', 'extra_compute_s')
"""Fields that may change while serving (the same fields of ServerSettings)."""


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """Every setting of the policy server; invalid values raise ValueError naming the field.

    The parameters' descriptions (``policy_server/node.py``, and the README's table) say
    what each means. Lists are accepted where tuples are expected and stored as tuples.
    """

    deployment: str = 'so101'
    policy_type: str = 'auto'
    checkpoint: str = ''
    manifest: str = ''
    device: str = 'cpu'
    cpu_threads: int = 1
    semantics: str = ''
    fps: float = 0.0
    calibration_file: str = ''
    robot_namespaces: Tuple[str, ...] = ('',)
    feature_topics: Tuple[str, ...] = ()
    rotate_180: Tuple[str, ...] = ()
    convert_mono_to_rgb: bool = False
    chunk_length: int = 0
    max_clients: int = 1
    max_batch_size: int = 8
    observation_history: int = 10
    warmup_iterations: int = 3
    demo_cameras: Tuple[str, ...] = ()
    demo_image_size: Tuple[int, ...] = (480, 640)
    idle_timeout_s: float = 10.0
    observation_wait_s: float = 0.25
    inline_serve_max_ms: float = 2.0
    extra_latency_s: float = 0.0
    extra_compute_s: float = 0.0
    presence_lease_s: float = PRESENCE_LEASE_S
    image_transport: str = 'raw'
    max_requests_per_client: int = 4
    flow_steps: int = 0
    rtc_execution_horizon: int = 0
    rtc_prefix_schedule: str = ''
    rtc_max_guidance_weight: float = 0.0

    def __post_init__(self):
        """Store the lists as tuples and validate what the parameter ranges cannot."""
        for name in ('robot_namespaces', 'feature_topics', 'rotate_180', 'demo_cameras',
                     'demo_image_size'):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        if len(self.demo_image_size) != 2 or min(self.demo_image_size) < 1:
            raise ValueError(f"parameter 'demo_image_size' must be [height, width], got "
                             f'{list(self.demo_image_size)}')
        if self.image_transport not in IMAGE_TRANSPORTS:
            raise ValueError(f"parameter 'image_transport' is {self.image_transport!r}; "
                             f'expected one of {", ".join(IMAGE_TRANSPORTS)}')
        self.topic_overrides()
        self.server_settings()
        self.sampler_overrides()

    def topic_overrides(self) -> Dict[str, str]:
        """Return ``feature_topics`` as ``{feature: topic}``; ValueError names a bad entry."""
        return parse_feature_topics(self.feature_topics)

    def sampler_overrides(self) -> SamplerOverrides:
        """Return the flow sampler parameters; ValueError names a bad one."""
        return SamplerOverrides(
            flow_steps=self.flow_steps, rtc_execution_horizon=self.rtc_execution_horizon,
            rtc_prefix_schedule=self.rtc_prefix_schedule,
            rtc_max_guidance_weight=self.rtc_max_guidance_weight).check()

    def server_settings(self) -> ServerSettings:
        """Return the core's settings (validated there)."""
        return ServerSettings(
            deployment=self.deployment, robots=self.robot_namespaces,
            max_clients=self.max_clients, idle_timeout_s=self.idle_timeout_s,
            observation_wait_s=self.observation_wait_s,
            observation_history=self.observation_history, max_batch_size=self.max_batch_size,
            chunk_length=self.chunk_length, rotate_180=self.rotate_180,
            convert_mono_to_rgb=self.convert_mono_to_rgb,
            extra_latency_s=self.extra_latency_s, extra_compute_s=self.extra_compute_s,
            presence_lease_s=self.presence_lease_s,
            max_requests_per_client=self.max_requests_per_client)

    def runtime_options(self, calibration: Optional[Calibration] = None) -> RuntimeOptions:
        """Return what the runtime registry needs to load the policy."""
        return RuntimeOptions(
            policy_type=self.policy_type, checkpoint=self.checkpoint, manifest=self.manifest,
            device=self.device, semantics=self.semantics, fps=self.fps,
            calibration=calibration, demo_cameras=self.demo_cameras,
            demo_image_size=tuple(self.demo_image_size), flow_steps=self.flow_steps,
            rtc_execution_horizon=self.rtc_execution_horizon,
            rtc_prefix_schedule=self.rtc_prefix_schedule,
            rtc_max_guidance_weight=self.rtc_max_guidance_weight)
