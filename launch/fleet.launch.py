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
A fleet on one graph: ``ros2 launch remote_inference fleet.launch.py robots:=N servers:=M``.

N simulated SO-101s (``/robot_0`` .. : the MuJoCo arm without rendering and an executor
each) and M policy servers (``/server_0`` .. , each serving every robot namespace at
``/<robot>/server_<j>/policy/...``). Every executor lists every server as a candidate and
joins the least loaded one with room; ``max_clients`` per server defaults to ceil(N / M).
What starts comes from ``remote_inference_py.bringup.fleet_plan``; ``on_server_loss`` is the
executor's setting of that name (its choices, default and description are the declaration's,
``bringup.ON_SERVER_LOSS``). Examples::

    ros2 launch remote_inference fleet.launch.py robots:=4 servers:=2
    ros2 launch remote_inference fleet.launch.py robots:=4 servers:=2 on_server_loss:=failover \
        max_clients:=4
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration

from remote_inference_py import bringup, launching
from remote_inference_py.launch_arguments import FLEET as ARGUMENTS


def _integer(values, name):
    try:
        return int(values[name])
    except ValueError:
        raise ValueError(f'{name} must be an integer, got {values[name]!r}') from None


def _launch_setup(context):
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in ARGUMENTS}
    share = get_package_share_directory('remote_inference')
    nodes = bringup.fleet_plan(
        robots=_integer(values, 'robots'), servers=_integer(values, 'servers'),
        max_clients=_integer(values, 'max_clients'), on_server_loss=values['on_server_loss'],
        checkpoint=values['checkpoint'], device=values['device'],
        config_file=values['config_file'], share_dir=share)
    actions = launching.discovery_actions(values['discovery_server'])
    if 'FASTDDS_DEFAULT_PROFILES_FILE' not in os.environ:
        actions.append(SetEnvironmentVariable('FASTDDS_DEFAULT_PROFILES_FILE', os.path.join(
            share, 'config', 'fastdds_shm.xml')))
    for node in nodes:
        actions.append(launching.node_action(node, values['log_level']))
    return actions


def generate_launch_description():
    """Declare the arguments; decide what to start once their values are known."""
    return LaunchDescription(
        [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                               choices=a.launch_choices()) for a in ARGUMENTS]
        + [OpaqueFunction(function=_launch_setup)])
