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

"""The README's main job (``./run demo``) runs the whole simulated system and reports it."""

import os
import subprocess
import sys


def test_demo_runs_the_system_prints_a_summary_and_writes_a_plot(tmp_path):
    out = tmp_path / 'demo'
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    result = subprocess.run(
        [sys.executable, '-m', 'remote_inference_py.demo', '--seconds', '4', '--out', str(out)],
        capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    for row in ('commands sent', 'ticks dispatched / held / starved', 'turnaround p50 / max',
                'seam p50 / max', 'STOPPED'):
        assert row in result.stdout, result.stdout
    starved = int(result.stdout.split('ticks dispatched / held / starved | ')[1].split(' / ')[2]
                  .split(' ')[0])
    assert starved == 0, result.stdout
    assert (out / 'run.png').read_bytes()[:4] == b'\x89PNG'
    assert (out / 'bag' / 'metadata.yaml').exists()
    for node in ('hardware_interface', 'executor', 'policy_server'):
        assert (out / f'{node}.log').exists()
