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

"""The policy server core without ROS: slots, waiting, batching, errors, units."""

import math

from core_fixtures import admit, jpeg, make_server, serve_one
import numpy as np
import pytest

from remote_inference_py.contract.check import FeatureDeclaration
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import (
    INFERENCE, OUTPUT, PolicyServerCore, REFUSED, Request, SUPERSEDED)
from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.policy_server.images import CompressedImage, RawImage
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import PolicyRuntime
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = list(SO101_JOINT_NAMES)
SO101 = 'so101-degrees-gripper-percent-v1'
MS = 1_000_000


def test_a_request_is_answered_with_an_si_chunk_stamped_with_its_capture():
    core = make_server(chunk_length=30)
    session = admit(core)
    core.on_joint_states('', 1000 * MS, JOINTS, [0.1] * 6)
    assert core.on_request(Request('', session, 7, 900 * MS)) == []     # queued
    [answer] = serve_one(core)
    assert answer.error == '' and answer.request_id == 7 and answer.session_id == session
    assert answer.capture_stamp_ns == 1000 * MS
    assert answer.joint_names == tuple(JOINTS) and answer.step_period == pytest.approx(1 / 30)
    assert answer.positions.shape == (30, 6) and answer.positions.dtype == np.float32
    assert np.abs(answer.positions[0] - 0.1).max() < 0.06      # SI radians, near the pose
    timings = answer.timings
    assert timings.preprocess_ms >= 0 and timings.inference_ms > 0 and timings.queue_wait_ms >= 0
    assert answer.batch_size == 1


def test_only_samples_captured_at_or_after_the_earliest_stamp_are_used():
    core = make_server(observation_wait_s=5.0)
    session = admit(core)
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 150 * MS))
    assert not core.take_work()              # waits for a newer sample
    core.on_joint_states('', 140 * MS, JOINTS, [0.0] * 6)
    assert not core.take_work()
    core.on_joint_states('', 150 * MS, JOINTS, [0.2] * 6)
    [answer] = serve_one(core)
    assert answer.capture_stamp_ns == 150 * MS


def test_no_usable_observation_in_time_is_an_error_naming_the_stream():
    core = make_server(observation_wait_s=0.05)
    session = admit(core)
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 200 * MS))
    [answer] = serve_one(core)
    assert answer.positions is None
    assert 'no usable observation within observation_wait_s=0.05 s' in answer.error
    assert 'no joint_states sample captured at or after the earliest capture stamp' \
        in answer.error
    assert answer.error.startswith('stale observation: '), answer.error
    assert core.stats.failures == {'observation': 1}


def test_a_stream_that_never_delivered_is_a_missing_observation_not_a_stale_one():
    core = make_server(observation_wait_s=0.05)
    session = admit(core)
    core.on_request(Request('', session, 1, 200 * MS))
    [answer] = serve_one(core)
    assert answer.positions is None
    assert answer.error.startswith('missing observation: '), answer.error
    assert 'no joint_states sample received yet' in answer.error


def test_bad_joint_states_are_rejected_and_never_used():
    core = make_server(observation_wait_s=0.05)
    session = admit(core)
    error = core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 5 + [math.nan])
    assert error.code == 'non_finite' and "joint 'gripper'" in str(error)
    error = core.on_joint_states('', 100 * MS, JOINTS[:5] + ['jaw'], [0.0] * 6)
    assert error.code == 'unknown_joint' and "'jaw'" in str(error)
    core.on_request(Request('', session, 1, 0))
    [answer] = serve_one(core)
    assert 'no usable joint_states sample' in answer.error
    assert "last rejected: unknown joint 'jaw'" in answer.error
    assert core.rejected_samples()['joint_states'][0] == 2


def test_a_newer_request_of_the_same_session_wins():
    core = make_server()
    session = admit(core)
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 0))
    [pushed_out] = core.on_request(Request('', session, 2, 0))
    [answer] = serve_one(core)
    assert answer.request_id == 2
    assert core.stats.totals['superseded'] == 1
    assert pushed_out.request_id == 1 and not pushed_out.session_refused   # worth a retry
    assert pushed_out.kind == SUPERSEDED


def test_unknown_sessions_are_refused_with_an_error_answer():
    core = make_server()
    [refusal] = core.on_request(Request('', 'someone-else', 3, 0))
    assert refusal.error.startswith("session 'someone-else' is not admitted")
    assert refusal.session_id == 'someone-else' and refusal.positions is None
    assert refusal.session_refused   # retrying cannot change it: the executor never does
    assert refusal.kind == REFUSED
    assert core.stats.totals['refused'] == 1 and core.pending_count() == 0


def test_two_robots_are_batched_into_one_forward_pass():
    runtime = DemoRuntime()
    calls = []
    infer = runtime.infer
    runtime.infer = lambda inputs, tasks: calls.append(len(tasks)) or infer(inputs, tasks)
    core = make_server(runtime, robot_namespaces=('robot1', 'robot2'), max_clients=2)
    one, two = admit(core, 'robot1', '/robot1/executor'), admit(core, 'robot2', '/r2/executor')
    core.on_joint_states('robot1', 10 * MS, JOINTS, [0.3] * 6)
    core.on_joint_states('robot2', 20 * MS, JOINTS, [-0.3] * 6)
    core.on_request(Request('robot1', one, 1, 0, task='pick'))
    core.on_request(Request('robot2', two, 1, 0, task='place'))
    answers = {a.robot: a for a in serve_one(core)}
    assert calls == [2] and core.stats.totals['largest_batch'] == 2
    assert answers['robot1'].batch_size == 2 and answers['robot1'].session_id == one
    assert answers['robot2'].capture_stamp_ns == 20 * MS
    assert answers['robot1'].positions[0, 0] > 0.2 and answers['robot2'].positions[0, 0] < -0.2
    # Each row equals what the robot would have got alone.
    alone = make_server()
    session = admit(alone)
    alone.on_joint_states('', 20 * MS, JOINTS, [-0.3] * 6)
    alone.on_request(Request('', session, 1, 0))
    assert np.allclose(serve_one(alone)[0].positions, answers['robot2'].positions, atol=1e-5)


def test_batches_respect_the_runtime_limit():
    runtime = DemoRuntime()
    runtime.max_batch_size = 1
    core = make_server(runtime, robot_namespaces=('a', 'b'), max_clients=2)
    sessions = [admit(core, 'a', '/a'), admit(core, 'b', '/b')]
    for robot, session in zip('ab', sessions):
        core.on_joint_states(robot, 10 * MS, JOINTS, [0.0] * 6)
        core.on_request(Request(robot, session, 1, 0))
    assert len(core.take_work().ready) == 1 and core.pending_count() == 1


class ScriptedRuntime(PolicyRuntime):
    """Returns queued outputs or raises queued errors (a stand-in at the model seam)."""

    kind = 'scripted'

    def __init__(self, outputs):
        super().__init__(spec_from_dict({
            'semantics': SO101, 'fps': 10, 'chunk_length': 2, 'action': {'names': JOINTS},
            'features': [{'name': 'observation.state', 'kind': 'state', 'shape': [6],
                          'names': JOINTS}]}))
        self.outputs = list(outputs)

    def infer(self, inputs, tasks):
        out = self.outputs.pop(0)
        if isinstance(out, Exception):
            raise out
        return np.asarray(out, dtype=np.float32)[None]


def test_policy_units_are_converted_to_si_at_the_boundary():
    degrees = [[90.0, -45.0, 0.0, 180.0, -90.0, 50.0], [0.0] * 5 + [100.0]]
    core = make_server(ScriptedRuntime([degrees]))
    session = admit(core)
    core.on_joint_states('', 1, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 0))
    [answer] = serve_one(core)
    # Hand-computed: degrees * pi / 180; the gripper's 50 % is 0 rad and 100 % is tick 4095,
    # (4095 - 2047.5) * 2 pi / 4095 = pi rad with the default calibration.
    assert np.allclose(answer.positions[0], [math.pi / 2, -math.pi / 4, 0.0, math.pi,
                                             -math.pi / 2, 0.0], atol=1e-6)
    assert answer.positions[1, 5] == pytest.approx(math.pi, abs=1e-6)
    assert answer.step_period == pytest.approx(0.1)


def test_a_failing_model_answers_with_errors_and_keeps_serving():
    outputs = [RuntimeError('CUDA out of memory'), [[math.nan] + [0.0] * 5, [0.0] * 6],
               [[1.0] * 6, [2.0] * 6]]
    core = make_server(ScriptedRuntime(outputs))
    session = admit(core)
    core.on_joint_states('', 1, JOINTS, [0.0] * 6)
    answers = []
    for request_id in (1, 2, 3):
        core.on_request(Request('', session, request_id, 0))
        answers += serve_one(core)
    assert answers[0].error == 'policy forward pass failed: RuntimeError: CUDA out of memory'
    assert "policy output: ValueError: joint 'shoulder_pan' has a non-finite" in \
        answers[1].error
    assert answers[1].positions is None
    assert answers[2].error == '' and answers[2].positions.shape == (2, 6)
    assert core.stats.failures == {'inference': 1, 'output': 1}
    assert [a.kind for a in answers] == [INFERENCE, OUTPUT, '']


def test_extra_compute_is_part_of_the_inference_time_and_latency_is_not_the_cores():
    slept = []
    core = PolicyServerCore(ServerConfig('so101', extra_compute_s=0.25, extra_latency_s=0.5),
                            DemoRuntime(), sleep=slept.append)
    session = admit(core)
    core.on_joint_states('', 1, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 1, 0))
    serve_one(core)
    assert slept == [0.25], "the link latency is the serving loop's delay line"
    core.update_settings(extra_compute_s=0.0)
    core.on_request(Request('', session, 2, 0))
    serve_one(core)
    assert slept == [0.25]
    with pytest.raises(ValueError, match='read-only while running: max_clients'):
        core.update_settings(max_clients=3)


def test_a_corrupt_frame_falls_back_to_an_older_usable_one_or_errors():
    core = make_server(DemoRuntime(cameras=['front'], image_size=(16, 16)),
                       observation_wait_s=0.05)
    session = admit(core)
    feature = 'observation.images.front'
    noise = np.random.default_rng(0).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    good = jpeg(noise)
    bad = good[:good.index(b'\xff\xda') + 40]
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    assert core.on_image('', feature, 90 * MS, CompressedImage('jpeg', good)) is None
    assert core.on_image('', feature, 95 * MS, CompressedImage('jpeg', bad)) is None
    core.on_request(Request('', session, 1, 80 * MS))
    assert serve_one(core) == []              # the corrupt frame was tried and marked
    [answer] = serve_one(core)                # then the older good one is used
    assert answer.error == '' and answer.capture_stamp_ns == 90 * MS
    core.on_image('', feature, 120 * MS, CompressedImage('jpeg', bad))
    core.on_joint_states('', 130 * MS, JOINTS, [0.0] * 6)
    core.on_request(Request('', session, 2, 110 * MS))
    answers = serve_one(core) + serve_one(core)
    assert len(answers) == 1 and 'corrupt JPEG' in answers[0].error


def test_another_encoding_is_refused_by_name_unless_the_parameter_allows_it_then_said_once():
    feature = 'observation.images.front'
    frame = np.random.default_rng(1).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    bgr = RawImage('bgr8', 16, 16, 48, frame[:, :, ::-1].tobytes())
    rgb = RawImage('rgb8', 16, 16, 48, frame.tobytes())
    chunks = []
    for allowed in ((), ('bgr8',)):
        core = make_server(DemoRuntime(cameras=['front'], image_size=(16, 16)),
                           convert_encodings=allowed, observation_wait_s=0.0)
        session = admit(core)
        core.on_joint_states('', 110 * MS, JOINTS, [0.0] * 6)
        errors = [core.on_image('', feature, stamp * MS, image)
                  for stamp, image in ((100, bgr), (101, bgr), (102, rgb), (103, bgr))]
        core.on_request(Request('', session, 1, 103 * MS))
        [answer] = serve_one(core)
        if not allowed:
            assert [e and e.code for e in errors] == ['encoding', 'encoding', None, 'encoding']
            assert str(errors[0]).startswith(f"camera '{feature}' sent 'bgr8' frames, but the "
                                             'feature declares rgb, 3 channels (expected rgb8; ')
            assert not [n for n in core.assembler.take_notes() if 'bgr8' in n]
            assert 'stale observation' in answer.error and "sent 'bgr8' frames" in answer.error
        else:
            assert errors == [None] * 4 and answer.error == ''
            [note] = [n for n in core.assembler.take_notes() if 'bgr8' in n]   # once
            assert note.startswith(f'{feature}: 16x16 frames resized') and note.endswith(
                '; bgr8 frames converted to rgb8 (channels reordered; allowed by '
                'convert_encodings)')
            core.on_image('', feature, 104 * MS, bgr)
            assert core.assembler.take_notes() == []
            chunks.append(answer.positions)
    core = make_server(DemoRuntime(cameras=['front'], image_size=(16, 16)))
    session = admit(core)
    core.on_joint_states('', 110 * MS, JOINTS, [0.0] * 6)
    core.on_image('', feature, 103 * MS, rgb)
    core.on_request(Request('', session, 1, 103 * MS))
    [answer] = serve_one(core)
    assert np.array_equal(answer.positions, chunks[0])   # the same pixels, reordered


def test_settings_are_validated():
    with pytest.raises(ValueError, match="'max_clients' is 0; expected 1 to 1000"):
        ServerConfig('so101', max_clients=0)
    with pytest.raises(ValueError, match="'policy_type' is 'onnx'; expected one of auto, demo, "
                       'torchscript, torch_export, flow_matching, lerobot, python$'):
        ServerConfig('so101', policy_type='onnx')
    with pytest.raises(ValueError, match="'convert_encodings' contains 'yuv422'; expected any "
                       'of bgr8, rgba8, bgra8, mono8'):
        ServerConfig('so101', convert_encodings=('bgr8', 'yuv422'))
    # The parameter of earlier releases still works: convert_mono_to_rgb true adds mono8.
    assert ServerConfig('so101', convert_mono_to_rgb=True).convert_encodings == ('mono8',)
    assert ServerConfig('so101', convert_encodings=('bgr8',),
                        convert_mono_to_rgb=True).convert_encodings == ('bgr8', 'mono8')
    assert ServerConfig('so101').convert_encodings == ()
    with pytest.raises(ValueError, match="'robot_namespaces' must be non-empty and unique"):
        ServerConfig('so101', robot_namespaces=('a', 'a'))
    with pytest.raises(ValueError, match="'extra_latency_s' is -1.0; expected 0.0 to 60.0"):
        ServerConfig('so101', extra_latency_s=-1.0)
    with pytest.raises(ValueError, match="'deployment' must not be empty"):
        ServerConfig('')
    with pytest.raises(ValueError, match="chunk_length 60 exceeds the policy's chunk length 50"):
        make_server(chunk_length=60)


def test_capabilities_contract_and_summary():
    core = make_server(DemoRuntime(cameras=['front']))
    assert core.contract.action_names == tuple(JOINTS)
    assert core.contract.features[1] == FeatureDeclaration(
        'observation.images.front', (480, 640, 3), 'uint8', 'rgb')
    assert set(core.contract.merge_modes) == {'append', 'aligned', 'ensemble', 'synchronous'}
    assert core.summary() is None              # idle and alone: nothing to say
    session = admit(core)
    core.on_request(Request('', 'stale', 1, 0))
    core.on_request(Request('', session, 1, 0))
    text = core.summary()
    assert text.startswith('1/1 client(s); last period: 2 requests, 0 served, 0 failed, '
                           '1 refused')
    core.warm_preprocessing()
