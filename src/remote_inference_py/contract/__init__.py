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
What a robot and a policy server agree on before anything moves (pure: no ROS).

- :mod:`.check`: the protocol version, the merge modes, the contract types and
  :func:`~.check.check_admission`, the one function that lists every difference; the
  executor runs it before asking and the server when asked.
- :mod:`.checkpoint`: what a checkpoint name means (a model file, a Hugging Face Hub id), as
  the launch checks it before anything starts and the server loads it.
- :mod:`.plan`: the committed plan a request carries in rtc mode, and how a capture time maps
  onto it.
- :mod:`.presence`: the cadence of the server's presence samples and the silence that
  tolerates.
- :mod:`.settings`: the settings both nodes have (``deployment``, ``presence_lease_s``),
  declared once; each node's config embeds them.
"""
