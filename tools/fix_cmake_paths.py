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
Point the ROS wheels' exported CMake files at this venv's Python and numpy headers.

The message wheels were built in a manylinux container and their CMake exports name that
container's include directories (``/opt/python/cp311-cp311/include/python3.11`` and numpy's
``_core/include``). rosidl then fails to build our interfaces. This rewrites those strings to
this interpreter's paths. It is idempotent. Usage: ``python fix_cmake_paths.py VENV_ROOT``.
"""

import pathlib
import re
import sys
import sysconfig

import numpy

PYTHON_INCLUDE = re.compile(r'/opt/python/cp3\d+-cp3\d+/include/python3\.\d+')
NUMPY_INCLUDE = re.compile(
    r'/opt/python/cp3\d+-cp3\d+/lib/python3\.\d+/site-packages/numpy/_core/include')


def fix(prefix):
    """Rewrite the builder's include paths in every CMake file under prefix/share."""
    python_include = sysconfig.get_paths()['include']
    numpy_include = numpy.get_include()
    changed = 0
    for path in pathlib.Path(prefix, 'share').glob('*/cmake/*.cmake'):
        text = path.read_text()
        new = NUMPY_INCLUDE.sub(numpy_include, text)
        new = PYTHON_INCLUDE.sub(python_include, new)
        if new != text:
            path.write_text(new)
            changed += 1
    return changed


def main():
    """Run the fix on the prefix given on the command line."""
    if len(sys.argv) != 2:
        sys.exit('usage: fix_cmake_paths.py VENV_ROOT')
    print(f'fix_cmake_paths: rewrote {fix(sys.argv[1])} CMake file(s)', file=sys.stderr)


if __name__ == '__main__':
    main()
