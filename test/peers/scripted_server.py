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
A scripted policy server for executor tests: the real protocol, a known trajectory.

It serves GetCapabilities and Admit, keeps the latest ``joint_states`` sample, and answers
each ``policy/request`` after ``delay_s`` (a live parameter) with a chunk computed from the
capture stamp of the observation it used: joint j at time t is
``amplitude * sin(2 pi t / period_s + j)``, so consecutive chunks describe one smooth curve and
a correctly aligned seam is small. Fault injection parameters: ``session_override`` (answer
with another session id), ``nan_request`` (put a NaN in the chunk answering that request id),
``future_capture_s`` (stamp chunks that far in the future), ``silent`` (stop answering; the
presence samples go on), ``fail_with`` (answer every request with this error: a failure worth
a retry), ``refuse`` (answer every request as the real server answers a session it does not
serve: an error marked ``session_refused``), ``request_topic`` (listen elsewhere: admission
works, requests never arrive), ``lose_requests`` / ``lose_answers`` (ignore the first N
requests, swallow the first N answers: what an endpoint of ours that has not matched the
executor's yet does to them). It samples its presence like the real server (``instance_id``,
a parameter, default ``scripted``; ``presence: false`` publishes none).
"""

import math
import uuid

import numpy as np
from peer_main import spin
from rclpy.node import Node
from rclpy.time import Time
from remote_inference.msg import ActionChunk, InferenceRequest
from remote_inference.srv import Admit, GetCapabilities
from sensor_msgs.msg import JointState

from remote_inference_py.contract.check import PRESENCE_LEASE_S, PROTOCOL_VERSION
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos
from remote_inference_py.transport.presence_publisher import PresencePublisher

JOINTS = list(SO101_JOINT_NAMES)


class ScriptedServer(Node):
    """Answer requests with a known trajectory after a controlled delay."""

    def __init__(self):
        super().__init__('scripted_server')
        p = self.declare_parameter
        self.deployment = p('deployment', 'test').value
        self.semantics = p('semantics', 'si-radians-v1').value
        self.joint_names = list(p('joint_names', JOINTS).value)
        self.fps = p('fps', 30.0).value
        self.chunk_length = p('chunk_length', 50).value
        self.protocol_version = p('protocol_version', PROTOCOL_VERSION).value
        self.lease_s = p('presence_lease_s', PRESENCE_LEASE_S).value
        self.instance_id = p('instance_id', 'scripted').value
        p('delay_s', 0.05)
        p('amplitude', 0.3)
        p('period_s', 4.0)
        p('session_override', '')
        p('nan_request', -1)
        p('future_capture_s', 0.0)
        p('silent', False)
        p('fail_with', '')
        p('refuse', False)
        p('request_topic', 'policy/request')   # another name: admits, but never hears requests
        p('lose_requests', 0)
        p('lose_answers', 0)
        self.lost_requests = self.lost_answers = 0
        self.session_id = ''
        self.samples = []          # (stamp_ns, positions) of recent joint_states
        self.pending = []          # (due_ns, request)
        self.requests = 0
        self.create_service(GetCapabilities, 'policy/get_capabilities', self.on_capabilities)
        self.create_service(Admit, 'policy/admit', self.on_admit)
        self.create_subscription(JointState, 'joint_states', self.on_joint_states,
                                 qos.JOINT_STATES)
        self.create_subscription(InferenceRequest, self.value('request_topic'),
                                 self.on_request, qos.COMMANDS)
        self.chunk_pub = self.create_publisher(ActionChunk, 'policy/chunk', qos.CHUNKS)
        self.presence = None
        if p('presence', True).value:
            self.presence = PresencePublisher(self, ['policy/presence'], self.instance_id,
                                              self.lease_s)
            self.presence.start()
        # serve() polls every 2 ms only while a request waits: idle, a 2 ms timer took 40 % of
        # a core, which the other node processes of a test run beside it were short of.
        self.serve_timer = self.create_timer(0.002, self.serve)
        self.serve_timer.cancel()
        self.get_logger().info('scripted server ready')

    def destroy_node(self):
        """Stop the presence samples, then destroy the node."""
        if self.presence is not None:
            self.presence.close()
        super().destroy_node()

    def value(self, name):
        """Return the current value of a parameter."""
        return self.get_parameter(name).value

    def on_capabilities(self, request, response):
        """Describe the scripted policy."""
        response.success = True
        response.protocol_version = self.protocol_version
        response.deployment = self.deployment
        response.instance_id = self.instance_id
        response.semantics = self.semantics
        response.action_names = self.joint_names
        response.action_rate = self.fps
        response.chunk_length = self.chunk_length
        response.supported_merge_modes = ['append', 'aligned', 'ensemble', 'synchronous']
        response.presence_lease_s = self.lease_s
        response.max_requests_in_flight = 1
        response.max_clients = 1
        return response

    def on_admit(self, request, response):
        """Admit a client whose contract matches."""
        problems = []
        if request.protocol_version != self.protocol_version:
            problems.append(f'protocol {request.protocol_version} != {self.protocol_version}')
        if request.deployment != self.deployment:
            problems.append(f'deployment {request.deployment!r} != {self.deployment!r}')
        if request.semantics != self.semantics:
            problems.append(f'semantics {request.semantics!r} != {self.semantics!r}')
        if list(request.action_names) != self.joint_names:
            problems.append(f'action names {list(request.action_names)} != {self.joint_names}')
        if abs(request.action_rate - self.fps) > 1e-6:
            problems.append(f'action rate {request.action_rate} != {self.fps}')
        response.success = not problems
        response.message = '; '.join(problems) or 'admitted'
        if response.success:
            self.session_id = uuid.uuid4().hex[:12]
            response.session_id = self.session_id
            response.instance_id = self.instance_id
        return response

    def on_joint_states(self, msg):
        """Keep a short history of observations."""
        self.samples.append((Time.from_msg(msg.header.stamp).nanoseconds, msg))
        del self.samples[:-200]

    def on_request(self, msg):
        """Queue the request; serve() answers it when its delay has passed."""
        if self.lost_requests < self.value('lose_requests'):
            self.lost_requests += 1
            self.get_logger().info(f'request {msg.request_id} lost (lose_requests)')
            return
        self.requests += 1
        self.get_logger().info(f'request {msg.request_id}')
        due = self.get_clock().now().nanoseconds + int(self.value('delay_s') * 1e9)
        self.pending.append((due, msg))
        self.serve_timer.reset()

    def serve(self):
        """Answer every request whose delay has passed and whose observation exists."""
        if self.value('silent'):
            self.pending.clear()
        now = self.get_clock().now().nanoseconds
        still = []
        for due, request in self.pending:
            earliest = Time.from_msg(request.earliest_capture_stamp).nanoseconds
            usable = [s for s in self.samples if s[0] >= earliest]
            if due > now or not usable:
                still.append((due, request))
                continue
            msg = self.chunk_for(request, usable[-1][0])
            if self.value('refuse') or self.value('fail_with'):
                msg.step_count, msg.positions = 0, []
                msg.session_refused = bool(self.value('refuse'))
                msg.error = (f'session {request.session_id!r} is not admitted by this server '
                             'instance' if msg.session_refused else self.value('fail_with'))
            if self.lost_answers < self.value('lose_answers'):
                self.lost_answers += 1
                self.get_logger().info(f'answer {request.request_id} lost (lose_answers)')
                continue
            self.chunk_pub.publish(msg)
        self.pending = still
        if not self.pending:
            self.serve_timer.cancel()

    def chunk_for(self, request, capture_ns):
        """Build the chunk answering request from an observation captured at capture_ns."""
        capture_ns += int(self.value('future_capture_s') * 1e9)
        t0 = capture_ns * 1e-9
        steps = np.arange(1, self.chunk_length + 1) / self.fps + t0
        phases = np.arange(len(self.joint_names))
        positions = self.value('amplitude') * np.sin(
            2 * math.pi * steps[:, None] / self.value('period_s') + phases[None, :])
        if request.request_id == self.value('nan_request'):
            positions[len(positions) // 2, -1] = np.nan
        msg = ActionChunk()
        msg.header.stamp = Time(nanoseconds=capture_ns).to_msg()
        msg.session_id = self.value('session_override') or request.session_id
        msg.request_id = request.request_id
        msg.joint_names = self.joint_names
        msg.step_period = 1.0 / self.fps
        msg.step_count = self.chunk_length
        msg.positions = positions.astype(np.float32).ravel().tolist()
        msg.inference_ms = float(self.value('delay_s') * 1000)
        msg.instance_id = self.instance_id
        return msg


def main():
    """Spin until SIGINT."""
    spin(ScriptedServer)


if __name__ == '__main__':
    main()
