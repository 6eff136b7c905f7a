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

"""Hold and the return home alone: feedback health, the hold target, the grace at its edge,
when a return is allowed, and the return path (speed, step limit, exact end)."""

import dataclasses
import math

import numpy as np
import pytest

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.hold import Hold, ReturnHome

JOINTS = ('j1', 'j2')
CONFIG = ExecutorConfig(joint_names=JOINTS, fps=10.0, return_speed_rad_s=0.5,
                        max_step_rad=0.2)


def test_a_non_finite_measurement_is_refused_and_named_once_until_healthy_again():
    hold = Hold(JOINTS)
    assert hold.measure([0.1, 0.2]) == (True, '') and hold.can_start
    assert hold.measure([0.1, math.nan]) == (
        False, "measurement unhealthy: non-finite value for joint 'j2' in the measured pose")
    assert hold.measure([math.inf, 0.0]) == (False, '')   # already unhealthy: no new event
    assert not hold.can_start and hold.measured.tolist() == [0.1, 0.2]   # the last good one
    assert hold.measure([0.3, 0.4]) == (True, 'measurement healthy again')
    assert hold.measurement_failed('driver timeout') == 'measurement unhealthy: driver timeout'
    assert hold.measurement_failed('again') == ''


def test_a_vector_of_the_wrong_length_is_named():
    with pytest.raises(ValueError, match='measured pose has 3 values but joint_names has 2'):
        Hold(JOINTS).measure([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match='applied target has 1 values'):
        Hold(JOINTS).apply([0.0])


def test_the_hold_target_is_the_applied_target_else_the_last_command_else_the_measured_pose():
    hold = Hold(JOINTS)
    hold.measure([0.1, 0.1])
    assert hold.hold_target().tolist() == [0.1, 0.1]
    hold.last_command = np.array([0.2, 0.2])
    assert hold.hold_target().tolist() == [0.2, 0.2]
    assert not hold.apply([0.3, math.nan])   # ignored
    assert hold.hold_target().tolist() == [0.2, 0.2]
    assert hold.apply([0.3, 0.3])
    command = hold.hold_command()
    assert command.tolist() == [0.3, 0.3] and hold.last_command is command
    assert command is not hold.applied   # a copy: later feedback does not change what was sent


def test_the_grace_expires_strictly_after_it():
    hold = Hold(JOINTS)
    assert not hold.grace_expired(100.0, 3.0)   # not waiting
    hold.waiting_since = 1.0
    assert not hold.grace_expired(4.0, 3.0)
    assert hold.grace_expired(4.0 + 1e-9, 3.0)


def test_a_return_needs_the_setting_a_healthy_measurement_working_actuation_and_a_start():
    hold = Hold(JOINTS)
    hold.measure([0.0, 0.0])
    assert not hold.can_return(CONFIG)   # never started
    hold.initial_pose = hold.measured.copy()
    assert hold.can_return(CONFIG)
    assert not hold.can_return(dataclasses.replace(CONFIG, return_to_initial_position=False))
    hold.measurement_failed('x')
    assert not hold.can_return(CONFIG)
    hold.measure([0.0, 0.0])
    hold.actuation_failed = True
    assert not hold.can_return(CONFIG)


def returning(start, goal, config=CONFIG):
    hold = Hold(JOINTS)
    hold.initial_pose = np.array(goal, dtype=float)
    hold.last_command = np.array(start, dtype=float)
    return hold, ReturnHome(False, 'stop requested')


@pytest.mark.parametrize('distance, ticks', [(0.5, 10), (0.5 + 1e-6, 11), (0.05, 1),
                                             (0.0, 1)])
def test_the_return_goes_at_the_return_speed_and_ends_exactly_home(distance, ticks):
    hold, home = returning([distance, distance / 2], [0.0, 0.0])
    commands, arrived, events = [], False, []
    while not arrived:
        command, arrived, event = home.next_command(hold, CONFIG)
        commands.append(command)
        events.append(event)
    assert len(commands) == ticks   # 0.5 rad/s at 10 Hz: 0.05 rad per tick
    assert commands[-1].tolist() == [0.0, 0.0]
    steps = np.diff(np.vstack([[distance, distance / 2]] + commands), axis=0)
    assert np.abs(steps).max() <= 0.05 + 1e-12
    assert events[0].startswith(f'returning to the initial position: {distance:.3f} rad at '
                                f'most, {ticks} ticks') and not any(events[1:])


def test_max_step_rad_caps_the_return_when_it_is_the_tighter_bound():
    config = dataclasses.replace(CONFIG, return_speed_rad_s=10.0, max_step_rad=0.25)
    hold, home = returning([1.0, 0.0], [0.0, 0.0])
    command, arrived, _ = home.next_command(hold, config)
    assert command[0] == pytest.approx(0.75) and not arrived


def test_the_shutdown_messages_name_the_outcome():
    home = ReturnHome(False, 'stop requested')
    assert home.message(arrived=False) == 'stop requested; returning to the initial position'
    assert home.fault('camera lost') == ('fault: camera lost; still returning to the initial '
                                         'position')
    assert home.faulted
    assert home.message(arrived=True) == 'fault: camera lost; returned to the initial position'
