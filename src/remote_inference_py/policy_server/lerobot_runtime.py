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
LeRobot pretrained checkpoints (ACT, diffusion, SmolVLA; pi0, pi0.5 untested) through ``lerobot``.

A checkpoint is the folder ``lerobot-train`` writes (``.../checkpoints/last/pretrained_model``):
``config.json``, ``model.safetensors`` and the processors LeRobot 0.4 saves beside them
(``policy_preprocessor.json`` / ``policy_postprocessor.json`` with their ``.safetensors``
statistics). The policy is loaded once with those processors (normalization, device placement),
as LeRobot's own ``policy_server`` does. A folder saved by LeRobot 0.5 or 0.6 is read through a
mapped copy (:mod:`.lerobot_folder`, :mod:`.lerobot_compat`), and every folder's weights are
checked to load (LeRobot loads them with ``strict=False``). The server then feeds
``observation.state`` in the policy's units and images as float32 ``[B, C, H, W]`` in [0, 1]
plus the task text, and takes the chunk the policy predicts through the post-processor.

Versions. ``lerobot`` is optional and imported lazily through :mod:`.lerobot_import`, which
names what to install when it is missing or of a version this module does not know (tested with
0.4.4; 0.5 and later moved import paths and processor files), and makes torchvision importable
on a CPU-only torch.

What is served (see :func:`chunk_steps`, :func:`spec_from_lerobot_config`):

- The chunk is what ``predict_action_chunk`` returns, all of it: ``chunk_size`` steps for ACT
  (not ``n_action_steps``: that is how many steps LeRobot's synchronous ``select_action`` plays
  before it asks again; here the executor's refill decides, and the ``chunk_length`` parameter
  of the server trims chunks when fewer steps should be published), ``n_action_steps`` for
  diffusion (its model slices them out of ``horizon``).
- ``n_obs_steps > 1`` (diffusion: 2) is served from the server's observation history: each
  feature is declared with ``history = n_obs_steps``, so the model gets the last
  ``n_obs_steps`` samples one action period apart, oldest first, as LeRobot's observation queue
  holds them. The runtime calls the diffusion model on that stack directly
  (``generate_actions``): ``predict_action_chunk`` would read the queues only ``select_action``
  fills, and a server shared by several robots cannot keep per-policy queues.
- ACT must run with temporal ensembling disabled (the executor's ``ensemble`` merge does that).
- SmolVLA: ``chunk_size`` steps; the request's task text goes through its tokenizer (the
  preprocessor appends the newline SmolVLA was trained with). Its vision-language backbone is
  named by ``vlm_model_name`` in config.json (and ``tokenizer_name`` in the preprocessor): a
  local folder, or a Hub id read from the Hugging Face cache. :func:`check_backbone` checks it
  before lerobot loads anything: a missing folder, one without a readable ``config.json``,
  tokenizer or image processor, or (with ``HF_HUB_OFFLINE=1``) a Hub id that is not cached is a
  :class:`~.runtimes.RuntimeLoadError` naming it, never a download or a hang. One robot per
  forward pass (``max_batch_size`` 1): LeRobot's real-time chunking takes one inference delay
  per pass.

Real-time chunking (SmolVLA). The runtime declares ``supports_prefix`` and serves the ``rtc``
merge with LeRobot's own guidance (``lerobot.policies.rtc``, enabled through the policy's
``rtc_config``): each request's committed plan becomes ``prev_chunk_left_over`` (normalized by
the checkpoint's own action normalizer, as LeRobot keeps the unexecuted part of its previous
chunk), its frozen rows the ``inference_delay``, and the server's ``rtc_execution_horizon``
(default: the checkpoint's ``rtc_config``, else LeRobot's 10), ``rtc_prefix_schedule`` and
``rtc_max_guidance_weight`` LeRobot's ``execution_horizon``, ``prefix_attention_schedule`` and
``max_guidance_weight``; ``flow_steps`` overrides ``num_steps``. A request without a plan is
sampled exactly as LeRobot's plain ``predict_action_chunk`` does.

LeRobot's config does not record joint names, the action rate or the resolution the cameras
publish. Without a manifest they default to the SO-101: state and action names
``shoulder_pan.pos`` ... ``gripper.pos`` (6 values), the ``semantics`` parameter (default
``so101-degrees-gripper-percent-v1``), the ``fps`` parameter (required), and each camera on
``cameras/<name>/image_raw`` (other topics: the server's ``feature_topics`` parameter) at any
size: frames are resized to the policy's input size as LeRobot's asynchronous server does
(``resize: any``, ``interpolation: torch_bilinear``; :mod:`.images`). A manifest beside it
(``manifest`` parameter) declares joints, published image sizes and topics instead; it is
checked against the checkpoint (feature names, shapes, history, action count) and its
normalization is ignored, since the processors normalize. Any mismatch is a
:class:`~.runtimes.RuntimeLoadError` naming it, so the server stops before any motion (exit
code 2).

``REMOTE_INFERENCE_POLICY_SEED`` (an integer, unset by default) reseeds torch's random number
generator before every forward pass: a diffusion policy then answers the same observation with
the same chunk (reproducible runs, and tests comparing against LeRobot's own prediction).
"""

import contextlib
import dataclasses
import json
import os
import pathlib
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

from remote_inference_py.contract.checkpoint import is_hub_id
from remote_inference_py.policy_server.devices import autocast, InputStager
from remote_inference_py.policy_server.lerobot_folder import (
    check_weights, map_folder, staged_folder)
from remote_inference_py.policy_server.lerobot_import import import_lerobot
from remote_inference_py.policy_server.manifest import load_manifest, spec_from_dict
from remote_inference_py.policy_server.runtimes import (
    model_output_to_numpy, PolicyRuntime, Prefix, resolve_device, resolve_dtype,
    RuntimeLoadError, RuntimeOptions)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

DEFAULT_SEMANTICS = 'so101-degrees-gripper-percent-v1'
SEED_VARIABLE = 'REMOTE_INFERENCE_POLICY_SEED'
# Policy types whose predict_action_chunk returns a chunk this runtime serves.
TESTED_TYPES = ('act', 'diffusion', 'smolvla')
UNTESTED_TYPES = ('pi0', 'pi05')
BATCHED_TYPES = ('act', 'diffusion')  # take any batch; the server caps it at MAX_BATCH_SIZE
RTC_TYPES = ('smolvla',)             # LeRobot's own real-time chunking (rtc_config)
BACKBONE_FILES = ('config.json', 'tokenizer_config.json', 'preprocessor_config.json')
PROCESSOR_FILES = ('policy_preprocessor.json', 'policy_postprocessor.json')
MAX_BATCH_SIZE = 8


def read_config(checkpoint: str) -> Dict[str, Any]:
    """Read and check a checkpoint folder's config.json; RuntimeLoadError names the problem."""
    folder = pathlib.Path(checkpoint)
    path = folder / 'config.json'
    if not path.is_file():
        raise RuntimeLoadError(f'LeRobot checkpoint {checkpoint!r} has no config.json')
    try:
        config = json.loads(path.read_text())
    except ValueError as error:
        raise RuntimeLoadError(f'LeRobot checkpoint {checkpoint!r}: config.json is not JSON '
                               f'({error})') from None
    kind = str(config.get('type', ''))
    if kind not in TESTED_TYPES + UNTESTED_TYPES:
        raise RuntimeLoadError(
            f'LeRobot checkpoint {checkpoint!r} holds a {kind or "untyped"!r} policy, which this '
            f'server does not serve (served: {", ".join(TESTED_TYPES)}; untested: '
            f'{", ".join(UNTESTED_TYPES)})')
    missing = [name for name in PROCESSOR_FILES if not (folder / name).is_file()]
    if missing:
        raise RuntimeLoadError(
            f'LeRobot checkpoint {checkpoint!r} lacks the processor files {", ".join(missing)} '
            '(normalization statistics and steps, saved by lerobot >= 0.4 next to '
            'config.json); a checkpoint of an older lerobot must be migrated with lerobot '
            "0.4's migrate_policy_normalization first")
    if config.get('temporal_ensemble_coeff') is not None:
        raise RuntimeLoadError(f'LeRobot checkpoint {checkpoint!r}: ACT with temporal '
                               'ensembling cannot serve chunks; set temporal_ensemble_coeff to '
                               "null in config.json (the executor's ensemble merge does the "
                               'ensembling)')
    if kind == 'smolvla':
        check_backbone(checkpoint, config)
    return config


def hub_offline() -> bool:
    """Return True when HF_HUB_OFFLINE asks the Hugging Face libraries not to use the network."""
    return os.environ.get('HF_HUB_OFFLINE', '').strip().lower() in ('1', 'on', 'yes', 'true')


def backbone_names(checkpoint: str, config: Mapping[str, Any]) -> Dict[str, str]:
    """Return {where it is named: name} of a SmolVLA checkpoint's backbone and tokenizer."""
    names = {'vlm_model_name in config.json': str(config.get('vlm_model_name') or '')}
    try:
        steps = json.loads((pathlib.Path(checkpoint) / PROCESSOR_FILES[0]).read_text())['steps']
        for step in steps:
            tokenizer = (step.get('config') or {}).get('tokenizer_name')
            if tokenizer:
                names[f'tokenizer_name in {PROCESSOR_FILES[0]}'] = str(tokenizer)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass                      # lerobot names a malformed processor file when it loads it
    return names


def check_backbone(checkpoint: str, config: Mapping[str, Any]) -> None:
    """
    Raise RuntimeLoadError unless SmolVLA's backbone (and tokenizer) can be read offline.

    A name that is an existing path, or looks like one (absolute, ``./``, ``~``), must be a
    folder holding a readable SmolVLM ``config.json``, ``tokenizer_config.json`` and
    ``preprocessor_config.json``. Any other name is a Hub id: with ``HF_HUB_OFFLINE=1`` its
    files must be in the Hugging Face cache (otherwise transformers would raise deep inside
    lerobot); without it, transformers may download it.
    """
    for where, name in backbone_names(checkpoint, config).items():
        what = f'LeRobot checkpoint {checkpoint!r}: the SmolVLM backbone {name!r} ({where})'
        if not name:
            raise RuntimeLoadError(f'LeRobot checkpoint {checkpoint!r}: {where} is empty')
        path = pathlib.Path(name).expanduser()
        if not is_hub_id(name):
            if not path.is_dir():
                raise RuntimeLoadError(f'{what} is not a folder (SmolVLA reads its config, '
                                       'tokenizer and image processor from there)')
            for file in BACKBONE_FILES:
                try:
                    data = json.loads((path / file).read_text())
                except FileNotFoundError:
                    raise RuntimeLoadError(f'{what} has no {file}') from None
                except (OSError, ValueError) as error:
                    raise RuntimeLoadError(f'{what}: {file} cannot be read '
                                           f'({type(error).__name__}: {error})') from None
                if not isinstance(data, dict):
                    raise RuntimeLoadError(f'{what}: {file} is not a JSON object')
            continue
        if hub_offline():
            from huggingface_hub import try_to_load_from_cache
            missing = [file for file in ('config.json', 'tokenizer_config.json')
                       if not isinstance(try_to_load_from_cache(name, file), str)]
            if missing:
                raise RuntimeLoadError(
                    f'{what} is a Hugging Face Hub id whose {", ".join(missing)} is not in the '
                    'local cache, and HF_HUB_OFFLINE=1 forbids downloading it: download it '
                    f'once (`hf download {name}`), or save the backbone to a folder and set '
                    'vlm_model_name (and the tokenizer_name of the preprocessor) to that folder')


def chunk_steps(config: Mapping[str, Any]) -> int:
    """Return the steps predict_action_chunk returns: diffusion n_action_steps, else chunk_size."""
    if config.get('type') == 'diffusion':
        return int(config['n_action_steps'])
    return int(config.get('chunk_size') or config.get('n_action_steps') or 1)


def load_policy(checkpoint: str, device, adjust=None):
    """
    Return (policy, preprocessor, postprocessor, config) of a LeRobot checkpoint folder.

    ``adjust(config)``, when given, changes the policy's config before the policy is built
    (SmolVLA's real-time chunking settings).
    """
    if pathlib.Path(checkpoint).is_dir():
        read_config(checkpoint)
    import_lerobot()
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    local = pathlib.Path(checkpoint).is_dir()
    # A folder saved by LeRobot 0.5 / 0.6 is read through its mapped copy (lerobot_folder.py).
    with staged_folder(checkpoint) if local else contextlib.nullcontext(checkpoint) as folder:
        config = PreTrainedConfig.from_pretrained(folder)
        config.device = str(device)            # a GPU-trained config says cuda
        if adjust is not None:
            adjust(config)
        if getattr(config, 'temporal_ensemble_coeff', None) is not None:
            raise RuntimeLoadError(f'checkpoint {checkpoint!r}: ACT with temporal ensembling '
                                   'cannot serve chunks; set temporal_ensemble_coeff to null')
        policy = get_policy_class(config.type).from_pretrained(folder, config=config)
        if local:
            check_weights(policy, checkpoint)  # LeRobot loads with strict=False
        policy.to(device)
        policy.eval()
        preprocessor, postprocessor = make_pre_post_processors(
            policy.config, pretrained_path=folder,
            preprocessor_overrides={'device_processor': {'device': str(device)}})
    return policy, preprocessor, postprocessor, policy.config


COMPILED_PARTS = {'act': ('model',), 'diffusion': ('diffusion.unet',),
                  'smolvla': ('model.vlm_with_expert',)}
"""The submodules the ``compile`` setting compiles per policy type (what the chunk prediction
calls in its loops); another type compiles ``model``."""


def compile_policy(policy) -> None:
    """Compile the policy's heavy submodules in place (``nn.Module.compile``)."""
    for dotted in COMPILED_PARTS.get(getattr(policy.config, 'type', ''), ('model',)):
        module = policy
        for name in dotted.split('.'):
            module = getattr(module, name, None)
        if module is None:
            raise RuntimeLoadError(f'compile: the {policy.config.type} policy has no '
                                   f'{dotted} to compile')
        module.compile()


def feature_kind(feature) -> str:
    """Return 'state', 'visual' or another lowercase LeRobot FeatureType name."""
    kind = getattr(feature, 'type', feature)
    return str(getattr(kind, 'name', kind)).lower()


def spec_from_lerobot_config(input_features: Dict[str, object], action_dim: int,
                             chunk_length: int, options: RuntimeOptions, policy: str = '',
                             history: int = 1, max_batch_size: int = 1):
    """Build our PolicySpec from LeRobot feature declarations and the server options."""
    if not options.fps:
        raise RuntimeLoadError('a LeRobot checkpoint does not record its action rate; set the '
                               "parameter 'fps' (or give a manifest)")
    names = [f'{joint}.pos' for joint in SO101_JOINT_NAMES]
    features = []
    for name, feature in input_features.items():
        shape = [int(v) for v in getattr(feature, 'shape', feature)]
        kind = feature_kind(feature)
        if kind == 'state':
            if shape != [len(names)]:
                raise RuntimeLoadError(
                    f'{name!r} has shape {shape}, but the robot (SO-101) has {len(names)} '
                    f'joints ({", ".join(SO101_JOINT_NAMES)}); for another arm give a manifest '
                    'naming its joints')
            features.append({'name': name, 'kind': 'state', 'shape': shape,
                             'names': names, 'history': history})
        elif kind == 'visual':
            channels, height, width = shape
            features.append({'name': name, 'kind': 'rgb', 'shape': [height, width, channels],
                             'dtype': 'uint8', 'model_shape': shape, 'history': history,
                             'resize': 'any', 'interpolation': 'torch_bilinear'})
        else:
            raise RuntimeLoadError(f'input feature {name!r} of type {kind!r} is not supported '
                                   '(state and visual are); give a manifest')
    if action_dim != len(names):
        raise RuntimeLoadError(
            f'the checkpoint outputs {action_dim} action values, but the robot (SO-101) has '
            f'{len(names)} joints; for another arm give a manifest naming its joints')
    return spec_from_dict({
        'policy': policy, 'semantics': options.semantics or DEFAULT_SEMANTICS,
        'fps': options.fps, 'chunk_length': chunk_length, 'max_batch_size': max_batch_size,
        'action': {'names': names}, 'features': features}, 'LeRobot checkpoint')


def check_manifest(spec, input_features: Dict[str, object], action_dim: int, history: int,
                   where: str) -> None:
    """Raise RuntimeLoadError when a manifest does not describe the checkpoint's features."""
    declared = {f.name: f for f in spec.features}
    if set(declared) != set(input_features):
        raise RuntimeLoadError(
            f'{where} declares features {sorted(declared)}, the checkpoint takes '
            f'{sorted(input_features)}')
    for name, feature in input_features.items():
        shape = tuple(int(v) for v in getattr(feature, 'shape', feature))
        mine = declared[name]
        model_shape = mine.model_shape if mine.is_image else mine.shape
        if tuple(model_shape) != shape:
            raise RuntimeLoadError(f'{where}: feature {name!r} is declared with model shape '
                                   f'{list(model_shape)}, the checkpoint takes {list(shape)}')
        if mine.history != history:
            raise RuntimeLoadError(f'{where}: feature {name!r} has history {mine.history}, the '
                                   f'checkpoint takes n_obs_steps={history}')
    if len(spec.action_names) != action_dim:
        raise RuntimeLoadError(f'{where} declares {len(spec.action_names)} action names, the '
                               f'checkpoint outputs {action_dim} action values')


def policy_seed() -> Optional[int]:
    """Return the seed of REMOTE_INFERENCE_POLICY_SEED, None when unset."""
    text = os.environ.get(SEED_VARIABLE, '').strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise RuntimeLoadError(f'{SEED_VARIABLE}={text!r} is not an integer') from None


def rtc_settings(config, options: RuntimeOptions) -> Dict[str, Any]:
    """
    Return the RTCConfig fields of a SmolVLA policy served with real-time chunking.

    The checkpoint's own ``rtc_config`` (if it has one) and LeRobot's defaults, overridden by
    the server's ``rtc_*`` parameters (0 or '': unchanged); always enabled. RuntimeLoadError
    names a bad value.
    """
    from lerobot.configs.types import RTCAttentionSchedule
    from lerobot.policies.rtc.configuration_rtc import RTCConfig
    current = getattr(config, 'rtc_config', None) or RTCConfig()
    horizon = int(options.rtc_execution_horizon or current.execution_horizon)
    chunk = int(config.chunk_size)
    if not 1 <= horizon <= chunk:
        name = ("parameter 'rtc_execution_horizon'" if options.rtc_execution_horizon
                else 'rtc_config.execution_horizon of the checkpoint')
        raise RuntimeLoadError(f'{name} is {horizon}; it must be in [1, chunk_size {chunk}]')
    schedule = current.prefix_attention_schedule
    if options.rtc_prefix_schedule:
        try:
            schedule = RTCAttentionSchedule(options.rtc_prefix_schedule.upper())
        except ValueError:
            raise RuntimeLoadError(
                f"parameter 'rtc_prefix_schedule' is {options.rtc_prefix_schedule!r}; LeRobot's "
                f'schedules are {", ".join(s.value.lower() for s in RTCAttentionSchedule)}'
            ) from None
    weight = float(options.rtc_max_guidance_weight or current.max_guidance_weight)
    return dict(enabled=True, execution_horizon=horizon, prefix_attention_schedule=schedule,
                max_guidance_weight=weight)


class LeRobotRuntime(PolicyRuntime):
    """A LeRobot PreTrainedPolicy with its processors."""

    kind = 'lerobot'

    def __init__(self, spec, policy, preprocessor, postprocessor, device, source,
                 seed: Optional[int] = None, dtype=None):
        """Wrap a loaded policy (on ``device`` in ``dtype``: None, float32); use :meth:`load`."""
        super().__init__(spec, str(device), source)
        self.policy = policy
        self.preprocessor = preprocessor
        self.postprocessor = postprocessor
        self.torch_device = device
        self.seed = seed
        self.dtype = dtype
        # The processors normalize in float32; the policy's inputs are cast after them.
        self.stager = InputStager(device)
        config = policy.config
        # Diffusion is called on the observation history directly (see the module docstring).
        self._stack_history = getattr(config, 'type', '') == 'diffusion'
        self._image_keys = list(getattr(config, 'image_features', None) or [])
        rtc = getattr(config, 'rtc_config', None)
        # Real-time chunking: LeRobot's guidance, enabled by load() (see the module docstring).
        self.supports_prefix = bool(getattr(config, 'type', '') in RTC_TYPES and rtc is not None
                                    and rtc.enabled)
        self.execution_horizon = int(rtc.execution_horizon) if self.supports_prefix else 0
        self._action_normalizer = None
        if self.supports_prefix:
            from lerobot.processor import NormalizerProcessorStep
            found = [step for step in preprocessor.steps
                     if isinstance(step, NormalizerProcessorStep)]
            if not found:
                raise RuntimeLoadError(f'LeRobot checkpoint {source!r}: its preprocessor has no '
                                       'normalizer step, which real-time chunking needs to '
                                       "express the committed plan in the policy's units")
            self._action_normalizer = found[0]

    @classmethod
    def load(cls, options: RuntimeOptions) -> 'LeRobotRuntime':
        """Load the checkpoint (directory or Hub id) and derive the spec."""
        if pathlib.Path(options.checkpoint).is_dir():
            read_config(options.checkpoint)     # a bad folder is named before lerobot loads
        import_lerobot()
        device = resolve_device(options.device)
        dtype = resolve_dtype(options.dtype, device)
        seed = policy_seed()

        def adjust(config):
            if config.type in RTC_TYPES:
                from lerobot.policies.rtc.configuration_rtc import RTCConfig
                config.rtc_config = RTCConfig(**rtc_settings(config, options))
                if options.flow_steps:
                    config.num_steps = int(options.flow_steps)

        try:
            policy, pre, post, config = load_policy(options.checkpoint, device, adjust)
        except RuntimeLoadError:
            raise
        except Exception as error:  # noqa: B902 - lerobot and the Hub raise many types
            text = str(error).strip().splitlines()[0][:300] if str(error).strip() else ''
            raise RuntimeLoadError(f'cannot load LeRobot checkpoint {options.checkpoint!r}: '
                                   f'{type(error).__name__}: {text}') from None
        chunk = chunk_steps({'type': config.type,
                             'chunk_size': getattr(config, 'chunk_size', None),
                             'n_action_steps': getattr(config, 'n_action_steps', None)})
        history = int(getattr(config, 'n_obs_steps', 1) or 1)
        action_dim = int(config.output_features['action'].shape[0])
        batch = MAX_BATCH_SIZE if config.type in BATCHED_TYPES else 1
        if options.manifest:
            where = f'manifest {options.manifest!r}'
            spec = load_manifest(pathlib.Path(options.manifest))
            check_manifest(spec, config.input_features, action_dim, history, where)
            identity = type(spec.action_normalization)()
            spec = dataclasses.replace(
                spec, max_batch_size=batch, chunk_length=chunk, policy=str(config.type),
                features=tuple(dataclasses.replace(f, normalization=identity)
                               for f in spec.features), action_normalization=identity)
        else:
            spec = spec_from_lerobot_config(config.input_features, action_dim, chunk, options,
                                            str(config.type), history, batch)
        source = options.checkpoint
        if pathlib.Path(source).is_dir():
            source += map_folder(source).note()      # what was mapped, for the start-up line
        import torch
        if dtype != torch.float32:
            policy.to(dtype)
        if options.compile:
            compile_policy(policy)
        return cls(spec, policy, pre, post, device, source, seed,
                   None if dtype == torch.float32 else dtype)

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str],
              prefixes: Optional[Sequence[Optional[Prefix]]] = None) -> np.ndarray:
        """Run preprocessor, the policy's chunk prediction and postprocessor on the batch.

        ``prefixes`` (real-time chunking, only when ``supports_prefix``): one committed plan
        (or None) per batch row, in the policy's units (degrees, gripper percent).
        """
        import torch
        batch = self.stager.stage_dict(inputs)
        batch['task'] = list(tasks)
        if self.seed is not None:
            torch.manual_seed(self.seed)
        with torch.no_grad():
            guidance = self._guidance(prefixes, len(batch['task']))
            batch = self.preprocessor(batch)
            if self.dtype is not None:
                batch = {key: value.to(self.dtype) if torch.is_tensor(value)
                         and value.is_floating_point() else value
                         for key, value in batch.items()}
            with autocast(self.torch_device, self.dtype):
                if self._stack_history:
                    chunk = self._diffusion_chunk(batch)
                else:
                    chunk = self.policy.predict_action_chunk(batch, **guidance)
            if chunk.ndim == 2:
                chunk = chunk[None]
            size, steps, actions = chunk.shape
            chunk = chunk.float()   # the postprocessor's statistics are float32
            chunk = self.postprocessor(chunk.reshape(size * steps, actions))
        return model_output_to_numpy(chunk).reshape(size, steps, actions)

    def _guidance(self, prefixes: Optional[Sequence[Optional[Prefix]]],
                  rows: int) -> Dict[str, Any]:
        """Return LeRobot's RTC arguments for a request's committed plan ({}: none)."""
        if not self.supports_prefix or prefixes is None or all(p is None for p in prefixes):
            return {}
        if rows != 1 or len(prefixes) != 1:
            raise ValueError(f'{len(prefixes)} prefixes for a batch of {rows}; real-time '
                             'chunking serves one request per forward pass')
        prefix = prefixes[0]
        positions = np.asarray(prefix.positions, dtype=np.float32)
        actions = len(self.spec.action_names)
        if positions.ndim != 2 or positions.shape[1] != actions or not len(positions):
            raise ValueError(f'the committed plan has shape {list(positions.shape)}; expected '
                             f'[steps, {actions}]')
        if not np.all(np.isfinite(positions)):
            raise ValueError('the committed plan has non-finite values')
        if int(prefix.frozen_steps) < 0:
            raise ValueError(f'the committed plan has frozen_steps {prefix.frozen_steps} < 0')
        import torch
        from lerobot.processor import TransitionKey
        from lerobot.processor.converters import create_transition
        plan = torch.from_numpy(positions[:self.spec.chunk_length]).to(self.torch_device)
        plan = self._action_normalizer(create_transition(action=plan))[TransitionKey.ACTION]
        if self.dtype is not None:
            plan = plan.to(self.dtype)
        return {'prev_chunk_left_over': plan[None], 'inference_delay': int(prefix.frozen_steps),
                'execution_horizon': self.execution_horizon}

    def _diffusion_chunk(self, batch):
        """Run the diffusion model on ``[B, n_obs_steps, ...]`` inputs, without its queues."""
        import torch
        from lerobot.utils.constants import OBS_ENV_STATE, OBS_IMAGES, OBS_STATE
        stacked = {key: batch[key] for key in (OBS_STATE, OBS_ENV_STATE) if key in batch}
        if self._image_keys:      # [B, n_obs_steps, cameras, C, H, W], as select_action stacks
            stacked[OBS_IMAGES] = torch.stack([batch[key] for key in self._image_keys], dim=-4)
        return self.policy.diffusion.generate_actions(stacked)
