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

"""The flow sampler's settings, prefix weights and guidance weight, without torch."""

import dataclasses
import math

import numpy as np
import pytest

from remote_inference_py.common.settings import declared
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.runtimes import RuntimeOptions
from remote_inference_py.policy_server.sampler import (
    guidance_weight, PREFIX_SCHEDULES, prefix_weights, sampler_from_dict, SamplerError,
    SamplerOverrides, SamplerSettings)


def test_manifest_section_defaults_and_values():
    assert sampler_from_dict(None) == SamplerSettings()
    settings = sampler_from_dict({'steps': 4, 'execution_horizon': 12, 'prefix_schedule': 'exp',
                                  'max_guidance_weight': 5, 'noise_seed': 7})
    assert settings == SamplerSettings(4, 12, 'exp', 5.0, 7)
    assert sampler_from_dict(settings.to_dict()) == settings


@pytest.mark.parametrize('section, field', [
    ({'steps': 0}, 'sampler.steps'),
    ({'steps': 2.5}, 'sampler.steps'),
    ({'execution_horizon': -1}, 'sampler.execution_horizon'),
    ({'prefix_schedule': 'cosine'}, 'sampler.prefix_schedule'),
    ({'max_guidance_weight': 0}, 'sampler.max_guidance_weight'),
    ({'max_guidance_weight': float('nan')}, 'sampler.max_guidance_weight'),
    ({'noise_seed': 'x'}, 'sampler.noise_seed'),
    ({'temperature': 1.0}, 'sampler.temperature'),
])
def test_bad_manifest_fields_are_named(section, field):
    with pytest.raises(SamplerError, match=field.replace('.', r'\.')):
        sampler_from_dict(section)


def test_a_sampler_that_is_not_a_mapping_is_refused():
    with pytest.raises(SamplerError, match='sampler must be a mapping'):
        sampler_from_dict([10])


def test_parameters_override_only_what_they_set():
    base = SamplerSettings(steps=10, execution_horizon=25, prefix_schedule='linear',
                           max_guidance_weight=10.0, noise_seed=3)
    assert SamplerOverrides().apply(base) == base
    changed = SamplerOverrides(flow_steps=4, rtc_execution_horizon=8, rtc_prefix_schedule='ones',
                               rtc_max_guidance_weight=2.5).apply(base)
    assert changed == SamplerSettings(4, 8, 'ones', 2.5, 3)


@pytest.mark.parametrize('changes, name', [
    ({'flow_steps': -1}, 'flow_steps'),
    ({'rtc_execution_horizon': -3}, 'rtc_execution_horizon'),
    ({'rtc_prefix_schedule': 'steep'}, 'rtc_prefix_schedule'),
    ({'rtc_max_guidance_weight': -1.0}, 'rtc_max_guidance_weight'),
    ({'rtc_max_guidance_weight': math.inf}, 'rtc_max_guidance_weight'),
])
def test_bad_parameters_are_named_by_the_server_config(changes, name):
    with pytest.raises(ValueError, match=f"parameter '{name}'"):
        ServerConfig(**changes)
    assert RuntimeOptions.from_config(ServerConfig()).rtc_prefix_schedule == ''
    options = RuntimeOptions.from_config(ServerConfig(flow_steps=3, rtc_prefix_schedule='exp'))
    assert (options.flow_steps, options.rtc_prefix_schedule) == (3, 'exp')


@pytest.mark.parametrize('parameter, key, smallest, outside', [
    ('flow_steps', 'steps', 1, 1001),
    ('rtc_execution_horizon', 'execution_horizon', 0, 100001),
    ('rtc_max_guidance_weight', 'max_guidance_weight', 1e-9, 1e6 * (1 + 1e-5)),
])
def test_the_sampler_accepts_exactly_the_range_the_server_declares(parameter, key, smallest,
                                                                   outside):
    """One declaration (ServerConfig) bounds the parameter, RuntimeOptions and the manifest."""
    high = declared(ServerConfig)[parameter].high
    # Just inside, at the declared bound: the server, the options, the sampler and a manifest.
    options = RuntimeOptions.from_config(ServerConfig(**{parameter: high}))
    assert getattr(options, parameter) == high
    overridden = SamplerOverrides(**{parameter: getattr(options, parameter)})
    assert getattr(overridden.apply(SamplerSettings()).check(), key) == high
    assert getattr(sampler_from_dict({key: high}), key) == high
    assert getattr(sampler_from_dict({key: smallest}), key) == smallest
    # Just outside: each refuses it by its own name.
    with pytest.raises(ValueError, match=f"parameter '{parameter}'"):
        ServerConfig(**{parameter: outside})
    with pytest.raises(ValueError, match=f"parameter '{parameter}'"):
        RuntimeOptions(**{parameter: outside})
    with pytest.raises(SamplerError, match=f'sampler.{key} '):
        sampler_from_dict({key: outside})
    # 0 means "the manifest's" for the parameter, and nothing for a manifest below its floor.
    assert SamplerOverrides(**{parameter: 0}).apply(SamplerSettings()) == SamplerSettings()
    if smallest > 0:
        with pytest.raises(SamplerError, match=f'sampler.{key} '):
            sampler_from_dict({key: 0})


def test_the_schedules_are_the_servers_choices_and_each_one_is_implemented():
    choices = declared(ServerConfig)['rtc_prefix_schedule'].choices
    assert ('',) + PREFIX_SCHEDULES == choices
    for schedule in PREFIX_SCHEDULES:
        assert sampler_from_dict({'prefix_schedule': schedule}).prefix_schedule == schedule
        assert prefix_weights(1, 4, 10, 6, schedule)[0] == 1.0
    with pytest.raises(ValueError, match="parameter 'rtc_prefix_schedule' is 'cosine'"):
        RuntimeOptions(rtc_prefix_schedule='cosine')


def test_runtime_options_take_the_servers_defaults():
    specs = declared(ServerConfig)
    options = RuntimeOptions()
    for field in dataclasses.fields(RuntimeOptions):
        if field.name in specs and specs[field.name].default is not None:
            expected = specs[field.name].default
            expected = tuple(expected) if isinstance(expected, list) else expected
            assert getattr(options, field.name) == expected, field.name
    assert RuntimeOptions.from_config(ServerConfig()) == options


def test_prefix_weights_per_schedule():
    linear = prefix_weights(3, 8, 50, 10, 'linear')
    np.testing.assert_allclose(linear, [1, 1, 1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6, 0, 0])
    exp = prefix_weights(3, 8, 50, 10, 'exp')
    assert np.all(exp[:3] == 1) and np.all(exp[8:] == 0)
    assert np.all(exp[3:8] < linear[3:8]) and np.all(np.diff(exp[3:8]) < 0)
    np.testing.assert_array_equal(prefix_weights(3, 8, 50, 10, 'ones'), [1] * 8 + [0, 0])
    np.testing.assert_array_equal(prefix_weights(3, 8, 50, 10, 'zeros'), [1] * 3 + [0] * 7)


def test_prefix_weights_stop_at_the_end_of_the_plan_and_cover_the_frozen_rows():
    np.testing.assert_array_equal(prefix_weights(2, 8, 4, 10, 'ones'), [1] * 4 + [0] * 6)
    # A horizon shorter than the frozen rows still holds every frozen row.
    np.testing.assert_array_equal(prefix_weights(6, 3, 50, 10, 'linear'), [1] * 6 + [0] * 4)
    assert not prefix_weights(0, 0, 50, 10, 'linear').any()
    assert prefix_weights(20, 30, 50, 10, 'exp').tolist() == [1.0] * 10


def test_guidance_weight_is_large_when_noisy_and_capped():
    assert guidance_weight(0.0, 10.0) == 10.0
    assert guidance_weight(0.5, 10.0) == pytest.approx(2.0)
    assert guidance_weight(0.9, 100.0) == pytest.approx(0.82 / 0.09)
    assert guidance_weight(0.9, 5.0) == 5.0
    assert guidance_weight(1.0, 5.0) == 0.0
