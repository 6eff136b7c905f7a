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
The executor room: plays chunks on the robot at the action rate and asks for the next in time.

Pure: :mod:`.config` (frozen settings), :mod:`.admission` (the handshake with a policy server
before motion), :mod:`.choice` (which of several candidate servers, and failover),
:mod:`.refill` (when to ask), :mod:`.merge` (how a new chunk joins the plan,
and blending), :mod:`.core` (the state machine: buffer, hold, faults, return) over its parts
:mod:`.timeline`, :mod:`.requests`, :mod:`.validation`, :mod:`.hold`, :mod:`.session` (admission
to the end: server loss, failover, the pause for text work, stop, fault) and :mod:`.stats`. ROS:
:mod:`.node` maps parameters, topics and services onto the handshake and the core.
"""
