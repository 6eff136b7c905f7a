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
LeRobot pretrained checkpoints (ACT, SmolVLA, Diffusion, pi0, ...) through ``lerobot``.

``lerobot`` is an optional dependency, imported only when a LeRobot checkpoint is served
(:func:`import_lerobot` raises :class:`LeRobotMissing` naming what to install otherwise). The
policy is loaded once with its saved pre- and post-processors (normalization, tokenization,
device placement), exactly as LeRobot's own policy server does; the server then feeds it
``observation.state`` in the policy's units and images as float32 ``[B, C, H, W]`` in [0, 1]
plus the task text, and takes ``predict_action_chunk``'s output through the post-processor.

LeRobot's config does not record joint names, the action rate or the camera resolution
the robot publishes; they come from a manifest when one is given (its normalization is
ignored: the processors normalize) and otherwise default to the SO-101: state and action
names ``shoulder_pan.pos`` ... ``gripper.pos`` (6 values), the ``semantics`` parameter
(default ``so101-degrees-gripper-percent-v1``), the ``fps`` parameter (required) and each
camera declared at the policy's input resolution. ACT must run with temporal ensembling
disabled (the executor's ``ensemble`` merge does that job).
"""

import dataclasses
import pathlib
from typing import Dict, Sequence

import numpy as np

from remote_inference_py.hardware.calibration import SO101_JOINT_NAMES
from remote_inference_py.policy_server.manifest import load_manifest, spec_from_dict
from remote_inference_py.policy_server.runtimes import (
    model_output_to_numpy, PolicyRuntime, resolve_device, RuntimeLoadError, RuntimeOptions)

INSTALL_HINT = ("install it on the server with `pip install lerobot` (plus the policy's extra, "
                "e.g. `pip install 'lerobot[smolvla]'` or `'lerobot[pi]'`)")
DEFAULT_SEMANTICS = 'so101-degrees-gripper-percent-v1'


class LeRobotMissing(RuntimeLoadError):
    """The ``lerobot`` package is not installed."""


def import_lerobot(purpose: str = 'serving a LeRobot checkpoint'):
    """Import lerobot lazily; raise LeRobotMissing naming the package to install."""
    try:
        import lerobot
    except ImportError as error:
        raise LeRobotMissing(f'{purpose} needs the `lerobot` package, which is not installed '
                             f'({error}); {INSTALL_HINT}') from None
    return lerobot


def load_policy(checkpoint: str, device: str):
    """Return (policy, preprocessor, postprocessor, config) of a LeRobot checkpoint."""
    import_lerobot()
    try:   # the layout of lerobot >= 0.4, then the older one
        from lerobot.policies import get_policy_class, make_pre_post_processors
    except ImportError:
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.configs.policies import PreTrainedConfig
    config = PreTrainedConfig.from_pretrained(checkpoint)
    if getattr(config, 'temporal_ensemble_coeff', None) is not None:
        raise RuntimeLoadError(f'checkpoint {checkpoint!r}: ACT with temporal ensembling '
                               'cannot serve chunks; set temporal_ensemble_coeff to null (the '
                               "executor's ensemble merge does the ensembling)")
    policy = get_policy_class(config.type).from_pretrained(checkpoint)
    policy.to(device)
    policy.eval()
    override = {'device_processor': {'device': str(device)}}
    preprocessor, postprocessor = make_pre_post_processors(
        policy.config, pretrained_path=checkpoint, preprocessor_overrides=override,
        postprocessor_overrides=override)
    return policy, preprocessor, postprocessor, policy.config


def feature_kind(feature) -> str:
    """Return 'state', 'visual' or another lowercase LeRobot FeatureType name."""
    kind = getattr(feature, 'type', feature)
    return str(getattr(kind, 'name', kind)).lower()


def spec_from_lerobot_config(input_features: Dict[str, object], action_dim: int,
                             chunk_length: int, options: RuntimeOptions, policy: str = ''):
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
                raise RuntimeLoadError(f'{name!r} has shape {shape}; only the 6-joint SO-101 '
                                       'state has default names: give a manifest')
            features.append({'name': name, 'kind': 'state', 'shape': shape,
                             'names': names})
        elif kind == 'visual':
            channels, height, width = shape
            features.append({'name': name, 'kind': 'rgb', 'shape': [height, width, channels],
                             'dtype': 'uint8', 'model_shape': shape})
        else:
            raise RuntimeLoadError(f'input feature {name!r} of type {kind!r} is not supported '
                                   '(state and visual are); give a manifest')
    if action_dim != len(names):
        raise RuntimeLoadError(f'the checkpoint outputs {action_dim} action values; only the '
                               '6-joint SO-101 has default action names: give a manifest')
    return spec_from_dict({
        'policy': policy, 'semantics': options.semantics or DEFAULT_SEMANTICS,
        'fps': options.fps, 'chunk_length': chunk_length, 'max_batch_size': 1,
        'action': {'names': names}, 'features': features}, 'LeRobot checkpoint')


class LeRobotRuntime(PolicyRuntime):
    """A LeRobot PreTrainedPolicy with its processors."""

    kind = 'lerobot'

    def __init__(self, spec, policy, preprocessor, postprocessor, device, source):
        """Wrap a loaded policy; use :meth:`load`."""
        super().__init__(spec, str(device), source)
        self.policy = policy
        self.preprocessor = preprocessor
        self.postprocessor = postprocessor

    @classmethod
    def load(cls, options: RuntimeOptions) -> 'LeRobotRuntime':
        """Load the checkpoint (directory or Hub id) and derive the spec."""
        import_lerobot()
        device = resolve_device(options.device)
        try:
            policy, pre, post, config = load_policy(options.checkpoint, device)
        except RuntimeLoadError:
            raise
        except Exception as error:  # noqa: B902 - lerobot and the Hub raise many types
            raise RuntimeLoadError(f'cannot load LeRobot checkpoint {options.checkpoint!r}: '
                                   f'{error}') from None
        chunk = int(getattr(config, 'n_action_steps', 0) or getattr(config, 'chunk_size', 1))
        action_dim = int(config.output_features['action'].shape[0])
        if options.manifest:
            spec = dataclasses.replace(load_manifest(pathlib.Path(options.manifest)),
                                       max_batch_size=1, chunk_length=chunk)
            spec = dataclasses.replace(spec, features=tuple(
                dataclasses.replace(f, normalization=type(f.normalization)())
                for f in spec.features), action_normalization=type(spec.action_normalization)())
        else:
            spec = spec_from_lerobot_config(config.input_features, action_dim, chunk, options,
                                            str(config.type))
        return cls(spec, policy, pre, post, device, options.checkpoint)

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Run preprocessor, predict_action_chunk and postprocessor on the batch."""
        import torch
        batch = {name: torch.from_numpy(value) for name, value in inputs.items()}
        batch['task'] = list(tasks)
        with torch.no_grad():
            batch = self.preprocessor(batch)
            chunk = self.policy.predict_action_chunk(batch)
            if chunk.ndim == 2:
                chunk = chunk[None]
            size, steps, actions = chunk.shape
            chunk = self.postprocessor(chunk.reshape(size * steps, actions))
        return model_output_to_numpy(chunk).reshape(size, steps, actions)
