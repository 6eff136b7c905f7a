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

"""Benchmark one read-plus-write cycle of a 6-servo Feetech bus (CI runs only its --smoke).

A cycle is what the hardware node does per control tick: one SYNC_READ of Present_Position
(6 replies) and one SYNC_WRITE of Goal_Position. The script reports:

- protocol bytes per cycle, counted on the port, and the time they take on a 1 Mbit/s wire
  (10 bits per byte: start, 8 data, stop). Expected: SYNC_READ request 14 bytes (header 2,
  id, length, instruction, address, data length, 6 ids, checksum), 6 replies of 8 bytes
  (header 2, id, length, error, 2 data, checksum), SYNC_WRITE 26 bytes (7 + 6 x (id + 2
  data) + checksum): 40 written + 48 read = 88 bytes = 0.88 ms;
- the achieved cycle time against the emulator (a separate process on a pseudo-terminal),
  back to back, for the SDK's stock busy-polling PortHandler and our BoundedWaitPortHandler;
- the driver process's CPU use while cycling at 100 Hz, for both handlers, with the
  emulator adding 0, 1 and 4 ms of reply latency (a USB serial adapter's latency).

Run from the repository root::

    PYTHONPATH=src python bench/bench_servo_bus.py [--cycles 2000] [--seconds 3]

``--smoke`` (bench/smoke.py): 20 cycles and one short CPU run per handler.
"""

import argparse
import pathlib
import statistics
import sys
import time

import scservo_sdk as scs
import smoke

from remote_inference_py.hardware.feetech import (
    BoundedWaitPortHandler, FeetechBus, FeetechBusConfig)

sys.path[:0] = [str(pathlib.Path(__file__).resolve().parents[1] / 'test')]
from emulator import EmulatorProcess  # noqa: E402,I100 - test/ is not a package

WIRE_BITS_PER_BYTE = 10
BAUDRATE = 1_000_000


def counting(handler_type):
    """Return a subclass of ``handler_type`` that counts bytes written and read."""

    class Counting(handler_type):
        written = 0
        read = 0

        def writePort(self, packet):  # noqa: N802 (SDK method name)
            Counting.written += len(packet)
            return super().writePort(packet)

        def readPort(self, length):  # noqa: N802 (SDK method name)
            data = super().readPort(length)
            Counting.read += len(data)
            return data

    return Counting


def make_bus(port: str, bounded: bool):
    """Return a connected, configured bus with a byte-counting port handler."""
    handler_type = counting(BoundedWaitPortHandler if bounded else scs.PortHandler)
    config = FeetechBusConfig.so101(port, bounded_wait=bounded)

    def factory(config):
        if bounded:
            return handler_type(config.port, config.latency_timer_ms)
        return handler_type(config.port)

    bus = FeetechBus(config, port_handler_factory=factory)
    bus.connect()
    bus.configure()
    return bus, handler_type


def cycle(bus, goals):
    """Run one read-plus-write cycle."""
    bus.read_positions()
    bus.write_goal_positions(goals)


def measure_bytes(bus, handler_type, goals):
    """Return (bytes written, bytes read) of one cycle."""
    handler_type.written = handler_type.read = 0
    cycle(bus, goals)
    return handler_type.written, handler_type.read


def measure_cycle_times(bus, goals, cycles):
    """Return per-cycle wall times in ms, back to back."""
    times = []
    for _ in range(cycles):
        start = time.perf_counter()
        cycle(bus, goals)
        times.append((time.perf_counter() - start) * 1000)
    return times


def measure_cpu(bus, goals, seconds, rate_hz):
    """Cycle at ``rate_hz`` for ``seconds``; return (CPU % of one core, missed ticks)."""
    period = 1.0 / rate_hz
    ticks = int(seconds * rate_hz)
    missed = 0
    cpu_start, wall_start = time.process_time(), time.monotonic()
    next_tick = wall_start
    for _ in range(ticks):
        cycle(bus, goals)
        next_tick += period
        delay = next_tick - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            missed += 1
    cpu = time.process_time() - cpu_start
    wall = time.monotonic() - wall_start
    return 100.0 * cpu / wall, missed


def percentile(values, fraction):
    """Return the ``fraction`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main(argv=None) -> int:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--cycles', type=int, default=2000, help='back-to-back cycles')
    parser.add_argument('--seconds', type=float, default=3.0, help='duration of CPU runs')
    parser.add_argument('--rate', type=float, default=100.0, help='control rate in Hz')
    parser.add_argument('--latencies', default='0,1,4',
                        help='emulated adapter latencies in ms for the CPU runs')
    args = smoke.parse_args(parser, argv, cycles=20, seconds=0.2, latencies='1')
    latencies = [float(item) for item in args.latencies.split(',') if item]

    results = {}
    with EmulatorProcess() as emulator:
        for bounded in (False, True):
            emulator.set_latency(0)
            bus, handler_type = make_bus(emulator.port, bounded)
            bus.enable_torque()
            goals = bus.read_positions()
            written, read = measure_bytes(bus, handler_type, goals)
            times = measure_cycle_times(bus, goals, args.cycles)
            cpu = {}
            for latency in latencies:
                emulator.set_latency(latency)
                cpu[latency] = measure_cpu(bus, goals, args.seconds, args.rate)
            emulator.set_latency(0)
            bus.disconnect()
            results[bounded] = {
                'written': written, 'read': read, 'mean': statistics.mean(times),
                'p50': percentile(times, 0.5), 'p99': percentile(times, 0.99), 'cpu': cpu,
                'counters': bus.counters}

    stock, ours = results[False], results[True]
    total_bytes = ours['written'] + ours['read']
    wire_ms = total_bytes * WIRE_BITS_PER_BYTE / BAUDRATE * 1000

    def ratio(a, b):
        return f'{a / b:.2f}' if b else 'n/a'

    rows = [
        ('protocol bytes per cycle (request + replies)',
         f"{stock['written']} + {stock['read']}", f"{ours['written']} + {ours['read']}", '1.00'),
        ('implied wire time at 1 Mbit/s [ms]', f'{wire_ms:.3f}', f'{wire_ms:.3f}', '1.00'),
        ('achieved cycle on emulator, mean [ms]', f"{stock['mean']:.3f}", f"{ours['mean']:.3f}",
         ratio(stock['mean'], ours['mean'])),
        ('achieved cycle on emulator, p50 [ms]', f"{stock['p50']:.3f}", f"{ours['p50']:.3f}",
         ratio(stock['p50'], ours['p50'])),
        ('achieved cycle on emulator, p99 [ms]', f"{stock['p99']:.3f}", f"{ours['p99']:.3f}",
         ratio(stock['p99'], ours['p99'])),
        ('achieved p50 / implied wire time', ratio(stock['p50'], wire_ms),
         ratio(ours['p50'], wire_ms), ''),
    ]
    for latency in latencies:
        (stock_cpu, stock_missed), (our_cpu, our_missed) = (
            stock['cpu'][latency], ours['cpu'][latency])
        rows.append((
            f'driver CPU at {args.rate:g} Hz, {latency:g} ms reply latency [% of a core]',
            f'{stock_cpu:.1f} ({stock_missed} late ticks)',
            f'{our_cpu:.1f} ({our_missed} late ticks)', ratio(stock_cpu, our_cpu)))

    print(f'Servo bus cycle: SYNC_READ Present_Position + SYNC_WRITE Goal_Position, 6 servos, '
          f'{args.cycles} back-to-back cycles, {args.seconds:g} s per CPU run.\n')
    print('| metric | stock SDK PortHandler (busy poll) | BoundedWaitPortHandler | '
          'ratio stock / bounded |')
    print('|---|---|---|---|')
    for row in rows:
        print('| ' + ' | '.join(row) + ' |')
    for name, result in (('stock', stock), ('bounded', ours)):
        counters = result['counters']
        if counters.timeouts or counters.checksum_errors or counters.failed_operations:
            print(f'\nwarning: {name} run had errors: {counters.as_dict()}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
