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

"""Launch actions shared by the package's launch files (bringup.launch.py, fleet.launch.py)."""

import os

from ament_index_python.packages import get_package_prefix
from launch.actions import (
    ExecuteProcess, LogInfo, SetEnvironmentVariable, UnsetEnvironmentVariable)
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from remote_inference_py.common import discovery
from remote_inference_py.common.node_main import STOP_WITH_PARENT_ENV


def node_action(node, log_level):
    """
    Return the launch Node of one planned node (:class:`..bringup.NodeSpec`).

    Strings stay strings (launch would read '{front: ...}' or '42' as YAML). Our nodes stop
    when the launch process dies (SIGTERM or SIGKILL to it leaves no orphan moving the arm;
    common/node_main.py), and stop cleanly on SIGINT: the executor returns the arm first, so
    escalation waits.
    """
    return Node(
        package='remote_inference', executable=node.executable, name=node.name,
        namespace=node.namespace, output='screen', emulate_tty=True,
        parameters=[p for p in (node.params_file, {
            k: ParameterValue(v, value_type=str) if isinstance(v, str) else v
            for k, v in node.overrides.items()}) if p],
        arguments=['--ros-args', '--log-level', log_level],
        additional_env={STOP_WITH_PARENT_ENV: str(os.getpid())},
        sigterm_timeout='15', sigkill_timeout='20')


def discovery_actions(value):
    """
    Return the launch actions pointing a launch's nodes at the discovery server(s) asked for.

    ``value`` is the ``discovery_server`` launch argument (:func:`.common.discovery.parse`: a
    ValueError naming a bad value stops the launch before any node starts). ``start`` adds the
    server process, stopped with the launch.
    """
    choice = discovery.parse(value)
    client = choice.client_value()
    if client is None:
        return []
    if client == '':
        return [UnsetEnvironmentVariable(discovery.ENV)]
    actions = [SetEnvironmentVariable(discovery.ENV, client),
               LogInfo(msg=f'discovery through the Fast DDS discovery server at {client}')]
    if choice.mode == 'start':
        script = os.path.join(get_package_prefix('remote_inference'), 'lib', 'remote_inference',
                              'discovery_server')
        actions.append(ExecuteProcess(
            cmd=[script, '--port', str(choice.port)], name='discovery_server', output='screen',
            additional_env={STOP_WITH_PARENT_ENV: str(os.getpid())}))
    return actions
