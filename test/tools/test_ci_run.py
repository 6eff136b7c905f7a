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

"""`.ci/run` from a clone anywhere: where it takes the shared tools from (never the real CI).

The shared tools folder is RI_SHARED, else the folder ``shared`` beside the clone's folder.
"""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def clone(tmp_path):
    """Return a clone-like folder under tmp_path: the real .ci/run and a ./run that logs."""
    folder = tmp_path / 'clone'
    (folder / '.ci').mkdir(parents=True)
    shutil.copy(ROOT / '.ci' / 'run', folder / '.ci' / 'run')
    log = tmp_path / 'calls'
    fake_run = folder / 'run'
    fake_run.write_text(f'#!/bin/sh\necho "run $*" >> {log}\n')
    fake_run.chmod(0o755)
    return folder, log


def shared_tools(folder):
    """Make ``folder`` a shared tools folder whose ros2-cli/install logs where it ran from."""
    install = folder / 'ros2-cli' / 'install'
    install.parent.mkdir(parents=True)
    install.write_text(f'#!/bin/sh\necho "install from {folder}" >> "$CALLS"\n')
    install.chmod(0o755)
    return folder


def ci(folder, tmp_path, shared=None):
    env = {'PATH': '/usr/bin:/bin', 'CALLS': str(tmp_path / 'calls')}
    if shared is not None:
        env['RI_SHARED'] = str(shared)
    return subprocess.run(['bash', str(folder / '.ci' / 'run')], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=30)


@pytest.mark.parametrize('shared', [None, 'bogus'])
def test_without_shared_tools_ci_stops_first_naming_both_places(tmp_path, shared):
    folder, log = clone(tmp_path)
    result = ci(folder, tmp_path, None if shared is None else tmp_path / shared)
    assert result.returncode == 2
    named = 'RI_SHARED=(unset)' if shared is None else f'RI_SHARED={tmp_path / shared}'
    assert named in result.stderr, result.stderr
    assert f'nor in {tmp_path}/shared (' in result.stderr, 'the folder beside the clone'
    assert not log.exists(), 'CI went on without the shared tools'


def test_ci_takes_the_shared_tools_from_ri_shared_else_next_to_the_clone(tmp_path):
    folder, log = clone(tmp_path)
    elsewhere = shared_tools(tmp_path / 'elsewhere')
    assert ci(folder, tmp_path, 'elsewhere').returncode == 0   # relative to where CI started
    assert log.read_text().splitlines() == [
        'run setup', f'install from {elsewhere}', 'run test',
        'run test -m (pure or tools) and not any_venv']
    log.unlink()
    beside = shared_tools(tmp_path / 'shared')
    result = ci(folder, tmp_path, 'bogus')
    assert result.returncode == 0
    assert f'RI_SHARED=bogus has no ros2-cli/install; using {beside}' in result.stderr
    assert f'install from {beside}' in log.read_text()
