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
Which runtime serves a checkpoint, and loading it: the runtime registry (no ROS).

==================  ======================================================================
``demo``            the built-in demo policy (:mod:`.demo_policy`): no files, no torch
``torchscript``     ``torch.jit.load`` of a ``.pt``/``.ts`` file plus its manifest
``torch_export``    ``torch.export.load`` of a ``.pt2`` file plus its manifest
``lerobot``         a LeRobot pretrained checkpoint through ``lerobot`` (:mod:`.lerobot_runtime`)
``python``          ``package.module:factory``; ``factory(options)`` returns a runtime
==================  ======================================================================

``policy_type: auto`` picks from the checkpoint: none -> demo, ``.pt2`` -> torch_export,
``.pt``/``.ts``/``.jit``/``.torchscript`` -> torchscript, a directory holding LeRobot's
``config.json`` (or a Hugging Face repo id) -> lerobot. Each runtime module is imported only
when chosen, so torch is imported only by the runtimes that need it and a demo server starts
in well under a second.
"""

import importlib
import pathlib
import re

from remote_inference_py.policy_server.manifest import ManifestError, PolicySpec
from remote_inference_py.policy_server.runtimes import (
    check_device_name, PolicyRuntime, RuntimeLoadError, RuntimeOptions)

POLICY_TYPES = ('auto', 'demo', 'torchscript', 'torch_export', 'lerobot', 'python')
TORCHSCRIPT_SUFFIXES = ('.pt', '.ts', '.jit', '.torchscript')


def infer_policy_type(checkpoint: str) -> str:
    """Pick the runtime for ``checkpoint`` (policy_type auto)."""
    if not checkpoint:
        return 'demo'
    path = pathlib.Path(checkpoint)
    if path.suffix == '.pt2':
        return 'torch_export'
    if path.suffix in TORCHSCRIPT_SUFFIXES:
        return 'torchscript'
    if path.is_dir() and (path / 'config.json').is_file():
        return 'lerobot'
    if path.is_dir() and (path / 'model.pt2').is_file():
        return 'torch_export'
    if not path.exists() and re.fullmatch(r'[\w.-]+/[\w.-]+', checkpoint) \
            and not checkpoint.startswith(('.', '/')):
        return 'lerobot'   # a Hugging Face Hub repo id
    if not path.exists():
        raise RuntimeLoadError(f'checkpoint {checkpoint!r} does not exist')
    raise RuntimeLoadError(
        f'cannot tell the format of checkpoint {checkpoint!r}: expected a .pt2 file '
        f'(torch.export), a {"/".join(TORCHSCRIPT_SUFFIXES)} file (TorchScript) or a LeRobot '
        f'checkpoint directory; or set policy_type')


def load_runtime(options: RuntimeOptions) -> PolicyRuntime:
    """Load the policy the options describe; RuntimeLoadError names what is wrong."""
    if options.policy_type not in POLICY_TYPES:
        raise RuntimeLoadError(f'policy_type {options.policy_type!r} is not one of '
                               f'{", ".join(POLICY_TYPES)}')
    check_device_name(options.device)
    kind = options.policy_type
    if kind == 'auto':
        kind = infer_policy_type(options.checkpoint)
    try:
        if kind == 'demo':
            from remote_inference_py.policy_server.demo_policy import DemoRuntime
            runtime = DemoRuntime.from_options(options)
        elif kind in ('torchscript', 'torch_export'):
            from remote_inference_py.policy_server.torch_runtime import TorchRuntime
            runtime = TorchRuntime.load(kind, options)
        elif kind == 'lerobot':
            from remote_inference_py.policy_server.lerobot_runtime import LeRobotRuntime
            runtime = LeRobotRuntime.load(options)
        else:
            runtime = _load_python(options)
    except ManifestError as error:
        raise RuntimeLoadError(str(error)) from None
    _check_overrides(runtime.spec, options)
    return runtime


def _check_overrides(spec: PolicySpec, options: RuntimeOptions) -> None:
    if options.semantics and options.semantics != spec.semantics:
        raise RuntimeLoadError(f'parameter semantics is {options.semantics!r} but the policy '
                               f'declares {spec.semantics!r}')
    if options.fps and abs(options.fps - spec.fps) > 1e-9 * spec.fps:
        raise RuntimeLoadError(f'parameter fps is {options.fps} Hz but the policy declares '
                               f'{spec.fps} Hz')


def _load_python(options: RuntimeOptions) -> PolicyRuntime:
    """Load ``package.module:factory`` and call ``factory(options)``."""
    target = options.checkpoint
    if ':' not in target:
        raise RuntimeLoadError(f"policy_type 'python' needs checkpoint 'package.module:factory',"
                               f' got {target!r}')
    module_name, attribute = target.split(':', 1)
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise RuntimeLoadError(f'cannot load python policy {target!r}: {error}') from None
    runtime = factory(options)
    if not isinstance(runtime, PolicyRuntime):
        raise RuntimeLoadError(f'python policy {target!r} returned {type(runtime).__name__}, '
                               'not a PolicyRuntime')
    return runtime
