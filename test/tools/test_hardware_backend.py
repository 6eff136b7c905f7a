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

"""The hardware backends and the worker thread, without ROS.

The Feetech backend talks real protocol bytes to the bus emulator process; the runner is
driven with its own thread as in the node. Deadlines only bound waiting.
"""

import logging
import time

from emulator import EmulatorProcess
import numpy as np
import pytest
from robot_fixtures import EXAMPLE, wait_for

from remote_inference_py.hardware import feetech
from remote_inference_py.hardware.backend import (
    BackendError, BackendFault, BackendOpenError, check_limits)
from remote_inference_py.hardware.commands import CommandLimits, CommandRejected
from remote_inference_py.hardware.feetech import FeetechBusConfig
from remote_inference_py.hardware.feetech_backend import (
    backend_error, FeetechBackend, load_calibration)
from remote_inference_py.hardware.runner import HardwareRunner, RunnerSettings, RunnerSink
from remote_inference_py.hardware.sim import SimConfig
from remote_inference_py.hardware.sim_backend import SimBackend
from remote_inference_py.robot.calibration import Calibration, CalibrationError
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = tuple(SO101_JOINT_NAMES)
IDS = (1, 2, 3, 4, 5, 6)
LOGGER = logging.getLogger('test_hardware_backend')


def bus(port, **kwargs):
    return FeetechBusConfig(port, tuple(zip(JOINTS, IDS)), latency_timer_ms=2.0, **kwargs)


class Recorder(RunnerSink):
    def __init__(self):
        self.states, self.applied, self.statuses, self.finished = [], [], 0, False

    def on_joint_state(self, positions, stamp):
        self.states.append((positions, stamp))

    def on_applied(self, target, stamp):
        self.applied.append(target)

    def on_status(self):
        self.statuses += 1

    def on_finished(self):
        self.finished = True


def limits_of(backend, max_relative_target=0.0):
    return CommandLimits(JOINTS, tuple(backend.lower), tuple(backend.upper),
                         max_relative_target=max_relative_target)


def test_calibration_must_name_every_joint_with_its_id():
    assert load_calibration(bus('/dev/x')) == Calibration.default_so101()
    with pytest.raises(CalibrationError, match="joint 'gripper': motor id 9 differs"):
        load_calibration(FeetechBusConfig('/dev/x', tuple(zip(JOINTS, (1, 2, 3, 4, 5, 9)))),
                         EXAMPLE)
    with pytest.raises(CalibrationError, match="joint 'elbow' is not in the calibration"):
        load_calibration(FeetechBusConfig('/dev/x', (('elbow', 3),)), EXAMPLE)


def test_configured_limits_must_lie_in_the_hardware_range():
    low, high = np.full(2, -1.0), np.full(2, 1.0)
    lower, upper = check_limits(('a', 'b'), [-0.5, -1.0], [0.5, 1.0], low, high, 'model')
    assert lower.tolist() == [-0.5, -1.0] and upper.tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match="joint 'b': joint_upper_limits 1.5000 rad is above "
                                         'the model range'):
        check_limits(('a', 'b'), [-0.5, -0.5], [0.5, 1.5], low, high, 'model')
    with pytest.raises(ValueError, match="joint 'a': lower limit 0.5 rad is not below"):
        check_limits(('a', 'b'), [0.5, -0.5], [0.5, 0.5], low, high, 'model')
    with pytest.raises(ValueError, match='joint_lower_limits has 1 values for 2 joints'):
        check_limits(('a', 'b'), [0.0], [0.5, 0.5], low, high, 'model')


def test_feetech_backend_writes_the_calibration_once_and_reads_radians():
    calibration = Calibration.load(EXAMPLE)
    with EmulatorProcess(positions=(850, 3400, 800, 3600, 950, 4000)) as emulator:
        backend = FeetechBackend(bus(emulator.port), EXAMPLE)
        backend.open()
        assert 'wrote the calibration file' in backend.warnings[0]
        assert emulator.get(6, 'Min_Position_Limit') == 2021
        assert backend.upper[0] == pytest.approx(calibration.radian_limits('shoulder_pan')[1])
        measurement = backend.read(time.monotonic())
        assert measurement.positions[0] == pytest.approx(
            calibration.ticks_to_radians('shoulder_pan', emulator.get(1, 'Present_Position')))
        backend.set_torque(True)
        assert backend.torque_enabled is True
        applied = backend.write(measurement.positions + 0.01)
        goal = emulator.get(1, 'Goal_Position')
        assert applied[0] == calibration.ticks_to_radians('shoulder_pan', goal)
        assert abs(applied[0] - measurement.positions[0] - 0.01) <= np.pi / 4095
        assert backend.close(disable_torque=True) == ''
        assert emulator.get(1, 'Torque_Enable') == 0
        assert backend.close(disable_torque=True) == ''   # twice is fine
        again = FeetechBackend(bus(emulator.port), EXAMPLE)
        again.open()
        assert again.warnings == []                           # already calibrated
        again.close(disable_torque=False)


def test_feetech_backend_names_the_port_it_cannot_open():
    backend = FeetechBackend(bus('/dev/does-not-exist-ttyUSB3'))
    with pytest.raises(BackendOpenError, match="'/dev/does-not-exist-ttyUSB3'"):
        backend.open()
    with pytest.raises(BackendFault, match='not open'):
        backend.read(0.0)


# Every error class of the driver and the backend error it becomes during operation.
DRIVER_ERRORS = {
    feetech.BusFaultError: (BackendFault, ('bus faulted on /dev/x', '/dev/x', 'sync read')),
    feetech.ServoTimeoutError: (BackendError, ('no reply', '/dev/x', 'sync read', 'a', 5)),
    feetech.ServoChecksumError: (BackendError, ('bad checksum', '/dev/x', 'sync read')),
    feetech.ServoPortError: (BackendError, ('port gone', '/dev/x', 'sync write')),
    feetech.ServoCommError: (BackendError, ('failed', '/dev/x', 'write Lock')),
    feetech.ServoStatusError: (BackendError, ('overload', {'a': ('overload',)})),
    feetech.TorqueDisableError: (BackendFault, ('torque not confirmed off', ['a'])),
    feetech.MotorNotFoundError: (BackendFault, ('no motor 5', '/dev/x', {'a': 5}, {})),
    feetech.FeetechConnectionError: (BackendFault, ('cannot open /dev/x',)),
    feetech.FeetechError: (BackendFault, ('bus on port /dev/x is not connected',)),
}


def test_every_driver_error_class_has_its_backend_error_pinned():
    classes = {value for value in vars(feetech).values()
               if isinstance(value, type) and issubclass(value, feetech.FeetechError)}
    assert classes == set(DRIVER_ERRORS)


@pytest.mark.parametrize('error_type', list(DRIVER_ERRORS), ids=lambda t: t.__name__)
def test_each_driver_error_becomes_one_backend_error_with_its_message(error_type):
    expected, args = DRIVER_ERRORS[error_type]
    converted = backend_error(error_type(*args))
    assert type(converted) is expected
    assert str(converted) == args[0]


def test_feetech_backend_maps_a_driver_error_alike_in_read_write_and_torque():
    with EmulatorProcess() as emulator:
        backend = FeetechBackend(bus(emulator.port, max_consecutive_failures=100))
        backend.open()
        backend.set_torque(True)
        positions = backend.read(0.0).positions
        emulator.inject_fault(5, 'no_reply')
        with pytest.raises(BackendError, match="'wrist_roll'"):
            backend.read(0.0)
        with pytest.raises(BackendError, match="'wrist_roll'"):
            backend.set_torque(True)
        # Torque off not confirmed: the motor's state is in doubt, the runner must fault.
        with pytest.raises(BackendFault, match="'wrist_roll'"):
            backend.set_torque(False)
        emulator.clear_faults()
        # A bus that is gone under the backend: the same fault from every operation.
        backend.bus.disconnect(disable_torque=True)
        for operation in (lambda: backend.read(0.0), lambda: backend.write(positions),
                          lambda: backend.set_torque(True), lambda: backend.set_torque(False)):
            with pytest.raises(BackendFault, match='not connected'):
                operation()


def test_runner_refuses_commands_until_active_then_applies_the_newest():
    with EmulatorProcess() as emulator:
        backend = FeetechBackend(bus(emulator.port))
        backend.open()
        sink = Recorder()
        runner = HardwareRunner(backend, limits_of(backend), RunnerSettings(), sink, LOGGER)
        runner.start()
        try:
            assert wait_for(lambda: sink.states), 'no joint_states while inactive'
            with pytest.raises(CommandRejected) as raised:
                runner.command_in_order([0.0] * 6)
            assert raised.value.reason == 'not_active'
            runner.activate()
            assert emulator.get(1, 'Torque_Enable') == 1
            runner.command_in_order([0.1] * 6)
            assert wait_for(lambda: sink.applied)
            assert runner.position_hold and runner.state == 'active'
            runner.set_torque(False)
            with pytest.raises(CommandRejected) as raised:
                runner.command_in_order([0.1] * 6)
            assert raised.value.reason == 'torque_off'
            assert runner.rejected['torque_off'] == 1
            assert 'rejected (torque_off)' in runner.message
        finally:
            assert runner.close(disable_torque=True) == ''
        assert runner.state == 'finalized' and emulator.get(3, 'Torque_Enable') == 0


def test_runner_fault_can_switch_torque_off_when_configured():
    with EmulatorProcess() as emulator:
        # The default retries: the motor's fault below lasts until cleared, so it faults the
        # bus all the same, while a reply that a loaded host delays during open() is retried
        # (with retries=0 one such reply failed the open in a CI run).
        backend = FeetechBackend(bus(emulator.port))
        backend.open()
        sink = Recorder()
        runner = HardwareRunner(backend, limits_of(backend),
                                RunnerSettings(disable_torque_on_fault=True), sink, LOGGER)
        runner.start()
        try:
            runner.activate()
            emulator.inject_fault(5, 'no_reply')
            assert wait_for(lambda: runner.state == 'fault')
            assert "'wrist_roll'" in runner.message
            assert wait_for(lambda: emulator.get(1, 'Torque_Enable') == 0)
            with pytest.raises(CommandRejected) as raised:
                runner.command_in_order([0.0] * 6)
            assert raised.value.reason == 'fault'
            runner.begin_shutdown('test')
            assert wait_for(lambda: sink.finished)
        finally:
            runner.close(disable_torque=True)
        assert runner.faulted and runner.state == 'finalized'


def test_runner_keeps_applying_during_the_grace_then_closes():
    backend = SimBackend(SimConfig(joint_names=JOINTS, render=False))
    backend.open()
    sink = Recorder()
    runner = HardwareRunner(backend, limits_of(backend), RunnerSettings(
        shutdown_grace_s=5.0, shutdown_quiet_s=0.3), sink, LOGGER)
    runner.start()
    try:
        runner.activate()
        runner.begin_shutdown('test')
        assert wait_for(lambda: runner.state == 'shutting_down')
        for step in range(5):
            runner.command_in_order([0.02 * step] * 6)
            assert wait_for(lambda: len(sink.applied) == step + 1)
        started = time.monotonic()
        assert wait_for(lambda: sink.finished)
        assert time.monotonic() - started >= 0.25   # waited for the quiet period
        assert runner.state == 'finalized'
        assert sink.applied[-1].tolist() == pytest.approx([0.08] * 6)
    finally:
        runner.close(disable_torque=True)
