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
``LaneScheduling`` (test/lanes.py), as ``./run test`` runs ours, with the conftest hooks of
ours that it exercises. One of its tests kills its worker each time; another holds the GIL
on its first run, as rclpy does through Fast DDS's deadlock. The run must end each, report
it by name and go on: before, the crash handler of pytest-rerunfailures (installed with
colcon-core) read ``sched.config``, which the scheduler lacked, and the run stopped with an
INTERNALERROR; and a worker stuck holding the GIL hung the run for good (2026-12-07).
"""

import os
import pathlib
import subprocess
import sys

import pytest

TEST_DIR = pathlib.Path(__file__).resolve().parents[1]
CRASHING = 'test/tools/test_lint.py::test_kills_its_worker'   # a background lane file
GIL_HOLDING = 'test/ros/test_gil.py::test_holds_the_gil_once'   # a timed lane file

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


GIL_HOLDER = """import ctypes
import os
import pathlib


def test_holds_the_gil_once():
    first = pathlib.Path(os.environ['SUITE_MARKS']) / 'held'
    if not first.exists():
        first.write_text('once')
        ctypes.PyDLL(None).sleep(600)   # libc's sleep with the GIL held
"""
"""A timed-lane test whose first run holds the GIL for 10 minutes: its worker's watch thread
cannot run, and faulthandler's watchdog (GIL_STALL below) must end the worker."""

GIL_STALL = 2.0


def write_suite(folder: pathlib.Path) -> None:
    (folder / 'pytest.ini').write_text('[pytest]\n')
    (folder / 'conftest.py').write_text(
        'import os\n'
        'import sys\n'
        f'sys.path.insert(0, {str(TEST_DIR)!r})\n'
        'import lanes\n\n'
        f'os.environ[lanes.STACKS_VARIABLE] = {str(folder)!r}\n'
        "if os.environ.get('PYTEST_XDIST_WORKER'):\n"
        f'    lanes.StuckWatch(gil_stall_s={GIL_STALL}).start()\n\n\n'
        'def pytest_xdist_make_scheduler(config, log):\n'
        '    return lanes.make_scheduler(config, log)\n\n\n'
        'def pytest_handlecrashitem(crashitem, report, sched):\n'
        '    lanes.handle_crash(crashitem, report, sched)\n')
    suite = (('tools', 'test_lint.py', KILLER), ('ros', 'test_gil.py', GIL_HOLDER),
             ('pure', 'test_plain.py', ''.join(f'def test_{n}():\n    pass\n\n\n'
                                               for n in 'abcd')))
    for level, name, text in suite:
        (folder / 'test' / level).mkdir(parents=True)
        (folder / 'test' / level / name).write_text(text)


def run_suite(folder: pathlib.Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTEST_')}
    env['SUITE_MARKS'] = str(folder)
    return subprocess.run(
        [sys.executable, '-m', 'pytest', '-p', 'xdist', '--tx', '2*popen',
         '--tx', 'popen//nice=19', '--dist', 'load', '-q', '-p', 'no:cacheprovider', *extra],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize('reruns', [None, '1'])
def test_a_dead_worker_is_named_by_its_test_which_runs_once_more(tmp_path, reruns):
    pytest.importorskip('pytest_rerunfailures')   # the plugin whose hook failed
    write_suite(tmp_path)
    result = run_suite(tmp_path, *(['--reruns', reruns] if reruns else []))
    out = result.stdout + result.stderr
    assert 'INTERNALERROR' not in out, out
    assert result.returncode == 1, out
    # Each crash is rerun once (by lanes.handle_crash, or with --reruns by the plugin): the
    # killer crashed again and failed; the GIL holder, ended by the watchdog, then passed.
    assert f'crashed while running {CRASHING!r}' in out, out
    assert f'crashed while running {GIL_HOLDING!r}' in out, out
    assert '5 passed' in out and '1 failed' in out and '2 rerun' in out, out
    # faulthandler's watchdog named the bound and printed the stuck test's stack.
    assert f'Timeout (0:00:0{GIL_STALL:.0f})!' in out, out
    assert 'in test_holds_the_gil_once' in out, out
    assert out.count('running test/ros/test_gil.py::test_holds_the_gil_once once more') == \
        (0 if reruns else 1), out
