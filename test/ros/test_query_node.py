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
(test/pure/test_executor_query.py); this checks that they hold across the processes, from a
query sent before admission (the executor starts before the server) to the server SIGKILLed
while an answer is pending (``extra_text_s`` makes the text work slow enough to be caught).
"""

import time

from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped
from node_fixtures import EXECUTOR, set_parameter
import numpy as np
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from remote_inference.action import Query
from remote_inference.msg import ExecutorStatus, InferenceRequest
from remote_inference.srv import GetCapabilities
from ros_fixtures import clean_dead_segments
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from timing_rules import starvation_explained

from remote_inference_py.common.service_call import RETRY_S
from remote_inference_py.evaluation.sim_answers import SUBTASKS
from remote_inference_py.evaluation.task import cube_rest_z
from remote_inference_py.executor.query import read_status
from remote_inference_py.transport import qos

SERVER = {'deployment': 'test', 'policy_type': 'python', 'semantics': 'si-radians-v1',
          'checkpoint': 'remote_inference_py.evaluation.expert:expert_runtime',
          'warmup_iterations': 1, 'presence_lease_s': 1.0,
          'observation_wait_s': 1.0}   # the test node publishes the cube; it may stall
CUBE = (0.25, 0.05, cube_rest_z())
# Deep reader queues: a hold and its resume are two statuses 50 ms apart, and the test node
# may stall that long on a loaded machine (the nodes' own profiles keep the last one only).
DEEP = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=200,
                  reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
DEEP_LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=200,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Watch:
    """What the test node sees: statuses, requests, tasks, commands (with the executor's
    stamps: the order they were sent in, on the system clock), feedback (with monotonic
    receive times) and the system time the latest 'paused' feedback was received."""

    def __init__(self, node):
        self.node = node
        self.statuses, self.requests, self.tasks, self.feedback = [], [], [], []
        self.commands, self.paused_wall = [], None
        node.create_subscription(
            JointState, 'joint_commands',
            lambda m: self.commands.append((Time.from_msg(m.header.stamp).nanoseconds / 1e9,
                                            np.array(m.position))),
            DEEP)
        node.create_subscription(ExecutorStatus, 'executor/status', self.statuses.append,
                                 DEEP_LATCHED)
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
        self.feedback.append((msg.feedback.phase, time.monotonic()))
        if msg.feedback.phase == 'paused':
            self.paused_wall = time.time()


def send(spinner, client, watch, kind, text, timeout=20.0, feedback=None):
    """Send a goal, wait for its result; return (status, result)."""
    future = client.send_goal_async(Query.Goal(kind=kind, text=text),
                                    feedback_callback=feedback or watch.on_feedback)
    spinner.until(future.done, timeout, 'goal response')
    result = future.result().get_result_async()
    spinner.until(result.done, timeout, f'{kind} result')
    return result.result().status, result.result().result


def test_question_and_subtask_hold_the_arm_and_resume_from_a_fresh_capture(processes, ros):
    node, spinner = ros
    watch = Watch(node)
    processes.peer('fake_arm.py', node_name='fake_arm', params={'log_commands': False})
    executor = processes.console_script('executor', node_name='executor', params={
        **EXECUTOR, 'semantics': 'si-radians-v1', 'task': 'pick up the cube',
        'steering_period_s': 0.3, 'presence_lease_s': 1.0,
        'starvation_grace_s': 3.0,   # a fresh chunk after each answer, on a loaded machine
        # Home slowly: a goal sent on seeing STOPPING must reach the executor before it ends
        # (a test process stalled 3 s on a loaded machine missed a 1.5 s way home).
        'return_speed_rad_s': 0.2})
    client = ActionClient(node, Query, 'executor/query')

    # Before admission (no server yet): refused by name, nothing moves.
    spinner.until(client.server_is_ready, 20, 'executor/query')
    status, result = send(spinner, client, watch, 'question', 'is the cube held?')
    assert status == GoalStatus.STATUS_ABORTED and not result.success
    assert 'no session admitted yet' in result.message, result.message
    assert watch.feedback == [] and watch.commands == []

    server = processes.console_script('policy_server', node_name='policy_server',
                                      params=SERVER)
    spinner.until(lambda: watch.state() == 'RUNNING', 30, 'executor RUNNING')
    caps_client = node.create_client(GetCapabilities, 'policy/get_capabilities')
    # Asked again after RETRY_S without an answer, as the nodes ask (a first response can be
    # lost while the server's reply writer is still matching the new client).
    caps = spinner.call(caps_client, GetCapabilities.Request(), retry_s=RETRY_S)
    assert list(caps.text_commands) == ['question', 'subtask', 'steering']

    # Refusals: named, and nothing pauses (no request is drained, the arm keeps moving).
    before = watch.statuses[-1]
    status, result = send(spinner, client, watch, 'poem', 'a haiku')
    assert not result.success and "unknown query kind 'poem'" in result.message
    status, result = send(spinner, client, watch, 'question', '')
    assert not result.success and 'empty text' in result.message
    # Held ticks only as a starve holds them, judged by the refill rule (test/timing_rules.py).
    after = watch.statuses[-1]
    assert watch.state() in ('RUNNING', 'WAITING') and 'query' not in after.message
    assert after.held_ticks - before.held_ticks == after.starved_ticks - before.starved_ticks
    assert starvation_explained(watch.statuses[watch.statuses.index(before):]), after.message
    assert watch.feedback == []

    status, result = send(spinner, client, watch, 'question', 'is the cube held?')
    assert result.success, result.message
    assert result.answer.startswith('no: the cube rests on the table'), result.answer
    assert result.task == 'pick up the cube' and result.rounds == 1
    assert result.hold_s >= result.ask_s > 0 and result.resume_s > 0
    # The result, the feedback and the statuses come on separate channels, and a loaded test
    # process takes one message of each per wait: the feedback and statuses sent before the
    # result may still be queued here when the result is taken. They are awaited (the status
    # of the answer comes after the hold's on the same topic), then read in full.
    spinner.until(lambda: len(watch.feedback) >= 3 and any(
        read_status(s.message) == ('answered', result.answer) for s in watch.statuses), 5,
        'the feedback and the statuses sent before the result')
    assert [phase for phase, _ in watch.feedback] == ['paused', 'asking', 'resuming']
    # The hold crossed to the status topic: the buffered continuation was discarded.
    seen = [(s.state_name, s.message) for s in watch.statuses[-40:]]   # said on a failure
    assert any('holding for a question query' in s.message and 'discarded' in s.message
               for s in watch.statuses), seen
    assert any(read_status(s.message) == ('answered', result.answer)
               for s in watch.statuses), seen
    assert any(read_status(s.message) == ('asked', 'question', 'is the cube held?')
               for s in watch.statuses), seen
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
    # A second query while one runs: refused by name; it neither pauses nor asks.
    statuses = len(watch.statuses)
    second = []
    status, result = send(spinner, client, watch, 'question', 'where is the cube?',
                          feedback=second.append)
    assert status == GoalStatus.STATUS_ABORTED and not result.success
    assert 'another query is running' in result.message, result.message
    assert second == []
    assert not any('question query' in s.message for s in watch.statuses[statuses:])
    spinner.until(handle.cancel_goal_async().done, 10, 'cancel accepted')
    result = handle.get_result_async()
    spinner.until(result.done, 10, 'steering result')
    outcome = result.result()
    assert outcome.status == GoalStatus.STATUS_CANCELED, outcome.status
    assert outcome.result.rounds >= 2 and outcome.result.task in SUBTASKS.values()
    phases = [p for p, _ in watch.feedback]
    assert phases[:4] == ['paused', 'asking', 'resuming', 'moving'], phases
    assert phases.count('paused') == phases.count('asking') <= outcome.result.rounds + 1
    spinner.until(lambda: watch.state() == 'RUNNING', 5, 'RUNNING after steering')

    # The server lost while an answer is pending: the query faults with a named reason, the
    # arm holds from the pause (no buffered step is dispatched) and then goes home.
    assert set_parameter(ros, 'policy_server', 'extra_text_s', 30.0).successful
    answered = server.output().count('question answered')
    watch.feedback.clear()
    future = client.send_goal_async(Query.Goal(kind='question', text='is the cube held?'),
                                    feedback_callback=watch.on_feedback)
    spinner.until(future.done, 10, 'question accepted')
    spinner.until(lambda: [p for p, _ in watch.feedback] == ['paused', 'asking'], 5, 'asking')
    asked_at = watch.feedback[-1][1]
    spinner.spin_for(max(0.0, asked_at + 0.5 - time.monotonic()))   # the ask reaches it
    assert server.output().count('question answered') == answered   # pending: extra_text_s
    server.kill()
    clean_dead_segments()
    lost = time.monotonic()
    outcome = future.result().get_result_async()
    spinner.until(outcome.done, 15, 'the query aborted')
    outcome = outcome.result()
    assert outcome.status == GoalStatus.STATUS_ABORTED, outcome.status
    assert 'server lost during a query' in outcome.result.message, outcome.result.message
    assert time.monotonic() - lost < 1.0 + 4.0   # the 1 s lease, generously
    assert [p for p, _ in watch.feedback] == ['paused', 'asking']   # it never resumed
    # While going home (about 7 s at 0.2 rad/s): refused by name.
    spinner.until(lambda: watch.state() == 'STOPPING', 5, 'going home')
    status, result = send(spinner, client, watch, 'question', 'is the cube held?')
    assert 'the executor is STOPPING' in result.message, result.message
    spinner.until(lambda: watch.state() == 'FAULT', 20, 'home, then FAULT')
    assert 'server lost during a query' in watch.statuses[-1].message
    # The last command (home) was sent before the FAULT status, on another topic: it may be
    # taken after it on a loaded host.
    spinner.until(lambda: np.abs(watch.commands[-1][1]).max() < 1e-6, 5, 'the command home')
    assert executor.wait(10) != 0
    # Every command from the pause on holds the last applied target, then follows the
    # straight line home: none of the discarded continuation was ever dispatched.
    # A command sent after the 'paused' feedback arrived was sent after the pause began; one
    # sent before may arrive later (two topics; a loaded host delivered one over 0.1 s late),
    # so commands are taken by the stamp the executor sent them with (both on this host's
    # system clock).
    after = [c for t, c in watch.commands if t >= watch.paused_wall]
    hold, home = after[0], np.zeros_like(after[0])
    assert np.abs(hold - home).max() > 0.05, 'the arm was home already: nothing to show'
    fractions = []
    for command in after:
        along = float(np.dot(command - hold, home - hold) / np.dot(home - hold, home - hold))
        off = np.abs(command - (hold + along * (home - hold))).max()
        assert off < 1e-6, f'a command off the hold-then-home path: {command} (hold {hold})'
        fractions.append(along)
    assert fractions[0] == 0.0 and abs(fractions[-1] - 1.0) < 1e-6
    assert all(b >= a - 1e-9 for a, b in zip(fractions, fractions[1:])), fractions
    held = [f for f in fractions if f == 0.0]
    # From the pause to the end of the 1 s lease after the kill: over a second at 30 Hz.
    assert len(held) >= 20, f'{len(held)} hold commands before going home'
