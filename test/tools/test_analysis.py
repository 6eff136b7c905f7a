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

"""Summary, plot and task outcome of recorded runs with known numbers (real bags, no ROS)."""

import subprocess

from ros_fixtures import INSTALL_LIB
from synthetic_runs import NS, RunSpec, write_run

from remote_inference_py.analysis.bag import read_bag
from remote_inference_py.analysis.plot import (
    figure_run, joint_window, OVERVIEW_BINS, seam_events, state_intervals, WINDOW_S)
from remote_inference_py.analysis.summary import (
    format_summary, stamped, start_ns, summarize, turnarounds)


def bunched(period_s):
    """A recorder that takes its messages in bursts, every ``period_s``."""
    period = int(period_s * NS)
    return lambda stamp: period - stamp % period


def receive_gaps(topics):
    """Request-to-chunk gaps as the recorder saw them [s] (what analyze used to report)."""
    sent = {m.request_id: t for t, m in topics['/policy/request']}
    return [(t - sent[m.request_id]) * 1e-9 for t, m in topics['/policy/chunk']]


def test_a_late_recorder_changes_no_number(tmp_path):
    on_time = read_bag(write_run(tmp_path / 'on_time', RunSpec()) and tmp_path / 'on_time')
    write_run(tmp_path / 'late', RunSpec(receive_delay=bunched(3.0)))
    late = read_bag(tmp_path / 'late')
    # The late recorder received most requests together with their chunks.
    assert sum(gap < 0.05 for gap in receive_gaps(late)) >= 3, receive_gaps(late)
    assert all(abs(gap - 0.25) < 1e-3 for gap in receive_gaps(on_time))
    expected, got = summarize(on_time), summarize(late)
    assert got == expected
    assert abs(got.turnaround_p50_s - 0.25) < 1e-6 and abs(got.turnaround_max_s - 0.25) < 1e-6
    assert all(t.from_stamps for t in turnarounds(late))
    assert abs(got.duration_s - 10.0) < 0.05 and got.dispatch_rate_hz == expected.dispatch_rate_hz
    assert start_ns(late) == start_ns(on_time)


def test_a_server_without_timings_falls_back_to_receive_times(tmp_path):
    write_run(tmp_path / 'bag', RunSpec(server_timings=False))
    pairs = turnarounds(read_bag(tmp_path / 'bag'))
    assert pairs and not any(t.from_stamps for t in pairs)
    assert all(abs(t.seconds - 0.25) < 1e-3 for t in pairs)


def test_the_pick_is_judged_from_the_cube_pose(tmp_path):
    write_run(tmp_path / 'picked', RunSpec(lift_m=0.08, lift_at_s=4.0))
    picked = summarize(read_bag(tmp_path / 'picked'))
    # 5 cm is first seen at 4.4 s (10 Hz poses; 4.8 cm at 4.3 s), held long after.
    assert picked.task.success and abs(picked.task.completion_time_s - 4.4) < 1e-6
    assert abs(picked.task.max_lift_m - 0.08) < 1e-9
    assert '| pick the cube | SUCCEEDED in 4.4 s' in format_summary(picked)

    write_run(tmp_path / 'dropped', RunSpec(lift_m=0.03))
    dropped = summarize(read_bag(tmp_path / 'dropped'))
    assert not dropped.task.success and dropped.task.completion_time_s is None
    assert 'FAILED (cube lifted at most 3.0 cm' in format_summary(dropped)

    write_run(tmp_path / 'brief', RunSpec(lift_m=0.08, lift_at_s=8.7, seconds=10.0))
    brief = summarize(read_bag(tmp_path / 'brief'))   # lifted for less than 1 s
    assert not brief.task.success and brief.task.max_lift_m > 0.05

    topics = read_bag(tmp_path / 'picked')
    del topics['/sim/cube_pose']
    assert summarize(topics).task is None and 'pick the cube' not in format_summary(
        summarize(topics))


def test_seams_exclude_the_first_chunk_and_find_the_largest(tmp_path):
    write_run(tmp_path / 'bag', RunSpec(big_seam_chunk=3, big_seam_rad=0.3))
    topics = read_bag(tmp_path / 'bag')
    summary = summarize(topics)
    assert abs(summary.seam_max_rad - 0.3) < 1e-9 and abs(summary.seam_p50_rad - 0.01) < 1e-9
    events = seam_events(topics, start_ns(topics))
    assert [number for _, _, number in events] == list(range(2, summary.chunks_accepted + 1))
    when, size, number = max(events, key=lambda e: e[1])
    ready = [(t.ready_ns - start_ns(topics)) * 1e-9 for t in turnarounds(topics)]
    assert number == 3 and abs(size - 0.3) < 1e-9 and abs(when - ready[2]) < 1e-6


def test_state_intervals_merge_repeated_states():
    class Status:
        def __init__(self, state):
            self.state_name = state
    statuses = [(s * NS, Status(n)) for s, n in
                [(0, 'WAITING'), (1, 'WAITING'), (2, 'RUNNING'), (3, 'RUNNING'), (4, 'WAITING'),
                 (5, 'RUNNING'), (9, 'STOPPING'), (12, 'STOPPED')]]
    assert state_intervals(statuses, 0) == [
        ('WAITING', 0, 2), ('RUNNING', 2, 4), ('WAITING', 4, 5), ('RUNNING', 5, 9),
        ('STOPPING', 9, 12), ('STOPPED', 12, 12)]


def test_the_joint_panel_of_a_long_run_is_a_window_around_its_largest_seam(tmp_path):
    write_run(tmp_path / 'long', RunSpec(seconds=600.0, big_seam_chunk=250, big_seam_rad=0.2))
    topics = read_bag(tmp_path / 'long')
    seams = seam_events(topics, start_ns(topics))
    big = max(seams, key=lambda e: e[1])
    assert big[2] == 250
    start, end = joint_window(-1.0, 600.0, seams)
    assert abs(end - start - WINDOW_S) < 1e-9 and start < big[0] < end

    fig = figure_run(topics, 'long run')
    joints, seam, playback, turnaround, cube = fig.axes[:5]
    assert abs(joints.get_xlim()[0] - start) < 1e-9 and abs(joints.get_xlim()[1] - end) < 1e-9
    assert '0.200 rad, chunk 250' in seam.get_title() and 'elbow_flex' in seam.get_title()
    lo, hi = seam.get_xlim()
    assert hi - lo < 1.5 and lo < big[0] < hi
    # Buffered playback over 600 s: its range and minimum per bin, not 6000 sawtooth points.
    assert len(playback.lines[0].get_xdata()) <= OVERVIEW_BINS and playback.collections
    lowest = playback.lines[0].get_ydata()   # every 2 s bin holds a low point of the sawtooth
    assert abs(min(lowest) - 0.2) < 0.01 and max(lowest) < 0.35
    for overview in (playback, turnaround, cube):   # the whole run below
        assert overview.get_xlim()[0] <= 0.0 and overview.get_xlim()[1] >= 599.0
    # One turnaround point per answered request, from the stamps.
    points = turnaround.lines[0].get_ydata()
    assert len(points) == len(turnarounds(topics)) and all(abs(p - 250) < 1e-3 for p in points)

    short = read_bag(write_run(tmp_path / 'short', RunSpec(seconds=10.0)) and tmp_path / 'short')
    joints = figure_run(short).axes[0]
    stamps = stamped(short['/joint_states'])
    assert joints.get_xlim()[0] <= (stamps[0][0] - start_ns(short)) * 1e-9 + 1e-9
    assert 'whole run' in joints.get_title()


def test_analyze_prints_the_task_and_writes_plot_and_video(tmp_path):
    write_run(tmp_path / 'bag', RunSpec(seconds=3.0, stop_s=0.5, lift_at_s=1.0))
    video = tmp_path / 'run.gif'
    result = subprocess.run([str(INSTALL_LIB / 'analyze'), str(tmp_path / 'bag'), '--video',
                             str(video)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '| pick the cube | SUCCEEDED in 1.4 s' in result.stdout
    assert (tmp_path / 'bag' / 'run.png').read_bytes()[:4] == b'\x89PNG'
    assert video.read_bytes()[:6] == b'GIF89a'


def test_each_video_frame_knows_the_state_the_request_in_flight_and_the_pick(tmp_path):
    from remote_inference_py.analysis.video import Timeline
    write_run(tmp_path / 'bag', RunSpec(turnaround_s=0.25, first_wait_s=0.3, lift_at_s=4.0))
    timeline = Timeline(read_bag(tmp_path / 'bag'))
    assert timeline.start < -0.9 and abs(timeline.end - 9.98) < 0.01
    before = timeline.info(-0.5)
    assert before.state == 'READY' and before.in_flight is None and before.picked_at_s is None
    waiting = timeline.info(0.1)
    assert waiting.state == 'WAITING' and waiting.in_flight[0] == 1
    assert abs(waiting.in_flight[1] - 0.1) < 0.01 and waiting.arrived is None
    arrived = timeline.info(0.35)
    assert arrived.state == 'RUNNING' and arrived.arrived == 1 and arrived.in_flight is None
    second = timeline.info(1.8)   # request 2 left at 1.7 s
    assert second.in_flight[0] == 2 and second.arrived is None
    held = timeline.info(5.0)
    assert abs(held.lift_m - 0.08) < 1e-6 and abs(held.picked_at_s - 4.4) < 1e-6
    assert timeline.info(9.0).state == 'STOPPING'
    assert [span[0] for span in timeline.state_spans()] == [
        'READY', 'WAITING', 'RUNNING', 'STOPPING', 'STOPPED']
    # Joints: the latest sample not after the frame; the cube: interpolated between samples.
    latest = max(i for i, t in enumerate(timeline.joint_t) if t <= 2.015)
    assert 2.015 - timeline.joint_t[latest] < 0.02
    assert timeline.joints_at(2.015) is timeline.joints[latest]
    assert abs(timeline.cube_at(4.25)[2] - (0.02 + 0.08 * 0.5)) < 1e-6


def test_the_video_captions_a_query_from_the_status_the_question_then_the_answer(tmp_path):
    import dataclasses

    import numpy as np

    from remote_inference_py.analysis.video import ANSWER_SHOW_S, decorate, query_lines, Timeline
    question, answer = "is the cube held? (it's red)", 'no: it rests on the table'
    write_run(tmp_path / 'bag', RunSpec(query=(1.95, 2.45, question, answer)))
    timeline = Timeline(read_bag(tmp_path / 'bag'))
    assert timeline.info(1.95).query == ()
    asking = timeline.info(2.05)   # statuses at 10 Hz: the hold's first at 2.0 s
    assert asking.state == 'WAITING' and not asking.answered
    assert asking.query == ('holding: the policy is asked', f'question: {question}')
    answered = timeline.info(2.55)
    assert answered.answered and answered.query == (f'question: {question}',
                                                    f'answer: {answer}')
    assert timeline.info(2.45 + ANSWER_SHOW_S).answered
    assert timeline.info(2.55 + ANSWER_SHOW_S).query == ()
    assert query_lines(timeline) == [f'query at 2.0 s: question {question!r} -> {answer!r}']
    # The caption is drawn: the frame differs where it goes, and only there.
    frame = np.zeros((120, 200, 3), dtype=np.uint8)
    plain = np.asarray(decorate(frame, dataclasses.replace(answered, query=()), timeline))
    captioned = np.asarray(decorate(frame, answered, timeline))
    rows = np.nonzero((plain != captioned).any(axis=(1, 2)))[0]
    assert len(rows) and rows.min() >= 50 and rows.max() < 100, rows


def test_the_video_is_an_animation_of_the_whole_run_and_bad_input_is_named(tmp_path):
    import pytest
    from PIL import Image

    from remote_inference_py.analysis.video import write_video
    write_run(tmp_path / 'bag', RunSpec(seconds=3.0, stop_s=0.5, lift_at_s=1.0))
    topics = read_bag(tmp_path / 'bag')
    path = write_video(topics, tmp_path / 'run.webp', fps=4, width=96, height=72)
    with Image.open(path) as video:
        assert video.format == 'WEBP' and video.is_animated
        assert video.n_frames == len([k for k in range(100) if -1.0 + k / 4 <= 2.98 + 1e-9])
        assert video.size == (96, 72 + 62)
    for bad, words in (({'path': tmp_path / 'run.mp4'}, ['run.mp4', '.webp']),
                       ({'fps': 0}, ['frame rate']), ({'width': 5}, ['5x72']),
                       ({'quality': 0}, ['quality'])):
        arguments = {'path': tmp_path / 'x.webp', 'fps': 4, 'width': 96, 'height': 72, **bad}
        with pytest.raises(ValueError) as error:
            write_video(topics, **arguments)
        assert all(word in str(error.value) for word in words), error.value
    del topics['/joint_states']
    with pytest.raises(ValueError, match='no /joint_states'):
        write_video(topics, tmp_path / 'x.webp')
    with pytest.raises(ValueError, match="camera 'top' is neither 'side' nor a camera"):
        write_video(read_bag(tmp_path / 'bag'), tmp_path / 'x.webp', camera='top')
