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
A fleet through the real ``ros2 launch remote_inference fleet.launch.py robots:=4 servers:=2``.

Four simulated arms (no rendering) and two demo policy servers with room for two each: every
robot is admitted, two per server, and runs at 30 Hz with no starved tick after its first
chunk. Then one server is killed (SIGKILL): its two robots hold, fault and return home as
with one server, and the other two keep running untouched (no starved tick, still 30 Hz).
"""

import signal
import subprocess

import pytest
from remote_inference.msg import ExecutorStatus
from ros2_cli import Launch, ros2_or_skip, stop_daemon
from ros_fixtures import clean_dead_segments
from timing_rules import grid_error_ticks, GRID_SLACK_TICKS, refill_rule_explains

from remote_inference_py.transport import qos

ROBOTS = [f'robot_{i}' for i in range(4)]
FPS, REFILL_S = 30.0, 0.2     # the fleet's (shipped defaults)


@pytest.fixture
def ros2():
    """The ros2 executable (skips, or fails in CI, without the tools); stops its daemon."""
    path = ros2_or_skip()
    yield path
    stop_daemon(path)


class Fleet:
    """The last executor/status of every robot."""

    def __init__(self, ros):
        self.node, self.spinner = ros
        self.status = {}
        self.worst_turnaround_s = dict.fromkeys(ROBOTS, 0.0)   # since the last reset
        self.subscriptions = [
            self.node.create_subscription(
                ExecutorStatus, f'/{robot}/executor/status',
                lambda msg, r=robot: self.on_status(r, msg), qos.LATCHED)
            for robot in ROBOTS]

    def on_status(self, robot, msg):
        self.status[robot] = msg
        self.worst_turnaround_s[robot] = max(self.worst_turnaround_s[robot],
                                             msg.max_turnaround_s)

    def steady(self, robot, before, what):
        """Check the robot's run since status `before`: its grid, and starves by the rule."""
        status = self.status[robot]
        starved = status.starved_ticks - before.starved_ticks
        worst = self.worst_turnaround_s[robot]
        skipped = status.skipped_ticks - before.skipped_ticks
        assert starved == 0 or refill_rule_explains(worst, REFILL_S, FPS, skipped), (
            f'{robot} {what}: {starved} starved ticks, every turnaround within the refill '
            f'(max {worst:.3f} s) and {skipped} ticks skipped: {status.message}')
        off = grid_error_ticks(before, status, FPS)
        assert abs(off) <= GRID_SLACK_TICKS, f'{robot} {what}: tick count {off:+.2f} off its grid'

    def states(self):
        return {r: self.status[r].state_name if r in self.status else '' for r in ROBOTS}

    def until(self, launch, predicate, timeout, what):
        def check():
            if launch.proc.poll() is not None:
                raise AssertionError(f'launch exited {launch.proc.returncode}')
            return predicate()
        try:
            self.spinner.until(check, timeout, what)
        except AssertionError as error:
            why = ''.join(f'\n{r}: {s.message}' for r, s in self.status.items()
                          if s.state_name == 'FAULT')   # first: a long log is cut in the middle
            raise AssertionError(f'{error}; states {self.states()}{why}\n'
                                 f'{launch.output()[-8000:]}') from None


def server_process(launch, server):
    """Return the psutil process of the policy server in namespace /<server>."""
    launch.remember_children()
    for child in launch.children.values():
        try:
            if f'__ns:=/{server}' in ' '.join(child.cmdline()) and \
                    'policy_server' in ' '.join(child.cmdline()):
                return child
        except Exception:   # noqa: B902 - a process that ended meanwhile
            continue
    raise AssertionError(f'no policy server process in /{server}')


def test_four_robots_two_servers_then_one_server_dies(ros2, ros, tmp_path):
    fleet = Fleet(ros)
    launch = Launch(ros2, ['robots:=4', 'servers:=2'], tmp_path / 'fleet.log',
                    launch_file='fleet.launch.py')
    try:
        # Everyone admitted and running (the initial wait for a first chunk is not starved).
        fleet.until(launch, lambda: all(
            s == 'RUNNING' for s in fleet.states().values()) and all(
            fleet.status[r].chunks_accepted >= 3 for r in ROBOTS), 150,
            'every robot running with three chunks')
        servers = {r: fleet.status[r].server for r in ROBOTS}
        assert sorted(servers.values()) == ['server_0', 'server_0', 'server_1', 'server_1'], \
            servers
        for robot in ROBOTS:
            assert fleet.status[robot].server_choice, robot   # what was found, on the status
        # Judged on each executor's own stamps and counters (test/timing_rules.py).
        before = {r: fleet.status[r] for r in ROBOTS}
        fleet.worst_turnaround_s = dict.fromkeys(ROBOTS, 0.0)
        fleet.spinner.spin_for(4.0)
        for robot in ROBOTS:
            fleet.steady(robot, before[robot], 'with both servers')

        # Kill server_0: its robots hold and fault; the others run on, untouched.
        victims = [r for r in ROBOTS if servers[r] == 'server_0']
        others = [r for r in ROBOTS if servers[r] == 'server_1']
        server_process(launch, 'server_0').send_signal(signal.SIGKILL)
        counts = {r: fleet.status[r].dispatched_ticks for r in others}
        before = {r: fleet.status[r] for r in others}
        fleet.worst_turnaround_s = dict.fromkeys(ROBOTS, 0.0)
        fleet.until(launch, lambda: all(fleet.status[r].state_name == 'FAULT' for r in victims),
                    60, 'the robots of the killed server in FAULT')
        for robot in victims:
            status = fleet.status[robot]
            assert status.server_presence == 'lost', status
            assert 'the server was lost' in status.message, status.message
        for robot in others:
            status = fleet.status[robot]
            assert status.state_name == 'RUNNING', (robot, status.message)
            fleet.steady(robot, before[robot], 'after the other server died')
            assert status.dispatched_ticks > counts[robot], robot    # the grid: steady()
            assert status.failovers == 0
        output = launch.output()
        for robot in victims:
            assert f'[{robot}.executor]: policy server instance ' in output
        for robot in others:
            assert f'[{robot}.executor]: policy server instance ' not in output
    except BaseException:
        print('\n'.join(line[:400] for line in launch.output().splitlines()[-150:]))
        raise
    finally:
        if launch.proc.poll() is None:
            launch.signal(signal.SIGINT)
            try:
                launch.wait(40)
            except subprocess.TimeoutExpired:
                pass
        launch.close()
        clean_dead_segments()
