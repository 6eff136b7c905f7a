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
The ``main()`` every node of this package shares.

A robot node must not die on Ctrl+C with torque in an unknown state, so SIGINT and SIGTERM do
not raise inside a callback. The first signal calls ``node.request_stop(reason)`` and the
node finishes on its own terms (the executor returns the arm to its initial position, the
hardware interface holds, then disables torque); the loop ends when ``node.finished`` is true.
A second signal interrupts at once. The process exits with ``node.exit_code`` (non-zero after
a terminal fault), 2 when the node could not start (a configuration error, logged with what is
wrong), and 130 when interrupted twice.

Nodes used with :func:`run_node` provide ``finished``, ``exit_code``, ``request_stop(reason)``
and ``close()`` (release hardware; called exactly once, also after errors).
"""

import gc
import os
import signal
import sys
import threading

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from remote_inference_py.common.process import tune_allocator


class ConfigError(ValueError):
    """A parameter, config file or checkpoint is invalid; the message names it."""


EXECUTOR_ENV = 'REMOTE_INFERENCE_EXECUTOR'
EXECUTORS = ('events', 'single')
SPIN_PERIOD_S = 0.1


def make_executor():
    """
    Return the executor a node spins: rclpy's EventsExecutor or SingleThreadedExecutor.

    One thread, always. Measured with rclpy 9.1.2 on these machines: a 30 Hz timer beside a
    100 Hz subscription and a few services ran late by up to 1.5 s under the
    MultiThreadedExecutor (even in its own callback group), and never by more than 5 ms under
    the SingleThreadedExecutor. So our nodes keep every callback short and non-blocking, and
    run slow work (inference, bus I/O) in their own worker threads.

    The EventsExecutor (``rclpy.experimental``, rclpy >= 7.1.4 on Jazzy, Kilted) dispatches
    messages in C++: on the policy server it took ~0.2 ms (a tenth) off an observation-to-chunk
    round trip, on the executor node's side another ~0.25 ms, so every node spins it. Its
    timers fire less precisely (100 Hz period p99 +0.8 to +1.5 ms idle, against +0.2 to
    +0.9 ms), so the executor's control tick is not a timer but a thread of its own
    (``common/ticker.py``). ``REMOTE_INFERENCE_EXECUTOR=events|single`` overrides the choice
    for every node; where rclpy has no EventsExecutor the SingleThreadedExecutor is used.
    """
    choice = os.environ.get(EXECUTOR_ENV, 'events')
    if choice not in EXECUTORS:
        raise ConfigError(f'{EXECUTOR_ENV}={choice!r} is not one of {", ".join(EXECUTORS)}')
    if choice == 'events':
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            return SingleThreadedExecutor()
        return EventsExecutor()
    return SingleThreadedExecutor()


def run_node(node_factory, args=None):
    """Create the node, spin it until it is finished, clean up; return the exit code."""
    tune_allocator()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    signals = []
    stop_spinning = threading.Event()

    def on_signal(signum, _frame):
        signals.append(signum)
        if node is None or len(signals) > 1:
            raise KeyboardInterrupt
        node.request_stop(f'received {signal.Signals(signum).name}')

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    exit_code = 0
    spinning = None
    spinner = None
    try:
        spinning = make_executor()
        node = node_factory()
        # What starting made (modules, the model, the node) lives as long as the process:
        # keep the collector from walking it again. A full collection over it stopped a node
        # for ~90 ms with torch imported (200k objects; longer on a loaded machine), which is
        # enough to starve a tight refill.
        gc.collect()
        gc.freeze()
        spinning.add_node(node)
        # Spin in a worker thread, so the main thread only waits and signal handlers run at
        # once. The EventsExecutor in a spin_once() loop: its spin() delivered nothing and
        # burnt a core with these wheels (platform notes).
        failure = []
        spinner = threading.Thread(target=_spin, args=(spinning, stop_spinning, failure),
                                   daemon=True)
        spinner.start()
        while not node.finished and spinner.is_alive():
            spinner.join(timeout=0.05)
        if failure:
            raise failure[0]
        exit_code = node.exit_code
    except ConfigError as error:
        message = f'cannot start: {error}'
        if node is not None:
            node.get_logger().fatal(message)
        else:
            print(f'[FATAL] {message}', file=sys.stderr, flush=True)
        exit_code = 2
    except KeyboardInterrupt:
        exit_code = 130
    finally:
        gc.unfreeze()   # rclpy's context and the node are finalized by the collector at exit
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        stop_spinning.set()
        looping = not isinstance(spinning, SingleThreadedExecutor)
        if spinning is not None and not looping:
            spinning.shutdown(timeout_sec=2.0)   # returns from spin()
        if spinner is not None:
            spinner.join(timeout=5.0)
        if spinning is not None and looping:
            spinning.shutdown(timeout_sec=2.0)   # after its last spin_once()
        if node is not None:
            try:
                node.close()
            finally:
                node.destroy_node()
        rclpy.try_shutdown()
    return exit_code


def _spin(executor, stop, failure):
    """Spin until shut down or ``stop`` is set; keep an exception for the main thread."""
    try:
        if isinstance(executor, SingleThreadedExecutor):
            executor.spin()
            return
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
    except Exception as error:  # noqa: B902 - reported and turned into an exit code
        failure.append(error)
