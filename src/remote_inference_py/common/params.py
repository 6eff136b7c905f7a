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

"""Parameter descriptors shared by the nodes (house style: every knob documented, ranged)."""

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
)


def descriptor(description, kind, read_only=False, low=None, high=None):
    """Build a ParameterDescriptor; ``low``/``high`` set a range on numeric parameters."""
    desc = ParameterDescriptor(description=description, type=kind, read_only=read_only)
    if low is not None and kind == ParameterType.PARAMETER_DOUBLE:
        desc.floating_point_range = [FloatingPointRange(from_value=float(low),
                                                        to_value=float(high), step=0.0)]
    if low is not None and kind == ParameterType.PARAMETER_INTEGER:
        desc.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=0)]
    return desc
