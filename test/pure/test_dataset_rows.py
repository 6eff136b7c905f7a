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

"""The dataset rows of a run: dispatched ticks only, tasks as dispatched, cameras lost."""

from dataset_runs import (
    capabilities, expected_rows, feature, feed_live, FPS, frame_pixels, NS, PERIOD, SEMANTICS,
    Spec, T0, TASK_1, TASK_2)
import numpy as np
import pytest

from remote_inference_py.analysis.dataset_rows import (
    EpisodeEnd, Row, RowBuilder, Schema, schema_from_capabilities, SchemaError, StateFeature)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.robot.units import JointConverter


def schema(width=64, notes=None):
    return schema_from_capabilities(capabilities(width), SO101_JOINT_NAMES, SEMANTICS, 30.0,
                                    'so101_follower', notes=notes)


def build(spec=None, **kwargs):
    """Feed the run's messages, as the live recorder receives them; return events, builder."""
    builder = RowBuilder(schema(), **kwargs)
    return feed_live(builder, spec), builder


def test_schema_is_named_and_shaped_as_the_policy_inputs():
    notes = []
    features = schema(notes=notes).features()
    assert list(features) == ['observation.state', 'observation.images.front', 'action',
                              'intervention']
    assert features['intervention'] == {'dtype': 'bool', 'shape': (1,), 'names': None}
    assert features['observation.state'] == {
        'dtype': 'float32', 'shape': (6,), 'names': [f'{j}.pos' for j in SO101_JOINT_NAMES]}
    assert features['observation.images.front']['shape'] == (48, 64, 3)
    assert features['observation.images.front']['dtype'] == 'video'
    assert features['action']['names'] == [f'{j}.pos' for j in SO101_JOINT_NAMES]
    assert notes == ["'observation.environment_state' (privileged) is not recorded: simulator "
                     'ground truth, which a real robot does not observe']


def test_a_fractional_fps_and_a_foreign_joint_are_refused_by_name():
    with pytest.raises(SchemaError, match=r'fps 29.5'):
        schema_from_capabilities(capabilities(), SO101_JOINT_NAMES, SEMANTICS, 29.5, 'x')
    bad = [feature('observation.state', 'state', [6], ['elbow', *SO101_JOINT_NAMES[1:]])]
    with pytest.raises(ValueError, match=r"'elbow'"):
        schema_from_capabilities(bad, SO101_JOINT_NAMES, SEMANTICS, 30.0, 'x')


def test_rows_are_the_dispatched_ticks_with_the_task_of_their_chunk():
    events, builder = build()
    rows = [e for e in events if isinstance(e, Row)]
    ends = [e for e in events if isinstance(e, EpisodeEnd)]
    expected = expected_rows()
    assert [r.stamp_ns for r in rows] == [ns for ns, _, _ in expected]
    # The subtask's task labels the first tick its chunk drives, not the answer's arrival.
    assert [r.frame['task'] for r in rows] == [task for _, _, task in expected]
    assert {TASK_1, TASK_2} == {r.frame['task'] for r in rows}
    first_new = next(r for r in rows if r.frame['task'] == TASK_2)
    assert first_new.stamp_ns == T0 + round(Spec().subtask_chunk_s * 30) * PERIOD
    converter = JointConverter(SEMANTICS, SO101_JOINT_NAMES)
    for row, (ns, command, _) in zip(rows, expected):
        np.testing.assert_allclose(row.frame['action'], converter.to_policy(command), atol=1e-4)
        assert row.frame['action'].dtype == np.float32
        k = (ns - T0) // PERIOD
        np.testing.assert_array_equal(row.frame['observation.images.front'], frame_pixels(k))
        assert row.frame['observation.state'].shape == (6,)
    # One episode, ended by the return home; the held ticks are left out and counted.
    assert len(ends) == 1 and 'STOPPING' in ends[0].reason and not ends[0].error
    assert builder.counts['episodes'] == 1
    assert builder.counts['held_or_starved'] == 24       # 0.3 s first wait + 0.5 s hold
    assert builder.counts['returning'] == 15


def operator_run(*marks):
    """The run with the operator's (seconds after T0, start) marks; return rows, ends, counts."""
    builder = RowBuilder(schema())
    for seconds, start in marks:
        builder.operator(T0 + round(seconds * NS), start)
    events = feed_live(builder)
    return ([e for e in events if isinstance(e, Row)],
            [e for e in events if isinstance(e, EpisodeEnd)], builder.counts)


def test_the_operator_ends_an_episode_and_starts_the_next_after_a_reset():
    everything = {r.stamp_ns for r in operator_run()[0]}
    end, start = T0 + 30 * PERIOD, T0 + 36 * PERIOD        # while RUNNING (0.5 s to 1.5 s)
    rows, ends, counts = operator_run(((end - T0) / NS, False), ((start - T0) / NS, True))
    stamps = {r.stamp_ns for r in rows}
    # The reset is left out, ticks on the marks included: the end's tick is not recorded,
    # the start's is; every other row is as without the marks.
    assert stamps == {s for s in everything if not end <= s < start}
    assert [e.reason for e in ends][:1] == ['the operator ended it']
    assert ends[0].stamp_ns == end and len(ends) == 2 and 'STOPPING' in ends[1].reason
    assert counts['episodes'] == 2 and counts['between_episodes'] == 6


def test_a_start_while_recording_splits_the_run_into_two_episodes_losing_no_row():
    everything = [r.stamp_ns for r in operator_run()[0]]
    split = T0 + 30 * PERIOD
    rows, ends, counts = operator_run(((split - T0) / NS, True))
    assert [r.stamp_ns for r in rows] == everything
    assert ends[0].reason == 'the operator started the next episode' and ends[0].stamp_ns == split
    assert counts['episodes'] == 2 and counts['between_episodes'] == 0


def test_the_state_is_the_newest_joint_states_before_the_tick():
    events, _ = build()
    row = next(e for e in events if isinstance(e, Row))
    t = (row.stamp_ns - T0) / 1e9
    newest = np.floor(t * 50) / 50           # joint states at 50 Hz, 0.01 rad below the pose
    from dataset_runs import pose
    converter = JointConverter(SEMANTICS, SO101_JOINT_NAMES)
    np.testing.assert_allclose(row.frame['observation.state'],
                               converter.to_policy(pose(newest) - 0.01), atol=1e-4)


def test_a_camera_lost_mid_episode_is_named_and_ends_it():
    events, builder = build(Spec(camera_stops_s=1.0), camera_timeout_s=0.5)
    ends = [e for e in events if isinstance(e, EpisodeEnd)]
    rows = [e for e in events if isinstance(e, Row)]
    assert len(ends) == 1 and ends[0].error
    assert "camera 'front' lost: no frame in 16 ticks (0.5" in ends[0].reason
    # Rows up to the loss, none after (no new episode before the next start).
    assert rows[-1].stamp_ns < ends[0].stamp_ns
    assert all((r.stamp_ns - T0) / 1e9 < 1.55 for r in rows)
    assert builder.counts['episodes'] == 1


@pytest.mark.parametrize('missing, lost', [(14, False), (15, True)])
def test_a_camera_is_lost_after_camera_timeout_s_of_ticks_without_a_frame(missing, lost):
    # camera_timeout_s 0.5 s at 30 fps: 15 ticks. The frames of ticks 18 on are missing while
    # the executor runs: the 15th tick since the last frame (tick 17's) still has a row, the
    # 16th ends the episode.
    first = 18
    events, _ = build(Spec(camera_gap_s=(first / FPS, (first + missing) / FPS)),
                      camera_timeout_s=0.5)
    ends = [e for e in events if isinstance(e, EpisodeEnd) and e.error]
    rows = [e.stamp_ns for e in events if isinstance(e, Row)]
    if lost:
        assert len(ends) == 1 and ends[0].stamp_ns == T0 + (first + 14) * PERIOD
        assert ends[0].reason == "camera 'front' lost: no frame in 16 ticks (0.50 s)"
        assert rows[-1] == T0 + (first + 13) * PERIOD
    else:
        assert not ends and rows == [ns for ns, _, _ in expected_rows()]


def test_a_pause_of_every_process_longer_than_the_camera_timeout_loses_no_camera():
    # A loaded host froze every process at once for about a second (measured up to 1.16 s:
    # the recorder, the camera's renderer, the executor, a bare sampling process): nothing is
    # stamped in the pause, the executor skips the ticks it missed, and the renderer's next
    # frame comes 0.1 s after the first tick. The newest frame is then 1.3 s old, over
    # camera_timeout_s, yet only 4 ticks passed without one: no camera was lost.
    spec = Spec(stop_s=4.0, end_s=4.5, pause_s=(2.2, 3.4), camera_gap_s=(2.2, 3.5))
    events, builder = build(spec, camera_timeout_s=1.0)
    assert not [e for e in events if isinstance(e, EpisodeEnd) and e.error]
    rows = [e for e in events if isinstance(e, Row)]
    assert [r.stamp_ns for r in rows] == [ns for ns, _, _ in expected_rows(spec)]
    first = next(r for r in rows if r.stamp_ns >= T0 + 3.4 * NS)
    assert first.stamp_ns - first.image_stamps['observation.images.front'] > 1.0 * NS
    assert builder.counts['episodes'] == 1


def test_a_camera_late_before_the_episode_delays_it_and_blocks_nothing():
    # On a busy host the renderer's frames may come late at first: the first rows wait for a
    # fresh frame (counted), and the run is recorded from then on.
    events, builder = build(Spec(camera_gap_s=(0.2, 0.8)), camera_timeout_s=0.1)
    rows = [e for e in events if isinstance(e, Row)]
    ends = [e for e in events if isinstance(e, EpisodeEnd)]
    assert rows and not any(e.error for e in ends) and builder.counts['episodes'] == 1
    first = T0 + round(0.8 * FPS) * PERIOD        # the first tick with a frame after the gap
    assert rows[0].stamp_ns == first
    assert [r.stamp_ns for r in rows] == [ns for ns, _, _ in expected_rows() if ns >= first]
    # Frames had come before the gap: too old, not missing from the start.
    assert builder.counts['stale_observation'] == round(0.3 * FPS)   # 0.5 s to 0.8 s
    assert builder.counts['no_observation'] == 0
    # The log says why, once: the stream and its samples around the first tick left out.
    assert builder.notes == [
        "camera 'front': a tick left out (no frame within camera_timeout_s; newest before "
        '-338.3 ms of the tick; 0 rows recorded before it)'], builder.notes


def test_a_frame_too_old_after_a_pause_is_not_counted_as_never_come():
    # A clean-clone run: the recorder had its first frame, then the host paused every process
    # for 2 s and the renderer's next frame came 151 ms after the first tick. That tick is
    # left out (a 2 s old frame is no observation of it), counted as too old: "before every
    # observation had come" is kept for ticks before a stream's very first sample.
    events, builder = build(Spec(pause_s=(0.3, 2.4), camera_gap_s=(0.3, 2.55)))
    rows = [e for e in events if isinstance(e, Row)]
    resumed, first_frame = 72, 77                  # ticks: 2.4 s, the first at or after 2.55 s
    assert rows and rows[0].stamp_ns == T0 + first_frame * PERIOD
    assert builder.counts['stale_observation'] == first_frame - resumed
    assert builder.counts['no_observation'] == 0
    # The first tick's joint state was let go too (nothing is stamped during the pause).
    joints, camera = builder.notes
    assert joints.startswith('joint_states: a tick left out (its sample was let go; newest '
                             'before -2120.0 ms'), joints
    assert camera.startswith("camera 'front': a tick left out (its frame was let go; newest "
                             'before -2171.7 ms, next +128.3 ms'), camera


def test_ticks_before_a_streams_first_sample_are_counted_as_never_come():
    events, builder = build(Spec(camera_gap_s=(0.0, 0.8)), camera_timeout_s=0.1)
    rows = [e for e in events if isinstance(e, Row)]
    assert rows[0].stamp_ns == T0 + round(0.8 * FPS) * PERIOD
    assert builder.counts['no_observation'] == round(0.3 * FPS)   # RUNNING from 0.5 s
    assert builder.counts['stale_observation'] == 0


@pytest.mark.parametrize('lag_s, awaited', [(0.9, True), (1.1, False)])
def test_frames_delivered_late_are_awaited_up_to_the_camera_timeout(lag_s, awaited):
    # A busy host delivered the live recorder's frames over a second late while the bag had
    # them: ticks were settled 8 ticks on, before their frames came. A tick now waits up to
    # camera_timeout_s (1 s) for a later frame: just inside, every row has its own frame, as
    # from the bag; just outside, a row settles with the newest frame it has, an older one.
    events, builder = build(Spec(camera_lag_s=lag_s))
    rows = [e for e in events if isinstance(e, Row)]
    assert [r.stamp_ns for r in rows] == [ns for ns, _, _ in expected_rows()]
    own = [np.array_equal(r.frame['observation.images.front'],
                          frame_pixels((r.stamp_ns - T0) // PERIOD)) for r in rows]
    assert all(own) if awaited else not all(own)
    assert not any(e.error for e in events if isinstance(e, EpisodeEnd))
    # Each row written before its own frame came is counted (and the first named).
    assert builder.counts['late_observation'] == own.count(False)
    assert any(n.startswith("camera 'front': a sample came") for n in builder.notes) \
        != awaited, builder.notes


@pytest.mark.parametrize('lag_s, late', [(0.9, 0), (1.1, 4)])
def test_rows_written_before_their_joint_states_came_are_counted(lag_s, late):
    # A loaded host delivered 0.1 s of joint states (5 samples, and those behind them) lag_s
    # late to the live recorder while its commands came on time. Just inside the tick's
    # wait (1 s), every row has its own sample; just outside, the 4 ticks up to the first
    # sample on time were written with the sample before: each is counted, the first
    # named, so a bag that had them in time differs from the live dataset in those rows only.
    events, builder = build(Spec(joint_states_lag=(2.0, 2.1, lag_s)))
    on_time, _ = build()
    rows = [e for e in events if isinstance(e, Row)]
    own = [e for e in on_time if isinstance(e, Row)]
    assert [r.stamp_ns for r in rows] == [r.stamp_ns for r in own]
    differ = [not np.array_equal(r.frame['observation.state'], o.frame['observation.state'])
              for r, o in zip(rows, own)]
    assert builder.counts['late_observation'] == differ.count(True) == late
    assert any(n.startswith('joint_states: a sample came') for n in builder.notes) == bool(late)


def test_every_declared_camera_is_recorded_at_its_published_size():
    # The policy reads the front camera (resized by the server); the hardware also has a
    # wrist camera the policy does not consume: lerobot-record records both.
    declared = schema_from_capabilities(
        capabilities(), SO101_JOINT_NAMES, SEMANTICS, 30.0, 'so101_follower',
        camera_shapes={'front': [480, 640, 3], 'wrist': [240, 320, 3], 'depth': [48, 64, 1]})
    assert [(c.key, c.shape) for c in declared.cameras] == [
        ('observation.images.front', (480, 640, 3)),
        ('observation.images.wrist', (240, 320, 3))]


def test_frames_of_another_size_are_left_out_and_named():
    builder = RowBuilder(schema())
    builder.image('front', T0, np.zeros((480, 640, 3), np.uint8))
    assert builder.notes == ["camera 'front' published a (480, 640, 3) frame; the dataset "
                             'records (48, 64, 3): frame left out']


def human_run(builder):
    """Ticks 0-9 the policy drives; 10-19 the human (the leader fails at 15-16); 20-29 the
    policy again, held until a fresh chunk. Return the events."""
    events = []
    for k in range(30):
        ns = T0 + k * PERIOD
        events += builder.joint_state(ns - 1000, SO101_JOINT_NAMES, [0.01 * k] * 6)
        events += builder.command(ns, SO101_JOINT_NAMES, [0.01 * k] * 6)
        human = 10 <= k < 20
        fault = 'leader fault: leader motor silent: elbow_flex' if k in (15, 16) else ''
        state = 'RUNNING' if k < 10 else 'WAITING'
        events += builder.status(ns + 1000, state, '', 'human' if human else 'policy',
                                 fault if human else '')
    return events + builder.finish()


def state_only_schema(intervention=True):
    return Schema(30, 'so101_follower', (StateFeature('observation.state', SO101_JOINT_NAMES,
                                                      SEMANTICS),), (), SO101_JOINT_NAMES,
                  SEMANTICS, intervention=intervention)


def test_each_frame_says_who_acted_and_the_human_s_held_ticks_are_left_out():
    builder = RowBuilder(state_only_schema())
    rows = [e for e in human_run(builder) if isinstance(e, Row)]
    ticks = [(r.stamp_ns - T0) // PERIOD for r in rows]
    assert ticks == [*range(10), *range(10, 15), *range(17, 20)]
    assert [bool(r.frame['intervention'][0]) for r in rows] == [False] * 10 + [True] * 8
    assert all(r.frame['intervention'].dtype == np.bool_ and r.frame['intervention'].shape == (1,)
               for r in rows)
    converter = JointConverter(SEMANTICS, SO101_JOINT_NAMES)   # action: the target sent
    np.testing.assert_allclose(rows[12].frame['action'],
                               converter.to_policy(np.full(6, 0.01 * 12)), atol=1e-4)
    assert builder.counts['intervention'] == 8
    assert builder.counts['held_or_starved'] == 12   # 2 leader-fault holds, 10 after hand-back


def test_a_dataset_without_the_intervention_column_gets_the_policy_s_frames_as_before():
    builder = RowBuilder(state_only_schema(intervention=False))
    rows = [e for e in human_run(builder) if isinstance(e, Row)]
    assert [(r.stamp_ns - T0) // PERIOD for r in rows] == list(range(10))
    assert 'intervention' not in rows[0].frame
    assert 'intervention' not in state_only_schema(False).features()
    assert builder.counts['human_left_out'] == 8


def relabel_run(builder, named):
    """Ticks 0-29 RUNNING. Request 1 ('pick') drives from tick 0; request 2 ('place') lands
    at tick 8 and drives from tick 11 (rtc's frozen steps: the plan before it runs first);
    request 3, sent before the task changed, lands at tick 15 and is dropped (stale). With
    `named` the status names the dispatched request, as the executor does; without, as an
    older executor. Return the rows' tasks by tick."""
    events = builder.request('s', 1, 'pick') + builder.request('s', 3, 'pick')
    events += builder.request('s', 2, 'place')
    for k in range(30):
        ns = T0 + k * PERIOD
        for arrives, request_id in ((0, 1), (8, 2), (15, 3)):
            if k == arrives:
                events += builder.chunk('s', request_id)
        events += builder.joint_state(ns - 1000, SO101_JOINT_NAMES, [0.01 * k] * 6)
        events += builder.command(ns, SO101_JOINT_NAMES, [0.01 * k] * 6)
        dispatched = (1 if k < 11 else 2) if named else 0
        events += builder.status(ns + 1000, 'RUNNING', '', 'policy', '', 's' if named else '',
                                 dispatched)
    rows = [e for e in events + builder.finish() if isinstance(e, Row)]
    return {(r.stamp_ns - T0) // PERIOD: r.frame['task'] for r in rows}


def test_a_frame_s_task_is_that_of_the_chunk_the_status_names_not_of_the_last_received():
    tasks = relabel_run(RowBuilder(state_only_schema()), named=True)
    assert tasks == {k: 'pick' if k < 11 else 'place' for k in range(30)}


def test_from_an_older_executor_the_task_is_that_of_the_last_chunk_received_as_before():
    tasks = relabel_run(RowBuilder(state_only_schema()), named=False)
    assert tasks == {k: 'pick' if k < 8 or k >= 15 else 'place' for k in range(30)}
