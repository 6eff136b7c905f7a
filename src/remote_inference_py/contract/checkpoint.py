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
What a checkpoint name means, as the launch (on the robot's host) and the policy server read it.

The launch checks a checkpoint before any node starts, possibly on another host than the
server; both must tell a Hugging Face Hub id from a local path the same way, so the rule is
written here once.
"""

import pathlib
import re

TORCH_EXPORT_SUFFIX = '.pt2'
TORCHSCRIPT_SUFFIXES = ('.pt', '.ts', '.jit', '.torchscript')
MODEL_FILE_SUFFIXES = (TORCH_EXPORT_SUFFIX, *TORCHSCRIPT_SUFFIXES)
HUB_ID = re.compile(r'[A-Za-z0-9][\w.-]*/[\w.-]+')


def is_hub_id(checkpoint: str) -> bool:
    """
    Return whether ``checkpoint`` names a Hugging Face Hub repo (``owner/name``).

    It must not exist on this host, have exactly one ``/``, begin with a letter or digit (not
    ``.``, ``/`` or ``~``) and not be a model file name (``run/model.pt2`` that is missing is
    a missing file).
    """
    return (bool(HUB_ID.fullmatch(checkpoint))
            and pathlib.PurePath(checkpoint).suffix not in MODEL_FILE_SUFFIXES
            and not pathlib.Path(checkpoint).exists())
