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
A LeRobot checkpoint folder made readable by the installed LeRobot, and its weights checked.

:func:`staged_folder` asks the installed LeRobot what it knows (the config fields of the
policy's type, the registered processor steps and their arguments), maps the folder's
``config.json`` and processor files with :mod:`.lerobot_compat`, and, when anything changed,
yields a temporary folder holding the mapped files and links to every other file of the
checkpoint (the user's folder is never written). :func:`check_weights` compares the names in
``model.safetensors`` with the loaded policy's ``state_dict()``: LeRobot 0.4 loads with
``strict=False`` and would only log a mismatch. Both raise RuntimeLoadError naming the file.
"""

import contextlib
import dataclasses
import importlib
import inspect
import json
import pathlib
import shutil
import tempfile
from typing import Collection, Dict, Iterator, Optional

from remote_inference_py.policy_server.lerobot_compat import (
    CompatError, ConfigMapping, describe_mismatch, map_config, map_processor, ProcessorMapping,
    shared_key_groups, weight_mismatch)
from remote_inference_py.policy_server.lerobot_import import import_lerobot
from remote_inference_py.policy_server.runtimes import RuntimeLoadError

CONFIG_FILE = 'config.json'
WEIGHTS_FILE = 'model.safetensors'
PROCESSOR_FILES = ('policy_preprocessor.json', 'policy_postprocessor.json')


def config_fields(kind: str) -> Collection[str]:
    """Return the field names of the installed LeRobot's config class for policy ``kind``."""
    import_lerobot('reading a LeRobot checkpoint folder')
    from lerobot.configs.policies import PreTrainedConfig
    if kind.isidentifier():       # a policy's config class registers itself when imported
        with contextlib.suppress(ImportError):
            importlib.import_module(f'lerobot.policies.{kind}.configuration_{kind}')
    try:
        config_class = PreTrainedConfig.get_choice_class(kind)
    except Exception:  # noqa: B902 - draccus raises KeyError or ValueError by version
        raise RuntimeLoadError(f'the installed LeRobot has no {kind!r} policy') from None
    return [field.name for field in dataclasses.fields(config_class)]


def step_arguments(step_class) -> Optional[Collection[str]]:
    """Return the argument names a processor step class takes (None: any)."""
    if dataclasses.is_dataclass(step_class):
        return [field.name for field in dataclasses.fields(step_class) if field.init]
    try:
        parameters = inspect.signature(step_class).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters]


def known_steps(kind: str) -> Dict[str, Optional[Collection[str]]]:
    """Return the installed LeRobot's processor steps (with the policy's own) and arguments."""
    import_lerobot('reading a LeRobot checkpoint folder')
    from lerobot.processor import ProcessorStepRegistry
    with contextlib.suppress(ImportError):    # registers the policy's own steps, if it has any
        importlib.import_module(f'lerobot.policies.{kind}.processor_{kind}')
    return {name: step_arguments(ProcessorStepRegistry.get(name))
            for name in ProcessorStepRegistry.list()}


def _read_json(path: pathlib.Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise RuntimeLoadError(f'{path} cannot be read as JSON ({error})') from None


@dataclasses.dataclass(frozen=True)
class FolderMapping:
    """A checkpoint folder's config.json and processor files mapped for the installed LeRobot."""

    config: ConfigMapping
    processors: Dict[str, ProcessorMapping]

    @property
    def changed(self) -> bool:
        """Whether any mapped file differs from the folder's."""
        return self.config.changed or any(p.changed for p in self.processors.values())

    def note(self) -> str:
        """Return what was mapped, for the start-up line ('' when the folder is served as is)."""
        parts = []
        if self.config.dropped:
            dropped = ', '.join(self.config.dropped)
            parts.append(f'saved by LeRobot 0.5 or later, dropped {dropped}')
        if self.config.nulled:
            parts.append(f'{", ".join(self.config.nulled)} not downloaded (model.safetensors '
                         'holds the backbone)')
        removed = sorted({s for p in self.processors.values() for s in p.removed})
        rewritten = sorted({s for p in self.processors.values() for s in p.rewritten})
        if removed:
            parts.append(f'disabled steps {", ".join(removed)} removed')
        if rewritten:
            parts.append(f'{", ".join(rewritten)} given the state size')
        return f' ({"; ".join(parts)})' if parts else ''


def map_folder(checkpoint: str) -> FolderMapping:
    """Map a checkpoint folder's files; RuntimeLoadError names what cannot be mapped."""
    folder = pathlib.Path(checkpoint)
    config = _read_json(folder / CONFIG_FILE)
    kind = str(config.get('type', '')) if isinstance(config, dict) else ''
    try:
        mapping = map_config(config, config_fields(kind), str(folder / CONFIG_FILE))
        steps = known_steps(kind)
        processors = {name: map_processor(_read_json(folder / name), steps, mapping,
                                          str(folder / name))
                      for name in PROCESSOR_FILES}
    except CompatError as error:
        raise RuntimeLoadError(str(error)) from None
    return FolderMapping(mapping, processors)


@contextlib.contextmanager
def staged_folder(checkpoint: str) -> Iterator[str]:
    """
    Yield the folder LeRobot should load ``checkpoint`` from: itself, or its mapped copy.

    The copy (a temporary folder, removed afterwards) holds the mapped config.json and
    processor files and links to every other file. RuntimeLoadError names the key, step or file
    that cannot be mapped.
    """
    mapping = map_folder(checkpoint)
    if not mapping.changed:
        yield str(checkpoint)
        return
    folder = pathlib.Path(checkpoint)
    staging = pathlib.Path(tempfile.mkdtemp(prefix='lerobot_mapped_'))
    try:
        for entry in folder.iterdir():
            if entry.name not in (CONFIG_FILE,) + PROCESSOR_FILES:
                (staging / entry.name).symlink_to(entry.resolve())
        (staging / CONFIG_FILE).write_text(json.dumps(mapping.config.config, indent=4))
        for name, processor in mapping.processors.items():
            (staging / name).write_text(json.dumps(processor.pipeline, indent=2))
        yield str(staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def check_weights(policy, checkpoint: str) -> None:
    """Raise RuntimeLoadError unless every weight in ``model.safetensors`` fits ``policy``."""
    from safetensors import safe_open
    path = pathlib.Path(checkpoint) / WEIGHTS_FILE
    if not path.is_file():
        raise RuntimeLoadError(f'LeRobot checkpoint {checkpoint!r} has no {WEIGHTS_FILE}')
    try:
        with safe_open(str(path), framework='pt') as weights:
            file_keys = list(weights.keys())
    except Exception as error:  # noqa: B902 - safetensors raises its own error types
        raise RuntimeLoadError(f'{path} cannot be read ({error})') from None
    fix = getattr(policy, '_fix_pytorch_state_dict_keys', None)
    if fix is not None:       # pi0 / pi0.5 rename keys as they load (their from_pretrained)
        file_keys = [key if key.startswith('model.') else f'model.{key}'
                     for key in fix(dict.fromkeys(file_keys), policy.config)]
    state = policy.state_dict()
    shared = shared_key_groups(
        (name, (tensor.untyped_storage().data_ptr(), tensor.storage_offset(),
                tuple(tensor.shape)))
        for name, tensor in state.items() if tensor.numel())
    message = describe_mismatch(*weight_mismatch(file_keys, state, shared), str(path))
    if message:
        raise RuntimeLoadError(message)
