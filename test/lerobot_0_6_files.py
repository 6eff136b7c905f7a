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
config.json and processor files as LeRobot 0.6.1 writes them, for tests without LeRobot.

Written from LeRobot 0.6.1's source (huggingface/lerobot, tag v0.6.1): a config is
``json.dump(draccus.encode(config, PreTrainedConfig))`` (``configs/policies.py``), every field in
declaration order, base class first; a processor file is ``DataProcessorPipeline.get_config()``
(``processor/pipeline.py``): ``name``, ``steps`` with ``registry_name``, the step's
``get_config()`` and, for a step with statistics, ``state_file`` named after the step's index.
pi0 / pi0.5 cannot be built on this machine (their LeRobot 0.4 needs a patched transformers), so
their files exist here only as data. The ``*_0_4_FIELDS`` lists are the keys LeRobot 0.4.4's
config classes take; test_lerobot_newer_folders.py checks them against the installed LeRobot.
"""

SO101_STATE = {'type': 'STATE', 'shape': [6]}
ACTION = {'type': 'ACTION', 'shape': [6]}
FRONT = {'type': 'VISUAL', 'shape': [3, 64, 96]}


def base(kind, n_obs_steps=1, images=('front',)):
    """Return the fields of PreTrainedConfig, as 0.6.1 writes them ahead of the policy's own."""
    inputs = {'observation.state': SO101_STATE}
    inputs.update({f'observation.images.{name}': FRONT for name in images})
    return {'type': kind, 'n_obs_steps': n_obs_steps, 'input_features': inputs,
            'output_features': {'action': ACTION}, 'device': 'cuda', 'use_amp': False,
            'use_peft': False, 'push_to_hub': True, 'repo_id': None, 'private': None,
            'tags': None, 'license': None, 'pretrained_path': None,
            'pretrained_revision': None}


MEAN_STD = {'VISUAL': 'MEAN_STD', 'STATE': 'MEAN_STD', 'ACTION': 'MEAN_STD'}

ACT_0_6 = {**base('act'), 'chunk_size': 100, 'n_action_steps': 100,
           'normalization_mapping': MEAN_STD, 'vision_backbone': 'resnet18',
           'pretrained_backbone_weights': 'ResNet18_Weights.IMAGENET1K_V1',
           'replace_final_stride_with_dilation': False, 'pre_norm': False, 'dim_model': 512,
           'n_heads': 8, 'dim_feedforward': 3200, 'feedforward_activation': 'relu',
           'n_encoder_layers': 4, 'n_decoder_layers': 1, 'use_vae': True, 'latent_dim': 32,
           'n_vae_encoder_layers': 4, 'temporal_ensemble_coeff': None, 'dropout': 0.1,
           'kl_weight': 10.0, 'optimizer_lr': 1e-05, 'optimizer_weight_decay': 0.0001,
           'optimizer_lr_backbone': 1e-05}

DIFFUSION_0_6 = {**base('diffusion', 2, ('front', 'wrist')), 'horizon': 64,
                 'n_action_steps': 32,
                 'normalization_mapping': {'VISUAL': 'MEAN_STD', 'STATE': 'MIN_MAX',
                                           'ACTION': 'MIN_MAX'},
                 'drop_n_last_frames': 7, 'vision_backbone': 'resnet18', 'resize_shape': None,
                 'crop_ratio': 1.0, 'crop_shape': [84, 84], 'crop_is_random': True,
                 'pretrained_backbone_weights': 'ResNet18_Weights.IMAGENET1K_V1',
                 'use_group_norm': False, 'spatial_softmax_num_keypoints': 32,
                 'use_separate_rgb_encoder_per_camera': True, 'down_dims': [512, 1024, 2048],
                 'kernel_size': 5, 'n_groups': 8, 'diffusion_step_embed_dim': 128,
                 'use_film_scale_modulation': True, 'gradient_checkpointing': False,
                 'noise_scheduler_type': 'DDPM', 'num_train_timesteps': 100,
                 'beta_schedule': 'squaredcos_cap_v2', 'beta_start': 0.0001, 'beta_end': 0.02,
                 'prediction_type': 'epsilon', 'clip_sample': True, 'clip_sample_range': 1.0,
                 'num_inference_steps': None, 'compile_model': False,
                 'compile_mode': 'reduce-overhead', 'do_mask_loss_for_padding': False,
                 'optimizer_lr': 0.0001, 'optimizer_betas': [0.95, 0.999],
                 'optimizer_eps': 1e-08, 'optimizer_weight_decay': 1e-06,
                 'scheduler_name': 'cosine', 'scheduler_warmup_steps': 500}


def pi(kind):
    """pi0 ('pi0') or pi0.5 ('pi05') as 0.6.1 writes it with its defaults (absolute actions)."""
    normalization = {'VISUAL': 'IDENTITY', 'STATE': 'MEAN_STD', 'ACTION': 'MEAN_STD'}
    if kind == 'pi05':
        normalization = {'VISUAL': 'IDENTITY', 'STATE': 'QUANTILES', 'ACTION': 'QUANTILES'}
    config = {**base(kind), 'paligemma_variant': 'gemma_2b',
              'action_expert_variant': 'gemma_300m', 'dtype': 'float32', 'chunk_size': 50,
              'n_action_steps': 50, 'max_state_dim': 32, 'max_action_dim': 32,
              'num_inference_steps': 10, 'time_sampling_beta_alpha': 1.5,
              'time_sampling_beta_beta': 1.0, 'time_sampling_scale': 0.999,
              'time_sampling_offset': 0.001, 'min_period': 0.004, 'max_period': 4.0,
              'use_relative_actions': False, 'relative_exclude_joints': ['gripper'],
              'action_feature_names': None, 'rtc_config': None,
              'image_resolution': [224, 224], 'empty_cameras': 0,
              'normalization_mapping': normalization, 'gradient_checkpointing': False,
              'compile_model': False, 'compile_mode': 'max-autotune',
              'freeze_vision_encoder': False, 'train_expert_only': False,
              'optimizer_lr': 2.5e-05, 'optimizer_betas': [0.9, 0.95], 'optimizer_eps': 1e-08,
              'optimizer_weight_decay': 0.01, 'optimizer_grad_clip_norm': 1.0,
              'scheduler_warmup_steps': 1000, 'scheduler_decay_steps': 30000,
              'scheduler_decay_lr': 2.5e-06,
              'tokenizer_max_length': 48 if kind == 'pi0' else 200}
    return config


def _normalizer(name, index, features, norm_map, registry='normalizer_processor'):
    return {'registry_name': registry,
            'config': {'eps': 1e-08, 'features': features, 'norm_map': norm_map},
            'state_file': f'{name}_step_{index}_{registry}.safetensors'}


DEVICE = {'registry_name': 'device_processor', 'config': {'device': 'cuda', 'float_dtype': None}}
TO_CPU = {'registry_name': 'device_processor', 'config': {'device': 'cpu', 'float_dtype': None}}


def default_processors(config):
    """Return the ACT / diffusion processors (make_default_pre_post_processors of 0.6.1)."""
    features = {**config['input_features'], **config['output_features']}
    norm = config['normalization_mapping']
    pre = {'name': 'policy_preprocessor', 'steps': [
        {'registry_name': 'rename_observations_processor', 'config': {'rename_map': {}}},
        {'registry_name': 'to_batch_processor', 'config': {}}, DEVICE,
        _normalizer('policy_preprocessor', 3, features, norm)]}
    post = {'name': 'policy_postprocessor', 'steps': [
        _normalizer('policy_postprocessor', 0, config['output_features'], norm,
                    'unnormalizer_processor'), TO_CPU]}
    return pre, post


def pi_processors(config, relative=False):
    """pi0 / pi0.5 processors with 0.6.1's relative / absolute action steps."""
    kind = config['type']
    features = {**config['input_features'], **config['output_features']}
    norm = config['normalization_mapping']
    relative_step = {'registry_name': 'relative_actions_processor',
                     'config': {'enabled': relative,
                                'exclude_joints': config['relative_exclude_joints'],
                                'action_names': config['action_feature_names']}}
    tokenizer = {'registry_name': 'tokenizer_processor',
                 'config': {'max_length': config['tokenizer_max_length'], 'task_key': 'task',
                            'padding_side': 'right', 'padding': 'max_length',
                            'truncation': True,
                            'tokenizer_name': 'google/paligemma-3b-pt-224'}}
    rename = {'registry_name': 'rename_observations_processor', 'config': {'rename_map': {}}}
    batch = {'registry_name': 'to_batch_processor', 'config': {}}
    if kind == 'pi0':      # raw -> relative -> normalize (processor_pi0.py)
        steps = [rename, batch, {'registry_name': 'pi0_new_line_processor', 'config': {}},
                 tokenizer, DEVICE, relative_step,
                 _normalizer('policy_preprocessor', 6, features, norm)]
    else:                  # processor_pi05.py: relative before normalize, then the prompt
        steps = [rename, batch, relative_step,
                 _normalizer('policy_preprocessor', 3, features, norm),
                 {'registry_name': 'pi05_prepare_state_tokenizer_processor_step',
                  'config': {}}, tokenizer, DEVICE]
    pre = {'name': 'policy_preprocessor', 'steps': steps}
    post = {'name': 'policy_postprocessor', 'steps': [
        _normalizer('policy_postprocessor', 0, config['output_features'], norm,
                    'unnormalizer_processor'),
        {'registry_name': 'absolute_actions_processor', 'config': {'enabled': relative}},
        TO_CPU]}
    return pre, post


# What LeRobot 0.5 / 0.6 added to each config (tags v0.4.4 .. v0.6.1, configuration_*.py).
ADDED = {'act': ['pretrained_revision'],
         'diffusion': ['pretrained_revision', 'gradient_checkpointing'],
         'pi0': ['pretrained_revision', 'use_relative_actions', 'relative_exclude_joints',
                 'action_feature_names'],
         'pi05': ['pretrained_revision', 'use_relative_actions', 'relative_exclude_joints',
                  'action_feature_names']}
CONFIGS_0_6 = {'act': ACT_0_6, 'diffusion': DIFFUSION_0_6, 'pi0': pi('pi0'),
               'pi05': pi('pi05')}
FIELDS_0_4 = {kind: [key for key in config if key != 'type' and key not in ADDED[kind]]
              for kind, config in CONFIGS_0_6.items()}

# The steps LeRobot 0.4.4 registers that these files use, with the arguments each takes.
NORMALIZER_ARGS = ['features', 'norm_map', 'stats', 'device', 'dtype', 'eps',
                   'normalize_observation_keys']
STEPS_0_4 = {
    'rename_observations_processor': ['rename_map'],
    'to_batch_processor': [],
    'device_processor': ['device', 'float_dtype'],
    'normalizer_processor': NORMALIZER_ARGS,
    'unnormalizer_processor': NORMALIZER_ARGS,
    'tokenizer_processor': ['tokenizer_name', 'tokenizer', 'max_length', 'task_key',
                            'padding_side', 'padding', 'truncation'],
    'pi0_new_line_processor': [],
    'pi05_prepare_state_tokenizer_processor_step': ['max_state_dim', 'task_key'],
}
