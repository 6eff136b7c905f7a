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
A whole-system run with a LeRobot ACT folder as the checkpoint on the simulated SO-101.

The three real nodes run as processes over DDS, started from the bringup table with
``checkpoint=<folder>`` and the shipped config/so101_sim.yaml (plus the folder's frame rate,
which LeRobot does not record, and a small camera). The ACT was built and saved by LeRobot
(random weights, chunk_size 100, n_action_steps 50, camera at the simulator's 48x64); its
statistics keep its actions near a mean pose away from the start, so the arm visibly moves.
"""

import pathlib

import lerobot_checkpoints as checkpoints
import numpy as np
import pytest
from remote_inference.msg import ExecutorStatus
from sensor_msgs.msg import JointState

from remote_inference_py import bringup
from remote_inference_py.analysis.summary import joint_vector
from remote_inference_py.common import qos

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config' / 'so101_sim.yaml'
SMALL_CAMERA = {'sim_image_width': 64, 'sim_image_height': 48, 'sim_camera_rate_hz': 15.0}
pytestmark = pytest.mark.slow


def test_a_lerobot_act_folder_moves_the_simulated_arm_without_starving(processes, ros,
                                                                       tmp_path, monkeypatch):
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    folder = checkpoints.make_checkpoint(tmp_path / 'act', 'act', image_shape=(3, 48, 64),
                                         spread=0.2)
    node, spinner = ros
    statuses, commands = [], []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    node.create_subscription(JointState, 'joint_commands',
                             lambda m: commands.append(joint_vector(m)), qos.COMMANDS)
    overrides = {'hardware_interface': SMALL_CAMERA,
                 'policy_server': {'fps': 30.0, 'warmup_iterations': 1},
                 # 100-step chunks (3.3 s): ask 1 s ahead, margin for a loaded 2-core host
                 'executor': {'autostart': True, 'refill_seconds': 1.0}}
    procs = {}
    for spec in bringup.plan(share_dir=str(ROOT), config_file=str(CONFIG),
                             checkpoint=str(folder)):
        procs[spec.name] = processes.console_script(
            spec.executable, node_name=spec.name, params=str(CONFIG),
            ros_args=bringup.param_args({**spec.overrides, **overrides[spec.name]}))
    assert procs['policy_server'].wait_for_output(
        r"policy 'act' from .* loaded .* chunk_length=100/100", 60, spinner)

    spinner.until(lambda: statuses and statuses[-1].chunks_accepted >= 2, 60, 'two chunks')
    first = statuses[-1]
    spinner.spin_for(8.0)          # 100-step chunks: a request about every 3 s
    last = statuses[-1]
    assert last.state_name == 'RUNNING', last.message
    assert last.starved_ticks == first.starved_ticks == 0
    assert last.chunks_accepted - first.chunks_accepted >= 2
    assert last.chunks_dropped == 0, last.last_drop_reason
    assert (last.dispatched_ticks - first.dispatched_ticks) / 8.0 > 25.0
    # The real turnaround of a served LeRobot ACT: measured, not injected.
    assert 0.0 < last.p50_turnaround_s < 1.0 and last.max_turnaround_s < 2.0
    moved = np.ptp(np.array(commands), axis=0).max()
    assert moved > 0.05, f'the LeRobot policy did not move the arm ({moved:.3f} rad)'
    assert procs['executor'].stop(spinner=spinner) == 0
