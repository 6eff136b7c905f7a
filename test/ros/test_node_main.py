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

"""run_node: what every node process gets before it spins."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import psutil
from ros_fixtures import clean_dead_segments, teardown_deadlocked

from remote_inference_py.common.node_main import (
    REPEAT_WINDOW_S, stop_with_parent, STOP_WITH_PARENT_ENV, StopSignals, TEARDOWN_HUNG)
from remote_inference_py.common.process import STACKS_SIGNAL

NODE = textwrap.dedent("""
    import gc
    from rclpy.node import Node
    from remote_inference_py.common.node_main import run_node

    class Probe(Node):
        def __init__(self):
            super().__init__('gc_probe')
            self.finished, self.exit_code = False, 0
            self.garbage = [[] for _ in range(5000)]   # made while starting
            self.create_timer(0.01, self.report)

        def report(self):
            if not self.finished:
                print('frozen', gc.get_freeze_count(), flush=True)
                self.finished = True

        def request_stop(self, reason):
            self.finished = True

        def close(self):
            pass

    raise SystemExit(run_node(Probe))
""")


def test_objects_made_while_starting_are_kept_out_of_garbage_collections():
    result = subprocess.run([sys.executable, '-c', NODE], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    frozen = int(result.stdout.split('frozen')[1].split()[0])
    assert frozen > 5000, result.stdout   # the node's own objects and every module's


SLOW_CLEANUP_NODE = textwrap.dedent("""
    import ctypes
    import sys
    import time
    from rclpy.node import Node
    from remote_inference_py.common import node_main

    class Slow(Node):
        def __init__(self):
            super().__init__('cleanup_probe')
            self.finished, self.exit_code = True, 0

        def close(self):
            time.sleep(1.0)   # longer than the report's delay below: only reported
            print('closed', flush=True)

        def destroy_node(self):
            if sys.argv[2] == 'gil':   # as rclpy's C++ destroy in that deadlock: the GIL held
                ctypes.PyDLL(None).sleep(int(sys.argv[1]))
            time.sleep(float(sys.argv[1]))   # 120: as Fast DDS deleting an endpoint in a deadlock
            super().destroy_node()

    node_main.CLEANUP_REPORT_S = 0.3
    node_main.TEARDOWN_BOUND_S = 2.0
    raise SystemExit(node_main.run_node(Slow))
""")


def run_slow_cleanup(destroy_s, how='released'):
    return subprocess.run([sys.executable, '-c', SLOW_CLEANUP_NODE, str(destroy_s), how],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))


def test_a_cleanup_that_hangs_reports_every_threads_stack_and_exits_as_before():
    result = run_slow_cleanup(0)
    assert result.returncode == 0, result.stderr
    assert not teardown_deadlocked(result.returncode, result.stderr)
    assert 'Timeout (0:00:00.300000)!' in result.stderr, result.stderr
    assert 'in close' in result.stderr and 'in run_node' in result.stderr, result.stderr


def test_a_teardown_that_hangs_after_the_clean_up_ends_the_process_naming_the_call():
    result = run_slow_cleanup(120)
    assert result.returncode == 1, result.stderr
    assert 'closed' in result.stdout   # the node's own clean-up ran to its end first
    # The bound ended it (stacks printed by faulthandler), not the 120 s sleep.
    assert 'in destroy_node' in result.stderr and 'in run_node' in result.stderr, result.stderr
    assert teardown_deadlocked(result.returncode, result.stderr)   # excused in a test peer
    assert 'removed its' in result.stderr and not clean_dead_segments()   # none left behind


def test_a_teardown_that_hangs_holding_the_gil_still_ends_the_process():
    # No Python thread runs while the stuck call holds the GIL (a worker hung for good so):
    # faulthandler's watchdog, a C thread, ends it GIL_FREE_EXTRA_S after the bound.
    result = run_slow_cleanup(120, 'gil')   # within the 60 s timeout, or it raises
    assert result.returncode == 1, result.stderr
    assert 'closed' in result.stdout
    assert TEARDOWN_HUNG not in result.stderr   # the named bound could not run ...
    assert 'Timeout (0:00:07)!' in result.stderr and 'in destroy_node' in result.stderr
    assert teardown_deadlocked(result.returncode, result.stderr)   # ... and it is recognised
    clean_dead_segments()   # what the process could not remove itself


STOPPING_NODE = textwrap.dedent("""
    import time
    from rclpy.node import Node
    from remote_inference_py.common.node_main import run_node

    class Returning(Node):
        '''Stops like the executor: a return that takes RETURN_S after the stop request.'''

        def __init__(self):
            super().__init__('stop_probe')
            self.finished, self.exit_code, self.stop_at = False, 0, None
            self.create_timer(0.01, self.tick)
            print('ready', flush=True)

        def request_stop(self, reason):
            print('stop:', reason, flush=True)
            self.stop_at = time.monotonic()

        def tick(self):
            if self.stop_at is not None and time.monotonic() - self.stop_at > 1.5:
                print('returned', flush=True)
                self.finished = True

        def close(self):
            print('closed', flush=True)

    raise SystemExit(run_node(Returning))
""")


def test_the_repeated_signal_rule():
    now = [0.0]
    rule = StopSignals(window_s=1.0, clock=lambda: now[0])
    assert rule.decide(signal.SIGINT) == 'stop'
    now[0] = 0.003
    assert rule.decide(signal.SIGINT) == 'repeat'      # the process group plus launch
    now[0] = 5.0
    assert rule.decide(signal.SIGTERM) == 'repeat'     # launch's escalation, parent death
    assert rule.decide(signal.SIGHUP) == 'repeat'
    assert rule.decide(signal.SIGINT) == 'interrupt'   # a deliberate second Ctrl+C
    rule = StopSignals(window_s=1.0, clock=lambda: now[0])
    assert rule.decide(signal.SIGTERM) == 'stop'


def start_probe(tmp_path, env=None):
    log = open(tmp_path / 'probe.log', 'w')
    proc = subprocess.Popen([sys.executable, '-c', STOPPING_NODE], stdout=log,
                            stderr=subprocess.STDOUT, env=env or dict(os.environ),
                            start_new_session=True)
    wait_for(lambda: 'ready' in (tmp_path / 'probe.log').read_text(), 'the probe node')
    return proc, tmp_path / 'probe.log'


def wait_for(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        time.sleep(0.02)


def test_a_signal_delivered_twice_does_not_cut_the_stop_short(tmp_path):
    proc, log = start_probe(tmp_path)
    proc.send_signal(signal.SIGINT)
    # Python runs one handler for signals that arrive before it ran the first: send the
    # repeat once the stop began, as ros2 launch's forwarded copy arrives (ms later).
    wait_for(lambda: 'stop:' in log.read_text(), 'the stop request')
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, log.read_text()
    output = log.read_text()
    assert 'already stopping' in output and 'returned' in output and 'closed' in output


def test_a_deliberate_second_ctrl_c_interrupts(tmp_path):
    proc, log = start_probe(tmp_path)
    proc.send_signal(signal.SIGINT)
    time.sleep(REPEAT_WINDOW_S + 0.2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130, log.read_text()
    output = log.read_text()
    assert 'returned' not in output and 'closed' in output   # close() still runs


def test_a_node_stops_normally_when_its_launcher_dies(tmp_path):
    """The launcher is SIGKILLed: the node gets its normal stop (parent-death signal)."""
    launcher = textwrap.dedent(f"""
        import os, subprocess, sys, time
        env = dict(os.environ, {STOP_WITH_PARENT_ENV}=str(os.getpid()))
        child = subprocess.Popen([sys.executable, '-c', {STOPPING_NODE!r}], env=env,
                                 stdout=open({str(tmp_path / 'probe.log')!r}, 'w'),
                                 stderr=subprocess.STDOUT)
        print(child.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, '-c', launcher], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    child = psutil.Process(int(parent.stdout.readline()))
    log = tmp_path / 'probe.log'
    wait_for(lambda: 'ready' in log.read_text(), 'the probe node')
    parent.kill()
    parent.wait()
    child.wait(timeout=30)
    output = log.read_text()
    assert 'stop: received SIGTERM' in output and 'returned' in output, output


def test_a_variable_inherited_from_elsewhere_arms_nothing():
    assert not stop_with_parent({STOP_WITH_PARENT_ENV: str(os.getpid())})   # not our parent
    assert not stop_with_parent({})


def test_a_node_asked_for_its_stacks_prints_them_and_goes_on(tmp_path):
    proc, log = start_probe(tmp_path)

    def ask():   # kill -USR1 <pid>, until the spinner thread has started and is in a dump
        proc.send_signal(STACKS_SIGNAL)
        time.sleep(0.2)
        return 'in _spin' in log.read_text()
    wait_for(ask, "a dump naming the spinner's stack")
    assert proc.poll() is None   # not stopped by it
    output = log.read_text()
    assert 'most recent call first' in output and 'in run_node' in output, output
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0, log.read_text()
    output = log.read_text()
    assert 'returned' in output and 'closed' in output   # then its normal stop


def test_a_node_that_cannot_start_says_when_as_rclpy_logs():
    result = subprocess.run([sys.executable, '-c', STOPPING_NODE, '--ros-args', '-p'],
                            capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert result.returncode == 2, result.stderr
    assert re.search(r'^\[FATAL\] \[\d+\.\d{9}\] \[-c\]: cannot start: bad ROS arguments: ',
                     result.stderr, re.M), result.stderr
