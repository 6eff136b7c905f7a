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
The hardware room: drives the arm and reports what it measured and applied.

Pure: :mod:`.config` (frozen settings), :mod:`.backend` (the backend interface),
:mod:`.feetech` (the servo bus driver over the Feetech SDK) composed of :mod:`.feetech_link`
(retried transactions, counters, fault), :mod:`.feetech_groups` (sync read and write, status
flags) and :mod:`.feetech_registers` (registers and calibration), and :mod:`.feetech_backend`,
:mod:`.sim` (the MuJoCo SO-101 and its cameras) on :mod:`.sim_scene` (the scene, its
compiled-scene cache and the mesh simplification) and :mod:`.sim_backend`, :mod:`.commands`
(limits, watchdog), :mod:`.runner` (the servo loop) composed of :mod:`.safety` (which commands
reach the arm), :mod:`.lifecycle` (states, torque, fault, shutdown) and :mod:`.report` (status
message, log, counters), :mod:`.cameras` (the real arm's USB cameras through OpenCV, one
thread each).
ROS: :mod:`.node`.
"""
