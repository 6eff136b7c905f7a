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
Settings and arithmetic of the flow-matching sampler with prefix guidance (no torch, no ROS).

A ``flow_matching`` policy's manifest carries a ``sampler`` section::

    sampler:
      steps: 10                  # Euler steps from noise (t = 0) to actions (t = 1)
      execution_horizon: 25      # rows of the committed plan the new chunk is steered to
      prefix_schedule: linear    # linear | exp | ones | zeros (how that steering fades)
      max_guidance_weight: 10.0  # cap of the guidance weight (reached near t = 0)
      noise_seed: 0              # seed of the sampling noise

Every key is optional (defaults: :class:`SamplerSettings`); an unknown key or a bad value is a
:class:`~.manifest.ManifestError` naming ``sampler.<key>``. The policy server's parameters
``flow_steps``, ``rtc_execution_horizon``, ``rtc_prefix_schedule`` and
``rtc_max_guidance_weight`` override them when set (0 or empty: the manifest's). Those
parameters are declared once, in ``policy_server/config.py``, and their declaration is the
range of the manifest's keys too: the largest steps, horizon and guidance weight, and the
schedules, are read from it here (a manifest needs at least 1 step and a weight above 0,
where a parameter's 0 means "the manifest's"). A bad parameter is a ValueError naming it,
raised by the server config or ``RuntimeOptions`` before any runtime sees it.

How much each row of the committed plan pulls on the new chunk (:func:`prefix_weights`):
the first ``frozen_steps`` rows (executed whatever the policy answers) weigh 1; from there
the weight fades to 0 at row ``execution_horizon`` (``linear``: a straight ramp; ``exp``: the
ramp ``w`` bent to ``w (e^w - 1) / (e - 1)``, letting go sooner; ``ones``: 1 up to the horizon;
``zeros``: only the frozen rows); rows at and after the horizon, and rows past the end of the
plan, weigh 0. A horizon shorter than the frozen rows is stretched to cover them.

How hard the sampler steers at time ``t`` (:func:`guidance_weight`): the pseudo-inverse
guidance weight ``(1 - t) / t * ((1 - t)^2 + t^2) / (1 - t)^2`` (large while the sample is
mostly noise, about 2 at t = 0.5), capped at ``max_guidance_weight``.
"""

import dataclasses
import math
from typing import Any, Mapping, Optional

import numpy as np

from remote_inference_py.common.settings import declared, REL_TOL
from remote_inference_py.policy_server.config import ServerConfig

_PARAMETERS = declared(ServerConfig)
PREFIX_SCHEDULES = tuple(c for c in _PARAMETERS['rtc_prefix_schedule'].choices if c)
"""The prefix schedules: the choices of the server's ``rtc_prefix_schedule`` but ''."""
MAX_STEPS = _PARAMETERS['flow_steps'].high
MAX_EXECUTION_HORIZON = _PARAMETERS['rtc_execution_horizon'].high
MAX_GUIDANCE_WEIGHT = _PARAMETERS['rtc_max_guidance_weight'].high
MAX_NOISE_SEED = 2 ** 63 - 1


class SamplerError(ValueError):
    """A sampler setting is invalid; the message names the field or parameter."""


@dataclasses.dataclass(frozen=True)
class SamplerSettings:
    """How a flow-matching runtime samples a chunk (see the module docstring)."""

    steps: int = 10
    execution_horizon: int = 25
    prefix_schedule: str = 'linear'
    max_guidance_weight: float = 10.0
    noise_seed: int = 0

    def check(self, names: Optional[Mapping[str, str]] = None) -> 'SamplerSettings':
        """Raise SamplerError naming the bad field (``names`` maps a field to its name)."""
        names = names or {}

        def name(field: str) -> str:
            return names.get(field, field)

        for field, low, high in (('steps', 1, MAX_STEPS),
                                 ('execution_horizon', 0, MAX_EXECUTION_HORIZON),
                                 ('noise_seed', 0, MAX_NOISE_SEED)):
            value = getattr(self, field)
            if not _is_int(value) or not low <= value <= high:
                raise SamplerError(f'{name(field)} must be an integer in [{low}, {high}], got '
                                   f'{value!r}')
        if self.prefix_schedule not in PREFIX_SCHEDULES:
            raise SamplerError(f'{name("prefix_schedule")} is {self.prefix_schedule!r}; '
                               f'expected one of {", ".join(PREFIX_SCHEDULES)}')
        weight = self.max_guidance_weight
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
                or not 0 < weight <= MAX_GUIDANCE_WEIGHT * (1 + REL_TOL):
            raise SamplerError(f'{name("max_guidance_weight")} must be a number in '
                               f'(0, {MAX_GUIDANCE_WEIGHT}], got {weight!r}')
        return self

    def to_dict(self) -> dict:
        """Return the manifest's ``sampler`` section."""
        return dataclasses.asdict(self)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def sampler_from_dict(data: Any) -> SamplerSettings:
    """Validate a manifest's ``sampler`` section (None: the defaults)."""
    if data is None:
        return SamplerSettings()
    if not isinstance(data, dict):
        raise SamplerError(f'sampler must be a mapping, got {data!r}')
    fields = [f.name for f in dataclasses.fields(SamplerSettings)]
    for key in data:
        if key not in fields:
            raise SamplerError(f'sampler.{key} is not a sampler setting (known: '
                               f'{", ".join(fields)})')
    values = dict(data)
    if _is_int(values.get('max_guidance_weight')):
        values['max_guidance_weight'] = float(values['max_guidance_weight'])
    settings = SamplerSettings(**values)
    return settings.check({f: f'sampler.{f}' for f in fields})


@dataclasses.dataclass(frozen=True)
class SamplerOverrides:
    """The policy server's sampler parameters; 0 or '' keep the manifest's value.

    The values come checked by the server's declaration of these parameters (``ServerConfig``,
    ``RuntimeOptions``), whose ranges are the manifest's: nothing is checked again here.
    """

    flow_steps: int = 0
    rtc_execution_horizon: int = 0
    rtc_prefix_schedule: str = ''
    rtc_max_guidance_weight: float = 0.0

    def apply(self, settings: SamplerSettings) -> SamplerSettings:
        """Return ``settings`` with the parameters that are set."""
        changes = {}
        if self.flow_steps:
            changes['steps'] = self.flow_steps
        if self.rtc_execution_horizon:
            changes['execution_horizon'] = self.rtc_execution_horizon
        if self.rtc_prefix_schedule:
            changes['prefix_schedule'] = self.rtc_prefix_schedule
        if self.rtc_max_guidance_weight:
            changes['max_guidance_weight'] = float(self.rtc_max_guidance_weight)
        return dataclasses.replace(settings, **changes)


def prefix_weights(frozen_steps: int, execution_horizon: int, plan_steps: int, total: int,
                   schedule: str) -> np.ndarray:
    """Return the ``[total]`` weights of the committed plan's rows (module docstring)."""
    if schedule not in PREFIX_SCHEDULES:
        raise SamplerError(f'prefix schedule {schedule!r} is not one of '
                           f'{", ".join(PREFIX_SCHEDULES)}')
    frozen = max(0, min(int(frozen_steps), total))
    horizon = max(min(int(execution_horizon), total), frozen)
    weights = np.zeros(total, dtype=np.float64)
    weights[:frozen] = 1.0
    fading = horizon - frozen
    if fading > 0 and schedule != 'zeros':
        if schedule == 'ones':
            ramp = np.ones(fading)
        else:
            # Row frozen + k of a ramp that would reach 1 one row before the first fading
            # row and 0 at the horizon.
            ramp = (fading - np.arange(fading)) / (fading + 1.0)
            if schedule == 'exp':
                ramp = ramp * np.expm1(ramp) / (math.e - 1.0)
        weights[frozen:horizon] = ramp
    weights[max(0, int(plan_steps)):] = 0.0
    return weights


def guidance_weight(t: float, max_weight: float) -> float:
    """Return the guidance weight at flow time ``t`` (0: noise, 1: actions), capped."""
    if t <= 0.0:
        return float(max_weight)
    if t >= 1.0:
        return 0.0
    inverse_r2 = ((1.0 - t) ** 2 + t ** 2) / (1.0 - t) ** 2
    return float(min((1.0 - t) / t * inverse_r2, max_weight))
