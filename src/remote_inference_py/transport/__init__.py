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
How messages travel between the nodes (imports ROS, except :mod:`.values` and :mod:`.frame_ring`).

Nodes use only the seam: :mod:`.endpoints` (joint states and chunks) and :mod:`.shared_images`
(camera frames), which hand them the plain values of :mod:`.values` and never bytes, on either
transport (``REMOTE_INFERENCE_TRANSPORT=fast|plain``, see :mod:`.endpoints`).

- :mod:`.qos`: one QoS profile per role (joint states, commands, chunks, images, latched).
- :mod:`.values`: what nodes receive (pure: no ROS imports).
- :mod:`.endpoints`: the seam for joint states and chunks, and the transport switch.
- :mod:`.shared_images`: publishing and reading frames through the ring or as messages.
- :mod:`.compressed`: JPEG frames as serialized ``sensor_msgs/CompressedImage`` (another host).
- :mod:`.cdr`: encoders and decoders of the serialized messages on the hot paths (fast).
- :mod:`.image_cdr`: the fields of a serialized ``sensor_msgs/Image`` without a copy (fast).
- :mod:`.frame_ring`: the same-host shared-memory ring of camera frames (atomics and fences
  from libatomic, correct on weakly ordered CPUs; no ROS imports).
- :mod:`.presence_publisher`: the policy server's presence samples, published from a thread
  of their own on absolute deadlines (every ``lease / 8``), whatever the node's executor is
  doing.
"""
