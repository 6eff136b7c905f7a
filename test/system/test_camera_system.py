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
The real arm's configuration (config/so101_feetech.yaml) end to end with a camera: servos
through the byte-level bus emulator, the camera a named pipe OpenCV reads in the hardware
interface, the demo policy looking at that camera through JPEG frames, the executor, and the
recorder with ``record_images``. Then the camera stalls mid-run.
"""

import pathlib
import subprocess

from camera_sources import PipeCamera
from node_fixtures import cameras
from PIL import Image
from remote_inference.msg import ExecutorStatus, HardwareInfo
from robot_fixtures import EXAMPLE
from ros_fixtures import INSTALL_LIB
from sensor_msgs.msg import JointState

from remote_inference_py import bringup
from remote_inference_py.analysis.bag import read_bag
from remote_inference_py.transport import qos

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / 'config' / 'so101_feetech.yaml'


def test_a_camera_policy_runs_on_the_real_arm_config_and_a_stalled_camera_faults_cleanly(
        emulator, processes, ros, tmp_path):
    node, spinner = ros
    camera = PipeCamera(tmp_path / 'front.y4m', 64, 48)
    statuses, states, infos = [], [], []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    node.create_subscription(JointState, 'joint_states', states.append, qos.JOINT_STATES)
    node.create_subscription(HardwareInfo, 'hardware/info', infos.append, qos.LATCHED)
    bag = tmp_path / 'bag'
    overrides = {
        'hardware_interface': {'calibration_file': EXAMPLE,
                               'camera_stall_timeout_s': 0.5},
        'policy_server': {'demo_cameras': ['front'], 'demo_image_size': [48, 64],
                          'observation_wait_s': 0.3},
        # The emulated gripper rests just below the config's gripper limit: widen them all.
        'executor': {'autostart': True, 'starvation_grace_s': 1.0, 'return_speed_rad_s': 1.0,
                     'joint_lower_limits': [-3.0] * 6, 'joint_upper_limits': [3.0] * 6},
        'recorder': {},
    }
    procs = {}
    try:
        plan = bringup.plan(backend='feetech', port=emulator.port, share_dir=str(ROOT),
                            config_file=str(CONFIG), cameras=cameras(camera.path),
                            image_transport='compressed', record=True, bag_dir=str(bag),
                            record_images=True)
        for spec in plan:
            procs[spec.name] = processes.console_script(
                spec.executable, node_name=spec.name,
                params=str(CONFIG) if spec.params_file else None,
                ros_args=bringup.param_args({**spec.overrides, **overrides[spec.name]}))
        spinner.until(lambda: statuses and statuses[-1].state_name == 'RUNNING'
                      and statuses[-1].chunks_accepted >= 3, 90, 'the arm moving on chunks')
        server = procs['policy_server'].output()
        assert 'cameras/front/image_raw/compressed -> observation.images.front' in server
        procs['recorder'].wait_for_output('recording /cameras/front/image_raw/compressed', 10,
                                          spinner)

        camera.pause()   # the camera stalls mid-run
        spinner.until(lambda: infos and 'stalled' in infos[-1].message, 10,
                      'the stall on hardware/info')
        assert infos[-1].state == 'active'
        procs['executor'].wait_for_output(r'not served: stale observation: ', 15, spinner)
        spinner.until(lambda: statuses[-1].state_name == 'FAULT'
                      or procs['executor'].proc.poll() is not None, 20, 'the executor fault')
        assert procs['executor'].wait(30) != 0
        executor_log = procs['executor'].output()
        assert 'starved' in executor_log and 'grace' in executor_log, executor_log
        assert any(s.state_name == 'WAITING' for s in statuses), 'held before the fault'
        # The servo loop never stopped: joint states kept coming through the stall.
        count = len(states)
        spinner.until(lambda: len(states) > count + 10, 5, 'joint_states after the fault')
        assert procs['hardware_interface'].proc.poll() is None
        assert procs['hardware_interface'].stop(spinner=spinner) == 0
        assert procs['recorder'].stop(spinner=spinner) == 0
    finally:
        camera.close()

    topics = read_bag(bag)
    frames = topics['/cameras/front/image_raw/compressed']
    assert len(frames) >= 5 and frames[0][1].format == 'rgb8; jpeg compressed bgr8'
    result = subprocess.run([str(INSTALL_LIB / 'analyze'), str(bag), '--frames', 'both'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    sheet = bag / 'frames_front.png'
    assert f'frames: {sheet}' in result.stdout and (bag / 'frames_front.mp4').stat().st_size
    with Image.open(sheet) as image:
        assert image.height > 100
