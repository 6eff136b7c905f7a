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
A human on the leader arm: teleoperation of the follower (docs/recording.md).

- :mod:`.leader`: the SO-101 leader arm (pure: no ROS): settings, bus, torque off, its
  positions as the follower's radians, its faults named.
- :mod:`.node`: the ``leader_arm`` node, publishing ``leader/joint_states`` and
  ``leader/fault`` for the executor, which decides who drives (executor/driver.py).
"""
