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

"""One declaration per setting: parameters, descriptors, configs, live changes, docs tables."""

import dataclasses
import importlib.util
import math
import pathlib
import re
from typing import Tuple

import pytest
from rcl_interfaces.msg import ParameterType as T
from rclpy.node import Node
from rclpy.parameter import Parameter
import yaml

from remote_inference_py.common.node_main import ConfigError
from remote_inference_py.common.params import (
    build_config, build_configs, coerce, declare_parameters, descriptor, LiveSettings,
    markdown_table, ParamSpec, setting)
from remote_inference_py.common.settings import (
    built_from, check_settings, declared, derived, setting_of, shared)
from remote_inference_py.contract.presence import PRESENCE_SAMPLES_PER_LEASE
from remote_inference_py.contract.settings import ContractSettings
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings, STRUCTURAL_FIELDS
from remote_inference_py.executor.handshake import Client
from remote_inference_py.executor.node import PARAMETERS as EXECUTOR
from remote_inference_py.executor.query import QuerySettings
from remote_inference_py.hardware.config import (
    FeetechBusConfig, HardwareConfig, RunnerSettings, SimConfig)
from remote_inference_py.hardware.config import LIVE_FIELDS as HARDWARE_LIVE
from remote_inference_py.hardware.node import PARAMETERS as HARDWARE
from remote_inference_py.policy_server.config import LIVE_FIELDS as SERVER_LIVE
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.node import PARAMETERS as SERVER

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / 'config'
SPECS = {'executor': EXECUTOR, 'hardware_interface': HARDWARE, 'policy_server': SERVER}
CONFIGS = {'executor': (ExecutorConfig, NodeSettings), 'hardware_interface': (HardwareConfig,),
           'policy_server': (ServerConfig,)}
REQUIRED = {'hardware_interface': {'port': '/dev/ttyACM0'}}
"""What a node needs besides the defaults to build its config (the servo bus's port)."""

SPEC = (
    ParamSpec('rate', 'double', 30.0, 'A rate.', unit='Hz', low=1.0, high=100.0, live=True),
    ParamSpec('count', 'int', 3, 'A count.', low=1, high=10),
    ParamSpec('limits', 'double[]', [1.0, 2.0], 'Limits.', unit='rad'),
    ParamSpec('cameras', 'string[]', ['front'], 'Cameras.'),
    ParamSpec('unset', 'string[]', None, 'Left unset.'),
    ParamSpec('mode', 'string', 'a', 'A mode.', choices=('a', 'b')),
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
    gain = ParamSpec('gain', 'double', 1.0, 'Unbounded.')
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
                          'unset': [], 'mode': 'a'}
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
                               ({'cameras': [1, 2]}, "'cameras' must be a list of strings"),
                               ({'mode': 'c'}, "'mode' is 'c'; expected one of a, b")):
        node = make_node(ros_context, overrides)
        try:
            with pytest.raises(ConfigError, match=message):
                declare_parameters(node, SPEC)
        finally:
            node.destroy_node()


def test_structural_executor_fields_are_read_only():
    assert all(EXECUTOR[name].read_only for name in STRUCTURAL_FIELDS)
    assert not EXECUTOR['refill_seconds'].read_only
    assert descriptor(EXECUTOR['fps']).read_only and not descriptor(EXECUTOR['task']).read_only


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


def repeats_default(spec, value):
    """Return True if a YAML value is the declared default (a list as a list, 1 as 1.0)."""
    if isinstance(value, list) or isinstance(spec.default, (list, tuple)):
        return list(value or []) == list(spec.default or [])
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and isinstance(spec.default, (int, float)):
        return float(value) == float(spec.default)
    return value == spec.default


@pytest.mark.parametrize('config', sorted(p.name for p in CONFIG_DIR.glob('*.yaml')))
def test_a_config_file_holds_only_what_differs_from_the_declaration_and_says_why(config):
    """A YAML that repeats a default would hide the next change of that default."""
    text = (CONFIG_DIR / config).read_text()
    for section, values in yaml.safe_load(text).items():
        specs = SPECS[section.split('/')[-1]]
        for name, value in values['ros__parameters'].items():
            assert not repeats_default(specs[name], value), (
                f'{config}: {section} {name}: {value!r} is the declared default: drop it')
    for line in text.splitlines():
        if re.match(r'^    \w+:', line):
            assert '#' in line, f'{config}: no comment says why: {line.strip()!r}'


def test_the_so101_configs_name_the_so101_s_ranges_instead_of_copying_them():
    """The SO-101's joint ranges are declared once, in robot/so101.py."""
    for path in sorted(CONFIG_DIR.glob('so101_*.yaml')):
        for section, values in yaml.safe_load(path.read_text()).items():
            if section.endswith('executor'):
                executor = values['ros__parameters']
                assert executor.get('joint_limits_of') == 'so101', path.name
                assert 'joint_lower_limits' not in executor, path.name
                assert 'joint_upper_limits' not in executor, path.name


def test_the_default_check_sees_lists_and_numbers_as_yaml_writes_them():
    assert repeats_default(EXECUTOR['fps'], 30) and not repeats_default(EXECUTOR['fps'], 30.5)
    assert repeats_default(EXECUTOR['joint_names'], list(EXECUTOR['joint_names'].default))
    assert not repeats_default(EXECUTOR['autostart'], True)


def load_tool():
    path = ROOT / 'tools' / 'param_tables.py'
    spec = importlib.util.spec_from_file_location('param_tables', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_parameter_tables_are_the_specs():
    tool = load_tool()
    stale = tool.stale(tool.PAGE.read_text(), tool.node_specs())
    assert not stale, (f'docs/parameters.md tables of {", ".join(stale)} differ from the '
                       f'PARAMETERS specs; regenerate with: {tool.COMMAND} (in ./run shell)')


def test_the_table_check_notices_a_changed_spec(tmp_path):
    tool = load_tool()
    specs = tool.node_specs()
    text = tool.PAGE.read_text()
    changed = dict(specs, hardware_interface=[
        dataclasses.replace(spec, description=spec.description + ' Changed.')
        if spec.name == 'port' else spec for spec in specs['hardware_interface']])
    assert tool.stale(text, changed) == ['hardware_interface']
    page = tmp_path / 'parameters.md'
    page.write_text(tool.render(text, changed))
    assert tool.stale(page.read_text(), changed) == []
    assert tool.main(['--check', '--page', str(page)]) == 1   # against the real specs
    assert 'Changed.' in page.read_text()
    assert tool.main(['--page', str(page)]) == 0              # regenerates
    assert page.read_text() == text
    with pytest.raises(ValueError, match='markers for executor'):
        tool.render('no markers here', specs)


def test_markdown_table_rows():
    table = markdown_table(SPEC)
    lines = table.splitlines()
    assert lines[0] == ('| parameter | type | default | unit | range or choices | live | '
                        'description |')
    assert lines[2] == '| `rate` | double | `30.0` | Hz | 1.0 to 100.0 | yes | A rate. |'
    assert lines[3] == '| `count` | int | `3` |  | 1 to 10 |  | A count. |'
    assert lines[4] == '| `limits` | double[] | `[1.0, 2.0]` | rad |  |  | Limits. |'
    assert lines[6] == '| `unset` | string[] | (unset) |  |  |  | Left unset. |'
    assert lines[7] == '| `mode` | string | `a` |  | a, b |  | A mode. |'


def test_the_descriptor_says_type_unit_range_choices_and_read_only():
    rate = descriptor(SPEC[0])
    assert (rate.type, rate.description, rate.read_only) == (T.PARAMETER_DOUBLE, 'A rate [Hz].',
                                                             False)
    assert (rate.floating_point_range[0].from_value, rate.floating_point_range[0].to_value) \
        == (1.0, 100.0)
    count = descriptor(SPEC[1])
    assert count.read_only and (count.integer_range[0].from_value,
                                count.integer_range[0].to_value) == (1, 10)
    assert descriptor(SPEC[5]).additional_constraints == 'one of: a, b'


@dataclasses.dataclass(frozen=True)
class Example:
    """A config declared the way the nodes' are."""

    size: int = setting(2, 'Entries.', low=1, high=10)
    gain: float = setting(1.0, 'A gain.', unit='V', low=0.0, high=5.0, live=True)
    cap: float = setting(3.0, 'At least the gain.', unit='V', low=0.0, high=5.0, live=True)
    names: Tuple[str, ...] = setting(['a'], 'Names.', live=True)

    def __post_init__(self):
        check_settings(self)
        if self.gain > self.cap:
            raise ValueError(f'gain {self.gain} is above cap {self.cap}')


def test_a_config_field_is_the_declaration():
    specs = declared(Example)
    assert [(s.name, s.type, s.default, s.live) for s in specs.values()] == [
        ('size', 'int', 2, False), ('gain', 'double', 1.0, True), ('cap', 'double', 3.0, True),
        ('names', 'string[]', ['a'], True)]
    config = Example(gain=2, names=['x', 'y'])
    assert config.gain == 2.0 and isinstance(config.gain, float) and config.names == ('x', 'y')
    with pytest.raises(ValueError, match="parameter 'size' is 11; expected 1 to 10"):
        Example(size=11)
    with pytest.raises(ValueError, match="parameter 'size' must be an integer, got True"):
        Example(size=True)


@dataclasses.dataclass(frozen=True)
class ExamplePart:
    """A part built from Example that also stands alone, the way the nodes' parts are."""

    entries: int = setting_of(Example, 'size')
    names: Tuple[str, ...] = setting_of(Example, 'names')
    own: float = 0.5

    def __post_init__(self):
        check_settings(self)


def test_a_setting_of_field_is_the_declaration_under_another_name_and_no_parameter():
    assert declared(ExamplePart) == {}
    assert derived(ExamplePart) == {'entries': declared(Example)['size'],
                                    'names': declared(Example)['names']}
    assert ExamplePart() == ExamplePart(entries=2, names=('a',), own=0.5)
    assert ExamplePart(names=['x']).names == ('x',)
    with pytest.raises(ValueError, match=r"^ExamplePart.entries: parameter 'size' is 11; "
                                         r'expected 1 to 10$'):
        ExamplePart(entries=11)
    with pytest.raises(ValueError, match="ExamplePart.names: parameter 'names' must be a list"):
        ExamplePart(names='x')
    with pytest.raises(KeyError, match="Example declares no setting 'length'"):
        setting_of(Example, 'length')
    config = Example(size=4, names=['b', 'c'])
    assert built_from(config, ExamplePart) == ExamplePart(entries=4, names=('b', 'c'))
    assert built_from(config, ExamplePart, own=0.1, entries=5) == ExamplePart(5, ('b', 'c'), 0.1)


def test_live_settings_validate_on_set_and_apply_once(ros_context):
    node = Node('live_settings_test', context=ros_context)
    applied = []
    try:
        config, = build_configs(declare_parameters(node, declared(Example).values()), Example)
        live = LiveSettings(node, (config,), lambda configs, changes: applied.append(
            (configs, changes)))
        # The config's own check (a cross-field rule no range says) refuses, with its message.
        result = node.set_parameters([Parameter('gain', value=4.0)])[0]
        assert not result.successful and result.reason == 'gain 4.0 is above cap 3.0'
        assert node.get_parameter('gain').value == 1.0 and applied == []
        # Accepted: applied once with the new config and the change.
        assert node.set_parameters_atomically([Parameter('cap', value=5.0),
                                               Parameter('gain', value=4)]).successful
        assert applied == [((Example(gain=4.0, cap=5.0),), {'cap': 5.0, 'gain': 4.0})]
        assert live.configs == (Example(gain=4.0, cap=5.0),)
        result = node.set_parameters([Parameter('size', value=3)])[0]
        assert not result.successful and 'read-only' in result.reason
        assert node.set_parameters([Parameter('names', value=['b'])])[0].successful
        assert applied[-1] == ((Example(gain=4.0, cap=5.0, names=('b',)),), {'names': ['b']})
        assert len(applied) == 2
    finally:
        node.destroy_node()


def spec_default(spec):
    """Return a spec's default as its config field stores it (lists as tuples)."""
    if spec.default is None:
        return None
    return tuple(spec.default) if isinstance(spec.default, list) else spec.default


@pytest.mark.parametrize('node', sorted(SPECS))
def test_every_parameter_is_a_field_of_the_nodes_frozen_config(node):
    specs, configs = SPECS[node], CONFIGS[node]
    fields = {f.name: f for config in configs for f in dataclasses.fields(config)}
    assert set(specs) <= set(fields), sorted(set(specs) - set(fields))
    assert all(config.__dataclass_params__.frozen for config in configs)
    for name, spec in specs.items():
        assert fields[name].default == spec_default(spec), name
    # The values a node declares (unset lists as []) build what the dataclasses default to.
    values = {name: [] if spec.default is None else spec.default
              for name, spec in specs.items()}
    values.update(REQUIRED.get(node, {}))
    built = build_configs(values, *configs)
    assert built == tuple(config(**REQUIRED.get(node, {})) if config is configs[0] else config()
                          for config in configs)


def test_live_fields_are_the_writable_parameters():
    assert set(HARDWARE_LIVE) == {n for n, s in HARDWARE.items() if not s.read_only}
    assert set(SERVER_LIVE) == {n for n, s in SERVER.items() if not s.read_only}
    assert not set(STRUCTURAL_FIELDS) & {n for n, s in EXECUTOR.items() if s.live}


def test_build_config_turns_a_refusal_into_a_config_error():
    with pytest.raises(ConfigError, match="parameter 'port' is empty"):
        build_config(HardwareConfig, {'backend': 'feetech', 'port': ''})
    assert build_config(ServerConfig, {'deployment': 'x'}).deployment == 'x'


# ---- every bound of every parameter of every node: descriptor, config and docs agree ----

def edge_values(spec):
    """Return ``[(value, inside)]`` just inside and just outside each bound of ``spec``."""
    cases = []
    for bound, outward in ((spec.low, -1), (spec.high, 1)):
        if math.isinf(bound):
            cases.append((bound, True))
            continue
        if spec.type.startswith('int'):
            cases += [(bound, True), (bound + outward, False)]
            if spec.high - spec.low >= 2:
                cases.append((bound - outward, True))
        else:
            step = max(abs(bound), 1.0) * 1e-5   # beyond rclpy's (and our) 1e-6 tolerance
            cases += [(bound, True), (bound + outward * step, False),
                      (bound - outward * step, True)]
            if bound != 0:
                cases.append((bound * (1 + outward * 1e-7), True))   # on it, within 1e-6
    return cases


def as_parameter_value(spec, value):
    """Return ``value`` as the parameter (a list setting gets it as its first entry)."""
    if not spec.is_array:
        return value
    rest = list(spec.default or [])[1:] if spec.default else []
    return [value] + rest


def ranged(node):
    return [spec for spec in SPECS[node].values() if spec.low is not None]


def table_rows(node):
    """Return ``{name: [type, default, unit, range, live]}`` from docs/parameters.md's table."""
    text = (ROOT / 'docs' / 'parameters.md').read_text()
    begin = text.index(f'<!-- parameters:{node} (generated')
    table = text[begin:text.index(f'<!-- parameters:{node} end -->')]
    rows = {}
    for line in table.splitlines():
        if line.startswith('| `'):
            cells = [c.strip() for c in re.split(r'(?<!\\)\|', line)[1:-1]]
            rows[cells[0].strip('`')] = cells[1:6]
    return rows


def config_verdict(node, name, value):
    """Return None when the node's config takes ``value`` for ``name``, else the message."""
    values = {n: [] if s.default is None else s.default for n, s in SPECS[node].items()}
    values.update(REQUIRED.get(node, {}), **{name: value})
    try:
        build_configs(values, *CONFIGS[node])
    except ConfigError as error:
        return str(error)
    return None


def startup_verdict(spec, value):
    """Return None when a start-up value passes the descriptor path, else the message."""
    type_ = Parameter.Type.from_parameter_value(value).value
    try:
        coerce(spec, type_, value)
    except ConfigError as error:
        return str(error)
    return None


@pytest.mark.parametrize('node', sorted(SPECS))
def test_every_range_is_the_same_in_descriptor_config_and_docs(node, ros_context):
    """Just inside and just outside each bound: start-up, live set and config agree."""
    rows = table_rows(node)
    assert set(rows) == set(SPECS[node]), 'docs table and declaration list the same names'
    # A scratch node with every ranged parameter declared writable, to ask rclpy's own
    # descriptor check (the node's structural ones cannot be set live at all).
    scratch = Node(f'ranges_{node}', context=ros_context)
    specs = {spec.name: dataclasses.replace(spec, live=True) for spec in ranged(node)}
    declare_parameters(scratch, specs.values())
    checked = 0
    try:
        for spec in ranged(node):
            desc = descriptor(spec)
            bounds = desc.floating_point_range or desc.integer_range
            if not spec.is_array:
                assert (bounds[0].from_value, bounds[0].to_value) == (spec.low, spec.high)
            kind, default, unit, range_text, live = rows[spec.name]
            assert (kind, range_text, unit, live == 'yes') == (
                spec.type, f'{spec.low} to {spec.high}', spec.unit, spec.live), spec.name
            for value, inside in edge_values(spec):
                value = as_parameter_value(spec, value)
                by_config = config_verdict(node, spec.name, value)
                by_startup = startup_verdict(spec, value)
                assert (by_config is None) == inside, (spec.name, value, by_config)
                assert by_startup == by_config, (spec.name, value)
                if not spec.is_array:
                    result = scratch.set_parameters([Parameter(spec.name, value=value)])[0]
                    assert result.successful == inside, (spec.name, value, result.reason)
                checked += 1
    finally:
        scratch.destroy_node()
    assert checked >= 4 * len(ranged(node)) - len(ranged(node))


@pytest.mark.parametrize('node', sorted(SPECS))
def test_every_choice_is_the_same_in_config_startup_and_docs(node):
    rows = table_rows(node)
    specs = [spec for spec in SPECS[node].values() if spec.choices]
    for spec in specs:
        assert rows[spec.name][3] == spec.range_text()
        as_value = (lambda item: [item]) if spec.is_array else (lambda item: item)
        for choice in spec.choices:
            assert startup_verdict(spec, as_value(choice)) is None
            refusal = config_verdict(node, spec.name, as_value(choice))
            assert refusal is None or spec.name not in refusal.split(';')[0], (spec.name, choice)
        wrong = 'no-such-choice' if spec.type.startswith('string') else max(spec.choices) + 1
        by_config = config_verdict(node, spec.name, as_value(wrong))
        assert by_config == startup_verdict(spec, as_value(wrong)) == (
            f'parameter {spec.name!r} contains {wrong!r}; expected any of {spec.range_text()}'
            if spec.is_array else
            f'parameter {spec.name!r} is {wrong!r}; expected one of {spec.range_text()}')
    assert specs or node == 'policy_server'


# ---- the parts built from a node's config take its parameters, never declare them again ----

PARTS = {
    RunnerSettings: (HardwareConfig, {}, {
        'publish_rate_hz': 'publish_rate_hz', 'command_timeout_s': 'command_timeout_s',
        'shutdown_grace_s': 'shutdown_grace_s',
        'disable_torque_on_shutdown': 'disable_torque_on_shutdown',
        'disable_torque_on_fault': 'disable_torque_on_fault'}, {'shutdown_quiet_s'}),
    FeetechBusConfig: (HardwareConfig, {'port': '/dev/ttyACM0', 'motors': {'pan': 1}}, {
        'baudrate': 'baudrate', 'retries': 'bus_retries',
        'max_consecutive_failures': 'max_consecutive_failures',
        'latency_timer_ms': 'latency_timer_ms'},
        {'port', 'motors', 'model', 'bounded_wait', 'raise_on_status_error'}),
    SimConfig: (HardwareConfig, {'joint_names': ('shoulder_pan',)}, {
        'initial_positions': 'sim_initial_positions', 'render': 'sim_render',
        'cameras': 'sim_cameras', 'width': 'sim_image_width', 'height': 'sim_image_height',
        'camera_rate_hz': 'sim_camera_rate_hz', 'cube_seed': 'sim_cube_seed',
        'real_time_factor': 'sim_real_time_factor', 'simplify_meshes': 'sim_simplify_meshes'},
        {'joint_names', 'mesh_cell_m', 'max_catch_up_s'}),
    QuerySettings: (NodeSettings, {}, {
        'max_text_chars': 'query_max_text_chars', 'answer_timeout_s': 'query_answer_timeout_s',
        'steering_period_s': 'steering_period_s'}, set()),
    Client: ((ExecutorConfig, NodeSettings), {
        'client_name': '/executor', 'deployment': 'so101', 'semantics': 'si-radians-v1',
        'action_names': ('a',), 'action_rate': 30.0, 'merge_mode': 'aligned'}, {
        'expected_features': 'expected_features',
        'require_position_hold': 'require_position_hold', 'timeout_s': 'admission_timeout_s',
        'presence_lease_s': 'presence_lease_s',
        'max_requests_in_flight': 'max_requests_in_flight'},
        {'client_name', 'deployment', 'semantics', 'action_names', 'action_rate',
         'merge_mode'}),
}
"""Part -> (the node config(s) it is built from, what it needs besides its defaults, its
fields that are parameters -> the parameter, its own fields)."""


@pytest.mark.parametrize('part', PARTS, ids=lambda part: part.__name__)
def test_a_part_takes_default_type_range_and_choices_from_the_parameter_declaration(part):
    source, required, parameters, own = PARTS[part]
    specs = declared(*source) if isinstance(source, tuple) else declared(source)
    fields = {f.name: f for f in dataclasses.fields(part)}
    assert declared(part) == {}   # no parameter of its own
    assert {name: spec.name for name, spec in derived(part).items()} == parameters
    assert set(fields) == set(parameters) | own
    for name, parameter in parameters.items():
        assert derived(part)[name] == specs[parameter], name
        assert fields[name].default == spec_default(specs[parameter]), name
    # An own field named like a parameter has no default to drift: the builder gives it.
    for name in own & set(specs):
        assert fields[name].default is dataclasses.MISSING, name
    # Just inside and just outside each bound, and a wrong choice: the parameter's verdict.
    checked = 0
    for name, parameter in parameters.items():
        spec = specs[parameter]
        cases = edge_values(spec) if spec.low is not None else []
        cases += [(choice, True) for choice in spec.choices]
        if spec.choices:
            cases.append((max(spec.choices) + 1, False))
        for value, inside in cases:
            value = as_parameter_value(spec, value)
            expected = startup_verdict(spec, value)
            assert (expected is None) == inside, (parameter, value)
            try:
                part(**required, **{name: value})
            except ValueError as error:
                assert str(error) == f'{part.__name__}.{name}: {expected}'
            else:
                assert expected is None, (name, value)
            checked += 1
    assert checked >= 4 * sum(specs[p].low is not None for p in parameters.values())


# ---- a setting both nodes have is declared once, in the contract, and embedded by each ----

SOURCES = pathlib.Path(__file__).resolve().parents[2] / 'src' / 'remote_inference_py'


@pytest.mark.parametrize('name', list(declared(ContractSettings)))
def test_a_setting_both_nodes_have_is_one_declaration(name):
    spec = declared(ContractSettings)[name]
    assert EXECUTOR[name] == spec and SERVER[name] == spec
    # Written once: one `name: type = setting(` in the whole package, in contract/settings.py.
    written = re.compile(rf'^\s+{name}: [^=]+= setting\(', re.M)
    found = [path.relative_to(SOURCES).as_posix() for path in sorted(SOURCES.rglob('*.py'))
             if written.search(path.read_text())]
    assert found == ['contract/settings.py']


def test_the_lease_fraction_is_said_from_the_sample_count():
    text = declared(ContractSettings)['presence_lease_s'].description
    samples = PRESENCE_SAMPLES_PER_LEASE
    assert f'lease / {samples};' in text and f'{samples - 1}/{samples} of it' in text


def test_a_shared_field_must_keep_the_name_and_type_of_its_declaration():
    renamed = dataclasses.make_dataclass(
        'Renamed', [('lease', float, shared(ContractSettings, 'presence_lease_s'))])
    retyped = dataclasses.make_dataclass(
        'Retyped', [('presence_lease_s', int, shared(ContractSettings, 'presence_lease_s'))])
    for cls in (renamed, retyped):
        with pytest.raises(TypeError, match='is not setting'):
            declared(cls)
    with pytest.raises(KeyError, match="ContractSettings declares no setting 'fps'"):
        shared(ContractSettings, 'fps')


def test_settings_of_the_same_subject_that_differ_by_design_share_their_bounds():
    # fps and the in-flight limit differ by design (the executor's rate vs 0: the policy's;
    # what a client asks vs what the server queues); their upper bounds are the contract's.
    for ours, theirs in (('fps', 'fps'), ('max_requests_in_flight', 'max_requests_per_client')):
        assert EXECUTOR[ours].high == SERVER[theirs].high
        assert EXECUTOR[ours].unit == SERVER[theirs].unit
