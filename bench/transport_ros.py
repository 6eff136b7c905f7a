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
Our ROS 2 path, client side: what the robot computer sends the policy server and gets back.

Per round trip, as the product's nodes do it: a ``remote_inference/InferenceRequest`` on
``policy/request`` (qos.COMMANDS) whose earliest capture stamp is "now", then a
``sensor_msgs/JointState`` on ``joint_states`` (qos.JOINT_STATES, serialized by
``transport/cdr.py``'s JointStateEncoder as the hardware interface does) and the rgb8 frame
captured after it, published by the hardware interface's own ``ImagePublisher``
(:mod:`remote_inference_py.transport.shared_images`, qos.IMAGES): with ``share=True``, as shipped,
into a shared-memory ring with a ``SharedImage`` reference on ``cameras/front/image_raw/shm``
(the server on this host reads the ring); with ``share=False`` as a serialized
``sensor_msgs/Image`` on ``cameras/front/image_raw``, the path to a server on another host.
The server must use exactly this observation (joints first: on a robot they stream at 100 Hz,
the frame completes the observation); the round trip ends when the matching
``remote_inference/ActionChunk`` arrives on ``policy/chunk`` (qos.CHUNKS) and its positions
are a numpy array (read from the serialized bytes by ``transport/cdr.py``'s ActionChunkDecoder,
as the executor node reads them).

The executor always asks before the observation it is answered with exists (the server waits
for the first frame captured after the request), so the measured round trip starts when the
observation is published, with the request sent ``REQUEST_LEAD_S`` earlier
(:meth:`RosClient.prepare`; on a robot the lead is 0-33 ms at 30 Hz). With ``together=True``
the request is published with the observation instead and the round trip includes it: a worst
case the product does not produce, reported for comparison. The client is admitted first
through ``policy/get_capabilities`` and ``policy/admit`` like the executor, calls
``tune_allocator()`` first and spins ``make_ros_executor()``, as the executor node does
(``REMOTE_INFERENCE_TUNE_MALLOC=0`` turns the allocator tuning off for the default-malloc
cells).

:func:`serve_minimal` is a reference point, not the product: a bare rclpy node written the
usual way (deserialized messages, SingleThreadedExecutor) with the same topics, message types
and QoS that answers from inside its subscription callbacks (no worker thread, no observation
buffers, no preprocessing). With ``image=False`` on both sides no frame travels at all: the
round trip of two small messages, the floor of rclpy + Fast DDS on the machine.
"""

import array
import time

import numpy as np

from transport_common import Client, constant_chunk, JOINTS, make_frame, make_joints

from remote_inference_py.transport.values import stamp_ns

ANSWER_TIMEOUT_S = 1.0
REQUEST_LEAD_S = 0.005
CALL_RETRY_S = 3.0   # a service call unanswered this long is sent again


class RosClient(Client):
    """A client node on the real message path of the product."""

    def __init__(self, admit=True, together=False, image=True, share=True, timeout=30.0):
        from remote_inference_py.common.process import tune_allocator
        tune_allocator()
        import rclpy
        from remote_inference.msg import ActionChunk, InferenceRequest
        from remote_inference.srv import Admit, GetCapabilities
        from sensor_msgs.msg import JointState

        from remote_inference_py.common.node_main import make_ros_executor
        from remote_inference_py.transport import qos
        from remote_inference_py.transport.cdr import ActionChunkDecoder, JointStateEncoder
        from remote_inference_py.transport.shared_images import ImagePublisher

        self.rclpy = rclpy
        self.together = together
        self.image = image
        self.joint_encoder = JointStateEncoder(JOINTS)
        self.chunk_decoder = ActionChunkDecoder()
        self.InferenceRequest = InferenceRequest
        rclpy.init()
        self.node = rclpy.create_node('transport_bench_client')
        self.executor = make_ros_executor()   # what the executor node spins
        self.executor.add_node(self.node)
        self.camera = ImagePublisher(self.node, 'cameras/front/image_raw', qos.IMAGES, share,
                                     'front')
        self.share = share
        self.joint_pub = self.node.create_publisher(JointState, 'joint_states', qos.JOINT_STATES)
        self.request_pub = self.node.create_publisher(InferenceRequest, 'policy/request',
                                                      qos.COMMANDS)
        self.answer = None
        self.node.create_subscription(ActionChunk, 'policy/chunk', self._on_chunk, qos.CHUNKS,
                                      raw=True)   # decoded as the executor node does
        self.frame = make_frame()
        self.joints = make_joints()
        self.request_id = 0
        self.timings = []
        self.errors = {}

        deadline = time.monotonic() + timeout
        self.session_id = ''
        if admit:
            self._admit(Admit, GetCapabilities, deadline)
        camera_pub = self.camera.shared_pub if share else self.camera.image_pub
        while (image and camera_pub.get_subscription_count() < 1) or \
                self.request_pub.get_subscription_count() < 1:
            if time.monotonic() > deadline:
                raise RuntimeError('the policy server did not subscribe to our topics')
            self.executor.spin_once(timeout_sec=0.02)

    def _admit(self, Admit, GetCapabilities, deadline):  # noqa: N803 - message classes
        caps = self._call(GetCapabilities, 'policy/get_capabilities',
                          GetCapabilities.Request(), deadline)
        request = Admit.Request(
            protocol_version=caps.protocol_version, client_name='transport_bench',
            deployment=caps.deployment, semantics=caps.semantics,
            action_names=list(caps.action_names), action_rate=caps.action_rate,
            features=list(caps.features), merge_mode='aligned', hardware_position_hold=True,
            presence_lease_s=caps.presence_lease_s)
        admitted = self._call(Admit, 'policy/admit', request, deadline)
        if not admitted.success:
            raise RuntimeError(f'admission refused: {admitted.message}')
        self.session_id = admitted.session_id

    def _call(self, kind, name, request, deadline):
        client = self.node.create_client(kind, name)
        if not client.wait_for_service(timeout_sec=max(deadline - time.monotonic(), 0.1)):
            raise RuntimeError(f'service {name} not available')
        # The first request can be lost while the service's reply channel is still being
        # matched (discovery is slow on a loaded host): ask again every few seconds.
        future = client.call_async(request)
        again = time.monotonic() + CALL_RETRY_S
        while not future.done():
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(f'no answer from {name}')
            if now > again:
                client.remove_pending_request(future)
                future = client.call_async(request)
                again = now + CALL_RETRY_S
            self.executor.spin_once(timeout_sec=0.02)
        return future.result()

    def _on_chunk(self, raw):
        self.answer = self.chunk_decoder.decode(raw)

    def _request(self, stamp):
        request = self.InferenceRequest()
        request.header.stamp = stamp
        request.session_id = self.session_id
        request.request_id = self.request_id
        request.earliest_capture_stamp = stamp
        self.request_pub.publish(request)

    def prepare(self):
        """Send the next request ahead of its observation, as the executor does."""
        self.request_id += 1
        if not self.together:
            self._request(self.node.get_clock().now().to_msg())
            time.sleep(REQUEST_LEAD_S)

    def roundtrip(self):
        now = self.node.get_clock().now()
        if self.together:
            self._request(now.to_msg())
        sec, nanosec = divmod(now.nanoseconds, 1_000_000_000)
        # as the hardware interface does: serialized bytes, then the frame
        self.joint_pub.publish(self.joint_encoder.encode(sec, nanosec, self.joints))
        if self.image:
            self.camera.publish(sec, nanosec, 'front_camera', self.frame, 'rgb8')
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while self.answer is None or self.answer.request_id != self.request_id:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.errors['no answer'] = self.errors.get('no answer', 0) + 1
                return False
            self.executor.spin_once(timeout_sec=remaining)
        msg = self.answer
        if msg.error:
            key = msg.error[:60]
            self.errors[key] = self.errors.get(key, 0) + 1
            return False
        chunk = msg.positions.reshape(msg.step_count, len(msg.joint_names))
        self.timings.append((msg.queue_wait_ms, msg.preprocess_ms, msg.inference_ms,
                             msg.postprocess_ms))
        return chunk.shape == (50, 6)

    def reset_stats(self):
        self.timings = []
        self.errors = {}

    def stats(self):
        return {'server_ms': self.timings, 'errors': self.errors}

    def close(self):
        self.camera.close()
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown()


def serve_minimal(image=True):
    """Answer each InferenceRequest once the frame (if ``image``) and joints have arrived."""
    from remote_inference_py.common.process import tune_allocator
    tune_allocator()
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from remote_inference.msg import ActionChunk, InferenceRequest
    from sensor_msgs.msg import Image, JointState

    from remote_inference_py.transport import qos

    rclpy.init()
    node = rclpy.create_node('transport_minimal_server')
    chunk = constant_chunk()
    positions = array.array('f', chunk.tobytes())
    latest = {'image': -1, 'joints': -1} if image else {'joints': -1}
    pending = []
    publisher = node.create_publisher(ActionChunk, 'policy/chunk', qos.CHUNKS)

    def answer():
        while pending and min(latest.values()) >= stamp_ns(pending[0].earliest_capture_stamp):
            request = pending.pop(0)
            msg = ActionChunk()
            msg.header.stamp = request.earliest_capture_stamp
            msg.session_id = request.session_id
            msg.request_id = request.request_id
            msg.joint_names = list(JOINTS)
            msg.step_period = 1.0 / 30.0
            msg.step_count = chunk.shape[0]
            msg.positions = positions
            publisher.publish(msg)

    def on_image(msg):
        frame = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        if frame.size:
            latest['image'] = stamp_ns(msg.header.stamp)
        answer()

    def on_joints(msg):
        latest['joints'] = stamp_ns(msg.header.stamp)
        answer()

    def on_request(msg):
        pending.append(msg)
        answer()

    if image:
        node.create_subscription(Image, 'cameras/front/image_raw', on_image, qos.IMAGES)
    node.create_subscription(JointState, 'joint_states', on_joints, qos.JOINT_STATES)
    node.create_subscription(InferenceRequest, 'policy/request', on_request, qos.COMMANDS)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    print('minimal ROS server ready', flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
