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

"""Feetech STS bus driver core over ``scservo_sdk`` (feetech-servo-sdk), protocol 0.

:class:`FeetechBus` opens the serial port, pings and identifies every configured motor,
writes the SO-101 register settings, reads present positions with one SYNC_READ and writes
goal positions with one SYNC_WRITE, and switches torque. Positions are servo ticks at this
layer; :meth:`FeetechBus.read_positions_radians` and :meth:`FeetechBus.write_goal_radians`
convert through a :class:`~remote_inference_py.robot.calibration.Calibration`.

Errors and recovery: every bus operation is retried ``retries`` times on a timeout, a corrupt
reply (bad checksum or truncated) or a port error, and counted (:attr:`FeetechBus.counters`).
An operation that still fails raises :class:`ServoTimeoutError`, :class:`ServoChecksumError`
or :class:`ServoPortError`, naming the motor, the port and the operation; the caller holds
and tries again next tick. After ``max_consecutive_failures`` failed operations in a row
the bus raises :class:`BusFaultError` and stays faulted: reads and writes raise at once
without bus traffic, while disable_torque() and disconnect() still try to switch torque off.
:meth:`FeetechBus.reset_fault` clears the fault. Hardware error flags in a reply's status byte
(overload, overheat, ...) are counted and kept in :attr:`FeetechBus.status_flags`; a position
read that carries one raises :class:`ServoStatusError` (with the positions attached).

Waiting for replies: the SDK reads the port with a zero timeout and loops until the reply is
complete or the packet timeout passes, so it spins a CPU core at 100 % for the whole wait.
:class:`BoundedWaitPortHandler` blocks in ``select()`` until bytes arrive or the timeout
ends instead (``bench/bench_servo_bus.py`` measures the difference). No method sleeps.
"""

import contextlib
import dataclasses
import logging
import select
import termios
import threading
import time
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import scservo_sdk as scs
import serial

from remote_inference_py.robot.calibration import (
    Calibration, MAX_MOTOR_ID, MotorCalibration, NormMode)
from remote_inference_py.robot.control_table import (
    BAUDRATE_TABLE, ControlTable, describe_status_error, MODELS, so101_register_settings)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

_LOGGER = logging.getLogger(__name__)

_PORT_ERROR = -100
"""Result code of an SDK call that raised a serial or OS error (not an SDK code)."""

_PORT_EXCEPTIONS = (serial.SerialException, OSError, termios.error)
"""What pyserial raises when the device fails or disappears."""


# Errors.

class FeetechError(RuntimeError):
    """Base class of the driver's errors."""


class FeetechConnectionError(FeetechError):
    """The serial port could not be opened (the message names the port)."""


class MotorNotFoundError(FeetechError):
    """A configured motor did not answer, or reported another model, on connect."""

    def __init__(self, message: str, port: str, missing: Mapping[str, int],
                 wrong_models: Mapping[str, Tuple[int, int]]):
        """Store the port, missing ``{name: id}`` and ``{name: (id, model_number)}``."""
        super().__init__(message)
        self.port = port
        self.missing = dict(missing)
        self.wrong_models = dict(wrong_models)


class ServoCommError(FeetechError):
    """A bus operation failed after its retries (base of the communication errors)."""

    def __init__(self, message: str, port: str, operation: str,
                 motor: Optional[str] = None, motor_id: Optional[int] = None):
        """Store where the failure happened."""
        super().__init__(message)
        self.port = port
        self.operation = operation
        self.motor = motor
        self.motor_id = motor_id


class ServoTimeoutError(ServoCommError):
    """A motor did not reply in time."""


class ServoChecksumError(ServoCommError):
    """A reply was corrupt: bad checksum or truncated."""


class ServoPortError(ServoCommError):
    """The serial port failed (write error, device gone)."""


class BusFaultError(ServoCommError):
    """Bus operations failed persistently; the bus is faulted until reset_fault()."""


class ServoStatusError(FeetechError):
    """A reply carried hardware error flags (overload, overheat, voltage, ...).

    ``flags`` maps motor names to flag names; ``positions`` holds the positions read in the
    same operation (valid data) when the error comes from read_positions().
    """

    def __init__(self, message: str, flags: Mapping[str, Tuple[str, ...]],
                 positions: Optional[Mapping[str, int]] = None):
        """Store the flags and the data read."""
        super().__init__(message)
        self.flags = dict(flags)
        self.positions = dict(positions) if positions is not None else None


class TorqueDisableError(FeetechError):
    """Torque could not be confirmed off on some motors (named in ``motors``)."""

    def __init__(self, message: str, motors: Sequence[str]):
        """Store the motors whose torque state is unknown."""
        super().__init__(message)
        self.motors = tuple(motors)


# Configuration and counters.

@dataclasses.dataclass(frozen=True)
class FeetechBusConfig:
    """Static configuration of one servo bus.

    ``motors`` maps motor names to bus ids, in the bus order (a mapping or ``(name, id)``
    pairs). ``retries`` is the number of extra attempts per operation.
    ``latency_timer_ms`` is the USB adapter latency the packet timeout allows for, as in the
    SDK (timeout = bytes on the wire + 2 x latency + 2 ms); the SDK's 16 ms suits FTDI
    adapters at their default latency timer, 1-2 ms suits CH340/CH343 boards.
    ``bounded_wait`` False uses the SDK's stock busy-polling PortHandler (benchmarks only).
    """

    port: str
    motors: Union[Mapping[str, int], Tuple[Tuple[str, int], ...]]
    model: str = 'sts3215'
    baudrate: int = 1_000_000
    retries: int = 2
    max_consecutive_failures: int = 3
    latency_timer_ms: float = 16.0
    bounded_wait: bool = True
    raise_on_status_error: bool = True

    def __post_init__(self):
        """Validate every field; errors name the field and value."""
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
        if self.baudrate not in BAUDRATE_TABLE:
            raise ValueError(
                f'baudrate {self.baudrate} is not one of {", ".join(map(str, BAUDRATE_TABLE))}')
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or (
                self.retries < 0):
            raise ValueError(f'retries must be an integer >= 0, got {self.retries!r}')
        if isinstance(self.max_consecutive_failures, bool) or not isinstance(
                self.max_consecutive_failures, int) or self.max_consecutive_failures < 1:
            raise ValueError(
                'max_consecutive_failures must be an integer >= 1, got '
                f'{self.max_consecutive_failures!r}')
        if not self.latency_timer_ms >= 0:
            raise ValueError(f'latency_timer_ms must be >= 0, got {self.latency_timer_ms!r}')

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
class BusCounters:
    """Snapshot of the bus counters.

    ``transactions`` counts bus attempts (each retry is one); ``timeouts``,
    ``checksum_errors`` (corrupt or truncated replies) and ``port_errors`` count failed
    attempts; ``retries`` the extra attempts; ``recovered`` the operations that succeeded
    after a retry; ``failed_operations`` those that failed every attempt;
    ``status_errors`` the replies with hardware error flags; ``consecutive_failures`` the
    failed operations since the last success.
    """

    transactions: int = 0
    timeouts: int = 0
    checksum_errors: int = 0
    port_errors: int = 0
    retries: int = 0
    recovered: int = 0
    failed_operations: int = 0
    status_errors: int = 0
    consecutive_failures: int = 0

    def as_dict(self) -> Dict[str, int]:
        """Return the counters as a dict (for logs and status messages)."""
        return dataclasses.asdict(self)


# SDK adaptations.

class BoundedWaitPortHandler(scs.PortHandler):
    """``scservo_sdk.PortHandler`` that waits for replies without spinning.

    The SDK opens the port with a zero read timeout and its ``rxPacket`` calls ``readPort``
    in a loop until the reply is complete or ``isPacketTimeout()``; each empty read returns
    at once, so the wait burns a whole core. Here ``readPort`` returns what is buffered and,
    when nothing is, blocks in ``select()`` on the port until bytes arrive or the packet
    timeout ends, which bounds the loop to one pass per received chunk. Also:

    - times come from ``time.monotonic()`` (the SDK uses the wall clock, which can jump);
    - the packet timeout uses ``latency_timer_ms`` instead of the SDK's fixed 16 ms;
    - ``clearPort()`` (called before every request) also discards unread input, so a late
      reply to a timed-out request cannot be taken for the answer to the next one.
    """

    def __init__(self, port_name: str, latency_timer_ms: float = 16.0):
        """Create the handler; ``latency_timer_ms`` enters the packet timeout."""
        super().__init__(port_name)
        self.latency_timer_ms = float(latency_timer_ms)

    def readPort(self, length):  # noqa: N802 (SDK method name)
        """Return up to ``length`` bytes, waiting in select() until some arrive or timeout."""
        data = self.ser.read(length)
        if data:
            return data
        remaining_ms = self.packet_timeout - self.getTimeSinceStart()
        if remaining_ms > 0:
            select.select([self.ser.fileno()], [], [], remaining_ms / 1000.0)
            data = self.ser.read(length)
        return data

    def clearPort(self):  # noqa: N802 (SDK method name)
        """Finish pending output and drop stale input before a new request."""
        self.ser.flush()
        self.ser.reset_input_buffer()

    def setPacketTimeout(self, packet_length):  # noqa: N802 (SDK method name)
        """Start the reply timeout: wire time of ``packet_length`` bytes plus latency."""
        self.packet_start_time = self.getCurrentTime()
        self.packet_timeout = (self.tx_time_per_byte * packet_length
                               + 2.0 * self.latency_timer_ms + 2.0)

    def getCurrentTime(self):  # noqa: N802 (SDK method name)
        """Return monotonic time in milliseconds."""
        return time.monotonic() * 1000.0


class StatusGroupSyncRead(scs.GroupSyncRead):
    """``GroupSyncRead`` that keeps each reply's status byte and the id that failed.

    The SDK's version drops the status byte of every reply, so hardware errors such as
    overload would go unseen, and does not say which motor failed; it also accepts a short
    reply and later reads it as 0. Here ``errors`` maps ids to status bytes, ``failed_id``
    names the first motor without a complete reply, and a short reply counts as corrupt.
    """

    def __init__(self, port, ph, start_address, data_length):
        """Create the reader (same arguments as the SDK's)."""
        super().__init__(port, ph, start_address, data_length)
        self.errors: Dict[int, int] = {}
        self.failed_id: Optional[int] = None

    def rxPacket(self):  # noqa: N802 (SDK method name)
        """Receive one reply per id in order; return an SDK result code."""
        self.last_result = False
        self.errors = {}
        self.failed_id = None
        if not self.data_dict:
            return scs.COMM_NOT_AVAILABLE
        for motor_id in self.data_dict:
            data, result, error = self.ph.readRx(self.port, motor_id, self.data_length)
            self.data_dict[motor_id] = data
            if result == scs.COMM_SUCCESS and len(data) != self.data_length:
                result = scs.COMM_RX_CORRUPT
            if result != scs.COMM_SUCCESS:
                self.failed_id = motor_id
                return result
            self.errors[motor_id] = error
        self.last_result = True
        return scs.COMM_SUCCESS


def make_port_handler(config: FeetechBusConfig) -> scs.PortHandler:
    """Return the SDK port handler for ``config``: bounded wait, or the stock busy poll."""
    if config.bounded_wait:
        return BoundedWaitPortHandler(config.port, config.latency_timer_ms)
    return scs.PortHandler(config.port)


# The bus.

class FeetechBus:
    """A Feetech STS servo bus: connect, configure, stream positions, switch torque.

    Thread-safe: one lock serializes bus access; the counters, status flags and torque
    state are read without waiting for it, so a status publisher never blocks behind a bus
    timeout. Positions are ticks and are always given and returned by motor name.
    """

    def __init__(self, config: FeetechBusConfig,
                 port_handler_factory: Optional[
                     Callable[[FeetechBusConfig], scs.PortHandler]] = None):
        """Prepare the bus; connect() opens the port.

        ``port_handler_factory(config)`` may supply the SDK port handler (for instrumented
        handlers in benchmarks); by default it follows ``config.bounded_wait``.
        """
        self._config = config
        self._port_handler_factory = port_handler_factory or make_port_handler
        self._table: ControlTable = MODELS[config.model]
        self._ids: Dict[str, int] = dict(config.motors)
        self._names_by_id: Dict[int, str] = {i: name for name, i in config.motors}
        self._lock = threading.RLock()
        self._port_handler: Optional[scs.PortHandler] = None
        self._packet_handler = scs.PacketHandler(0)
        self._reader: Optional[StatusGroupSyncRead] = None
        self._writer: Optional[scs.GroupSyncWrite] = None
        self._counters: Dict[str, int] = BusCounters().as_dict()
        self._faulted = False
        self._torque: Dict[str, Optional[bool]] = dict.fromkeys(self._ids)
        self._status_flags: Dict[str, Tuple[str, ...]] = {name: () for name in self._ids}

    # Properties.

    @property
    def config(self) -> FeetechBusConfig:
        """The bus configuration."""
        return self._config

    @property
    def port(self) -> str:
        """The serial port path."""
        return self._config.port

    @property
    def motor_names(self) -> Tuple[str, ...]:
        """Motor names in bus order."""
        return tuple(self._ids)

    @property
    def motor_ids(self) -> Dict[str, int]:
        """Motor ids by name."""
        return dict(self._ids)

    @property
    def table(self) -> ControlTable:
        """The control table of the configured model."""
        return self._table

    @property
    def is_connected(self) -> bool:
        """True between a successful connect() and disconnect()."""
        return self._port_handler is not None

    @property
    def is_faulted(self) -> bool:
        """True after persistent failures, until reset_fault()."""
        return self._faulted

    @property
    def counters(self) -> BusCounters:
        """A snapshot of the error and retry counters."""
        return BusCounters(**self._counters)

    @property
    def status_flags(self) -> Dict[str, Tuple[str, ...]]:
        """Hardware error flags of each motor's latest reply (empty when none)."""
        return dict(self._status_flags)

    @property
    def torque_enabled(self) -> Dict[str, Optional[bool]]:
        """Torque state of each motor as last read or written (None when unknown)."""
        return dict(self._torque)

    def reset_fault(self) -> None:
        """Clear the faulted state and the consecutive-failure count."""
        with self._lock:
            self._faulted = False
            self._counters['consecutive_failures'] = 0

    # Connection.

    def connect(self) -> None:
        """Open the port, then ping and identify every motor by model number.

        Raises FeetechConnectionError when the port cannot be opened and MotorNotFoundError
        naming the missing ids (or wrong models) and the port; the port is closed again then.
        """
        with self._lock:
            if self.is_connected:
                raise FeetechError(f'bus on port {self.port!r} is already connected')
            handler = self._port_handler_factory(self._config)
            handler.baudrate = self._config.baudrate
            try:
                opened = handler.openPort()
            except _PORT_EXCEPTIONS as error:
                raise FeetechConnectionError(
                    f'could not open servo bus port {self.port!r}: {error}') from error
            if not opened:
                raise FeetechConnectionError(
                    f'could not open servo bus port {self.port!r} at {self._config.baudrate} '
                    'bit/s')
            self._port_handler = handler
            try:
                self._identify_motors()
                position = self._table['Present_Position']
                self._reader = StatusGroupSyncRead(
                    handler, self._packet_handler, position.address, position.size)
                for motor_id in self._ids.values():
                    self._reader.addParam(motor_id)
                goal = self._table['Goal_Position']
                self._writer = scs.GroupSyncWrite(
                    handler, self._packet_handler, goal.address, goal.size)
                for name in self._ids:
                    self._torque[name] = bool(self.read_register(name, 'Torque_Enable'))
            except BaseException:
                self._close_port()
                raise
            _LOGGER.info('servo bus on %s connected: %s', self.port, self._ids)

    def _identify_motors(self) -> None:
        missing: Dict[str, int] = {}
        wrong: Dict[str, Tuple[int, int]] = {}
        for name, motor_id in self._ids.items():
            try:
                model_number, error = self._run(
                    'ping', lambda motor_id=motor_id: self._ping_once(motor_id),
                    motor=name, count_failure=False)
            except ServoCommError:
                missing[name] = motor_id
                continue
            self._note_status(motor_id, error)
            if model_number != self._table.model_number:
                wrong[name] = (motor_id, model_number)
        if not missing and not wrong:
            return
        problems = []
        if missing:
            listed = ', '.join(f'{name!r} (id {motor_id})' for name, motor_id in missing.items())
            plural = 'motors' if len(missing) > 1 else 'motor'
            problems.append(f'{plural} {listed} did not answer a ping on port {self.port!r}')
        for name, (motor_id, model_number) in wrong.items():
            problems.append(
                f'motor {name!r} (id {motor_id}) on port {self.port!r} reports model number '
                f'{model_number}, expected {self._table.model_number} ({self._table.model})')
        raise MotorNotFoundError(
            '; '.join(problems) + '. Check wiring, power and ids.', self.port, missing, wrong)

    def disconnect(self, disable_torque: bool = True) -> None:
        """Switch torque off on every motor (by default), then close the port.

        The port is closed even when torque cannot be confirmed off; TorqueDisableError
        then names the motors in doubt. Does nothing when not connected.
        """
        with self._lock:
            if not self.is_connected:
                return
            try:
                if disable_torque:
                    self.disable_torque()
            finally:
                self._close_port()
                _LOGGER.info('servo bus on %s disconnected', self.port)

    def _close_port(self) -> None:
        handler, self._port_handler = self._port_handler, None
        self._reader = None
        self._writer = None
        if handler is not None:
            try:
                handler.closePort()
            except _PORT_EXCEPTIONS + (AttributeError,):
                pass

    def __enter__(self) -> 'FeetechBus':
        """Connect."""
        self.connect()
        return self

    def __exit__(self, *exc_info) -> None:
        """Disconnect with torque off."""
        self.disconnect()

    # Configuration and calibration.

    def configure(self, settings=so101_register_settings) -> None:
        """Write the register settings of every motor with torque disabled.

        ``settings(name)`` returns the ``(register, value)`` pairs of motor ``name``; the
        default applies LeRobot's SO-101 settings (return delay 0, acceleration 254, position
        mode, P/I/D = 16/0/32, plus torque and current limits for the gripper). The torque
        state found before is restored afterwards.
        """
        with self._lock, self.torque_disabled():
            for name in self._ids:
                for register, value in settings(name):
                    self.write_register(name, register, value)

    def read_calibration(self, drive_modes: Optional[Mapping[str, int]] = None,
                         norm_modes: Optional[Mapping[str, NormMode]] = None) -> Calibration:
        """Read homing offsets and position limits from the motors into a Calibration.

        The servos do not store LeRobot's ``drive_mode``; it comes from ``drive_modes``
        (default 0, as LeRobot's read_calibration does).
        """
        drive_modes = drive_modes or {}
        motors = {}
        with self._lock:
            for name, motor_id in self._ids.items():
                motors[name] = MotorCalibration(
                    id=motor_id, drive_mode=int(drive_modes.get(name, 0)),
                    homing_offset=self.read_register(name, 'Homing_Offset'),
                    range_min=self.read_register(name, 'Min_Position_Limit'),
                    range_max=self.read_register(name, 'Max_Position_Limit'))
        return Calibration(motors, norm_modes)

    def write_calibration(self, calibration: Calibration) -> None:
        """Write homing offsets and position limits of a calibration to the motors.

        The calibration must hold exactly the bus motors with the same ids. Written with
        torque disabled (EEPROM); the torque state found before is restored.
        """
        for name in calibration.names:
            if name not in self._ids:
                raise ValueError(f'calibration motor {name!r} is not on the bus')
        for name, motor_id in self._ids.items():
            if name not in calibration:
                raise ValueError(f'motor {name!r} missing from the calibration')
            if calibration[name].id != motor_id:
                raise ValueError(
                    f'motor {name!r}: calibration id {calibration[name].id} differs from the '
                    f'bus id {motor_id}')
        with self._lock, self.torque_disabled():
            for name in self._ids:
                motor = calibration[name]
                self.write_register(name, 'Homing_Offset', motor.homing_offset)
                self.write_register(name, 'Min_Position_Limit', motor.range_min)
                self.write_register(name, 'Max_Position_Limit', motor.range_max)

    # Registers.

    def read_register(self, name: str, register: str) -> int:
        """Read one register of motor ``name`` (decoded, sign-magnitude applied)."""
        entry = self._table[register]
        motor_id = self._motor_id(name)
        with self._lock:
            data, error = self._run(
                f'read {register}',
                lambda: self._read_once(motor_id, entry.address, entry.size), motor=name)
            self._note_status(motor_id, error)
            return entry.from_bytes(data)

    def write_register(self, name: str, register: str, value: int) -> None:
        """Write one register of motor ``name`` and wait for the motor's acknowledgement."""
        entry = self._table[register]
        if not entry.writable:
            raise ValueError(f'register {register!r} is read-only')
        motor_id = self._motor_id(name)
        data = list(entry.to_bytes(value))
        with self._lock:
            error = self._run(
                f'write {register}',
                lambda: self._write_once(motor_id, entry.address, data), motor=name)
            self._note_status(motor_id, error)

    # Streaming.

    def read_positions(self) -> Dict[str, int]:
        """Read every motor's Present_Position in one SYNC_READ; ticks by motor name.

        Raises ServoStatusError (positions attached) when a reply carries hardware error
        flags and ``raise_on_status_error`` is set.
        """
        register = self._table['Present_Position']
        with self._lock:
            reader = self._require_connection()[0]
            self._run('sync read Present_Position', lambda: self._sync_read_once(reader))
            positions = {}
            for name, motor_id in self._ids.items():
                positions[name] = register.from_bytes(reader.data_dict[motor_id])
                self._note_status(motor_id, reader.errors.get(motor_id, 0))
            flagged = {name: flags for name, flags in self._status_flags.items() if flags}
            if flagged and self._config.raise_on_status_error:
                described = '; '.join(
                    f'motor {name!r} (id {self._ids[name]}): {", ".join(flags)}'
                    for name, flags in flagged.items())
                raise ServoStatusError(
                    f'servo error flags on port {self.port!r}: {described}', flagged, positions)
            return positions

    def write_goal_positions(self, goals: Mapping[str, int]) -> None:
        """Write Goal_Position of the given motors in one SYNC_WRITE (no reply).

        ``goals`` maps motor names to ticks; a subset of the motors is allowed. Unknown
        names and values that are not integers within the encoder range raise ValueError
        naming the motor, and nothing is written.
        """
        register = self._table['Goal_Position']
        payload: List[Tuple[int, List[int]]] = []
        for name, value in goals.items():
            motor_id = self._motor_id(name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(
                    value, (int, np.integer)):
                raise ValueError(
                    f'goal of motor {name!r} must be integer ticks, got {value!r}')
            if not 0 <= int(value) <= self._table.max_position:
                raise ValueError(
                    f'goal of motor {name!r} = {int(value)} ticks is outside '
                    f'0..{self._table.max_position}')
            payload.append((motor_id, list(register.to_bytes(int(value)))))
        if not payload:
            return
        with self._lock:
            writer = self._require_connection()[1]
            self._run('sync write Goal_Position', lambda: self._sync_write_once(writer, payload))

    def read_positions_radians(self, calibration: Calibration) -> Dict[str, float]:
        """Read positions and convert them to SI radians through ``calibration``."""
        return {name: calibration.ticks_to_radians(name, ticks)
                for name, ticks in self.read_positions().items()}

    def write_goal_radians(self, goals: Mapping[str, float],
                           calibration: Calibration) -> Dict[str, int]:
        """Convert SI radian goals to the nearest ticks, write them; return the ticks."""
        ticks = {name: calibration.radians_to_ticks(name, value)
                 for name, value in goals.items()}
        self.write_goal_positions(ticks)
        return ticks

    # Torque.

    def enable_torque(self, names: Optional[Sequence[str]] = None,
                      hold_present: bool = True) -> None:
        """Switch torque on (and lock the EEPROM) for ``names`` (default: all motors).

        With ``hold_present`` the goal is first set to the present position, so the arm does
        not jump to a stale goal left in the servo.
        """
        names = self._names(names)
        with self._lock:
            if hold_present:
                try:
                    positions = self.read_positions()
                except ServoStatusError as error:
                    positions = error.positions
                self.write_goal_positions({name: positions[name] for name in names})
            for name in names:
                self.write_register(name, 'Torque_Enable', 1)
                self._torque[name] = True
                self.write_register(name, 'Lock', 1)

    def disable_torque(self, names: Optional[Sequence[str]] = None) -> None:
        """Switch torque off (and unlock the EEPROM) for ``names`` (default: all motors).

        Works while faulted. Sends one broadcast SYNC_WRITE first (reaches every motor even
        if replies are lost), then confirms each motor with an acknowledged write; every
        motor is tried, and TorqueDisableError names those that could not be confirmed.
        """
        names = self._names(names)
        torque = self._table['Torque_Enable']
        failed = []
        with self._lock:
            handler = self._port_handler
            if handler is None:
                raise FeetechError(f'bus on port {self.port!r} is not connected')
            broadcast = scs.GroupSyncWrite(handler, self._packet_handler, torque.address, 1)
            for name in names:
                broadcast.addParam(self._ids[name], [0])
            try:
                handler.is_using = False
                broadcast.txPacket()
            except _PORT_EXCEPTIONS:
                pass
            for name in names:
                try:
                    motor_id = self._ids[name]
                    for register, value in (('Torque_Enable', 0), ('Lock', 0)):
                        entry = self._table[register]
                        error = self._run(
                            f'write {register}',
                            lambda: self._write_once(motor_id, entry.address, [value]),
                            motor=name, allow_faulted=True)
                        self._note_status(motor_id, error)
                    self._torque[name] = False
                except ServoCommError:
                    self._torque[name] = None
                    failed.append(name)
        if failed:
            listed = ', '.join(f'{name!r} (id {self._ids[name]})' for name in failed)
            raise TorqueDisableError(
                f'could not confirm torque off for motor(s) {listed} on port {self.port!r}',
                failed)

    @contextlib.contextmanager
    def torque_disabled(self, names: Optional[Sequence[str]] = None) -> Iterator[None]:
        """Disable torque for the block and restore it after, even when the block raises.

        Torque is switched back on for the motors that had it on before the block.
        """
        names = self._names(names)
        with self._lock:
            was_on = [name for name in names if self._torque.get(name)]
            self.disable_torque(names)
        try:
            yield
        finally:
            if was_on:
                self.enable_torque(was_on)

    # Internals.

    def _names(self, names: Optional[Sequence[str]]) -> List[str]:
        if names is None:
            return list(self._ids)
        if isinstance(names, str):
            names = [names]
        for name in names:
            self._motor_id(name)
        return list(names)

    def _motor_id(self, name: str) -> int:
        try:
            return self._ids[name]
        except (KeyError, TypeError):
            raise ValueError(
                f'unknown motor {name!r} on port {self.port!r}; motors: '
                f'{", ".join(self._ids)}') from None

    def _require_connection(self) -> Tuple[StatusGroupSyncRead, scs.GroupSyncWrite]:
        if self._port_handler is None:
            raise FeetechError(f'bus on port {self.port!r} is not connected')
        return self._reader, self._writer

    def _note_status(self, motor_id: int, error: int) -> None:
        name = self._names_by_id[motor_id]
        flags = describe_status_error(error) if error else ()
        if flags:
            self._counters['status_errors'] += 1
            if flags != self._status_flags[name]:
                _LOGGER.warning('servo %r (id %d) on %s reports %s', name, motor_id,
                                self.port, ', '.join(flags))
        self._status_flags[name] = flags

    def _ping_once(self, motor_id: int):
        try:
            model_number, result, error = self._packet_handler.ping(self._port_handler,
                                                                    motor_id)
        except IndexError:
            # The SDK's ping reads the model number and indexes the reply's parameters
            # unchecked: a reply without them (a late reply to an earlier request, read in
            # place of the answer) is a corrupt reply, retried like one.
            return scs.COMM_RX_CORRUPT, None, None
        return result, (model_number, error), None

    def _read_once(self, motor_id: int, address: int, size: int):
        data, result, error = self._packet_handler.readTxRx(
            self._port_handler, motor_id, address, size)
        if result == scs.COMM_SUCCESS and len(data) != size:
            result = scs.COMM_RX_CORRUPT
        return result, (data, error), None

    def _write_once(self, motor_id: int, address: int, data: List[int]):
        result, error = self._packet_handler.writeTxRx(
            self._port_handler, motor_id, address, len(data), data)
        return result, error, None

    def _sync_read_once(self, reader: StatusGroupSyncRead):
        result = reader.txRxPacket()
        return result, None, reader.failed_id

    def _sync_write_once(self, writer: scs.GroupSyncWrite, payload):
        writer.clearParam()
        for motor_id, data in payload:
            writer.addParam(motor_id, data)
        return writer.txPacket(), None, None

    def _run(self, operation: str, attempt, motor: Optional[str] = None,
             count_failure: bool = True, allow_faulted: bool = False):
        """Run ``attempt`` with retries; return its payload or raise a named error.

        ``attempt()`` returns ``(sdk_result, payload, failed_id)``.
        """
        if self._port_handler is None:
            raise FeetechError(f'bus on port {self.port!r} is not connected')
        if self._faulted and not allow_faulted:
            raise BusFaultError(
                f'servo bus on port {self.port!r} is faulted after '
                f'{self._config.max_consecutive_failures} consecutive failed operations; '
                f'{operation} refused (reset_fault() to retry)', self.port, operation, motor,
                self._ids.get(motor))
        counters = self._counters
        result, failed_id, port_error = scs.COMM_TX_FAIL, None, ''
        attempts = 1 + self._config.retries
        for attempt_index in range(attempts):
            if attempt_index:
                counters['retries'] += 1
            self._port_handler.is_using = False
            counters['transactions'] += 1
            try:
                result, payload, failed_id = attempt()
            except _PORT_EXCEPTIONS as error:
                result, payload, failed_id, port_error = _PORT_ERROR, None, None, str(error)
            if result == scs.COMM_SUCCESS:
                if attempt_index:
                    counters['recovered'] += 1
                    _LOGGER.info('%s on %s recovered after %d retries', operation, self.port,
                                 attempt_index)
                counters['consecutive_failures'] = 0
                return payload
            if result == scs.COMM_RX_TIMEOUT:
                counters['timeouts'] += 1
            elif result == scs.COMM_RX_CORRUPT:
                counters['checksum_errors'] += 1
            else:
                counters['port_errors'] += 1
            _LOGGER.debug('%s on %s failed (attempt %d/%d): %s', operation, self.port,
                          attempt_index + 1, attempts, result)
        if failed_id is not None:
            motor = self._names_by_id.get(failed_id, motor)
        motor_id = self._ids.get(motor) if motor is not None else None
        where = f'motor {motor!r} (id {motor_id})' if motor is not None else 'the bus'
        if result == scs.COMM_RX_TIMEOUT:
            error_type, what = ServoTimeoutError, 'no reply (timeout)'
        elif result == scs.COMM_RX_CORRUPT:
            error_type, what = ServoChecksumError, 'corrupt reply (bad checksum or truncated)'
        else:
            error_type = ServoPortError
            what = f'port error ({port_error or self._packet_handler.getTxRxResult(result)})'
        message = (f'{operation} failed on port {self.port!r}: {what} from {where} after '
                   f'{attempts} attempt(s)')
        if count_failure:
            counters['failed_operations'] += 1
            counters['consecutive_failures'] += 1
            if counters['consecutive_failures'] >= self._config.max_consecutive_failures:
                self._faulted = True
                _LOGGER.error('%s; bus faulted after %d consecutive failed operations',
                              message, counters['consecutive_failures'])
                raise BusFaultError(
                    f'{message}; bus faulted after {counters["consecutive_failures"]} '
                    'consecutive failed operations', self.port, operation, motor, motor_id)
        _LOGGER.warning(message)
        raise error_type(message, self.port, operation, motor, motor_id)
