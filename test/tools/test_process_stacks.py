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
A process that hangs says where: ``kill -USR1`` prints its stacks, a bounded wait asks first.

The console scripts that start and wait for others (analyze, the demo, evaluate, closed_loop)
ask for the stacks signal first thing in ``main()``, as the nodes do in ``run_node``; a
caller's bounded wait (:func:`communicate_bounded`, used by closed_loop's steps and by the
tests' demo runs) sends it to a child past its bound before it kills it.
"""

import signal
import subprocess
import sys
import textwrap

import pytest

from remote_inference_py import demo
from remote_inference_py.analysis import analyze
from remote_inference_py.common import process
from remote_inference_py.evaluation import cli, closed_loop

HANGS = textwrap.dedent("""
    import time
    from remote_inference_py.common.process import print_stacks_on_request
    print_stacks_on_request()
    print('ready', flush=True)

    def waiting_for_something_that_never_comes():
        time.sleep(600)

    waiting_for_something_that_never_comes()
""")


def start(script):
    return subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_child_past_its_bound_prints_where_it_hung_then_is_killed():
    child = start(HANGS)
    assert child.stdout.readline() == 'ready\n'   # it has asked for the signal
    stdout, stderr, ended = process.communicate_bounded(child, timeout_s=0.2)
    assert not ended and child.returncode == -signal.SIGKILL
    assert 'most recent call first' in stderr, stderr
    assert 'in waiting_for_something_that_never_comes' in stderr, stderr


def test_a_child_that_ends_in_time_gives_its_output_untouched():
    child = start("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    stdout, stderr, ended = process.communicate_bounded(child, timeout_s=60)
    assert ended and child.returncode == 3
    assert (stdout, stderr) == ('out\n', 'err\n')


def test_the_bounded_wait_kills_as_the_caller_says():
    killed = []

    def kill(child):
        killed.append(child.pid)
        child.kill()
    child = start(HANGS)
    assert child.stdout.readline() == 'ready\n'
    process.communicate_bounded(child, timeout_s=0.2, kill=kill)
    assert killed == [child.pid]   # closed_loop ends the child's whole process group


@pytest.mark.parametrize('module', [analyze, demo, cli, closed_loop],
                         ids=lambda m: m.__name__.rsplit('.', 1)[-1])
def test_each_waiting_console_script_asks_for_the_stacks_signal_first(module, monkeypatch):
    asked = []
    monkeypatch.setattr(module, 'print_stacks_on_request', lambda: asked.append(True))
    with pytest.raises(SystemExit) as exit_:
        module.main(['--no-such-option'])   # refused by argparse: after the request or never
    assert exit_.value.code == 2 and asked == [True]
