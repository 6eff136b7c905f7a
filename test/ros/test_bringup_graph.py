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
The bringup table against the live system: the nodes the launch file starts, started from the
table with the shipped config, must exist, declare every parameter of the YAML files with the
YAML's type, and publish and subscribe (at least) the table's topics with compatible QoS.
"""

import pathlib

import pytest
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import DescribeParameters, ListParameters
from rclpy.qos import qos_check_compatible, QoSCompatibility
from ros_fixtures import INSTALL_LIB
import yaml

from remote_inference_py import bringup
from remote_inference_py.common.service_call import RETRY_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / 'config').glob('so101_*.yaml'))
YAML_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
              float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}
ARRAY_TYPES = {bool: ParameterType.PARAMETER_BOOL_ARRAY,
               int: ParameterType.PARAMETER_INTEGER_ARRAY,
               float: ParameterType.PARAMETER_DOUBLE_ARRAY,
               str: ParameterType.PARAMETER_STRING_ARRAY}


def yaml_sections(path):
    """Return {node name: {parameter: value}} of a params file (keys may be /**/name)."""
    data = yaml.safe_load(path.read_text())
    return {key.split('/')[-1]: value['ros__parameters'] for key, value in data.items()}


def expected_type(value):
    if isinstance(value, list):
        return ARRAY_TYPES[type(value[0])]
    return YAML_TYPES[type(value)]


def test_every_executable_of_the_table_is_installed():
    for node in bringup.NODES:
        assert (INSTALL_LIB / node.executable).exists(), node.executable


@pytest.mark.parametrize('config', CONFIGS, ids=[c.name for c in CONFIGS])
def test_config_files_configure_every_node_of_the_table(config):
    sections = yaml_sections(config)
    assert set(sections) == {n.name for n in bringup.NODES}, config.name


def test_live_nodes_match_the_table_and_the_config(processes, ros):
    node, spinner = ros
    config = ROOT / 'config' / 'so101_sim.yaml'
    small = {'hardware_interface': ['-p', 'sim_image_width:=64', '-p', 'sim_image_height:=48'],
             'policy_server': ['-p', 'demo_image_size:=[48,64]'], 'executor': []}
    procs = {spec.name: processes.console_script(
        spec.executable, node_name=spec.name, params=str(config),
        ros_args=small[spec.name]) for spec in bringup.NODES}
    for proc in procs.values():
        assert proc.proc.poll() is None, proc.output()

    # Parameters: every YAML key is declared by its node, with the YAML's type.
    for name, values in yaml_sections(config).items():
        lister = node.create_client(ListParameters, f'/{name}/list_parameters')
        # Read-only calls: asked again after RETRY_S without an answer, as the nodes ask.
        declared = set(spinner.call(lister, ListParameters.Request(), 30,
                                    retry_s=RETRY_S).result.names)
        missing = sorted(set(values) - declared)
        assert not missing, f'{name} does not declare {missing} (in {config.name})'
        describer = node.create_client(DescribeParameters, f'/{name}/describe_parameters')
        described = spinner.call(describer, DescribeParameters.Request(names=list(values)),
                                 retry_s=RETRY_S)
        for key, descriptor in zip(values, described.descriptors):
            assert descriptor.type == expected_type(values[key]), \
                f'{name}.{key}: declared type {descriptor.type}, YAML value {values[key]!r}'

    # Topics: each node has exactly the table's endpoints, and every subscription is
    # compatible with every publisher of its topic.
    def endpoints(info_getter, topic):
        return {(i.node_name, i.topic_type): i.qos_profile
                for i in info_getter('/' + topic)}

    table_topics = bringup.topic_types()
    for spec in bringup.NODES:
        for kind, topics in (('publishes', spec.publishes), ('subscribes', spec.subscribes)):
            getter = (node.get_publishers_info_by_topic if kind == 'publishes'
                      else node.get_subscriptions_info_by_topic)
            for topic in topics:
                spinner.until(lambda: (spec.name, topic.type) in endpoints(getter, topic.name),
                              20, f'{spec.name} {kind} {topic.name} [{topic.type}]')
    for topic, type_name in table_topics.items():
        pubs = endpoints(node.get_publishers_info_by_topic, topic)
        subs = endpoints(node.get_subscriptions_info_by_topic, topic)
        for (pub_node, pub_type), pub_qos in pubs.items():
            for (sub_node, sub_type), sub_qos in subs.items():
                if sub_node.startswith('test_'):
                    continue
                assert pub_type == sub_type == type_name, topic
                compatible, reason = qos_check_compatible(pub_qos, sub_qos)
                assert compatible == QoSCompatibility.OK, \
                    f'{topic}: {pub_node} -> {sub_node}: {reason}'
