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
The one gate through which the server imports LeRobot.

It checks the version this package knows, makes torchvision importable on a CPU torch, and
names what to install when LeRobot is missing.

Every module that asks the installed LeRobot something (:mod:`.lerobot_folder`,
:mod:`.lerobot_runtime`, :mod:`.export`) imports it through :func:`import_lerobot`, so none
depends on another having imported it first.
"""

import re
import sys
from typing import Tuple

from remote_inference_py.policy_server.runtimes import RuntimeLoadError

TESTED_VERSION = '0.4.4'
SUPPORTED_SERIES = (0, 4)       # lerobot 0.4.x: import paths and processor files as tested
INSTALL_HINT = ('install it on the server without its declared dependencies, which would pull '
                'a CUDA torch of several GB: `pip install --no-deps -r '
                'requirements-lerobot.txt` from this repository (lerobot==0.4.4 and the exact '
                'set its imports need), next to torch==2.13.0')
_TORCHVISION_SCHEMAS = (
    'nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor',
    'qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor',
)
_torchvision_library = None     # kept alive: the schemas vanish with the Library object


class LeRobotMissing(RuntimeLoadError):
    """The ``lerobot`` package is not installed."""


class LeRobotVersionError(RuntimeLoadError):
    """The installed ``lerobot`` is a version whose layout this runtime does not know."""


def import_torchvision():
    """
    Import torchvision; on a CPU torch with a CUDA torchvision build, declare its ops first.

    torchvision registers Python "fake" kernels for ``torchvision::nms`` and ``qnms`` at import.
    When its compiled library cannot load (a CUDA build next to a CPU torch), those operators
    were never declared and the import fails with ``operator torchvision::nms does not exist``.
    Declaring the two schemas (no kernels) lets the pure-Python parts (the ResNet models that
    ACT and diffusion use) import; calling ``torchvision.ops.nms`` still raises. A torchvision
    whose compiled library loads is imported untouched.
    """
    global _torchvision_library
    try:
        import torchvision
        return torchvision
    except RuntimeError as error:
        if 'torchvision::nms' not in str(error):
            raise
    import torch
    for name in [m for m in sys.modules if m == 'torchvision' or m.startswith('torchvision.')]:
        del sys.modules[name]     # the half-imported package: import it again
    if _torchvision_library is None:
        _torchvision_library = torch.library.Library('torchvision', 'FRAGMENT')
        for schema in _TORCHVISION_SCHEMAS:
            _torchvision_library.define(schema)
    import torchvision
    return torchvision


def parse_version(text: str) -> Tuple[int, ...]:
    """Return the leading numbers of a version string ('0.4.4' -> (0, 4, 4))."""
    numbers = re.match(r'\d+(\.\d+)*', text or '')
    return tuple(int(v) for v in numbers.group(0).split('.')) if numbers else ()


def check_version(version: str) -> None:
    """Raise LeRobotVersionError unless ``version`` is a lerobot 0.4.x."""
    parsed = parse_version(version)
    if parsed[:2] == SUPPORTED_SERIES:
        return
    if parsed and parsed[:2] > SUPPORTED_SERIES:
        raise LeRobotVersionError(
            f'lerobot {version} is installed, but this server serves checkpoints with lerobot '
            f'0.4 (tested {TESTED_VERSION}): lerobot 0.5 and later moved the policy and '
            'processor modules and changed the processor files. Serve the checkpoint from an '
            f'environment with lerobot=={TESTED_VERSION} (`pip install --no-deps -r '
            'requirements-lerobot.txt`), or export it there with export_lerobot and serve the '
            '.pt2 without lerobot')
    raise LeRobotVersionError(
        f'lerobot {version or "(unknown version)"} is installed, but this server needs '
        f'lerobot 0.4 (tested {TESTED_VERSION}): older versions save no policy processors; '
        f'{INSTALL_HINT}')


def import_lerobot(purpose: str = 'serving a LeRobot checkpoint'):
    """Import lerobot lazily; a named error says what to install when it cannot be used."""
    try:
        import_torchvision()
    except ImportError:
        pass                      # lerobot's own import then names what is missing
    try:
        import lerobot
    except ImportError as error:
        raise LeRobotMissing(f'{purpose} needs the `lerobot` package, which is not installed '
                             f'({error}); {INSTALL_HINT}') from None
    version = str(getattr(lerobot, '__version__', '') or '')
    if not version or version == 'unknown':
        try:
            from importlib.metadata import version as installed_version
            version = installed_version('lerobot')
        except Exception:  # noqa: B902 - no metadata: report the version as unknown
            version = ''
    check_version(version)
    return lerobot
