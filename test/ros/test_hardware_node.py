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
The hardware interface node driving Feetech servos: real DDS, real protocol bytes.

Each test starts the servo bus emulator (its own process, on a pseudo-terminal) and the
installed ``hardware_interface`` console script with the emulator's tty as ``port``, then
talks to the node over DDS and reads the servos' registers through the emulator's control
interface. Deadlines only bound waiting; no assertion is about speed.
"""

import math
import signal

from emulator import EmulatorProcess
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from node_fixtures import (
    ArmWatch, at_rest, CALIBRATION, JOINTS, params, radians, send, set_parameter, start_arm,
    ticks)
import numpy as np
import pytest
from std_srvs.srv import Trigger

from remote_inference_py.common.service_call import RETRY_S
from remote_inference_py.transport.values import stamp_ns

TICK = 2 * math.pi / 4095


def test_joint_states_are_calibrated_radians_and_commands_reach_the_servos(
        emulator, processes, ros, transport):
    node, spinner = ros
    watch, proc, commands = start_arm(processes, ros, emulator)
    assert ('transport: plain rclpy messages' in proc.output()) == (transport == 'plain')
    info = watch.info[-1]
    assert (info.backend, info.position_hold, info.torque_enabled) == ('feetech', True, True)
    limits = [CALIBRATION.radian_limits(name) for name in JOINTS]
    assert list(info.lower_limits) == pytest.approx([low for low, _ in limits])
    assert list(info.upper_limits) == pytest.approx([high for _, high in limits])
    assert emulator.get(1, 'Homing_Offset') == -1195, 'calibration file not written'
    # joint_states: the servos' ticks through the calibration, in radians, stamped now.
    rest = at_rest(ros, emulator)
    count = len(watch.states)
    spinner.until(lambda: len(watch.states) > count + 2, 5, 'fresh joint_states')
    measured = watch.by_name()
    for name in JOINTS:
        assert measured[name] == pytest.approx(radians(name, rest[name]), abs=1e-9), name
    stamp = watch.states[-1].header.stamp
    now = node.get_clock().now().nanoseconds * 1e-9
    assert abs(now - stamp_ns(stamp) * 1e-9) < 1.0

    # A small step is applied exactly (nearest tick) and echoed on applied_command.
    target = dict(measured, shoulder_pan=measured['shoulder_pan'] + 0.2)
    send(commands, target)
    spinner.until(lambda: watch.applied, 5, 'applied_command')
    expected = CALIBRATION.radians_to_ticks('shoulder_pan', target['shoulder_pan'])
    assert emulator.get(1, 'Goal_Position') == expected
    assert watch.by_name(watch.applied[-1])['shoulder_pan'] == pytest.approx(
        radians('shoulder_pan', expected))

    # A far step is clamped to max_relative_target (0.35 rad) around the measured position.
    rest = at_rest(ros, emulator)
    spinner.spin_for(0.1)
    measured = {name: radians(name, rest[name]) for name in JOINTS}
    send(commands, dict(measured, elbow_flex=measured['elbow_flex'] + 1.0))
    spinner.until(lambda: len(watch.applied) >= 2, 5, 'second applied_command')
    applied = watch.by_name(watch.applied[-1])['elbow_flex']
    assert applied == pytest.approx(measured['elbow_flex'] + 0.35, abs=TICK)
    assert emulator.get(3, 'Goal_Position') == pytest.approx(
        CALIBRATION.radians_to_ticks('elbow_flex', measured['elbow_flex'] + 0.35), abs=1)

    # Live: without the relative clamp, a target just beyond the upper limit is clamped to it.
    result = set_parameter(ros, 'hardware_interface', 'max_relative_target', 0.0)
    assert result.successful, result.reason
    send(commands, dict(measured, shoulder_pan=limits[0][1] + 0.1))
    spinner.until(lambda: len(watch.applied) >= 3, 5, 'third applied_command')
    assert emulator.get(1, 'Goal_Position') == CALIBRATION['shoulder_pan'].range_max
    # structural: read-only
    assert not set_parameter(ros, 'hardware_interface', 'publish_rate_hz', 10.0).successful
    assert proc.stop() == 0
    assert set(ticks(emulator, 'Torque_Enable').values()) == {0}


def test_bad_commands_are_rejected_by_name_and_the_arm_keeps_its_target(
        emulator, processes, ros):
    node, spinner = ros
    watch, proc, commands = start_arm(processes, ros, emulator)
    rest = at_rest(ros, emulator)
    measured = {name: radians(name, rest[name]) for name in JOINTS}
    send(commands, measured)
    spinner.until(lambda: watch.applied, 5, 'applied_command')
    goals = ticks(emulator, 'Goal_Position')
    upper = CALIBRATION.radian_limits('gripper')[1]
    bad = [
        ({**measured, 'elbow': 0.1}, 'unknown_joint', "'elbow'"),
        ({k: v for k, v in measured.items() if k != 'wrist_roll'}, 'missing_joint',
         "'wrist_roll'"),
        (dict(measured, gripper=float('nan')), 'non_finite', "'gripper'"),
        (dict(measured, gripper=upper + 1.0), 'out_of_range', "'gripper'"),
    ]
    for command, reason, named in bad:
        count = len(watch.info)
        send(commands, command)
        # Any info since the command: the watchdog's hold (no valid command for 0.3 s) may
        # replace the rejection in the next info before this process has read it.
        spinner.until(lambda: any(reason in info.message for info in watch.info[count:]), 5,
                      f'hardware/info naming {reason}')
        assert any(named in info.message for info in watch.info[count:] if reason in
                   info.message)
    assert len(watch.applied) == 1
    assert ticks(emulator, 'Goal_Position') == goals
    assert watch.state() == 'active'
    # The watchdog: commands stopped, the node holds the last applied target (logged once).
    proc.wait_for_output('no command for 0.30 s: holding the last applied target', 5)
    assert ticks(emulator, 'Goal_Position') == goals
    output = proc.output()
    assert 'command rejected (non_finite' in output and 'gripper' in output
    assert output.count('holding the last applied target') == 1
    assert proc.stop() == 0


def test_torque_services_and_torque_off_after_the_shutdown_grace(emulator, processes, ros):
    node, spinner = ros
    watch, proc, commands = start_arm(processes, ros, emulator)
    # Relative names resolve in the node's namespace (the root here).
    disable = node.create_client(Trigger, 'hardware/disable_torque')
    enable = node.create_client(Trigger, 'hardware/enable_torque')
    response = spinner.call(disable, Trigger.Request(), retry_s=RETRY_S)
    assert response.success, response.message
    assert set(ticks(emulator, 'Torque_Enable').values()) == {0}
    spinner.until(lambda: not watch.info[-1].torque_enabled, 5, 'torque off in hardware/info')
    assert not watch.info[-1].position_hold
    rest = at_rest(ros, emulator)
    measured = {name: radians(name, rest[name]) for name in JOINTS}
    send(commands, measured)
    spinner.until(lambda: 'torque_off' in watch.message(), 5, 'torque_off rejection')
    emulator.set(2, 'Present_Position', 2100)   # moved by hand while limp
    response = spinner.call(enable, Trigger.Request(), retry_s=RETRY_S)
    assert response.success, response.message
    assert set(ticks(emulator, 'Torque_Enable').values()) == {1}
    assert emulator.get(2, 'Goal_Position') == 2100, 'torque on must hold the present pose'
    spinner.until(lambda: watch.info[-1].position_hold, 5, 'position hold again')

    # SIGINT: commands still apply during the grace (the executor returns the arm meanwhile),
    # then the node holds and disconnects with torque off.
    proc.proc.send_signal(signal.SIGINT)
    spinner.until(lambda: watch.state() == 'shutting_down', 5, 'shutting_down')
    target = dict(measured, shoulder_pan=measured['shoulder_pan'] - 0.1)
    send(commands, target)
    spinner.until(lambda: watch.applied, 5, 'a command applied while stopping')
    assert emulator.get(1, 'Goal_Position') == CALIBRATION.radians_to_ticks(
        'shoulder_pan', target['shoulder_pan'])
    assert proc.wait(10) == 0
    assert set(ticks(emulator, 'Torque_Enable').values()) == {0}
    assert 'closing the feetech backend with torque off' in proc.log_path.read_text()


def test_a_servo_that_stops_answering_faults_the_node(emulator, processes, ros):
    node, spinner = ros
    watch, proc, commands = start_arm(processes, ros, emulator, bus_retries=1)
    emulator.inject_fault(3, 'no_reply')
    spinner.until(lambda: watch.state() == 'fault', 10, 'state fault in hardware/info')
    message = watch.message()
    assert "'elbow_flex'" in message and 'id 3' in message and 'no reply' in message
    assert not watch.info[-1].position_hold
    assert set(ticks(emulator, 'Torque_Enable').values()) == {1}, 'holds by default'
    send(commands, watch.by_name())
    spinner.until(lambda: 'rejected (fault)' in watch.message(), 5, 'fault rejection')
    assert proc.stop() == 1
    # Torque off still reaches every servo (broadcast), even the one whose replies are lost.
    assert set(ticks(emulator, 'Torque_Enable').values()) == {0}
    log = proc.log_path.read_text()
    assert 'retries' in log or 'timeouts' in log or 'fault' in log


def test_lifecycle_without_autostart(emulator, processes, ros):
    node, spinner = ros
    watch = ArmWatch(node)
    proc = processes.console_script('hardware_interface', node_name='hardware_interface',
                                    params=params(emulator, autostart=False))
    spinner.until(lambda: watch.state() == 'unconfigured', 10, 'unconfigured')
    client = node.create_client(ChangeState, '/hardware_interface/change_state')

    def transition(transition_id, state):
        response = spinner.call(client, ChangeState.Request(
            transition=Transition(id=transition_id)), retry_s=RETRY_S)
        assert response.success
        spinner.until(lambda: watch.state() == state, 5, state)

    transition(Transition.TRANSITION_CONFIGURE, 'inactive')
    spinner.until(lambda: watch.states, 5, 'joint_states while inactive')
    assert set(ticks(emulator, 'Torque_Enable').values()) == {0}
    assert not watch.info[-1].position_hold
    transition(Transition.TRANSITION_ACTIVATE, 'active')
    assert set(ticks(emulator, 'Torque_Enable').values()) == {1}
    assert watch.info[-1].position_hold
    transition(Transition.TRANSITION_DEACTIVATE, 'inactive')
    assert set(ticks(emulator, 'Torque_Enable').values()) == {1}, 'deactivate holds'
    transition(Transition.TRANSITION_CLEANUP, 'unconfigured')
    assert set(ticks(emulator, 'Torque_Enable').values()) == {0}
    assert proc.stop() == 0


@pytest.mark.parametrize('overrides, named', [
    ({'port': ''}, "parameter 'port' is empty"),
    ({'port': '/dev/does-not-exist-ttyACM7'}, "'/dev/does-not-exist-ttyACM7'"),
    ({'backend': 'dynamixel'}, "parameter 'backend' is 'dynamixel'"),
    ({'motor_ids': [1, 2, 3, 4, 5, 9]}, "joint 'gripper': motor id 9 differs"),
])
def test_configuration_errors_exit_2_naming_the_cause(emulator, processes, ros, overrides,
                                                      named):
    proc = processes.console_script('hardware_interface', node_name='hardware_interface',
                                    params=params(emulator, **overrides))
    assert proc.wait(20) == 2
    output = proc.log_path.read_text()
    assert named in output, output
    assert 'cannot start' in output


def test_a_missing_motor_is_named_and_nothing_moves(processes, ros):
    with EmulatorProcess(motors=(1, 2, 3, 4, 5)) as emulator:
        proc = processes.console_script(
            'hardware_interface', node_name='hardware_interface',
            params={'backend': 'feetech', 'port': emulator.port, 'latency_timer_ms': 2.0})
        assert proc.wait(20) == 2
        output = proc.log_path.read_text()
        assert "motor 'gripper' (id 6) did not answer a ping" in output, output
        assert emulator.port in output
        assert set(emulator.get(i, 'Torque_Enable') for i in range(1, 6)) == {0}
        assert np.all(np.array([emulator.get(i, 'Goal_Position') for i in range(1, 6)]) == 2048)
