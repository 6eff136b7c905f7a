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

import signal
import sys
import threading

import rclpy
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from remote_inference_py.common.process import tune_allocator


class ConfigError(ValueError):
    """A parameter, config file or checkpoint is invalid; the message names it."""


def run_node(node_factory, args=None, num_threads=1):
    """
    Create the node, spin it until it is finished, clean up; return the exit code.

    ``num_threads=1`` (the default) uses rclpy's SingleThreadedExecutor. Measured with rclpy
    9.1.2 on these machines: a 30 Hz timer beside a 100 Hz subscription and a few services
    ran late by up to 1.5 s under the MultiThreadedExecutor (even in its own callback group),
    and never by more than 5 ms under the SingleThreadedExecutor. So our nodes keep every
    callback short and non-blocking, and run slow work (inference, bus I/O) in their own
    worker threads instead of relying on the multi-threaded executor.
    """
    tune_allocator()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    signals = []

    def on_signal(signum, _frame):
        signals.append(signum)
        if node is None or len(signals) > 1:
            raise KeyboardInterrupt
        node.request_stop(f'received {signal.Signals(signum).name}')

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    exit_code = 0
    executor = None
    spinner = None
    try:
        node = node_factory()
        if num_threads == 1:
            executor = SingleThreadedExecutor()
        else:
            executor = MultiThreadedExecutor(num_threads=num_threads)
        executor.add_node(node)
        # spin() in a worker thread, so the main thread only waits and signal handlers run at
        # once. (A loop of spin_once() on the MultiThreadedExecutor stalled timers for up to
        # 2 s on these machines; see run_node's docstring.)
        failure = []
        spinner = threading.Thread(target=_spin, args=(executor, failure), daemon=True)
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
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if executor is not None:
            executor.shutdown(timeout_sec=2.0)
        if spinner is not None:
            spinner.join(timeout=5.0)
        if node is not None:
            try:
                node.close()
            finally:
                node.destroy_node()
        rclpy.try_shutdown()
    return exit_code


def _spin(executor, failure):
    """Spin until the executor is shut down; keep an exception for the main thread."""
    try:
        executor.spin()
    except Exception as error:  # noqa: B902 - reported and turned into an exit code
        failure.append(error)
