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
Unit conversion at the model boundary, for joint vectors in any column order.

:mod:`remote_inference_py.semantics` is the one registered place that converts between SI
radians and a policy's units; it expects policy values in the semantics' own joint order. A
model's state or action columns may come in another order, so :class:`JointConverter` binds a
semantics to one column order and converts both ways with columns kept in that order.
"""

from typing import Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.hardware.calibration import Calibration
from remote_inference_py.semantics import get_semantics, SIRadians


class JointConverter:
    """Convert joint vectors between SI radians and a semantics, columns in ``joints`` order."""

    def __init__(self, semantics: str, joints: Sequence[str],
                 calibration: Optional[Calibration] = None):
        """Bind ``semantics`` to the column order ``joints``; ValueError names a bad joint."""
        self.joints: Tuple[str, ...] = tuple(joints)
        if semantics == SIRadians.name:
            # The identity works for any robot, not only the SO-101.
            self._semantics = SIRadians(names=self.joints)
        else:
            self._semantics = get_semantics(semantics, calibration)
        # A first conversion checks the names (a missing or extra joint raises, named).
        self._semantics.to_policy(np.zeros(len(self.joints)), self.joints)
        order = self._semantics.names
        self._to_model = [order.index(j) for j in self.joints]   # semantics order -> ours
        self._to_semantics = [self.joints.index(n) for n in order]

    @property
    def name(self) -> str:
        """The semantics name."""
        return self._semantics.name

    def to_policy(self, si: np.ndarray) -> np.ndarray:
        """Convert SI values (columns in ``joints`` order, any leading shape) to policy units."""
        si = np.asarray(si, dtype=np.float64)
        flat = si.reshape(-1, si.shape[-1]) if si.ndim > 2 else si
        values = self._semantics.to_policy(flat, self.joints)[..., self._to_model]
        return values.reshape(si.shape)

    def to_si(self, values: np.ndarray) -> np.ndarray:
        """Convert policy values (columns in ``joints`` order, any leading shape) to SI."""
        values = np.asarray(values, dtype=np.float64)
        flat = values.reshape(-1, values.shape[-1]) if values.ndim > 2 else values
        si = self._semantics.from_policy(flat[..., self._to_semantics], self.joints)
        return si.reshape(values.shape)
