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
One parameter convention for every node: a table of :class:`ParamSpec`.

A node lists its parameters as ``ParamSpec`` entries (name, default, type, description,
range, read-only); :func:`declare_parameters` declares them all with their descriptors (what
``ros2 param describe`` shows) and returns their values. Two things users type that plain
rclpy refuses are accepted here:

- an integer for a double (``ros2 param set /executor refill_seconds 1``, ``-p fps:=30``, or
  ``refill_seconds: 1`` in a YAML file) becomes that double, still range-checked; integers in
  a double array likewise;
- an empty list (``-p sim_cameras:=[]``) is an empty list of the declared type (ROS parses
  ``[]`` as "not set", Python's ``Parameter`` as a byte array).

Every other bad value at start-up (wrong type, out of range, unparsable) raises
:class:`~remote_inference_py.common.node_main.ConfigError` with one line naming the parameter,
so the node exits with code 2 instead of a traceback. Live changes keep their ranges and
read-only flags (rclpy checks both) and then reach the node's own on-set callback.

The same table makes each node's frozen config (:func:`build_config`: the config dataclass's
fields carry the parameters' names, and its own checks run on the declared values) and the
README's parameter tables (:func:`markdown_table`; ``tools/param_tables.py`` writes them).
"""

from dataclasses import dataclass
import math
from typing import Any, Optional

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
)
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.parameter import Parameter

from remote_inference_py.common.node_main import ConfigError

T = ParameterType
TYPE_NAMES = {
    T.PARAMETER_BOOL: 'a bool', T.PARAMETER_INTEGER: 'an integer',
    T.PARAMETER_DOUBLE: 'a number', T.PARAMETER_STRING: 'a string',
    T.PARAMETER_BYTE_ARRAY: 'a byte array', T.PARAMETER_BOOL_ARRAY: 'a list of bools',
    T.PARAMETER_INTEGER_ARRAY: 'a list of integers', T.PARAMETER_DOUBLE_ARRAY: 'a list of numbers',
    T.PARAMETER_STRING_ARRAY: 'a list of strings', T.PARAMETER_NOT_SET: 'not set',
}
ARRAYS = (T.PARAMETER_BOOL_ARRAY, T.PARAMETER_INTEGER_ARRAY, T.PARAMETER_DOUBLE_ARRAY,
          T.PARAMETER_STRING_ARRAY)


@dataclass(frozen=True)
class ParamSpec:
    """
    One declared parameter.

    ``default`` None declares a list parameter without a value (ROS cannot infer the type of
    an empty list); :func:`declare_parameters` reports it as ``[]``. ``low``/``high`` bound a
    number (inclusive). ``read_only`` parameters are structural: set at start-up only.
    """

    name: str
    default: Any
    type: int
    description: str
    low: Optional[float] = None
    high: Optional[float] = None
    read_only: bool = True

    def descriptor(self):
        """Return the ParameterDescriptor that ``ros2 param describe`` shows."""
        desc = ParameterDescriptor(description=self.description, type=self.type,
                                   read_only=self.read_only)
        if self.low is not None and self.type == T.PARAMETER_DOUBLE:
            desc.floating_point_range = [FloatingPointRange(
                from_value=float(self.low), to_value=float(self.high), step=0.0)]
        if self.low is not None and self.type == T.PARAMETER_INTEGER:
            desc.integer_range = [IntegerRange(from_value=int(self.low),
                                               to_value=int(self.high), step=0)]
        return desc


def convert(spec, type_, value):
    """Return ``(type, value)`` with an integer (list) given for a double (list) converted."""
    if spec.type in ARRAYS and (type_ == T.PARAMETER_NOT_SET or (
            type_ in ARRAYS + (T.PARAMETER_BYTE_ARRAY,) and len(value) == 0)):
        return spec.type, []
    if spec.type == T.PARAMETER_DOUBLE and type_ == T.PARAMETER_INTEGER:
        return T.PARAMETER_DOUBLE, float(value)
    if spec.type == T.PARAMETER_DOUBLE_ARRAY and type_ == T.PARAMETER_INTEGER_ARRAY:
        return T.PARAMETER_DOUBLE_ARRAY, [float(v) for v in value]
    return type_, value


def coerce(spec, type_, value):
    """
    Return ``(type, value)`` of a start-up value for ``spec`` (see :func:`convert`).

    Raise ConfigError naming the parameter when the value has the wrong type or is out of
    range; the message is what a user sees.
    """
    type_, value = convert(spec, type_, value)
    if type_ != spec.type:
        raise ConfigError(f'parameter {spec.name!r} must be {TYPE_NAMES[spec.type]}, '
                          f'got {value!r} ({TYPE_NAMES.get(type_, type_)})')
    if type_ == T.PARAMETER_DOUBLE and math.isnan(value):
        raise ConfigError(f'parameter {spec.name!r} is NaN')
    if spec.low is not None and type_ in (T.PARAMETER_DOUBLE, T.PARAMETER_INTEGER) and not (
            spec.low <= value <= spec.high):
        raise ConfigError(f'parameter {spec.name!r} is {value!r}; expected {spec.low} '
                          f'to {spec.high}')
    return type_, value


def declare_parameters(node, specs):
    """
    Declare every spec on ``node``; return ``{name: value}`` (unset lists as ``[]``).

    Start-up values (``-p``, ``--params-file``, launch) are checked against the spec first;
    a bad one raises ConfigError naming the parameter. Live changes with an integer for a
    double are converted before rclpy checks them.
    """
    specs = {spec.name: spec for spec in specs}
    # rclpy keeps the command line's and the launch file's values here until declaration;
    # the attribute exists in every rclpy since Foxy (Jazzy and Kilted included).
    overrides = getattr(node, '_parameter_overrides', {})
    for spec in specs.values():
        given = overrides.get(spec.name)
        try:
            if given is not None:
                type_, value = coerce(spec, given.type_.value, given.value)
            else:
                type_, value = spec.type, spec.default
            initial = value if value not in (None, []) or type_ not in ARRAYS \
                else Parameter.Type(type_)
            node.declare_parameter(spec.name, initial, spec.descriptor(), ignore_override=True)
        except ConfigError:
            raise
        except (ValueError, TypeError, ParameterException) as error:
            raise ConfigError(f'parameter {spec.name!r}: {error}') from None

    def accept_integers_for_doubles(parameters):
        converted = []
        for parameter in parameters:
            spec = specs.get(parameter.name)
            if spec is not None and parameter.type_.value != spec.type:
                type_, value = convert(spec, parameter.type_.value, parameter.value)
                parameter = Parameter(parameter.name, Parameter.Type(type_), value)
            converted.append(parameter)   # rclpy checks type, range and read-only next
        return converted

    node.add_pre_set_parameters_callback(accept_integers_for_doubles)
    return {name: parameter_value(node, name) for name in specs}


def parameter_value(node, name):
    """Return a parameter's value as plain Python (lists for arrays, [] when unset)."""
    try:
        value = node.get_parameter(name).value
    except ParameterUninitializedException:
        return []
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) or hasattr(value, 'tolist') \
        else value


def build_config(factory, values):
    """
    Return ``factory(**values)``: a node's frozen, validated config from parameter values.

    The config's own checks (what a range cannot say) raise ValueError or TypeError; that
    becomes a ConfigError with the same message, so start-up exits with code 2 naming it.
    """
    try:
        return factory(**values)
    except (ValueError, TypeError) as error:
        raise ConfigError(str(error)) from None


TYPE_LABELS = {
    T.PARAMETER_BOOL: 'bool', T.PARAMETER_INTEGER: 'int', T.PARAMETER_DOUBLE: 'double',
    T.PARAMETER_STRING: 'string', T.PARAMETER_BOOL_ARRAY: 'bool[]',
    T.PARAMETER_INTEGER_ARRAY: 'int[]', T.PARAMETER_DOUBLE_ARRAY: 'double[]',
    T.PARAMETER_STRING_ARRAY: 'string[]',
}


def _markdown_value(value):
    """Return a parameter value as a user would type it in a YAML file."""
    if value is None:
        return '(unset)'
    if isinstance(value, bool):
        return f'`{str(value).lower()}`'
    if isinstance(value, str):
        return f'`{value}`' if value else "`''`"
    if isinstance(value, (list, tuple)):
        return '`[' + ', '.join(_markdown_value(v).strip('`') for v in value) + ']`'
    return f'`{value!r}`'


def markdown_table(specs):
    """Return a markdown table of parameter specs: name, type, default, range, live, meaning."""
    lines = ['| parameter | type | default | range | live | description |',
             '|---|---|---|---|---|---|']
    for spec in specs:
        bounds = f'{spec.low} to {spec.high}' if spec.low is not None else ''
        text = spec.description.replace('|', '\\|')
        lines.append(f'| `{spec.name}` | {TYPE_LABELS[spec.type]} | '
                     f'{_markdown_value(spec.default)} | {bounds} | '
                     f'{"" if spec.read_only else "yes"} | {text} |')
    return '\n'.join(lines) + '\n'
