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
Helpers for tests that run nodes over real DDS.

- :class:`NodeProcess` starts a node (an installed console script, or any Python module) as a
  subprocess with a params file, logs to a file, and stops it with SIGINT, waiting for exit.
- :class:`Spinner` spins a test-process node until a condition holds, with a timeout.
- :func:`populate` fills any ROS message with distinct non-default values, for round trips.
- :func:`fastdds_segments` lists Fast DDS shared-memory segments, to prove none leak;
  :func:`owned_segments` names a live process's own.
"""

import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import yaml

from remote_inference_py.common.node_main import TEARDOWN_HUNG
from remote_inference_py.common.process import (  # noqa: F401 (segment helpers for conftest)
    communicate_bounded, owned_segments, remove_segments, STACKS_SIGNAL, STACKS_WAIT_S)
from remote_inference_py.transport import frame_ring

ROOT = pathlib.Path(__file__).resolve().parents[1]
# ./run names the install it sourced (install/, or install-ros-apt/ with RI_ROS_APT=1).
INSTALL_LIB = pathlib.Path(os.environ.get('RI_INSTALL_BASE', ROOT / 'install')) / \
    'remote_inference' / 'lib' / 'remote_inference'
PEERS = pathlib.Path(__file__).resolve().parent / 'peers'


BATCH_NICENESS = 10
# A message a test sends to a node again until the node shows it got it (``repeat`` below).
REPEAT_S = 0.25


def batch_priority():
    """Lower a child's CPU priority: for compiles and linters beside the other test worker.

    Pass as ``preexec_fn``. On 2 cores a build beside another worker's node processes took
    their CPU when they had a tick or a deadline due; niced, it gets the cycles they leave.
    """
    os.nice(BATCH_NICENESS)


def write_params(path, node_name, params):
    """Write a ROS 2 params file for one node and return its path."""
    path = pathlib.Path(path)
    path.write_text(yaml.safe_dump({node_name: {'ros__parameters': params}}))
    return path


class NodeProcess:
    """A node running in its own process, stopped with SIGINT."""

    def __init__(self, argv, log_path, env=None):
        self.argv = [str(a) for a in argv]
        self.log_path = pathlib.Path(log_path)
        self._log = open(self.log_path, 'wb')
        self._interrupted = False
        self.proc = subprocess.Popen(
            self.argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env if env is not None else os.environ.copy(), start_new_session=True)

    @classmethod
    def console_script(cls, name, log_dir, params=None, node_name=None, namespace=None,
                       ros_args=(), args=(), prefix=(), env=None):
        """
        Start an installed console script of lib/remote_inference with ROS arguments.

        ``prefix`` runs it through another command (e.g. ``ip netns exec NS``); ``env``
        replaces the environment.
        """
        exe = INSTALL_LIB / name
        if not exe.exists():
            raise FileNotFoundError(f'console script {exe} is not installed; run ./run setup')
        return cls._start(list(prefix) + [str(exe)], name, log_dir, params, node_name,
                          namespace, ros_args, args, env)

    @classmethod
    def peer(cls, script, log_dir, args=(), params=None, node_name=None, namespace=None,
             prefix=(), env=None):
        """Start a test peer script from test/peers with the test interpreter."""
        return cls._start(list(prefix) + [sys.executable, str(PEERS / script)], script,
                          log_dir, params, node_name, namespace, (), args, env)

    @classmethod
    def _start(cls, base, label, log_dir, params, node_name, namespace, ros_args, args,
               env=None):
        log_dir = pathlib.Path(log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        if node_name and node_name != label:
            label = f'{label}.{node_name}'
        argv = list(base) + list(args) + ['--ros-args']
        if params is not None:
            if isinstance(params, dict):
                params = write_params(log_dir / f'{label}.params.yaml', node_name or '/**',
                                      params)
            argv += ['--params-file', str(params)]
        if node_name:
            argv += ['-r', f'__node:={node_name}']
        if namespace:
            argv += ['-r', f'__ns:={namespace}']
        argv += list(ros_args)
        return cls(argv, log_dir / f'{label}.log', env=env)

    @property
    def pid(self):
        """Process id."""
        return self.proc.pid

    def output(self):
        """Everything the process has logged so far (also after stop() closed the log)."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors='replace')

    def wait_for_output(self, pattern, timeout=20.0, spinner=None, repeat=None):
        """Wait until the log matches the regular expression; return the match.

        ``repeat`` (a callable, e.g. publishing a message) runs at once and every REPEAT_S
        while waiting: a message sent as soon as the test sees the node's reader can still
        be lost while the node's side of the match is under way.
        """
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        repeated = -1.0
        while time.monotonic() < deadline:
            if repeat is not None and time.monotonic() - repeated >= REPEAT_S:
                repeat()
                repeated = time.monotonic()
            match = regex.search(self.output())
            if match:
                return match
            if self.proc.poll() is not None:
                match = regex.search(self.output())
                if match:
                    return match
                raise AssertionError(
                    f'{self.argv[0]} exited with {self.proc.returncode} before logging '
                    f'{pattern!r}:\n{self.output()}')
            if spinner is not None:
                spinner.spin_for(0.05)
            else:
                time.sleep(0.05)
        raise AssertionError(f'{self.argv[0]} did not log {pattern!r} within {timeout} s:\n'
                             f'{self.output()}')

    def wait(self, timeout=20.0):
        """Wait for the process to exit by itself; return its exit code."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.ask_stacks()
            raise AssertionError(f'{self.argv[0]} still running after {timeout} s:\n'
                                 f'{self.output()}') from None

    def ask_stacks(self):
        """Have a node print every thread's stack to its log (STACKS_SIGNAL), before a kill."""
        ask_stacks([self])

    def interrupt(self):
        """Send SIGINT once (as Ctrl+C does), without waiting; :meth:`stop` then waits."""
        if self.proc.poll() is None and not self._interrupted:
            self.proc.send_signal(signal.SIGINT)
            self._interrupted = True

    def stop(self, timeout=20.0, spinner=None):
        """
        Send SIGINT (unless :meth:`interrupt` did) and wait for a clean exit.

        Returns the exit code; kills the process after ``timeout``.

        With a spinner, the test's own node keeps processing messages while waiting (a
        recorder in the test process must not miss the shutdown).
        """
        if self.proc.poll() is None:
            self.interrupt()
            if spinner is not None:
                try:
                    spinner.until(lambda: self.proc.poll() is not None, timeout,
                                  f'{self.argv[0]} to exit')
                except AssertionError:
                    pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.ask_stacks()
                self.proc.kill()
                self.proc.wait()
                self._log.close()
                raise AssertionError(f'{self.argv[0]} ignored SIGINT for {timeout} s:\n'
                                     f'{self.output()}') from None
        self._log.close()
        return self.proc.returncode

    def kill(self):
        """Kill the process at once (SIGKILL), as a crash would."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        return self.proc.returncode


def ask_stacks(processes):
    """Have every running node of `processes` print each thread's stack to its log; wait."""
    running = [p for p in processes if p.proc.poll() is None]
    for process in running:
        process.proc.send_signal(STACKS_SIGNAL)
    if running:
        time.sleep(STACKS_WAIT_S)


def run_module(module, *args, timeout, env=None):
    """
    Run ``python -m MODULE ARGS`` to its end; return the CompletedProcess (text output).

    One still running after `timeout` prints its stacks (the console scripts' main() asks
    for them), is killed, and the test fails with what it printed: where it hung, not only
    that it did.
    """
    env = {k: v for k, v in (env or os.environ).items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    proc = subprocess.Popen([sys.executable, '-m', module, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    stdout, stderr, ended = communicate_bounded(proc, timeout)
    if not ended:
        raise AssertionError(f'python -m {module} still running after {timeout} s; its output, '
                             f'then where it was:\n{stdout[-3000:]}\n{stderr[-6000:]}')
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


class Spinner:
    """Spin nodes of the test process until a condition holds."""

    def __init__(self, executor):
        self.executor = executor

    def spin_for(self, seconds):
        """Process callbacks for the given time."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.executor.spin_once(timeout_sec=min(remaining, 0.02))

    def until(self, predicate, timeout=10.0, what='condition', repeat=None):
        """Spin until predicate() is truthy; return its value or fail naming what.

        ``repeat`` runs at once and every REPEAT_S while waiting (NodeProcess.wait_for_output).
        """
        deadline = time.monotonic() + timeout
        repeated = -1.0
        while time.monotonic() < deadline:
            if repeat is not None and time.monotonic() - repeated >= REPEAT_S:
                repeat()
                repeated = time.monotonic()
            value = predicate()
            if value:
                return value
            self.executor.spin_once(timeout_sec=0.02)
        value = predicate()
        if value:
            return value
        raise AssertionError(f'timed out after {timeout} s waiting for {what}')

    def call(self, client, request, timeout=10.0, retry_s=None, latest=False):
        """Call a service and spin until the response arrives.

        With ``retry_s``, the request is sent again each time ``retry_s`` pass without a
        response, as the executor's admission does: a server that has just discovered the
        client may drop the first response (its writer not yet matched; Fast DDS logs
        ``failed to send response (timeout)``). An idempotent request takes the first response
        of any; with ``latest``, one that is not (an admission: the server releases the
        session it gave the same client before) takes only the response to the last request
        sent, as the executor uses only the reply to its last call.
        """
        if not client.wait_for_service(timeout_sec=timeout):
            raise AssertionError(f'service {client.srv_name} not available after {timeout} s')
        started = time.monotonic()
        futures = [client.call_async(request)]

        def answered():
            return futures[-1].done() if latest else any(f.done() for f in futures)
        while not answered():
            if time.monotonic() >= started + timeout:
                raise AssertionError(f'timed out after {timeout} s waiting for response of '
                                     f'{client.srv_name} (sent {len(futures)} time(s))')
            self.executor.spin_once(timeout_sec=0.02)
            if retry_s and time.monotonic() >= started + retry_s * len(futures):
                futures.append(client.call_async(request))
        return (futures[-1] if latest else next(f for f in futures if f.done())).result()


_COUNTER = [0]


def _next_value():
    _COUNTER[0] += 1
    return _COUNTER[0]


def populate(msg):
    """Fill every field of a message with distinct non-default values; return the message."""
    import importlib
    for field, kind in msg.get_fields_and_field_types().items():
        value = _value_for(kind, field, importlib)
        setattr(msg, field, value)
    return msg


def _value_for(kind, field, importlib):
    if kind.startswith('sequence<'):
        inner = kind[len('sequence<'):-1]
        return [_value_for(inner, field, importlib) for _ in range(3)]
    n = _next_value()
    if kind == 'string':
        return f'{field}-{n}'
    if kind == 'boolean':
        return True
    if kind in ('float', 'double'):
        return n + 0.5
    if re.fullmatch(r'u?int(8|16|32|64)|octet|byte', kind):
        return n % 200 + 1
    package, name = kind.split('/')
    cls = getattr(importlib.import_module(f'{package}.msg'), name)
    return populate(cls())


def fastdds_segments():
    """Fast DDS shared-memory data segments in /dev/shm (port files are shared, excluded)."""
    shm = pathlib.Path('/dev/shm')
    if not shm.exists():
        return set()
    return {p.name for p in shm.iterdir()
            if p.name.startswith(('fastrtps_', 'fast_datasharing', 'fastdds_'))
            and 'port' not in p.name}


def teardown_deadlocked(returncode, output):
    """
    Whether a process ended through the teardown bound, stuck in destroying its node.

    That is Fast DDS 3.2's deadlock between deleting a DataWriter and its discovery
    announcement timer (docs/tests.md), after the node's own clean-up was done: the
    node's teardown bound named it (``common/node_main.py``), or its GIL-free bound printed the
    stacks (``Timeout (...)!``: the stuck call held the GIL), the stacks name ``destroy_node``,
    and the process exited with 1.
    """
    return returncode == 1 and 'in destroy_node' in output and (
        TEARDOWN_HUNG in output or 'Timeout (' in output)


def dead_segments():
    """Fast DDS segments and frame rings in /dev/shm whose owner process is gone (leaked)."""
    return {name[:-len('_el')] for name in fastdds_segments()
            if name.endswith('_el')
            and not frame_ring.lock_held(str(pathlib.Path('/dev/shm', name)))} | \
        set(frame_ring.stale_rings())


def clean_dead_segments():
    """
    Remove shared-memory segments whose owner process is dead (after a SIGKILL in a test).

    A live Fast DDS participant holds an flock on ``<segment>_el``; a killed one cannot
    release it, and its segment stays in /dev/shm. This does what ``fastdds shm clean`` does
    for data segments (port files are shared between processes and left alone).
    """
    return remove_segments(dead_segments())
