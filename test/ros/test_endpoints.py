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
The transport seam: the switch, and equal values from both transports.

The same serialized message read by our decoders (fast) and by rclpy then converted (plain)
must give equal values, edge cases included; over real DDS every pairing of a fast or plain
publisher with a fast or plain subscriber delivers them.
"""

import os
import re

from core_fixtures import observation_spec
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from remote_inference.msg import ActionChunk, SharedImage
from ros_fixtures import NodeProcess
from sensor_msgs.msg import Image, JointState

from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.observation import ObservationAssembler
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import endpoints, qos, values
from remote_inference_py.transport.cdr import (
    ActionChunkDecoder, JointStateDecoder, SharedImageDecoder)
from remote_inference_py.transport.endpoints import (
    ChunkPublisher, JointStatePublisher, subscribe_chunks, subscribe_joint_states,
    transport_choice, TransportChoiceError)
from remote_inference_py.transport.image_cdr import decode_image

JOINTS = list(SO101_JOINT_NAMES)
BOTH = ('fast', 'plain')


def assert_same(fast, plain):
    """Field by field: numbers equal with the same dtype, buffers with equal bytes."""
    fast_fields = fast._asdict() if hasattr(fast, '_asdict') else vars(fast)
    plain_fields = plain._asdict() if hasattr(plain, '_asdict') else vars(plain)
    assert type(fast) is type(plain) and fast_fields.keys() == plain_fields.keys()
    for name, value in fast_fields.items():
        other = plain_fields[name]
        if isinstance(value, np.ndarray):
            assert isinstance(other, np.ndarray) and value.dtype == other.dtype, name
            np.testing.assert_array_equal(value, other, err_msg=name)
        elif isinstance(value, memoryview):
            assert bytes(value) == bytes(other), name
        else:
            assert value == other and type(value) is type(other), (name, value, other)


def stamped(msg, sec=12, nanosec=345, frame_id=''):
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    msg.header.frame_id = frame_id
    return msg


# ---- the switch --------------------------------------------------------------------------

def test_the_switch_is_fast_by_default_and_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.delenv(endpoints.TRANSPORT_ENV, raising=False)
    assert transport_choice() == 'fast'
    monkeypatch.setenv('REMOTE_INFERENCE_TRANSPORT', '')
    assert transport_choice() == 'fast'
    monkeypatch.setenv('REMOTE_INFERENCE_TRANSPORT', 'plain')
    assert transport_choice() == 'plain' and transport_choice('fast') == 'fast'
    monkeypatch.setenv('REMOTE_INFERENCE_TRANSPORT', 'Plain')
    with pytest.raises(TransportChoiceError,
                       match=r"^REMOTE_INFERENCE_TRANSPORT='Plain' is not one of fast, plain$"):
        transport_choice()
    with pytest.raises(TransportChoiceError, match=r"^transport 'zenoh' is not one of"):
        transport_choice('zenoh')


@pytest.mark.parametrize('node', ['executor', 'policy_server'])
def test_a_node_with_a_bad_switch_value_exits_2_naming_it(tmp_path, node):
    env = {**os.environ, 'REMOTE_INFERENCE_TRANSPORT': 'grpc'}
    proc = NodeProcess.console_script(node, tmp_path, node_name=node, env=env,
                                      params={'deployment': 'demo_test'})
    assert proc.wait(60) == 2, proc.output()
    assert "cannot start: REMOTE_INFERENCE_TRANSPORT='grpc' is not one of fast, plain" \
        in proc.output()


# ---- the same bytes, both ways -----------------------------------------------------------

def joint_state(names, positions, **extra):
    return stamped(JointState(name=list(names), position=[float(p) for p in positions],
                              **extra), frame_id='base')


JOINT_STATES = {
    'six joints': joint_state(JOINTS, np.linspace(-1, 1, 6)),
    'fewer positions than names': joint_state(JOINTS, [0.1] * 5),
    'no positions at all': joint_state(JOINTS, []),
    'nothing': joint_state([], []),
    'velocity and effort too': joint_state(JOINTS[:2], [1.0, 2.0], velocity=[3.0, 4.0],
                                           effort=[5.0]),
    'unicode names': joint_state(['épaule', '手首'], [1e300, -0.0]),
}


@pytest.mark.parametrize('case', JOINT_STATES)
def test_a_joint_state_gives_equal_values_on_both_transports(case):
    raw = serialize_message(JOINT_STATES[case])
    decoder = JointStateDecoder()
    for _ in range(2):    # the second read goes through the remembered layout
        fast = decoder.decode(raw)
        assert_same(fast, values.from_joint_state(deserialize_message(raw, JointState)))


def test_fewer_positions_than_names_is_named_by_the_core_the_same_on_both_transports():
    raw = serialize_message(JOINT_STATES['fewer positions than names'])
    fast = JointStateDecoder().decode(raw)
    plain = values.from_joint_state(deserialize_message(raw, JointState))
    messages = []
    for value in (fast, plain):
        with pytest.raises(InputError) as error:
            ObservationAssembler(observation_spec()).joint_sample(
                value.stamp_ns, value.names, value.positions)
        messages.append((error.value.code, str(error.value)))
    assert messages[0] == messages[1] == ('shape', 'joint_states has 6 names but 5 positions')


def chunk(steps=3, error='', **fields):
    positions = np.arange(steps * 6, dtype=np.float32) / 7
    fields = {'session_id': 's-1', 'joint_names': JOINTS, **fields}
    return stamped(ActionChunk(request_id=2**63 + 5, step_period=1 / 30, step_count=steps,
                               positions=positions.tolist(), error=error, queue_wait_ms=0.5,
                               preprocess_ms=1.5, inference_ms=2.5, postprocess_ms=3.5,
                               **fields), sec=-3)


@pytest.mark.parametrize('msg', [chunk(), chunk(0, error='unknown session'),
                                 chunk(2, joint_names=[]), chunk(1, session_id='')])
def test_an_action_chunk_gives_equal_values_on_both_transports(msg):
    raw = serialize_message(msg)
    decoder = ActionChunkDecoder()
    for _ in range(2):
        assert_same(decoder.decode(raw),
                    values.from_action_chunk(deserialize_message(raw, ActionChunk)))


def test_images_and_their_references_give_equal_values_on_both_transports():
    ref = stamped(SharedImage(ring='remote_inference_frames_1_front_0badf00d', slot=3,
                              sequence=2**40 + 3, size=921_654), frame_id='front_camera')
    raw = serialize_message(ref)
    assert_same(SharedImageDecoder().decode(raw),
                values.from_shared_image(deserialize_message(raw, SharedImage)))
    for height, width, encoding in ((4, 5, 'rgb8'), (1, 3, 'mono8'), (0, 0, '')):
        pixels = np.arange(height * width * 3, dtype=np.uint8).tobytes()
        image = stamped(Image(height=height, width=width, encoding=encoding, step=width * 3,
                              is_bigendian=1, data=pixels), frame_id='cam')
        raw = serialize_message(image)
        assert_same(decode_image(raw), values.from_image(deserialize_message(raw, Image)))


# ---- over DDS: every pairing --------------------------------------------------------------

@pytest.mark.parametrize('publisher_side', BOTH)
def test_every_subscriber_gets_equal_values_from_a_fast_or_plain_publisher(ros, publisher_side):
    node, spinner = ros
    got = {side: {'joints': [], 'chunks': []} for side in BOTH}
    for side in BOTH:
        subscribe_joint_states(node, 'seam/joint_states', got[side]['joints'].append,
                               qos.JOINT_STATES, transport=side)
        subscribe_chunks(node, 'seam/chunk', got[side]['chunks'].append, qos.CHUNKS,
                         transport=side)
    joints = JointStatePublisher(node, 'seam/joint_states', JOINTS, qos.JOINT_STATES,
                                 transport=publisher_side)
    chunks = ChunkPublisher(node, 'seam/chunk', qos.CHUNKS, transport=publisher_side)
    spinner.until(lambda: joints.publisher.get_subscription_count() == 2
                  and chunks.publisher.get_subscription_count() == 2, 10, 'matched')
    joints.publish(7, 8, [0.5, -0.5, 1.0, 0.0, 2.0, -3.0])
    positions = np.arange(12, dtype=np.float32).reshape(2, 6)
    chunks.publish(sec=9, nanosec=10, session_id='abc', request_id=4, joint_names=JOINTS,
                   step_period=0.05, positions=positions, timings=(1.0, 2.0, 3.0, 4.0))
    chunks.publish(sec=9, nanosec=11, session_id='abc', request_id=5, joint_names=JOINTS,
                   step_period=0.05, positions=np.zeros((0, 0)), error='not served')
    spinner.until(lambda: all(len(g['joints']) == 1 and len(g['chunks']) == 2
                              for g in got.values()), 10, 'everything on both subscribers')
    assert_same(got['fast']['joints'][0], got['plain']['joints'][0])
    first = got['fast']['joints'][0]
    assert first.stamp_ns == 7_000_000_008 and first.names == tuple(JOINTS)
    assert first.positions.tolist() == [0.5, -0.5, 1.0, 0.0, 2.0, -3.0]
    for fast, plain in zip(got['fast']['chunks'], got['plain']['chunks']):
        assert_same(fast, plain)
    served, failed = got['plain']['chunks']
    assert (served.request_id, served.step_count, served.error) == (4, 2, '')
    assert served.positions.tolist() == positions.reshape(-1).tolist()
    assert (served.queue_wait_ms, served.postprocess_ms) == (1.0, 4.0)
    assert (failed.step_count, failed.positions.size, failed.error) == (0, 0, 'not served')


def test_malformed_bytes_are_named_on_the_fast_path_and_dropped_by_rclpy_on_the_plain(ros):
    node, spinner = ros
    got = {side: [] for side in BOTH}
    malformed = []
    for side in BOTH:
        subscribe_chunks(node, 'seam/bad_chunk', got[side].append, qos.CHUNKS,
                         on_malformed=malformed.append, transport=side)
    raw = node.create_publisher(ActionChunk, 'seam/bad_chunk', qos.CHUNKS)
    spinner.until(lambda: raw.get_subscription_count() == 2, 10, 'matched')
    raw.publish(b'\0\x01\0\0' + b'\xff' * 7)
    raw.publish(chunk())
    spinner.until(lambda: got['fast'] and got['plain'], 10, 'the good chunk on both')
    assert len(malformed) == 1 and re.match(r'header\.[a-z_.]+: needs', malformed[0]), malformed
    assert len(got['fast']) == len(got['plain']) == 1


@pytest.mark.parametrize('side', BOTH)
def test_a_joint_state_publisher_refuses_a_wrong_number_of_positions(ros, side):
    node, _ = ros
    publisher = JointStatePublisher(node, 'seam/refuse', JOINTS, qos.JOINT_STATES,
                                    transport=side)
    with pytest.raises(ValueError, match='positions: 5 values where the layout has 6'):
        publisher.publish(1, 2, [0.0] * 5)
