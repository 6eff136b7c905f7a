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

"""The bringup table and the launch plan built from launch arguments (no ROS needed)."""

import re

import pytest

from remote_inference_py import bringup
from remote_inference_py.policy_server.loading import infer_policy_type
from remote_inference_py.policy_server.runtimes import RuntimeLoadError
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES


@pytest.fixture
def share(tmp_path):
    """A share folder laid out like the installed one, with empty config files."""
    (tmp_path / 'config').mkdir()
    for backend in bringup.BACKENDS:
        (tmp_path / 'config' / f'so101_{backend}.yaml').write_text('{}\n')
    return str(tmp_path)


def test_every_subscribed_topic_has_a_publisher_of_the_same_type():
    published = {t.name: t for n in bringup.NODES for t in n.publishes}
    for node in bringup.NODES:
        for topic in node.subscribes:
            assert topic.name in published, f'{node.name} subscribes {topic.name}: no publisher'
            assert published[topic.name].type == topic.type


@pytest.mark.parametrize('side, names', [
    ('both', ['hardware_interface', 'executor', 'policy_server']),
    ('robot', ['hardware_interface', 'executor']),
    ('server', ['policy_server']),
])
def test_sides_select_nodes(side, names, share):
    assert [n.name for n in bringup.plan(side=side, share_dir=share)] == names


def test_overrides_reach_the_right_nodes(tmp_path, share):
    checkpoint = tmp_path / 'policy.pt2'
    checkpoint.write_bytes(b'x')
    nodes = {n.name: n for n in bringup.plan(
        checkpoint=str(checkpoint), device='cuda', deployment='lab', task='stack',
        namespace='robot1', share_dir=share)}
    assert nodes['policy_server'].overrides == {'checkpoint': str(checkpoint),
                                                'device': 'cuda', 'deployment': 'lab'}
    assert nodes['executor'].overrides == {'deployment': 'lab', 'task': 'stack'}
    assert nodes['hardware_interface'].overrides == {'backend': 'sim'}
    assert all(n.namespace == 'robot1' for n in nodes.values())
    assert nodes['executor'].params_file.endswith('config/so101_sim.yaml')


@pytest.mark.parametrize('kwargs, named', [
    ({'backend': 'gazebo'}, "backend 'gazebo'"),
    ({'side': 'laptop'}, "side 'laptop'"),
    ({'config_file': '/nonexistent.yaml'}, "config file '/nonexistent.yaml'"),
    ({'checkpoint': '/nonexistent/act.pt2'}, "checkpoint '/nonexistent/act.pt2'"),
    ({'backend': 'feetech', 'port': '/dev/ttyNOPE'}, "serial port '/dev/ttyNOPE'"),
    ({'image_transport': 'theora'}, "image_transport 'theora'"),
    ({'cameras': '{front: {index_or_path: 0}}'}, 'cameras are for the real arm'),
])
def test_bad_launch_arguments_are_named_before_anything_starts(kwargs, named, share):
    with pytest.raises(ValueError, match=named):
        bringup.plan(share_dir=share, **kwargs)


def test_record_adds_the_recorder_in_the_namespace(tmp_path, share):
    nodes = bringup.plan(share_dir=share, namespace='robot1', record=True,
                         bag_dir=str(tmp_path / 'bag'))
    assert [n.name for n in nodes][-1] == 'recorder'
    assert nodes[-1].executable == 'record' and nodes[-1].namespace == 'robot1'
    assert nodes[-1].overrides == {'bag_dir': str(tmp_path / 'bag')}
    assert not any('image' in t for t in bringup.RECORD_TOPICS)
    with pytest.raises(ValueError, match="bag_dir '.*' exists already"):
        bringup.plan(share_dir=share, record=True, bag_dir=str(tmp_path))


def test_record_starts_a_self_starting_executor_once_the_run_s_topics_matched(tmp_path):
    import pathlib
    share = str(pathlib.Path(__file__).resolve().parents[2])      # the real config files
    bag = str(tmp_path / 'bag')
    nodes = {n.name: n for n in bringup.plan(share_dir=share, record=True, bag_dir=bag)}
    # The sim starts itself: the executor waits for the recorder instead.
    assert nodes['recorder'].overrides == {'bag_dir': bag, 'start_executor': True}
    assert nodes['executor'].overrides['autostart'] is False
    # With a dataset recorder too, that one starts it; no executor here, nothing to start.
    both = {n.name: n for n in bringup.plan(share_dir=share, record=True, bag_dir=bag,
                                            record_dataset=str(tmp_path / 'data'))}
    assert both['recorder'].overrides == {'bag_dir': bag}
    assert both['dataset_recorder'].overrides['start_executor'] is True
    server = {n.name: n for n in bringup.plan(share_dir=share, side='server', record=True,
                                              bag_dir=bag)}
    assert server['recorder'].overrides == {'bag_dir': bag}


def test_a_python_factory_checkpoint_is_not_a_path(share):
    nodes = {n.name: n for n in bringup.plan(
        checkpoint='remote_inference_py.evaluation.expert:expert_runtime', share_dir=share)}
    assert nodes['policy_server'].overrides['checkpoint'].endswith(':expert_runtime')


def server_reads(checkpoint):
    """What the policy server's policy_type auto makes of a checkpoint ('' if it refuses it)."""
    try:
        return infer_policy_type(checkpoint)
    except RuntimeLoadError:
        return ''


@pytest.mark.parametrize('checkpoint', ['lerobot/act_so101', 'user/model.v2',
                                        'HuggingFaceTB/SmolVLM2-500M-Video-Instruct'])
def test_a_hub_id_the_server_takes_is_not_refused(checkpoint, share, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # no such relative folder here
    assert server_reads(checkpoint) == 'lerobot'    # the server loads it as a Hub id
    nodes = {n.name: n for n in bringup.plan(checkpoint=checkpoint, share_dir=share)}
    assert nodes['policy_server'].overrides['checkpoint'] == checkpoint
    fleet = bringup.fleet_plan(checkpoint=checkpoint,
                               config_file=f'{share}/config/so101_sim.yaml')
    assert fleet[0].overrides['checkpoint'] == checkpoint


@pytest.mark.parametrize('checkpoint', ['/nonexistent/act', './act_so101', '../models/act',
                                        'outputs/train/act', 'user/model.pt2', 'policy.ts',
                                        'act_so101', '~/models/act', '.cache/act'])
def test_a_missing_local_checkpoint_is_named(checkpoint, share, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert server_reads(checkpoint) != 'lerobot'    # a path to the server too
    named = re.escape(f'checkpoint {checkpoint!r} does not exist')
    with pytest.raises(ValueError, match=named):
        bringup.plan(checkpoint=checkpoint, share_dir=share)
    with pytest.raises(ValueError, match=named):
        bringup.fleet_plan(checkpoint=checkpoint, config_file=f'{share}/config/so101_sim.yaml')
    # Only the policy server reads it: the robot side's plan does not check it.
    assert [n.name for n in bringup.plan(side='robot', checkpoint=checkpoint,
                                         share_dir=share)] == ['hardware_interface', 'executor']


def test_an_existing_relative_folder_is_a_checkpoint(share, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'outputs' / 'train' / 'act').mkdir(parents=True)
    nodes = {n.name: n for n in bringup.plan(checkpoint='outputs/train/act', share_dir=share)}
    assert nodes['policy_server'].overrides['checkpoint'] == 'outputs/train/act'


def test_param_args_format_values_as_the_ros_cli_parses_them():
    assert bringup.param_args({'autostart': True, 'size': [48, 64], 'names': ('a', 'b'),
                               'latency': 0.3, 'task': 'pick'}) == [
        '-p', 'autostart:=true', '-p', 'size:=[48, 64]', '-p', 'names:=[a, b]',
        '-p', 'latency:=0.3', '-p', 'task:=pick']


def test_cameras_image_transport_and_record_images_reach_their_nodes(tmp_path, share):
    port = tmp_path / 'ttyACM0'
    port.write_text('')
    text = '{front: {type: opencv, index_or_path: /dev/video0, width: 640, height: 480}}'
    nodes = {n.name: n for n in bringup.plan(
        backend='feetech', port=str(port), cameras=text, side='robot', record=True,
        bag_dir=str(tmp_path / 'bag'), record_images=True, share_dir=share)}
    assert nodes['hardware_interface'].overrides == {'backend': 'feetech', 'port': str(port),
                                                     'cameras': text}
    assert nodes['hardware_interface'].params_file.endswith('config/so101_feetech.yaml')
    assert nodes['recorder'].overrides == {'bag_dir': str(tmp_path / 'bag'),
                                           'record_images': True}
    # A server on its own host reads JPEG frames unless told otherwise.
    server = bringup.plan(side='server', share_dir=share)[0]
    assert server.overrides == {'image_transport': 'compressed'}   # device: the config's
    raw = bringup.plan(side='server', image_transport='raw', share_dir=share)[0]
    assert raw.overrides['image_transport'] == 'raw'
    assert 'image_transport' not in bringup.plan(share_dir=share)[2].overrides
    # The camera dictionary survives the ROS command line as one string.
    assert bringup.param_args({'cameras': text, 'deployment': '42'}) == [
        '-p', f"cameras:='{text}'", '-p', "deployment:='42'"]


def test_fleet_plan_spreads_robots_over_servers_each_in_its_namespace(tmp_path):
    (tmp_path / 'config').mkdir()
    (tmp_path / 'config' / 'so101_fleet.yaml').write_text('{}\n')
    nodes = bringup.fleet_plan(robots=3, servers=2, share_dir=str(tmp_path))
    servers = [n for n in nodes if n.executable == 'policy_server']
    assert [(n.namespace, n.overrides['interface_namespace']) for n in servers] == [
        ('/server_0', 'server_0'), ('/server_1', 'server_1')]
    assert all(n.overrides['robot_namespaces'] == ['/robot_0', '/robot_1', '/robot_2'] and
               n.overrides['max_clients'] == 2 for n in servers)   # ceil(3 / 2)
    executors = [n for n in nodes if n.executable == 'executor']
    assert [n.namespace for n in executors] == ['/robot_0', '/robot_1', '/robot_2']
    assert all(n.overrides == {'policy_servers': ['server_0', 'server_1'],
                               'on_server_loss': 'fault'} for n in executors)
    arms = [n for n in nodes if n.executable == 'hardware_interface']
    assert [n.namespace for n in arms] == ['/robot_0', '/robot_1', '/robot_2']
    assert bringup.fleet_plan(robots=3, servers=2, max_clients=5,
                              share_dir=str(tmp_path))[0].overrides['max_clients'] == 5


@pytest.mark.parametrize('arguments, message', [
    ({'robots': 0}, 'robots must be an integer >= 1, got 0'),
    ({'servers': 0}, 'servers must be an integer >= 1, got 0'),
    ({'max_clients': -1}, 'max_clients must be an integer >= 0, got -1'),
    ({'on_server_loss': 'retry'}, "'retry'; expected one of fault, failover"),
    ({'on_server_loss': 'failover', 'servers': 1}, 'list another server to fail over to'),
    ({'config_file': '/nonexistent.yaml'}, "config file '/nonexistent.yaml' does not exist"),
])
def test_fleet_plan_refuses_bad_arguments_by_name(tmp_path, arguments, message):
    (tmp_path / 'config').mkdir()
    (tmp_path / 'config' / 'so101_fleet.yaml').write_text('{}\n')
    with pytest.raises(ValueError, match=message):
        bringup.fleet_plan(share_dir=str(tmp_path), **{'robots': 2, 'servers': 2, **arguments})


def test_record_dataset_adds_the_dataset_recorder_which_starts_the_executor(tmp_path):
    import json
    import pathlib
    share = pathlib.Path(__file__).resolve().parents[2]      # the real config files
    folder = str(tmp_path / 'data')
    nodes = {n.name: n for n in bringup.plan(share_dir=str(share), namespace='robot1',
                                             record_dataset=folder,
                                             dataset_repo_id='me/pick')}
    recorder = nodes['dataset_recorder']
    assert recorder.executable == 'record_dataset' and recorder.namespace == 'robot1'
    assert recorder.overrides == {'dataset_dir': folder, 'fps': 30.0, 'repo_id': 'me/pick',
                                  'robot_type': 'so101_follower', 'start_executor': True}
    # The sim starts itself: the executor waits for the recorder instead.
    assert nodes['executor'].overrides['autostart'] is False
    # The real arm waits for the operator's start either way.
    real = {n.name: n for n in bringup.plan(
        share_dir=str(share), backend='feetech', port=str(tmp_path), record_dataset=folder)}
    assert real['dataset_recorder'].overrides['start_executor'] is False
    assert 'autostart' not in real['executor'].overrides
    # An existing dataset of another fps or robot, or a folder of something else: named.
    (tmp_path / 'data' / 'meta').mkdir(parents=True)
    (tmp_path / 'data' / 'meta' / 'info.json').write_text(json.dumps(
        {'fps': 15, 'robot_type': 'so101_follower', 'features': {}}))
    with pytest.raises(ValueError, match=r"record_dataset '.*data' holds a dataset at fps 15; "
                                         r'this run records 30'):
        bringup.plan(share_dir=str(share), record_dataset=folder)
    (tmp_path / 'data' / 'meta' / 'info.json').write_text(json.dumps(
        {'fps': 30, 'robot_type': 'koch_follower', 'features': {}}))
    with pytest.raises(ValueError, match="robot_type 'koch_follower'"):
        bringup.plan(share_dir=str(share), record_dataset=folder)
    (tmp_path / 'notes').mkdir()
    (tmp_path / 'notes' / 'a.txt').write_text('mine')
    with pytest.raises(ValueError, match='is not a LeRobot dataset'):
        bringup.plan(share_dir=str(share), record_dataset=str(tmp_path / 'notes'))
    with pytest.raises(ValueError, match='records on the robot side'):
        bringup.plan(share_dir=str(share), side='server', record_dataset=folder)


def test_a_leader_port_adds_the_leader_arm_at_the_executor_fps_and_driver_reaches_it(
        tmp_path, share):
    port = tmp_path / 'ttyACM1'
    port.write_text('')
    leader_file = tmp_path / 'leader.json'
    leader_file.write_text('{}')
    nodes = {n.name: n for n in bringup.plan(side='robot', share_dir=share, driver='human',
                                             leader_port=str(port),
                                             leader_calibration_file=str(leader_file))}
    assert list(nodes) == ['hardware_interface', 'executor', 'leader_arm']
    assert nodes['executor'].overrides == {'driver': 'human'}
    assert nodes['leader_arm'].overrides == {
        'port': str(port), 'publish_rate_hz': 30.0, 'calibration_file': str(leader_file),
        'joint_names': list(SO101_JOINT_NAMES)}
    assert [n.name for n in bringup.plan(share_dir=share)] == [
        'hardware_interface', 'executor', 'policy_server']   # no leader_port: as before


@pytest.mark.parametrize('changes, message', [
    ({'driver': 'robot'}, "driver 'robot' is not one of policy, human"),
    ({'leader_port': '/dev/no_such_leader'},
     "leader_port '/dev/no_such_leader' does not exist (is the leader arm plugged in?)"),
    ({'leader_calibration_file': 'x.json'},
     'leader_calibration_file is set but leader_port is empty'),
    ({'side': 'server', 'leader_port': '/dev/null'},
     'leader_port needs the executor on this host (side both or robot)'),
])
def test_bad_leader_arguments_are_refused_by_name_before_anything_starts(
        share, changes, message):
    with pytest.raises(ValueError) as raised:
        bringup.plan(share_dir=share, **changes)
    assert str(raised.value) == message


def test_every_launch_argument_default_is_one_of_its_choices():
    # DeclareLaunchArgument checks this only when a launch file is loaded.
    from remote_inference_py.launch_arguments import LAUNCH_FILES
    for launch_file, arguments in LAUNCH_FILES.items():
        names = [a.name for a in arguments]
        assert len(names) == len(set(names)), launch_file
        for argument in arguments:
            assert not argument.choices or argument.default in argument.choices, \
                (launch_file, argument.name)
