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
``./run demo --dataset``: the live recorder node writes a LeRobot dataset of the run, and
``analyze BAG --dataset`` makes the same rows from the run's bag; a dataset folder of other
features is refused before the arm moves.
"""

import json
import os
import re

import numpy as np
from ros_fixtures import run_module

from remote_inference_py.analysis.bag import read_bag


# A small camera: the recorder writes each frame and encodes the episode's video, which at
# the default 640x480 cost most of these tests' CPU; what they check holds at any size.
WIDTH, HEIGHT = 160, 120
CAMERA = f'{WIDTH}x{HEIGHT}'


def run(module, *args, timeout=300):
    return run_module(module, *args, timeout=timeout, env={**os.environ, 'HF_HUB_OFFLINE': '1'})


def dispatched_ticks(stdout):
    match = re.search(r'^\| ticks dispatched / held / starved \| (\d+) / (\d+) / (\d+) \|$',
                      stdout, re.M)
    assert match, stdout
    return [int(v) for v in match.groups()]


def writer_dropped(stdout):
    """Return the rows the live writer dropped (motion never waits on it: a full queue drops)."""
    match = re.search(r' (\d+) dropped \(the writer fell behind\)', stdout)
    assert match, stdout
    return int(match.group(1))


def late_rows(stdout):
    """Return the rows written before an observation of theirs came (counted, named)."""
    match = re.search(r' (\d+) rows written before an observation of theirs came', stdout)
    assert match, stdout
    return int(match.group(1))


def test_the_demo_records_a_dataset_and_its_bag_converts_to_the_same_rows(tmp_path):
    import torch
    from remote_inference_py.analysis.dataset_writer import import_lerobot_dataset
    live, out = tmp_path / 'live', tmp_path / 'demo'
    # The operator begins the next episode 4 s into the motion (dataset/start_episode).
    result = run('remote_inference_py.demo', '--dataset', str(live), '--repo-id', 'local/pick',
                 '--next-episode', '4', '--camera', CAMERA, '--no-video', '--out', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    dispatched, held, _ = dispatched_ticks(result.stdout)
    assert f'demo: dataset {live}: ' in result.stdout
    assert 'demo: the next episode began at ' in result.stdout, result.stdout
    # One row per dispatched tick (the executor's own count); held ticks are left out. A
    # row the live writer dropped (its queue full on a loaded host) is counted, not hidden.
    dropped = writer_dropped(result.stdout)
    assert f'2 episodes, {dispatched - dropped} frames saved' in result.stdout, result.stdout
    assert f'left out: {held} held or starved ticks' in result.stdout
    late = late_rows(result.stdout)
    from_bag = tmp_path / 'from_bag'
    result = run('remote_inference_py.analysis.analyze', str(out / 'bag'), '--dataset',
                 str(from_bag), '--repo-id', 'local/pick', '--semantics', 'si-radians-v1')
    assert result.returncode == 0, result.stdout + result.stderr
    late += late_rows(result.stdout)
    LeRobotDataset = import_lerobot_dataset()
    a = LeRobotDataset('local/pick', root=live)
    b = LeRobotDataset('local/pick', root=from_bag)
    assert a.fps == b.fps == 30 and a.num_episodes == b.num_episodes == 2   # marks in the bag
    assert a.num_frames + dropped == b.num_frames == dispatched
    assert a.meta.video_keys == ['observation.images.front']
    # The camera's size as rendered (--camera), height first, as LeRobot's own datasets.
    assert list(a.features['observation.images.front']['shape']) == [HEIGHT, WIDTH, 3]
    assert json.loads((live / 'meta' / 'remote_inference.json').read_text())['units'] == {
        'observation.state': 'si-radians-v1', 'action': 'si-radians-v1'}
    rows_a = a.hf_dataset.with_format('numpy')
    rows_b = b.hf_dataset.with_format('numpy')
    for key in ('observation.state', 'action', 'timestamp', 'task_index'):
        if dropped:   # with a dropped row they no longer align one to one
            continue
        live_rows, bag_rows = np.stack(rows_a[key]), np.stack(rows_b[key])
        if key == 'observation.state' and late:
            # A joint state more than the tick's wait behind at the live recorder or at the
            # bag's: the rows written before it came differ, and only those (each counted).
            differ = np.flatnonzero((live_rows != bag_rows).reshape(len(live_rows), -1)
                                    .any(axis=1))
            assert len(differ) <= late, (differ, late)
        else:
            np.testing.assert_array_equal(live_rows, bag_rows, key)
    assert list(a.meta.tasks.index) == ['pick up the cube']
    # The action is what the executor dispatched: the bag's joint_commands while RUNNING.
    bag = read_bag(out / 'bag')
    commands = bag['/joint_commands']
    sent = {tuple(np.round(np.array(m.position, dtype=np.float32), 5)) for _, m in commands}
    assert all(tuple(np.round(v, 5)) in sent for v in np.stack(rows_a['action']))
    # Each status while RUNNING names the request whose chunk drove (the task's source): one
    # the executor sent, later ones as the chunks take over.
    requests = {m.request_id for _, m in bag['/policy/request']}
    named = [m.dispatched_request_id for _, m in bag['/executor/status']
             if m.state_name == 'RUNNING']
    assert len(set(named)) > 1 and set(named) <= requests and named == sorted(named), named
    # Decoded video frames: the live raw frames and the bag's JPEG ones agree within the loss.
    loader = torch.utils.data.DataLoader(a, batch_size=32, shuffle=False)
    batch = next(iter(loader))
    assert batch['observation.images.front'].shape == (32, 3, HEIGHT, WIDTH)
    for index in (0, dispatched // 2, dispatched - 1)[:1 if dropped else 3]:
        difference = (a[index]['observation.images.front']
                      - b[index]['observation.images.front']).abs().mean() * 255
        assert difference < 4.0, (index, float(difference))


def test_a_dataset_of_other_features_is_refused_before_the_arm_moves(tmp_path):
    folder = tmp_path / 'other'
    (folder / 'meta').mkdir(parents=True)
    info = {'codebase_version': 'v3.0', 'robot_type': 'so101_follower', 'fps': 30,
            'features': {'observation.state': {'dtype': 'float32', 'shape': [7],
                                               'names': [f'j{i}' for i in range(7)]},
                         'action': {'dtype': 'float32', 'shape': [7],
                                    'names': [f'j{i}' for i in range(7)]}}}
    (folder / 'meta' / 'info.json').write_text(json.dumps(info))
    out = tmp_path / 'demo'
    result = run('remote_inference_py.demo', '--dataset', str(folder), '--camera', CAMERA,
                 '--no-video', '--out', str(out), '--seconds', '3')
    assert result.returncode != 0
    # The recorder's latched dataset/state says why, and the demo says it and starts nothing.
    said = re.search(r'the system did not start: the dataset recorder refused: (.*)$',
                     result.stderr, re.M)
    assert said and "feature 'action' has shape [7]" in said.group(1), result.stderr
    log = (out / 'dataset_recorder.log').read_text()
    assert f"dataset '{folder}' refused" in log, log
    assert "feature 'action' has shape [7]" in log, log
    commands = read_bag(out / 'bag').get('/joint_commands', [])
    assert commands == [], f'{len(commands)} commands sent: the arm moved'


def test_the_expert_as_the_human_then_the_policy_each_frame_says_who_acted(tmp_path):
    """``./run demo --human --hand-back``: the scripted expert on the leader arm, then the
    policy; the dataset's intervention column is true on the human's frames, then false."""
    from remote_inference_py.analysis.dataset_writer import import_lerobot_dataset
    from remote_inference_py.executor.config import ExecutorConfig
    live, out = tmp_path / 'live', tmp_path / 'demo'
    demo = run('remote_inference_py.demo', '--human', '--hand-back', '5', '--dataset',
               str(live), '--repo-id', 'local/dagger', '--camera', CAMERA, '--no-video',
               '--out', str(out))
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert 'demo: handed back to the policy at ' in demo.stdout
    assert 'the policy drives again from a fresh capture' in demo.stdout
    executor_log = (out / 'executor.log').read_text()
    assert 'the human on the leader arm drives (driver human)' in executor_log
    # The recorder started the executor once a frame had come: the first tick has its frame.
    said = [line for line in (out / 'dataset_recorder.log').read_text().splitlines()
            if 'dataset:' in line or 'recording' in line]   # a tick left out names why
    assert ' 0 before every observation had come' in demo.stdout, (demo.stdout, said)
    a = import_lerobot_dataset()('local/dagger', root=live)
    rows = a.hf_dataset.with_format('numpy')
    human = np.stack(rows['intervention']).reshape(-1).astype(bool)
    # The human's frames first, then the policy's: one switch, each side non-empty.
    assert human[0] and not human[-1]
    assert np.count_nonzero(np.diff(human.astype(int))) == 1, human
    # The follower never jumped while it followed the leader (max_step_rad a tick).
    actions = np.stack(rows['action'])[human]
    assert np.abs(np.diff(actions, axis=0)).max() <= ExecutorConfig().max_step_rad + 1e-5
    # The demo counts the ticks that followed the human from its bag (the same rule).
    followed = re.search(r'held \((\d+) following the human on the leader arm', demo.stdout,
                         re.M)
    assert followed and abs(int(followed.group(1)) - human.sum()) <= 2, demo.stdout
    # The bag gives the same column (analyze BAG --dataset reads driver from the status).
    from_bag = tmp_path / 'from_bag'
    result = run('remote_inference_py.analysis.analyze', str(out / 'bag'), '--dataset',
                 str(from_bag), '--repo-id', 'local/dagger', '--semantics', 'si-radians-v1')
    assert result.returncode == 0, result.stdout + result.stderr
    b = import_lerobot_dataset()('local/dagger', root=from_bag)
    dropped = writer_dropped(demo.stdout)   # a loaded run's live writer may drop (counted)
    assert b.num_frames == len(human) + dropped, (b.num_frames, len(human), dropped)
    if dropped:
        return
    np.testing.assert_array_equal(
        np.stack(b.hf_dataset.with_format('numpy')['intervention']).reshape(-1), human)
