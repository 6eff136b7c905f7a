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
which the node calls every second). Both paths hand the same serialized Image bytes on, so
the server validates and decodes them the same way.
"""

import numpy as np
from remote_inference.msg import SharedImage
from sensor_msgs.msg import CompressedImage, Image

from remote_inference_py.transport.cdr import (
    CdrError, SharedImageDecoder, SharedImageEncoder, STAMP)
from remote_inference_py.transport.compressed import (
    COMPRESSED_SUFFIX, CompressionError, JpegEncoder)
from remote_inference_py.transport.frame_ring import (
    FrameGone, RingError, RingReader, RingUnavailable, RingWriter, SHM_DIR)
from remote_inference_py.transport.image_cdr import image_parts

SHARED_SUFFIX = '/shm'


class ImagePublisher:
    """Publish camera frames, through shared memory when ``share`` (one writing thread)."""

    def __init__(self, node, topic, qos_profile, share=True, label='frames',
                 directory=SHM_DIR, jpeg_quality=None):
        self.node, self.topic, self.label, self.directory = node, topic, label, directory
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
        key = (frame_id, frame.shape, frame.dtype, encoding)
        if key != self._head_key:   # serialized once per layout (see transport/cdr.py)
            self._head_key, self._head = key, image_parts(0, 0, frame_id, frame, encoding)[0]
            self._refs = None
        head = bytearray(self._head)
        STAMP.pack_into(head, 4, sec, nanosec)
        pixels = frame.reshape(-1).view(np.uint8).data
        if self.shared_pub is not None:
            self._share(head, pixels, sec, nanosec, frame_id)
        if self.shared_pub is None or self.image_pub.get_subscription_count() > 0:
            self.image_pub.publish(b''.join((head, pixels)))
            self.full += 1
        if self.compressed_pub is not None and self.compressed_pub.get_subscription_count() > 0:
            self._compress(sec, nanosec, frame_id, frame, encoding)

    def _compress(self, sec, nanosec, frame_id, frame, encoding):
        """Publish the frame as a JPEG CompressedImage (only while someone subscribes)."""
        try:
            raw = self.jpeg.encode(sec, nanosec, frame_id, frame, encoding)
        except CompressionError as error:
            self.node.get_logger().error(f'{self.topic}{COMPRESSED_SUFFIX}: {error}',
                                         throttle_duration_sec=5.0)
            return
        self.compressed_pub.publish(raw)
        self.compressed += 1

    def _share(self, head, pixels, sec, nanosec, frame_id):
        size = len(head) + pixels.nbytes
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
        if self._refs is None:
            self._refs = SharedImageEncoder(frame_id, self.ring.name)
        slot, sequence = self.ring.write(head, pixels)
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
    """One camera stream into the policy server: ``on_raw(bytes)`` gets each Image's bytes."""

    def __init__(self, node, topic, qos_profile, on_raw, on_reject):
        self.node, self.topic, self.qos = node, topic, qos_profile
        self.on_raw, self.on_reject = on_raw, on_reject
        self.reader = None
        self.unavailable = set()
        self.proven = False
        self.image_sub = None
        self.decoder = SharedImageDecoder()
        node.create_subscription(SharedImage, topic + SHARED_SUFFIX, self.on_shared,
                                 qos_profile, raw=True)
        self.update()

    def on_shared(self, raw):
        """Read a frame the serialized reference points at (or fall back to the topic)."""
        try:
            msg = self.decoder.decode(raw)
        except CdrError as error:
            self.on_reject('malformed', f'malformed SharedImage: {error}')
            return
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
                Image, self.topic, self.on_raw, self.qos, raw=True)
            self.proven = False

    def close(self):
        """Unmap the ring."""
        if self.reader is not None:
            self.reader.close()
            self.reader = None
