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
Drive the real ROS 2 command-line tools (``ros2 launch``, ``ros2 param``, ...) from tests.

The tools are not on PyPI. On a ROS 2 install they come with ROS; in this project's venv a
developer installs them with the ros2-cli bundle that CI installs before the tests (see
``.ci/run``). Without them the tests that need them skip, naming what to install;
``RI_REQUIRE_ROS2_CLI=1`` (CI sets it) turns the skip into a failure.
"""

import fcntl
import os
import pathlib
import pty
import shutil
import signal
import subprocess
import termios
import threading
import time
import warnings

import psutil
import pytest

REQUIRE_VARIABLE = 'RI_REQUIRE_ROS2_CLI'
INSTALL_HINT = ('the ROS 2 command-line tools (ros2 launch, ros2 param) are not installed: '
                'source a ROS 2 install, or build ros2cli, launch and launch_ros into the '
                'project venv (.ci/run does)')


def ros2_or_skip():
    """Return the path of ``ros2`` with launch support; skip (or fail in CI) without it."""
    ros2 = shutil.which('ros2')
    if ros2 is not None:
        probe = subprocess.run([ros2, 'launch', '--help'], capture_output=True, timeout=60)
        if probe.returncode == 0:
            return ros2
    if os.environ.get(REQUIRE_VARIABLE) == '1':
        pytest.fail(f'{REQUIRE_VARIABLE}=1 but {INSTALL_HINT}')
    pytest.skip(INSTALL_HINT)


# How long `ros2 daemon stop` may take [s]: its own wait for the daemon to go is 10 s.
DAEMON_STOP_S = 15.0


def stop_daemon(ros2):
    """Stop the ROS 2 daemon of this run's ROS_DOMAIN_ID, as a user would; kill it if hung.

    `ros2 daemon stop` asks the daemon over XML-RPC with no socket timeout, so a daemon that no
    longer answers holds it forever. One did in a clean-clone run: Fast DDS 3.2.2 inside it had
    deadlocked (a UDP receive thread removing a participant's writer held the PDP mutex and
    waited for the timer thread, which waited for that mutex), after the tests that used it
    had passed. The daemon is ros2cli's, not this project's: it is then killed, and the kill
    is reported as a warning.
    """
    try:
        subprocess.run([ros2, 'daemon', 'stop'], capture_output=True, timeout=DAEMON_STOP_S,
                       stdin=subprocess.DEVNULL)
        return
    except subprocess.TimeoutExpired:
        pass
    domain = os.environ.get('ROS_DOMAIN_ID', '0')
    killed = []
    for process in psutil.process_iter(['pid', 'cmdline']):
        line = process.info['cmdline'] or []
        if any('ros2cli.daemon.daemonize' in part for part in line) and \
                '--ros-domain-id' in line and \
                line[line.index('--ros-domain-id') + 1:][:1] == [domain]:
            try:
                process.kill()
                killed.append(process.info['pid'])
            except psutil.NoSuchProcess:   # it went by itself meanwhile
                pass
    warnings.warn(f'ros2 daemon stop did not end within {DAEMON_STOP_S:g} s: the ROS 2 daemon '
                  f'of domain {domain} hung; killed {killed or "nothing (none found)"}')


def _child_setup(controlling_tty):
    """In the child: default SIGINT/SIGTERM (a background shell may have ignored them)."""
    def setup():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if controlling_tty:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    return setup


class Launch:
    """
    ``ros2 launch remote_inference bringup.launch.py ARGS`` in its own session.

    ``launch_file`` names another launch file of the package (e.g. ``fleet.launch.py``).

    ``terminal=True`` gives it a pseudo-terminal as controlling terminal (as in a shell
    window): :meth:`ctrl_c` then types Ctrl+C, and the kernel signals the foreground process
    group, exactly as a terminal does. Without a terminal, stdin is /dev/null.
    """

    def __init__(self, ros2, args, log_path, terminal=False, launch_file='bringup.launch.py'):
        self.log_path = pathlib.Path(log_path)
        self.argv = [ros2, 'launch', 'remote_inference', launch_file, *args]
        self.master = None
        self._log = open(self.log_path, 'wb')
        if terminal:
            self.master, slave = pty.openpty()
            self.proc = subprocess.Popen(self.argv, stdin=slave, stdout=slave, stderr=slave,
                                         start_new_session=True,
                                         preexec_fn=_child_setup(True))
            os.close(slave)
            self._reader = threading.Thread(target=self._drain, daemon=True)
            self._reader.start()
        else:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=_child_setup(False))
        self.children = {}
        self.stop_mark = 0   # length of the output when a stop was sent

    def _drain(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self._log.write(data)
            self._log.flush()

    def output(self):
        """Return what launch and its nodes printed so far."""
        self._log.flush()
        return self.log_path.read_bytes().decode(errors='replace')

    def remember_children(self):
        """Note the node processes (they outlive a killed launch: we must still see them)."""
        try:
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                self.children[child.pid] = child
        except psutil.NoSuchProcess:
            pass

    def ctrl_c(self):
        """Type Ctrl+C on the launch's terminal."""
        self.stop_mark = len(self.output())
        os.write(self.master, b'\x03')

    def signal(self, signum, group=False):
        """Send a signal to launch (``group``: to its whole process group)."""
        self.stop_mark = len(self.output())
        if group:
            os.killpg(self.proc.pid, signum)
        else:
            os.kill(self.proc.pid, signum)

    def wait(self, timeout):
        """Wait for launch to exit; return its exit code."""
        return self.proc.wait(timeout=timeout)

    def alive_children(self, timeout=20.0):
        """Wait up to ``timeout`` for every node process to end; return those still alive."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive = [c for c in self.children.values() if _running(c)]
            if not alive:
                return []
            time.sleep(0.2)
        return [_describe(c) for c in self.children.values() if _running(c)]

    def close(self):
        """Make sure nothing is left (a failed test): SIGKILL what still runs, wait for it."""
        if self.proc.poll() is None:
            self.proc.kill()
        alive = [c for c in self.children.values() if _running(c)]
        for child in alive:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.master is not None:
            os.close(self.master)
        self._log.close()


def _describe(process):
    try:
        return f'{process.pid} {" ".join(process.cmdline()[:2])}'
    except psutil.Error:
        return f'{process.pid} (gone)'


def _running(process):
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def node_list(ros2, expected, attempts=20):
    """
    Return ``ros2 node list`` once it shows every expected name (or after ``attempts``).

    The first call starts the ROS 2 daemon, which may list nothing until it has discovered
    the graph.
    """
    names = set()
    for _ in range(attempts):
        names = set(run_cli(ros2, 'node', 'list').split())
        if set(expected) <= names:
            break
    return names


NOT_FOUND_ATTEMPTS = 3


def run_cli(ros2, *args, timeout=60, check=True):
    """Run ``ros2 ARGS`` the way a user types it; return its stdout.

    A verb that answers "Node not found" is run again (up to NOT_FOUND_ATTEMPTS times), as a
    user would: without the daemon's graph (a daemon just started, or slow to answer on a
    loaded host) the CLI discovers the graph itself for half a second, and a loaded CI host
    once answered `ros2 param get` with it right after a `ros2 param set` to the same node.
    """
    for _ in range(NOT_FOUND_ATTEMPTS):
        result = subprocess.run([ros2, *args], capture_output=True, text=True,
                                timeout=timeout, stdin=subprocess.DEVNULL)
        if 'Node not found' not in result.stdout + result.stderr:
            break
    if check and result.returncode != 0:
        raise AssertionError(f'ros2 {" ".join(args)} exited {result.returncode}:\n'
                             f'{result.stdout}\n{result.stderr}')
    return result.stdout + result.stderr
