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
The scripted expert plays the human on the leader arm, in simulation (``expert_leader`` node).

:class:`ExpertHuman` (pure) re-plans the pick of :class:`.expert.PickExpert` from the newest
measured pose and cube pose every ``replan_s`` and plays the plan at ``fps``, as a human
moving a leader arm would: what it publishes is where the leader is, and the executor's
follow step rate-limits the follower toward it (docs/recording.md, "A human on the leader
arm"). The node publishes it on ``leader/joint_states`` (SI radians, as the real leader node
publishes in the follower's semantics) and ``''`` on the latched ``leader/fault``; ``./run
demo --human`` starts it with the executor's ``driver`` human.
"""

import time
import traceback
from typing import Optional

import numpy as np

from remote_inference_py.evaluation.expert import CHUNK_LENGTH, FPS, JOINT_NAMES, PickExpert


class ExpertHuman:
    """Where the expert's leader arm is at a time, from the newest observation."""

    def __init__(self, expert: Optional[PickExpert] = None, fps: float = FPS,
                 replan_s: float = 0.5, steps: int = CHUNK_LENGTH):
        """Re-plan every `replan_s` a plan of `steps` steps at `fps`."""
        if not 0 < replan_s <= steps / fps:
            raise ValueError(f'replan_s must be in (0, {steps / fps:g}] s (the plan is '
                             f'{steps} steps at {fps:g} Hz), got {replan_s!r}')
        self.expert = expert or PickExpert()
        self.fps, self.replan_s, self.steps = float(fps), float(replan_s), int(steps)
        self.q: Optional[np.ndarray] = None
        self.cube: Optional[np.ndarray] = None
        self.plan: Optional[np.ndarray] = None
        self.plan_time = 0.0
        self.plans = 0

    def observe(self, q=None, cube_pose=None) -> None:
        """Take the newest measured pose [rad] and/or cube pose (x y z qx qy qz qw)."""
        if q is not None:
            self.q = np.asarray(q, dtype=np.float64)
        if cube_pose is not None:
            self.cube = np.asarray(cube_pose, dtype=np.float64)

    def position(self, now: float) -> Optional[np.ndarray]:
        """Return the leader's position at `now` (None before both observations came)."""
        if self.q is None or self.cube is None:
            return None
        if self.plan is None or now - self.plan_time >= self.replan_s:
            self.plan = self.expert.plan(self.q, self.cube, self.steps, self.fps)
            self.plan_time, self.plans = now, self.plans + 1
        step = min(int((now - self.plan_time) * self.fps + 1e-9), self.steps - 1)
        return self.plan[step]


def main(args=None):
    """Run the expert_leader node (``./run demo --human`` starts it)."""
    from geometry_msgs.msg import PoseStamped
    from rclpy.node import Node
    from std_msgs.msg import String

    from remote_inference_py.common.node_main import run_node
    from remote_inference_py.common.ticker import Ticker
    from remote_inference_py.evaluation.expert import CUBE_TOPIC
    from remote_inference_py.transport import qos
    from remote_inference_py.transport.endpoints import (
        JointStatePublisher, subscribe_joint_states)

    class ExpertLeaderNode(Node):
        """Publish the expert's leader arm on leader/joint_states."""

        def __init__(self):
            super().__init__('leader_arm')
            fps = float(self.declare_parameter('publish_rate_hz', FPS).value)
            replan_s = float(self.declare_parameter('replan_s', 0.5).value)
            self.human = ExpertHuman(fps=fps, replan_s=replan_s)
            self.finished, self.exit_code = False, 0
            self.publisher = JointStatePublisher(self, 'leader/joint_states', JOINT_NAMES,
                                                 qos.JOINT_STATES)
            fault = self.create_publisher(String, 'leader/fault', qos.LATCHED)
            fault.publish(String(data=''))
            subscribe_joint_states(self, 'joint_states', self.on_joints, qos.JOINT_STATES)
            self.create_subscription(PoseStamped, CUBE_TOPIC, self.on_cube, qos.JOINT_STATES)
            self.events = []   # observations for the tick thread, in order
            self.get_logger().info(f'the scripted expert plays the human on the leader arm '
                                   f'(leader/joint_states at {fps:g} Hz, re-planned every '
                                   f'{replan_s:g} s)')
            self.ticker = Ticker(1.0 / fps, self.on_tick, self.on_failed, 'expert_leader')
            self.ticker.start()

        def on_joints(self, msg):
            index = {name: i for i, name in enumerate(msg.names)}
            if all(name in index for name in JOINT_NAMES):
                self.events.append(('q', [msg.positions[index[n]] for n in JOINT_NAMES]))

        def on_cube(self, msg):
            p, o = msg.pose.position, msg.pose.orientation
            self.events.append(('cube', [p.x, p.y, p.z, o.x, o.y, o.z, o.w]))

        def on_tick(self):
            while self.events:
                kind, value = self.events.pop(0)
                self.human.observe(**{'q' if kind == 'q' else 'cube_pose': value})
            position = self.human.position(time.monotonic())
            if position is not None:
                sec, nanosec = self.get_clock().now().seconds_nanoseconds()
                self.publisher.publish(sec, nanosec, position)

        def on_failed(self, error):
            self.get_logger().fatal('expert leader tick failed: ' + ''.join(
                traceback.format_exception(type(error), error, error.__traceback__)))
            self.exit_code, self.finished = 1, True

        def request_stop(self, reason):
            self.finished = True

        def close(self):
            self.ticker.stop()

    raise SystemExit(run_node(ExpertLeaderNode, args))


if __name__ == '__main__':
    main()
