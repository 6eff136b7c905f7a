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
The package builds with plain colcon inside another workspace, and ./run's set-up behaves.

Building at the repository root is what ``./run`` does before every test run, so this suite
running at all proves (a); the test below proves (b).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from ros_fixtures import batch_priority

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = pathlib.Path(sys.prefix)


def tracked_files():
    out = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line and (ROOT / line).is_file()]


def test_colcon_build_in_the_src_of_another_workspace(tmp_path):
    workspace = tmp_path / 'ws'
    package = workspace / 'src' / 'remote_inference'
    for name in tracked_files():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, package / name)
    env = os.environ.copy()
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    env['AMENT_PREFIX_PATH'] = str(VENV)
    env['CMAKE_PREFIX_PATH'] = str(VENV)
    # colcon's make gets -j<cores> -l<cores>: beside the other test worker the load average
    # stays above the cores and -l kept the compile to one job at a time (3 min instead of 1).
    env['MAKEFLAGS'] = f'-j{os.cpu_count() or 2}'
    # With ccache, as ./run builds: the interfaces' objects compiled by the set-up's build are
    # reused (paths below each root hashed as relative ones); the configure, the generators,
    # the links and the install all run here as in any build.
    if shutil.which('ccache'):
        env.update(CMAKE_C_COMPILER_LAUNCHER='ccache', CMAKE_CXX_COMPILER_LAUNCHER='ccache',
                   CCACHE_BASEDIR=str(workspace))
    # colcon test runs two files here (the whole suite runs in ./run test).
    result = subprocess.run([str(VENV / 'bin' / 'colcon'), 'build', '--cmake-args',
                             '-DREMOTE_INFERENCE_TESTS=test/pure/test_merge.py;'
                             'test/pure/test_refill.py'],
                            cwd=workspace, env=env, capture_output=True, text=True,
                            preexec_fn=batch_priority)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    install = workspace / 'install' / 'remote_inference'
    assert (install / 'lib' / 'remote_inference' / 'smoke').exists()
    assert (install / 'share' / 'remote_inference' / 'config' / 'fastdds_shm.xml').exists()
    site = install / 'lib' / f'python{sys.version_info[0]}.{sys.version_info[1]}' / \
        'site-packages'
    probe = subprocess.run(
        [sys.executable, '-c',
         'import remote_inference.msg, remote_inference.srv, remote_inference_py;'
         'print(remote_inference_py.__file__)'],
        env={**env, 'PYTHONPATH': str(site)}, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    assert str(workspace) in probe.stdout

    # `colcon test` runs pytest against that install.
    result = subprocess.run([str(VENV / 'bin' / 'colcon'), 'test', '--event-handlers',
                             'console_direct+'], cwd=workspace, env=env,
                            capture_output=True, text=True, preexec_fn=batch_priority)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert 'remote_inference_py' in result.stdout or 'passed' in result.stdout
    results = subprocess.run([str(VENV / 'bin' / 'colcon'), 'test-result', '--all'],
                             cwd=workspace, env=env, capture_output=True, text=True)
    summary = results.stdout.strip().splitlines()[-1]
    tests, errors, failures = (int(re.search(rf'(\d+) {word}', summary).group(1))
                               for word in ('tests', 'errors', 'failures'))
    assert tests > 20 and errors == 0 and failures == 0, results.stdout


def fake_tools(tmp_path, python_version):
    """Return a bin folder with the tools ./run needs, but no cmake and a fake python3."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for tool in ['bash', 'env', 'dirname', 'df', 'awk', 'sha256sum', 'cut', 'find', 'sort',
                 'xargs', 'cat', 'mkdir', 'touch', 'grep', 'rm', 'tail', 'flock', 'ldconfig',
                 'id']:
        path = shutil.which(tool)
        if path:
            (bin_dir / tool).symlink_to(path)
    fake = bin_dir / 'python3'
    fake.write_text(f'#!/bin/sh\necho "Python {python_version}"\n'
                    f'exit {0 if python_version.startswith("3.11") else 1}\n')
    fake.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize('python_version, expected', [
    ('3.9.2', 'Python 3.11 or 3.12 is required'),
])
def test_setup_names_a_missing_python(tmp_path, python_version, expected):
    bin_dir = fake_tools(tmp_path, python_version)
    result = subprocess.run(['bash', str(ROOT / 'run'), 'setup'], capture_output=True,
                            text=True, env={'PATH': str(bin_dir), 'HOME': str(tmp_path),
                                            'RI_VENV': str(tmp_path / 'venv')})
    assert result.returncode != 0
    assert expected in result.stderr
    assert 'Traceback' not in result.stderr


def test_setup_names_missing_cmake(tmp_path):
    bin_dir = fake_tools(tmp_path, '3.11.7')
    (bin_dir / 'python3').unlink()
    (bin_dir / 'python3').symlink_to(sys.executable)
    result = subprocess.run(['bash', str(ROOT / 'run'), 'setup'], capture_output=True,
                            text=True, env={'PATH': str(bin_dir), 'HOME': str(tmp_path),
                                            'RI_VENV': str(tmp_path / 'venv')})
    assert result.returncode != 0
    assert 'cmake is required' in result.stderr
    assert not (tmp_path / 'venv').exists()


def test_rerun_with_nothing_changed_skips_setup():
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    for _ in range(2):  # the first call catches up with any edit; the second has nothing to do
        result = subprocess.run(['bash', str(ROOT / 'run'), 'setup'], capture_output=True,
                                text=True, env=env, cwd=ROOT)
        assert result.returncode == 0, result.stderr
    assert 'creating the virtual environment' not in result.stderr
    assert 'building' not in result.stderr


def test_setup_installs_the_pinned_lerobot_set():
    # ./run installs requirements-lerobot.txt with --no-deps, so CI runs the LeRobot tests.
    from importlib.metadata import version
    pins = [line.split('==') for line in (ROOT / 'requirements-lerobot.txt').read_text()
            .splitlines() if line.strip() and not line.startswith('#')]
    assert ['lerobot', '0.4.4'] in pins
    wrong = {name: (pin, version(name)) for name, pin in pins if version(name) != pin}
    assert not wrong, f'installed versions differ from requirements-lerobot.txt: {wrong}'
    assert version('torch').startswith('2.13.0'), 'the LeRobot set replaced the CPU torch'
