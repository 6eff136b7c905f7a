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

"""The linters run inside the test suite: flake8 (ament settings), pep257, license headers."""

import pathlib
import subprocess
import sys

from ros_fixtures import batch_priority

ROOT = pathlib.Path(__file__).resolve().parents[2]
PY_DIRS = [d for d in ['src', 'test', 'bench', 'tools', 'launch'] if (ROOT / d).is_dir()]
LICENSE_MARK = 'Licensed under the Apache License, Version 2.0'


def python_files():
    files = []
    for d in PY_DIRS:
        files += sorted((ROOT / d).rglob('*.py'))
    return [f for f in files if '__pycache__' not in f.parts]


def run(args):
    return subprocess.run([sys.executable, '-m'] + args, cwd=ROOT, capture_output=True,
                          text=True, preexec_fn=batch_priority)


def test_flake8_with_ament_settings():
    result = run(['flake8', '--config', '.flake8'] + PY_DIRS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pep257_docstrings_on_public_api():
    # D107: the class docstring documents the constructor (as in ament_pep257).
    result = run(['pydocstyle', '--convention', 'pep257', '--add-ignore', 'D107,D203,D212,D404']
                 + [d for d in PY_DIRS if d in ('src', 'tools', 'launch')])
    assert result.returncode == 0, result.stdout + result.stderr


def test_pep257_in_tests_and_benchmarks_without_mandatory_docstrings():
    result = run(['pydocstyle', '--convention', 'pep257',
                  '--add-ignore', 'D100,D101,D102,D103,D104,D105,D106,D107,D203,D212,D404']
                 + [d for d in PY_DIRS if d in ('test', 'bench')])
    assert result.returncode == 0, result.stdout + result.stderr


def test_license_header_on_every_source_file():
    sources = python_files() + [ROOT / 'CMakeLists.txt', ROOT / 'run', ROOT / '.ci' / 'run']
    missing = [str(f.relative_to(ROOT)) for f in sources
               if LICENSE_MARK not in '\n'.join(f.read_text().splitlines()[:15])]
    assert not missing, f'files without the Apache-2.0 header: {missing}'


def test_the_linters_catch_a_violation(tmp_path):
    bad = tmp_path / 'bad.py'
    bad.write_text('import os\nx = "double quoted and unused import"\n')
    assert run(['flake8', '--config', str(ROOT / '.flake8'), str(bad)]).returncode != 0
    assert run(['pydocstyle', '--convention', 'pep257', str(bad)]).returncode != 0
