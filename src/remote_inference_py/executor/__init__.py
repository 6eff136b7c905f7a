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

Pure (no ROS):

- :mod:`.config`: the settings as frozen, validated dataclasses, one declaration per parameter.
- :mod:`.handshake`: the handshake with a policy server before motion (capabilities, admit,
  matched topics) as a state machine the node steps once per control tick.
- :mod:`.server_selection`: which of several candidate servers to be admitted by (a survey
  ranked by load), and going on to the next when one refuses.
- :mod:`.server_lease`: whether the admitted server instance is still there, and why not (lease
  expired, another instance, session refused).
- :mod:`.first_request`: until anything of a session comes back, repeat the request in flight
  (a first request or answer lost while DDS discovery completes on the other side).
- :mod:`.query`: asking the policy while the arm holds (question, subtask, steering): why a goal
  is refused, and the state machine of one accepted goal.
- :mod:`.supervisor`: every decision around the core, stepped by the control tick alone:
  admission, presence, failover, start, the first request's repeats, the query, the task, the
  exit code (facts in, actions out).

:mod:`.core` is the state machine (buffer, hold, faults, return home), also pure, composed of
parts that each own one concern and are tested alone:

- :mod:`.timeline`: the plan and the control timeline: which target each control tick moves
  toward, and the committed target; :mod:`.merge` is how a new chunk joins the plan (the four
  merge modes, and blending).
- :mod:`.requests`: the request table: requests in flight, why each was closed, the turnaround
  samples, what the requests in flight will cover, the pause after a failure; :mod:`.refill`
  is when to ask for the next chunk (turnaround estimate, effective refill, staggering).
- :mod:`.validation`: whether a chunk's content can be played, and if not, why.
- :mod:`.hold`: the robot's feedback, the hold target and the wait; the return home.
- :mod:`.session`: the lifecycle from admission to the end: start, server loss, failover, the
  pause for text work, stop, fault.
- :mod:`.status`: the states, the status message and events to log, and the counters.

ROS: :mod:`.node` is an adapter with one owner thread: its callbacks hand events to the
control tick, which steps the supervisor (and through it the core) and carries out its
actions.
"""
