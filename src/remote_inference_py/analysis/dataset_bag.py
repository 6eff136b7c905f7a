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
A recorded bag as dataset rows: ``analyze BAG --dataset FOLDER``.

The bag's messages go to :class:`~.dataset_rows.RowBuilder` in the order the recorder received
them (rosbag2's receive stamps), exactly as the live recorder hands over what it receives, so
both give the same rows from the same run. Cameras come from ``cameras/<name>/image_raw``
(raw) or ``.../compressed`` (JPEG, ``record_images:=true``: the frames then carry the JPEG's
loss as well as the video's).

The schema comes from an existing dataset at FOLDER (``meta/info.json``: the episodes are
appended) or else from the bag: ``observation.state`` and ``action`` over the semantics'
joints (``--semantics``, default LeRobot's SO-101 units), one ``observation.images.<camera>``
per camera at the size it published, ``--fps`` (default: the rate of ``joint_commands``).
"""

import pathlib
import re

import numpy as np
from rosbags.rosbag2 import Reader

from remote_inference_py.analysis.bag import typestore
from remote_inference_py.analysis.dataset_rows import (
    CameraFeature, feed, image_array, integer_fps, JOINT_SUFFIX, RowBuilder, Schema,
    SchemaError, stamp_ns, StateFeature)
from remote_inference_py.robot.units import get_semantics

CAMERA = re.compile(r'^/cameras/([A-Za-z0-9_]+)/image_raw(/compressed)?$')
TOPICS = ('/joint_states', '/joint_commands', '/executor/status', '/executor/task',
          '/dataset/episodes',
          '/policy/request', '/policy/chunk')


def _messages(path, namespace):
    """Yield (topic without namespace, receive ns, message) in receive order."""
    path = pathlib.Path(path)
    if not (path / 'metadata.yaml').exists():
        raise ValueError(f'{path} is not a rosbag2 folder (no metadata.yaml)')
    prefix = '/' + namespace.strip('/') if namespace.strip('/') else ''
    store = typestore()
    with Reader(path) as reader:
        wanted = [c for c in reader.connections if c.topic.startswith(prefix + '/')
                  and (c.topic[len(prefix):] in TOPICS
                       or CAMERA.match(c.topic[len(prefix):]))]
        for connection, timestamp, raw in reader.messages(connections=wanted):
            yield (connection.topic[len(prefix):], timestamp,
                   store.deserialize_cdr(raw, connection.msgtype))


def _cameras(path, namespace):
    """Return {camera: (topic, (h, w, 3))}: raw preferred over compressed, first frame size."""
    found = {}
    for topic, _, msg in _messages(path, namespace):
        match = CAMERA.match(topic)
        if match and match.group(1) not in found:
            found[match.group(1)] = (topic, image_array(msg, bool(match.group(2))).shape)
        elif match and found[match.group(1)][0].endswith('/compressed') \
                and not match.group(2):
            found[match.group(1)] = (topic, image_array(msg, False).shape)
    return found


def command_rate(path, namespace):
    """Return the median rate of ``joint_commands`` in the bag [Hz]."""
    stamps = [stamp_ns(msg.header.stamp) for topic, _, msg in _messages(path, namespace)
              if topic == '/joint_commands']
    if len(stamps) < 2:
        raise ValueError(f'{path}: fewer than two joint_commands, so no control rate')
    return 1e9 / float(np.median(np.diff(stamps)))


def schema_from_info(info, semantics='so101-degrees-gripper-percent-v1', units=None):
    """Return the schema of an existing dataset (its meta/info.json as a dict).

    ``units`` ({feature: semantics}, from ``meta/remote_inference.json``) overrides
    ``semantics`` for the features it names.
    """
    features = info['features']
    states, cameras = [], []
    action = features.get('action')
    if action is None:
        raise SchemaError('the dataset has no action feature')

    def joints(names):
        return tuple(n[:-len(JOINT_SUFFIX)] if n.endswith(JOINT_SUFFIX) else n for n in names)

    units = units or {}
    for key, feature in features.items():
        if feature['dtype'] == 'float32' and key.startswith('observation.'):
            states.append(StateFeature(key, joints(feature['names']),
                                       units.get(key, semantics)))
        elif feature['dtype'] == 'video':
            cameras.append(CameraFeature(key.rsplit('.', 1)[-1], key, tuple(feature['shape'])))
    return Schema(int(info['fps']), info.get('robot_type') or '', tuple(states),
                  tuple(cameras), joints(action['names']), units.get('action', semantics),
                  intervention='intervention' in features)


def schema_from_bag(path, namespace='', semantics='so101-degrees-gripper-percent-v1', fps=0.0,
                    robot_type='so101_follower'):
    """Return the schema a bag records to (see the module docstring)."""
    joints = get_semantics(semantics).names
    cameras = tuple(CameraFeature(name, f'observation.images.{name}', tuple(shape))
                    for name, (_, shape) in sorted(_cameras(path, namespace).items()))
    rate = fps or command_rate(path, namespace)
    return Schema(integer_fps(fps or round(rate)), robot_type,
                  (StateFeature('observation.state', joints, semantics),), cameras, joints,
                  semantics)


def bag_events(path, builder, namespace=''):
    """Yield the dataset events (rows, episode ends) of a bag through ``builder``."""
    schema = builder.schema
    available = _cameras(path, namespace) if schema.cameras else {}
    by_topic = {}
    for camera in schema.cameras:
        if camera.camera not in available:
            raise SchemaError(f'{path}: no frames of camera {camera.camera!r} (record with '
                              'record_images:=true)')
        by_topic[available[camera.camera][0]] = camera.camera
    for topic, _, msg in _messages(path, namespace):
        camera = by_topic.get(topic)
        if camera is not None:
            events = builder.image(camera, stamp_ns(msg.header.stamp),
                                   image_array(msg, topic.endswith('/compressed')))
        else:
            events = feed(builder, topic, msg)
        yield from events
    yield from builder.finish()


def write_dataset(bag, folder, repo_id='', namespace='',
                  semantics='so101-degrees-gripper-percent-v1',
                  fps=0.0, robot_type='so101_follower', calibration=None, vcodec='',
                  camera_timeout_s=1.0, log=None):
    """
    Write (or append) the episodes of ``bag`` to the LeRobot dataset at ``folder``.

    Return ``(writer, builder)``: the writer's counts and errors, the builder's counts and
    notes. A folder holding a dataset of another schema is refused (DatasetError, named).
    """
    import json
    from remote_inference_py.analysis import dataset_writer
    folder = pathlib.Path(folder)
    repo_id = repo_id or f'local/{folder.name}'
    info = folder / 'meta' / 'info.json'
    if info.is_file():
        schema = schema_from_info(json.loads(info.read_text()), semantics,
                                  dataset_writer.read_units(folder))
    else:
        schema = schema_from_bag(bag, namespace, semantics, fps, robot_type)
    builder = RowBuilder(schema, calibration, camera_timeout_s)
    dataset = dataset_writer.open_dataset(folder, repo_id, schema,
                                          vcodec or dataset_writer.DEFAULT_VCODEC)
    writer = dataset_writer.DatasetWriter(dataset, log=log)
    # Nothing moves while a bag is converted: wait for room in the queue instead of dropping.
    try:
        for event in bag_events(bag, builder, namespace):
            writer.put_waiting(event)
    finally:
        writer.close()
    return writer, builder
