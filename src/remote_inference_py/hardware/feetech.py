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

The bus is the composition of parts that each own one concern and are tested alone; it keeps
the lock, the torque state and the order of things (connect, configure, calibrate, stream,
switch torque):

- :class:`~.feetech_link.BusLink`: the open port, every operation with its retries, the
  counters and the fault, the identification of the motors on connect (and the errors);
- :class:`~.feetech_groups.SyncGroups`: the SYNC_READ of positions, the SYNC_WRITE of goals
  (checked and encoded by motor name) and the torque-off broadcast;
- :class:`~.feetech_groups.MotorStatus`: the hardware error flags of each motor's replies;
- :class:`~.feetech_registers.Registers`: one register of one motor by name, and the
  calibration as registers.

Waiting for replies: the SDK reads the port with a zero timeout and loops until the reply is
complete or the packet timeout passes, so it spins a CPU core at 100 % for the whole wait.
:class:`BoundedWaitPortHandler` blocks in ``select()`` until bytes arrive or the timeout
ends instead (``bench/bench_servo_bus.py`` measures the difference). No method sleeps.
"""

import contextlib
import logging
import select
import threading
import time
from typing import Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple

import scservo_sdk as scs

from remote_inference_py.hardware.config import FeetechBusConfig
from remote_inference_py.hardware.feetech_groups import (  # noqa: F401 - the driver's names
    MotorStatus, StatusGroupSyncRead, SyncGroups)
from remote_inference_py.hardware.feetech_link import (  # noqa: F401 - the driver's names
    BusCounters, BusFaultError, BusLink, FeetechConnectionError, FeetechError,
    MotorNotFoundError, ServoChecksumError, ServoCommError, ServoPortError, ServoStatusError,
    ServoTimeoutError, TorqueDisableError)
from remote_inference_py.hardware.feetech_registers import Registers
from remote_inference_py.robot.calibration import Calibration, NormMode
from remote_inference_py.robot.control_table import (
    ControlTable, MODELS, so101_register_settings)

_LOGGER = logging.getLogger(__name__)


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

    def __init__(self, port_name: str,
                 latency_timer_ms: float = FeetechBusConfig.latency_timer_ms):
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
        self._lock = threading.RLock()
        self._link = BusLink(config.port, config.motors, config.retries,
                             config.max_consecutive_failures)
        self._groups = SyncGroups(self._table, config.motors, config.port)
        self._status = MotorStatus(config.port, config.motors, self._link.counters)
        self._registers = Registers(self._table, self._link, self._status, self._groups.motor_id)
        self._torque: Dict[str, Optional[bool]] = dict.fromkeys(self._ids)

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
        return self._link.handler is not None

    @property
    def is_faulted(self) -> bool:
        """True after persistent failures, until reset_fault()."""
        return self._link.faulted

    @property
    def counters(self) -> BusCounters:
        """A snapshot of the error and retry counters."""
        return BusCounters(**self._link.counters)

    @property
    def status_flags(self) -> Dict[str, Tuple[str, ...]]:
        """Hardware error flags of each motor's latest reply (empty when none)."""
        return dict(self._status.flags)

    @property
    def torque_enabled(self) -> Dict[str, Optional[bool]]:
        """Torque state of each motor as last read or written (None when unknown)."""
        return dict(self._torque)

    def reset_fault(self) -> None:
        """Clear the faulted state and the consecutive-failure count."""
        with self._lock:
            self._link.reset_fault()

    # Connection.

    def connect(self) -> None:
        """Open the port, then ping and identify every motor by model number.

        Raises FeetechConnectionError when the port cannot be opened and MotorNotFoundError
        naming the missing ids (or wrong models) and the port; the port is closed again then.
        """
        with self._lock:
            if self.is_connected:
                raise FeetechError(f'bus on port {self.port!r} is already connected')
            self._link.open(self._port_handler_factory(self._config), self._config.baudrate)
            try:
                self._link.identify(self._table, self._status.note)
                self._groups.attach(self._link.handler, self._link.packet_handler)
                for name in self._ids:
                    self._torque[name] = bool(self.read_register(name, 'Torque_Enable'))
            except BaseException:
                self._close_port()
                raise
            _LOGGER.info('servo bus on %s connected: %s', self.port, self._ids)

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
        self._groups.detach()
        self._link.close()

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
        with self._lock:
            return self._registers.read_calibration(drive_modes, norm_modes)

    def write_calibration(self, calibration: Calibration) -> None:
        """Write homing offsets and position limits of a calibration to the motors.

        The calibration must hold exactly the bus motors with the same ids. Written with
        torque disabled (EEPROM); the torque state found before is restored.
        """
        writes = self._registers.calibration_writes(calibration)
        with self._lock, self.torque_disabled():
            for name, register, value in writes:
                self.write_register(name, register, value)

    # Registers.

    def read_register(self, name: str, register: str) -> int:
        """Read one register of motor ``name`` (decoded, sign-magnitude applied)."""
        with self._lock:
            return self._registers.read(name, register)

    def write_register(self, name: str, register: str, value: int) -> None:
        """Write one register of motor ``name`` and wait for the motor's acknowledgement."""
        with self._lock:
            self._registers.write(name, register, value)

    # Streaming.

    def read_positions(self) -> Dict[str, int]:
        """Read every motor's Present_Position in one SYNC_READ; ticks by motor name.

        Raises ServoStatusError (positions attached) when a reply carries hardware error
        flags and ``raise_on_status_error`` is set.
        """
        with self._lock:
            self._link.require_connection()
            reader = self._groups.reader
            self._link.sync_read('sync read Present_Position', reader)
            positions = self._groups.positions()
            for motor_id in self._ids.values():
                self._status.note(motor_id, reader.errors.get(motor_id, 0))
            error = self._status.error(positions)
            if error is not None and self._config.raise_on_status_error:
                raise error
            return positions

    def write_goal_positions(self, goals: Mapping[str, int]) -> None:
        """Write Goal_Position of the given motors in one SYNC_WRITE (no reply).

        ``goals`` maps motor names to ticks; a subset of the motors is allowed. Unknown
        names and values that are not integers within the encoder range raise ValueError
        naming the motor, and nothing is written.
        """
        payload = self._groups.goal_payload(goals)
        if not payload:
            return
        with self._lock:
            self._link.require_connection()
            self._link.sync_write('sync write Goal_Position', self._groups.writer, payload)

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
        names = self._groups.names(names)
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
        names = self._groups.names(names)
        failed = []
        with self._lock:
            handler = self._link.require_connection()
            self._groups.broadcast_torque_off(handler, self._link.packet_handler, names)
            for name in names:
                try:
                    for register in ('Torque_Enable', 'Lock'):
                        self._registers.write(name, register, 0, allow_faulted=True)
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
        names = self._groups.names(names)
        with self._lock:
            was_on = [name for name in names if self._torque.get(name)]
            self.disable_torque(names)
        try:
            yield
        finally:
            if was_on:
                self.enable_torque(was_on)
