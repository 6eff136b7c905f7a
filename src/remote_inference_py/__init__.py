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
remote_inference: keep a robot arm moving while a policy computes its next chunk of actions.

The package is a set of rooms; docs/design.md draws them and explains the behaviour.

Node rooms, side by side (none imports another):

- :mod:`.executor`: the robot-side node that plays chunks at the action rate and asks for more.
- :mod:`.policy_server`: the node that turns observations into chunks with a policy.
- :mod:`.hardware`: the node that drives the arm (Feetech servos or the MuJoCo SO-101).

Each is a pure core (plain Python and numpy, tested without ROS) plus one ``node.py`` that maps
ROS parameters, topics and services onto that core.

Shared rooms the node rooms stand on:

- :mod:`.robot`: the arm: SO-101 joint names, calibration, servo control table, units (pure).
- :mod:`.contract`: what robot and server agree on: protocol version, merge modes, the one
  admission check both sides run, and the committed plan an rtc request carries (pure).
- :mod:`.transport`: how messages travel: the seam nodes publish and subscribe through (plain
  values on either transport), QoS by role, serialized-message encoders and decoders, the
  shared-memory frame ring (imports ROS).
- :mod:`.common`: what every node shares: ``main()`` and signals, the one declaration per
  setting and its ROS parameters, the control-tick thread, allocator settings, the Fast DDS
  discovery server (ROS only in ``main()`` and the parameters).

Tools above them: :mod:`.analysis` (record and analyse runs), :mod:`.evaluation` (the
pick-the-cube task and its statistics), :mod:`.testing` (the servo bus emulator, network
namespaces as hosts), ``bringup`` (what starts where), ``launching`` (the launch files' shared
actions), ``demo`` and ``smoke``.
"""
