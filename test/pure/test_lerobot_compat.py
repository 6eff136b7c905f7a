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
The mapping of LeRobot 0.5 / 0.6 checkpoint files onto LeRobot 0.4, on dicts (no LeRobot).

The files are written as LeRobot 0.6.1 writes them (lerobot_0_6_files.py); the known keys and
steps are LeRobot 0.4.4's. What may be dropped is dropped and named; everything else is refused
with the key, step or weight and the file named.
"""

import copy

import lerobot_0_6_files as files
import pytest

from remote_inference_py.policy_server.lerobot_compat import (
    CompatError, describe_mismatch, map_config, map_processor, shared_key_groups, SHOWN_KEYS,
    weight_mismatch)

WHERE = '/robot/pretrained_model/config.json'


def mapped(kind, config=None):
    return map_config(config or files.CONFIGS_0_6[kind], files.FIELDS_0_4[kind], WHERE)


@pytest.mark.parametrize('kind', ['act', 'diffusion', 'pi0', 'pi05'])
def test_a_0_6_config_loses_exactly_the_keys_0_6_added(kind):
    result = mapped(kind)
    assert result.dropped == tuple(files.ADDED[kind]) and result.newer
    assert list(result.config) == ['type'] + files.FIELDS_0_4[kind]
    original = files.CONFIGS_0_6[kind]
    changed = [key for key in result.config if result.config[key] != original[key]]
    # The backbone (ACT; diffusion from 0.6) is not downloaded: model.safetensors replaces it.
    assert changed == (['pretrained_backbone_weights'] if kind in ('act', 'diffusion') else [])


def test_a_0_4_config_is_kept_apart_from_the_backbone_download():
    config = {key: value for key, value in files.ACT_0_6.items() if key not in
              files.ADDED['act']}
    result = mapped('act', config)
    assert result.dropped == () and not result.newer
    assert result.nulled == ('pretrained_backbone_weights',) and result.changed
    result = mapped('act', {**config, 'pretrained_backbone_weights': None})
    assert not result.changed and result.config == {**config,
                                                    'pretrained_backbone_weights': None}


def test_an_unknown_key_is_refused_naming_it_and_the_file():
    config = {**files.ACT_0_6, 'use_flash_attention': True}
    with pytest.raises(CompatError, match=r'/robot/pretrained_model/config.json: key '
                                          r"'use_flash_attention' is unknown to the installed "
                                          r'LeRobot \(act policy\)'):
        mapped('act', config)


def test_a_key_dropped_for_one_type_is_refused_for_another():
    # gradient_checkpointing is diffusion's training switch; ACT has no such field.
    with pytest.raises(CompatError, match=r"key 'gradient_checkpointing' is unknown"):
        mapped('act', {**files.ACT_0_6, 'gradient_checkpointing': False})


@pytest.mark.parametrize('kind', ['pi0', 'pi05'])
def test_relative_actions_are_refused_by_name(kind):
    config = {**files.CONFIGS_0_6[kind], 'use_relative_actions': True}
    with pytest.raises(CompatError, match=r"'use_relative_actions' is true: the "
                                          rf'{kind} policy predicts actions relative'):
        mapped(kind, config)
    pre, post = files.pi_processors(files.CONFIGS_0_6[kind], relative=True)
    config_mapping = mapped(kind)
    with pytest.raises(CompatError, match=r"pre.json: step \d 'relative_actions_processor' "
                                          r'is enabled'):
        map_processor(pre, files.STEPS_0_4, config_mapping, 'pre.json')
    with pytest.raises(CompatError, match=r"post.json: step 1 'absolute_actions_processor' "
                                          r'is enabled'):
        map_processor(post, files.STEPS_0_4, config_mapping, 'post.json')


@pytest.mark.parametrize('kind', ['act', 'diffusion'])
def test_act_and_diffusion_processors_are_taken_as_they_are(kind):
    config = mapped(kind)
    for pipeline in files.default_processors(files.CONFIGS_0_6[kind]):
        result = map_processor(pipeline, files.STEPS_0_4, config, 'p.json')
        assert not result.changed and result.pipeline == pipeline


def test_pi0_loses_its_two_disabled_steps_and_keeps_its_statistics_files():
    config = mapped('pi0')
    pre, post = files.pi_processors(files.CONFIGS_0_6['pi0'])
    result = map_processor(pre, files.STEPS_0_4, config, 'pre.json')
    assert result.removed == ('relative_actions_processor',) and result.rewritten == ()
    assert [s['registry_name'] for s in result.pipeline['steps']] == [
        'rename_observations_processor', 'to_batch_processor', 'pi0_new_line_processor',
        'tokenizer_processor', 'device_processor', 'normalizer_processor']
    # The normalizer is now step 5, but its statistics stay in the file the json names.
    assert result.pipeline['steps'][-1]['state_file'] == (
        'policy_preprocessor_step_6_normalizer_processor.safetensors')
    result = map_processor(post, files.STEPS_0_4, config, 'post.json')
    assert result.removed == ('absolute_actions_processor',)
    assert [s['registry_name'] for s in result.pipeline['steps']] == [
        'unnormalizer_processor', 'device_processor']
    assert pre['steps'][5]['registry_name'] == 'relative_actions_processor'   # not mutated


def test_pi05_state_prompt_is_not_padded_for_a_0_6_folder():
    # 0.5 on writes the state into the prompt unpadded; 0.4 pads it to max_state_dim (32).
    # The state size as max_state_dim makes 0.4's padding a no-op.
    pre, _ = files.pi_processors(files.CONFIGS_0_6['pi05'])
    result = map_processor(pre, files.STEPS_0_4, mapped('pi05'), 'pre.json')
    assert result.rewritten == ('pi05_prepare_state_tokenizer_processor_step',)
    [step] = [s for s in result.pipeline['steps']
              if s['registry_name'] == 'pi05_prepare_state_tokenizer_processor_step']
    assert step['config'] == {'max_state_dim': 6}
    # A folder in 0.4's format keeps 0.4's prompt.
    old = {key: value for key, value in files.CONFIGS_0_6['pi05'].items()
           if key not in files.ADDED['pi05']}
    old_pre = copy.deepcopy(pre)
    old_pre['steps'] = [s for s in old_pre['steps']
                        if s['registry_name'] != 'relative_actions_processor']
    result = map_processor(old_pre, files.STEPS_0_4, mapped('pi05', old), 'pre.json')
    assert not result.changed


def test_an_unknown_processor_step_or_argument_is_refused_by_name():
    config = mapped('act')
    pre, _ = files.default_processors(files.ACT_0_6)
    unknown = copy.deepcopy(pre)
    unknown['steps'].insert(2, {'registry_name': 'render_messages_processor', 'config': {}})
    with pytest.raises(CompatError, match=r"pre.json: step 2 'render_messages_processor' is "
                                          r'not a processor step the installed LeRobot knows'):
        map_processor(unknown, files.STEPS_0_4, config, 'pre.json')
    argument = copy.deepcopy(pre)
    argument['steps'][2]['config']['non_blocking'] = True
    with pytest.raises(CompatError, match=r"step 2 'device_processor' has arguments "
                                          r'non_blocking that the installed'):
        map_processor(argument, files.STEPS_0_4, config, 'pre.json')
    with pytest.raises(CompatError, match=r'pre.json is not a LeRobot processor file'):
        map_processor({'name': 'x'}, files.STEPS_0_4, config, 'pre.json')


def test_weights_missing_or_unexpected_are_named_first_ones_first():
    model = [f'model.layer{i}.weight' for i in range(8)]
    assert weight_mismatch(model, model) == ([], [])
    renamed = ['model.backbone.0.weight' if k == 'model.layer3.weight' else k for k in model]
    missing, unexpected = weight_mismatch(renamed, model)
    assert (missing, unexpected) == (['model.layer3.weight'], ['model.backbone.0.weight'])
    text = describe_mismatch(missing, unexpected, 'x/model.safetensors')
    assert text.startswith('x/model.safetensors does not fit the policy its config.json '
                           'describes: 1 weights of the policy are not in it '
                           '(model.layer3.weight); 1 weights in it are not in the policy '
                           '(model.backbone.0.weight)')
    assert describe_mismatch([], [], 'x') == ''
    # Exactly SHOWN_KEYS names are listed in full; one more is counted, not listed.
    listed = describe_mismatch(model[:SHOWN_KEYS], [], 'x')
    assert 'more' not in listed and model[SHOWN_KEYS - 1] in listed
    counted = describe_mismatch(model[:SHOWN_KEYS + 1], [], 'x')
    assert f'{SHOWN_KEYS + 1} weights' in counted and ' and 1 more)' in counted
    assert model[SHOWN_KEYS] not in counted


def test_tied_weights_count_as_loaded_when_the_file_holds_one_name():
    # safetensors saves one name of a tied tensor (e.g. an embedding and the output head).
    model = ['embed.weight', 'head.weight', 'layer.weight']
    shared = shared_key_groups([('embed.weight', 1), ('head.weight', 1), ('layer.weight', 2)])
    assert shared == [('embed.weight', 'head.weight')]
    assert weight_mismatch(['embed.weight', 'layer.weight'], model, shared) == ([], [])
    assert weight_mismatch(['layer.weight'], model, shared) == (
        ['embed.weight', 'head.weight'], [])
