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
import pathlib
import subprocess
import time

import pyarrow
from pyarrow import parquet
import pytest

from remote_inference_py.evaluation import closed_loop

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_record_train_serve_runs_end_to_end(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    env['HF_HUB_OFFLINE'] = '1'
    # One episode: a second is one more demo run (25 s of CPU) through the same steps; appending
    # to a dataset is test_dataset.py's (the same writer, as lerobot-record --resume appends).
    # A 160x120 camera: the same steps, a ResNet-18 on a sixteenth of the pixels.
    done = subprocess.run([str(ROOT / 'run'), 'loop', '--out', str(tmp_path), '--episodes',
                           '1', '--steps', '2', '--seconds', '4', '--camera', '160x120'],
                          capture_output=True,
                          text=True, env=env,
                          timeout=960)   # a backstop: each step has its own named bound
    assert done.returncode == 0, done.stdout + done.stderr
    info = json.loads((tmp_path / 'dataset' / 'meta' / 'info.json').read_text())
    assert info['total_episodes'] == 1 and info['total_frames'] > 100
    # The expert played the human on the leader arm: its frames are interventions (DAgger).
    files = sorted((tmp_path / 'dataset' / 'data').rglob('*.parquet'))
    rows = pyarrow.concat_tables([parquet.read_table(f) for f in files])
    assert rows.num_rows == info['total_frames'] and all(rows.column('intervention').to_pylist())
    folder = tmp_path / 'train' / 'checkpoints' / 'last' / 'pretrained_model'
    config = json.loads((folder / 'config.json').read_text())
    assert config['type'] == 'act'
    # Trained on the frames as recorded: channels, height, width.
    assert config['input_features']['observation.images.front']['shape'] == [3, 120, 160]
    assert 'closed_loop: served' in done.stdout and 'chunks accepted' in done.stdout
    log = (tmp_path / 'serve' / 'policy_server.log').read_text()
    assert 'act' in log.lower()


def test_a_step_past_its_bound_is_named_and_ended_with_its_processes(tmp_path):
    pid_file = tmp_path / 'grandchild'
    script = ('import subprocess, sys, time; '
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
              f"open({str(pid_file)!r}, 'w').write(str(child.pid)); time.sleep(600)")
    with pytest.raises(RuntimeError, match=r'^hanging step did not end within 2 s'):
        closed_loop.run(['-c', script], 'hanging step', 2.0)
    grandchild = int(pid_file.read_text())
    for _ in range(100):            # the group was killed; the orphan is reaped by init
        if not os.path.exists(f'/proc/{grandchild}') or \
                open(f'/proc/{grandchild}/stat').read().split()[2] == 'Z':
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f'process {grandchild} of the step outlived it')
    with pytest.raises(RuntimeError, match=r'^failing step failed \(exit 3\)'):
        closed_loop.run(['-c', 'raise SystemExit(3)'], 'failing step', 60.0)
