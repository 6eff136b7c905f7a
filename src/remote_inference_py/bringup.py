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
What the system starts, in one table read by the launch file, the demo and the tests.

``launch/bringup.launch.py``, ``./run demo`` and the tests all read it.

Each node has an executable (a console script in ``lib/remote_inference``), a side (``robot``
or ``server``: ``side:=robot`` starts the robot computer's nodes, ``side:=server`` the GPU
host's) and the topics it publishes and subscribes, with their message type and QoS role (see
``transport/qos.py``). A test starts the nodes and checks the table against the live ROS graph,
and that every subscription has a compatible publisher.
"""

from dataclasses import dataclass

from remote_inference_py.common.settings import declared
from remote_inference_py.executor.config import NodeSettings
from remote_inference_py.hardware.backend import BACKENDS as HARDWARE_BACKENDS
from remote_inference_py.policy_server.topics import IMAGE_TRANSPORTS

SIDES = ('both', 'robot', 'server')
BACKENDS = tuple(sorted(HARDWARE_BACKENDS, key=lambda name: name != 'sim'))
"""The hardware interface's backends (its ``backend`` choices), the simulated arm first."""
ON_SERVER_LOSS = declared(NodeSettings)['on_server_loss']
DRIVERS = declared(NodeSettings)['driver'].choices
"""The executor's ``on_server_loss`` setting: the fleet's argument of that name is it."""


@dataclass(frozen=True)
class Topic:
    """A topic a node uses: relative name, message type, QoS role."""

    name: str
    type: str
    qos: str


@dataclass(frozen=True)
class NodeSpec:
    """One node of the system."""

    name: str
    executable: str
    side: str
    publishes: tuple
    subscribes: tuple
    description: str


JOINT_STATES = Topic('joint_states', 'sensor_msgs/msg/JointState', 'joint_states')
JOINT_COMMANDS = Topic('joint_commands', 'sensor_msgs/msg/JointState', 'commands')
APPLIED_COMMAND = Topic('applied_command', 'sensor_msgs/msg/JointState', 'commands')
HARDWARE_INFO = Topic('hardware/info', 'remote_inference/msg/HardwareInfo', 'latched')
CAMERA = Topic('cameras/front/image_raw', 'sensor_msgs/msg/Image', 'images')
# The same frames through shared memory (transport/shared_images.py): the policy server reads
# CAMERA itself only when these cannot be opened (another host) or are not offered.
CAMERA_SHARED = Topic('cameras/front/image_raw/shm', 'remote_inference/msg/SharedImage',
                      'images')
# The same frames as JPEG for another host (transport/compressed.py), sent only while
# something subscribes: a policy server with image_transport compressed, or the recorder with
# record_images.
CAMERA_COMPRESSED = Topic('cameras/front/image_raw/compressed',
                          'sensor_msgs/msg/CompressedImage', 'images')
CUBE_POSE = Topic('sim/cube_pose', 'geometry_msgs/msg/PoseStamped', 'joint_states')
REQUEST = Topic('policy/request', 'remote_inference/msg/InferenceRequest', 'commands')
CHUNK = Topic('policy/chunk', 'remote_inference/msg/ActionChunk', 'chunks')
PRESENCE = Topic('policy/presence', 'remote_inference/msg/ServerPresence', 'presence')
STATUS = Topic('executor/status', 'remote_inference/msg/ExecutorStatus', 'latched')
TASK = Topic('executor/task', 'std_msgs/msg/String', 'latched')
# The operator's episode marks of the dataset recorder (analysis/dataset_record.py): the
# stamp, and frame_id 'start' or 'end'; the bag keeps them so a bag gives the same episodes.
DATASET_EPISODES = Topic('dataset/episodes', 'std_msgs/msg/Header', 'latched')
# The dataset recorder's state: 'recording' once a first frame of every camera and the joint
# states have come (the first tick will have its observation) and each node writing the run's
# topics was heard (its first tick will reach the recorder), or 'refused: <why>'.
DATASET_STATE = Topic('dataset/state', 'std_msgs/msg/String', 'latched')

NODES = (
    NodeSpec(
        name='hardware_interface', executable='hardware_interface', side='robot',
        publishes=(JOINT_STATES, APPLIED_COMMAND, HARDWARE_INFO, CAMERA, CAMERA_SHARED,
                   CAMERA_COMPRESSED, CUBE_POSE),
        subscribes=(JOINT_COMMANDS,),
        description='Feetech servos or the MuJoCo SO-101: joint states, camera, commands.'),
    NodeSpec(
        name='executor', executable='executor', side='robot',
        publishes=(REQUEST, JOINT_COMMANDS, STATUS, TASK),
        subscribes=(JOINT_STATES, APPLIED_COMMAND, HARDWARE_INFO, CHUNK, PRESENCE),
        description='Action buffer, refill, merge, blend, hold, recovery, safe stop.'),
    NodeSpec(
        name='policy_server', executable='policy_server', side='server',
        publishes=(CHUNK, PRESENCE),
        subscribes=(JOINT_STATES, CAMERA_SHARED, REQUEST),
        description='Loads the policy once and answers each request with a chunk.'),
)

# Topics that describe a run (images excluded: large, and not needed to diagnose timing).
RECORD_TOPICS = tuple(sorted({t.name for n in NODES for t in n.publishes}
                             - {CAMERA.name, CAMERA_SHARED.name, CAMERA_COMPRESSED.name}))


def nodes_for_side(side):
    """Return the node specs started for a side: both, robot or server."""
    if side not in SIDES:
        raise ValueError(f"side {side!r} is not one of {', '.join(SIDES)}")
    return tuple(n for n in NODES if side == 'both' or n.side == side)


def topic_types():
    """Return {relative topic name: message type} over the whole table."""
    types = {}
    for node in NODES:
        for topic in node.publishes + node.subscribes:
            types[topic.name] = topic.type
    return types


@dataclass(frozen=True)
class NodeLaunch:
    """One node to start: executable, name, namespace, params file and overrides."""

    executable: str
    name: str
    namespace: str
    params_file: str
    overrides: dict


def check_checkpoint(checkpoint):
    """
    Raise ValueError when ``checkpoint`` is a local path that does not exist.

    What the policy server takes is let through: '' (the demo policy), an existing file or
    folder, ``package.module:factory`` (a python policy) and a Hugging Face Hub repo id
    ``owner/name``, which the server reads from the cache or downloads when it loads the
    policy, told from a relative path as the server tells it
    (:func:`~remote_inference_py.contract.checkpoint.is_hub_id`).
    """
    import os
    from remote_inference_py.contract.checkpoint import is_hub_id
    if not checkpoint or os.path.exists(checkpoint) or is_hub_id(checkpoint):
        return
    if ':' in checkpoint and os.path.sep not in checkpoint.split(':')[0]:
        return   # package.module:factory
    raise ValueError(f'checkpoint {checkpoint!r} does not exist (nor is it a Hugging Face Hub '
                     "id 'owner/name' or a python policy 'package.module:factory')")


def plan(*, side='both', backend='sim', port='/dev/ttyACM0', checkpoint='', device='',
         deployment='', config_file='', namespace='', task='', share_dir='', record=False,
         bag_dir='', cameras='', image_transport='', record_images=False, record_dataset='',
         dataset_repo_id='', driver='', leader_port='', leader_calibration_file=''):
    """
    Decide what to start from the launch arguments; raise ValueError naming a bad one.

    ``config_file`` defaults to ``<share_dir>/config/so101_<backend>.yaml``. Empty strings
    leave the value of the config file in force. Everything is checked before any node
    starts: a wrong backend, side, missing config file, local checkpoint
    (:func:`check_checkpoint`) or serial port, or a bag folder that exists already stops the
    launch with a message naming it, so nothing moves.
    ``record`` adds the recorder (``record`` console script) writing to ``bag_dir``, with
    ``record_images`` also every camera's JPEG frames; with the config file's ``autostart`` on
    (and no dataset recorder to start it), the executor's is turned off and the recorder starts
    it once the run's topics have matched, so the bag holds the run from its first request.
    ``cameras`` (LeRobot's camera dictionary) replaces the config file's cameras of the real
    arm. ``image_transport`` is how the policy server reads cameras: empty means compressed
    with ``side='server'`` (another host than the arm: JPEG crosses the link) and the config
    file's value otherwise.
    ``record_dataset`` adds the dataset recorder (``record_dataset`` console script, see
    docs/recording.md) writing a LeRobot dataset there (repo id ``dataset_repo_id``) at the
    executor's fps; an existing dataset of another fps or robot type is refused here, one of
    other features by the recorder, both before motion: with the config file's ``autostart``
    on, the executor's is turned off and the recorder starts it once the dataset is open.
    ``leader_port`` adds the leader arm (``leader_arm`` console script, docs/recording.md "A
    human on the leader arm") on that serial port, calibrated by ``leader_calibration_file``,
    publishing at the executor's fps, its gripper mapped through the hardware interface's
    ``calibration_file``; ``driver`` (policy or human; empty: the config file's) is who drives
    the follower once motion starts (switch while running with ``executor/set_driver``).
    """
    import os
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    specs = nodes_for_side(side)
    if not config_file:
        config_file = os.path.join(share_dir, 'config', f'so101_{backend}.yaml')
    if not os.path.isfile(config_file):
        raise ValueError(f'config file {config_file!r} does not exist')
    if any(s.name == 'policy_server' for s in specs):
        check_checkpoint(checkpoint)
    if backend == 'feetech' and any(s.name == 'hardware_interface' for s in specs) \
            and not os.path.exists(port):
        raise ValueError(f'serial port {port!r} does not exist (is the arm plugged in?)')
    if record and not bag_dir:
        raise ValueError('record is on but bag_dir is empty')
    if record and os.path.exists(bag_dir):
        raise ValueError(f'bag_dir {bag_dir!r} exists already (a bag needs a new folder)')
    if image_transport and image_transport not in IMAGE_TRANSPORTS:
        raise ValueError(f'image_transport {image_transport!r} is not one of '
                         f"{', '.join(IMAGE_TRANSPORTS)}")
    if cameras and backend != 'feetech':
        raise ValueError('cameras are for the real arm (backend feetech); the sim renders its '
                         'own (sim_cameras in the config file)')
    dataset = _dataset_plan(record_dataset, dataset_repo_id, config_file, specs)
    bag_starts = bool(record) and not dataset and _autostart(config_file, specs)
    leader = _leader_plan(leader_port, leader_calibration_file, config_file, specs)
    if driver and driver not in DRIVERS:
        raise ValueError(f"driver {driver!r} is not one of {', '.join(DRIVERS)}")
    if side == 'server' and not image_transport:
        image_transport = 'compressed'
    overrides = {
        'hardware_interface': {'backend': backend, **({'port': port} if backend == 'feetech'
                                                      else {}),
                               **({'cameras': cameras} if cameras else {})},
        'executor': {**{k: v for k, v in (('deployment', deployment), ('task', task),
                                          ('driver', driver)) if v},
                     **({'autostart': False} if dataset.get('start_executor') or bag_starts
                        else {})},
        'policy_server': {k: v for k, v in (('checkpoint', checkpoint), ('device', device),
                                            ('deployment', deployment),
                                            ('image_transport', image_transport)) if v},
    }
    nodes = [NodeLaunch(s.executable, s.name, namespace, config_file, overrides[s.name])
             for s in specs]
    if record:
        nodes.append(NodeLaunch('record', 'recorder', namespace, '', {
            'bag_dir': bag_dir, **({'record_images': True} if record_images else {}),
            **({'start_executor': True} if bag_starts else {})}))
    if dataset:
        nodes.append(NodeLaunch('record_dataset', 'dataset_recorder', namespace, '', dataset))
    if leader:
        nodes.append(NodeLaunch('leader_arm', 'leader_arm', namespace, '', leader))
    return nodes


def _autostart(config_file, specs):
    """Return True when this host runs the executor and its config file starts it itself."""
    if not any(s.name == 'executor' for s in specs):
        return False
    from remote_inference_py.executor.config import from_parameters_file
    return from_parameters_file(config_file)[1].autostart


def _leader_plan(port, calibration_file, config_file, specs):
    """Return the leader arm's parameters ({} without ``port``); ValueError names a bad one."""
    import os
    if not port:
        if calibration_file:
            raise ValueError('leader_calibration_file is set but leader_port is empty')
        return {}
    if not any(s.name == 'executor' for s in specs):
        raise ValueError('leader_port needs the executor on this host (side both or robot)')
    if not os.path.exists(port):
        raise ValueError(f'leader_port {port!r} does not exist (is the leader arm plugged '
                         'in?)')
    if calibration_file and not os.path.isfile(calibration_file):
        raise ValueError(f'leader_calibration_file {calibration_file!r} does not exist')
    import yaml
    from remote_inference_py.executor.config import from_parameters_file
    config, _ = from_parameters_file(config_file)
    with open(config_file) as stream:
        data = yaml.safe_load(stream) or {}
    follower = ''
    for key, section in data.items():
        if str(key).rstrip('/').endswith('hardware_interface') and isinstance(section, dict):
            follower = (section.get('ros__parameters') or {}).get('calibration_file', follower)
    return {'port': port, 'publish_rate_hz': float(config.fps),
            'joint_names': list(config.joint_names),
            **({'calibration_file': calibration_file} if calibration_file else {}),
            **({'follower_calibration_file': follower} if follower else {})}


def _dataset_plan(folder, repo_id, config_file, specs):
    """
    Return the dataset recorder's parameters ({} without ``folder``).

    ValueError names a dataset of another fps or robot type, or a side without the executor.
    """
    if not folder:
        return {}
    import json
    import os
    from remote_inference_py.executor.config import from_parameters_file
    if not any(s.name == 'executor' for s in specs):
        raise ValueError('record_dataset records on the robot side: side both or robot')
    config, settings = from_parameters_file(config_file)
    fps = config.fps * config.interpolation_multiplier
    robot_type = 'so101_follower'
    info = os.path.join(folder, 'meta', 'info.json')
    if os.path.isfile(info):
        with open(info) as stream:
            existing = json.load(stream)
        if existing.get('fps') != fps:
            raise ValueError(f'record_dataset {folder!r} holds a dataset at fps '
                             f'{existing.get("fps")!r}; this run records {fps:g} (the executor '
                             'fps): name another folder')
        if existing.get('robot_type') != robot_type:
            raise ValueError(f'record_dataset {folder!r} holds a dataset of robot_type '
                             f'{existing.get("robot_type")!r}; this run records {robot_type!r}')
    elif os.path.exists(folder) and not (os.path.isdir(folder) and not os.listdir(folder)):
        raise ValueError(f'record_dataset {folder!r} exists and is not a LeRobot dataset (no '
                         'meta/info.json)')
    return {'dataset_dir': folder, 'fps': fps, 'robot_type': robot_type,
            'start_executor': settings.autostart,
            **({'repo_id': repo_id} if repo_id else {})}


def parameter_text(value):
    """Format a parameter value for ``-p name:=value`` (YAML, as the ROS CLI parses it)."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(parameter_text(v) for v in value) + ']'
    if isinstance(value, str):
        import yaml
        if yaml.safe_load(value or "''") != value:   # e.g. '{front: ...}' or '42': quote it
            return yaml.safe_dump(value, default_style="'").strip().removesuffix('\n...')
    return str(value)


def param_args(values):
    """Turn {name: value} into ``-p name:=value`` ROS arguments (what launch passes)."""
    args = []
    for name, value in values.items():
        args += ['-p', f'{name}:={parameter_text(value)}']
    return args


def fleet_plan(*, robots=2, servers=1, max_clients=0, on_server_loss=ON_SERVER_LOSS.default,
               checkpoint='', device='', config_file='', share_dir='', robot_prefix='robot_',
               server_prefix='server_'):
    """
    Decide what a fleet starts: ``robots`` simulated arms and ``servers`` policy servers.

    Robot i runs a hardware interface (the MuJoCo SO-101 without rendering, light enough for
    several per core) and an executor in the namespace ``/<robot_prefix>i``; server j runs in
    ``/<server_prefix>j`` and serves every robot namespace with its policy interface at
    ``/<robot>/<server_prefix>j/policy/...`` (``interface_namespace``). Each executor lists every
    server as a candidate (``policy_servers``) and joins the least loaded with room.
    ``max_clients`` per server defaults (0) to ceil(robots / servers): all fit, spread evenly.
    ``on_server_loss`` is each executor's, checked by its settings (:class:`NodeSettings`: one
    of its choices; failover needs another server). ``config_file`` defaults to
    ``<share_dir>/config/so101_fleet.yaml``. Raises ValueError naming a bad argument.
    """
    import os
    for name, value, low in (('robots', robots, 1), ('servers', servers, 1),
                             ('max_clients', max_clients, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f'{name} must be an integer >= {low}, got {value!r}')
    server_names = [f'{server_prefix}{j}' for j in range(servers)]
    try:
        NodeSettings(policy_servers=server_names, on_server_loss=on_server_loss)
    except ValueError as error:
        raise ValueError(f'on_server_loss {on_server_loss!r} with servers={servers}: '
                         f'{error}') from None
    if not config_file:
        config_file = os.path.join(share_dir, 'config', 'so101_fleet.yaml')
    if not os.path.isfile(config_file):
        raise ValueError(f'config file {config_file!r} does not exist')
    check_checkpoint(checkpoint)
    robot_namespaces = [f'/{robot_prefix}{i}' for i in range(robots)]
    slots = max_clients or -(-robots // servers)
    nodes = []
    for name in server_names:
        nodes.append(NodeLaunch('policy_server', 'policy_server', f'/{name}', config_file, {
            'robot_namespaces': robot_namespaces, 'interface_namespace': name,
            'max_clients': slots,
            **{k: v for k, v in (('checkpoint', checkpoint), ('device', device)) if v}}))
    for namespace in robot_namespaces:
        nodes.append(NodeLaunch('hardware_interface', 'hardware_interface', namespace,
                                config_file, {'backend': 'sim'}))
        nodes.append(NodeLaunch('executor', 'executor', namespace, config_file, {
            'policy_servers': server_names, 'on_server_loss': on_server_loss}))
    return nodes
