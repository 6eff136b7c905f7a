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
The robot model, in one place (pure: no ROS).

- :mod:`.so101`: the SO-100/SO-101 joint names, their order and motor ids.
- :mod:`.control_table`: the Feetech STS3215 register map and sign-magnitude encoding.
- :mod:`.calibration`: LeRobot calibration files and servo ticks <-> radians.
- :mod:`.units`: the unit semantics at the model boundary (SI radians <-> a policy's units)
  and :class:`~.units.JointConverter` for any column order.
"""
