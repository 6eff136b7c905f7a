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

"""Feetech servo bus emulator on a pseudo-terminal, for tests and benchmarks.

Test support, not part of the installed package: no user-facing feature runs it (the tests and
``bench/bench_servo_bus.py`` do, with test/ on their import path). Run it in its own process
(``./run shell`` has the package on the path)::

    python test/emulator.py --motors 1,2,3,4,5,6

It prints the slave tty path (for example ``/dev/pts/7``) as its first stdout line; open that
path with the real driver (``scservo_sdk`` over pyserial). :class:`EmulatorProcess` starts it
as a subprocess and returns the path.

The emulator speaks Feetech protocol 0 byte-exactly. A packet is ``FF FF id length
instruction params... checksum`` with ``length = len(params) + 2`` and ``checksum = ~(id +
length + instruction + sum(params)) & 0xFF``; a reply has the same frame with the status
(error) byte in place of the instruction. Supported: PING (1), READ (2), WRITE (3),
REG_WRITE (4), ACTION (5), SYNC_READ (0x82: replies in the order of the id list) and
SYNC_WRITE (0x83: no reply), broadcast id 0xFE, ``Response_Status_Level`` and
``Return_Delay_Time`` (2 us units). Requests with a bad checksum are dropped, as a servo does.
Each motor has a 256-byte memory table laid out as the STS3215 control table (model number
777 at address 3). When torque is on, ``Present_Position`` moves toward ``Goal_Position``
(clamped to the position limits) at ``--speed`` ticks/s; ``Homing_Offset`` shifts
``Present_Position`` as on the servo (present = actual - offset). Not emulated: velocity and
PWM modes, acceleration ramps, EEPROM locking, unloading torque on overload.

Control interface (fault injection at run time): one command per line on the emulator's
stdin, one reply line on stdout, ``ok [result]`` or ``error <message>``:

- ``fault <id> <kind> [count]``: inject a fault on motor ``id``; ``kind`` is ``no_reply``
  (the motor executes instructions but its replies are lost), ``bad_checksum`` (replies carry
  a wrong checksum), ``short_reply`` (a well-formed reply without its parameters, as a late
  reply to an earlier PING read in place of the answer), ``overload`` (the overload bit 0x20
  is set in the status byte of replies and in the ``Status`` register), ``late_reply`` (the
  reply comes LATE_REPLY_S late, after the driver's reply timeout, as from a stalled adapter
  or host), ``held_reply`` (the reply is held back and sent just ahead of the motor's next
  reply, after the next request: later than any quiet wait, as from a host stalled between
  two replies) or ``missing`` (the motor ignores everything, as if unplugged). With ``count``
  the fault affects that many packets, then clears itself; without, it lasts until cleared.
- ``clear [id]``: clear the faults of one motor, or of all.
- ``get <id> <register>``: read a register by name (decoded) or by address (one byte).
- ``set <id> <register> <value>``: write a register; ``set <id> Present_Position <ticks>``
  moves the shaft, as if by hand.
- ``latency <ms>``: delay every reply burst by ``ms`` (emulates USB adapter latency).
- ``stats``: JSON counters of received packets.
- ``quit``: stop. The emulator also stops when its stdin closes (its parent exited).
"""

import argparse
import errno
import json
import os
import select
import subprocess
import sys
import time
import tty
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from remote_inference_py.robot.control_table import ControlTable, STS3215

INST_PING = 0x01
INST_READ = 0x02
INST_WRITE = 0x03
INST_REG_WRITE = 0x04
INST_ACTION = 0x05
INST_SYNC_READ = 0x82
INST_SYNC_WRITE = 0x83
BROADCAST_ID = 0xFE
ERROR_OVERLOAD = 0x20

FAULT_KINDS = ('no_reply', 'bad_checksum', 'short_reply', 'overload', 'late_reply', 'held_reply',
               'missing')
"""Fault kinds accepted by ``fault <id> <kind> [count]``."""
LATE_REPLY_S = 0.03
"""How late a ``late_reply`` comes [s]: beyond the reply timeout at a 5 ms latency timer
(12 ms), within the driver's quiet wait after a failed attempt (50 ms)."""

MEMORY_SIZE = 256
MAX_READ_LENGTH = 244
"""Longest read answered: the reply must fit the 250-byte packet limit of the SDK."""
FRAME_TIMEOUT_S = 0.02
"""A partial request older than this is discarded, like a servo's frame timeout."""


def checksum(body: Iterable[int]) -> int:
    """Return the protocol 0 checksum of the bytes from id to the last parameter."""
    return (~sum(body)) & 0xFF


def build_packet(motor_id: int, instruction: int, params: Sequence[int] = ()) -> bytes:
    """Build a protocol 0 frame (instruction packet, or reply with the error byte)."""
    body = [motor_id, len(params) + 2, instruction, *params]
    return bytes([0xFF, 0xFF, *body, checksum(body)])


class PacketParser:
    """Split a byte stream into protocol 0 packets, dropping junk and bad checksums."""

    def __init__(self):
        """Start with an empty buffer."""
        self._buffer = bytearray()
        self._partial_since: Optional[float] = None
        self.bad_checksums = 0
        self.junk_bytes = 0

    @property
    def pending(self) -> bool:
        """True while an incomplete packet waits for more bytes."""
        return bool(self._buffer)

    def feed(self, data: bytes, now: float) -> List[Tuple[int, int, bytes]]:
        """Add received bytes; return complete packets as ``(id, instruction, params)``."""
        if (self._buffer and self._partial_since is not None
                and now - self._partial_since > FRAME_TIMEOUT_S):
            self.junk_bytes += len(self._buffer)
            self._buffer.clear()
        self._buffer.extend(data)
        packets = []
        buffer = self._buffer
        while True:
            start = buffer.find(b'\xff\xff')
            if start < 0:
                keep = 1 if buffer.endswith(b'\xff') else 0
                self.junk_bytes += len(buffer) - keep
                del buffer[:len(buffer) - keep]
                break
            if start:
                self.junk_bytes += start
                del buffer[:start]
            if len(buffer) < 4:
                break
            motor_id, length = buffer[2], buffer[3]
            if motor_id == 0xFF or length < 2:
                self.junk_bytes += 1
                del buffer[0]
                continue
            total = 4 + length
            if len(buffer) < total:
                break
            body = buffer[2:total - 1]
            if checksum(body) != buffer[total - 1]:
                self.bad_checksums += 1
                del buffer[:2]
                continue
            packets.append((motor_id, buffer[4], bytes(buffer[5:total - 1])))
            del buffer[:total]
        self._partial_since = now if buffer else None
        return packets


class EmulatedServo:
    """One STS servo: a memory table, a shaft that follows the goal, injectable faults."""

    def __init__(self, motor_id: int, table: ControlTable = STS3215, position: int = 2048,
                 speed: float = 3000.0, model_number: Optional[int] = None):
        """Create the servo at ``position`` ticks with factory-like register values."""
        self.id = motor_id
        self.table = table
        self.speed = float(speed)
        self.memory = bytearray(MEMORY_SIZE)
        self.faults: Dict[str, Optional[int]] = {}
        self.pending_write: Optional[Tuple[int, bytes]] = None
        self.held = b''   # a held_reply, sent ahead of the next reply
        self._position = float(position)
        self._last_update: Optional[float] = None
        self._read_only = set()
        for register in table:
            if not register.writable:
                self._read_only.update(range(register.address, register.address + register.size))
        defaults = {
            'Firmware_Major_Version': 3, 'Firmware_Minor_Version': 10,
            'Model_Number': table.model_number if model_number is None else model_number,
            'ID': motor_id, 'Baud_Rate': 0, 'Return_Delay_Time': 250,
            'Response_Status_Level': 1, 'Min_Position_Limit': 0,
            'Max_Position_Limit': table.max_position, 'Max_Temperature_Limit': 70,
            'Max_Voltage_Limit': 140, 'Min_Voltage_Limit': 40, 'Max_Torque_Limit': 1000,
            'Unloading_Condition': 44, 'LED_Alarm_Condition': 47, 'P_Coefficient': 32,
            'D_Coefficient': 32, 'I_Coefficient': 0, 'Minimum_Startup_Force': 16,
            'CW_Dead_Zone': 1, 'CCW_Dead_Zone': 1, 'Protection_Current': 500,
            'Angular_Resolution': 1, 'Overload_Torque': 80, 'Protective_Torque': 20,
            'Protection_Time': 200, 'Torque_Limit': 1000, 'Lock': 1,
            'Goal_Position': position, 'Present_Voltage': 120, 'Present_Temperature': 30,
        }
        for name, value in defaults.items():
            self._store(name, value)

    # Memory access.

    def _store(self, name: str, value: int) -> None:
        register = self.table[name]
        self.memory[register.address:register.address + register.size] = bytes(
            register.to_bytes(value))

    def _load(self, name: str) -> int:
        register = self.table[name]
        return register.from_bytes(self.memory[register.address:register.address + register.size])

    @property
    def torque_enabled(self) -> bool:
        """True when ``Torque_Enable`` is 1."""
        return self.memory[self.table['Torque_Enable'].address] == 1

    def _target(self) -> float:
        goal = self._load('Goal_Position')
        low, high = self._load('Min_Position_Limit'), self._load('Max_Position_Limit')
        if high > low:
            goal = min(high, max(low, goal))
        return float(goal)

    def update(self, now: float) -> None:
        """Advance the shaft toward the goal up to time ``now`` and refresh feedback."""
        elapsed = 0.0 if self._last_update is None else max(0.0, now - self._last_update)
        self._last_update = now
        moving = False
        if self.torque_enabled:
            target = self._target()
            delta = target - self._position
            step = self.speed * elapsed
            if self.speed <= 0 or abs(delta) <= step:
                self._position = target
            else:
                self._position += step if delta > 0 else -step
            moving = abs(target - self._position) >= 0.5
        present = int(round(self._position)) % self.table.resolution
        self._store('Present_Position', present)
        self._store('Present_Velocity', int(self.speed) if moving and self.speed > 0 else 0)
        self._store('Moving', 1 if moving else 0)
        self._store('Status', self.error_byte())

    def read(self, address: int, length: int, now: float) -> bytes:
        """Return ``length`` bytes of memory from ``address`` (zero past the table)."""
        self.update(now)
        data = bytes(self.memory[address:address + length])
        return data + bytes(length - len(data))

    def write(self, address: int, data: bytes, now: float) -> None:
        """Write bytes at ``address``, skipping read-only ones, and apply side effects."""
        self.update(now)
        offset_before = self._load('Homing_Offset')
        for index, value in enumerate(data):
            target = address + index
            if target < MEMORY_SIZE and target not in self._read_only:
                self.memory[target] = value
        shift = self._load('Homing_Offset') - offset_before
        if shift:
            self._position -= shift
        self.update(now)

    def set_position(self, ticks: float, now: float) -> None:
        """Move the shaft to ``ticks`` in the present-position frame (by hand)."""
        self.update(now)
        self._position = float(ticks)
        self.update(now)

    # Faults.

    def take_fault(self, kind: str) -> bool:
        """Return True if fault ``kind`` is active, using up one count."""
        if kind not in self.faults:
            return False
        remaining = self.faults[kind]
        if remaining is not None:
            if remaining <= 1:
                del self.faults[kind]
            else:
                self.faults[kind] = remaining - 1
        return True

    def error_byte(self) -> int:
        """Return the status byte: hardware error flags."""
        return ERROR_OVERLOAD if 'overload' in self.faults else 0

    def reply(self, params: bytes = b'') -> Optional[bytes]:
        """Build this servo's reply, or None when a fault swallows it."""
        if self.take_fault('no_reply'):
            return None
        error = self.error_byte()
        self.take_fault('overload')
        if params and self.take_fault('short_reply'):
            params = b''
        packet = bytearray(build_packet(self.id, error, params))
        if self.take_fault('bad_checksum'):
            packet[-1] ^= 0x5A
        held, self.held = self.held, b''
        if self.take_fault('held_reply'):
            self.held = bytes(packet)
            return held or None
        return held + bytes(packet)

    def reply_delay_s(self) -> float:
        """Reply delay from ``Return_Delay_Time`` (2 us units), plus a ``late_reply``'s."""
        late = LATE_REPLY_S if self.take_fault('late_reply') else 0.0
        return self.memory[self.table['Return_Delay_Time'].address] * 2e-6 + late

    @property
    def replies_to_writes(self) -> bool:
        """False when ``Response_Status_Level`` is 0 (reply to READ and PING only)."""
        return self.memory[self.table['Response_Status_Level'].address] != 0


class BusEmulator:
    """Several emulated servos on one bus; turns request packets into reply bytes."""

    def __init__(self, servos: Iterable[EmulatedServo],
                 clock: Callable[[], float] = time.monotonic):
        """Put ``servos`` on the bus; ``clock`` gives seconds for motion."""
        self.servos: Dict[int, EmulatedServo] = {servo.id: servo for servo in servos}
        self.clock = clock
        self.latency_s = 0.0
        self.packets: Dict[str, int] = {}

    def _present(self, motor_id: int) -> Optional[EmulatedServo]:
        servo = self.servos.get(motor_id)
        if servo is None or servo.take_fault('missing'):
            return None
        return servo

    def _targets(self, motor_id: int) -> List[EmulatedServo]:
        ids = sorted(self.servos) if motor_id == BROADCAST_ID else [motor_id]
        return [servo for servo in map(self._present, ids) if servo is not None]

    def handle(self, motor_id: int, instruction: int,
               params: bytes) -> List[Tuple[float, bytes]]:
        """Execute one request; return ``(delay_s, reply)`` pairs in bus order."""
        now = self.clock()
        self.packets[f'0x{instruction:02x}'] = self.packets.get(f'0x{instruction:02x}', 0) + 1
        replies: List[Tuple[float, Optional[bytes]]] = []
        broadcast = motor_id == BROADCAST_ID
        if instruction == INST_PING:
            for servo in self._targets(motor_id):
                replies.append((servo.reply_delay_s(), servo.reply()))
        elif (instruction == INST_READ and len(params) == 2 and not broadcast
              and 0 < params[1] <= MAX_READ_LENGTH):
            for servo in self._targets(motor_id):
                data = servo.read(params[0], params[1], now)
                replies.append((servo.reply_delay_s(), servo.reply(data)))
        elif instruction in (INST_WRITE, INST_REG_WRITE) and params:
            for servo in self._targets(motor_id):
                if instruction == INST_WRITE:
                    servo.write(params[0], params[1:], now)
                else:
                    servo.pending_write = (params[0], params[1:])
                if not broadcast and servo.replies_to_writes:
                    replies.append((servo.reply_delay_s(), servo.reply()))
        elif instruction == INST_ACTION:
            for servo in self._targets(motor_id):
                if servo.pending_write is not None:
                    servo.write(*servo.pending_write, now)
                    servo.pending_write = None
                if not broadcast and servo.replies_to_writes:
                    replies.append((servo.reply_delay_s(), servo.reply()))
        elif (instruction == INST_SYNC_READ and broadcast and len(params) >= 2
              and 0 < params[1] <= MAX_READ_LENGTH):
            address, length = params[0], params[1]
            for target_id in params[2:]:
                servo = self._present(target_id)
                if servo is not None:
                    data = servo.read(address, length, now)
                    replies.append((servo.reply_delay_s(), servo.reply(data)))
        elif instruction == INST_SYNC_WRITE and broadcast and len(params) >= 2:
            address, length = params[0], params[1]
            chunk = 1 + length
            for start in range(2, len(params) - chunk + 1, chunk):
                servo = self._present(params[start])
                if servo is not None:
                    servo.write(address, params[start + 1:start + chunk], now)
        return [(delay, reply) for delay, reply in replies if reply is not None]

    # Control commands.

    def control(self, line: str) -> str:
        """Execute one control command line; return the reply line."""
        words = line.split()
        if not words:
            return 'error empty command'
        command, args = words[0], words[1:]
        try:
            if command == 'fault' and len(args) in (2, 3):
                servo = self._servo(args[0])
                if args[1] not in FAULT_KINDS:
                    raise ValueError(
                        f'unknown fault kind {args[1]!r}; known: {", ".join(FAULT_KINDS)}')
                count = int(args[2]) if len(args) == 3 else None
                if count is not None and count < 1:
                    raise ValueError(f'fault count {count} must be at least 1')
                servo.faults[args[1]] = count
                return 'ok'
            if command == 'clear' and len(args) <= 1:
                servos = [self._servo(args[0])] if args else self.servos.values()
                for servo in servos:
                    servo.faults.clear()
                return 'ok'
            if command == 'get' and len(args) == 2:
                servo = self._servo(args[0])
                now = self.clock()
                if args[1].isdigit():
                    return f'ok {servo.read(int(args[1]), 1, now)[0]}'
                register = servo.table[args[1]]
                raw = servo.read(register.address, register.size, now)
                return f'ok {register.from_bytes(raw)}'
            if command == 'set' and len(args) == 3:
                servo = self._servo(args[0])
                now = self.clock()
                if args[1] == 'Present_Position':
                    servo.set_position(float(args[2]), now)
                else:
                    register = servo.table[args[1]]
                    servo.write(register.address, bytes(register.to_bytes(int(args[2]))), now)
                return 'ok'
            if command == 'latency' and len(args) == 1:
                latency_ms = float(args[0])
                if not 0 <= latency_ms <= 1000:
                    raise ValueError(f'latency {latency_ms} ms is outside 0..1000')
                self.latency_s = latency_ms / 1000
                return 'ok'
            if command == 'stats' and not args:
                return 'ok ' + json.dumps({'packets': self.packets})
            if command in ('ping', 'quit') and not args:
                return 'ok'
        except (ValueError, OverflowError) as error:
            return f'error {error}'
        return f'error bad command {line.strip()!r}'

    def _servo(self, text: str) -> EmulatedServo:
        try:
            return self.servos[int(text)]
        except (KeyError, ValueError):
            raise ValueError(f'no motor with id {text!r} on the emulated bus') from None


def open_pty() -> Tuple[int, int, str]:
    """Open a raw pseudo-terminal; return ``(master_fd, slave_fd, slave_path)``."""
    master_fd, slave_fd = os.openpty()
    tty.setraw(slave_fd)
    return master_fd, slave_fd, os.ttyname(slave_fd)


def serve(bus: BusEmulator, master_fd: int, control_in: int, control_out) -> None:
    """Serve bus requests on ``master_fd`` and control lines on ``control_in`` until quit."""
    parser = PacketParser()
    control_buffer = b''
    while True:
        timeout = FRAME_TIMEOUT_S if parser.pending else None
        readable, _, _ = select.select([master_fd, control_in], [], [], timeout)
        if master_fd in readable:
            try:
                data = os.read(master_fd, 4096)
            except OSError as error:
                if error.errno != errno.EIO:
                    raise
                data = b''
            for motor_id, instruction, params in parser.feed(data, bus.clock()):
                replies = bus.handle(motor_id, instruction, params)
                if replies and bus.latency_s > 0:
                    time.sleep(bus.latency_s)
                for delay, reply in replies:
                    if delay > 0:
                        time.sleep(delay)
                    os.write(master_fd, reply)
        elif not readable and parser.pending:
            parser.feed(b'', bus.clock())
        if control_in in readable:
            chunk = os.read(control_in, 4096)
            if not chunk:
                return
            control_buffer += chunk
            while b'\n' in control_buffer:
                line, control_buffer = control_buffer.split(b'\n', 1)
                text = line.decode('utf-8', 'replace')
                control_out.write(bus.control(text) + '\n')
                control_out.flush()
                if text.strip() == 'quit':
                    return


def _int_list(text: str) -> List[int]:
    return [int(item) for item in text.split(',') if item.strip()]


HARDWARE_NICE = -10


def hardware_priority() -> None:
    """Run above normal priority where this user may (root may), as the bus it stands for.

    A servo answers in microseconds whatever the host's load: it shares no CPU with the
    driver. An emulator starved beside CPU hogs answered after the driver's reply timeout, and
    a test read 'no reply from motor 1' where it expected the fault it injected elsewhere.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, 0, HARDWARE_NICE)
    except PermissionError:
        pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the emulator: print the slave tty path, then serve until quit or stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--motors', default='1,2,3,4,5,6',
                        help='comma-separated motor ids (default: 1..6, an SO-101)')
    parser.add_argument('--positions', default='2048',
                        help='initial positions in ticks: one for all, or one per motor')
    parser.add_argument('--speed', type=float, default=3000.0,
                        help='shaft speed in ticks/s when torque is on (<= 0: instant)')
    parser.add_argument('--latency-ms', type=float, default=0.0,
                        help='delay of every reply burst in ms (USB adapter latency)')
    parser.add_argument('--model-number', type=int, default=STS3215.model_number,
                        help='model number the motors report (default: STS3215, 777)')
    parser.add_argument('--missing', default='', help='comma-separated ids that start missing')
    args = parser.parse_args(argv)
    ids = _int_list(args.motors)
    positions = _int_list(args.positions)
    if len(positions) == 1:
        positions = positions * len(ids)
    if len(positions) != len(ids):
        parser.error(f'{len(positions)} positions for {len(ids)} motors')
    servos = [EmulatedServo(motor_id, position=position, speed=args.speed,
                            model_number=args.model_number)
              for motor_id, position in zip(ids, positions)]
    bus = BusEmulator(servos)
    bus.latency_s = args.latency_ms / 1000
    for motor_id in _int_list(args.missing):
        bus.control(f'fault {motor_id} missing')
    hardware_priority()
    master_fd, slave_fd, path = open_pty()
    sys.stdout.write(path + '\n')
    sys.stdout.flush()
    try:
        serve(bus, master_fd, sys.stdin.fileno(), sys.stdout)
    except KeyboardInterrupt:
        pass
    finally:
        os.close(slave_fd)
        os.close(master_fd)
    return 0


class EmulatorError(RuntimeError):
    """The emulator process failed to start or refused a control command."""


class EmulatorProcess:
    """Start the emulator in a subprocess and drive its control interface.

    Use as a context manager; ``port`` is the tty path to give the driver::

        with EmulatorProcess(motors=(1, 2, 3, 4, 5, 6)) as emulator:
            bus = FeetechBus(FeetechBusConfig.so101(emulator.port))
            emulator.inject_fault(3, 'no_reply', count=1)
    """

    def __init__(self, motors: Sequence[int] = (1, 2, 3, 4, 5, 6),
                 positions: Sequence[int] = (2048,), speed: float = 3000.0,
                 latency_ms: float = 0.0, missing: Sequence[int] = (),
                 model_number: int = STS3215.model_number, timeout: float = 10.0):
        """Record the emulator options; start() launches it."""
        self.args = [
            '--motors', ','.join(str(motor_id) for motor_id in motors),
            '--positions', ','.join(str(position) for position in positions),
            '--speed', repr(float(speed)), '--latency-ms', repr(float(latency_ms)),
            '--model-number', str(model_number),
            '--missing', ','.join(str(motor_id) for motor_id in missing)]
        self.timeout = timeout
        self.process: Optional[subprocess.Popen] = None
        self.port = ''
        self._buffer = b''

    def start(self) -> 'EmulatorProcess':
        """Launch the emulator process and wait for its tty path."""
        source_root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   'src')
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            [source_root] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *self.args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        try:
            self.port = self._readline()
        except EmulatorError:
            self.close()
            raise
        return self

    def _readline(self) -> str:
        deadline = time.monotonic() + self.timeout
        out = self.process.stdout.fileno()
        while b'\n' not in self._buffer:
            remaining = deadline - time.monotonic()
            readable = select.select([out], [], [], max(0.0, remaining))[0]
            if not readable:
                raise EmulatorError(f'emulator did not answer within {self.timeout} s')
            chunk = os.read(out, 4096)
            if not chunk:
                raise EmulatorError(
                    f'emulator exited with code {self.process.poll()} before answering')
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b'\n', 1)
        return line.decode('utf-8').strip()

    def command(self, line: str) -> str:
        """Send one control command; return the result text after ``ok``."""
        if self.process is None or self.process.poll() is not None:
            raise EmulatorError('emulator is not running')
        self.process.stdin.write(line.encode('utf-8') + b'\n')
        self.process.stdin.flush()
        reply = self._readline()
        if not reply.startswith('ok'):
            raise EmulatorError(f'emulator refused {line!r}: {reply}')
        return reply[2:].strip()

    def inject_fault(self, motor_id: int, kind: str, count: Optional[int] = None) -> None:
        """Inject fault ``kind`` on a motor, for ``count`` packets or until cleared."""
        self.command(f'fault {motor_id} {kind}' + (f' {count}' if count is not None else ''))

    def clear_faults(self, motor_id: Optional[int] = None) -> None:
        """Clear the faults of one motor, or of all motors."""
        self.command('clear' if motor_id is None else f'clear {motor_id}')

    def get(self, motor_id: int, register: str) -> int:
        """Read a register of a motor through the control interface."""
        return int(self.command(f'get {motor_id} {register}'))

    def set(self, motor_id: int, register: str, value: int) -> None:
        """Write a register of a motor (``Present_Position`` moves the shaft)."""
        self.command(f'set {motor_id} {register} {value}')

    def set_latency(self, latency_ms: float) -> None:
        """Delay every reply burst by ``latency_ms``."""
        self.command(f'latency {latency_ms}')

    def stats(self) -> Dict[str, Dict[str, int]]:
        """Return the packet counters."""
        return json.loads(self.command('stats'))

    def close(self) -> None:
        """Stop the process (quit, then terminate or kill if needed) and reap it."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.poll() is None:
                try:
                    process.stdin.write(b'quit\n')
                    process.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass
                try:
                    process.wait(timeout=2.0)
                except subprocess.TimeoutExpired:
                    process.terminate()
                    try:
                        process.wait(timeout=2.0)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
        finally:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self) -> 'EmulatorProcess':
        """Start the process."""
        return self.start()

    def __exit__(self, *exc_info) -> None:
        """Stop the process."""
        self.close()


if __name__ == '__main__':
    sys.exit(main())
