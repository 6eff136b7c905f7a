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
The hardware interface's settings as one frozen, validated dataclass, and its parts (no ROS).

Each field of :class:`HardwareConfig` is one parameter of the node, declared once here with
:func:`~remote_inference_py.common.settings.setting` (type, default, unit, range or choices,
description, live or not); the node's parameters and docs/parameters.md's table come from it. The
checks a range cannot express (a port for the servo bus, one motor id and one limit per
joint, ...) raise ValueError naming the parameter. The live fields apply from the next command.

From it come the worker thread's settings (:class:`RunnerSettings`,
:meth:`HardwareConfig.runner_settings`), the servo bus's (:class:`FeetechBusConfig`,
:meth:`HardwareConfig.feetech_bus`) and the simulation's (:class:`SimConfig`,
:meth:`HardwareConfig.sim_config`). They live here, below the declaration, because each of
their fields that is a parameter is :func:`~remote_inference_py.common.settings.setting_of`
it (and :func:`~remote_inference_py.common.settings.built_from` hands it the parameter's
value): a tool or a test that builds one directly gets the parameter's default and range, and
neither can drift. Their other fields (the servo model, the sim's mesh grid, ...) are theirs.
"""

import dataclasses
import math
from typing import Mapping, Optional, Tuple, Union

from remote_inference_py.common.settings import (
    built_from, check_settings, live_names, setting, setting_of)
from remote_inference_py.hardware.backend import BACKENDS
from remote_inference_py.hardware.cameras import (
    CameraConfig, CameraConfigError, DEFAULT_STALL_TIMEOUT_S, parse_cameras)
from remote_inference_py.robot.calibration import Calibration, MAX_MOTOR_ID
from remote_inference_py.robot.control_table import BAUDRATE_TABLE, MODELS
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

COMMAND_FORMATS = ('joint_state', 'float64_multi_array')
"""Message types of ``joint_commands``: JointState (by name), Float64MultiArray (in order)."""

BAUDRATES = tuple(sorted(BAUDRATE_TABLE))
"""Bus speeds a Feetech STS servo supports [bit/s] (its baud-rate register's table)."""

UNSET_AS_NONE = ('joint_lower_limits', 'joint_upper_limits', 'sim_initial_positions')
"""List fields whose empty value means "the backend's own" (stored as None)."""

SHUTDOWN_QUIET_S = 0.5
"""A stopping driver stops applying commands once none arrived for this long [s]."""


@dataclasses.dataclass(frozen=True)
class HardwareConfig:
    """Every setting of the hardware interface node (each field is one parameter)."""

    backend: str = setting(
        'feetech', 'What to drive: feetech (Feetech STS servo bus) or sim (MuJoCo SO-101).',
        choices=BACKENDS)
    port: str = setting(
        '', 'Serial port of the servo bus, e.g. /dev/ttyACM0 (feetech; required).')
    baudrate: int = setting(
        1000000, 'Servo bus speed (feetech), one of the speeds the servos know.',
        unit='bit/s', choices=BAUDRATES)
    calibration_file: str = setting(
        '', 'LeRobot calibration JSON of the arm (feetech); empty: default calibration (ids'
        ' 1..6, full encoder range, never written to the servos).')
    joint_names: Tuple[str, ...] = setting(
        list(SO101_JOINT_NAMES), 'Joint (motor) names in order; commands are matched by name.')
    motor_ids: Tuple[int, ...] = setting(
        [1, 2, 3, 4, 5, 6], 'Bus id of each joint in joint_names order (feetech); must match '
        'the calibration.', low=0, high=MAX_MOTOR_ID)
    publish_rate_hz: float = setting(
        50.0, 'Rate of joint_states, of bus reads and of the sim physics updates.', unit='Hz',
        low=1.0, high=500.0)
    max_relative_target: float = setting(
        0.35, 'Largest distance of a target from the measured position, per joint and command;'
        ' 0 disables.', unit='rad', low=0.0, high=10.0, live=True)
    joint_lower_limits: Optional[Tuple[float, ...]] = setting(
        None, 'Lower joint limits in joint_names order; unset: the calibrated range '
        '(feetech) or the model (sim).', unit='rad')
    joint_upper_limits: Optional[Tuple[float, ...]] = setting(
        None, 'Upper joint limits in joint_names order; unset: the calibrated range '
        '(feetech) or the model (sim).', unit='rad')
    limit_tolerance_rad: float = setting(
        0.2, 'Targets up to this far beyond a joint limit are clamped to it; farther ones '
        'are rejected as out of range.', unit='rad', low=0.0, high=10.0, live=True)
    command_format: str = setting(
        'joint_state', 'joint_commands type: joint_state (matched by name) or '
        'float64_multi_array (joint_names order).', choices=COMMAND_FORMATS)
    command_timeout_s: float = setting(
        0.5, 'Watchdog: no command for this long while active holds the last applied '
        'target.', unit='s', low=0.01, high=3600.0, live=True)
    autostart: bool = setting(
        True, 'Configure and activate at startup; otherwise use the lifecycle services.')
    shutdown_grace_s: float = setting(
        10.0, 'On stop, keep applying commands for up to this long, until none arrives for '
        f'{SHUTDOWN_QUIET_S} s.', unit='s', low=0.0, high=60.0, live=True)
    disable_torque_on_shutdown: bool = setting(
        True, 'Switch torque off when disconnecting (feetech).', live=True)
    disable_torque_on_fault: bool = setting(
        False, 'Switch torque off after a persistent bus failure (default: the servos keep '
        'holding their last goal).', live=True)
    bus_retries: int = setting(
        2, 'Extra attempts of a failed bus operation (feetech).', low=0, high=10)
    max_consecutive_failures: int = setting(
        3, 'Fault after this many failed bus operations in a row (feetech).', low=1,
        high=1000)
    latency_timer_ms: float = setting(
        16.0, 'USB adapter latency the reply timeout allows for (feetech; 16 for FTDI, '
        '1-2 for CH340/CH343).', unit='ms', low=0.0, high=100.0)
    configure_servos: bool = setting(
        True, "Write LeRobot's SO-101 servo settings (P/I/D, acceleration, return delay) on "
        'configure (feetech).')
    sim_render: bool = setting(True, 'Render and publish camera images (sim; needs EGL).')
    sim_cameras: Tuple[str, ...] = setting(
        ['front'], 'Cameras of the scene to publish as cameras/<name>/image_raw (sim).')
    share_images: bool = setting(
        True, 'Offer camera frames through shared memory (<image topic>/shm) to policy '
        'servers on this host; the Image topic then carries frames only while something'
        ' subscribes to it (sim).')
    cameras: str = setting(
        '', "Cameras of the real arm in LeRobot's --robot.cameras form, e.g. \"{front: "
        '{type: opencv, index_or_path: /dev/video0, width: 640, height: 480, fps: 30}}"'
        ' (feetech; empty: none). Keys: index_or_path, width, height, fps, color_mode, '
        'rotation, warmup_s, fourcc.')
    camera_stall_timeout_s: float = setting(
        DEFAULT_STALL_TIMEOUT_S, 'A camera without a new frame for this long is reported '
        'stalled on hardware/info (feetech).', unit='s', low=0.05, high=60.0)
    jpeg_quality: int = setting(
        80, 'JPEG quality of <image topic>/compressed, encoded only while something '
        'subscribes (another host); 0: no compressed topic.', low=0, high=100)
    sim_image_width: int = setting(640, 'Image width (sim).', unit='px', low=1, high=4096)
    sim_image_height: int = setting(480, 'Image height (sim).', unit='px', low=1, high=4096)
    sim_camera_rate_hz: float = setting(
        30.0, 'Image rate (sim).', unit='Hz', low=0.1, high=120.0)
    sim_cube_seed: int = setting(
        -1, 'Cube position: -1 fixed, >= 0 random on the table with this seed (sim).',
        low=-1, high=2147483647)
    sim_real_time_factor: float = setting(
        1.0, 'Simulated seconds per wall-clock second (sim).', low=0.01, high=100.0)
    sim_initial_positions: Optional[Tuple[float, ...]] = setting(
        None, "Initial joint positions in joint_names order (sim); unset: the model's zero "
        'pose.', unit='rad')
    sim_simplify_meshes: bool = setting(
        True, 'Render simplified visual meshes (sim; ~5x faster frames).')

    def __post_init__(self):
        """Check every declared setting (unset limits stored as None), then what ranges cannot."""
        check_settings(self)
        names = list(self.joint_names)
        for name in UNSET_AS_NONE:
            value = getattr(self, name)
            object.__setattr__(self, name, value or None)
        if self.backend == 'feetech' and not self.port:
            raise ValueError("parameter 'port' is empty: the feetech backend needs the serial "
                             'port of the servo bus, e.g. port:=/dev/ttyACM0 (or use '
                             'backend:=sim)')
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

    def runner_settings(self) -> 'RunnerSettings':
        """Return the worker thread's timing and safety settings."""
        return built_from(self, RunnerSettings)

    def feetech_bus(self) -> 'FeetechBusConfig':
        """Return the servo bus's configuration (backend feetech)."""
        return built_from(self, FeetechBusConfig, port=self.port,
                          motors=tuple(zip(self.joint_names, self.motor_ids)))

    def sim_config(self) -> 'SimConfig':
        """Return the simulated arm's settings (backend sim); no camera named: no rendering."""
        return built_from(self, SimConfig, joint_names=self.joint_names,
                          render=self.sim_render and bool(self.sim_cameras))


LIVE_FIELDS = live_names(HardwareConfig)
"""Fields that may change while running (they apply from the next command)."""


# The parts built from it; each field that is a parameter is setting_of it.

@dataclasses.dataclass(frozen=True)
class RunnerSettings:
    """Timing and safety settings of the worker thread (``hardware/runner.py``)."""

    publish_rate_hz: float = setting_of(HardwareConfig, 'publish_rate_hz')
    command_timeout_s: float = setting_of(HardwareConfig, 'command_timeout_s')
    shutdown_grace_s: float = setting_of(HardwareConfig, 'shutdown_grace_s')
    shutdown_quiet_s: float = SHUTDOWN_QUIET_S
    disable_torque_on_shutdown: bool = setting_of(HardwareConfig, 'disable_torque_on_shutdown')
    disable_torque_on_fault: bool = setting_of(HardwareConfig, 'disable_torque_on_fault')

    def __post_init__(self):
        """Check the parameters' values as the parameters are checked, then the quiet time."""
        check_settings(self)
        if not self.shutdown_quiet_s >= 0:
            raise ValueError(f'shutdown_quiet_s must be >= 0, got {self.shutdown_quiet_s!r}')


@dataclasses.dataclass(frozen=True)
class FeetechBusConfig:
    """Static configuration of one servo bus (``hardware/feetech.py``).

    ``motors`` maps motor names to bus ids, in the bus order (a mapping or ``(name, id)``
    pairs). ``retries`` is the number of extra attempts per operation (``bus_retries``).
    ``latency_timer_ms`` is the USB adapter latency the packet timeout allows for, as in the
    SDK (timeout = bytes on the wire + 2 x latency + 2 ms); the SDK's 16 ms suits FTDI
    adapters at their default latency timer, 1-2 ms suits CH340/CH343 boards.
    ``bounded_wait`` False uses the SDK's stock busy-polling PortHandler (benchmarks only).
    """

    port: str
    motors: Union[Mapping[str, int], Tuple[Tuple[str, int], ...]]
    model: str = 'sts3215'
    baudrate: int = setting_of(HardwareConfig, 'baudrate')
    retries: int = setting_of(HardwareConfig, 'bus_retries')
    max_consecutive_failures: int = setting_of(HardwareConfig, 'max_consecutive_failures')
    latency_timer_ms: float = setting_of(HardwareConfig, 'latency_timer_ms')
    bounded_wait: bool = True
    raise_on_status_error: bool = True

    def __post_init__(self):
        """Validate every field; errors name the field and value."""
        check_settings(self)
        pairs = tuple(self.motors.items() if isinstance(self.motors, Mapping) else self.motors)
        object.__setattr__(self, 'motors', pairs)
        if not isinstance(self.port, str) or not self.port:
            raise ValueError(f'port must be a non-empty path, got {self.port!r}')
        if not pairs:
            raise ValueError('motors must name at least one motor')
        names, ids = set(), set()
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f'motors entry {pair!r} is not a (name, id) pair')
            name, motor_id = pair
            if not isinstance(name, str) or not name:
                raise ValueError(f'motor name {name!r} is not a non-empty string')
            if name in names:
                raise ValueError(f'motor {name!r} is configured twice')
            if isinstance(motor_id, bool) or not isinstance(motor_id, int) or not (
                    0 <= motor_id <= MAX_MOTOR_ID):
                raise ValueError(f'motor {name!r}: id {motor_id!r} is not in 0..{MAX_MOTOR_ID}')
            if motor_id in ids:
                raise ValueError(f'motor {name!r}: id {motor_id} is used by another motor')
            names.add(name)
            ids.add(motor_id)
        if self.model not in MODELS:
            raise ValueError(f'unknown servo model {self.model!r}; known: {", ".join(MODELS)}')

    @classmethod
    def so101(cls, port: str, **kwargs) -> 'FeetechBusConfig':
        """Return the configuration of an SO-101 arm: LeRobot's joint names on ids 1..6."""
        return cls(port=port, motors=tuple(
            (name, index + 1) for index, name in enumerate(SO101_JOINT_NAMES)), **kwargs)

    @classmethod
    def from_calibration(cls, port: str, calibration: Calibration,
                         **kwargs) -> 'FeetechBusConfig':
        """Return a configuration with the motor names and ids of a calibration."""
        return cls(port=port, motors=tuple(calibration.ids.items()), **kwargs)


@dataclasses.dataclass(frozen=True)
class SimConfig:
    """Settings of the simulated arm and its cameras (``hardware/sim.py``).

    ``initial_positions`` [rad] in ``joint_names`` order (None: the model's zero pose);
    ``cameras`` are camera names of the model; ``cube_seed`` -1 puts the cube at its fixed
    position, >= 0 draws it uniformly in ``sim.CUBE_SAMPLING_BOUNDS`` with that seed.
    ``mesh_cell_m`` is the grid the visual meshes are simplified on; a caller behind by more
    than ``max_catch_up_s`` skips the lost time.
    """

    joint_names: Tuple[str, ...]
    initial_positions: Optional[Tuple[float, ...]] = setting_of(
        HardwareConfig, 'sim_initial_positions')
    render: bool = setting_of(HardwareConfig, 'sim_render')
    cameras: Tuple[str, ...] = setting_of(HardwareConfig, 'sim_cameras')
    width: int = setting_of(HardwareConfig, 'sim_image_width')
    height: int = setting_of(HardwareConfig, 'sim_image_height')
    camera_rate_hz: float = setting_of(HardwareConfig, 'sim_camera_rate_hz')
    cube_seed: int = setting_of(HardwareConfig, 'sim_cube_seed')
    real_time_factor: float = setting_of(HardwareConfig, 'sim_real_time_factor')
    simplify_meshes: bool = setting_of(HardwareConfig, 'sim_simplify_meshes')
    mesh_cell_m: float = 0.004
    max_catch_up_s: float = 0.25

    def __post_init__(self):
        """Validate every field; errors name the field."""
        check_settings(self)
        object.__setattr__(self, 'joint_names', tuple(self.joint_names))
        values = self.initial_positions
        if values is not None:
            if len(values) != len(self.joint_names):
                raise ValueError(f'{len(values)} initial positions for '
                                 f'{len(self.joint_names)} joints')
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f'initial positions {values} are not all finite')
        if not self.joint_names:
            raise ValueError('joint_names must name at least one joint')
        if self.render and not self.cameras:
            raise ValueError('render is on but no camera is named')
        for field in ('mesh_cell_m', 'max_catch_up_s'):
            value = getattr(self, field)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f'{field} must be > 0, got {value!r}')
