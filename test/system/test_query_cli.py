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
docs/ask.md's ``ros2 action send_goal /executor/query ...``, typed as a user types it.

The executor, the policy server (scripted expert) and a kinematic arm run as processes; the
real ``ros2 action`` tool asks a question while the arm moves and prints the answer. Fails
when the ROS 2 tools have no ``ros2 action`` (ros2action) and RI_REQUIRE_ROS2_CLI=1 (as CI
runs: the tools it installs include it) or RI_REQUIRE_ROS2_ACTION=1; skips otherwise.
"""

import os
import shutil
import subprocess

from geometry_msgs.msg import PoseStamped
from node_fixtures import EXECUTOR
import pytest
from remote_inference.action import Query as QueryAction
from remote_inference.msg import ExecutorStatus
from ros2_cli import stop_daemon

from remote_inference_py.evaluation.task import cube_rest_z
from remote_inference_py.transport import qos

SERVER = {'deployment': 'test', 'policy_type': 'python', 'semantics': 'si-radians-v1',
          'checkpoint': 'remote_inference_py.evaluation.expert:expert_runtime',
          'warmup_iterations': 1}
# The command-line tools CI installs include `ros2 action`: RI_REQUIRE_ROS2_CLI=1 (CI) requires
# it like the others, RI_REQUIRE_ROS2_ACTION=1 requires this one alone.
REQUIRE_VARIABLES = ('RI_REQUIRE_ROS2_CLI', 'RI_REQUIRE_ROS2_ACTION')
HINT = ("'ros2 action' is not installed: install ros2action (ros2/ros2cli 0.36.1, beside "
        'ros2topic and ros2service) into the venv, or source a ROS 2 install')


@pytest.fixture
def ros2_action():
    ros2 = shutil.which('ros2')
    if ros2 is not None and subprocess.run([ros2, 'action', '-h'], capture_output=True,
                                           timeout=60).returncode == 0:
        yield ros2
        stop_daemon(ros2)
        return
    required = [name for name in REQUIRE_VARIABLES if os.environ.get(name) == '1']
    if required:
        pytest.fail(f'{required[0]}=1 but {HINT}')
    pytest.skip(HINT)


def test_ros2_action_send_goal_asks_a_question_mid_task(ros2_action, processes, ros):
    node, spinner = ros
    statuses = []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    cube = node.create_publisher(PoseStamped, 'sim/cube_pose', qos.IMAGES)

    def publish_cube():
        msg = PoseStamped()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.z = 0.25, cube_rest_z()
        msg.pose.orientation.w = 1.0
        cube.publish(msg)
    node.create_timer(1 / 30, publish_cube)
    # The phases as the executor publishes them. The CLI prints the feedback it has taken when
    # the result comes; rclpy's action client takes one feedback message per wait, so a CLI
    # that got no CPU for the query's second finds all three with the result and prints one.
    phases = []
    node.create_subscription(QueryAction.Impl.FeedbackMessage, 'executor/query/_action/feedback',
                             lambda m: phases.append(m.feedback.phase), 10)
    processes.peer('fake_arm.py', node_name='fake_arm', params={'log_commands': False})
    processes.console_script('policy_server', node_name='policy_server', params=SERVER)
    processes.console_script('executor', node_name='executor', params={
        **EXECUTOR, 'semantics': 'si-radians-v1', 'task': 'pick up the cube'})
    spinner.until(lambda: statuses and statuses[-1].state_name == 'RUNNING', 90, 'RUNNING')

    def send_goal(goal):
        """Run the CLI while this process keeps publishing the cube; return its output."""
        proc = subprocess.Popen(
            [ros2_action, 'action', 'send_goal', '--feedback', '/executor/query',
             'remote_inference/action/Query', goal], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        try:
            spinner.until(lambda: proc.poll() is not None, 90, 'ros2 action send_goal')
        finally:
            proc.kill()
            out = proc.stdout.read()
            print(out)
        assert proc.returncode == 0, out
        return out

    out = send_goal("{kind: question, text: 'where is the cube?'}")
    assert 'Goal finished with status: SUCCEEDED' in out, out
    assert 'answer: the cube rests on the table, 25 cm in front of the base' in out, out
    assert 'phase: paused' in out, out   # the CLI printed the feedback
    spinner.until(lambda: phases[:3] == ['paused', 'asking', 'resuming'], 10, 'the phases')
    assert statuses[-1].state_name in ('RUNNING', 'WAITING')

    refused = send_goal("{kind: poem, text: 'a haiku'}")
    assert 'Goal finished with status: ABORTED' in refused, refused
    assert "unknown query kind ''poem''" in refused, refused   # YAML-quoted
