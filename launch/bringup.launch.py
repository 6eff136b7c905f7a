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
Bring up remote_inference: ``ros2 launch remote_inference bringup.launch.py [arg:=value ...]``.

What starts comes from ``remote_inference_py.bringup`` (one table shared with ``./run demo``
and the tests); this file only maps it onto launch actions. Examples::

    ros2 launch remote_inference bringup.launch.py                        # simulated arm
    ros2 launch remote_inference bringup.launch.py backend:=feetech port:=/dev/ttyACM0
    ros2 launch remote_inference bringup.launch.py side:=server checkpoint:=/models/act.pt2
    ros2 launch remote_inference bringup.launch.py side:=robot record:=true bag_dir:=run1
    ros2 launch remote_inference bringup.launch.py record_dataset:=pick_data \
        dataset_repo_id:=me/so101_pick task:='pick up the cube'
    ros2 launch remote_inference bringup.launch.py backend:=feetech port:=/dev/ttyACM0 \
        leader_port:=/dev/ttyACM1 leader_calibration_file:=leader.json driver:=human
    ros2 launch remote_inference bringup.launch.py discovery_server:=start      # + a server
    ros2 launch remote_inference bringup.launch.py side:=robot discovery_server:=10.0.0.5:11811
    ros2 launch remote_inference bringup.launch.py backend:=feetech side:=robot \
        cameras:="{front: {type: opencv, index_or_path: /dev/video0, width: 640, height: 480,
                  fps: 30}}"
"""

import os
import time

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration

from remote_inference_py import bringup, launching
from remote_inference_py.launch_arguments import BRINGUP as ARGUMENTS


def _launch_setup(context):
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in ARGUMENTS}
    share = get_package_share_directory('remote_inference')
    record = values['record'].lower() in ('true', '1', 'yes')
    record_images = values['record_images'].lower() in ('true', '1', 'yes')
    nodes = bringup.plan(
        side=values['side'], backend=values['backend'], port=values['port'],
        checkpoint=values['checkpoint'], device=values['device'],
        deployment=values['deployment'], config_file=values['config_file'],
        namespace=values['namespace'], task=values['task'], share_dir=share, record=record,
        bag_dir=values['bag_dir'] or time.strftime('remote_inference_%Y%m%d_%H%M%S'),
        cameras=values['cameras'], image_transport=values['image_transport'],
        record_images=record_images, record_dataset=values['record_dataset'],
        dataset_repo_id=values['dataset_repo_id'], driver=values['driver'],
        leader_port=values['leader_port'],
        leader_calibration_file=values['leader_calibration_file'])
    actions = launching.discovery_actions(values['discovery_server'])
    if 'FASTDDS_DEFAULT_PROFILES_FILE' not in os.environ:
        profile = 'fastdds_shm.xml' if values['side'] == 'both' else 'fastdds_lan.xml'
        actions.append(SetEnvironmentVariable('FASTDDS_DEFAULT_PROFILES_FILE',
                                              os.path.join(share, 'config', profile)))
    for node in nodes:
        if node.executable == 'record':
            actions.append(LogInfo(msg=f'recording to {node.overrides["bag_dir"]}'))
        if node.executable == 'record_dataset':
            actions.append(LogInfo(msg=f'recording a LeRobot dataset to '
                                       f'{node.overrides["dataset_dir"]}'))
        actions.append(launching.node_action(node, values['log_level']))
    return actions


def generate_launch_description():
    """Declare the arguments; decide what to start once their values are known."""
    return LaunchDescription(
        [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                               choices=a.launch_choices()) for a in ARGUMENTS]
        + [OpaqueFunction(function=_launch_setup)])
