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

A robot node must not die on Ctrl+C with torque in an unknown state, so SIGINT, SIGTERM and
SIGHUP do not raise inside a callback. The first of them calls ``node.request_stop(reason)``
(one that comes while the node is still being made, once it exists) and the node finishes on
its own terms (the executor returns the arm to its initial position,
the hardware interface keeps applying its commands meanwhile, then holds and disables torque);
the loop ends when ``node.finished`` is true.

Repeated signals (:class:`StopSignals`): the same stop often arrives more than once within
milliseconds (``ros2 launch`` without a terminal forwards SIGINT to its children, so a SIGINT
to the whole process group reaches every node twice; systemd and supervisors signal the
group too). Any signal within ``REPEAT_WINDOW_S`` (1 s) of the first is that same request and
is only logged. A SIGINT after that window is a deliberate second Ctrl+C and interrupts at
once (the executor stops commanding, the hardware interface closes: torque off). A later
SIGTERM or SIGHUP never cuts the return short; SIGKILL does, and then the hardware interface
(its own process) still stops safely when its commands stop.

Started by a launcher that exports its pid as ``REMOTE_INFERENCE_STOP_WITH_PARENT`` (the
bringup launch file and ``./run demo`` do), a node also stops when that parent dies: Linux's
parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGTERM)``) turns ``kill <ros2 launch>``,
``kill -9`` or a crashed supervisor into the node's normal stop instead of an orphan that
keeps moving the arm.

The process exits with ``node.exit_code`` (non-zero after a terminal fault), 2 when the node
could not start (a configuration error or unparsable ROS arguments, logged with what is
wrong), and 130 when interrupted. After ``close()`` (the node's own stop: the arm returned,
torque off), destroying the node's DDS endpoints is bounded by ``TEARDOWN_BOUND_S``: a process
still in it then says so (:data:`TEARDOWN_HUNG`: Fast DDS 3.2 can deadlock there), prints every
thread's stack, removes the shared-memory segments it owns (nobody else would: a process that
exits holding them leaks them) and exits with 1. That needs the GIL, which rclpy holds through
the C++ call Fast DDS deadlocks in; so :data:`GIL_FREE_EXTRA_S` later, faulthandler's watchdog
(a C thread) prints every stack and exits with 1 even then. A slow ``close()`` is only
reported, after ``CLEANUP_REPORT_S``.

A node that seems stuck can be asked where it is: ``kill -USR1 <pid>`` prints every thread's
Python stack to its log (faulthandler, which needs no GIL), and the node goes on.

Nodes used with :func:`run_node` provide ``finished``, ``exit_code``, ``request_stop(reason)``
and ``close()`` (release hardware; called exactly once, also after errors).
"""

import ctypes
import ctypes.util
import faulthandler
import gc
import os
import signal
import sys
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from remote_inference_py.common.process import (
    owned_segments, print_stacks_on_request, remove_segments, tune_allocator)


class ConfigError(ValueError):
    """A parameter, config file or checkpoint is invalid; the message names it."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REPEAT_WINDOW_S = 1.0
STOP_WITH_PARENT_ENV = 'REMOTE_INFERENCE_STOP_WITH_PARENT'
PR_SET_PDEATHSIG = 1


class StopSignals:
    """
    Decide what a stop signal means: ``stop``, ``repeat`` (same request) or ``interrupt``.

    The first signal asks for a clean stop. Later ones within ``window_s`` of it are the same
    request delivered twice (process group plus launch forwarding). After the window, only a
    SIGINT interrupts (a person's deliberate second Ctrl+C); SIGTERM and SIGHUP (launch's own
    escalation, a supervisor, the parent-death signal) repeat the request.
    """

    def __init__(self, window_s=REPEAT_WINDOW_S, clock=time.monotonic):
        self.window_s = window_s
        self.clock = clock
        self.first = None

    def decide(self, signum):
        """Return ``'stop'``, ``'repeat'`` or ``'interrupt'`` for a signal received now."""
        now = self.clock()
        if self.first is None:
            self.first = now
            return 'stop'
        if signum == signal.SIGINT and now - self.first >= self.window_s:
            return 'interrupt'
        return 'repeat'


def stop_with_parent(environ=os.environ):
    """
    Ask Linux to send SIGTERM when the launcher dies; return True when armed.

    ``REMOTE_INFERENCE_STOP_WITH_PARENT`` holds the launcher's pid. A launcher that died
    before the request took effect is caught by checking that pid: the node then stops at
    once. A variable inherited by a process the launcher did not start (its parent is
    someone else, and the launcher still lives) arms nothing.
    """
    value = environ.get(STOP_WITH_PARENT_ENV, '')
    if not value.isdigit() or not sys.platform.startswith('linux'):
        return False
    launcher = int(value)
    if os.getppid() != launcher:
        if _alive(launcher):
            return False
        os.kill(os.getpid(), signal.SIGTERM)   # orphaned before we could ask
        return True
    libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return False
    if os.getppid() != launcher:   # died between the check and the request
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


ROS_EXECUTOR_ENV = 'REMOTE_INFERENCE_ROS_EXECUTOR'
EXECUTORS = ('events', 'single')
SPIN_PERIOD_S = 0.1
CLEANUP_REPORT_S = 8.0
TEARDOWN_BOUND_S = 10.0
GIL_FREE_EXTRA_S = 5.0
"""After TEARDOWN_BOUND_S, this much more ends a teardown stuck holding the GIL [s]."""
TEARDOWN_HUNG = 'destroying the DDS endpoints did not return within'


def make_ros_executor():
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
    (``common/ticker.py``). ``REMOTE_INFERENCE_ROS_EXECUTOR=events|single`` overrides the choice
    for every node; where rclpy has no EventsExecutor the SingleThreadedExecutor is used.
    """
    choice = os.environ.get(ROS_EXECUTOR_ENV, 'events')
    if choice not in EXECUTORS:
        raise ConfigError(f'{ROS_EXECUTOR_ENV}={choice!r} is not one of {", ".join(EXECUTORS)}')
    if choice == 'events':
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            return SingleThreadedExecutor()
        return EventsExecutor()
    return SingleThreadedExecutor()


def run_node(node_factory, args=None, config_errors=()):
    """
    Create the node, spin it until it is finished, clean up; return the exit code.

    ``config_errors``: exception types of the rooms the node stands on that mean an invalid
    configuration, like :class:`ConfigError` (exit 2).
    """
    tune_allocator()
    print_stacks_on_request()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as error:  # noqa: B902 - rcl's parse errors are RCLError (private)
        fatal(f'cannot start: bad ROS arguments: {error}')
        return 2
    node = None
    signals = StopSignals()
    interrupted = []
    starting = []   # a stop signal that came while the node was being made
    stop_spinning = threading.Event()

    def on_signal(signum, _frame):
        name = signal.Signals(signum).name
        decision = signals.decide(signum)
        if interrupted:
            return   # cleaning up already: nothing may cut that short
        if decision == 'interrupt':
            interrupted.append(name)
            raise KeyboardInterrupt
        if node is None:   # still starting: the stop waits for the node (its stop path)
            starting.append(name)
            return
        if decision == 'stop':
            node.request_stop(f'received {name}')
        else:
            node.get_logger().info(
                f'received {name} again: already stopping (Ctrl+C at least '
                f'{signals.window_s:.0f} s after the first interrupts at once)')

    previous = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    stop_with_parent()
    exit_code = 0
    spinning = None
    spinner = None
    try:
        spinning = make_ros_executor()
        node = node_factory()
        if starting:
            node.request_stop(f'received {starting[0]} while starting')
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
                                   name='spinner', daemon=True)
        spinner.start()
        while not node.finished and spinner.is_alive():
            spinner.join(timeout=0.05)
        if failure:
            raise failure[0]
        exit_code = node.exit_code
    except (ConfigError, *config_errors) as error:
        message = f'cannot start: {error}'
        if node is not None:
            node.get_logger().fatal(message)
        else:
            fatal(message)
        exit_code = 2
    except KeyboardInterrupt:
        exit_code = 130
    finally:
        interrupted.append('closing')   # signals from here on are ignored: close() must run
        # Cleaning up and exiting take well under a second, but a few test runs on a loaded
        # machine saw a process still alive 18 s after it had finished. If it lasts
        # CLEANUP_REPORT_S, every thread's Python stack goes to stderr (it names the call that
        # hangs). Report only: the process goes on as before. Python's exit cancels it.
        faulthandler.dump_traceback_later(CLEANUP_REPORT_S, exit=False)
        gc.unfreeze()   # rclpy's context and the node are finalized by the collector at exit
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
                # The node's own clean-up is done (the arm returned, torque off): what is left
                # is DDS tearing the endpoints down, which Fast DDS 3.2 can deadlock against
                # its discovery thread (docs/tests.md). Bounded: after TEARDOWN_BOUND_S every
                # thread's stack goes to stderr and the process exits with code 1, instead
                # of hanging until someone kills it.
                destroy_bounded(node, exit_code, shutdown=True)
                # destroy_bounded used faulthandler's one timer: the report goes on after it.
                faulthandler.dump_traceback_later(CLEANUP_REPORT_S, exit=False)
        rclpy.try_shutdown()   # no node made (a bad parameter): nothing of DDS to wait on
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return exit_code


def fatal(message):
    """Print `message` as rclpy logs a FATAL line (stamped) where no node exists to log it."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else 'node'
    print(f'[FATAL] [{time.time():.9f}] [{name}]: {message}', file=sys.stderr, flush=True)


def destroy_bounded(node, exit_code=0, shutdown=False):
    """Destroy `node`'s endpoints; after TEARDOWN_BOUND_S, name the hang and exit (module).

    With `shutdown`, rclpy's context is shut down inside the same bound: that deletes the DDS
    participant, and a loaded test run saw a peer whose endpoints were gone still in its
    teardown 20 s after SIGINT.
    """
    bound = threading.Timer(TEARDOWN_BOUND_S, _teardown_hung, (node.get_name(), exit_code))
    bound.daemon = True
    bound.start()
    # The timer needs the GIL; a test run hung for good in rclpy's Publisher.destroy, which
    # holds it through Fast DDS's deadlock. faulthandler's watchdog needs no GIL.
    faulthandler.dump_traceback_later(TEARDOWN_BOUND_S + GIL_FREE_EXTRA_S, exit=True,
                                      file=sys.__stderr__)
    try:
        node.destroy_node()
        if shutdown:
            rclpy.try_shutdown()
    finally:
        faulthandler.cancel_dump_traceback_later()
        bound.cancel()


def _teardown_hung(name, exit_code):
    """End a process stuck destroying its DDS endpoints after its own clean stop."""
    print(f'[ERROR] [{name}]: {TEARDOWN_HUNG} {TEARDOWN_BOUND_S:g} s after the node had '
          f'stopped (exit code {exit_code}; Fast DDS 3.2 can deadlock there); every thread:',
          file=sys.stderr, flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    removed = remove_segments(owned_segments(os.getpid()))
    print(f'[ERROR] [{name}]: removed its {len(removed) // 2} shared-memory segment(s); '
          'exiting with 1', file=sys.stderr, flush=True)
    os._exit(1)


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
