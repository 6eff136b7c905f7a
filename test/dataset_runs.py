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
A run with known ticks, as the executor publishes it, for the dataset recorder's tests.

At 30 Hz the executor is READY for 0.2 s, WAITING for its first chunk (0.3 s), RUNNING, held
by a subtask query (WAITING) from ``hold`` until the new task's chunk arrives, RUNNING again,
STOPPING (the return home) from ``stop_s``, then STOPPED. Each tick publishes its command;
a tick that changes state, or the first a chunk drives, publishes its status 1 ms after the
command, as the executor node does, and the status also goes out every 0.1 s, naming the
request whose chunk drove the last dispatched tick. A stale chunk of the first task (a request
sent before the subtask query) arrives at ``dropped_chunk_s`` and is dropped: it drives
nothing. The camera publishes a frame per tick, 5 ms
before it, whose pixels encode its number (smooth, so the video codec keeps them); the camera
stops at ``camera_stops_s`` when given. :func:`run_messages` returns the messages in receive
order as plain objects with the fields of the ROS messages; :func:`write_bag` writes the same
ones to an MCAP bag.
"""

import dataclasses
import types

import numpy as np

from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

T0 = 1_800_000_000 * 10**9
NS = 10**9
FPS = 30
PERIOD = NS // FPS
HEIGHT, WIDTH = 48, 64
TASK_1 = 'pick up the cube'
TASK_2 = 'grasp the cube'
SEMANTICS = 'so101-degrees-gripper-percent-v1'


@dataclasses.dataclass
class Spec:
    """Times in seconds since the first tick."""

    ready_s: float = 0.2
    first_chunk_s: float = 0.5
    hold_s: float = 1.5
    subtask_chunk_s: float = 2.0
    stop_s: float = 3.0
    end_s: float = 3.5
    camera_stops_s: float = 0.0       # 0: the camera never stops
    camera_gap_s: tuple = ()          # (from, to): no frames in between
    camera_lag_s: float = 0.0         # every frame received this long after its capture
    joint_states_lag: tuple = ()      # (from, to, lag): joint states captured in between
    #                                   are received lag seconds after their capture (and
    #                                   those after them no earlier: one publisher's order)
    pause_s: tuple = ()               # (from, to): the host paused every process: nothing
    #                                   is stamped in between, not even a tick
    width: int = WIDTH
    dropped_chunk_s: float = 2.5      # 0: no dropped chunk


def feature(name, kind, shape, names=(), topic=''):
    """Return an ObservationFeature-like declaration."""
    return types.SimpleNamespace(name=name, kind=kind, shape=shape, names=list(names),
                                 semantics=SEMANTICS if kind == 'state' else '', topic=topic)


def capabilities(width=WIDTH):
    """Return what the served policy declares: state, a camera, simulator ground truth."""
    return [feature('observation.state', 'state', [6], SO101_JOINT_NAMES, 'joint_states'),
            feature('observation.images.front', 'rgb', [HEIGHT, width, 3],
                    topic='cameras/front/image_raw'),
            feature('observation.environment_state', 'privileged', [7], topic='sim/cube_pose')]


def frame_pixels(number, width=WIDTH):
    """Return camera frame ``number``: smooth gradients shifted by the number."""
    y, x = np.mgrid[0:HEIGHT, 0:width]
    red = (x * 3 + number * 5) % 256
    green = (y * 4 + number * 3) % 256
    blue = np.full_like(x, (number * 7) % 256)
    return np.stack([red, green, blue], axis=-1).astype(np.uint8)


def pose(t):
    """Return the SI joint target dispatched at time t."""
    return np.array([0.3 * np.sin(t), -1.0 + 0.1 * t, 1.0, 0.9, 0.1 * np.cos(t), 0.3 + 0.1 * t])


def _msg(**fields):
    return types.SimpleNamespace(**fields)


def _header(ns):
    return _msg(stamp=_msg(sec=ns // NS, nanosec=ns % NS), frame_id='')


def paused(spec, t):
    """Return True when ``t`` (seconds since the first tick) falls in the host's pause."""
    return bool(spec.pause_s) and spec.pause_s[0] <= t < spec.pause_s[1]


def tick_states(spec):
    """Return [(tick stamp ns, state, SI command)] of every tick."""
    ticks, held = [], None
    for k in range(int(spec.end_s * FPS)):
        t = k / FPS
        if t < spec.ready_s or paused(spec, t):
            continue
        if t < spec.first_chunk_s or spec.hold_s <= t < spec.subtask_chunk_s:
            state = 'WAITING'
            command = held if held is not None else pose(spec.ready_s)
        elif t < spec.stop_s:
            state = 'RUNNING'
            command = pose(t)
        else:
            state = 'STOPPING'
            command = pose(spec.stop_s) * (1 - (t - spec.stop_s))
        held = command
        ticks.append((T0 + k * PERIOD, state, command))
    return ticks


def chunks(spec):
    """Return [(request id, sent s, arrives s, task)]: three that drive, one dropped."""
    answers = [(1, spec.ready_s, spec.first_chunk_s, TASK_1), (2, 1.0, 1.2, TASK_1),
               (3, spec.subtask_chunk_s - 0.2, spec.subtask_chunk_s, TASK_2)]
    if spec.dropped_chunk_s:
        answers.append((4, spec.hold_s - 0.1, spec.dropped_chunk_s, TASK_1))
    return answers


def dispatched_request(spec, ns):
    """Return the request whose chunk drove the last dispatched tick at ``ns`` (0: none)."""
    driving = [number for number, _, arrives, _ in chunks(spec)[:3]
               if T0 + round(arrives * FPS) * PERIOD <= ns]
    return driving[-1] if driving else 0


def run_messages(spec=None):
    """Return [(topic, receive ns, message)] of the run, in receive order."""
    spec = spec or Spec()
    names = list(SO101_JOINT_NAMES)
    out = []

    def status(ns, state, tick_ns, receive_delay=200_000):
        out.append(('/executor/status', ns + receive_delay,
                    _msg(header=_header(ns), state_name=state, message='', session_id='s',
                         dispatched_request_id=dispatched_request(spec, tick_ns))))

    status(T0, 'READY', T0)
    out.append(('/executor/task', T0, _msg(data=TASK_1)))
    previous = 'READY', 0
    for ns, state, command in tick_states(spec):
        out.append(('/joint_commands', ns + 100_000,
                    _msg(header=_header(ns), name=names, position=list(command))))
        if (state, dispatched_request(spec, ns)) != previous:
            status(ns + 1_000_000, state, ns)
            previous = state, dispatched_request(spec, ns)
    ticks = tick_states(spec)
    for k in range(int(spec.end_s * 10)):     # status every 0.1 s: the state then
        ns = T0 + k * NS // 10
        if paused(spec, k / 10):
            continue
        current = [s for stamp, s, _ in ticks if stamp <= ns]
        status(ns + 500_000, current[-1] if current else 'READY', ns)
    received = 0
    for k in range(int(spec.end_s * 50)):     # joint states at 50 Hz, 2 ms old at send
        ns = T0 + k * NS // 50
        if paused(spec, k / 50):
            continue
        position = list(pose(ns / NS - T0 / NS) - 0.01)
        late = spec.joint_states_lag and spec.joint_states_lag[0] <= k / 50 \
            < spec.joint_states_lag[1]
        # One publisher: a sample never overtakes the one before it.
        lag = int(spec.joint_states_lag[2] * NS) if late else 0
        received = max(received, ns + 2_000_000 + lag)
        out.append(('/joint_states', received,
                    _msg(header=_header(ns), name=names, position=position)))
    for k in range(int(spec.end_s * FPS)):   # a frame 5 ms before each tick
        ns = T0 + k * PERIOD - 5_000_000
        if spec.camera_stops_s and k / FPS >= spec.camera_stops_s:
            break
        if spec.camera_gap_s and spec.camera_gap_s[0] <= k / FPS < spec.camera_gap_s[1]:
            continue
        if paused(spec, k / FPS):
            continue
        pixels = frame_pixels(k, spec.width)
        out.append(('/cameras/front/image_raw', ns + 3_000_000 + int(spec.camera_lag_s * NS), _msg(
            header=_header(ns), height=HEIGHT, width=spec.width, encoding='rgb8',
            step=spec.width * 3, data=pixels.tobytes(), is_bigendian=0)))
    for number, sent, arrives, task in chunks(spec):
        sent_ns = T0 + int(sent * NS)
        out.append(('/policy/request', sent_ns, _msg(header=_header(sent_ns), session_id='s',
                                                     request_id=number, task=task)))
        arrive_ns = T0 + int(arrives * NS) - 3_000_000    # just before the tick it drives
        out.append(('/policy/chunk', arrive_ns, _msg(header=_header(sent_ns), session_id='s',
                                                     request_id=number, error='')))
        if number == 3:
            out.append(('/executor/task', sent_ns, _msg(data=TASK_2)))
    out.sort(key=lambda item: item[1])
    return out


def expected_rows(spec=None):
    """Return [(tick ns, SI command, task)] of the ticks a dataset must hold."""
    spec = spec or Spec()
    return [(ns, command, TASK_1 if (ns - T0) / NS < spec.hold_s else TASK_2)
            for ns, state, command in tick_states(spec) if state == 'RUNNING']


def write_bag(path, spec=None):
    """Write the run's messages to an MCAP bag at ``path`` (raw camera frames)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from remote_inference_py.analysis.bag import typestore
    store = typestore()
    writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    connections = {}
    types_ = {'/executor/status': 'remote_inference/msg/ExecutorStatus',
              '/executor/task': 'std_msgs/msg/String',
              '/joint_commands': 'sensor_msgs/msg/JointState',
              '/joint_states': 'sensor_msgs/msg/JointState',
              '/cameras/front/image_raw': 'sensor_msgs/msg/Image',
              '/policy/request': 'remote_inference/msg/InferenceRequest',
              '/policy/chunk': 'remote_inference/msg/ActionChunk'}

    def t(name):
        return store.types[name]

    def header(h):
        return t('std_msgs/msg/Header')(stamp=t('builtin_interfaces/msg/Time')(
            sec=h.stamp.sec, nanosec=h.stamp.nanosec), frame_id='')

    def stamp(h):
        return t('builtin_interfaces/msg/Time')(sec=h.stamp.sec, nanosec=h.stamp.nanosec)

    for topic, receive, msg in run_messages(spec):
        kind = types_[topic]
        if topic == '/executor/status':
            from synthetic_runs import status_message

            class _Bag:
                def type(self, name):
                    return t(name)

                def header(self, ns):
                    return header(msg.header)
            value = status_message(_Bag(), 0, msg.state_name,
                                   dispatched_request_id=msg.dispatched_request_id)
        elif topic == '/executor/task':
            value = t(kind)(data=msg.data)
        elif kind == 'sensor_msgs/msg/JointState':
            value = t(kind)(header=header(msg.header), name=msg.name,
                            position=np.array(msg.position), velocity=np.zeros(0),
                            effort=np.zeros(0))
        elif kind == 'sensor_msgs/msg/Image':
            value = t(kind)(header=header(msg.header), height=msg.height, width=msg.width,
                            encoding=msg.encoding, is_bigendian=0, step=msg.step,
                            data=np.frombuffer(msg.data, dtype=np.uint8))
        elif topic == '/policy/request':
            value = t(kind)(header=header(msg.header), session_id=msg.session_id,
                            request_id=msg.request_id, earliest_capture_stamp=stamp(msg.header),
                            task=msg.task, plan_start_stamp=stamp(msg.header), plan_steps=0,
                            frozen_steps=0, plan_positions=np.zeros(0))
        else:
            value = t(kind)(header=header(msg.header), session_id=msg.session_id,
                            request_id=msg.request_id, joint_names=list(SO101_JOINT_NAMES),
                            step_period=1 / FPS, step_count=0,
                            positions=np.zeros(0, dtype=np.float32), error=msg.error,
                            queue_wait_ms=0.0, preprocess_ms=0.0, inference_ms=0.0,
                            postprocess_ms=0.0, instance_id='', session_refused=False)
        if topic not in connections:
            connections[topic] = writer.add_connection(topic, kind, typestore=store)
        writer.write(connections[topic], receive, store.serialize_cdr(value, kind))
    writer.close()


def feed_live(builder, spec=None):
    """Feed a run's messages to `builder` as the live recorder receives them; return events."""
    from remote_inference_py.analysis.dataset_rows import feed, image_array
    events = []
    for topic, _, msg in run_messages(spec):
        if topic == '/cameras/front/image_raw':
            events += builder.image('front', msg.header.stamp.sec * 10**9
                                    + msg.header.stamp.nanosec, image_array(msg, False))
        else:
            events += feed(builder, topic, msg)
    return events + builder.finish()
