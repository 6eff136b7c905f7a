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
The policy_server node over real DDS serving LeRobot checkpoint folders made by LeRobot.

The installed console script runs in its own process with ``checkpoint:=<folder>``, as in
production; the test node plays the robot (joint states in radians, camera frames, admission,
requests). Each chunk, converted back to the policy's units, must equal LeRobot's own
prediction for the same observation within 1e-3. Bad folders stop the server before it serves
anything, with a named error and exit code 2. Each server start imports LeRobot and torch
(several CPU-seconds), so one ACT server carries every ACT check: a folder saved by LeRobot
0.6, its camera mapped by configuration, frames resized, a wrong encoding named.
"""

import json
import os
import shutil

import lerobot_checkpoints as checkpoints
from node_fixtures import frame, ManualRobot, READY, Robot
import numpy as np
import pytest
from rclpy.duration import Duration
from remote_inference.msg import ObservationFeature
from robot_fixtures import to_policy
from ros_fixtures import NodeProcess
from sensor_msgs.msg import Image as ImageMsg

from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = list(SO101_JOINT_NAMES)
SO101 = 'so101-degrees-gripper-percent-v1'
TOLERANCE = 1e-3        # policy units: degrees, gripper percent
TOP = 'observation.images.top'


def test_a_diffusion_folder_gets_two_observations_from_the_history(processes, ros, tmp_path):
    folder = checkpoints.make_checkpoint(tmp_path / 'diffusion', 'diffusion', 'MIN_MAX')
    node, spinner = ros
    server = processes.console_script(
        'policy_server', node_name='policy_server',
        params={'checkpoint': str(folder), 'fps': 30.0, 'warmup_iterations': 1},
        env=dict(os.environ, **{SEED_VARIABLE: '11'}))
    robot = ManualRobot(ros)
    server.wait_for_output(READY, 60, spinner)
    caps = robot.capabilities()
    assert caps.chunk_length == 8
    session = robot.admit(caps).session_id
    robot.wait_connected()
    older = ([0.1, -0.2, 0.3, 0.4, -0.1, 0.2], frame(2))
    newer = ([0.15, -0.25, 0.35, 0.35, -0.05, 0.3], frame(3))
    start = robot.now()
    robot.publish_at(start, *older)
    spinner.spin_for(0.1)
    later = start + Duration(nanoseconds=33_333_333)     # one action period later
    robot.publish_at(later, *newer)
    spinner.spin_for(0.1)
    robot.request(session, 1, earliest=later)
    chunk = robot.answer(1, timeout=20)
    assert chunk.error == '' and chunk.step_count == 8
    assert chunk.header.stamp.sec * 10**9 + chunk.header.stamp.nanosec == later.nanoseconds
    expected = checkpoints.LeRobotReference(folder).chunk(
        [(to_policy(pose).astype(np.float32), {checkpoints.FRONT: image})
         for pose, image in (older, newer)], seed=11)
    served = to_policy(np.asarray(chunk.positions).reshape(8, 6))
    assert np.abs(served - expected).max() < TOLERANCE


def test_bad_folders_stop_the_server_with_exit_code_2(tmp_path):
    # One folder the loader refuses (the loader's other refusals, processors and joints
    # among them, are named in test_lerobot_runtime.py in-process) and one mapping the node
    # refuses: each a start-up that ends with exit code 2 and the reason.
    act = checkpoints.make_checkpoint(tmp_path / 'act', 'act')
    tdmpc = tmp_path / 'tdmpc'
    shutil.copytree(act, tdmpc)
    config = json.loads((act / 'config.json').read_text())
    (tdmpc / 'config.json').write_text(json.dumps({**config, 'type': 'tdmpc'}))
    cases = {
        'type': ("holds a 'tdmpc' policy, which this server does not serve",
                 {'checkpoint': str(tdmpc)}),
        'camera': ("feature_topics names ['observation.images.wrist'], which the policy does "
                   "not consume (it reads ['observation.images.front'])",
                   {'checkpoint': str(act),
                    'feature_topics': ['observation.images.wrist=cameras/wrist/image_raw']}),
    }
    started = {name: NodeProcess.console_script(
        'policy_server', tmp_path / name, params={**params, 'fps': 30.0, 'warmup_iterations': 1},
        node_name='policy_server') for name, (_, params) in cases.items()}
    try:
        for name, server in started.items():
            assert server.wait(60) == 2, server.output()
            log = server.output()
            assert 'cannot start: ' in log and cases[name][0] in log, log
            assert 'Traceback' not in log and 'Policy server ready' not in log, log
    finally:
        for server in started.values():
            server.stop()


pytestmark = pytest.mark.usefixtures('offline')   # nothing reaches for the Hugging Face Hub


def test_an_act_folder_saved_by_lerobot_0_6_with_a_mapped_camera_serves_640x480_frames(
        processes, ros, tmp_path):
    # Saved by LeRobot 0.4.4, then rewritten as LeRobot 0.6.1 writes it (0.4.4 alone would
    # refuse its config.json); trained with a camera LeRobot called 'top' on 96x64 frames.
    # This robot publishes that camera as cameras/front at the simulated arm's 640x480.
    act = checkpoints.make_checkpoint(tmp_path / 'act', 'act', 'MEAN_STD', cameras=('top',))
    folder = checkpoints.as_lerobot_0_6(act, tmp_path / 'act6')
    node, spinner = ros
    server = processes.console_script('policy_server', node_name='policy_server', params={
        'checkpoint': str(folder), 'fps': 30.0, 'warmup_iterations': 1,
        'feature_topics': [f'{TOP}=cameras/front/image_raw']})
    robot = Robot(ros)
    server.wait_for_output('frames of any size resized to 96x64, torch_bilinear', 60, spinner)
    server.wait_for_output(READY, 60, spinner)
    assert 'dropped pretrained_revision' in server.output()
    caps = robot.capabilities()
    assert caps.chunk_length == 100 and caps.semantics == SO101 and caps.action_rate == 30.0
    assert 'dropped pretrained_revision' in caps.message
    assert [(f.name, list(f.shape), f.topic, f.resizes) for f in caps.features] == [
        ('observation.state', [6], 'joint_states', False),
        (TOP, [64, 96, 3], 'cameras/front/image_raw', True)]

    def offered(shape):
        return [ObservationFeature(name=f.name, shape=list(shape) if f.name == TOP
                                   else f.shape, dtype=f.dtype, kind=f.kind)
                for f in caps.features]
    # A mono camera is refused at admission, by name, before anything moves.
    refused = robot.admit(caps, features=offered((480, 640, 1)))
    assert not refused.success
    assert f"observation feature '{TOP}' channels: server 3, client 1" in refused.message
    session = robot.admit(caps, features=offered((480, 640, 3))).session_id
    robot.positions = [0.3, -0.4, 0.5, 0.2, -0.3, 0.4]
    robot.frame = np.random.default_rng(5).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    robot.wait_connected()
    spinner.spin_for(0.2)
    robot.request(session, 1)
    chunk = robot.answer(1, timeout=20)
    assert chunk.error == '' and chunk.step_count == 100
    server.wait_for_output('640x480 frames resized to 96x64', 10, spinner)
    # LeRobot's own path on the folder it saved: its asynchronous server's resize, then the
    # policy.
    import torch
    from lerobot.async_inference.helpers import resize_robot_observation_image
    reference = checkpoints.LeRobotReference(act)
    small = resize_robot_observation_image(torch.from_numpy(robot.frame), (3, 64, 96))
    expected = reference.chunk([(to_policy(robot.positions).astype(np.float32),
                                 {TOP: small.permute(1, 2, 0).numpy()})])
    served = to_policy(np.asarray(chunk.positions).reshape(100, 6))
    assert np.abs(served - expected).max() < TOLERANCE

    # mono8 frames on the colour camera: the chunk's error names camera, encoding, expected.
    robot.frame = None
    gray = np.full((480, 640), 90, np.uint8)
    start = robot.now()
    for _ in range(5):
        msg = ImageMsg(height=480, width=640, encoding='mono8', step=640, data=gray.tobytes())
        msg.header.stamp = robot.now().to_msg()
        robot.image_pub.publish(msg)
        spinner.spin_for(0.05)
    robot.request(session, 2, earliest=start)
    chunk = robot.answer(2, timeout=20)
    assert chunk.step_count == 0
    assert (f"camera '{TOP}' sent 'mono8' frames, but the feature declares rgb, "
            '3 channels (expected rgb8; to convert them (grey repeated in 3 channels), list '
            "mono8 in the server's convert_encodings parameter" in chunk.error), chunk.error
