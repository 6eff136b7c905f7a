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
The real arm's cameras without a camera: OpenCV reads video files these tests write, and
sources put at the device seam stall, fail or change size. Deadlines only bound waiting.
"""

import threading
import time

from camera_sources import write_video
import numpy as np
import pytest

from remote_inference_py.hardware.cameras import (
    CameraConfig, CameraConfigError, CameraOpenError, CameraReader, CameraSet, CameraSizeError,
    open_opencv, parse_cameras)


class Collector:
    """on_frame that keeps what it was given."""

    def __init__(self, delay_s=0.0):
        self.frames, self.delay_s, self.called_at = [], delay_s, []
        self.event = threading.Event()

    def __call__(self, name, frame, stamp, encoding):
        self.called_at.append(time.monotonic())
        time.sleep(self.delay_s)
        self.frames.append((name, frame, stamp, encoding))
        self.event.set()

    def wait_for(self, count, timeout=10.0):
        deadline = time.monotonic() + timeout
        while len(self.frames) < count:
            assert time.monotonic() < deadline, f'only {len(self.frames)} of {count} frames'
            time.sleep(0.01)


def until(predicate, timeout=10.0, what='condition'):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        time.sleep(0.01)


# ---- configuration ----------------------------------------------------------------------

def test_lerobot_camera_dictionary_is_parsed_with_lerobot_meanings():
    configs = parse_cameras(
        '{ front: {type: opencv, index_or_path: /dev/video4, width: 640, height: 480, fps: 30},'
        ' wrist: {type: opencv, index_or_path: 2, width: 480, height: 640, fps: 15,'
        ' rotation: 90, color_mode: bgr, warmup_s: 0, fourcc: MJPG}}')
    front, wrist = configs
    assert (front.name, front.index_or_path, front.width, front.height, front.fps) == (
        'front', '/dev/video4', 640, 480, 30)
    assert (front.color_mode, front.rotation, front.encoding) == ('rgb', 0, 'rgb8')
    assert front.capture_size == (640, 480)
    assert (wrist.index_or_path, wrist.encoding, wrist.fourcc) == (2, 'bgr8', 'MJPG')
    # width and height are the published frame's: a quarter turn captures them swapped.
    assert wrist.capture_size == (640, 480)
    assert parse_cameras('') == () and parse_cameras('{}') == ()
    json = parse_cameras('{"front": {"type": "opencv", "index_or_path": "0"}}')
    assert json[0].index_or_path == 0 and json[0].capture_size is None


@pytest.mark.parametrize('text, words', [
    ('{front: {index_or_path: 0, widht: 640}}', ["camera 'front'", 'widht']),
    ('{front: {type: intelrealsense, index_or_path: 0}}', ["camera 'front'", 'intelrealsense']),
    ('{front: {index_or_path: 0, rotation: 45}}', ["camera 'front'", 'rotation', '45']),
    ('{front: {index_or_path: 0, width: 640}}', ["camera 'front'", 'width and height']),
    ('{front: {index_or_path: 0, color_mode: yuv}}', ["camera 'front'", 'color_mode']),
    ('{front: {index_or_path: 0, fps: 0}}', ["camera 'front'", 'fps']),
    ('{front: {width: 640, height: 480}}', ["camera 'front'", 'index_or_path is missing']),
    ('{front/left: {index_or_path: 0}}', ["'front/left'", 'topic']),
    ('[0, 1]', ['map camera names']),
    ('{front: {index_or_path: 0}', ['not a YAML/JSON dictionary']),
])
def test_a_bad_camera_setting_is_a_named_error(text, words):
    with pytest.raises(CameraConfigError) as error:
        parse_cameras(text)
    for word in words:
        assert word in str(error.value), str(error.value)


# ---- a video file through OpenCV --------------------------------------------------------

def test_frames_from_a_video_file_are_converted_rotated_and_stamped_at_capture(tmp_path):
    path = write_video(tmp_path / 'front.avi', 64, 48)
    collector = Collector(delay_s=0.02)   # a slow consumer: the stamp must not include it
    cameras = CameraSet([CameraConfig('front', path, 64, 48, 30.0, warmup_s=0)], collector)
    cameras.open()
    try:
        collector.wait_for(8)
    finally:
        assert cameras.close() == []
    name, frame, stamp, encoding = collector.frames[-1]
    assert (name, frame.shape, frame.dtype, encoding) == ('front', (48, 64, 3), np.uint8, 'rgb8')
    assert frame[2, 2, 0] > 200 and frame[2, 2, 2] < 60, 'rgb: red first'
    stamps = [f[2] for f in collector.frames]
    assert stamps == sorted(stamps)
    # Each frame is stamped when it was captured, before its hand-over: never later.
    for (_, _, stamp, _), called in zip(collector.frames, collector.called_at):
        assert stamp <= called
    # A file loops: more frames than it holds come out.
    reader = cameras.readers['front']
    assert reader.problem() == ('', '')


def test_rotation_and_bgr_follow_lerobot(tmp_path):
    path = write_video(tmp_path / 'wrist.avi', 64, 48)
    collector = Collector()
    config = CameraConfig('wrist', path, width=48, height=64, fps=30.0, rotation=90,
                          color_mode='bgr', warmup_s=0)
    cameras = CameraSet([config], collector)
    cameras.open()
    try:
        collector.wait_for(2)
    finally:
        cameras.close()
    _, frame, _, encoding = collector.frames[-1]
    assert frame.shape == (64, 48, 3) and encoding == 'bgr8'
    # Clockwise: the top-left red square ends top-right; bgr keeps red last.
    assert frame[2, 45, 2] > 200 and frame[2, 45, 0] < 60
    assert frame[60, 2, 2] < 150


def test_a_file_plays_at_its_fps_in_a_loop(tmp_path):
    path = write_video(tmp_path / 'short.avi', 32, 24, frames=5)
    collector = Collector()
    cameras = CameraSet([CameraConfig('front', path, 32, 24, 50.0, warmup_s=0)], collector)
    cameras.open()
    try:
        collector.wait_for(12)   # more than the file holds
    finally:
        cameras.close()
    stamps = [f[2] for f in collector.frames]
    gaps = np.diff(stamps)
    assert np.median(gaps) > 0.5 / 50.0, 'frames of a file are paced, not read at once'


def test_a_camera_of_another_size_is_a_named_error_at_start(tmp_path):
    path = write_video(tmp_path / 'small.avi', 64, 48)
    cameras = CameraSet([CameraConfig('front', path, 640, 480, 30.0, warmup_s=0)], Collector())
    with pytest.raises(CameraSizeError) as error:
        cameras.open()
    text = str(error.value)
    assert "camera 'front'" in text and '64x48' in text and '640x480' in text, text


@pytest.mark.parametrize('source, words', [
    ('/nonexistent/video0', ['/nonexistent/video0', 'no such device']),
    (63, ['(63)', 'cannot be opened', 'no such device']),
])
def test_a_camera_that_cannot_be_opened_is_a_named_error(source, words):
    cameras = CameraSet([CameraConfig('front', source, 640, 480, 30.0)], Collector())
    with pytest.raises(CameraOpenError) as error:
        cameras.open()
    for word in ["camera 'front'"] + words:
        assert word in str(error.value), str(error.value)


def test_one_camera_failing_at_start_closes_the_others(tmp_path):
    good = write_video(tmp_path / 'good.avi', 32, 24)
    opened = []

    def tracking(config):
        source = open_opencv(config)
        opened.append(source)
        return source
    cameras = CameraSet([CameraConfig('front', good, 32, 24, 30.0, warmup_s=0),
                         CameraConfig('wrist', '/nonexistent/video9', 32, 24, 30.0)],
                        Collector(), open_source=tracking)
    with pytest.raises(CameraOpenError, match='wrist'):
        cameras.open()
    assert len(opened) == 1 and not opened[0].capture.isOpened()


# ---- sources at the device seam that stall, fail and change size -------------------------

class ScriptedSource:
    """Delivers (h, w) frames; ``block`` makes grab wait, ``fail`` makes it return False."""

    def __init__(self, size=(24, 32)):
        self.size = size
        self.running = threading.Event()
        self.running.set()
        self.fail = False
        self.released = False
        self.grabs = 0

    def grab(self):
        while not self.running.wait(0.05):
            if self.released:
                return False
        time.sleep(0.005)
        self.grabs += 1
        return not self.fail

    def retrieve(self):
        return np.zeros(self.size + (3,), np.uint8)

    def release(self):
        self.released = True


def test_a_stalled_camera_is_reported_and_recovers():
    source = ScriptedSource()
    collector = Collector()
    cameras = CameraSet([CameraConfig('front', 0, 32, 24, 30.0, warmup_s=0)], collector,
                        open_source=lambda config: source, stall_timeout_s=0.2)
    cameras.open()
    try:
        collector.wait_for(3)
        assert cameras.problems() == []
        source.running.clear()                       # the device stops sending
        until(lambda: cameras.problems(), 5, 'the stall to be seen')
        [(name, code, text)] = cameras.problems()
        assert (name, code) == ('front', 'stalled')
        assert "camera 'front' (0) stalled: no frame for" in text
        source.running.set()
        until(lambda: not cameras.problems(), 5, 'frames again')
    finally:
        cameras.close()


def test_an_unplugged_camera_is_reported_and_reopened_when_it_comes_back():
    sources = [ScriptedSource()]
    opens = []

    def open_source(config):
        opens.append(config.name)
        if len(opens) == 2:
            raise CameraOpenError("camera 'front' (0) cannot be opened")   # still unplugged
        if len(opens) > 2:
            sources.append(ScriptedSource())
        return sources[-1]
    collector = Collector()
    cameras = CameraSet([CameraConfig('front', 0, 32, 24, 30.0, warmup_s=0)], collector,
                        open_source=open_source, stall_timeout_s=5.0, reopen_interval_s=0.05)
    cameras.open()
    try:
        collector.wait_for(3)
        sources[0].fail = True                       # unplugged: grab fails
        until(lambda: cameras.problems(), 5, 'the failure to be seen')
        assert cameras.problems()[0][1] == 'disconnected'
        assert 'stopped delivering frames' in cameras.problems()[0][2]
        until(lambda: len(sources) == 2 and not cameras.problems(), 5, 'the camera back')
        assert sources[0].released
        count = len(collector.frames)
        collector.wait_for(count + 3)
        assert cameras.readers['front'].reopened == 1
    finally:
        cameras.close()


def test_frames_of_another_size_mid_run_are_dropped_and_named():
    source = ScriptedSource()
    collector = Collector()
    cameras = CameraSet([CameraConfig('front', 0, 32, 24, 30.0, warmup_s=0)], collector,
                        open_source=lambda config: source, stall_timeout_s=5.0)
    cameras.open()
    try:
        collector.wait_for(2)
        source.size = (48, 64)
        until(lambda: cameras.problems(), 5, 'the size change to be seen')
        [(_, code, text)] = cameras.problems()
        assert code == 'wrong_size' and '64x48' in text and '32x24' in text
        count = len(collector.frames)
        until(lambda: source.grabs > 5 + count, 5, 'more grabs')
        assert all(f[1].shape == (24, 32, 3) for f in collector.frames)
    finally:
        cameras.close()


def test_a_camera_that_opens_but_never_sends_fails_start_up_in_bounded_time(monkeypatch):
    import remote_inference_py.hardware.cameras as cameras_module
    monkeypatch.setattr(cameras_module, 'OPEN_TIMEOUT_S', 0.2)
    source = ScriptedSource()
    source.running.clear()
    reader = CameraReader(CameraConfig('front', 0, 32, 24, 30.0, warmup_s=0), Collector(),
                          open_source=lambda config: source, stall_timeout_s=0.1)
    with pytest.raises(CameraOpenError, match="camera 'front' .* delivered no frame"):
        reader.open()
    source.fail = True
    source.running.set()   # the driver call returns at last: the device is let go
    until(lambda: source.released, 5, 'the abandoned source to be released')
    assert reader.source is None


def test_capture_threads_never_hold_up_the_caller():
    # A camera blocked inside its driver leaves every other thread running: the servo loop
    # of the hardware interface is such a thread.
    source = ScriptedSource()
    cameras = CameraSet([CameraConfig('front', 0, 32, 24, 30.0, warmup_s=0)], Collector(),
                        open_source=lambda config: source, stall_timeout_s=0.1)
    cameras.open()
    source.running.clear()
    ticks = []
    loop = threading.Thread(target=lambda: [ticks.append(time.sleep(0.005)) for _ in range(40)])
    loop.start()
    loop.join(10)
    assert len(ticks) == 40
    until(lambda: cameras.problems(), 5, 'the stall')
    source.released = True   # lets the blocked grab return
    assert cameras.close() == []
