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

:func:`make_checkpoint` builds an ACT, diffusion or SmolVLA policy with LeRobot's classes and
random weights (no pretrained backbone, nothing from the Hub), and saves it the way
``lerobot-train`` does: ``save_pretrained`` of the policy and of the processors
``make_pre_post_processors`` makes from dataset statistics. SmolVLA's vision-language backbone
(``vlm_model_name``) is a folder :func:`make_smolvlm_backbone` writes first, offline: a SmolVLM
config, a byte-level BPE tokenizer trained on the spot with the ``tokenizers`` library and the
SmolVLM image and video processors, saved with ``save_pretrained``; ``size='tiny'`` for tests
(seconds), ``size='published'`` for the sizes of HuggingFaceTB/SmolVLM2-500M-Video-Instruct
(LeRobot's default backbone; the benchmark). :class:`LeRobotReference` is LeRobot's own
inference path for one observation (``prepare_observation_for_inference`` -> preprocessor ->
``predict_action_chunk`` -> postprocessor; diffusion's observation queue filled by
``select_action``, as in ``lerobot-record``), in the policy's units. Used by the tests and by
bench/bench_lerobot.py.

The comparison of the tests: :func:`observation` draws an SO-101 sample (a pose in radians and
one 64x96 frame per camera, the checkpoints' default image size), :func:`served_chunk` feeds
samples one action period apart to a policy server core serving a runtime and returns its chunk,
and :func:`lerobot_chunk` returns LeRobot's own chunk for the same samples, both in the
policy's units.
"""

import os
import pathlib

from core_fixtures import admission, make_server, serve_one
import numpy as np
from robot_fixtures import to_policy

from remote_inference_py.policy_server.core import Request
from remote_inference_py.policy_server.images import RawImage
from remote_inference_py.policy_server.lerobot_import import import_lerobot
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

os.environ.setdefault('HF_HUB_OFFLINE', '1')

STATE = 'observation.state'
FRONT = 'observation.images.front'
JOINTS = list(SO101_JOINT_NAMES)
MS = 1_000_000
PERIOD_NS = 33_333_333      # one action period at 30 fps
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
    elif policy == 'smolvla':
        from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
        size = overrides.pop('backbone_size', 'tiny')
        backbone = overrides.pop('vlm_model_name', None) or make_smolvlm_backbone(
            pathlib.Path(path).parent / f'{pathlib.Path(path).name}_backbone', size)
        settings = dict(TINY_SMOLVLA if size == 'tiny' else {})
        settings.update(overrides)
        common.pop('pretrained_backbone_weights')
        common['normalization_mapping'] = {'VISUAL': NormalizationMode.IDENTITY,
                                           'STATE': mode, 'ACTION': mode}
        config = SmolVLAConfig(**common, vlm_model_name=str(backbone), load_vlm_weights=False,
                               **settings)
    else:
        raise ValueError(f'policy {policy!r}: act, diffusion or smolvla')
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


# A SmolVLM backbone small enough to build and load in about a second: 2 text layers of width
# 64 (head_dim 16), a one-layer vision tower on 32x32 images in 8x8 patches, pixel shuffle 2.
TINY_IMAGE = 32
TINY_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 max_position_embeddings=512)
TINY_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                   num_attention_heads=2, image_size=TINY_IMAGE, patch_size=8)
TINY_SMOLVLA = dict(chunk_size=20, n_action_steps=20, num_vlm_layers=2, num_steps=10,
                    resize_imgs_with_padding=(TINY_IMAGE, TINY_IMAGE), max_state_dim=8,
                    max_action_dim=8, tokenizer_max_length=16)
# The published sizes of HuggingFaceTB/SmolVLM2-500M-Video-Instruct's config.json (the vision
# tower's intermediate_size and num_hidden_layers are not written there: transformers'
# SmolVLMVisionConfig defaults, 3072 and 12, apply).
PUBLISHED_TEXT = dict(hidden_size=960, intermediate_size=2560, num_hidden_layers=32,
                      num_attention_heads=15, num_key_value_heads=5, head_dim=64,
                      max_position_embeddings=8192, vocab_size=49280)
PUBLISHED_VISION = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                        num_attention_heads=12, image_size=512, patch_size=16)
SPECIAL_TOKENS = ('<|endoftext|>', '<|im_start|>', '<|im_end|>', '<global-img>',
                  '<fake_token_around_image>', '<image>', '<end_of_utterance>')
CORPUS = ('pick up the red cube and put it in the bowl', 'push the green block to the left',
          'open the top drawer', 'stack the small blocks', 'place the cup on the plate')


def make_smolvlm_backbone(path, size='tiny'):
    """
    Write a SmolVLM backbone folder (config, tokenizer, processors; no weights) to ``path``.

    What SmolVLA reads from ``vlm_model_name``: ``AutoConfig`` (the architecture it builds with
    random weights when ``load_vlm_weights`` is false), ``AutoProcessor`` (its tokenizer's
    ``fake_image_token_id`` / ``global_image_token_id``) and, in its preprocessor,
    ``AutoTokenizer``. The tokenizer is a byte-level BPE trained here on a few task sentences,
    with SmolVLM's special tokens.
    """
    from tokenizers import decoders, models, pre_tokenizers, Tokenizer, trainers
    from transformers import PreTrainedTokenizerFast, SmolVLMConfig, SmolVLMProcessor
    from transformers.models.smolvlm.image_processing_smolvlm import SmolVLMImageProcessor
    from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor
    if size not in ('tiny', 'published'):
        raise ValueError(f'size {size!r}: tiny or published')
    text = dict(TINY_TEXT if size == 'tiny' else PUBLISHED_TEXT)
    vision = dict(TINY_VISION if size == 'tiny' else PUBLISHED_VISION)
    scale = 2 if size == 'tiny' else 4
    tokenizer = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=400, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token='<|im_start|>', eos_token='<end_of_utterance>',
        pad_token='<|im_end|>', unk_token='<|endoftext|>',
        additional_special_tokens=['<fake_token_around_image>', '<image>', '<end_of_utterance>'],
        extra_special_tokens={'fake_image_token': '<fake_token_around_image>',
                              'image_token': '<image>', 'global_image_token': '<global-img>',
                              'end_of_utterance_token': '<end_of_utterance>'})
    image = vision['image_size']
    edge = {'longest_edge': image}
    processor = SmolVLMProcessor(
        SmolVLMImageProcessor(size={'longest_edge': 4 * image}, max_image_size=edge,
                              image_mean=[0.5] * 3, image_std=[0.5] * 3),
        fast,
        SmolVLMVideoProcessor(size=edge, max_image_size=edge, video_sampling={
            'fps': 1, 'max_frames': 8, 'video_size': edge}),
        image_seq_len=(image // vision['patch_size']) ** 2 // scale ** 2)
    text.setdefault('vocab_size', len(fast))
    config = SmolVLMConfig(
        image_token_id=fast.convert_tokens_to_ids('<image>'), scale_factor=scale,
        text_config=dict(model_type='llama', rope_theta=100000, rms_norm_eps=1e-5,
                         pad_token_id=fast.pad_token_id, **text),
        vision_config=vision)
    path = pathlib.Path(path)
    processor.save_pretrained(path)
    config.save_pretrained(path)
    return path


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

    def _prepared(self, state, frames, task='pick'):
        import torch
        from lerobot.policies.utils import prepare_observation_for_inference
        observation = {STATE: np.asarray(state, np.float32)}
        observation.update({key: np.asarray(frame) for key, frame in frames.items()})
        return self.pre(prepare_observation_for_inference(observation, torch.device('cpu'),
                                                          task=task))

    def chunk(self, observations, seed=None, task='pick'):
        """
        Return LeRobot's chunk ``[steps, actions]`` for the last of ``observations``.

        ``observations`` are ``(state, {image key: HxWx3 uint8})``, oldest first, in the
        policy's units; so is the chunk. ``task`` is the language instruction (SmolVLA reads
        it; ACT and diffusion ignore it).

        Earlier observations go through ``select_action`` (which fills diffusion's observation
        queue, as in a LeRobot control loop); ``seed`` reseeds torch just before the prediction.
        """
        import torch
        self.policy.reset()
        with torch.no_grad():
            for state, frames in observations[:-1]:
                self.policy.select_action(self._prepared(state, frames, task))
            batch = self._prepared(*observations[-1], task)
            if self.policy.config.type == 'diffusion':
                self.policy.select_action(dict(batch))   # queues the last observation too
                batch = dict(batch)                      # and stacks the cameras as it does
                batch['observation.images'] = torch.stack(
                    [batch[key] for key in self.policy.config.image_features], dim=-4)
            if seed is not None:
                torch.manual_seed(seed)
            actions = self.policy.predict_action_chunk(batch)
            return self.post(actions).numpy()[0]


# ----------------------------------------------------------------------------- served vs LeRobot

def observation(seed, cameras=(FRONT,), reach=0.6):
    """
    Draw a sample ``(pose, {camera key: frame})``: a pose [rad] and one 64x96 frame per camera.

    The arm joints are uniform in +-``reach`` radians (inside the SO-101's range), the gripper
    in [0, 1]; the frames follow in the order of ``cameras``.
    """
    rng = np.random.default_rng(seed)
    pose = rng.uniform(-reach, reach, 6)
    pose[5] = rng.uniform(0.0, 1.0)
    return pose, {key: rng.integers(0, 256, (64, 96, 3), dtype=np.uint8) for key in cameras}


def served_chunk(runtime, observations, task='', merge_mode='aligned', timeout=1.0):
    """
    Serve ``runtime`` in a policy server core; return its chunk for ``observations`` [policy].

    The core admits one client with ``merge_mode`` and takes the samples (as
    :func:`observation` draws them, in SI units) one action period apart; one request with
    ``task`` captures the last, and is served within ``timeout`` seconds without an error.
    """
    core = make_server(runtime)
    result = admission(core, merge_mode=merge_mode)
    assert result.success, result.message
    stamp = 1000 * MS
    for pose, frames in observations:
        core.on_joint_states('', stamp, JOINTS, list(pose))
        for key, frame in frames.items():
            height, width = frame.shape[:2]
            core.on_image('', key, stamp, RawImage('rgb8', height, width, width * 3,
                                                   frame.tobytes()))
        stamp += PERIOD_NS
    core.on_request(Request('', result.session_id, 1, stamp - PERIOD_NS, task=task))
    [answer] = serve_one(core, timeout)
    assert answer.error == '', answer.error
    return to_policy(answer.positions)


def lerobot_chunk(folder, observations, seed=None, task='pick'):
    """Return LeRobot's own chunk (:class:`LeRobotReference`) for ``observations`` [policy]."""
    return LeRobotReference(folder).chunk(
        [(to_policy(pose).astype(np.float32), frames) for pose, frames in observations],
        seed=seed, task=task)
