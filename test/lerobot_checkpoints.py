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
LeRobot checkpoints made by LeRobot itself, and LeRobot's own prediction for an observation.

:func:`make_checkpoint` builds an ACT or diffusion policy with LeRobot's classes and random
weights (no pretrained backbone, nothing from the Hub), and saves it the way ``lerobot-train``
does: ``save_pretrained`` of the policy and of the processors ``make_pre_post_processors``
makes from dataset statistics. :func:`lerobot_chunk` is LeRobot's own inference path for one
observation (``prepare_observation_for_inference`` -> preprocessor -> ``predict_action_chunk``
-> postprocessor; diffusion's observation queue filled by ``select_action``, as in
``lerobot-record``), in the policy's units. Used by the tests and by bench/bench_lerobot.py.
"""

import os
import pathlib

import numpy as np

from remote_inference_py.policy_server.lerobot_runtime import import_lerobot

os.environ.setdefault('HF_HUB_OFFLINE', '1')

STATE = 'observation.state'
FRONT = 'observation.images.front'
# SO-101 units: degrees for the arm joints, percent for the gripper (with the default
# calibration 0-100 % spans the whole servo turn; the gripper's limits are about 47-78 %).
STATE_MEAN = np.array([0.0, -10.0, 15.0, 20.0, 0.0, 60.0], np.float32)
STATE_STD = np.array([8.0, 6.0, 7.0, 9.0, 10.0, 12.0], np.float32)
STATE_MIN = np.array([-30.0, -40.0, -20.0, -25.0, -45.0, 48.0], np.float32)
STATE_MAX = np.array([30.0, 20.0, 50.0, 60.0, 45.0, 76.0], np.float32)
IMAGE_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
IMAGE_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def stats(image_keys, spread=1.0):
    """Dataset statistics as LeRobot computes them (per feature: mean, std, min, max)."""
    import torch
    out = {key: {'mean': STATE_MEAN, 'std': STATE_STD * spread, 'min': STATE_MIN,
                 'max': STATE_MAX} for key in (STATE, 'action')}
    for key in image_keys:
        out[key] = {'mean': IMAGE_MEAN, 'std': IMAGE_STD,
                    'min': np.zeros((3, 1, 1), np.float32), 'max': np.ones((3, 1, 1), np.float32)}
    return {key: {k: torch.from_numpy(np.array(v)) for k, v in value.items()}
            for key, value in out.items()}


def make_checkpoint(path, policy='act', normalization='MEAN_STD', image_shape=(3, 64, 96),
                    cameras=('front',), state_dim=6, action_dim=6, seed=0, spread=1.0,
                    **overrides):
    """
    Build a random-weight LeRobot policy and save it with its processors to ``path``.

    ``spread`` scales the standard deviations of state and action (MEAN_STD): a small one
    keeps a random policy's actions near the mean pose, e.g. for runs on the simulated arm.
    """
    import_lerobot('building a LeRobot checkpoint')
    import torch
    from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    images = [f'observation.images.{camera}' for camera in cameras]
    inputs = {STATE: PolicyFeature(type=FeatureType.STATE, shape=(state_dim,))}
    inputs.update({key: PolicyFeature(type=FeatureType.VISUAL, shape=tuple(image_shape))
                   for key in images})
    outputs = {'action': PolicyFeature(type=FeatureType.ACTION, shape=(action_dim,))}
    mode = NormalizationMode[normalization]
    mapping = {'VISUAL': NormalizationMode.MEAN_STD, 'STATE': mode, 'ACTION': mode}
    common = dict(input_features=inputs, output_features=outputs, device='cpu',
                  normalization_mapping=mapping, pretrained_backbone_weights=None)
    if policy == 'act':
        from lerobot.policies.act.configuration_act import ACTConfig
        settings = dict(chunk_size=100, n_action_steps=50, dim_model=64, n_heads=2,
                        dim_feedforward=128, n_encoder_layers=1, n_decoder_layers=1,
                        n_vae_encoder_layers=1, latent_dim=8)
        settings.update(overrides)
        config = ACTConfig(**common, **settings)
    elif policy == 'diffusion':
        from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
        settings = dict(n_obs_steps=2, horizon=16, n_action_steps=8, down_dims=(32, 64),
                        kernel_size=3, n_groups=4, diffusion_step_embed_dim=32,
                        spatial_softmax_num_keypoints=8, num_inference_steps=4,
                        crop_shape=None)
        settings.update(overrides)
        config = DiffusionConfig(**common, **settings)
    else:
        raise ValueError(f'policy {policy!r}: act or diffusion')
    torch.manual_seed(seed)
    model = get_policy_class(config.type)(config)
    model.eval()
    pre, post = make_pre_post_processors(config, dataset_stats=stats(images, spread))
    path = pathlib.Path(path)
    model.save_pretrained(path)
    pre.save_pretrained(path)
    post.save_pretrained(path)
    return path


# Diffusion as LeRobot 0.6 trains it by default (configuration_diffusion.py of v0.6.1: horizon
# 64, n_action_steps 32, one ResNet per camera, BatchNorm instead of GroupNorm), kept tiny.
DIFFUSION_0_6 = dict(horizon=64, n_action_steps=32, use_separate_rgb_encoder_per_camera=True,
                     use_group_norm=False)
IMAGENET_BACKBONE = 'ResNet18_Weights.IMAGENET1K_V1'


def insert_after(config, after, key, value):
    """Return ``config`` with ``key: value`` placed right after ``after`` (dataclass order)."""
    out = {}
    for name, item in config.items():
        out[name] = item
        if name == after:
            out[key] = value
    if key not in out:
        raise KeyError(f'{after!r} is not in the config')
    return out


def as_lerobot_0_6(folder, target, backbone=IMAGENET_BACKBONE):
    """
    Copy a folder saved by LeRobot 0.4.4 to ``target`` rewritten as LeRobot 0.6.1 saves it.

    0.6.1's ``PreTrainedConfig._save_pretrained`` writes ``json.dump(draccus.encode(self,
    PreTrainedConfig), f, indent=4)``: every field in declaration order, so the new base field
    ``pretrained_revision`` follows ``pretrained_path`` and diffusion's new
    ``gradient_checkpointing`` follows ``use_film_scale_modulation``. ``backbone`` is the
    ImageNet backbone a config trained with 0.6.1's defaults states (ACT's default in every
    release, diffusion's from 0.6.0; the weights in ``model.safetensors`` replace it).
    The processor files of ACT and diffusion are written alike by both releases.
    """
    import json
    import shutil
    target = pathlib.Path(target)
    shutil.copytree(folder, target)
    config = json.loads((target / 'config.json').read_text())
    config = insert_after(config, 'pretrained_path', 'pretrained_revision', None)
    if config['type'] == 'diffusion':
        config = insert_after(config, 'use_film_scale_modulation', 'gradient_checkpointing',
                              False)
    config['pretrained_backbone_weights'] = backbone
    (target / 'config.json').write_text(json.dumps(config, indent=4))
    return target


class LeRobotReference:
    """A checkpoint loaded by LeRobot alone, predicting as LeRobot's own tools do."""

    def __init__(self, path):
        """Load the policy and its processors from ``path`` with LeRobot's factory."""
        import_lerobot()
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
        config = PreTrainedConfig.from_pretrained(path)
        self.policy = get_policy_class(config.type).from_pretrained(path, config=config)
        self.policy.eval()
        self.pre, self.post = make_pre_post_processors(self.policy.config,
                                                       pretrained_path=str(path))

    def _prepared(self, state, frames):
        import torch
        from lerobot.policies.utils import prepare_observation_for_inference
        observation = {STATE: np.asarray(state, np.float32)}
        observation.update({key: np.asarray(frame) for key, frame in frames.items()})
        return self.pre(prepare_observation_for_inference(observation, torch.device('cpu'),
                                                          task='pick'))

    def chunk(self, observations, seed=None):
        """
        Return LeRobot's chunk ``[steps, actions]`` for the last of ``observations``.

        ``observations`` are ``(state, {image key: HxWx3 uint8})``, oldest first, in the
        policy's units; so is the chunk.

        Earlier observations go through ``select_action`` (which fills diffusion's observation
        queue, as in a LeRobot control loop); ``seed`` reseeds torch just before the prediction.
        """
        import torch
        self.policy.reset()
        with torch.no_grad():
            for state, frames in observations[:-1]:
                self.policy.select_action(self._prepared(state, frames))
            batch = self._prepared(*observations[-1])
            if self.policy.config.type == 'diffusion':
                self.policy.select_action(dict(batch))   # queues the last observation too
                batch = dict(batch)                      # and stacks the cameras as it does
                batch['observation.images'] = torch.stack(
                    [batch[key] for key in self.policy.config.image_features], dim=-4)
            if seed is not None:
                torch.manual_seed(seed)
            actions = self.policy.predict_action_chunk(batch)
            return self.post(actions).numpy()[0]
