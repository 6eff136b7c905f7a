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
Both ends of a camera stream that uses shared memory on one host (:mod:`.frame_ring`).

:class:`ImagePublisher` (hardware interface): every frame goes into the ring and its
``SharedImage`` reference onto ``<topic>/shm``; the full ``sensor_msgs/Image`` goes onto
``<topic>`` only while that topic has a subscriber (a recorder, RViz, a policy server on
another host), or always when sharing is off or the ring cannot be created (named warning).
With ``jpeg_quality`` it also offers ``<topic>/compressed`` (``sensor_msgs/CompressedImage``,
JPEG, :mod:`.compressed`), encoded only while that topic has a subscriber (a policy server or
recorder on another host reads it: ~30x fewer bytes than the raw Image).

:class:`ImageInput` (policy server): reads ``<topic>`` until a frame has come through the ring,
then drops that subscription (so the publisher stops sending the full image) and reads the
ring; it subscribes ``<topic>`` again when the ring cannot be opened here (another host or
user: logged once) or the ``/shm`` publisher goes away (checked by :meth:`ImageInput.update`,
which the node calls every second). Either way the node gets an :class:`~.values.ImageFields`
(``on_image``), or ``on_reject(code, text)`` for a frame that cannot be read.

Both work on both transports (:mod:`.endpoints`). On the fast one the ring holds the Image's
bytes as :mod:`.image_cdr` writes them and the references are read and written by
:mod:`.cdr`. On the plain one the ring holds what rclpy's ``serialize_message`` makes of an
Image (read back with its ``deserialize_message``), and references and full images are typed
messages: slower, but no CDR code of ours is used. The bytes in the ring are an ordinary
serialized Image either way, so writer and reader need not use the same transport.
"""

import array

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from remote_inference.msg import SharedImage
from sensor_msgs.msg import CompressedImage, Image

from remote_inference_py.transport.cdr import (
    is_plain_cdr, SharedImageDecoder, SharedImageEncoder, STAMP)
from remote_inference_py.transport.compressed import (
    COMPRESSED_SUFFIX, CompressionError, encode_jpeg, jpeg_format, JpegEncoder)
from remote_inference_py.transport.endpoints import PLAIN, subscribe, transport_choice
from remote_inference_py.transport.frame_ring import (
    FrameGone, RingError, RingReader, RingUnavailable, RingWriter, SHM_DIR)
from remote_inference_py.transport.image_cdr import decode_image, image_parts
from remote_inference_py.transport.values import from_image, from_shared_image

SHARED_SUFFIX = '/shm'


class ImagePublisher:
    """Publish camera frames, through shared memory when ``share`` (one writing thread)."""

    def __init__(self, node, topic, qos_profile, share=True, label='frames',
                 directory=SHM_DIR, transport=None, jpeg_quality=None):
        self.node, self.topic, self.label, self.directory = node, topic, label, directory
        self.plain = transport_choice(transport) == PLAIN
        self.image_pub = node.create_publisher(Image, topic, qos_profile)
        self.jpeg = JpegEncoder(jpeg_quality) if jpeg_quality else None
        self.compressed_pub = (node.create_publisher(CompressedImage, topic + COMPRESSED_SUFFIX,
                                                     qos_profile) if self.jpeg else None)
        self.compressed = 0
        self.shared_pub = (node.create_publisher(SharedImage, topic + SHARED_SUFFIX,
                                                 qos_profile) if share else None)
        self.ring = None
        self.shared = 0
        self.full = 0
        self._head_key = None   # (frame_id, shape, dtype, encoding) of _head
        self._head = b''        # the Image's bytes before the pixels, stamped 0
        self._refs = None       # SharedImageEncoder for the ring and the frame id

    def publish(self, sec, nanosec, frame_id, frame, encoding):
        """Publish one frame (h x w x c numpy array) captured at ``sec``/``nanosec``."""
        frame = np.ascontiguousarray(frame)
        if self.plain:
            self._publish_plain(sec, nanosec, frame_id, frame, encoding)
        else:
            self._publish_fast(sec, nanosec, frame_id, frame, encoding)
        if self.compressed_pub is not None and self.compressed_pub.get_subscription_count() > 0:
            self._compress(sec, nanosec, frame_id, frame, encoding)

    def _publish_fast(self, sec, nanosec, frame_id, frame, encoding):
        """Publish serialized bytes written by our CDR code (the fast transport)."""
        key = (frame_id, frame.shape, frame.dtype, encoding)
        if key != self._head_key:   # serialized once per layout (see transport/cdr.py)
            self._head_key, self._head = key, image_parts(0, 0, frame_id, frame, encoding)[0]
            self._refs = None
        head = bytearray(self._head)
        STAMP.pack_into(head, 4, sec, nanosec)
        pixels = frame.reshape(-1).view(np.uint8).data
        if self.shared_pub is not None:
            self._share((head, pixels), sec, nanosec, frame_id)
        if self.shared_pub is None or self.image_pub.get_subscription_count() > 0:
            self.image_pub.publish(b''.join((head, pixels)))
            self.full += 1

    def _compress(self, sec, nanosec, frame_id, frame, encoding):
        """Publish the frame as a JPEG CompressedImage (only while someone subscribes)."""
        try:
            if self.plain:   # rclpy's own message and serialization
                message = CompressedImage(format=jpeg_format(encoding), data=encode_jpeg(
                    frame, encoding, self.jpeg.quality))
                message.header.stamp.sec, message.header.stamp.nanosec = sec, nanosec
                message.header.frame_id = frame_id
            else:
                message = self.jpeg.encode(sec, nanosec, frame_id, frame, encoding)
        except CompressionError as error:
            self.node.get_logger().error(f'{self.topic}{COMPRESSED_SUFFIX}: {error}',
                                         throttle_duration_sec=5.0)
            return
        self.compressed_pub.publish(message)
        self.compressed += 1

    def _publish_plain(self, sec, nanosec, frame_id, frame, encoding):
        """Publish through rclpy's own messages and serialization (the plain transport)."""
        msg = Image(height=int(frame.shape[0]), width=int(frame.shape[1]), encoding=encoding,
                    step=int(np.prod(frame.shape[1:])) * frame.itemsize,
                    data=array.array('B', frame.reshape(-1).view(np.uint8).tobytes()))
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        msg.header.frame_id = frame_id
        if self.shared_pub is not None:
            self._share((serialize_message(msg),), sec, nanosec, frame_id)
        if self.shared_pub is None or self.image_pub.get_subscription_count() > 0:
            self.image_pub.publish(msg)
            self.full += 1

    def _share(self, parts, sec, nanosec, frame_id):
        size = sum(memoryview(part).nbytes for part in parts)
        if self.ring is None or size > self.ring.slot_bytes:
            try:
                ring = RingWriter(self.label, size, directory=self.directory)
            except RingError as error:
                self.node.get_logger().warning(
                    f'{self.topic}: frames are not shared through memory ({error}); the '
                    'Image topic carries every frame')
                self.node.destroy_publisher(self.shared_pub)
                self.shared_pub = None
                return
            if self.ring is not None:
                self.ring.close()
            self.ring, self._refs = ring, None
        slot, sequence = self.ring.write(*parts)
        if self.plain:
            ref = SharedImage(ring=self.ring.name, slot=slot, sequence=sequence, size=size)
            ref.header.stamp.sec, ref.header.stamp.nanosec = sec, nanosec
            ref.header.frame_id = frame_id
            self.shared_pub.publish(ref)
        else:
            if self._refs is None:
                self._refs = SharedImageEncoder(frame_id, self.ring.name)
            self.shared_pub.publish(self._refs.encode(sec, nanosec, slot, sequence, size))
        self.shared += 1

    def counts(self):
        """Frames sent so far: '<raw> raw, <shared> shm, <jpeg> jpeg'."""
        return f'{self.full} raw, {self.shared} shm, {self.compressed} jpeg'

    def close(self):
        """Remove the ring (call after the last publish)."""
        if self.ring is not None:
            self.ring.close()
            self.ring = None


class ImageInput:
    """
    One camera stream into the policy server: ``on_image(ImageFields)`` gets each frame.

    ``on_reject(code, text)`` gets what could not be read: ``malformed`` (bytes that are no
    Image, or a malformed reference), ``deserialize`` (rclpy could not read them),
    ``overwritten`` (the ring moved on before the frame was copied), ``shared_memory``.
    """

    def __init__(self, node, topic, qos_profile, on_image, on_reject, transport=None):
        self.node, self.topic, self.qos = node, topic, qos_profile
        self.on_image, self.on_reject = on_image, on_reject
        self.transport = transport_choice(transport)
        self.plain = self.transport == PLAIN
        self.reader = None
        self.unavailable = set()
        self.proven = False
        self.image_sub = None
        subscribe(node, SharedImage, topic + SHARED_SUFFIX, self.on_shared, qos_profile,
                  decoder=SharedImageDecoder(), convert=from_shared_image,
                  on_malformed=lambda text: on_reject('malformed',
                                                      f'malformed SharedImage: {text}'),
                  transport=self.transport)
        self.update()

    def on_raw(self, raw):
        """Decode an Image's serialized bytes (fast: our CDR reader; plain: rclpy's)."""
        plain_cdr = not self.plain and is_plain_cdr(raw)
        try:
            image = (decode_image(raw) if plain_cdr   # the pixels stay in the buffer
                     else from_image(deserialize_message(raw, Image)))
        except Exception as error:  # noqa: B902 - a bad frame must not stop the node
            self.on_reject('malformed' if plain_cdr else 'deserialize',
                           f'malformed Image: {error}')
            return
        self.on_image(image)

    def on_message(self, msg):
        """Hand on an Image that rclpy deserialized (plain transport)."""
        self.on_image(from_image(msg))

    def on_shared(self, msg):
        """Read the frame a reference points at (or fall back to the topic)."""
        if msg.ring in self.unavailable:
            return
        if self.reader is None or self.reader.name != msg.ring:
            if self.reader is not None:
                self.reader.close()
                self.reader, self.proven = None, False
            try:
                self.reader = RingReader(msg.ring)
            except RingError as error:
                self.unavailable.add(msg.ring)
                text = f'{self.topic}: reading the Image topic, not shared memory: {error}'
                if isinstance(error, RingUnavailable):
                    self.node.get_logger().info(text)
                else:
                    self.node.get_logger().error(text)
                self.update()
                return
        try:
            data = self.reader.read(msg.slot, msg.sequence, msg.size)
        except FrameGone as error:
            self.on_reject('overwritten', str(error))
            return
        except RingError as error:
            self.on_reject('shared_memory', str(error))
            return
        if not self.proven:
            self.proven = True
            self.update()
        self.on_raw(data)

    def update(self):
        """Read the ring when it works and still has a publisher, else the Image topic."""
        shared = (self.proven and self.reader is not None
                  and self.node.count_publishers(self.topic + SHARED_SUFFIX) > 0)
        if shared and self.image_sub is not None:
            self.node.destroy_subscription(self.image_sub)
            self.image_sub = None
            self.node.get_logger().info(f'{self.topic}: reading frames through shared memory')
        elif not shared and self.image_sub is None:
            self.image_sub = self.node.create_subscription(
                Image, self.topic, self.on_message if self.plain else self.on_raw, self.qos,
                raw=not self.plain)
            self.proven = False

    def close(self):
        """Unmap the ring."""
        if self.reader is not None:
            self.reader.close()
            self.reader = None
