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

"""The lanes in a real pytest-xdist run, with every plugin the venv installs.

A small suite in a folder of its own runs on two timed workers and one niced worker under
``LaneScheduling`` (test/lanes.py), as ``./run test`` runs ours. One of its tests kills its
worker. The run must report that test as crashed, by name, and go on: before, the crash
handler of pytest-rerunfailures (installed with colcon-core) read ``sched.config``, which the
scheduler lacked, and the run stopped with an INTERNALERROR.
"""

import os
import pathlib
import subprocess
import sys

import pytest

TEST_DIR = pathlib.Path(__file__).resolve().parents[1]
CRASHING = 'test/tools/test_lint.py::test_kills_its_worker'   # a background lane file

KILLER = """import os


def test_kills_its_worker(request):
    db = getattr(request.config, 'failures_db', None)
    if db is not None:   # a round trip: the controller has this test's rerun count
        db.get_test_reruns(request.node.nodeid)
    os._exit(3)
"""
"""The crashing test. pytest-rerunfailures sends a test's rerun count to the controller
without waiting for it to be stored; a worker that dies at once races that message, and when
the crash is handled first the controller sees 0 reruns and reports the crash as failed without
a rerun (a loaded CI run did). A test that crashes after running a while never races it; a
``get`` on the same connection is answered only after the ``set`` before it is stored."""


def write_suite(folder: pathlib.Path) -> None:
    (folder / 'pytest.ini').write_text('[pytest]\n')
    (folder / 'conftest.py').write_text(
        'import sys\n'
        f'sys.path.insert(0, {str(TEST_DIR)!r})\n'
        'import lanes\n\n\n'
        'def pytest_xdist_make_scheduler(config, log):\n'
        '    return lanes.make_scheduler(config, log)\n')
    for level, text in (('tools', KILLER),
                        ('pure', ''.join(f'def test_{n}():\n    pass\n\n\n' for n in 'abcd'))):
        (folder / 'test' / level).mkdir(parents=True)
        name = 'test_lint.py' if level == 'tools' else 'test_plain.py'
        (folder / 'test' / level / name).write_text(text)


def run_suite(folder: pathlib.Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTEST_')}
    return subprocess.run(
        [sys.executable, '-m', 'pytest', '-p', 'xdist', '--tx', '2*popen',
         '--tx', 'popen//nice=19', '--dist', 'load', '-q', '-p', 'no:cacheprovider', *extra],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize('reruns', [None, '1'])
def test_a_worker_that_dies_is_reported_by_its_test_and_the_run_goes_on(tmp_path, reruns):
    pytest.importorskip('pytest_rerunfailures')   # the plugin whose hook failed
    write_suite(tmp_path)
    result = run_suite(tmp_path, *(['--reruns', reruns] if reruns else []))
    out = result.stdout + result.stderr
    assert 'INTERNALERROR' not in out, out
    assert result.returncode == 1, out
    assert f'crashed while running {CRASHING!r}' in out, out
    assert '4 passed' in out and '1 failed' in out, out
    if reruns:   # rescheduled through mark_test_pending, crashed again, then reported
        assert '1 rerun' in out, out
