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
What every node shares: its ``main()``, its settings and parameters, its tick, its process.

Only :mod:`.node_main` and :mod:`.params` import ROS; the other modules are pure.

- :mod:`.settings`: one declaration per setting (a field of a frozen config dataclass, made by
  ``setting()``), its checks and the tables of docs/parameters.md; no ROS.
- :mod:`.params`: the ROS side of those declarations: parameters with their descriptors,
  declared, validated at start-up and updated live.
- :mod:`.node_main`: ``run_node()``: start-up, signals, the stop rule, which rclpy executor spins.
- :mod:`.ticker`: the control-tick thread with absolute deadlines.
- :mod:`.process`: allocator settings for steady latency, applied first in every ``main()``.
- :mod:`.discovery`: discovery through a Fast DDS discovery server: the ``discovery_server``
  launch argument and the console script that runs the server.
"""
