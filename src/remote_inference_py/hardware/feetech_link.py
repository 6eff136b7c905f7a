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

"""The Feetech bus's retrying transaction layer over ``scservo_sdk``, and the driver's errors.

:class:`BusLink` is the part of :class:`.feetech.FeetechBus` that owns the open port and runs
every bus operation: an attempt (one SDK call, built by :meth:`~BusLink.ping`,
:meth:`~BusLink.read`, :meth:`~BusLink.write`, :meth:`~BusLink.sync_read` or
:meth:`~BusLink.sync_write`) is retried ``retries`` times on a timeout, a corrupt reply (bad
checksum or truncated) or a port error, and counted (:class:`BusCounters`). An operation that
still fails raises :class:`ServoTimeoutError`, :class:`ServoChecksumError` or
:class:`ServoPortError`, naming the motor (the one the SDK says failed, for a group), the port
and the operation.

The protocol has no sequence numbers: a reply names only its motor. A reply that comes after
its request timed out could be read as the answer to a later request. Three defences: a reply
is the answer only with the motor's id and exactly the parameter count asked for (a late
24-byte calibration block is not a 1-byte torque state; the SDK alone takes any reply with the
id and cuts it to size); after a timeout or a corrupt reply, the next attempt first waits until
the line has been quiet for SETTLE_QUIET_S and drops what arrived (counted in
``late_bytes_dropped``); and the calibration is read one block per motor
(:mod:`.feetech_registers`), so no two of its registers can be mistaken for each other.
:meth:`~BusLink.identify` pings every motor on connect and names the ones
missing or of another model. After ``max_consecutive_failures`` failed operations in a row it
raises :class:`BusFaultError` and stays faulted: operations raise at once without bus traffic,
except those allowed while faulted (switching torque off), until :meth:`~BusLink.reset_fault`.
"""

import dataclasses
import logging
import select
import termios
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import scservo_sdk as scs
import serial

from remote_inference_py.robot.control_table import ControlTable, Register

_LOGGER = logging.getLogger('remote_inference_py.hardware.feetech')

PORT_ERROR = -100
"""Result code of an SDK call that raised a serial or OS error (not an SDK code)."""

PORT_EXCEPTIONS = (serial.SerialException, OSError, termios.error)
"""What pyserial raises when the device fails or disappears."""

IDENTIFY_ATTEMPTS = 5
"""Pings per motor on connect at least: one lost reply is not a missing motor."""
IDENTIFY_WINDOW_S = 0.5
"""And for this long at least after connecting [s]: a busy host reads late, not never."""
SETTLE_QUIET_S = 0.05
"""After a failed attempt, the line must be quiet this long (or one reply timeout, if longer)
before the next request [s]: a servo answers within a millisecond, so a reply later than its
timeout comes from a stalled host or adapter, and those stall for tens of milliseconds."""
SETTLE_MAX_S = 0.5
"""The longest wait for a quiet line [s] (a babbling bus ends it; the next attempt settles
again)."""


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


def reply_parameters(reply: Sequence[int], size: int) -> Optional[List[int]]:
    """Return the ``size`` parameters of a received reply, or None if it carries another count.

    The protocol has no sequence numbers: a reply of another length is not the answer (a late
    reply to an earlier request), where the SDK would cut it to ``size``.
    """
    if reply[scs.PKT_LENGTH] != size + 2:
        return None
    return list(reply[scs.PKT_PARAMETER0:scs.PKT_PARAMETER0 + size])


# Counters.

@dataclasses.dataclass(frozen=True)
class BusCounters:
    """Snapshot of the bus counters.

    ``transactions`` counts bus attempts (each retry is one); ``timeouts``,
    ``checksum_errors`` (corrupt or truncated replies) and ``port_errors`` count failed
    attempts; ``retries`` the extra attempts; ``recovered`` the operations that succeeded
    after a retry; ``failed_operations`` those that failed every attempt;
    ``status_errors`` the replies with hardware error flags; ``consecutive_failures`` the
    failed operations since the last success; ``late_bytes_dropped`` the bytes that arrived
    after a failed attempt, dropped before the next one.
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
    late_bytes_dropped: int = 0

    def as_dict(self) -> Dict[str, int]:
        """Return the counters as a dict (for logs and status messages)."""
        return dataclasses.asdict(self)


# The transaction layer.

class BusLink:
    """The open port, the retries, the counters and the fault (see the module doc)."""

    def __init__(self, port: str, motors: Sequence[Tuple[str, int]], retries: int,
                 max_consecutive_failures: int):
        """Prepare for ``motors`` (name, id) on ``port``; :meth:`open` opens it."""
        self.port = port
        self.ids: Dict[str, int] = dict(motors)
        self.names_by_id: Dict[int, str] = {i: name for name, i in motors}
        self.retries = retries
        self.max_consecutive_failures = max_consecutive_failures
        self.handler: Optional[scs.PortHandler] = None
        self.packet_handler = scs.PacketHandler(0)
        self.counters: Dict[str, int] = BusCounters().as_dict()
        self.faulted = False
        self.unsettled = False   # a failed attempt's reply may still be on its way

    def open(self, handler: scs.PortHandler, baudrate: int) -> None:
        """Open the port through ``handler``; FeetechConnectionError names the port."""
        handler.baudrate = baudrate
        try:
            opened = handler.openPort()
        except PORT_EXCEPTIONS as error:
            raise FeetechConnectionError(
                f'could not open servo bus port {self.port!r}: {error}') from error
        if not opened:
            raise FeetechConnectionError(
                f'could not open servo bus port {self.port!r} at {baudrate} bit/s')
        self.handler = handler

    def close(self) -> None:
        """Close the port (errors of a port already gone are ignored)."""
        handler, self.handler = self.handler, None
        if handler is not None:
            try:
                handler.closePort()
            except PORT_EXCEPTIONS + (AttributeError,):
                pass

    def require_connection(self) -> scs.PortHandler:
        """Return the open port handler; FeetechError when not connected."""
        if self.handler is None:
            raise FeetechError(f'bus on port {self.port!r} is not connected')
        return self.handler

    def reset_fault(self) -> None:
        """Clear the faulted state and the consecutive-failure count."""
        self.faulted = False
        self.counters['consecutive_failures'] = 0

    def identify(self, table: ControlTable, note: Callable[[int, int], None]) -> None:
        """Ping every motor and check its model number; ``note(id, status byte)`` each reply.

        Raises MotorNotFoundError naming the motors that did not answer (or answered with
        another model) and the port. A motor is pinged until it answers; it is missing only
        after IDENTIFY_ATTEMPTS pings (or 1 + ``retries``, if more) and once IDENTIFY_WINDOW_S
        have passed since identify began: replies lost or late on a busy host do not fail the
        connection.
        """
        missing: Dict[str, int] = {}
        wrong: Dict[str, Tuple[int, int]] = {}
        window_ends = time.monotonic() + IDENTIFY_WINDOW_S
        attempts = max(IDENTIFY_ATTEMPTS, 1 + self.retries)
        for name, motor_id in self.ids.items():
            reply = None
            while reply is None:
                try:
                    reply = self.ping(motor_id, name, table['Model_Number'],
                                      count_failure=False, attempts=attempts)
                except ServoCommError:
                    if time.monotonic() >= window_ends:
                        break
                    time.sleep(0.01)
            if reply is None:
                missing[name] = motor_id
                continue
            model_number, error = reply
            note(motor_id, error)
            if model_number != table.model_number:
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
                f'{model_number}, expected {table.model_number} ({table.model})')
        raise MotorNotFoundError(
            '; '.join(problems) + '. Check wiring, power and ids.', self.port, missing, wrong)

    def settle(self) -> None:
        """Drop input until the line is quiet for SETTLE_QUIET_S (SETTLE_MAX_S at most).

        Raises what the port raises (a port error of the next attempt).
        """
        self.unsettled = False
        port = getattr(self.handler, 'ser', None)
        if port is None:
            return
        latency_ms = getattr(self.handler, 'latency_timer_ms', scs.LATENCY_TIMER)
        quiet_s = max(SETTLE_QUIET_S, (2.0 * latency_ms + 2.0) / 1000.0)
        deadline = time.monotonic() + SETTLE_MAX_S
        while time.monotonic() < deadline:
            readable, _, _ = select.select([port.fileno()], [], [], quiet_s)
            if not readable:
                return
            self.counters['late_bytes_dropped'] += len(port.read(port.in_waiting or 1))
        self.unsettled = True     # still talking: settle again before the next attempt

    # Operations: each returns what its reply carried, or raises a named error.

    def ping(self, motor_id: int, motor: str, model_register: Register,
             count_failure: bool = True, attempts: Optional[int] = None):
        """Ping one motor and read ``model_register`` (``attempts`` times at most).

        Return (model number, status byte).
        """
        return self.run('ping', lambda: self._ping_once(motor_id, model_register),
                        motor=motor, count_failure=count_failure, attempts=attempts)

    def read(self, operation: str, motor_id: int, address: int, size: int, motor: str):
        """Read ``size`` bytes at ``address`` of one motor; return (data, status byte)."""
        return self.run(operation, lambda: self._read_once(motor_id, address, size),
                        motor=motor)

    def write(self, operation: str, motor_id: int, address: int, data: List[int],
              motor: str, allow_faulted: bool = False) -> int:
        """Write ``data`` at ``address`` of one motor and wait for its acknowledgement.

        Return the reply's status byte; ``allow_faulted`` lets it through a faulted bus.
        """
        return self.run(operation, lambda: self._write_once(motor_id, address, data),
                        motor=motor, allow_faulted=allow_faulted)

    def sync_read(self, operation: str, reader) -> None:
        """Run a SYNC_READ; the replies stay in the reader."""
        self.run(operation, lambda: self._sync_read_once(reader))

    def sync_write(self, operation: str, writer: scs.GroupSyncWrite,
                   payload: Sequence[Tuple[int, List[int]]]) -> None:
        """Send ``payload`` (motor id, bytes) in one SYNC_WRITE (no reply)."""
        self.run(operation, lambda: self._sync_write_once(writer, payload))

    def _transact(self, motor_id: int, instruction: int, params: Sequence[int],
                  reply_size: int):
        """Send one request; return ``(sdk_result, reply parameters, status byte)``.

        The SDK takes the first reply with the motor's id as the answer. Here it is the answer
        only if it also carries exactly ``reply_size`` parameters; any other reply (an earlier
        request's, of another length) is a corrupt reply, retried after a quiet line.
        """
        packet = [0] * (6 + len(params))
        packet[scs.PKT_ID] = motor_id
        packet[scs.PKT_LENGTH] = len(params) + 2
        packet[scs.PKT_INSTRUCTION] = instruction
        packet[scs.PKT_PARAMETER0:scs.PKT_PARAMETER0 + len(params)] = params
        reply, result, _ = self.packet_handler.txRxPacket(self.handler, packet)
        if result != scs.COMM_SUCCESS:
            return result, None, 0
        params = reply_parameters(reply, reply_size)
        if params is None:
            return scs.COMM_RX_CORRUPT, None, 0
        return result, params, reply[scs.PKT_ERROR]

    def _ping_once(self, motor_id: int, model_register: Register):
        result, _, error = self._transact(motor_id, scs.INST_PING, (), 0)
        if result == scs.COMM_SUCCESS:
            result, data, error = self._transact(
                motor_id, scs.INST_READ, (model_register.address, model_register.size),
                model_register.size)
        if result != scs.COMM_SUCCESS:
            return result, None, None
        return result, (model_register.from_bytes(data), error), None

    def _read_once(self, motor_id: int, address: int, size: int):
        result, data, error = self._transact(motor_id, scs.INST_READ, (address, size), size)
        return result, (data, error), None

    def _write_once(self, motor_id: int, address: int, data: List[int]):
        result, _, error = self._transact(motor_id, scs.INST_WRITE, [address] + list(data), 0)
        return result, error, None

    def _sync_read_once(self, reader):
        result = reader.txRxPacket()
        return result, None, reader.failed_id

    def _sync_write_once(self, writer: scs.GroupSyncWrite, payload):
        writer.clearParam()
        for motor_id, data in payload:
            writer.addParam(motor_id, data)
        return writer.txPacket(), None, None

    def run(self, operation: str, attempt: Callable[[], Tuple[int, object, Optional[int]]],
            motor: Optional[str] = None, count_failure: bool = True,
            allow_faulted: bool = False, attempts: Optional[int] = None):
        """Run ``attempt`` with retries; return its payload or raise a named error.

        ``attempt()`` returns ``(sdk_result, payload, failed_id)``; it runs ``attempts`` times
        at most (default: 1 + ``retries``).
        """
        if self.handler is None:
            raise FeetechError(f'bus on port {self.port!r} is not connected')
        if self.faulted and not allow_faulted:
            raise BusFaultError(
                f'servo bus on port {self.port!r} is faulted after '
                f'{self.max_consecutive_failures} consecutive failed operations; '
                f'{operation} refused (reset_fault() to retry)', self.port, operation, motor,
                self.ids.get(motor))
        counters = self.counters
        result, failed_id, port_error = scs.COMM_TX_FAIL, None, ''
        attempts = attempts or 1 + self.retries
        for attempt_index in range(attempts):
            if attempt_index:
                counters['retries'] += 1
            self.handler.is_using = False
            counters['transactions'] += 1
            try:
                if self.unsettled:
                    self.settle()
                result, payload, failed_id = attempt()
            except PORT_EXCEPTIONS as error:
                result, payload, failed_id, port_error = PORT_ERROR, None, None, str(error)
            if result == scs.COMM_SUCCESS:
                if attempt_index:
                    counters['recovered'] += 1
                    _LOGGER.info('%s on %s recovered after %d retries', operation, self.port,
                                 attempt_index)
                counters['consecutive_failures'] = 0
                return payload
            if result == scs.COMM_RX_TIMEOUT:
                counters['timeouts'] += 1
                self.unsettled = True
            elif result == scs.COMM_RX_CORRUPT:
                counters['checksum_errors'] += 1
                self.unsettled = True
            else:
                counters['port_errors'] += 1
            _LOGGER.debug('%s on %s failed (attempt %d/%d): %s', operation, self.port,
                          attempt_index + 1, attempts, result)
        if failed_id is not None:
            motor = self.names_by_id.get(failed_id, motor)
        motor_id = self.ids.get(motor) if motor is not None else None
        where = f'motor {motor!r} (id {motor_id})' if motor is not None else 'the bus'
        if result == scs.COMM_RX_TIMEOUT:
            error_type, what = ServoTimeoutError, 'no reply (timeout)'
        elif result == scs.COMM_RX_CORRUPT:
            error_type, what = ServoChecksumError, 'corrupt reply (bad checksum or truncated)'
        else:
            error_type = ServoPortError
            what = f'port error ({port_error or self.packet_handler.getTxRxResult(result)})'
        message = (f'{operation} failed on port {self.port!r}: {what} from {where} after '
                   f'{attempts} attempt(s)')
        if count_failure:
            counters['failed_operations'] += 1
            counters['consecutive_failures'] += 1
            if counters['consecutive_failures'] >= self.max_consecutive_failures:
                self.faulted = True
                _LOGGER.error('%s; bus faulted after %d consecutive failed operations',
                              message, counters['consecutive_failures'])
                raise BusFaultError(
                    f'{message}; bus faulted after {counters["consecutive_failures"]} '
                    'consecutive failed operations', self.port, operation, motor, motor_id)
        _LOGGER.warning(message)
        raise error_type(message, self.port, operation, motor, motor_id)
