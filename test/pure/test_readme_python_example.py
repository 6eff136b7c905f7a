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

"""Run the 'Use the executor core from Python' example of docs/executor.md and check it."""

from pathlib import Path
import re

import numpy as np

from remote_inference_py.executor.core import State

PAGE_PATH = Path(__file__).resolve().parents[2] / 'docs' / 'executor.md'
SECTION = '## Use the executor core from Python'


def example_code():
    text = PAGE_PATH.read_text()
    section = text[text.index(SECTION):]
    return re.search(r'```python\n(.*?)```', section, re.DOTALL).group(1)


def test_docs_example_runs_and_stops_at_the_initial_pose(capsys):
    namespace = {'__name__': 'docs_example'}
    exec(compile(example_code(), str(PAGE_PATH), 'exec'), namespace)
    printed = capsys.readouterr().out
    stats = namespace['stats']
    assert stats.state == State.STOPPED
    assert namespace['core'].is_terminal
    assert stats.chunks_accepted == stats.requests >= 3
    assert stats.chunks_dropped == 0
    assert stats.starved_ticks == 0
    assert stats.p50_turnaround_s > 0.1
    np.testing.assert_allclose(namespace['robot'].pose, np.zeros(6))
    assert 'STOPPED: ' in printed
    assert 'resumed after' in printed
