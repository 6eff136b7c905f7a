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
Closed-loop evaluation on the pick-the-cube task.

- :mod:`.task`: the task on the simulated SO-101: episodes (cube seeds), success, completion
  time.
- :mod:`.settings`: what an evaluation runs: the node parameters (``config/eval_sim.yaml``),
  execution modes, injected latencies and policies.
- :mod:`.expert`: the scripted expert and a do-nothing policy, served as policy runtimes;
  :mod:`.sim_answers` is the expert's scripted answers to the executor's queries.
- :mod:`.learned`: a small learned camera policy: record demonstrations, train on CPU, export.
- :mod:`.flow`: a small flow-matching chunk policy trained on CPU from the same demonstrations,
  served by the flow-matching runtime (rtc-capable).
- :mod:`.simtime`: the runner in simulated time, through the system's own cores
  (deterministic and fast); :mod:`.trace` records its per-episode traces.
- :mod:`.realtime`: the runner through the real nodes over DDS, in real time (imports rclpy
  when it runs).
- :mod:`.matrix`: a matrix of configurations x episodes with either runner.
- :mod:`.stats`: episode results, success rates and completion times with their intervals, the
  markdown table and the plot.
- :mod:`.paired`: paired comparisons of two configurations seed by seed (McNemar's exact test,
  the success difference's interval, completion times, power).
- :mod:`.explain`: ``evaluate --explain``: the discordant seeds of an evaluation re-run with
  traces.
- :mod:`.cli`: the ``evaluate`` command.
"""
