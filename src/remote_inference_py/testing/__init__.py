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
Test tools that ship with the package because users need them too (pure: no ROS).

- :mod:`.emulator`: a byte-level Feetech bus on a pseudo-terminal: the real servo SDK talks to
  it as to a real bus, so the driver can be exercised without an arm.
- :mod:`.netns`: several "hosts" on one machine, a network namespace each on one switch (needs
  root and iproute2), for tests and benchmarks.
"""
