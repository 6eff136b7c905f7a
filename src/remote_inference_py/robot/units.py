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

"""Registry of action and observation unit semantics at the model boundary.

ROS topics carry SI units (joint positions in radians). A policy has its own units and joint
order, named by a semantics string. This module is the one place that converts between them:

- ``so101-degrees-gripper-percent-v1``: LeRobot's SO-101 with ``use_degrees=True``. Joints
  in the order shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll, gripper;
  body joints in degrees (LeRobot's DEGREES normalization), the gripper in percent of its
  calibrated range (RANGE_0_100, mirrored when its drive mode is 1).
- ``si-radians-v1``: the identity, radians in the same SO-101 joint order.

Usage::

    semantics = get_semantics('so101-degrees-gripper-percent-v1', Calibration.load(path))
    policy_values = semantics.to_policy(joint_positions, joint_names)
    joint_targets = semantics.from_policy(chunk, joint_names)

Both directions take ``names``, the joint order of the SI side (for example the ``name``
field of ``joint_states``): ``to_policy(si, names)`` reads column ``j`` of ``si`` as joint
``names[j]`` and returns values in the policy's order (``semantics.names``);
``from_policy(values, names)`` takes values in the policy's order and returns SI values in the
order of ``names``. Arrays are vectors ``(joints,)`` or chunks ``(steps, joints)``. Joints are
matched by name: a missing, extra or repeated name and a non-finite value are ValueErrors
naming the joint. Conversions go through the servo calibration (see
``remote_inference_py.robot.calibration`` for the exact formulas); without a calibration
file, semantics use ``Calibration.default_so101()``.

A model's state or action columns may come in yet another order: :class:`JointConverter`
binds a semantics to one column order and converts both ways with the columns kept in it.
"""

from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES


class Semantics:
    """Base class of a named unit convention: SI joint values <-> policy values."""

    name = ''
    description = ''

    def __init__(self, names: Sequence[str]):
        """Store the policy-side joint order."""
        self._names = tuple(names)

    @property
    def names(self) -> Tuple[str, ...]:
        """Joint names in the policy's order."""
        return self._names

    def to_policy(self, si: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """Convert SI values whose columns are ``names`` to policy units and order."""
        order = self._index(names)
        values = self._as_joint_array(si, names, 'SI')
        return self._si_to_policy(values[..., order])

    def from_policy(self, values: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """Convert policy values (policy order) to SI values ordered as ``names``."""
        self._index(names)
        values = self._as_joint_array(values, self._names, self.name)
        si = self._policy_to_si(values)
        return si[..., [self._names.index(name) for name in names]]

    def _si_to_policy(self, si: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _policy_to_si(self, values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _index(self, names: Sequence[str]) -> list:
        """Return, for each policy joint, its column in ``names``; check the name sets."""
        if isinstance(names, str):
            raise ValueError(f'joint names must be a sequence of names, got the string {names!r}')
        names = list(names)
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(f'joint {name!r} appears twice in the joint names')
            seen.add(name)
            if name not in self._names:
                raise ValueError(
                    f'unexpected joint {name!r} for semantics {self.name!r}; expected joints: '
                    f'{", ".join(self._names)}')
        for name in self._names:
            if name not in seen:
                raise ValueError(f'joint {name!r} missing for semantics {self.name!r}')
        return [names.index(name) for name in self._names]

    def _as_joint_array(self, values, names: Sequence[str], what: str) -> np.ndarray:
        array = np.asarray(values, dtype=np.float64)
        if array.ndim not in (1, 2) or array.shape[-1] != len(names):
            raise ValueError(
                f'{what} values of shape {array.shape} do not match {len(names)} joints '
                f'({", ".join(names)}); expected (joints,) or (steps, joints)')
        finite = np.isfinite(array)
        if not finite.all():
            step, column = np.argwhere(~finite.reshape(-1, len(names)))[0]
            where = f' at step {step}' if array.ndim == 2 else ''
            raise ValueError(
                f'joint {list(names)[column]!r} has a non-finite {what} value{where}')
        return array


class SIRadians(Semantics):
    """Identity semantics: radians, SO-101 joint order (or the given one)."""

    name = 'si-radians-v1'
    description = 'joint positions in SI radians, matched by name'

    def __init__(self, calibration: Optional[Calibration] = None,
                 names: Sequence[str] = SO101_JOINT_NAMES):
        """Create the identity over ``names``; the calibration is not needed."""
        super().__init__(names)

    def _si_to_policy(self, si: np.ndarray) -> np.ndarray:
        return si.copy()

    def _policy_to_si(self, values: np.ndarray) -> np.ndarray:
        return values.copy()


class SO101DegreesGripperPercent(Semantics):
    """LeRobot SO-101 units: body joints in degrees, gripper in percent of its range."""

    name = 'so101-degrees-gripper-percent-v1'
    description = ('SO-101 body joints in degrees (LeRobot DEGREES), gripper in percent of its '
                   'calibrated range (LeRobot RANGE_0_100)')

    def __init__(self, calibration: Optional[Calibration] = None):
        """Bind the semantics to an arm calibration (default SO-101 when None)."""
        super().__init__(SO101_JOINT_NAMES)
        calibration = calibration if calibration is not None else Calibration.default_so101()
        for joint in SO101_JOINT_NAMES:
            if joint not in calibration:
                raise ValueError(
                    f'joint {joint!r} missing from the calibration needed by semantics '
                    f'{self.name!r}')
        self._calibration = calibration

    @property
    def calibration(self) -> Calibration:
        """The calibration the conversion uses."""
        return self._calibration

    def _si_to_policy(self, si: np.ndarray) -> np.ndarray:
        out = np.empty_like(si)
        for column, joint in enumerate(self._names):
            out[..., column] = self._calibration.radians_to_normalized(joint, si[..., column])
        return out

    def _policy_to_si(self, values: np.ndarray) -> np.ndarray:
        out = np.empty_like(values)
        for column, joint in enumerate(self._names):
            out[..., column] = self._calibration.normalized_to_radians(
                joint, values[..., column])
        return out


_REGISTRY: Dict[str, Callable[[Optional[Calibration]], Semantics]] = {
    SO101DegreesGripperPercent.name: SO101DegreesGripperPercent,
    SIRadians.name: SIRadians,
}


def known_semantics() -> Tuple[str, ...]:
    """Return the registered semantics names, sorted."""
    return tuple(sorted(_REGISTRY))


def get_semantics(name: str, calibration: Optional[Calibration] = None) -> Semantics:
    """Return the semantics called ``name``, bound to ``calibration`` (default SO-101).

    Raises ValueError naming the unknown semantics and listing the known ones.
    """
    try:
        factory = _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(
            f'unknown semantics {name!r}; known semantics: {", ".join(known_semantics())}'
        ) from None
    return factory(calibration)


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
