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

"""The hardware interface's command validation, clamps, watchdog and shutdown timing (no ROS)."""

from hypothesis import given
from hypothesis import strategies as st
import numpy as np
import pytest

from remote_inference_py.hardware.commands import (
    CommandGate, CommandLimits, CommandRejected, CommandWatchdog, ShutdownTimer)

NAMES = ('a', 'b', 'c')
LIMITS = CommandLimits(joint_names=NAMES, lower=(-1.0, -2.0, 0.0), upper=(1.0, 2.0, 1.5),
                       max_relative_target=0.3, limit_tolerance=0.2)


def test_by_name_reorders_to_joint_order():
    gate = CommandGate(LIMITS)
    target = gate.from_names(['c', 'a', 'b'], [0.5, 0.1, -0.2])
    assert target.tolist() == [0.1, -0.2, 0.5]
    assert gate.from_array([0.1, 0.2, 0.3]).tolist() == [0.1, 0.2, 0.3]


@pytest.mark.parametrize('names, positions, reason, named', [
    (['a', 'b', 'x'], [0, 0, 0], 'unknown_joint', "'x'"),
    (['a', 'b'], [0, 0], 'missing_joint', "'c'"),
    (['a', 'a', 'b', 'c'], [0, 0, 0, 0], 'duplicate_joint', "'a'"),
    (['a', 'b', 'c'], [0, 0], 'wrong_length', '3 names but 2 positions'),
    (['a', 'b', 'c'], [0, float('nan'), 0], 'non_finite', "'b'"),
    (['a', 'b', 'c'], [0, 0, float('inf')], 'non_finite', "'c'"),
    (['a', 'b', 'c'], [1.25, 0, 0], 'out_of_range', "'a'"),
    (['a', 'b', 'c'], [0, 0, -0.3], 'out_of_range', "'c'"),
])
def test_bad_commands_are_rejected_with_a_named_reason(names, positions, reason, named):
    with pytest.raises(CommandRejected) as raised:
        CommandGate(LIMITS).from_names(names, positions)
    assert raised.value.reason == reason
    assert named in str(raised.value)


def test_ordered_commands_check_length_and_values():
    gate = CommandGate(LIMITS)
    with pytest.raises(CommandRejected, match='2 values for 3 joints') as raised:
        gate.from_array([0.0, 0.0])
    assert raised.value.reason == 'wrong_length'
    with pytest.raises(CommandRejected, match="joint 'c' has a non-finite"):
        gate.from_array([0.0, 0.0, float('nan')])


def test_limits_clamp_within_the_tolerance_and_relative_clamp_follows_measured():
    gate = CommandGate(LIMITS)
    target = gate.from_names(NAMES, [1.15, 0.0, 0.2])   # a: 0.15 beyond its limit: clamped
    clamped = gate.clamp(target, measured=np.array([0.9, 0.5, 0.2]))
    assert clamped.target.tolist() == pytest.approx([1.0, 0.2, 0.2])
    assert clamped.limited_joints == ('a',)
    assert clamped.relative_joints == ('b',)
    assert clamped.clamped


def test_limits_win_over_the_relative_clamp_when_measured_is_outside():
    gate = CommandGate(LIMITS)
    clamped = gate.clamp(np.array([0.0, 0.0, 0.5]), measured=np.array([1.5, 0.0, 0.5]))
    assert clamped.target[0] == pytest.approx(1.0)


def test_relative_clamp_off_and_unmeasured():
    limits = CommandLimits(NAMES, LIMITS.lower, LIMITS.upper, max_relative_target=0.0)
    clamped = CommandGate(limits).clamp(np.array([0.9, -1.9, 1.4]), np.zeros(3))
    assert not clamped.clamped
    assert not CommandGate(LIMITS).clamp(np.array([0.9, 0.0, 0.1]), None).clamped


@given(st.lists(st.floats(-3, 3), min_size=3, max_size=3),
       st.lists(st.floats(-3, 3), min_size=3, max_size=3))
def test_clamped_targets_always_respect_the_limits(target, measured):
    clamped = CommandGate(LIMITS).clamp(np.array(target), np.array(measured)).target
    assert np.all(clamped >= np.array(LIMITS.lower)) and np.all(clamped <= np.array(LIMITS.upper))
    inside = np.all(np.abs(np.array(measured)) <= 0.5)  # measured within every joint's limits
    if inside and LIMITS.lower[2] <= measured[2]:
        assert np.all(np.abs(clamped - np.array(measured)) <= 0.3 + 1e-12)


@pytest.mark.parametrize('kwargs, message', [
    ({'lower': (0.0, 0.0)}, '2 lower limits for 3 joints'),
    ({'upper': (1.0, 2.0, -1.0)}, "joint 'c': limits"),
    ({'max_relative_target': -1.0}, 'max_relative_target'),
    ({'joint_names': ('a', 'a', 'b')}, "joint 'a' appears twice"),
])
def test_limits_validation_names_the_field(kwargs, message):
    fields = dict(joint_names=NAMES, lower=LIMITS.lower, upper=LIMITS.upper)
    fields.update(kwargs)
    with pytest.raises(ValueError, match=message):
        CommandLimits(**fields)


def test_watchdog_trips_once_after_silence_and_rearms_on_a_command():
    watchdog = CommandWatchdog(0.5)
    assert not watchdog.check(100.0)          # not armed before the first command
    assert not watchdog.on_command(0.0)
    assert not watchdog.check(0.4)
    assert watchdog.check(0.5)
    assert watchdog.holding
    assert not watchdog.check(5.0)            # logged once per hold
    assert watchdog.on_command(6.0)           # resumed
    assert not watchdog.holding
    assert watchdog.check(6.6) and watchdog.trips == 2
    watchdog.reset()
    assert not watchdog.check(100.0)
    with pytest.raises(ValueError):
        CommandWatchdog(0.0)


def test_shutdown_timer_waits_for_quiet_or_the_grace():
    timer = ShutdownTimer(started=10.0, grace_s=3.0, quiet_s=0.5)
    assert not timer.done(10.2, last_command=9.0)   # quiet counts from the stop at the latest
    assert timer.done(10.5, last_command=9.0)
    assert not timer.done(11.0, last_command=10.8)  # commands still arriving
    assert timer.done(11.3, last_command=10.8)
    assert timer.done(13.0, last_command=12.99)     # the grace ends it regardless
    assert ShutdownTimer(0.0, grace_s=0.0, quiet_s=0.5).done(0.0, None)
