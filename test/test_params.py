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

"""The one parameter convention: specs, start-up values, live values, configs, README."""

import dataclasses
import importlib.util
import pathlib

import pytest
from rcl_interfaces.msg import ParameterType as T
from rclpy.node import Node
from rclpy.parameter import Parameter
import yaml

from remote_inference_py.common.node_main import ConfigError
from remote_inference_py.common.params import (
    build_config, coerce, declare_parameters, markdown_table, ParamSpec)
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings, STRUCTURAL_FIELDS
from remote_inference_py.executor.node import PARAMETERS as EXECUTOR
from remote_inference_py.hardware.config import HardwareConfig
from remote_inference_py.hardware.config import LIVE_FIELDS as HARDWARE_LIVE
from remote_inference_py.hardware.node import PARAMETERS as HARDWARE
from remote_inference_py.policy_server.config import LIVE_FIELDS as SERVER_LIVE
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.node import PARAMETERS as SERVER

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / 'config'
SPECS = {'executor': EXECUTOR, 'hardware_interface': HARDWARE, 'policy_server': SERVER}

SPEC = (
    ParamSpec('rate', 30.0, T.PARAMETER_DOUBLE, 'A rate [Hz].', low=1.0, high=100.0,
              read_only=False),
    ParamSpec('count', 3, T.PARAMETER_INTEGER, 'A count.', low=1, high=10),
    ParamSpec('limits', [1.0, 2.0], T.PARAMETER_DOUBLE_ARRAY, 'Limits [rad].'),
    ParamSpec('cameras', ['front'], T.PARAMETER_STRING_ARRAY, 'Cameras.'),
    ParamSpec('unset', None, T.PARAMETER_STRING_ARRAY, 'Left unset.'),
)


def yaml_type(value):
    """Return the ParameterType ROS gives a YAML value."""
    return Parameter.Type.from_parameter_value(value).value if value != [] \
        else T.PARAMETER_NOT_SET


def test_integers_are_accepted_for_doubles_and_ranges_still_hold():
    rate = SPEC[0]
    assert coerce(rate, T.PARAMETER_INTEGER, 1) == (T.PARAMETER_DOUBLE, 1.0)
    assert coerce(SPEC[2], T.PARAMETER_INTEGER_ARRAY, [1, 2]) == (
        T.PARAMETER_DOUBLE_ARRAY, [1.0, 2.0])
    assert coerce(SPEC[3], T.PARAMETER_NOT_SET, None) == (T.PARAMETER_STRING_ARRAY, [])
    with pytest.raises(ConfigError, match=r"parameter 'rate' is 0.0; expected 1.0 to 100.0"):
        coerce(rate, T.PARAMETER_INTEGER, 0)
    with pytest.raises(ConfigError, match=r"parameter 'rate' must be a number, got 'x'"):
        coerce(rate, T.PARAMETER_STRING, 'x')
    with pytest.raises(ConfigError, match=r"parameter 'count' must be an integer, got 2.5"):
        coerce(SPEC[1], T.PARAMETER_DOUBLE, 2.5)
    gain = ParamSpec('gain', 1.0, T.PARAMETER_DOUBLE, 'Unbounded.')
    with pytest.raises(ConfigError, match="parameter 'gain' is NaN"):
        coerce(gain, T.PARAMETER_DOUBLE, float('nan'))


def make_node(ros_context, overrides):
    return Node('params_test', context=ros_context, parameter_overrides=[
        Parameter(name, value=value) for name, value in overrides.items()])


def test_declare_takes_start_up_values_and_names_a_bad_one(ros_context):
    node = make_node(ros_context, {'rate': 10, 'limits': [3, 4], 'cameras': []})
    try:
        values = declare_parameters(node, SPEC)
        assert values == {'rate': 10.0, 'count': 3, 'limits': [3.0, 4.0], 'cameras': [],
                          'unset': []}
        assert node.get_parameter('rate').type_ == Parameter.Type.DOUBLE
        # Live: an integer for a double is that double; the range still refuses 0.
        assert node.set_parameters([Parameter('rate', value=20)])[0].successful
        assert node.get_parameter('rate').value == 20.0
        result = node.set_parameters([Parameter('rate', value=0)])[0]
        assert not result.successful and 'out of range' in result.reason
        assert node.get_parameter('rate').value == 20.0
        result = node.set_parameters([Parameter('count', value=4)])[0]
        assert not result.successful and 'read-only' in result.reason
    finally:
        node.destroy_node()
    for overrides, message in (({'rate': 500.0}, "'rate' is 500.0; expected 1.0 to 100.0"),
                               ({'count': 'x'}, "'count' must be an integer, got 'x'"),
                               ({'cameras': [1, 2]}, "'cameras' must be a list of strings")):
        node = make_node(ros_context, overrides)
        try:
            with pytest.raises(ConfigError, match=message):
                declare_parameters(node, SPEC)
        finally:
            node.destroy_node()


def test_structural_executor_fields_are_read_only():
    assert all(EXECUTOR[name].read_only for name in STRUCTURAL_FIELDS)
    assert not EXECUTOR['refill_seconds'].read_only


@pytest.mark.parametrize('config', sorted(p.name for p in CONFIG_DIR.glob('*.yaml')))
@pytest.mark.parametrize('node', sorted(SPECS))
def test_config_files_match_the_declared_parameters(config, node):
    """Every key of every node section is declared, and its value would be accepted."""
    sections = yaml.safe_load((CONFIG_DIR / config).read_text())
    matches = [v for k, v in sections.items() if k.split('/')[-1] == node]
    assert len(matches) == 1, f'{config}: expected one {node} section'
    values = matches[0]['ros__parameters']
    specs = SPECS[node]
    for name, value in values.items():
        assert name in specs, f'{config}: {name!r} is not a {node} parameter'
        coerce(specs[name], yaml_type(value), value)   # raises ConfigError naming it


def load_tool():
    path = ROOT / 'tools' / 'param_tables.py'
    spec = importlib.util.spec_from_file_location('param_tables', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_tables_are_the_specs():
    tool = load_tool()
    stale = tool.stale(tool.README.read_text(), tool.node_specs())
    assert not stale, (f'README.md parameter tables of {", ".join(stale)} differ from the '
                       f'PARAMETERS specs; regenerate with: {tool.COMMAND} (in ./run shell)')


def test_the_readme_check_notices_a_changed_spec(tmp_path):
    tool = load_tool()
    specs = tool.node_specs()
    text = tool.README.read_text()
    changed = dict(specs, hardware_interface=[
        dataclasses.replace(spec, description=spec.description + ' Changed.')
        if spec.name == 'port' else spec for spec in specs['hardware_interface']])
    assert tool.stale(text, changed) == ['hardware_interface']
    readme = tmp_path / 'README.md'
    readme.write_text(tool.render(text, changed))
    assert tool.stale(readme.read_text(), changed) == []
    assert tool.main(['--check', '--readme', str(readme)]) == 1   # against the real specs
    assert 'Changed.' in readme.read_text()
    assert tool.main(['--readme', str(readme)]) == 0              # regenerates
    assert readme.read_text() == text
    with pytest.raises(ValueError, match='markers for executor'):
        tool.render('no markers here', specs)


def test_markdown_table_rows():
    table = markdown_table(SPEC)
    lines = table.splitlines()
    assert lines[0] == '| parameter | type | default | range | live | description |'
    assert lines[2] == '| `rate` | double | `30.0` | 1.0 to 100.0 | yes | A rate [Hz]. |'
    assert lines[3] == '| `count` | int | `3` | 1 to 10 |  | A count. |'
    assert lines[4] == '| `limits` | double[] | `[1.0, 2.0]` |  |  | Limits [rad]. |'
    assert lines[6] == '| `unset` | string[] | (unset) |  |  | Left unset. |'


def spec_default(spec):
    """Return a spec's default as its config field stores it (lists as tuples)."""
    if spec.default is None:
        return None
    return tuple(spec.default) if isinstance(spec.default, list) else spec.default


@pytest.mark.parametrize('specs, configs', [
    (EXECUTOR, (ExecutorConfig, NodeSettings)),
    (HARDWARE, (HardwareConfig,)),
    (SERVER, (ServerConfig,)),
], ids=['executor', 'hardware_interface', 'policy_server'])
def test_every_parameter_is_a_field_of_the_nodes_frozen_config(specs, configs):
    fields = {f.name: f for config in configs for f in dataclasses.fields(config)}
    assert set(specs) <= set(fields), sorted(set(specs) - set(fields))
    assert all(config.__dataclass_params__.frozen for config in configs)
    if configs[0] is ExecutorConfig:   # its own defaults serve the Python API
        return
    for name, spec in specs.items():
        default = fields[name].default
        assert default == spec_default(spec) or (spec.default is None and default == ()), name


def test_live_fields_are_the_writable_parameters():
    assert set(HARDWARE_LIVE) == {n for n, s in HARDWARE.items() if not s.read_only}
    assert set(SERVER_LIVE) == {n for n, s in SERVER.items() if not s.read_only}


def test_build_config_turns_a_refusal_into_a_config_error():
    with pytest.raises(ConfigError, match="parameter 'port' is empty"):
        build_config(HardwareConfig, {'backend': 'feetech', 'port': ''})
    assert build_config(ServerConfig, {'deployment': 'x'}).deployment == 'x'
