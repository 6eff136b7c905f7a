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

"""Observation buffers, selection by capture stamp and assembly by name (no ROS)."""

import io
import itertools
import math

from core_fixtures import observation_spec
import numpy as np
from PIL import Image
import pytest

from remote_inference_py.policy_server.images import CompressedImage, InputError, RawImage
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.observation import (
    JOINT_STATES, MAX_NAME_LISTS, ObservationAssembler, Sample, StreamBuffer)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.robot.units import JointConverter

JOINTS = list(SO101_JOINT_NAMES)
MS = 1_000_000


def image(value=0):
    return RawImage('rgb8', 2, 2, 6, bytes([value]) * 12)


def test_buffer_keeps_the_newest_in_stamp_order():
    buffer = StreamBuffer('s', capacity=3)
    for stamp in (10, 30, 20, 40):
        buffer.add(Sample(stamp, stamp))
    assert len(buffer) == 3
    assert buffer.newest().stamp_ns == 40
    assert [s.stamp_ns for s in buffer.history(buffer.newest(), 3, 10)] == [20, 30, 40]


def test_the_same_capture_twice_is_kept_once_unless_the_first_was_bad():
    buffer = StreamBuffer('s', capacity=5)
    buffer.add(Sample(10, 'via shared memory'))
    buffer.add(Sample(10, 'via the topic'))       # e.g. while a camera changes path
    assert len(buffer) == 1 and buffer.newest().payload == 'via shared memory'
    buffer.mark_bad(buffer.newest(), 'corrupt')
    buffer.add(Sample(10, 'again'))
    assert buffer.newest().payload == 'again' and len(buffer) == 2


def test_at_or_after_includes_equal_stamps_and_skips_bad_samples():
    buffer = StreamBuffer('s', capacity=5)
    for stamp in (10, 20, 30):
        buffer.add(Sample(stamp, stamp))
    assert buffer.newest_at_or_after(30).stamp_ns == 30
    assert buffer.newest_at_or_after(31) is None
    buffer.mark_bad(buffer.newest(), 'corrupt')
    assert buffer.newest_at_or_after(30) is None
    assert buffer.newest_at_or_after(15).stamp_ns == 20
    assert buffer.rejected == 1 and buffer.last_error == 'corrupt'


def test_history_is_spaced_one_period_and_padded_with_the_oldest():
    buffer = StreamBuffer('s', capacity=10)
    for stamp in range(0, 100, 10):          # a 100 Hz camera, stamps 0..90 ms
        buffer.add(Sample(stamp * MS, stamp))
    anchor = buffer.newest()
    # 20 Hz policy: 50 ms apart -> 90, 40, then the closest to -10 (0), then 0 repeated.
    picked = buffer.history(anchor, 3, 50 * MS)
    assert [s.payload for s in picked] == [0, 40, 90]
    picked = buffer.history(anchor, 4, 50 * MS)
    assert [s.payload for s in picked] == [0, 0, 40, 90]


def test_joint_sample_is_matched_by_name():
    assembler = ObservationAssembler(observation_spec())
    shuffled = list(reversed(JOINTS))
    sample = assembler.joint_sample(5, shuffled, [6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    assert sample.payload.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


@pytest.mark.parametrize('names, positions, code, message', [
    (JOINTS[:5], [0.0] * 5, 'missing_joint', "joint 'gripper' missing from joint_states"),
    (JOINTS + ['elbow_roll'], [0.0] * 7, 'unknown_joint', "unknown joint 'elbow_roll'"),
    (JOINTS, [0.0] * 4 + [math.nan, 0.0], 'non_finite',
     "joint 'wrist_roll' has a non-finite position"),
    (JOINTS, [0.0] * 5, 'shape', '6 names but 5 positions'),
    (JOINTS[:5] + ['wrist_roll'], [0.0] * 6, 'duplicate', "joint 'wrist_roll' appears twice"),
])
def test_bad_joint_states_are_named(names, positions, code, message):
    with pytest.raises(InputError) as error:
        ObservationAssembler(observation_spec()).joint_sample(1, names, positions)
    assert error.value.code == code and message in str(error.value)


def test_the_name_order_is_remembered_and_every_message_still_checked():
    assembler = ObservationAssembler(observation_spec())
    shuffled = tuple(reversed(JOINTS))
    for scale in (1.0, 2.0):   # the second message reuses the remembered order
        sample = assembler.joint_sample(5, shuffled, [scale * v for v in range(6, 0, -1)])
        assert sample.payload.tolist() == [scale * v for v in range(1, 7)]
    with pytest.raises(InputError, match='non-finite'):
        assembler.joint_sample(6, shuffled, [math.inf] + [0.0] * 5)
    for _ in range(2):         # a bad name list is refused every time, never remembered
        with pytest.raises(InputError, match="unknown joint 'elbow_roll'"):
            assembler.joint_sample(7, JOINTS[:5] + ['elbow_roll'], [0.0] * 6)
    for names in itertools.islice(itertools.permutations(JOINTS), 40):
        assert assembler.joint_sample(8, names, list(range(6))).payload.tolist() == [
            float(names.index(j)) for j in JOINTS]
    assert len(assembler._joint_orders) <= MAX_NAME_LISTS


def fill(assembler, buffers, stamps_ms, positions=None):
    for stamp in stamps_ms:
        buffers[JOINT_STATES].add(assembler.joint_sample(
            stamp * MS, JOINTS, positions if positions is not None else [0.1 * stamp] * 6))
        buffers['observation.images.front'].add(
            assembler.image_sample('observation.images.front', stamp * MS + MS, image(stamp)))


def test_select_waits_for_every_stream_and_stamps_with_the_oldest():
    assembler = ObservationAssembler(observation_spec())
    buffers = assembler.new_buffers(5)
    buffers[JOINT_STATES].add(assembler.joint_sample(100 * MS, JOINTS, [0.0] * 6))
    assert assembler.select(buffers, 50 * MS) is None          # no image yet
    assert 'no observation.images.front sample received yet' in assembler.missing(
        buffers, 50 * MS)
    buffers['observation.images.front'].add(
        assembler.image_sample('observation.images.front', 90 * MS, image()))
    selection = assembler.select(buffers, 50 * MS)
    assert selection.capture_stamp_ns == 90 * MS               # the older (camera) sample
    assert assembler.select(buffers, 95 * MS) is None          # the frame is too old
    assert 'newest is 0.005 s older' in assembler.missing(buffers, 95 * MS)


def test_build_converts_state_to_policy_units_and_images_to_floats():
    assembler = ObservationAssembler(observation_spec())
    buffers = assembler.new_buffers(5)
    radians = [0.5, -0.25, 0.0, 1.0, -1.0, 0.0]
    fill(assembler, buffers, [10], positions=radians)
    inputs = assembler.build(assembler.select(buffers, 0), buffers)
    expected = JointConverter('so101-degrees-gripper-percent-v1', JOINTS).to_policy(
        np.array(radians))
    assert np.allclose(inputs['observation.state'], expected, atol=1e-4)
    # Body joints: degrees = radians * 180 / pi (hand-computed); the gripper is 50 % at 0 rad
    # with the default calibration.
    assert inputs['observation.state'][0] == pytest.approx(28.6478898, abs=1e-4)
    assert inputs['observation.state'][5] == pytest.approx(50.0, abs=1e-3)
    assert inputs['observation.images.front'].shape == (3, 2, 2)
    assert np.allclose(inputs['observation.images.front'], 10 / 255)


def test_build_applies_normalization_and_history():
    normalization = {'mode': 'mean_std', 'mean': [1.0] * 6, 'std': [2.0] * 6}
    assembler = ObservationAssembler(observation_spec(state_history=2, image_history=3,
                                                      normalization=normalization,
                                                      semantics='si-radians-v1'))
    buffers = assembler.new_buffers(2)
    assert buffers['observation.images.front'].capacity == 3
    fill(assembler, buffers, [0, 50, 100])
    inputs = assembler.build(assembler.select(buffers, 100 * MS), buffers)
    state = inputs['observation.state']
    assert state.shape == (2, 6)
    assert np.allclose(state[:, 0], [(5.0 - 1.0) / 2.0, (10.0 - 1.0) / 2.0], atol=1e-6)
    frames = inputs['observation.images.front']
    assert frames.shape == (3, 3, 2, 2)
    assert np.allclose(frames[:, 0, 0, 0], np.array([0, 50, 100]) / 255)


def test_a_corrupt_frame_is_marked_and_never_selected_again():
    feature_spec = spec_from_dict({
        'semantics': 'si-radians-v1', 'fps': 30, 'chunk_length': 1,
        'action': {'names': ['a']},
        'features': [{'name': 'observation.images.front', 'kind': 'rgb',
                      'shape': [16, 16, 3]}]})
    assembler = ObservationAssembler(feature_spec)
    buffers = assembler.new_buffers(3)
    good = io.BytesIO()
    noise = np.random.default_rng(0).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    Image.fromarray(noise).save(good, format='JPEG')
    frame = buffers['observation.images.front']
    frame.add(assembler.image_sample('observation.images.front', 10,
                                     CompressedImage('jpeg', good.getvalue())))
    data = good.getvalue()
    scan = data.index(b'\xff\xda')             # start of scan: the header before it is intact
    truncated = data[:scan + (len(data) - scan) // 2]
    frame.add(assembler.image_sample('observation.images.front', 20,
                                     CompressedImage('jpeg', truncated)))
    with pytest.raises(InputError, match='corrupt JPEG'):
        assembler.build(assembler.select(buffers, 0), buffers)
    assert frame.rejected == 1
    assert assembler.select(buffers, 15) is None
    assert assembler.select(buffers, 0).capture_stamp_ns == 10
    assert 'last rejected: corrupt JPEG' in assembler.missing(buffers, 15)


def test_rotate_180_must_name_an_image_feature():
    with pytest.raises(ValueError, match=r"rotate_180 names \['observation.images.back'\]"):
        ObservationAssembler(observation_spec(), rotate_180=['observation.images.back'])


def test_privileged_features_are_checked_and_passed_through():
    cube = spec_from_dict({
        'semantics': 'si-radians-v1', 'fps': 30, 'chunk_length': 1, 'action': {'names': ['a']},
        'features': [{'name': 'observation.environment_state', 'kind': 'privileged',
                      'shape': [7], 'message': 'geometry_msgs/PoseStamped',
                      'topic': 'sim/cube_pose'}]})
    assembler = ObservationAssembler(cube)
    buffers = assembler.new_buffers(2)
    assert assembler.streams == ('observation.environment_state',)
    with pytest.raises(InputError, match='has 3 values, declared'):
        assembler.privileged_sample('observation.environment_state', 1, [0.0] * 3)
    pose = [0.2, -0.1, 0.05, 0.0, 0.0, 0.0, 1.0]
    buffers['observation.environment_state'].add(
        assembler.privileged_sample('observation.environment_state', 5, pose))
    inputs = assembler.build(assembler.select(buffers, 0), buffers)
    assert inputs['observation.environment_state'].tolist() == pytest.approx(pose)
