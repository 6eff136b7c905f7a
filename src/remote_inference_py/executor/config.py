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

The executor node maps its declared ROS parameters one to one onto the fields of
:class:`ExecutorConfig` (what the core uses) and :class:`NodeSettings` (what only the node
uses: admission, output, start). Fields in `STRUCTURAL_FIELDS` shape the session (they are
read-only parameters); every other field of ExecutorConfig is a tunable that
`ExecutorCore.update_config` applies while running.
"""

from dataclasses import dataclass, fields
import math

from remote_inference_py.contract.admission import (
    CHUNK_MERGES, MAX_REQUESTS_IN_FLIGHT, PRESENCE_LEASE_S)

OUTPUT_FORMATS = ('joint_state', 'float64_multi_array', 'joint_trajectory')
"""Message types of ``joint_commands``: JointState, Float64MultiArray, JointTrajectory."""

# Fields that cannot change once the core exists (read-only ROS parameters).
STRUCTURAL_FIELDS = (
    'joint_names',
    'fps',
    'interpolation_multiplier',
    'chunk_merge',
    'synchronous',
    'action_offset',
    'joint_lower_limits',
    'joint_upper_limits',
    'max_requests_in_flight',
)


@dataclass(frozen=True)
class ExecutorConfig:
    """Settings of the executor core; invalid values raise ValueError naming the field.

    Units are SI: seconds, radians, radians per second. Lists are accepted where tuples are
    expected (ROS parameters arrive as lists) and stored as tuples.
    """

    # Action names in the order of every vector the core takes and returns (structural).
    joint_names: tuple[str, ...]
    # Action rate of the policy [Hz]; one action tick every 1 / fps seconds (structural).
    fps: float = 30.0
    # Control ticks per action tick; intermediate ticks interpolate linearly (structural).
    interpolation_multiplier: int = 1
    # How a new chunk joins the buffered plan: 'append', 'aligned' or 'ensemble' (structural).
    chunk_merge: str = 'aligned'
    # Classic loop: request only when the buffer is empty and hold while waiting (structural).
    synchronous: bool = False
    # Step 0 of a chunk targets the first action tick after capture plus this many (structural).
    action_offset: int = 0
    # Per-joint position limits [rad]; empty means unbounded (structural).
    joint_lower_limits: tuple[float, ...] = ()
    joint_upper_limits: tuple[float, ...] = ()
    # Requests kept in flight at most, staggered (refill.py); agreed at admission (structural).
    max_requests_in_flight: int = 1

    # Request the next chunk when buffered playback falls to this many seconds [s].
    refill_seconds: float = 0.2
    # Abandon an unanswered request after this long [s]; a new one may then be sent.
    request_timeout_s: float = 2.0
    # Fault when nothing usable arrives this long after a wait began [s].
    starvation_grace_s: float = 3.0
    # ACT temporal ensembling: weight exp(-coeff * i), i = 0 for the oldest prediction.
    ensemble_coeff: float = 0.01
    # Blend the first blend_steps overlapping steps of an aligned chunk (0 = off).
    blend_steps: int = 0
    # Weight of the old plan on the first overlapping step, falling linearly to zero.
    blend_weight: float = 0.5
    # Joint names to blend; empty means all joints.
    blend_components: tuple[str, ...] = ()
    # Largest change of a dispatched target per control tick and joint [rad]; inf disables.
    max_step_rad: float = 0.2
    # On stop or fault, drive back to the pose measured at start (when healthy).
    return_to_initial_position: bool = True
    # Speed of the slowest-to-arrive joint on the way back [rad/s].
    return_speed_rad_s: float = 0.5
    # A chunk captured more than this after its arrival time is 'in the future' [s].
    capture_tolerance_s: float = 0.01
    # Relative tolerance between a chunk's step_period and 1 / fps.
    step_period_tolerance: float = 0.01

    def __post_init__(self):
        """Normalise sequences to tuples and validate every field."""
        for name in ('joint_names', 'blend_components'):
            object.__setattr__(self, name, _as_tuple(name, getattr(self, name), str))
        for name in ('joint_lower_limits', 'joint_upper_limits'):
            values = _as_tuple(name, getattr(self, name), (int, float))
            object.__setattr__(self, name, tuple(float(v) for v in values))
        for name in ('fps', 'refill_seconds', 'request_timeout_s', 'starvation_grace_s',
                     'ensemble_coeff', 'blend_weight', 'max_step_rad', 'return_speed_rad_s',
                     'capture_tolerance_s', 'step_period_tolerance'):
            object.__setattr__(self, name, _as_float(name, getattr(self, name)))
        for name in ('interpolation_multiplier', 'action_offset', 'blend_steps',
                     'max_requests_in_flight'):
            _require_int(name, getattr(self, name))
        for name in ('synchronous', 'return_to_initial_position'):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f'{name} must be true or false, got {getattr(self, name)!r}')
        self._validate_joints()
        self._validate_timing()
        self._validate_merge()
        self._validate_motion()

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
        return self.joint_lower_limits or (-math.inf,) * len(self.joint_names)

    def upper_limits(self) -> tuple[float, ...]:
        """Return one upper limit per joint (inf when unbounded)."""
        return self.joint_upper_limits or (math.inf,) * len(self.joint_names)

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
            if any(math.isnan(v) for v in values):
                raise ValueError(f'{field_name} contains NaN: {values!r}')
        if bool(self.joint_lower_limits) != bool(self.joint_upper_limits):
            raise ValueError('joint_lower_limits and joint_upper_limits must both be set '
                             'or both be empty')
        for name, low, high in zip(self.joint_names, self.lower_limits(), self.upper_limits()):
            if low > high:
                raise ValueError(
                    f"joint '{name}' lower limit {low} is above its upper limit {high}")

    def _validate_timing(self):
        _require_range('fps', self.fps, 0.0, 1000.0, low_open=True)
        _require_range('interpolation_multiplier', self.interpolation_multiplier, 1, 100)
        _require_range('action_offset', self.action_offset, 0, 1000)
        _require_range('refill_seconds', self.refill_seconds, 0.0, 3600.0)
        _require_range('request_timeout_s', self.request_timeout_s, 0.0, 3600.0, low_open=True)
        _require_range('starvation_grace_s', self.starvation_grace_s, 0.0, 3600.0,
                       low_open=True)
        _require_range('capture_tolerance_s', self.capture_tolerance_s, 0.0, 1.0)
        _require_range('step_period_tolerance', self.step_period_tolerance, 0.0, 0.5)
        _require_range('max_requests_in_flight', self.max_requests_in_flight, 1,
                       MAX_REQUESTS_IN_FLIGHT)
        if self.synchronous and self.max_requests_in_flight != 1:
            raise ValueError(f'max_requests_in_flight = {self.max_requests_in_flight} needs '
                             'synchronous false (the synchronous loop waits for each chunk)')

    def _validate_merge(self):
        if self.chunk_merge not in CHUNK_MERGES:
            raise ValueError(
                f'chunk_merge must be one of {", ".join(CHUNK_MERGES)}, '
                f'got {self.chunk_merge!r}')
        _require_range('ensemble_coeff', self.ensemble_coeff, -10.0, 10.0)
        _require_range('blend_steps', self.blend_steps, 0, 10000)
        _require_range('blend_weight', self.blend_weight, 0.0, 1.0)
        if self.blend_steps > 0 and self.chunk_merge not in ('aligned', 'rtc'):
            raise ValueError(
                f'blend_steps = {self.blend_steps} needs chunk_merge aligned or rtc, got '
                f"'{self.chunk_merge}' (append has no overlap; ensemble already averages)")
        for name in self.blend_components:
            if name not in self.joint_names:
                raise ValueError(f"blend_components names joint '{name}', which is not in "
                                 f'joint_names {self.joint_names!r}')

    def _validate_motion(self):
        if not self.max_step_rad > 0.0:
            raise ValueError(f'max_step_rad must be > 0 (inf disables), got {self.max_step_rad}')
        _require_range('return_speed_rad_s', self.return_speed_rad_s, 0.0, 100.0,
                       low_open=True)


def _as_tuple(name, value, item_type):
    if isinstance(value, str) or not hasattr(value, '__iter__'):
        raise ValueError(f'{name} must be a list, got {value!r}')
    items = tuple(value)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, item_type):
            raise ValueError(f'{name} contains {item!r}, which is not a valid entry')
    return items


def _as_float(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'{name} must be a number, got {value!r}')
    value = float(value)
    if math.isnan(value):
        raise ValueError(f'{name} must be a number, got nan')
    return value


def _require_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'{name} must be an integer, got {value!r}')


def _require_range(name, value, low, high, low_open=False):
    too_low = value <= low if low_open else value < low
    if too_low or value > high or not math.isfinite(value):
        low_bracket = '(' if low_open else '['
        raise ValueError(f'{name} must be in {low_bracket}{low}, {high}], got {value!r}')


@dataclass(frozen=True)
class NodeSettings:
    """The executor node's own settings (its parameters beyond ExecutorConfig's fields).

    Invalid values raise ValueError naming the parameter. ``expected_features`` empty means
    any (the parameter's ``[any]``).
    """

    # Deployment name and action semantics the policy server must declare.
    deployment: str = 'so101'
    semantics: str = 'si-radians-v1'
    # Observation feature names the server must consume; empty: any.
    expected_features: tuple[str, ...] = ()
    # Language instruction sent with every request (live).
    task: str = ''
    # Message type of joint_commands, one of OUTPUT_FORMATS.
    output_format: str = 'joint_state'
    # Refuse to move unless hardware/info declares position hold.
    require_position_hold: bool = True
    # Start motion right after admission (otherwise executor/start).
    autostart: bool = False
    # Fault when admission cannot finish within this long [s] (live).
    admission_timeout_s: float = 30.0
    # The server counts as lost when policy/chunk is silent this long [s]; equal to the server's.
    presence_lease_s: float = PRESENCE_LEASE_S

    def __post_init__(self):
        """Normalise expected_features to a tuple (``[any]``: empty) and validate."""
        features = _as_tuple('expected_features', self.expected_features, str)
        object.__setattr__(self, 'expected_features', () if features == ('any',) else features)
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"parameter 'output_format' is {self.output_format!r}; "
                             f'expected one of {", ".join(OUTPUT_FORMATS)}')
        object.__setattr__(self, 'admission_timeout_s',
                           _as_float('admission_timeout_s', self.admission_timeout_s))
        _require_range('admission_timeout_s', self.admission_timeout_s, 0.0, 86400.0,
                       low_open=True)
        object.__setattr__(self, 'presence_lease_s',
                           _as_float('presence_lease_s', self.presence_lease_s))
        _require_range('presence_lease_s', self.presence_lease_s, 0.0, 3600.0, low_open=True)
