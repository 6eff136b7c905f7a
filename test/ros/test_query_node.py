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
executor/query over real DDS: the executor, the policy server and a kinematic arm.

The policy server serves the scripted pick expert, whose runtime answers questions and
subtasks from the observed cube pose (published here, resting on the table). The test node
sends goals with rclpy's ActionClient (what ``ros2 action send_goal`` does) and watches the
requests, the task topic and the arm's commands. The rules themselves are proven on the core
(test/pure/test_executor_query.py); this checks that they hold across the processes.
"""

from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped
from node_fixtures import EXECUTOR
from rclpy.action import ActionClient
from remote_inference.action import Query
from remote_inference.msg import ExecutorStatus, InferenceRequest
from remote_inference.srv import GetCapabilities
from std_msgs.msg import String

from remote_inference_py.evaluation.sim_answers import SUBTASKS
from remote_inference_py.evaluation.task import cube_rest_z
from remote_inference_py.transport import qos

SERVER = {'deployment': 'test', 'policy_type': 'python', 'semantics': 'si-radians-v1',
          'checkpoint': 'remote_inference_py.evaluation.expert:expert_runtime',
          'warmup_iterations': 1}
CUBE = (0.25, 0.05, cube_rest_z())


class Watch:
    """What the test node sees: statuses, requests (with receive times), tasks, feedback."""

    def __init__(self, node):
        self.node = node
        self.statuses, self.requests, self.tasks, self.feedback = [], [], [], []
        node.create_subscription(ExecutorStatus, 'executor/status', self.statuses.append,
                                 qos.LATCHED)
        node.create_subscription(InferenceRequest, 'policy/request', self.requests.append,
                                 qos.COMMANDS)
        node.create_subscription(String, 'executor/task', lambda m: self.tasks.append(m.data),
                                 qos.LATCHED)
        self.cube = node.create_publisher(PoseStamped, 'sim/cube_pose', qos.IMAGES)
        node.create_timer(1 / 30, self.publish_cube)

    def publish_cube(self):
        msg = PoseStamped()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = CUBE
        msg.pose.orientation.w = 1.0
        self.cube.publish(msg)

    def state(self):
        return self.statuses[-1].state_name if self.statuses else ''

    def on_feedback(self, msg):
        self.feedback.append((msg.feedback.phase, self.node.get_clock().now().nanoseconds))


def send(spinner, client, watch, kind, text, timeout=20.0):
    """Send a goal, wait for its result; return (status, result)."""
    future = client.send_goal_async(Query.Goal(kind=kind, text=text),
                                    feedback_callback=watch.on_feedback)
    spinner.until(future.done, timeout, 'goal response')
    result = future.result().get_result_async()
    spinner.until(result.done, timeout, f'{kind} result')
    return result.result().status, result.result().result


def test_question_and_subtask_hold_the_arm_and_resume_from_a_fresh_capture(processes, ros):
    node, spinner = ros
    watch = Watch(node)
    processes.peer('fake_arm.py', node_name='fake_arm', params={'log_commands': False})
    processes.console_script('policy_server', node_name='policy_server', params=SERVER)
    processes.console_script('executor', node_name='executor', params={
        **EXECUTOR, 'semantics': 'si-radians-v1', 'task': 'pick up the cube',
        'steering_period_s': 0.3})
    client = ActionClient(node, Query, 'executor/query')
    spinner.until(lambda: watch.state() == 'RUNNING', 30, 'executor RUNNING')
    caps_client = node.create_client(GetCapabilities, 'policy/get_capabilities')
    caps = spinner.call(caps_client, GetCapabilities.Request())
    assert list(caps.text_commands) == ['question', 'subtask', 'steering']
    spinner.until(client.server_is_ready, 10, 'executor/query')

    # Refusals: named, and nothing pauses (no request is drained, the arm keeps moving).
    before = watch.statuses[-1]
    status, result = send(spinner, client, watch, 'poem', 'a haiku')
    assert not result.success and "unknown query kind 'poem'" in result.message
    status, result = send(spinner, client, watch, 'question', '')
    assert not result.success and 'empty text' in result.message
    assert watch.state() == 'RUNNING' and watch.statuses[-1].held_ticks == before.held_ticks
    assert watch.feedback == []

    status, result = send(spinner, client, watch, 'question', 'is the cube held?')
    assert result.success, result.message
    assert result.answer.startswith('no: the cube rests on the table'), result.answer
    assert result.task == 'pick up the cube' and result.rounds == 1
    assert result.hold_s >= result.ask_s > 0 and result.resume_s > 0
    assert [phase for phase, _ in watch.feedback] == ['paused', 'asking', 'resuming']
    # The hold crossed to the status topic: the buffered continuation was discarded.
    assert any('holding for a question query' in s.message and 'discarded' in s.message
               for s in watch.statuses)
    assert any('resuming after the answer: a fresh capture taken after' in s.message
               for s in watch.statuses)
    spinner.until(lambda: watch.state() == 'RUNNING', 5, 'RUNNING again')
    assert watch.requests[-1].task == 'pick up the cube'   # a question keeps the task

    status, result = send(spinner, client, watch, 'subtask', 'pick up the cube')
    assert result.success, result.message
    assert result.task == result.answer and result.answer in SUBTASKS.values()
    spinner.until(lambda: watch.requests[-1].task == result.answer, 5, 'new task requested')
    spinner.until(lambda: watch.tasks and watch.tasks[-1] == result.answer, 5, 'task topic')

    # Steering: a subtask round every 0.3 s of motion until cancelled; cancelling ends it.
    watch.feedback.clear()
    future = client.send_goal_async(Query.Goal(kind='steering', text='pick up the cube'),
                                    feedback_callback=watch.on_feedback)
    spinner.until(future.done, 10, 'steering accepted')
    handle = future.result()
    spinner.until(lambda: [p for p, _ in watch.feedback].count('moving') >= 2, 10,
                  'two steering rounds')
    spinner.until(handle.cancel_goal_async().done, 10, 'cancel accepted')
    result = handle.get_result_async()
    spinner.until(result.done, 10, 'steering result')
    outcome = result.result()
    assert outcome.status == GoalStatus.STATUS_CANCELED, outcome.status
    assert outcome.result.rounds >= 2 and outcome.result.task in SUBTASKS.values()
    phases = [p for p, _ in watch.feedback]
    assert phases[:4] == ['paused', 'asking', 'resuming', 'moving'], phases
    spinner.until(lambda: watch.state() == 'RUNNING', 5, 'RUNNING after steering')
