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

from remote_inference_py.common import discovery


def discovery_actions(value, stop_with_parent_env):
    """
    Return the launch actions pointing a launch's nodes at the discovery server(s) asked for.

    ``value`` is the ``discovery_server`` launch argument (:func:`.common.discovery.parse`: a
    ValueError naming a bad value stops the launch before any node starts). ``start`` adds the
    server process, stopped with the launch (``stop_with_parent_env`` names the launch's pid
    to it). Used by bringup.launch.py and fleet.launch.py.
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
            additional_env={stop_with_parent_env: str(os.getpid())}))
    return actions
