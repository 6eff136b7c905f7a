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
A test peer process: echoes every custom message and answers every custom service.

For each message type M it subscribes to ``echo_in/M`` and republishes the received message
unchanged on ``echo_out/M``. For each service S it serves ``echo/S`` and answers with a
response whose string fields carry a text rendering of the request, so the test can check
that every field crossed the process boundary.
"""


from peer_main import spin
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from remote_inference import msg as ri_msg
from remote_inference import srv as ri_srv

MESSAGES = ['ActionChunk', 'ExecutorStatus', 'HardwareInfo', 'InferenceRequest',
            'ObservationFeature', 'ServerPresence', 'SharedImage']
SERVICES = ['Admit', 'Ask', 'GetCapabilities']


def render(message):
    """Render a message as nested plain Python values (stable, comparable text)."""
    if hasattr(message, 'get_fields_and_field_types'):
        return {f: render(getattr(message, f)) for f in message.get_fields_and_field_types()}
    if isinstance(message, (list, tuple)) or type(message).__name__ == 'array':
        return [render(v) for v in message]
    if hasattr(message, 'tolist'):
        return message.tolist()
    return message


class Echo(Node):
    """Echo messages and answer services."""

    def __init__(self):
        super().__init__('echo_peer')
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.keep = []
        for name in MESSAGES:
            cls = getattr(ri_msg, name)
            pub = self.create_publisher(cls, f'echo_out/{name}', qos)
            self.keep.append(pub)
            self.keep.append(self.create_subscription(
                cls, f'echo_in/{name}', lambda m, p=pub: p.publish(m), qos))
        for name in SERVICES:
            cls = getattr(ri_srv, name)
            self.keep.append(self.create_service(cls, f'echo/{name}', self.answer))
        self.get_logger().info('echo peer ready')

    def answer(self, request, response):
        """Answer with the request rendered into the response's message."""
        response.success = True
        response.message = repr(render(request))
        for field, kind in response.get_fields_and_field_types().items():
            if kind == 'string' and field != 'message':
                setattr(response, field, f'{field}-answer')
        return response


def main():
    """Spin until SIGINT."""
    spin(Echo)


if __name__ == '__main__':
    main()
