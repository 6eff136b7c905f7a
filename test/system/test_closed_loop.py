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

"""The loop closed offline: two recorded episodes, ACT trained by LeRobot, served by the demo."""

import json
import os
import subprocess
import sys


def test_record_train_serve_runs_end_to_end(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    env['HF_HUB_OFFLINE'] = '1'
    done = subprocess.run([sys.executable, '-m', 'remote_inference_py.evaluation.closed_loop',
                           '--out', str(tmp_path), '--episodes', '2', '--steps', '2',
                           '--seconds', '4'], capture_output=True, text=True, env=env,
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    info = json.loads((tmp_path / 'dataset' / 'meta' / 'info.json').read_text())
    assert info['total_episodes'] == 2 and info['total_frames'] > 100
    folder = tmp_path / 'train' / 'checkpoints' / 'last' / 'pretrained_model'
    assert json.loads((folder / 'config.json').read_text())['type'] == 'act'
    assert 'closed_loop: served' in done.stdout and 'chunks accepted' in done.stdout
    log = (tmp_path / 'serve' / 'policy_server.log').read_text()
    assert 'act' in log.lower()
