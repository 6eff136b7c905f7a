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
The arguments of ``bringup.launch.py`` and ``fleet.launch.py``, declared once (no ROS).

The launch files declare these (``DeclareLaunchArgument``, which refuses a value outside
``choices``); ``tools/param_tables.py`` writes the documentation's tables from them. An
argument that sets a node's setting takes its choices, and where the argument is that
setting, its default and description, from the setting's declaration. What an empty value
means is in each description (mostly: the config file's value).
"""

import dataclasses
from typing import Optional, Tuple

from remote_inference_py import bringup


@dataclasses.dataclass(frozen=True)
class Argument:
    """One launch argument: its name, default, meaning and, if it has them, its choices."""

    name: str
    default: str
    description: str
    choices: Tuple[str, ...] = ()

    def launch_choices(self) -> Optional[list]:
        """Return the choices as ``DeclareLaunchArgument`` takes them (None: any value)."""
        return list(self.choices) or None


def _or(values) -> str:
    return ' or '.join(v for v in values if v)


BRINGUP = (
    Argument('backend', 'sim', 'sim (MuJoCo SO-101, no hardware) or feetech (SO-100/SO-101 '
                               'servos).', bringup.BACKENDS),
    Argument('port', '/dev/ttyACM0', 'Serial port of the Feetech bus (backend:=feetech).'),
    Argument('checkpoint', '', 'Policy file (.pt2 or TorchScript with its manifest, or a LeRobot '
                               'checkpoint folder or Hugging Face Hub id); empty: the built-in '
                               'demo policy.'),
    Argument('device', '', 'Torch device of the policy server (its device setting: auto, cpu, '
                           'cuda, cuda:<n> or mps); empty: the config file value.'),
    Argument('deployment', '', 'Deployment name checked at admission; empty: the config file '
                               'value.'),
    Argument('config_file', '', 'Parameters YAML; empty: config/so101_<backend>.yaml of this '
                                'package.'),
    Argument('namespace', '', 'Namespace of every node and topic (one per robot).'),
    Argument('side', 'both', 'What runs on this host: both, robot (hardware + executor) or '
                             'server (policy server, e.g. on the GPU host).', bringup.SIDES),
    Argument('record', 'false', 'true: record the topics that describe a run to an MCAP bag '
                                '(until the robot side has stopped, the return included).'),
    Argument('bag_dir', '', 'Where record:=true writes; empty: ./remote_inference_<date-time>.'),
    Argument('task', '', 'Language instruction sent with each request; empty: the config '
                         'value.'),
    Argument('cameras', '', "Cameras of the real arm in LeRobot's --robot.cameras form, e.g. "
                            '"{front: {type: opencv, index_or_path: /dev/video0, width: 640, '
                            'height: 480, fps: 30}}"; empty: the config file\'s '
                            "(backend:=feetech; '{}': none)."),
    Argument('image_transport', '', 'How the policy server reads cameras (its image_transport):'
                                    f' {_or(bringup.IMAGE_TRANSPORTS)} (JPEG); empty: '
                                    'compressed with side:=server, else the config value.',
             ('', *bringup.IMAGE_TRANSPORTS)),
    Argument('record_images', 'false', 'true: record:=true also records every camera as JPEG '
                                       '(cameras/<name>/image_raw/compressed).'),
    Argument('record_dataset', '', 'Folder of a LeRobot dataset to record the run to (new, or '
                                   'one of the same features, fps and robot type to append '
                                   'to); empty: none. See docs/recording.md.'),
    Argument('dataset_repo_id', '', "The dataset's repo id; empty: local/<folder name>."),
    Argument('discovery_server', '', 'How nodes discover each other: empty: as the environment '
                                     'says (ROS_DISCOVERY_SERVER or simple discovery); off: '
                                     'simple discovery; start or start:PORT: start a Fast DDS '
                                     'discovery server here (port 11811) and use it; '
                                     'HOST:PORT[;HOST:PORT]: use running server(s). The ros2 '
                                     'CLI then needs ROS_SUPER_CLIENT=TRUE.'),
    Argument('driver', '', f'Who drives the follower once motion starts: {_or(bringup.DRIVERS)}'
                           ' (the leader arm); empty: the config value. Switch while running: '
                           'ros2 service call /executor/set_driver std_srvs/srv/SetBool '
                           '"{data: true}".', ('', *bringup.DRIVERS)),
    Argument('leader_port', '', 'Serial port of the SO-101 leader arm, e.g. /dev/ttyACM1; '
                                'empty: no leader arm. See docs/recording.md.'),
    Argument('leader_calibration_file', '', "The leader's LeRobot calibration JSON; empty: "
                                            'default.'),
    Argument('log_level', 'info', 'Log level of every node (debug shows per-request details).'),
)
"""``bringup.launch.py``: one robot and its policy server, or either side alone."""

FLEET = (
    Argument('robots', '2', 'Simulated arms, each in its own namespace /robot_<i>.'),
    Argument('servers', '1', 'Policy servers, /server_<j>; each serves every robot namespace.'),
    Argument('max_clients', '0', 'Sessions per server at most; 0: ceil(robots / servers).'),
    Argument('on_server_loss', bringup.ON_SERVER_LOSS.default,
             bringup.ON_SERVER_LOSS.description, bringup.ON_SERVER_LOSS.choices),
    Argument('checkpoint', '', 'Policy file or LeRobot checkpoint (folder or Hugging Face Hub '
                               'id) for every server; empty: the built-in demo policy.'),
    Argument('device', '', 'Torch device of the policy servers (auto, cpu, cuda, cuda:<n> or '
                           'mps); empty: the config file value.'),
    Argument('config_file', '', 'Parameters YAML; empty: config/so101_fleet.yaml of this '
                                'package.'),
    Argument('log_level', 'info', 'Log level of every node.'),
    Argument('discovery_server', '', 'As in bringup.launch.py: empty (the environment decides),'
                                     ' off, start or start:PORT (one server for the whole '
                                     'fleet, started here), or HOST:PORT[;HOST:PORT].'),
)
"""``fleet.launch.py``: N simulated robots and M policy servers on one graph."""

LAUNCH_FILES = {'bringup.launch.py': BRINGUP, 'fleet.launch.py': FLEET}


def markdown_table(arguments) -> str:
    """Return a markdown table of launch arguments: name, default, choices, meaning."""
    lines = ['| argument | default | choices | description |', '|---|---|---|---|']
    for argument in arguments:
        default = f'`{argument.default}`' if argument.default else '(empty)'
        choices = ', '.join(f'`{c}`' if c else '(empty)' for c in argument.choices)
        text = argument.description.replace('|', '\\|')
        lines.append(f'| `{argument.name}` | {default} | {choices} | {text} |')
    return '\n'.join(lines) + '\n'
