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
What an evaluation runs: the node parameters, execution modes, latencies and policies.

Both runners read ``config/eval_sim.yaml``, the parameters file the real-node runner starts
the three nodes with, so the simulated-time runner uses the same rates, limits and executor
settings as the real system. A configuration is one execution mode and one injected
inference latency:

=================  ==============================================================
mode               executor settings on top of the file
=================  ==============================================================
``sync``           ``synchronous: true`` (request when the buffer is empty, hold)
``aligned``        ``chunk_merge: aligned``
``aligned+blend``  ``chunk_merge: aligned``, ``blend_steps: 10``
``ensemble``       ``chunk_merge: ensemble``
``rtc``            ``chunk_merge: rtc`` (requests carry the committed plan; only for a
                   policy that supports it, such as the flow-matching policy)
=================  ==============================================================

Policies: ``expert`` (the scripted pick, :mod:`.expert`), ``idle`` (does nothing), or the path
of a ``.pt2`` / TorchScript checkpoint with its manifest (e.g. the learned policy). Bad input
(an unknown mode or policy, a negative latency, zero episodes) raises ValueError naming it.
"""

import dataclasses
import math
import os
import pathlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from remote_inference_py.common.settings import declared
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings

CONFIG_FILE = 'eval_sim.yaml'
NODES = ('hardware_interface', 'executor', 'policy_server')
MODES: Dict[str, Dict[str, Any]] = {
    'sync': {'synchronous': True, 'chunk_merge': 'aligned', 'blend_steps': 0},
    'aligned': {'synchronous': False, 'chunk_merge': 'aligned', 'blend_steps': 0},
    'aligned+blend': {'synchronous': False, 'chunk_merge': 'aligned', 'blend_steps': 10},
    'ensemble': {'synchronous': False, 'chunk_merge': 'ensemble', 'blend_steps': 0},
    'rtc': {'synchronous': False, 'chunk_merge': 'rtc', 'blend_steps': 0},
}
PLAIN_MODES = tuple(mode for mode in MODES if mode != 'rtc')
"""The modes every policy supports (the default unless the policy supports rtc)."""
DEFAULT_LATENCIES = (0.0, 0.1, 0.3, 0.6)
CUBE_POSE_RATE_HZ = 10.0
"""Rate of the hardware interface's ``sim/cube_pose`` (its CUBE_POSE_RATE_HZ)."""
EXPERT = 'expert'
IDLE = 'idle'
MODEL_SUFFIXES = ('.pt2', '.pt', '.ts', '.jit', '.torchscript')


def find_config(name: str = CONFIG_FILE) -> pathlib.Path:
    """Return the installed ``config/<name>`` (or the source tree's); ValueError if missing."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(pathlib.Path(get_package_share_directory('remote_inference'))
                          / 'config' / name)
    except Exception:  # noqa: B902 - not installed with ament: use the source tree
        pass
    candidates.append(pathlib.Path(__file__).resolve().parents[3] / 'config' / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ValueError(f'config file {name!r} not found (looked at '
                     f'{", ".join(str(c) for c in candidates)})')


def load_parameters(path: os.PathLike) -> Dict[str, Dict[str, Any]]:
    """Read a ROS parameters file; return {node name: {parameter: value}} for our nodes."""
    import yaml
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f'config file {str(path)!r} does not exist')
    data = yaml.safe_load(path.read_text()) or {}
    out = {}
    for node in NODES:
        entry = data.get(node, {}) or {}
        out[node] = dict(entry.get('ros__parameters', {}) or {})
    return out


@dataclasses.dataclass(frozen=True)
class Configuration:
    """One column of the matrix: an execution mode under an injected latency."""

    mode: str
    latency_s: float

    @property
    def label(self) -> str:
        """Return a short name, e.g. ``aligned L=0.3``."""
        return f'{self.mode} L={self.latency_s:g}'


def parse_modes(modes: Sequence[str]) -> Tuple[str, ...]:
    """Validate mode names (comma-separated strings allowed); ValueError names a bad one."""
    names = [m.strip() for item in modes for m in str(item).split(',') if m.strip()]
    if not names:
        raise ValueError(f'no execution mode given; choose from {", ".join(MODES)}')
    for name in names:
        if name not in MODES:
            raise ValueError(f'unknown execution mode {name!r}; choose from '
                             f'{", ".join(MODES)}')
    return tuple(dict.fromkeys(names))


def default_modes(policy: 'PolicyChoice') -> Tuple[str, ...]:
    """Return every mode the policy supports: the plain ones, and rtc if it takes the plan."""
    runtime = policy.make_runtime()
    try:
        return PLAIN_MODES + (('rtc',) if runtime.supports_prefix else ())
    finally:
        runtime.close()


def parse_latencies(latencies: Sequence[Any]) -> Tuple[float, ...]:
    """Validate injected latencies [s]; ValueError names a negative or non-numeric one."""
    values = []
    for item in latencies:
        for text in str(item).split(','):
            if not text.strip():
                continue
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f'latency {text.strip()!r} is not a number [s]') from None
            if not math.isfinite(value) or value < 0:
                raise ValueError(f'latency {text.strip()} s is negative or not finite; '
                                 'latencies must be >= 0 s')
            if value > 10.0:
                raise ValueError(f'latency {value:g} s is above 10 s')
            values.append(value)
    if not values:
        raise ValueError('no latency given (e.g. 0,0.1,0.3,0.6)')
    return tuple(dict.fromkeys(values))


def check_episodes(episodes: Any) -> int:
    """Validate an episode count; ValueError names zero, negative or non-integer counts."""
    if isinstance(episodes, bool) or not isinstance(episodes, int):
        raise ValueError(f'episode count must be an integer, got {episodes!r}')
    if episodes < 1:
        raise ValueError(f'episode count must be at least 1, got {episodes}')
    return episodes


def configurations(modes: Sequence[str], latencies: Sequence[float]) -> List[Configuration]:
    """Return the matrix: every mode under every latency (latency-major)."""
    return [Configuration(mode, latency) for latency in latencies for mode in modes]


@dataclasses.dataclass(frozen=True)
class PolicyChoice:
    """A policy to evaluate: how to build it in-process and how the server loads it."""

    name: str
    policy_type: str
    checkpoint: str
    make_runtime: Callable[..., Any]
    """``make_runtime(server=None)``: ``server`` the policy server's parameters, whose
    sampler settings (:data:`SAMPLER_PARAMETERS`) and ``cpu_threads`` a checkpoint's runtime
    takes, as the node does."""

    @property
    def server_parameters(self) -> Dict[str, str]:
        """Return the policy server parameters that select this policy."""
        return {'policy_type': self.policy_type, 'checkpoint': self.checkpoint}


SAMPLER_PARAMETERS = ('flow_steps', 'rtc_execution_horizon', 'rtc_prefix_schedule',
                      'rtc_max_guidance_weight')
"""Policy server parameters the simulated-time runner hands to a checkpoint's runtime."""


def resolve_policy(name: str) -> PolicyChoice:
    """Return the policy called ``name``: expert, idle, or a checkpoint file path."""
    from remote_inference_py.evaluation import expert
    if name == EXPERT:
        return PolicyChoice(EXPERT, 'python', f'{expert.__name__}:expert_runtime',
                            lambda server=None: expert.expert_runtime())
    if name == IDLE:
        return PolicyChoice(IDLE, 'python', f'{expert.__name__}:idle_runtime',
                            lambda server=None: expert.idle_runtime())
    path = pathlib.Path(name)
    if path.suffix in MODEL_SUFFIXES:
        if not path.is_file():
            raise ValueError(f'policy checkpoint {name!r} does not exist')
        checkpoint = str(path.resolve())

        def make_runtime(server: Optional[Dict[str, Any]] = None):
            import sys
            from remote_inference_py.policy_server.config import ServerConfig
            from remote_inference_py.policy_server.loading import load_runtime
            from remote_inference_py.policy_server.runtimes import RuntimeOptions
            sampler = {k: v for k, v in (server or {}).items() if k in SAMPLER_PARAMETERS}
            runtime = load_runtime(RuntimeOptions(policy_type='auto', checkpoint=checkpoint,
                                                  **sampler))
            threads = int((server or {}).get('cpu_threads', ServerConfig.cpu_threads))
            if server is not None and threads > 0 and 'torch' in sys.modules:
                # As the node does: torch on cpu_threads (default 1) threads.
                sys.modules['torch'].set_num_threads(threads)
            return runtime
        label = path.parent.name if path.stem == 'model' and path.parent.name else path.stem
        return PolicyChoice(label, 'auto', checkpoint, make_runtime)
    raise ValueError(f'unknown policy {name!r}: expected {EXPERT}, {IDLE} or a checkpoint file '
                     f'({", ".join(MODEL_SUFFIXES)}) with its manifest')


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """The node parameters both runners use (from config/eval_sim.yaml)."""

    parameters: Dict[str, Dict[str, Any]]
    source: str = ''

    @classmethod
    def load(cls, path: Optional[os.PathLike] = None) -> 'EvalSettings':
        """Read ``path`` (default: the installed config/eval_sim.yaml)."""
        path = pathlib.Path(path) if path else find_config()
        return cls(load_parameters(path), str(path))

    def node(self, name: str) -> Dict[str, Any]:
        """Return the parameters of node ``name``."""
        return self.parameters[name]

    def hardware_config(self):
        """Return the HardwareConfig the hardware interface node would build from the file."""
        from remote_inference_py.hardware.config import HardwareConfig
        return _config(HardwareConfig, self.parameters['hardware_interface'])

    def server_config(self):
        """Return the ServerConfig the policy server node would build from the file."""
        from remote_inference_py.policy_server.config import ServerConfig
        return _config(ServerConfig, self.parameters['policy_server'])

    def executor_parameters(self, mode: str) -> Dict[str, Any]:
        """Return the executor's parameters for ``mode`` (file values plus the mode's)."""
        if mode not in MODES:
            raise ValueError(f'unknown execution mode {mode!r}; choose from {", ".join(MODES)}')
        return {**self.parameters['executor'], **MODES[mode]}

    def executor_config(self, mode: str) -> ExecutorConfig:
        """Return the ExecutorConfig the executor node would build for ``mode``."""
        return _config(ExecutorConfig, self.executor_parameters(mode))

    def executor_settings(self, mode: str) -> NodeSettings:
        """Return the executor node's own settings (deployment, task, ...) for ``mode``."""
        return _config(NodeSettings, self.executor_parameters(mode))


def _config(factory, values: Dict[str, Any]):
    """Build a node's frozen config from a file's values; the declaration's defaults fill in."""
    names = declared(factory)
    return factory(**{name: value for name, value in values.items() if name in names})
