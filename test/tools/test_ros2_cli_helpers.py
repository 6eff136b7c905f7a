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

"""The helpers that drive the ROS 2 command-line tools from tests (test/ros2_cli.py)."""

import os
import subprocess
import sys

import pytest
import ros2_cli


def fake_daemon(domain):
    """Start a process that looks like the ROS 2 daemon of ``domain`` to the helper."""
    return subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # '
                             'ros2cli.daemon.daemonize', '--name', 'ros2-daemon',
                             '--ros-domain-id', domain])


def test_a_hung_daemon_is_killed_and_named_and_another_domains_is_left(tmp_path, monkeypatch):
    # `ros2 daemon stop` that never returns, as it did against a deadlocked daemon.
    hung = tmp_path / 'ros2'
    hung.write_text('#!/bin/sh\nexec sleep 60\n')
    hung.chmod(0o755)
    monkeypatch.setattr(ros2_cli, 'DAEMON_STOP_S', 0.5)
    domain = os.environ['ROS_DOMAIN_ID']
    ours, theirs = fake_daemon(domain), fake_daemon(str((int(domain) + 100) % 200 + 1))
    try:
        with pytest.warns(UserWarning, match=rf'the ROS 2 daemon of domain {domain} hung; '
                                             rf'killed \[{ours.pid}\]$'):
            ros2_cli.stop_daemon(str(hung))
        assert ours.wait(timeout=10) == -9
        assert theirs.poll() is None
    finally:
        for process in (ours, theirs):
            process.kill()
            process.wait()


def test_a_daemon_stop_that_answers_kills_nothing(tmp_path, monkeypatch):
    answers = tmp_path / 'ros2'
    answers.write_text('#!/bin/sh\necho The daemon is not running\n')
    answers.chmod(0o755)
    ours = fake_daemon(os.environ['ROS_DOMAIN_ID'])
    try:
        ros2_cli.stop_daemon(str(answers))
        assert ours.poll() is None
    finally:
        ours.kill()
        ours.wait()
