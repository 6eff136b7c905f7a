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
A human on the leader arm over real DDS: the leader_arm node on an emulated bus drives the
executor's follower.

Processes: the servo bus emulator as the leader (its shafts moved by a scripted trajectory
through the emulator's control interface), the installed ``leader_arm`` console script on it,
and the executor with the scripted server and the kinematic arm of test_executor_node.py.
The test switches who drives with ``executor/set_driver`` and reads the commands the arm
applied and the executor's status. A second test puts the follower on a second emulated bus
too (the installed ``hardware_interface``, Feetech): leader bus to follower bus through DDS.
Counts, states, orderings and stamps; no speed asserted.
"""

from emulator import EmulatorProcess
from node_fixtures import (
    ArmWatch, commands, EXECUTOR, IDS, params, SHAFTS, start_system, ticks, Watch)
from robot_fixtures import EXAMPLE, PATIENT_MS
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool

from remote_inference_py.common.service_call import RETRY_S
from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos
from remote_inference_py.transport.values import stamp_ns

MAX_STEP = 0.5   # node_fixtures.EXECUTOR's max_step_rad
LEADER = {'calibration_file': EXAMPLE, 'follower_calibration_file': EXAMPLE,
          'latency_timer_ms': PATIENT_MS}
CAL = Calibration.load(EXAMPLE)


def leader_radians(ticks):
    return [CAL.ticks_to_radians(name, t) for name, t in zip(SO101_JOINT_NAMES, ticks)]


def mid(offset=0):
    """Leader shaft ticks (present frame) near each joint's mid-range, shoulder_pan moved."""
    ticks = [int(round(CAL[name].mid)) for name in SO101_JOINT_NAMES]
    ticks[0] += offset
    return ticks


def move_leader(emulator, ticks):
    for name, value in zip(SO101_JOINT_NAMES, ticks):
        emulator.set(IDS[name], 'Present_Position', value)


def calibrated(emulator, spinner):
    """Wait until the leader node has written every motor's homing offset.

    Writing one shifts that motor's present position: a shaft the test moved before its
    offset was written reads elsewhere afterwards.
    """
    spinner.until(lambda: all(emulator.get(IDS[name], 'Homing_Offset') == CAL[name].homing_offset
                              for name in SO101_JOINT_NAMES), 20, 'the leader calibration written')


def request_stamp(msg):
    return stamp_ns(msg.header.stamp)


def test_the_human_drives_rate_limited_faults_hold_and_the_hand_back_needs_a_fresh_capture(
        emulator, processes, ros):
    node, spinner = ros
    leader_proc = processes.console_script(
        'leader_arm', params={'port': emulator.port, **LEADER}, node_name='leader_arm')
    faults, leader_states = [], []
    node.create_subscription(String, 'leader/fault', lambda m: faults.append(m.data),
                             qos.LATCHED)
    node.create_subscription(JointState, 'leader/joint_states', leader_states.append,
                             qos.JOINT_STATES)
    watch, arm, server, executor = start_system(
        processes, ros, server={'delay_s': 0.05},
        executor={'catch_up_speed_rad_s': 2.0, 'leader_timeout_s': 0.5})
    calibrated(emulator, spinner)
    move_leader(emulator, mid())
    spinner.until(lambda: watch.state() == 'RUNNING', 20, 'executor RUNNING')
    spinner.until(lambda: leader_states, 10, 'leader/joint_states')
    assert {emulator.get(i, 'Torque_Enable') for i in IDS.values()} == {0}
    set_driver = node.create_client(SetBool, 'executor/set_driver')

    # policy -> human: the arm goes to the leader, never by more than max_step_rad a tick.
    before = len(commands(arm))
    reply = spinner.call(set_driver, SetBool.Request(data=True), retry_s=RETRY_S)
    assert reply.success, reply.message
    handed = node.get_clock().now().nanoseconds
    spinner.until(lambda: watch.last.driver == 'human', 5, 'status driver human')
    goal = leader_radians(mid(300))   # the scripted human: shoulder_pan +26 degrees
    move_leader(emulator, mid(300))
    spinner.until(lambda: commands(arm) and abs(commands(arm)[-1][1][0] - goal[0]) < 1e-6,
                  15, 'the follower at the leader')
    followed = [values for _, values in commands(arm)[before:]]
    steps = [max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(followed, followed[1:])]
    assert max(steps) <= MAX_STEP + 1e-9, 'a jump while following the leader'
    for joint in range(6):
        assert abs(followed[-1][joint] - goal[joint]) < 1e-6, SO101_JOINT_NAMES[joint]
    spinner.spin_for(0.5)
    assert not [r for r in watch.requests if request_stamp(r) > handed + 10**8], \
        'requests sent while the human drives'

    # A silent leader motor: named on leader/fault and in the status; the follower holds.
    emulator.inject_fault(3, 'no_reply')
    spinner.until(lambda: faults and faults[-1].startswith('leader motor silent'), 10,
                  'leader/fault names the silent motor')
    spinner.until(lambda: watch.last.leader_fault.startswith('leader fault: leader motor '
                                                             'silent'), 5, 'status names it')
    move_leader(emulator, mid(-300))   # the human moves on: not followed during the fault
    held_from = len(commands(arm))
    spinner.spin_for(1.0)
    held = {tuple(values) for _, values in commands(arm)[held_from:]}
    assert len(held) == 1 and abs(next(iter(held))[0] - goal[0]) < 1e-6, 'did not hold'
    assert 'leader motor silent' in leader_proc.output()

    # human -> policy: motion resumes only from a chunk on a capture after the hand-back.
    emulator.clear_faults()
    spinner.until(lambda: faults[-1] == '', 10, 'leader healthy again')
    reply = spinner.call(set_driver, SetBool.Request(data=False), retry_s=RETRY_S)
    assert reply.success and 'fresh capture' in reply.message, reply.message
    back = node.get_clock().now().nanoseconds
    spinner.until(lambda: watch.last.driver == 'policy' and watch.state() == 'RUNNING', 10,
                  'the policy drives again')
    after = [r for r in watch.requests if request_stamp(r) >= back - 10**8]
    assert after, 'no request after the hand-back'
    first = after[0].earliest_capture_stamp
    assert stamp_ns(first) >= back - 10**8   # a capture after the hand-back
    assert executor.stop() == 0


def test_the_follower_on_its_own_emulated_bus_follows_the_leader_on_another(
        emulator, processes, ros):
    """
    Two buses, as on a bench: the leader on one emulated bus (``leader_arm``), the follower
    on another (``hardware_interface``, Feetech). The human drives from the start
    (``driver: human``): the follower's servos get Goal_Position writes that reach the
    leader's shaft, one rate-limited step at a time, and its torque is off once stopped.
    """
    node, spinner = ros
    with EmulatorProcess(positions=SHAFTS, speed=4000.0) as follower_bus:
        arm = ArmWatch(node)
        hardware = processes.console_script('hardware_interface', node_name='hardware_interface',
                                            params=params(follower_bus))
        processes.console_script('leader_arm', params={'port': emulator.port, **LEADER},
                                 node_name='leader_arm')
        calibrated(emulator, spinner)
        move_leader(emulator, mid())
        watch = Watch(node, requests=False)
        processes.peer('scripted_server.py', params={'delay_s': 0.05},
                       node_name='scripted_server')
        executor = processes.console_script('executor', node_name='executor', params={
            **EXECUTOR, 'driver': 'human', 'catch_up_speed_rad_s': 2.0,
            'leader_timeout_s': 0.5})
        spinner.until(lambda: arm.state() == 'active', 20, 'the follower active')
        spinner.until(lambda: watch.last and watch.last.driver == 'human', 30,
                      'the human driving')
        move_leader(emulator, mid(300))   # the scripted human: shoulder_pan +26 degrees
        target = mid(300)[0]   # one calibration for both arms: the same present ticks
        spinner.until(lambda: abs(follower_bus.get(1, 'Goal_Position') - target) <= 1, 20,
                      "the follower's goal at the leader's shaft")
        spinner.until(lambda: abs(ticks(follower_bus)['shoulder_pan'] - target) <= 2, 10,
                      "the follower's shaft at the leader's")
        applied = [m.position for m in arm.applied]
        steps = [max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(applied, applied[1:])]
        assert steps and max(steps) <= MAX_STEP + 1e-6, 'a jump while following the leader'
        assert executor.stop() == 0
        assert hardware.stop() == 0
        assert {follower_bus.get(i, 'Torque_Enable') for i in IDS.values()} == {0}
