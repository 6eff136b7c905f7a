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

"""The parts of the hardware runner alone: report, command safety, the slot, the lifecycle.

The lifecycle drives the MuJoCo arm without cameras, in this thread (no worker thread).
"""

import time

import numpy as np
import pytest

from remote_inference_py.hardware.backend import BackendFault
from remote_inference_py.hardware.commands import CommandLimits, CommandRejected
from remote_inference_py.hardware.lifecycle import CommandSlot, Lifecycle
from remote_inference_py.hardware.report import RunnerReport, Throttle
from remote_inference_py.hardware.runner import RunnerSettings, RunnerSink
from remote_inference_py.hardware.safety import CommandSafety
from remote_inference_py.hardware.sim import SimConfig
from remote_inference_py.hardware.sim_backend import SimBackend
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = tuple(SO101_JOINT_NAMES)


class Sink(RunnerSink):
    def __init__(self):
        self.statuses, self.finished = 0, 0

    def on_status(self):
        self.statuses += 1

    def on_finished(self):
        self.finished += 1


def limits(max_relative_target=0.0):
    return CommandLimits(JOINTS, (-1.0,) * 6, (1.0,) * 6,
                         max_relative_target=max_relative_target)


# ---------------------------------------------------------------------------- RunnerReport

def test_the_sink_hears_of_a_message_only_when_it_changes_and_a_rejection_is_counted():
    sink = Sink()
    report = RunnerReport(sink.on_status)
    report.set_message('read failed')
    report.set_message('read failed')
    assert sink.statuses == 1
    report.reject(CommandRejected('torque_off', 'torque is off'))
    assert report.rejected['torque_off'] == 1 and sink.statuses == 2
    assert report.message == 'command rejected (torque_off): torque is off'
    report.counters['reads'] += 3
    assert report.summary(SimBackend(SimConfig(joint_names=JOINTS, render=False))) == \
        'reads=3; rejected: torque_off=1'
    assert RunnerReport().summary(SimBackend(SimConfig(joint_names=JOINTS))) == 'none'


def test_the_throttle_lets_one_message_per_key_through_per_period():
    throttle = Throttle(1.0)
    assert throttle.ready('read', 10.0) and throttle.ready('write', 10.5)
    assert not throttle.ready('read', 10.999)          # just inside the period
    assert throttle.ready('read', 11.0)                # at its end
    assert not throttle.ready('write', 11.0)


# ---------------------------------------------------------------------------- CommandSafety

def test_a_valid_command_is_refused_by_name_until_the_driver_may_take_it():
    safety = CommandSafety(limits(max_relative_target=0.1), 0.5)
    measured = np.zeros(6)
    for state, torque, seen, reason in [
            ('fault', True, measured, 'fault'), ('inactive', True, measured, 'not_active'),
            ('finalized', True, measured, 'not_active'), ('active', False, measured,
                                                          'torque_off'),
            ('active', None, measured, 'torque_off'), ('active', True, None, 'no_measurement')]:
        with pytest.raises(CommandRejected) as raised:
            safety.ready(state, 'bus gone', torque, seen)
        assert raised.value.reason == reason, (state, torque)
    with pytest.raises(CommandRejected, match=r'driver in fault \(bus gone\)'):
        safety.ready('fault', 'bus gone', True, measured)
    safety.ready('active', '', True, measured)
    safety.ready('shutting_down', '', True, measured)
    CommandSafety(limits(), 0.5).ready('active', '', True, None)   # no relative clamp


def test_clamps_say_which_joints_they_changed_and_new_limits_apply_from_the_next_command():
    safety = CommandSafety(limits(max_relative_target=0.1), 0.5)
    target = safety.gate.from_array([1.02, 0.5, 0.0, 0.0, 0.0, 0.0])
    clamped = safety.clamp(target, np.zeros(6))
    assert clamped.target[1] == pytest.approx(0.1)
    assert safety.describe(clamped) == (
        'to the joint limits: shoulder_pan; to max_relative_target 0.1 rad around the '
        'measured position: shoulder_pan, shoulder_lift')
    assert safety.describe(safety.clamp(np.zeros(6), np.zeros(6))) == ''
    watchdog = safety.watchdog
    safety.update(limits(max_relative_target=0.3), 0.8)
    assert safety.watchdog is watchdog and watchdog.timeout_s == 0.8
    assert safety.clamp(target, np.zeros(6)).target[1] == pytest.approx(0.3)


# ---------------------------------------------------------------------------- CommandSlot

def test_the_newest_command_wins_and_a_stop_is_taken_once():
    report = RunnerReport()
    slot = CommandSlot(report)
    assert slot.wait(0.0, time.monotonic) == (False, None)     # nothing, past its deadline
    slot.put(np.zeros(6), 1.0)
    slot.put(np.ones(6), 2.0)
    quit_now, target = slot.wait(time.monotonic() + 5.0, time.monotonic)
    assert not quit_now and target.tolist() == [1.0] * 6 and slot.last_arrival == 2.0
    assert report.counters['commands_superseded'] == 1
    slot.request_shutdown('SIGINT')
    slot.request_shutdown('SIGTERM')
    started = time.monotonic()
    assert slot.wait(started + 5.0, time.monotonic) == (False, None)
    assert time.monotonic() - started < 1.0                    # a stop ends the wait
    assert slot.take_shutdown() == 'SIGINT' and slot.take_shutdown() is None
    slot.put(np.zeros(6), 3.0)
    slot.request_quit()
    assert slot.wait(time.monotonic() + 5.0, time.monotonic) == (True, None)


# ---------------------------------------------------------------------------- Lifecycle

def lifecycle(settings=RunnerSettings(), open_backend=True):
    backend = SimBackend(SimConfig(joint_names=JOINTS, render=False))
    if open_backend:
        backend.open()
    sink, report = Sink(), RunnerReport()
    safety = CommandSafety(limits(), settings.command_timeout_s)
    slot = CommandSlot(report)
    return Lifecycle(backend, settings, sink, report, slot, safety.watchdog), backend, sink


def test_activation_powers_the_arm_and_drops_a_command_validated_before_it():
    states, backend, sink = lifecycle()
    try:
        states.slot.put(np.zeros(6), 0.0)
        states.activate()
        assert states.state == 'active' and backend.torque_enabled is True
        assert states.slot.wait(0.0, time.monotonic) == (False, None)
        states.deactivate()
        assert states.state == 'inactive' and backend.torque_enabled is True
        assert sink.statuses == 2
    finally:
        assert states.close_backend(True) == ''
    assert states.state == 'finalized' and states.close_backend(True) == ''


def test_a_fault_refuses_activation_and_can_switch_torque_off():
    states, backend, sink = lifecycle(open_backend=False)
    with pytest.raises(BackendFault, match='the simulation is not running'):
        states.activate()
    assert states.state == 'fault' and states.faulted
    assert states.report.message == 'fault: the simulation is not running'
    with pytest.raises(BackendFault, match='cannot activate in fault: fault: the simulation'):
        states.activate()
    with pytest.raises(BackendFault, match='cannot enable torque in state fault'):
        states.set_torque(True)
    states, backend, sink = lifecycle(RunnerSettings(disable_torque_on_fault=True))
    try:
        states.activate()
        states.fault('servo 5 silent')
        assert states.state == 'fault' and backend.torque_enabled is False
        states.fault('again')                                   # once only
        assert states.report.message == 'fault: servo 5 silent'
    finally:
        states.close_backend(True)


def test_a_shutdown_applies_commands_until_quiet_then_closes_with_torque_off():
    states, backend, sink = lifecycle(RunnerSettings(shutdown_grace_s=2.0,
                                                     shutdown_quiet_s=0.5))
    states.activate()
    assert not states.stopping_done(100.0)                     # not stopping yet
    assert states.begin_stopping(100.0, 'SIGINT') is True
    assert states.state == 'shutting_down'
    states.slot.put(np.zeros(6), 100.4)
    assert not states.stopping_done(100.89)                    # just inside the quiet
    assert states.stopping_done(100.9)
    states.slot.put(np.zeros(6), 101.8)
    assert not states.stopping_done(101.99) and states.stopping_done(102.0)   # the grace
    states.finish_stopping()
    assert states.state == 'finalized' and sink.finished == 1 and backend.sim is None
    inactive, _, sink = lifecycle()
    assert inactive.begin_stopping(0.0, 'SIGTERM') is False    # nothing to wait for
    assert inactive.state == 'finalized' and sink.finished == 1
