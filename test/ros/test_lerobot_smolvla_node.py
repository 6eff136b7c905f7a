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
A SmolVLA folder (tiny, random weights, built offline) served by the policy_server over DDS.

The installed console script serves ``checkpoint:=<folder>`` with ``HF_HUB_OFFLINE=1``. The
test node plays the robot: chunks for two task texts equal LeRobot's own prediction for each,
and differ. Then, on the simulated arm (MuJoCo, camera at the policy's 64x96), the same server
serves two executors in turn, ``chunk_merge: aligned`` then ``rtc``: both are
admitted and keep the arm running, and the seams (the executor's largest joint jump where a
new chunk takes over) are printed and recorded; they are not compared (see the test). The
executor's ``task`` parameter set live reaches the server in the next requests. The measured
numbers are in docs/lerobot.md.
"""

import os

import lerobot_checkpoints as checkpoints
from node_fixtures import frame, ManualRobot, READY, set_parameter
import numpy as np
import pytest
from remote_inference.msg import ExecutorStatus, InferenceRequest
from robot_fixtures import to_policy

from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
from remote_inference_py.transport import qos

SEMANTICS = 'so101-degrees-gripper-percent-v1'
TOLERANCE = 1e-3        # policy units: degrees, gripper percent
SEED = 13


pytestmark = pytest.mark.usefixtures('offline')   # nothing reaches for the Hugging Face Hub


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    # A small spread keeps a random policy near the mean pose (for the simulated arm).
    # SmolVLA's default chunk of 50 steps (1.7 s at 30 Hz) covers a loaded CPU's turnaround.
    return checkpoints.make_checkpoint(tmp_path_factory.mktemp('smolvla') / 'smolvla',
                                       'smolvla', spread=0.2, chunk_size=50, n_action_steps=50)


def request(robot, session, request_id, task, earliest):
    msg = InferenceRequest(session_id=session, request_id=request_id, task=task)
    msg.header.stamp = robot.now().to_msg()
    msg.earliest_capture_stamp = earliest.to_msg()
    robot.request_pub.publish(msg)


def two_tasks_give_lerobots_two_chunks(ros, server, folder):
    """The test node as the robot: chunks for two task texts equal LeRobot's, and differ."""
    node, spinner = ros
    robot = ManualRobot(ros)
    log = server.output()
    assert 0 <= log.find('warm-up: ') < log.find('Policy server ready'), log
    caps = robot.capabilities()
    assert caps.chunk_length == 50 and 'rtc' in caps.supported_merge_modes
    session = robot.admit(caps).session_id
    robot.wait_connected()
    pose, image = [0.1, -0.2, 0.3, 0.2, -0.1, 0.4], frame(4)
    stamp = robot.now()
    robot.publish_at(stamp, pose, image)
    spinner.spin_for(0.1)
    reference = checkpoints.LeRobotReference(folder)
    chunks = {}
    for request_id, task in enumerate(('pick up the red cube', 'open the top drawer'), 1):
        request(robot, session, request_id, task, stamp)
        answer = robot.answer(request_id, timeout=30)
        assert answer.error == '' and answer.step_count == 50, answer.error
        chunks[task] = to_policy(np.asarray(answer.positions).reshape(50, 6))
        expected = reference.chunk([(to_policy(pose).astype(np.float32),
                                     {checkpoints.FRONT: image})], seed=SEED, task=task)
        assert np.abs(chunks[task] - expected).max() < TOLERANCE, task
    first, second = chunks.values()        # (actions spread over 0.2 standard deviations)
    assert np.abs(first - second).max() > 10 * TOLERANCE


def start_executor(processes, merge):
    return processes.console_script('executor', node_name='executor', params={
        'deployment': 'test', 'semantics': SEMANTICS, 'autostart': True, 'chunk_merge': merge,
        'refill_seconds': 0.2, 'starvation_grace_s': 5.0, 'request_timeout_s': 5.0,
        'admission_timeout_s': 60.0, 'task': 'pick up the red cube'})


def collect_seams(spinner, statuses, merge, record_property, chunks=8):
    """Record the executor's seams over the next ``chunks`` accepted chunks; return them."""
    first = statuses[-1].chunks_accepted if statuses else 0
    spinner.until(lambda: statuses and statuses[-1].chunks_accepted >= first + 2, 90,
                  f'two chunks accepted ({merge})')
    seams = {}

    def collect():
        last = statuses[-1]
        seams[last.chunks_accepted] = last.last_seam_rad
        return last.chunks_accepted >= first + chunks
    spinner.until(collect, 120, f'{chunks} chunks accepted ({merge})')
    values = np.array([seams[k] for k in sorted(seams) if k > first + 2])
    record_property(f'{merge}_seams_rad', values.tolist())
    print(f'{merge}: seams over {len(values)} chunks: median {np.median(values):.4f} rad, '
          f'max {values.max():.4f} rad')
    assert statuses[-1].state_name in ('RUNNING', 'WAITING')
    assert len(values) >= 4
    return values


def test_two_tasks_then_the_simulated_arm_aligned_then_rtc_with_a_task_set_live(
        processes, ros, folder, record_property):
    # One SmolVLA server (loading LeRobot and transformers takes a while) for the test node
    # as the robot, then the simulated arm (camera at 64x96) with two executors in turn,
    # first with chunk_merge aligned, then rtc (a client of the same name replaces the
    # previous session).
    node, spinner = ros
    server = processes.console_script('policy_server', node_name='policy_server', params={
        'checkpoint': str(folder), 'fps': 30.0, 'warmup_iterations': 1, 'deployment': 'test',
        'observation_wait_s': 1.0,       # the simulated camera runs late on a loaded machine
        # Guide past the frozen rows (here about 25: the turnaround of a loaded CPU): LeRobot's
        # default of 10 would leave the row where the executor switches unguided.
        'rtc_execution_horizon': 40},
        env=dict(os.environ, **{SEED_VARIABLE: str(SEED)}))
    server.wait_for_output(READY, 240, spinner)     # loading lerobot takes a while
    two_tasks_give_lerobots_two_chunks(ros, server, folder)

    statuses, requests = [], []
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    node.create_subscription(InferenceRequest, 'policy/request', requests.append, qos.COMMANDS)
    processes.console_script('hardware_interface', node_name='hardware_interface', params={
        'backend': 'sim', 'sim_image_width': 96, 'sim_image_height': 64,
        'share_images': False})

    executor = start_executor(processes, 'aligned')
    collect_seams(spinner, statuses, 'aligned', record_property)
    # The executor's task, set live, reaches the server in the next requests.
    assert {r.task for r in requests} == {'pick up the red cube'}
    result = set_parameter(ros, 'executor', 'task', 'open the top drawer')
    assert result.successful, result.reason
    seen = len(requests)
    accepted = statuses[-1].chunks_accepted
    spinner.until(lambda: statuses[-1].chunks_accepted >= accepted + 2, 60,
                  'two more chunks accepted')
    assert requests[-1].task == 'open the top drawer'
    assert [r.task for r in requests[seen + 1:]] == ['open the top drawer'] * len(
        requests[seen + 1:])
    assert executor.stop(spinner=spinner) == 0

    statuses.clear()
    start_executor(processes, 'rtc')
    collect_seams(spinner, statuses, 'rtc', record_property)
    # Not asserted: rtc's seams against aligned's. Measured here, both medians were 0.258 rad,
    # made of the same recurring jumps (0.2575 and 0.459 rad) in both modes, not explained yet
    # (a clamp between the commanded target and the chunk is suspected); the frozen rows'
    # agreement with the plan is tested in test_lerobot_smolvla.py. docs/lerobot.md: SmolVLA.
