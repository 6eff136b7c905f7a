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
Checkpoint folders saved by LeRobot 0.5 and 0.6, mapped onto the LeRobot 0.4 the server runs.

Pure functions over the dicts read from ``config.json`` and ``policy_preprocessor.json`` /
``policy_postprocessor.json`` and over weight names; no torch or lerobot import. The runtime
(``lerobot_runtime.py``) passes in what the installed LeRobot knows (the config fields of the
policy's class, the registered processor steps and their arguments) and loads the mapped files.

What the newer releases write differently (read side by side in LeRobot's sources, tags v0.4.4,
v0.5.0, v0.5.1, v0.6.0 and v0.6.1 of huggingface/lerobot):

- ``config.json`` of every policy type holds ``pretrained_revision`` (0.6.0 on); diffusion's
  holds ``gradient_checkpointing`` (0.6.1); pi0's and pi0.5's hold ``use_relative_actions``,
  ``relative_exclude_joints`` and ``action_feature_names`` (0.5.1 on). LeRobot 0.4's loader
  refuses any key its config class lacks. Each of these is dropped only where the newer
  release's own source shows it has no effect at inference (see :data:`DROPPABLE`); any other
  key the installed LeRobot does not know is refused by name.
- pi0 and pi0.5 processors hold two new steps, ``relative_actions_processor`` (pre) and
  ``absolute_actions_processor`` (post). With ``enabled: false`` both return their input
  unchanged (``processor/relative_action_processor.py``, their ``__call__``) and are removed;
  enabled, the actions the model predicts are offsets from the state, which LeRobot 0.4 cannot
  add back, so the folder is refused. The processor file format (``name``, ``steps`` with
  ``registry_name``, ``config``, ``state_file``) and the ACT, diffusion and SmolVLA steps are
  the same in both releases; the state files are named in the json, so removing a step leaves
  the others' statistics where they are.
- pi0.5 from 0.5.0 on no longer pads the state to ``max_state_dim`` before writing it into the
  prompt (``Pi05PrepareStateTokenizerProcessorStep.__call__``); the step saves no arguments,
  so 0.4 would pad. In a folder that shows it was written by 0.5.1 or later, the step is
  given ``max_state_dim`` = the state's size, which makes 0.4's padding a no-op.
- Diffusion's defaults changed (horizon 64, n_action_steps 32, one image encoder per camera,
  BatchNorm, ImageNet backbone); a saved config states each value, so nothing maps there.

Also for folders of LeRobot 0.4 itself: ``pretrained_backbone_weights`` (ACT's default in every
release, diffusion's from 0.6.0) names torchvision ImageNet weights that LeRobot DOWNLOADS when
it builds the policy, before it loads ``model.safetensors``. That file holds every backbone
weight (the runtime checks that all weights load, :func:`weight_mismatch`), so the download has
no effect on what is served; the key is set to None (:data:`BACKBONE_KEY`).
"""

import dataclasses
from typing import Any, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

BACKBONE_KEY = 'pretrained_backbone_weights'
RELATIVE_STEP = 'relative_actions_processor'
ABSOLUTE_STEP = 'absolute_actions_processor'
PI05_STATE_STEP = 'pi05_prepare_state_tokenizer_processor_step'
RELATIVE_TYPES = ('pi0', 'pi05')
STATE_KEY = 'observation.state'
SHOWN_KEYS = 5          # how many missing / unexpected weight names an error lists


@dataclasses.dataclass(frozen=True)
class Droppable:
    """A key newer LeRobot releases write that has no effect at inference, and where that shows."""

    types: Tuple[str, ...]     # policy types whose config may hold it; () = every type
    since: str                 # the first release that writes it
    evidence: str              # where in LeRobot 0.6.1's source its lack of effect is visible
    only_if_false: bool = False   # dropped only while use_relative_actions is false


# Keys LeRobot 0.5/0.6 write that LeRobot 0.4 does not know, dropped with the reason why.
DROPPABLE: Dict[str, Droppable] = {
    # configs/policies.py: `pretrained_revision: str | None` is the Hub revision
    # (commit, branch or tag) of `pretrained_path`; it is read only where a policy or its
    # processors are downloaded (policies/factory.py, make_policy: `kwargs["revision"] =
    # cfg.pretrained_revision`; make_pre_post_processors: `revision=pretrained_revision`).
    # A folder on disk is read as it is.
    'pretrained_revision': Droppable((), '0.6.0', 'configs/policies.py, policies/factory.py'),
    # policies/diffusion/modeling_diffusion.py, DiffusionConditionalUnet1d.forward:
    # `use_gc = self.config.gradient_checkpointing and self.training`; the served policy is in
    # eval mode, and a checkpointed block computes the same values anyway (it only trades
    # memory for recomputation in the backward pass).
    'gradient_checkpointing': Droppable(
        ('diffusion',), '0.6.1', 'policies/diffusion/modeling_diffusion.py, '
        'DiffusionConditionalUnet1d.forward'),
    # policies/pi0/processor_pi0.py and pi05/processor_pi05.py pass these three to
    # RelativeActionsProcessorStep / AbsoluteActionsProcessorStep only; with `enabled`
    # false those return the transition unchanged (processor/relative_action_processor.py).
    # The models never read them.
    'use_relative_actions': Droppable(
        RELATIVE_TYPES, '0.5.1', 'policies/pi0/processor_pi0.py, '
        'processor/relative_action_processor.py', only_if_false=True),
    'relative_exclude_joints': Droppable(
        RELATIVE_TYPES, '0.5.1', 'processor/relative_action_processor.py, _build_mask',
        only_if_false=True),
    'action_feature_names': Droppable(
        RELATIVE_TYPES, '0.5.1', 'processor/relative_action_processor.py, _build_mask',
        only_if_false=True),
}


class CompatError(ValueError):
    """A checkpoint file holds something the installed LeRobot cannot serve as it was meant."""


@dataclasses.dataclass(frozen=True)
class ConfigMapping:
    """A config.json mapped for the installed LeRobot, and what was changed."""

    config: Dict[str, Any]
    dropped: Tuple[str, ...] = ()      # keys removed (newer releases' keys without effect)
    nulled: Tuple[str, ...] = ()       # keys set to None (the backbone download)

    @property
    def newer(self) -> bool:
        """Whether the config holds keys only LeRobot 0.5 or later writes."""
        return bool(self.dropped)

    @property
    def changed(self) -> bool:
        """Whether the mapped config differs from the file."""
        return bool(self.dropped or self.nulled)


@dataclasses.dataclass(frozen=True)
class ProcessorMapping:
    """A processor pipeline mapped for the installed LeRobot, and what was changed."""

    pipeline: Dict[str, Any]
    removed: Tuple[str, ...] = ()      # registry names of the steps removed
    rewritten: Tuple[str, ...] = ()    # registry names of the steps whose arguments changed

    @property
    def changed(self) -> bool:
        """Whether the mapped pipeline differs from the file."""
        return bool(self.removed or self.rewritten)


def relative_actions(config: Mapping[str, Any]) -> bool:
    """Return whether a pi0 / pi0.5 config asks for relative actions (false when absent)."""
    value = config.get('use_relative_actions', False)
    return bool(value)


def map_config(config: Mapping[str, Any], known_keys: Collection[str],
               where: str) -> ConfigMapping:
    """
    Map a checkpoint's config.json onto the fields the installed LeRobot's config class has.

    ``known_keys`` are the field names of the policy type's config class in the installed
    LeRobot; ``where`` names the file in errors. A key outside them is dropped when
    :data:`DROPPABLE` shows it has no effect at inference for this policy type, else refused
    (:class:`CompatError` naming the key and the file). ``use_relative_actions: true`` is
    refused by name. ``pretrained_backbone_weights`` is set to None (see the module docstring).
    """
    if not isinstance(config, Mapping):
        raise CompatError(f'{where} is not a JSON object')
    kind = str(config.get('type', ''))
    known = set(known_keys) | {'type'}
    if kind in RELATIVE_TYPES and relative_actions(config):
        raise CompatError(
            f"{where}: 'use_relative_actions' is true: the {kind} policy predicts actions "
            'relative to the state, which LeRobot 0.4 cannot turn back into positions (its '
            "processors lack 0.5's absolute_actions_processor); this server serves pi0 / "
            'pi0.5 trained with absolute actions only')
    mapped: Dict[str, Any] = {}
    dropped: List[str] = []
    for key, value in config.items():
        if key in known:
            mapped[key] = value
            continue
        rule = DROPPABLE.get(key)
        if rule is None or (rule.types and kind not in rule.types):
            raise CompatError(
                f'{where}: key {key!r} is unknown to the installed LeRobot ({kind or "untyped"} '
                'policy) and not one this server knows to be without effect at inference '
                f'(those are: {", ".join(sorted(DROPPABLE))}); refusing the checkpoint rather '
                'than serving it differently from how it was trained')
        dropped.append(key)
    nulled: List[str] = []
    if mapped.get(BACKBONE_KEY) is not None:
        mapped[BACKBONE_KEY] = None
        nulled.append(BACKBONE_KEY)
    return ConfigMapping(mapped, tuple(dropped), tuple(nulled))


def state_size(config: Mapping[str, Any]) -> Optional[int]:
    """Return the size of ``observation.state`` in a config.json, None when it has none."""
    feature = (config.get('input_features') or {}).get(STATE_KEY)
    shape = feature.get('shape') if isinstance(feature, Mapping) else None
    if not shape or len(shape) != 1:
        return None
    return int(shape[0])


def map_processor(pipeline: Mapping[str, Any],
                  known_steps: Mapping[str, Optional[Collection[str]]],
                  config: ConfigMapping, where: str) -> ProcessorMapping:
    """
    Map a processor file (``policy_preprocessor.json`` / ``policy_postprocessor.json``).

    ``known_steps`` maps each registry name the installed LeRobot has to the argument names its
    step takes (None: not checked). ``config`` is the mapped config.json. A step whose
    ``registry_name`` is unknown, or whose ``config`` holds an argument its step does not take,
    is refused by name; the relative / absolute action steps are removed while disabled (and
    refused enabled); pi0.5's state prompt step gets ``max_state_dim`` = the state size when
    the config shows it was written by LeRobot 0.5.1 or later.
    """
    if not isinstance(pipeline, Mapping) or not isinstance(pipeline.get('steps'), list):
        raise CompatError(f"{where} is not a LeRobot processor file (no 'steps' list)")
    kind = str(config.config.get('type', ''))
    steps: List[Dict[str, Any]] = []
    removed: List[str] = []
    rewritten: List[str] = []
    for index, step in enumerate(pipeline['steps']):
        if not isinstance(step, Mapping):
            raise CompatError(f'{where}: step {index} is not a JSON object')
        name = step.get('registry_name')
        if name is None:
            if 'class' not in step:
                raise CompatError(f"{where}: step {index} has neither 'registry_name' nor "
                                  "'class'")
            steps.append(dict(step))      # a class path: LeRobot imports it and names it
            continue
        arguments = step.get('config') or {}
        if name in (RELATIVE_STEP, ABSOLUTE_STEP):
            if arguments.get('enabled'):
                raise CompatError(
                    f'{where}: step {index} {name!r} is enabled (relative actions): LeRobot 0.4 '
                    'has no such step, and the actions cannot be served without it')
            removed.append(name)          # disabled: it returns its input unchanged
            continue
        if name not in known_steps:
            raise CompatError(
                f'{where}: step {index} {name!r} is not a processor step the installed LeRobot '
                'knows; refusing the checkpoint rather than serving it without that step')
        accepted = known_steps[name]
        if accepted is not None:
            unknown = sorted(set(arguments) - set(accepted))
            if unknown:
                raise CompatError(
                    f'{where}: step {index} {name!r} has arguments {", ".join(unknown)} that the '
                    "installed LeRobot's step does not take")
        step = dict(step)
        if name == PI05_STATE_STEP and kind == 'pi05' and config.newer:
            size = state_size(config.config)
            if size is None:
                raise CompatError(f"{where}: the pi0.5 config declares no 1-D '{STATE_KEY}', "
                                  'which its state prompt step needs')
            step['config'] = {**arguments, 'max_state_dim': size}
            rewritten.append(name)
        steps.append(step)
    mapped = {**pipeline, 'steps': steps}
    return ProcessorMapping(mapped, tuple(removed), tuple(rewritten))


def shared_key_groups(keys_and_storage: Iterable[Tuple[str, Any]]) -> List[Tuple[str, ...]]:
    """Group state-dict names whose tensors share memory (tied weights): ``(name, id)`` pairs."""
    groups: Dict[Any, List[str]] = {}
    for name, storage in keys_and_storage:
        groups.setdefault(storage, []).append(name)
    return [tuple(names) for names in groups.values() if len(names) > 1]


def weight_mismatch(file_keys: Iterable[str], model_keys: Iterable[str],
                    shared: Sequence[Sequence[str]] = ()) -> Tuple[List[str], List[str]]:
    """
    Return (missing, unexpected): model weights the file lacks, file weights the model lacks.

    ``shared`` groups model names of one tensor (tied weights): safetensors saves one of them,
    so a group counts as loaded when the file holds any of its names.
    """
    file_set = set(file_keys)
    model_list = list(model_keys)
    model_set = set(model_list)
    covered = set()
    for group in shared:
        if file_set & set(group):
            covered.update(group)
    missing = [key for key in model_list if key not in file_set and key not in covered]
    unexpected = sorted(key for key in file_set if key not in model_set)
    return missing, unexpected


def describe_mismatch(missing: Sequence[str], unexpected: Sequence[str], where: str) -> str:
    """Return the error naming the first missing and unexpected weights, or '' when none."""
    if not missing and not unexpected:
        return ''
    parts = []
    if missing:
        more = f' and {len(missing) - SHOWN_KEYS} more' if len(missing) > SHOWN_KEYS else ''
        parts.append(f'{len(missing)} weights of the policy are not in it '
                     f'({", ".join(missing[:SHOWN_KEYS])}{more})')
    if unexpected:
        more = (f' and {len(unexpected) - SHOWN_KEYS} more' if len(unexpected) > SHOWN_KEYS
                else '')
        parts.append(f'{len(unexpected)} weights in it are not in the policy '
                     f'({", ".join(unexpected[:SHOWN_KEYS])}{more})')
    return (f'{where} does not fit the policy its config.json describes: {"; ".join(parts)}. '
            'LeRobot would load it anyway and leave those weights random')
