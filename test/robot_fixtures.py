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

"""The SO-101 without a ROS graph: its example calibration, policy units, waiting on a bus."""

import os
import time

import numpy as np

from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.robot.units import JointConverter

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'config',
                       'so101_calibration_example.json')
SO101 = 'so101-degrees-gripper-percent-v1'
# The longest reply timeout latency_timer_ms allows (its declared maximum), for tests that are
# not about timeouts: on a loaded host the emulator's reply (through the pseudo-terminal's
# kernel worker, which runs at normal priority whatever the emulator's) is late, not missing.
# With 2 ms (a 6 ms reply timeout), a loaded clean-clone run's hardware node failed its
# configure on three timed-out reads in a row.
PATIENT_MS = 100.0


def to_policy(si):
    """Convert SO-101 joint positions from SI radians to policy units (degrees, percent)."""
    return JointConverter(SO101, list(SO101_JOINT_NAMES)).to_policy(np.asarray(si, np.float64))


def wait_for(condition, timeout=5.0):
    """Poll `condition` every 10 ms until it is truthy; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    return condition()
