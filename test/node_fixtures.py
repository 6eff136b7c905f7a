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
Node-level helpers shared by the node and system tests.

The robot side of a policy server, the executor's test parameters, the executor beside a
scripted server and a fake arm (:func:`start_system`), the Feetech arm on the servo bus
emulator, camera settings and setting a node's parameter over its service.

The emulator pytest fixture itself is in conftest.py (it starts an emulator process per test).
"""

import re

import numpy as np
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from remote_inference.msg import (
    ActionChunk, ExecutorStatus, HardwareInfo, InferenceRequest, ObservationFeature)
from remote_inference.srv import Admit, GetCapabilities
from robot_fixtures import EXAMPLE, PATIENT_MS
from sensor_msgs.msg import CompressedImage, Image as ImageMsg, JointState

from remote_inference_py.common.service_call import RETRY_S
from remote_inference_py.contract.check import PROTOCOL_VERSION
from remote_inference_py.executor.handshake import RETRY_S as ADMISSION_RETRY_S
from remote_inference_py.robot.calibration import Calibration
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos
from remote_inference_py.transport.values import stamp_ns  # noqa: F401 (tests import it here)

JOINTS = list(SO101_JOINT_NAMES)


# ----------------------------------------------------------------------------- parameters

def set_parameter(ros, node_name, name, value):
    """
    Set a parameter of a node through its set_parameters service; return the result.

    Typed as ``ros2 param set`` sends it: a bool, a str, else a double. Asked again after
    RETRY_S without a reply, as the nodes' own calls are (a server that has just discovered
    this client may drop its first response): setting the same value again is idempotent.
    """
    node, spinner = ros
    client = node.create_client(SetParameters, f'/{node_name}/set_parameters')
    if isinstance(value, bool):
        typed = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    elif isinstance(value, str):
        typed = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    else:
        typed = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))
    request = SetParameters.Request(parameters=[Parameter(name=name, value=typed)])
    return spinner.call(client, request, retry_s=RETRY_S).results[0]


# ----------------------------------------------------------------------------- policy server

READY = r'Policy server ready: deployment=(\S+) instance=(\w+); awaiting (one client|\d+ clients)'


def topic(namespace, name):
    return f'{namespace}/{name}' if namespace else name


class Robot:
    """The robot side of one namespace, driven from the test node."""

    def __init__(self, ros, namespace='', camera='raw', camera_topic='cameras/front/image_raw'):
        self.node, self.spinner = ros
        self.namespace = namespace
        self.chunks = []
        self.positions = [0.0] * 6
        self.joint_names = list(JOINTS)
        self.frame = None             # raw RGB array, or encoded bytes for compressed
        self.encoding = 'rgb8'
        self.node.create_subscription(ActionChunk, topic(namespace, 'policy/chunk'),
                                      self.chunks.append, qos.CHUNKS)
        self.request_pub = self.node.create_publisher(
            InferenceRequest, topic(namespace, 'policy/request'), qos.COMMANDS)
        self.joint_pub = self.node.create_publisher(
            JointState, topic(namespace, 'joint_states'), qos.JOINT_STATES)
        self.camera = camera
        image_type = CompressedImage if camera == 'compressed' else ImageMsg
        self.image_pub = self.node.create_publisher(
            image_type, topic(namespace, camera_topic), qos.IMAGES)
        self.capabilities_client = self.node.create_client(
            GetCapabilities, topic(namespace, 'policy/get_capabilities'))
        self.admit_client = self.node.create_client(Admit, topic(namespace, 'policy/admit'))
        self.node.create_timer(1 / 30, self.publish)

    def now(self):
        return self.node.get_clock().now()

    def publish(self):
        stamp = self.now().to_msg()
        joints = JointState(name=self.joint_names, position=[float(v) for v in self.positions])
        joints.header.stamp = stamp
        self.joint_pub.publish(joints)
        if self.frame is None:
            return
        if self.camera == 'compressed':
            msg = CompressedImage(format='jpeg', data=self.frame)
        else:
            frame = self.frame[:, :, ::-1] if self.encoding == 'bgr8' else self.frame
            msg = ImageMsg(height=frame.shape[0], width=frame.shape[1], encoding=self.encoding,
                           step=frame.shape[1] * 3, data=np.ascontiguousarray(frame).tobytes())
        msg.header.stamp = stamp
        self.image_pub.publish(msg)

    def capabilities(self):
        return self.spinner.call(self.capabilities_client, GetCapabilities.Request(),
                                 retry_s=ADMISSION_RETRY_S)

    def admit(self, caps, client_name='/executor', **changes):
        request = Admit.Request(
            protocol_version=PROTOCOL_VERSION, client_name=client_name,
            deployment=caps.deployment, semantics=caps.semantics,
            action_names=list(caps.action_names), action_rate=caps.action_rate,
            features=[ObservationFeature(name=f.name, shape=f.shape, dtype=f.dtype,
                                         kind=f.kind) for f in caps.features],
            merge_mode='aligned', hardware_position_hold=True,
            presence_lease_s=caps.presence_lease_s, max_requests_in_flight=1)
        for name, value in changes.items():
            setattr(request, name, value)
        # Asked again after the executor's RETRY_S, as it asks (a first response can be lost
        # while the server's reply writer matches): the last admission's session is the one.
        return self.spinner.call(self.admit_client, request, retry_s=ADMISSION_RETRY_S,
                                 latest=True)

    def wait_connected(self):
        self.spinner.until(lambda: self.request_pub.get_subscription_count() > 0
                           and self.node.count_publishers(
                               self.node.resolve_topic_name(
                                   topic(self.namespace, 'policy/chunk'))) > 0,
                           10, 'request and chunk topics matched')

    def request(self, session_id, request_id, earliest=None):
        msg = InferenceRequest(session_id=session_id, request_id=request_id, task='pick')
        msg.header.stamp = self.now().to_msg()
        msg.earliest_capture_stamp = (earliest or self.now()).to_msg()
        self.request_pub.publish(msg)

    def answer(self, request_id, timeout=10.0):
        def find():
            return next((c for c in self.chunks if c.request_id == request_id), None)
        return self.spinner.until(find, timeout, f'chunk answering request {request_id}')


def frame(seed):
    return np.random.default_rng(seed).integers(0, 256, (64, 96, 3), dtype=np.uint8)


class ManualRobot(Robot):
    """A robot side that publishes only when told, with the capture stamps it is given."""

    def publish(self):
        """Publish nothing on the timer."""

    def publish_at(self, stamp, pose, image):
        joints = JointState(name=list(JOINTS), position=[float(v) for v in pose])
        joints.header.stamp = stamp.to_msg()
        msg = ImageMsg(height=image.shape[0], width=image.shape[1], encoding='rgb8',
                       step=image.shape[1] * 3, data=image.tobytes())
        msg.header.stamp = stamp.to_msg()
        for _ in range(2):          # images are best effort; a repeated stamp is stored once
            self.joint_pub.publish(joints)
            self.image_pub.publish(msg)
            self.spinner.spin_for(0.03)


# ----------------------------------------------------------------------------- executor

EXECUTOR = {'deployment': 'test', 'autostart': True, 'refill_seconds': 0.2,
            'starvation_grace_s': 1.0, 'return_speed_rad_s': 1.0, 'max_step_rad': 0.5}

# A command the fake arm (test/peers/fake_arm.py) applied, as it logs it.
CMD = re.compile(r'^CMD t=(\d+) (.*)$', re.M)


class Watch:
    """Collect executor status and requests seen by the test node."""

    def __init__(self, node, requests=True):
        self.statuses = []
        self.requests = []
        node.create_subscription(ExecutorStatus, 'executor/status', self.statuses.append,
                                 qos.LATCHED)
        if requests:
            node.create_subscription(InferenceRequest, 'policy/request', self.requests.append,
                                     qos.COMMANDS)

    @property
    def last(self):
        return self.statuses[-1] if self.statuses else None

    def state(self):
        return self.last.state_name if self.last else ''


def start_system(processes, ros, server=None, executor=None, arm=None, watch_requests=True):
    """Start the fake arm, the scripted server and the executor; return them and a Watch."""
    node, spinner = ros
    watch = Watch(node, watch_requests)
    arm_proc = processes.peer('fake_arm.py', params=arm or {}, node_name='fake_arm')
    server_proc = processes.peer('scripted_server.py', params=server or {},
                                 node_name='scripted_server')
    executor_proc = processes.console_script('executor', params={**EXECUTOR, **(executor or {})},
                                             node_name='executor')
    return watch, arm_proc, server_proc, executor_proc


def commands(arm_proc):
    """Commands the arm applied, as (stamp_ns, [positions]) in order of arrival."""
    return [(int(t), [float(v) for v in values.split()])
            for t, values in CMD.findall(arm_proc.output())]


# ----------------------------------------------------------------------------- Feetech arm

IDS = {name: index + 1 for index, name in enumerate(JOINTS)}
CALIBRATION = Calibration.load(EXAMPLE)
# Shaft positions that land mid-range once the node writes the example calibration's homing
# offsets (present = actual - offset): 2045, 2054, 2013, 2068, 2052, 2581 ticks. Tests list
# the emulator fixture first so that it outlives the node processes.
SHAFTS = (850, 3400, 800, 3600, 950, 4000)


class ArmWatch:
    """Collect what the hardware interface publishes."""

    def __init__(self, node):
        self.states, self.applied, self.info = [], [], []
        node.create_subscription(JointState, 'joint_states', self.states.append,
                                 qos.JOINT_STATES)
        node.create_subscription(JointState, 'applied_command', self.applied.append,
                                 qos.COMMANDS)
        node.create_subscription(HardwareInfo, 'hardware/info', self.info.append, qos.LATCHED)

    def state(self):
        return self.info[-1].state if self.info else ''

    def message(self):
        return self.info[-1].message if self.info else ''

    def by_name(self, msg=None):
        msg = msg or self.states[-1]
        return dict(zip(msg.name, msg.position))


def params(emulator, **overrides):
    return {'backend': 'feetech', 'port': emulator.port, 'calibration_file': EXAMPLE,
            'latency_timer_ms': PATIENT_MS, 'command_timeout_s': 0.3, **overrides}


def start_arm(processes, ros, emulator, **overrides):
    node, spinner = ros
    watch = ArmWatch(node)
    proc = processes.console_script('hardware_interface', node_name='hardware_interface',
                                    params=params(emulator, **overrides))
    spinner.until(lambda: watch.state() == 'active' and watch.states, 20, 'an active arm')
    commands = node.create_publisher(JointState, 'joint_commands', qos.COMMANDS)
    spinner.until(lambda: commands.get_subscription_count() > 0, 10, 'command subscriber')
    return watch, proc, commands


def ticks(emulator, register='Present_Position'):
    return {name: emulator.get(motor_id, register) for name, motor_id in IDS.items()}


def at_rest(ros, emulator):
    """Wait until the emulated shafts stop; return their ticks."""
    node, spinner = ros
    previous = [None]

    def settled():
        now = ticks(emulator)
        done = now == previous[0]
        previous[0] = now
        spinner.spin_for(0.05)
        return now if done else None
    return spinner.until(settled, 10, 'shafts at rest')


def radians(name, tick_value):
    return CALIBRATION.ticks_to_radians(name, tick_value)


def send(commands, positions):
    names = list(positions)[::-1]   # matched by name, not by order
    commands.publish(JointState(name=names, position=[positions[n] for n in names]))


# ----------------------------------------------------------------------------- cameras

def cameras(path, width=64, height=48, **extra):
    settings = ', '.join(f'{k}: {v}' for k, v in {
        'type': 'opencv', 'index_or_path': path, 'width': width, 'height': height, 'fps': 30,
        'warmup_s': 0, **extra}.items())
    return f'{{front: {{{settings}}}}}'
