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

"""The executor's settings as frozen, validated dataclasses (docs/design.md, sections 3-8).

Each field made with :func:`~remote_inference_py.common.settings.setting` is one executor
parameter, declared once here: type, default, unit, range or choices, description, and
whether it may change while running (``live``); ``deployment`` and ``presence_lease_s``, which
the policy server has too, are declared once in ``contract/settings.py`` and embedded by
:func:`~remote_inference_py.common.settings.shared`. The node declares its parameters from
these fields, docs/parameters.md's table is written from them, and the checks below run on
every value, at start-up and live. :class:`ExecutorConfig` is what the core uses;
:class:`NodeSettings` what only the node uses (admission, output, start). The fields that are
not live shape the session (:data:`STRUCTURAL_FIELDS`); `ExecutorCore.update_config` applies
the others while running.
"""

from dataclasses import dataclass, fields
import math

from remote_inference_py.common.settings import check_settings, declared, setting, shared
from remote_inference_py.contract.check import CHUNK_MERGES, MAX_REQUESTS_IN_FLIGHT
from remote_inference_py.contract.settings import ContractSettings, MAX_ACTION_RATE_HZ
from remote_inference_py.executor.driver import DRIVERS
from remote_inference_py.robot.so101 import (
    SO101_JOINT_LOWER_LIMITS, SO101_JOINT_NAMES, SO101_JOINT_UPPER_LIMITS)

OUTPUT_FORMATS = ('joint_state', 'float64_multi_array', 'joint_trajectory')
"""Message types of ``joint_commands``: JointState, Float64MultiArray, JointTrajectory."""
JOINT_LIMITS_OF = ('', 'so101')
"""Robots whose joint ranges the executor knows (``joint_limits_of``); '' = none."""
ON_SERVER_LOSS = ('fault', 'failover')
"""What an executor does when its server is lost: fault as always, or fail over once held."""


@dataclass(frozen=True)
class ExecutorConfig:
    """Settings of the executor core; invalid values raise ValueError naming the field.

    Units are SI: seconds, radians, radians per second. Lists are accepted where tuples are
    expected (ROS parameters arrive as lists) and stored as tuples.
    """

    joint_names: tuple[str, ...] = setting(
        list(SO101_JOINT_NAMES), 'Action names in order; every joint vector is matched by name.')
    fps: float = setting(30.0, 'Action rate of the policy; one action tick every 1 / fps.',
                         unit='Hz', low=1.0, high=MAX_ACTION_RATE_HZ)
    interpolation_multiplier: int = setting(
        1, 'Control ticks per action (linear sub-steps).', low=1, high=20)
    chunk_merge: str = setting(
        'aligned', 'How a new chunk joins the plan: append, aligned, ensemble, or rtc (requests '
        'carry the committed plan; needs a policy that supports it).', choices=CHUNK_MERGES)
    synchronous: bool = setting(
        False, 'Classic loop baseline: request only when empty, hold while waiting.')
    action_offset: int = setting(
        0, 'Step 0 targets the first action tick after capture plus this.', low=0, high=100)
    joint_lower_limits: tuple[float, ...] = setting(
        [], 'Lower joint limits in joint_names order; empty: those of joint_limits_of '
        '(unbounded when that is empty; the hardware interface still clamps to its own).',
        unit='rad')
    joint_upper_limits: tuple[float, ...] = setting(
        [], 'Upper joint limits in joint_names order; empty: those of joint_limits_of.',
        unit='rad')
    joint_limits_of: str = setting(
        '', 'The robot whose joint ranges are the limits where joint_lower_limits and '
        'joint_upper_limits are empty: so101 (robot/so101.py; joint_names must be the '
        "SO-101's); empty: unbounded.", choices=JOINT_LIMITS_OF)
    max_requests_in_flight: int = setting(
        1, 'Requests kept in flight at most, staggered so their chunks land before the plan'
        ' runs out (hides a turnaround above half a chunk); the server must queue as '
        'many per client (asked at admission). 1: the next request waits for the last '
        'answer.', low=1, high=MAX_REQUESTS_IN_FLIGHT)

    refill_seconds: float = setting(
        0.2, 'Request the next chunk when buffered playback falls to this; effective '
        'refill = max(this, recent max turnaround + 1/fps).', unit='s', low=0.0, high=60.0,
        live=True)
    request_timeout_s: float = setting(
        2.0, 'Abandon an unanswered request after this long; a new one may then be sent.',
        unit='s', low=0.01, high=600.0, live=True)
    starvation_grace_s: float = setting(
        3.0, 'Fault when no usable chunk arrives this long into a wait.', unit='s',
        low=0.01, high=600.0, live=True)
    ensemble_coeff: float = setting(
        0.01, 'ACT ensembling weight exp(-coeff*i), i=0 oldest; sign picks older (+) or newer'
        ' (-) predictions.', low=-10.0, high=10.0, live=True)
    blend_steps: int = setting(
        0, 'Blend this many overlapping steps at each seam (0 = off; aligned or rtc only).',
        low=0, high=1000, live=True)
    blend_weight: float = setting(
        0.5, 'Weight of the old plan on the first overlapping step, falling linearly to zero.',
        low=0.0, high=1.0, live=True)
    blend_components: tuple[str, ...] = setting(
        ['all'], 'Joint names to blend; [all] (or empty) means every joint.', live=True)
    max_step_rad: float = setting(
        0.2, 'Largest change of a target per control tick and joint; .inf disables.',
        unit='rad', low=1e-06, high=math.inf, live=True)
    return_to_initial_position: bool = setting(
        True, 'On stop or fault, return to the pose measured at start (when healthy).',
        live=True)
    return_speed_rad_s: float = setting(
        0.5, 'Joint speed on the way back to the initial pose (the slowest-to-arrive joint).',
        unit='rad/s', low=0.01, high=10.0, live=True)
    # Not parameters: the core's tolerances.
    # A chunk captured more than this after its arrival time is 'in the future' [s].
    capture_tolerance_s: float = 0.01
    # Relative tolerance between a chunk's step_period and 1 / fps.
    step_period_tolerance: float = 0.01

    def __post_init__(self):
        """Check every declared setting, then what a range cannot say."""
        check_settings(self)
        if self.blend_components == ('all',):
            object.__setattr__(self, 'blend_components', ())
        for name in ('capture_tolerance_s', 'step_period_tolerance'):
            object.__setattr__(self, name, _as_float(name, getattr(self, name)))
        self._validate_joints()
        self._validate_timing()
        self._validate_merge()

    @property
    def action_period(self) -> float:
        """Return the time between action ticks [s]."""
        return 1.0 / self.fps

    @property
    def tick_period(self) -> float:
        """Return the time between control ticks [s]."""
        return 1.0 / (self.fps * self.interpolation_multiplier)

    def lower_limits(self) -> tuple[float, ...]:
        """Return one lower limit per joint (-inf when unbounded)."""
        return self.joint_lower_limits or self._robot_range(SO101_JOINT_LOWER_LIMITS, -math.inf)

    def upper_limits(self) -> tuple[float, ...]:
        """Return one upper limit per joint (inf when unbounded)."""
        return self.joint_upper_limits or self._robot_range(SO101_JOINT_UPPER_LIMITS, math.inf)

    def _robot_range(self, so101, unbounded) -> tuple[float, ...]:
        """Return the limits of `joint_limits_of` (`so101`), or `unbounded` per joint."""
        if self.joint_limits_of == 'so101':
            return so101
        return (unbounded,) * len(self.joint_names)

    def structural_changes(self, other: 'ExecutorConfig') -> list[str]:
        """Return a description of every structural field that differs in `other`."""
        return [
            f'{name} ({getattr(self, name)!r} -> {getattr(other, name)!r})'
            for name in STRUCTURAL_FIELDS
            if getattr(self, name) != getattr(other, name)
        ]

    def as_dict(self) -> dict:
        """Return the fields as a plain dict (for logging the effective settings)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def summary(self) -> str:
        """Return the effective timing, merge and safety settings in one line (for the log)."""
        names = ('fps', 'interpolation_multiplier', 'chunk_merge', 'synchronous',
                 'refill_seconds', 'max_requests_in_flight', 'blend_steps', 'blend_weight',
                 'blend_components', 'starvation_grace_s', 'request_timeout_s',
                 'return_to_initial_position')
        values = {name: getattr(self, name) for name in names}
        values['blend_components'] = list(self.blend_components) or 'all'
        return ' '.join(f'{name}={value}' for name, value in values.items())

    def _validate_joints(self):
        if not self.joint_names:
            raise ValueError('joint_names must name at least one joint, got ()')
        seen = set()
        for name in self.joint_names:
            if not name:
                raise ValueError(f'joint_names contains an empty name: {self.joint_names!r}')
            if name in seen:
                raise ValueError(f"joint_names lists joint '{name}' twice")
            seen.add(name)
        count = len(self.joint_names)
        for field_name in ('joint_lower_limits', 'joint_upper_limits'):
            values = getattr(self, field_name)
            if values and len(values) != count:
                raise ValueError(
                    f'{field_name} has {len(values)} values but joint_names has {count}')
        if self.joint_limits_of == 'so101' and self.joint_names != SO101_JOINT_NAMES:
            raise ValueError(f"joint_limits_of 'so101' needs the SO-101's joint_names "
                             f'{list(SO101_JOINT_NAMES)}, got {list(self.joint_names)}')
        if bool(self.joint_lower_limits) != bool(self.joint_upper_limits):
            raise ValueError('joint_lower_limits and joint_upper_limits must both be set '
                             'or both be empty')
        for name, low, high in zip(self.joint_names, self.lower_limits(), self.upper_limits()):
            if low > high:
                raise ValueError(
                    f"joint '{name}' lower limit {low} is above its upper limit {high}")

    def _validate_timing(self):
        _require_range('capture_tolerance_s', self.capture_tolerance_s, 0.0, 1.0)
        _require_range('step_period_tolerance', self.step_period_tolerance, 0.0, 0.5)
        if self.synchronous and self.max_requests_in_flight != 1:
            raise ValueError(f'max_requests_in_flight = {self.max_requests_in_flight} needs '
                             'synchronous false (the synchronous loop waits for each chunk)')

    def _validate_merge(self):
        if self.blend_steps > 0 and self.chunk_merge not in ('aligned', 'rtc'):
            raise ValueError(
                f'blend_steps = {self.blend_steps} needs chunk_merge aligned or rtc, got '
                f"'{self.chunk_merge}' (append has no overlap; ensemble already averages)")
        for name in self.blend_components:
            if name not in self.joint_names:
                raise ValueError(f"blend_components names joint '{name}', which is not in "
                                 f'joint_names {self.joint_names!r}')


STRUCTURAL_FIELDS = tuple(name for name, spec in declared(ExecutorConfig).items()
                          if not spec.live)
"""Fields that cannot change once the core exists (read-only parameters)."""


def _as_float(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'{name} must be a number, got {value!r}')
    value = float(value)
    if math.isnan(value):
        raise ValueError(f'{name} must be a number, got nan')
    return value


def _require_range(name, value, low, high):
    if not low <= value <= high:
        raise ValueError(f'{name} must be in [{low}, {high}], got {value!r}')


@dataclass(frozen=True)
class NodeSettings:
    """The executor node's own settings (its parameters beyond ExecutorConfig's fields).

    Invalid values raise ValueError naming the parameter. ``expected_features`` empty means
    any (the parameter's ``[any]``).
    """

    deployment: str = shared(ContractSettings, 'deployment')
    semantics: str = setting('si-radians-v1', 'Action units and order the server must declare.')
    expected_features: tuple[str, ...] = setting(
        ['any'], 'Observation feature names the server must consume; [any]: any.')
    task: str = setting('', 'Language instruction sent with every request.', live=True)
    output_format: str = setting(
        'joint_state', 'joint_commands type: joint_state, float64_multi_array (ros2_control '
        'forward controllers) or joint_trajectory (one point).', choices=OUTPUT_FORMATS)
    require_position_hold: bool = setting(
        True, 'Refuse to move unless hardware/info declares position hold.')
    autostart: bool = setting(
        False, 'Start motion right after admission (otherwise call executor/start).', live=True)
    presence_lease_s: float = shared(ContractSettings, 'presence_lease_s')
    policy_servers: tuple[str, ...] = setting(
        [''], 'Candidate policy servers, each the namespace of its policy interface (its '
        "policy/... topics and services), relative to this node's namespace or absolute; '' = "
        'policy/... in our namespace (the one server, as before). With several, admission '
        'joins the least loaded one that matches and has room.')
    on_server_loss: str = setting(
        'fault', 'fault: a lost server ends the session (hold, fault, return). failover: once '
        'the arm holds, join another candidate in policy_servers as a new session.',
        choices=ON_SERVER_LOSS)
    admission_timeout_s: float = setting(
        30.0, 'Fault if the server cannot be reached for admission, or its request and chunk '
        'topics do not match, within this long.', unit='s', low=0.1, high=3600.0, live=True)
    query_max_text_chars: int = setting(
        1000, 'executor/query: refuse a question or goal longer than this.', low=1,
        high=100000, live=True)
    query_answer_timeout_s: float = setting(
        30.0, 'executor/query: resume without an answer after this long (the goal aborts).',
        unit='s', low=0.1, high=3600.0, live=True)
    steering_period_s: float = setting(
        5.0, 'executor/query steering: motion between two subtask rounds.', unit='s',
        low=0.1, high=3600.0, live=True)
    driver: str = setting(
        'policy', 'Who drives the follower once motion starts: policy, or human (the leader '
        'arm on leader/joint_states); switch while running with executor/set_driver.',
        choices=DRIVERS)
    leader_timeout_s: float = setting(
        0.2, 'While the human drives: hold the follower when the leader has sent nothing '
        'this long.', unit='s', low=0.01, high=60.0, live=True)
    catch_up_speed_rad_s: float = setting(
        0.5, 'While the human drives: joint speed of the catch-up when the leader is far '
        'from the follower (at the hand-over, after a leader fault).', unit='rad/s',
        low=0.01, high=10.0, live=True)
    catch_up_tolerance_rad: float = setting(
        0.05, 'The catch-up ends (full-rate following begins) once every joint is within '
        'this of the leader.', unit='rad', low=0.001, high=1.0, live=True)

    def __post_init__(self):
        """Check every declared setting; ``expected_features`` ``[any]`` is stored empty."""
        check_settings(self)
        if self.expected_features == ('any',):
            object.__setattr__(self, 'expected_features', ())
        servers = tuple(s.rstrip('/') if s != '/' else s for s in self.policy_servers)
        if not servers or len(set(servers)) != len(servers):
            raise ValueError(f"parameter 'policy_servers' must be non-empty and unique, got "
                             f'{list(self.policy_servers)}')
        object.__setattr__(self, 'policy_servers', servers)
        if self.on_server_loss == 'failover' and len(servers) < 2:
            raise ValueError(f'policy_servers lists only {list(servers)}: list another server '
                             "to fail over to; or use on_server_loss 'fault'")


def from_parameters_file(path: str) -> tuple:
    """Return (ExecutorConfig, NodeSettings) as a ROS parameters file sets the executor.

    The file's ``executor`` section (any key ending in ``executor``, e.g. ``/**/executor``)
    holds only what differs from the declarations; every other setting is its declared
    default. A bad value raises ValueError naming it.
    """
    import yaml
    with open(path) as stream:
        data = yaml.safe_load(stream) or {}
    values = {}
    for key, section in data.items():
        if str(key).rstrip('/').endswith('executor') and isinstance(section, dict):
            values.update(section.get('ros__parameters') or {})
    config = {k: v for k, v in values.items() if k in declared(ExecutorConfig)}
    settings = {k: v for k, v in values.items() if k in declared(NodeSettings)}
    unknown = sorted(set(values) - set(config) - set(settings))
    if unknown:
        raise ValueError(f'{path}: {", ".join(unknown)} are not executor parameters')
    return ExecutorConfig(**config), NodeSettings(**settings)
