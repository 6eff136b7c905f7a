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
LeRobot datasets written by LeRobot's own code from a run: from a real MCAP bag and from the
messages as the live recorder receives them, loaded back with ``LeRobotDataset`` and a torch
DataLoader, the videos decoded and compared with what the camera published; bad folders,
encoder errors, a full disk and a writer that falls behind.
"""

import json
import os
import subprocess

from dataset_runs import (
    capabilities, expected_rows, feed_live, FPS, frame_pixels, PERIOD, SEMANTICS, Spec, T0,
    write_bag)
import numpy as np
import pytest

from remote_inference_py.analysis import dataset_writer
from remote_inference_py.analysis.dataset_bag import bag_events, write_dataset
from remote_inference_py.analysis.dataset_rows import (
    Row, RowBuilder, schema_from_capabilities)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

os.environ['HF_HUB_OFFLINE'] = '1'
REPO = 'local/test_run'


@pytest.fixture(autouse=True)
def _offline(offline):
    """Nothing reaches for the Hub."""


def schema(width=64, fps=30.0, robot_type='so101_follower'):
    return schema_from_capabilities(capabilities(width), SO101_JOINT_NAMES, SEMANTICS, fps,
                                    robot_type)


def radians():
    """The same names and shapes in other units: radians."""
    caps = capabilities()
    caps[0].semantics = 'si-radians-v1'
    return schema_from_capabilities(caps, SO101_JOINT_NAMES, 'si-radians-v1', 30.0,
                                    'so101_follower')


def live_rows(spec=None):
    """Rows from the messages in the order the live recorder receives them."""
    return feed_live(RowBuilder(schema(spec.width if spec else 64)), spec)


def load(folder):
    LeRobotDataset = dataset_writer.import_lerobot_dataset()
    return LeRobotDataset(REPO, root=folder)


def test_a_bag_becomes_a_lerobot_dataset_that_loads_and_iterates(tmp_path):
    import torch
    bag = tmp_path / 'bag'
    write_bag(bag)
    folder = tmp_path / 'dataset'
    writer, builder = write_dataset(bag, folder, REPO)
    assert writer.errors == [] and writer.episodes_saved == 1
    dataset = load(folder)
    expected = expected_rows()
    assert dataset.fps == FPS and dataset.meta.robot_type == 'so101_follower'
    assert dataset.num_episodes == 1 and dataset.num_frames == len(expected)
    assert dataset.meta.video_keys == ['observation.images.front']
    assert dataset.features['observation.state']['shape'] == (6,) or \
        list(dataset.features['observation.state']['shape']) == [6]
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=False, num_workers=0)
    frames = []
    for batch in loader:
        assert batch['observation.images.front'].shape[1:] == (3, 48, 64)
        assert batch['observation.state'].shape[1:] == (6,)
        assert batch['action'].shape[1:] == (6,)
        assert not batch['intervention'].any()   # the policy drove every frame
        for i in range(len(batch['index'])):
            frames.append({key: batch[key][i] for key in batch})
    assert len(frames) == len(expected)
    assert [f['task'] for f in frames] == [task for _, _, task in expected]
    stamps = [float(f['timestamp']) for f in frames]
    np.testing.assert_allclose(stamps, np.arange(len(expected)) / FPS, atol=1e-4)
    # Every decoded video frame is the frame the camera published for its tick, within the
    # codec's loss (AV1 at LeRobot's crf 30 on these smooth gradients).
    errors = []
    for frame, (ns, _, _) in zip(frames, expected):
        published = frame_pixels((ns - T0) // PERIOD).astype(float)
        decoded = frame['observation.images.front'].permute(1, 2, 0).numpy() * 255
        errors.append(np.abs(decoded - published).mean())
    assert max(errors) < 12.0, f'mean abs error per frame up to {max(errors):.1f} / 255'
    # ... and closer to its own frame than to its neighbours' (the right frame, not a near one)
    middle = len(frames) // 2
    own = (expected[middle][0] - T0) // PERIOD
    decoded = frames[middle]['observation.images.front'].permute(1, 2, 0).numpy() * 255
    distances = {k: np.abs(decoded - frame_pixels(k).astype(float)).mean()
                 for k in (own - 2, own - 1, own, own + 1, own + 2)}
    assert min(distances, key=distances.get) == own, distances


def test_the_bag_and_the_live_messages_give_the_same_rows(tmp_path):
    write_bag(tmp_path / 'bag')
    from_bag = [e for e in bag_events(tmp_path / 'bag', RowBuilder(schema()))]
    live = live_rows()
    assert [type(e) for e in from_bag] == [type(e) for e in live]
    for a, b in zip(from_bag, live):
        if isinstance(a, Row):
            assert a.stamp_ns == b.stamp_ns and a.image_stamps == b.image_stamps
            assert a.frame.keys() == b.frame.keys()
            for key in a.frame:
                np.testing.assert_array_equal(a.frame[key], b.frame[key])
        else:
            assert (a.stamp_ns, a.reason) == (b.stamp_ns, b.reason)


def test_an_existing_dataset_of_other_fps_robot_or_features_is_refused_by_name(tmp_path):
    folder = tmp_path / 'dataset'
    write_bag(tmp_path / 'bag')
    write_dataset(tmp_path / 'bag', folder, REPO)
    for other, words in ((schema(fps=15.0), 'fps 30, this run records 15'),
                         (schema(robot_type='koch_follower'), "robot_type 'so101_follower'"),
                         (schema(width=96), "feature 'observation.images.front' has shape"),
                         (radians(), "units .*'action': 'so101-degrees-gripper-percent-v1'")):
        with pytest.raises(dataset_writer.DatasetError, match=words) as error:
            dataset_writer.check_existing(folder, other, REPO)
        assert str(folder) in str(error.value)
    (tmp_path / 'not_a_dataset').mkdir()
    (tmp_path / 'not_a_dataset' / 'notes.txt').write_text('mine')
    with pytest.raises(dataset_writer.DatasetError, match='is not a LeRobot dataset'):
        dataset_writer.check_existing(tmp_path / 'not_a_dataset', schema(), REPO)
    # The same schema appends, as lerobot-record --resume does.
    writer, _ = write_dataset(tmp_path / 'bag', folder, REPO)
    assert writer.errors == []
    dataset = load(folder)
    assert dataset.num_episodes == 2 and dataset.num_frames == 2 * len(expected_rows())


def test_a_dataset_recorded_before_the_intervention_column_is_appended_to_as_before(
        tmp_path):
    import dataclasses
    folder = tmp_path / 'dataset'
    write_bag(tmp_path / 'bag')
    old = dataclasses.replace(schema(), intervention=False)
    dataset = dataset_writer.open_dataset(folder, REPO, old)
    writer = dataset_writer.DatasetWriter(dataset)
    for event in feed_live(RowBuilder(old)):   # rows without the column, as before
        writer.put(event)
    writer.close()
    assert writer.errors == []
    notes = []
    fitted = dataset_writer.as_existing(folder, schema(), notes)
    assert not fitted.intervention and 'intervention' not in fitted.features()
    assert notes == [f"the dataset at {str(folder)!r} has no 'intervention' feature (recorded "
                     'before it existed): appending as before, without the frames a human on '
                     'the leader arm drives']
    assert dataset_writer.check_existing(folder, fitted, REPO)
    assert dataset_writer.as_existing(tmp_path / 'new', schema()) == schema()   # a new one


def test_an_episode_is_saved_on_a_thread_of_its_own_at_a_lower_priority(tmp_path):
    """The priority itself: test/pure/test_dataset_priority.py."""
    import threading
    dataset = dataset_writer.open_dataset(tmp_path / 'dataset', REPO, schema())
    threads = []
    save_episode = dataset.save_episode

    def watched():
        threads.append(threading.current_thread().name)
        return save_episode()
    dataset.save_episode = watched
    writer = dataset_writer.DatasetWriter(dataset)
    for event in live_rows():
        writer.put_waiting(event)
    assert writer.close() == []
    assert threads == ['dataset-save'] and writer.episodes_saved == 1


def test_an_encoder_error_is_named_and_the_dataset_keeps_what_was_written(tmp_path):
    folder = tmp_path / 'dataset'
    logs = []
    dataset = dataset_writer.open_dataset(folder, REPO, schema(), vcodec='h264')
    writer = dataset_writer.DatasetWriter(dataset, log=lambda level, text: logs.append(text))
    for event in live_rows():                 # a good episode first
        writer.put_waiting(event)
    writer.close()
    assert writer.episodes_saved == 1
    # Odd-width frames: h264 (libx264) cannot encode yuv420p at width 65 (a real encoder error).
    odd = dataset_writer.open_dataset(folder, REPO, schema(), vcodec='h264')
    odd.meta.info['features']['observation.images.front']['shape'] = [48, 65, 3]
    odd.meta.features['observation.images.front']['shape'] = (48, 65, 3)
    writer = dataset_writer.DatasetWriter(odd, log=lambda level, text: logs.append(text))
    for event in live_rows(Spec(width=65)):
        writer.put_waiting(event)
    errors = writer.close()
    assert len(errors) == 1 and 'saving episode 1' in errors[0], errors
    assert 'the episode is discarded' in errors[0]
    assert any('dataset: saving episode 1' in line for line in logs)
    dataset = load(folder)
    assert dataset.num_episodes == 1 and dataset.num_frames == len(expected_rows())
    dataset[0]


def test_a_full_disk_is_named_and_the_episode_closed(tmp_path):
    mount = tmp_path / 'small'
    mount.mkdir()
    result = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=400k', 'tmpfs', str(mount)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f'cannot mount a small tmpfs here: {result.stderr.strip()}')
    try:
        logs = []
        dataset = dataset_writer.open_dataset(mount / 'dataset', REPO, schema())
        writer = dataset_writer.DatasetWriter(dataset, log=lambda level, text: logs.append(text))
        for event in live_rows(Spec(stop_s=14.0, end_s=14.5)):
            writer.put_waiting(event)
        errors = writer.close()
        assert errors and 'disk full writing the dataset at' in errors[0], errors
        assert 'adding frame' in errors[0], errors
        assert str(mount / 'dataset') in errors[0]
        assert writer.dropped > 0          # the rows after the error: dropped, counted
    finally:
        subprocess.run(['umount', str(mount)], check=False)


def test_the_writer_never_blocks_the_caller_and_counts_drops(tmp_path):
    import threading
    logs = []
    dataset = dataset_writer.open_dataset(tmp_path / 'dataset', REPO, schema())
    gate = threading.Event()
    add_frame = dataset.add_frame

    def stuck(frame):   # the writer is stuck on its first frame until the test opens it
        assert gate.wait(300)
        return add_frame(frame)
    dataset.add_frame = stuck
    writer = dataset_writer.DatasetWriter(dataset, log=lambda level, text: logs.append(text),
                                          queue_rows=4)
    events = list(live_rows())
    rows = sum(isinstance(event, Row) for event in events)
    for event in events:   # every put returns while the writer cannot take anything
        writer.put(event)
    assert writer.dropped >= rows - 5   # at most the queue and the frame in hand were kept
    gate.set()
    writer.close()
    assert writer.dropped > 0
    assert any(f'{writer.dropped} frames dropped (the writer fell behind' in line
               for line in logs), logs
    dataset = load(tmp_path / 'dataset')
    assert dataset.num_frames == len(expected_rows()) - writer.dropped


def test_analyze_writes_the_dataset(tmp_path):
    from ros_fixtures import INSTALL_LIB
    write_bag(tmp_path / 'bag')
    result = subprocess.run([str(INSTALL_LIB / 'analyze'), str(tmp_path / 'bag'), '--dataset',
                             str(tmp_path / 'dataset')], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert 'episodes, ' in result.stdout and '1 episodes' in result.stdout
    info = json.loads((tmp_path / 'dataset' / 'meta' / 'info.json').read_text())
    assert info['total_frames'] == len(expected_rows()) and info['fps'] == FPS
