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

"""The SO-100/SO-101 arm as every room sees it: joint names, their order and motor ids."""

from typing import Dict, Tuple

SO101_JOINT_NAMES: Tuple[str, ...] = (
    'shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll', 'gripper')
"""SO-101 joints in LeRobot's order; motor ids are 1..6 in this order."""

SO101_MOTOR_IDS: Dict[str, int] = {name: index + 1 for index, name in enumerate(SO101_JOINT_NAMES)}
"""Factory motor id of each joint on the bus."""
