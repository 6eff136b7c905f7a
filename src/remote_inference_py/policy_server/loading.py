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
``flow_matching``   a ``.pt2`` velocity field sampled with prefix guidance (:mod:`.flow_runtime`)
``lerobot``         a LeRobot pretrained checkpoint through ``lerobot`` (:mod:`.lerobot_runtime`)
``python``          ``package.module:factory``; ``factory(options)`` returns a runtime
==================  ======================================================================

The names are the choices of the ``policy_type`` setting (:data:`.config.POLICY_TYPES`).
``policy_type: auto`` picks from the checkpoint: none -> demo, ``.pt2`` -> torch_export
(flow_matching when its manifest says ``policy: flow_matching``),
``.pt``/``.ts``/``.jit``/``.torchscript`` -> torchscript, a directory holding LeRobot's
``config.json`` (or a Hugging Face repo id) -> lerobot. Each runtime module is imported only
when chosen, so torch is imported only by the runtimes that need it and a demo server starts
in well under a second.

:func:`load_policy` is the server's whole start-up before ROS entities exist: calibration,
runtime, torch threads, warm-up (:func:`~.runtimes.warm_up`), the core, the feature topics and
the decision to serve inline. The node calls it once from its constructor and logs the lines
it produces; a ValueError (RuntimeLoadError included) names what is wrong, and the node exits
with code 2.
"""

import dataclasses
import importlib
import pathlib
import sys
import time
from typing import Any, Callable, Dict, Optional

from remote_inference_py.contract.checkpoint import (
    is_hub_id, TORCH_EXPORT_SUFFIX, TORCHSCRIPT_SUFFIXES)
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import PolicyServerCore
from remote_inference_py.policy_server.manifest import (
    FLOW_MATCHING, manifest_path_for, ManifestError, PolicySpec, read_manifest_data)
from remote_inference_py.policy_server.runtimes import (
    check_device_name, PolicyRuntime, resolve_device, RuntimeLoadError, RuntimeOptions, warm_up,
    WarmupReport)
from remote_inference_py.policy_server.topics import resolve_topics
from remote_inference_py.robot.calibration import Calibration


def infer_policy_type(checkpoint: str) -> str:
    """Pick the runtime for ``checkpoint`` (policy_type auto)."""
    if not checkpoint:
        return 'demo'
    path = pathlib.Path(checkpoint)
    if path.suffix == TORCH_EXPORT_SUFFIX:
        return 'torch_export'
    if path.suffix in TORCHSCRIPT_SUFFIXES:
        return 'torchscript'
    if path.is_dir() and (path / 'config.json').is_file():
        return 'lerobot'
    if path.is_dir() and (path / 'model.pt2').is_file():
        return 'torch_export'
    if is_hub_id(checkpoint):
        return 'lerobot'
    if not path.exists():
        raise RuntimeLoadError(f'checkpoint {checkpoint!r} does not exist')
    raise RuntimeLoadError(
        f'cannot tell the format of checkpoint {checkpoint!r}: expected a .pt2 file '
        f'(torch.export), a {"/".join(TORCHSCRIPT_SUFFIXES)} file (TorchScript) or a LeRobot '
        f'checkpoint directory; or set policy_type')


def load_runtime(options: RuntimeOptions) -> PolicyRuntime:
    """Load the policy the options describe; RuntimeLoadError names what is wrong.

    ``options.policy_type`` is one of the setting's choices (:data:`.config.POLICY_TYPES`):
    the options checked it when they were made.
    """
    check_device_name(options.device)
    kind = options.policy_type
    if kind == 'auto':
        kind = infer_policy_type(options.checkpoint)
        if kind == 'torch_export' and _declared_policy(options) == FLOW_MATCHING:
            kind = FLOW_MATCHING
    try:
        if kind == 'demo':
            from remote_inference_py.policy_server.demo_policy import DemoRuntime
            runtime = DemoRuntime.from_options(options)
        elif kind in ('torchscript', 'torch_export'):
            from remote_inference_py.policy_server.torch_runtime import TorchRuntime
            runtime = TorchRuntime.load(kind, options)
        elif kind == FLOW_MATCHING:
            from remote_inference_py.policy_server.flow_runtime import FlowMatchingRuntime
            runtime = FlowMatchingRuntime.load(options)
        elif kind == 'lerobot':
            from remote_inference_py.policy_server.lerobot_runtime import LeRobotRuntime
            runtime = LeRobotRuntime.load(options)
        else:
            runtime = _load_python(options)
    except ManifestError as error:
        raise RuntimeLoadError(str(error)) from None
    _check_overrides(runtime.spec, options)
    return runtime


def _declared_policy(options: RuntimeOptions) -> str:
    """Return the ``policy`` a .pt2 checkpoint's manifest declares ('' when unreadable)."""
    path = pathlib.Path(options.checkpoint)
    if path.is_dir():
        path = path / 'model.pt2'
    try:
        manifest = (pathlib.Path(options.manifest) if options.manifest
                    else manifest_path_for(path))
        data = read_manifest_data(manifest)
    except ManifestError:
        return ''   # the runtime that loads it names the problem
    return str(data.get('policy', '')) if isinstance(data, dict) else ''


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


@dataclasses.dataclass
class LoadedPolicy:
    """What start-up made: the runtime, the core bound to it, and how requests are served."""

    runtime: PolicyRuntime
    core: PolicyServerCore
    topics: Dict[str, str]           # non-state feature -> topic (relative to each robot)
    report: WarmupReport
    load_s: float
    inline: bool                     # serve in the callback that makes a request ready
    text: Any = None                 # what answers queries: the text_model, else the runtime

    def loaded_text(self) -> str:
        """Return the log line that describes the loaded policy."""
        spec, runtime, core = self.runtime.spec, self.runtime, self.core
        return (f'policy {spec.policy or runtime.kind!r} from {runtime.source} on '
                f'{runtime.device} loaded in {self.load_s:.2f} s: semantics={spec.semantics} '
                f'fps={spec.fps} chunk_length={core.chunk_length}/{spec.chunk_length} '
                f'actions={list(spec.action_joints)} features='
                f'{[f"{f.name} {list(f.shape)} {f.dtype} {f.kind}" for f in spec.features]} '
                f'max_batch={core.batch_limit}')

    def warm_up_text(self) -> str:
        """Return the log line that reports the warm-up and where requests are served."""
        report = self.report
        return (f'warm-up: {report.iterations} forward passes (batch sizes '
                f'{list(report.batch_sizes)}) in {report.total_s:.3f} s, last '
                f'{report.last_ms:.2f} ms; requests are served '
                f'{"inline when ready" if self.inline else "by the serving thread"}')


def load_calibration(path: str) -> Optional[Calibration]:
    """Load the ``calibration_file`` parameter (empty: None); ValueError names the file."""
    if not path:
        return None
    try:
        return Calibration.load(path)
    except (OSError, ValueError) as error:
        raise ValueError(f'calibration_file {path!r}: {error}') from None


def load_policy(config: ServerConfig, log: Callable[[str], None] = lambda text: None,
                sleep: Optional[Callable[[float], object]] = None) -> LoadedPolicy:
    """
    Load, validate and warm up the policy ``config`` describes; bind the core to it.

    ``log`` receives the start-up lines (loading, loaded, warm-up) as they happen; ``sleep``
    is the core's wait (the node passes its stop event's ``wait`` so a stop ends it). Raise
    ValueError (RuntimeLoadError for the model) naming what is wrong; a runtime that was
    loaded is closed again then.
    """
    calibration = load_calibration(config.calibration_file)
    options = RuntimeOptions.from_config(config, calibration)
    log(f'loading the policy (policy_type={options.policy_type}, '
        f'checkpoint={options.checkpoint or "none"}, device={options.device}, '
        f'dtype={options.dtype}{", compiled" if options.compile else ""})')
    started = time.perf_counter()
    runtime = load_runtime(options)
    try:
        load_s = time.perf_counter() - started
        if config.cpu_threads > 0 and 'torch' in sys.modules:
            sys.modules['torch'].set_num_threads(config.cpu_threads)
        # The scheduler batches at most one request per admitted session.
        report = warm_up(runtime, config.warmup_iterations,
                         min(config.max_batch_size, config.max_clients))
        core = PolicyServerCore(config, runtime, calibration, sleep=sleep)
        topics = resolve_topics(runtime.spec, config.topic_overrides(),
                                config.image_transport)
        core.warm_preprocessing()
    except BaseException:
        runtime.close()
        raise
    # Serve in the callback (one thread hand-off less) only when it cannot hold up the node:
    # a fast model, and one robot (nothing to batch).
    inline = len(config.robot_namespaces) == 1 and report.last_ms <= config.inline_serve_max_ms
    text = runtime
    if config.text_model:
        from remote_inference_py.policy_server.vlm_text import VisionLanguageText
        try:
            text = VisionLanguageText(config.text_model, str(resolve_device(config.device)),
                                      config.text_max_new_tokens)
        except BaseException:
            runtime.close()
            raise
        log(f'text model {config.text_model} loaded in {text.load_s:.1f} s')
    loaded = LoadedPolicy(runtime=runtime, core=core, topics=topics, report=report,
                          load_s=load_s, inline=inline, text=text)
    log(loaded.loaded_text())
    log(loaded.warm_up_text())
    log(f'text commands: {", ".join(text.text_commands) or "none"}')
    return loaded
