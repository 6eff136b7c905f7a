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
The hardware interface with the real arm's cameras: servos through the byte-level bus
emulator, cameras through OpenCV in the node process reading a video file or a named pipe
this test feeds (:mod:`camera_sources`). Deadlines only bound waiting.
"""

from camera_sources import PipeCamera, write_video
from node_fixtures import at_rest, cameras, JOINTS, params, radians, send, start_arm
import numpy as np
from remote_inference.msg import HardwareInfo, SharedImage
from sensor_msgs.msg import CompressedImage, Image

from remote_inference_py.transport import qos
from remote_inference_py.transport.compressed import decode_jpeg
from remote_inference_py.transport.values import stamp_ns


class Frames:
    """What the node publishes for camera 'front'."""

    def __init__(self, node, compressed=False):
        self.images, self.refs, self.jpegs = [], [], []
        node.create_subscription(Image, 'cameras/front/image_raw', self.images.append,
                                 qos.IMAGES)
        node.create_subscription(SharedImage, 'cameras/front/image_raw/shm', self.refs.append,
                                 qos.IMAGES)
        if compressed:
            node.create_subscription(CompressedImage, 'cameras/front/image_raw/compressed',
                                     self.jpegs.append, qos.IMAGES)


def stamp_s(msg):
    return stamp_ns(msg.header.stamp) * 1e-9


def test_a_video_file_camera_publishes_raw_shared_and_compressed_frames(
        emulator, processes, ros, tmp_path):
    node, spinner = ros
    video = write_video(tmp_path / 'front.avi', 64, 48)
    frames = Frames(node, compressed=True)
    watch, proc, commands = start_arm(processes, ros, emulator,
                                      cameras=cameras(video), jpeg_quality=90)
    proc.wait_for_output(r"cameras: camera 'front' \(.*front.avi\) 64x48 rgb8 -> "
                         r'cameras/front/image_raw', 10, spinner)
    spinner.until(lambda: len(frames.images) >= 5 and len(frames.refs) >= 5
                  and len(frames.jpegs) >= 5, 15, 'frames on every path')
    image = frames.images[-1]
    assert (image.height, image.width, image.encoding, image.header.frame_id) == (
        48, 64, 'rgb8', 'front_camera')
    pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(48, 64, 3)
    assert pixels[2, 2, 0] > 200 and pixels[2, 2, 2] < 60, 'rgb: the red square is red'
    stamps = [stamp_s(m) for m in frames.images]
    assert stamps == sorted(stamps)
    now = node.get_clock().now().nanoseconds * 1e-9
    assert now - 5.0 < stamps[-1] <= now
    jpeg = frames.jpegs[-1]
    assert jpeg.format == 'rgb8; jpeg compressed bgr8' and jpeg.header.frame_id == 'front_camera'
    decoded = decode_jpeg(bytes(jpeg.data))
    assert decoded.shape == (48, 64, 3) and decoded[2, 2, 0] > 180
    assert watch.state() == 'active' and 'camera' not in watch.message()
    info = [m for m in watch.info if isinstance(m, HardwareInfo)][-1]
    assert [(c.topic, list(c.shape), c.dtype, c.kind) for c in info.cameras] == [
        ('cameras/front/image_raw', [48, 64, 3], 'uint8', 'rgb')]
    assert proc.stop() == 0


def test_a_camera_of_another_size_stops_start_up_with_exit_2(emulator, processes, ros, tmp_path):
    video = write_video(tmp_path / 'small.avi', 64, 48)
    proc = processes.console_script('hardware_interface', node_name='hardware_interface',
                                    params=params(emulator, cameras=cameras(video, 640, 480)))
    assert proc.wait(30) == 2
    log = proc.output()
    assert "camera 'front'" in log and 'delivers 64x48 frames but is configured for 640x480' \
        in log, log


def test_a_camera_that_cannot_be_opened_stops_start_up_with_exit_2(emulator, processes, ros):
    proc = processes.console_script(
        'hardware_interface', node_name='hardware_interface',
        params=params(emulator, cameras=cameras('/dev/video_missing')))
    assert proc.wait(30) == 2
    log = proc.output()
    assert "cannot start: configure failed: camera 'front' (/dev/video_missing) cannot be " \
        'opened: no such device or file' in log, log


def test_a_malformed_camera_setting_stops_start_up_with_exit_2(emulator, processes, ros):
    proc = processes.console_script(
        'hardware_interface', node_name='hardware_interface',
        params=params(emulator, cameras='{front: {index_or_path: 0, rotation: 45}}'))
    assert proc.wait(30) == 2
    assert "parameter 'cameras': camera 'front': rotation is 45" in proc.output()


def test_a_stalled_or_unplugged_camera_is_named_and_the_arm_keeps_being_driven(
        emulator, processes, ros, tmp_path):
    node, spinner = ros
    camera = PipeCamera(tmp_path / 'front.y4m', 64, 48)
    try:
        frames = Frames(node)
        watch, proc, commands = start_arm(processes, ros, emulator,
                                          cameras=cameras(camera.path),
                                          camera_stall_timeout_s=0.5)
        spinner.until(lambda: len(frames.refs) >= 3, 15, 'camera frames')
        assert 'camera' not in watch.message()

        camera.pause()
        spinner.until(lambda: 'stalled' in watch.message(), 10, 'the stall on hardware/info')
        assert f"camera 'front' ({camera.path}) stalled: no frame for" in watch.message()
        assert watch.state() == 'active'
        proc.wait_for_output(r"camera fault \[stalled\]: camera 'front'", 5, spinner)
        # The servo loop goes on: fresh joint states, and a command is applied.
        count = len(watch.states)
        spinner.until(lambda: len(watch.states) > count + 10, 5, 'joint_states during stall')
        rest = at_rest(ros, emulator)
        measured = {name: radians(name, rest[name]) for name in JOINTS}
        send(commands, dict(measured, shoulder_pan=measured['shoulder_pan'] + 0.1))
        spinner.until(lambda: watch.applied, 5, 'a command applied during the stall')

        camera.resume()
        count = len(frames.refs)
        spinner.until(lambda: len(frames.refs) > count + 3 and 'camera' not in watch.message(),
                      10, 'frames again and the stall cleared')
        proc.wait_for_output("camera 'front' delivers frames again", 5, spinner)

        camera.unplug()
        spinner.until(lambda: 'stopped delivering frames' in watch.message(), 10,
                      'the unplugged camera on hardware/info')
        assert watch.state() == 'active'
        count = len(watch.states)
        spinner.until(lambda: len(watch.states) > count + 10, 5, 'joint_states after unplug')
        info = [m for m in watch.info if isinstance(m, HardwareInfo)]
        assert all(m.state == 'active' for m in info[-3:])
        assert proc.stop() == 0
    finally:
        camera.close()
