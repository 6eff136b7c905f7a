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
The hardware interface's settings as one frozen, validated dataclass (no ROS).

The node maps its declared ROS parameters one to one onto the fields of
:class:`HardwareConfig` (same names); the checks a parameter range cannot express (a known
backend, a port for the servo bus, one motor id and one limit per joint, ...) raise
ValueError naming the parameter. From it come the worker thread's settings
(:meth:`HardwareConfig.runner_settings`) and the simulation's (:meth:`HardwareConfig.sim_config`).
The live fields (:data:`LIVE_FIELDS`) may change while running, through
``dataclasses.replace``, which checks them again.
"""

import dataclasses
from typing import Optional, Tuple

from remote_inference_py.hardware.backend import BACKENDS
from remote_inference_py.hardware.cameras import (
    CameraConfig, CameraConfigError, DEFAULT_STALL_TIMEOUT_S, parse_cameras)
from remote_inference_py.hardware.runner import RunnerSettings
from remote_inference_py.hardware.sim import SimConfig
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

COMMAND_FORMATS = ('joint_state', 'float64_multi_array')
"""Message types of ``joint_commands``: JointState (by name), Float64MultiArray (in order)."""

LIVE_FIELDS = ('max_relative_target', 'limit_tolerance_rad', 'command_timeout_s',
               'shutdown_grace_s', 'disable_torque_on_shutdown', 'disable_torque_on_fault')
"""Fields that may change while running (they apply from the next command)."""

UNSET_AS_NONE = ('joint_lower_limits', 'joint_upper_limits', 'sim_initial_positions')
"""List fields whose empty value means "the backend's own" (stored as None)."""


@dataclasses.dataclass(frozen=True)
class HardwareConfig:
    """Every setting of the hardware interface node; see the parameters' descriptions."""

    backend: str = 'feetech'
    port: str = ''
    baudrate: int = 1000000
    calibration_file: str = ''
    joint_names: Tuple[str, ...] = tuple(SO101_JOINT_NAMES)
    motor_ids: Tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    publish_rate_hz: float = 50.0
    max_relative_target: float = 0.35
    joint_lower_limits: Optional[Tuple[float, ...]] = None
    joint_upper_limits: Optional[Tuple[float, ...]] = None
    limit_tolerance_rad: float = 0.2
    command_format: str = 'joint_state'
    command_timeout_s: float = 0.5
    autostart: bool = True
    shutdown_grace_s: float = 10.0
    disable_torque_on_shutdown: bool = True
    disable_torque_on_fault: bool = False
    bus_retries: int = 2
    max_consecutive_failures: int = 3
    latency_timer_ms: float = 16.0
    configure_servos: bool = True
    sim_render: bool = True
    sim_cameras: Tuple[str, ...] = ('front',)
    share_images: bool = True
    sim_image_width: int = 640
    sim_image_height: int = 480
    sim_camera_rate_hz: float = 30.0
    sim_cube_seed: int = -1
    sim_real_time_factor: float = 1.0
    sim_initial_positions: Optional[Tuple[float, ...]] = None
    sim_simplify_meshes: bool = True
    cameras: str = ''
    camera_stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S
    jpeg_quality: int = 80

    def __post_init__(self):
        """Store lists as tuples (unset limits as None) and check what ranges cannot."""
        for name in ('joint_names', 'motor_ids', 'sim_cameras'):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in UNSET_AS_NONE:
            value = getattr(self, name)
            object.__setattr__(self, name, tuple(value) if value else None)
        if self.backend not in BACKENDS:
            raise ValueError(f"parameter 'backend' is {self.backend!r}; expected one of "
                             f'{", ".join(BACKENDS)}')
        if self.backend == 'feetech' and not self.port:
            raise ValueError("parameter 'port' is empty: the feetech backend needs the serial "
                             'port of the servo bus, e.g. port:=/dev/ttyACM0 (or use '
                             'backend:=sim)')
        if self.command_format not in COMMAND_FORMATS:
            raise ValueError(f"parameter 'command_format' is {self.command_format!r}; "
                             f'expected one of {", ".join(COMMAND_FORMATS)}')
        names = list(self.joint_names)
        if not names or len(set(names)) != len(names) or not all(names):
            raise ValueError(f"parameter 'joint_names' = {names} must name distinct joints")
        if self.backend == 'feetech' and len(self.motor_ids) != len(names):
            raise ValueError(f"parameter 'motor_ids' has {len(self.motor_ids)} ids for "
                             f'{len(names)} joints ({", ".join(names)})')
        for name in UNSET_AS_NONE:
            value = getattr(self, name)
            if value is not None and len(value) != len(names):
                raise ValueError(f'parameter {name!r} has {len(value)} values for '
                                 f'{len(names)} joints ({", ".join(names)})')
        if (self.joint_lower_limits is None) != (self.joint_upper_limits is None):
            raise ValueError("parameters 'joint_lower_limits' and 'joint_upper_limits' must "
                             'be set together')
        self.runner_settings()
        if self.backend == 'sim':
            self.sim_config()
        cameras = self.camera_configs()
        if cameras and self.backend == 'sim':
            raise ValueError("parameter 'cameras' is for the real arm (backend feetech); the "
                             'sim renders sim_cameras')

    def camera_configs(self) -> Tuple[CameraConfig, ...]:
        """Return the real arm's cameras (LeRobot's dictionary in ``cameras``), parsed."""
        try:
            return parse_cameras(self.cameras)
        except CameraConfigError as error:
            raise ValueError(f"parameter 'cameras': {error}") from None

    def runner_settings(self) -> RunnerSettings:
        """Return the worker thread's timing and safety settings."""
        return RunnerSettings(
            publish_rate_hz=self.publish_rate_hz, command_timeout_s=self.command_timeout_s,
            shutdown_grace_s=self.shutdown_grace_s,
            disable_torque_on_shutdown=self.disable_torque_on_shutdown,
            disable_torque_on_fault=self.disable_torque_on_fault)

    def sim_config(self) -> SimConfig:
        """Return the simulated arm's settings (backend sim)."""
        return SimConfig(
            joint_names=self.joint_names, initial_positions=self.sim_initial_positions,
            render=self.sim_render and bool(self.sim_cameras), cameras=self.sim_cameras,
            width=self.sim_image_width, height=self.sim_image_height,
            camera_rate_hz=self.sim_camera_rate_hz, cube_seed=self.sim_cube_seed,
            real_time_factor=self.sim_real_time_factor,
            simplify_meshes=self.sim_simplify_meshes)
