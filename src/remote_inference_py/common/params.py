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
The ROS side of the settings declared in config dataclasses (``common/settings.py``).

:func:`declare_parameters` declares a node's settings as parameters with their descriptors
(what ``ros2 param describe`` shows: type, description with the unit and the choices, range,
read-only unless live) and returns their values. Two things users type that plain rclpy
refuses are accepted here:

- an integer for a double (``ros2 param set /executor refill_seconds 1``, ``-p fps:=30``, or
  ``refill_seconds: 1`` in a YAML file) becomes that double, still range-checked; integers in
  a double array likewise;
- an empty list (``-p sim_cameras:=[]``) is an empty list of the declared type (ROS parses
  ``[]`` as "not set", Python's ``Parameter`` as a byte array).

Every other bad value at start-up (wrong type, out of range, not one of the choices) raises
:class:`~remote_inference_py.common.node_main.ConfigError` with the message the config's own
check gives (:func:`~remote_inference_py.common.settings.check_value`), so the node exits with
code 2 naming the parameter. :class:`LiveSettings` is the one way a node takes a live change:
rclpy checks the descriptor (range, read-only), the on-set callback builds the new configs
(every check of the config runs; a refusal is the reason ``ros2 param set`` prints), and the
post-set callback hands them to the node once.
"""

import threading

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.parameter import Parameter

from remote_inference_py.common.node_main import ConfigError
from remote_inference_py.common.settings import (  # noqa: F401 - the declaration, re-exported
    check_value, declared, markdown_table, ParamSpec, replace, setting, TYPE_WORDS)

T = ParameterType
ROS_TYPES = {
    'bool': T.PARAMETER_BOOL, 'int': T.PARAMETER_INTEGER, 'double': T.PARAMETER_DOUBLE,
    'string': T.PARAMETER_STRING, 'bool[]': T.PARAMETER_BOOL_ARRAY,
    'int[]': T.PARAMETER_INTEGER_ARRAY, 'double[]': T.PARAMETER_DOUBLE_ARRAY,
    'string[]': T.PARAMETER_STRING_ARRAY,
}
TYPE_NAMES = {ROS_TYPES[name]: words for name, words in TYPE_WORDS.items()}
TYPE_NAMES.update({T.PARAMETER_BYTE_ARRAY: 'a byte array', T.PARAMETER_NOT_SET: 'not set'})
ARRAYS = (T.PARAMETER_BOOL_ARRAY, T.PARAMETER_INTEGER_ARRAY, T.PARAMETER_DOUBLE_ARRAY,
          T.PARAMETER_STRING_ARRAY)


def descriptor(spec: ParamSpec) -> ParameterDescriptor:
    """Return the ParameterDescriptor of a declared setting (``ros2 param describe``)."""
    desc = ParameterDescriptor(description=spec.full_description(), type=ROS_TYPES[spec.type],
                               read_only=spec.read_only)
    if spec.choices:
        each = 'each ' if spec.is_array else ''
        desc.additional_constraints = f'{each}one of: {spec.range_text()}'
    if spec.low is not None and spec.type == 'double':
        desc.floating_point_range = [FloatingPointRange(
            from_value=float(spec.low), to_value=float(spec.high), step=0.0)]
    if spec.low is not None and spec.type == 'int':
        desc.integer_range = [IntegerRange(from_value=int(spec.low), to_value=int(spec.high),
                                           step=0)]
    return desc


def convert(spec, type_, value):
    """Return ``(type, value)`` with an integer (list) given for a double (list) converted."""
    ros_type = ROS_TYPES[spec.type]
    if ros_type in ARRAYS and (type_ == T.PARAMETER_NOT_SET or (
            type_ in ARRAYS + (T.PARAMETER_BYTE_ARRAY,) and len(value) == 0)):
        return ros_type, []
    if ros_type == T.PARAMETER_DOUBLE and type_ == T.PARAMETER_INTEGER:
        return T.PARAMETER_DOUBLE, float(value)
    if ros_type == T.PARAMETER_DOUBLE_ARRAY and type_ == T.PARAMETER_INTEGER_ARRAY:
        return T.PARAMETER_DOUBLE_ARRAY, [float(v) for v in value]
    return type_, value


def coerce(spec, type_, value):
    """
    Return ``(type, value)`` of a start-up value for ``spec`` (see :func:`convert`).

    Raise ConfigError naming the parameter when the value has the wrong type or fails the
    setting's check (range, choices, NaN), with the config's own message.
    """
    type_, value = convert(spec, type_, value)
    if type_ != ROS_TYPES[spec.type]:
        raise ConfigError(f'parameter {spec.name!r} must be {TYPE_WORDS[spec.type]}, '
                          f'got {value!r} ({TYPE_NAMES.get(type_, type_)})')
    try:
        check_value(spec, value)
    except ValueError as error:
        raise ConfigError(str(error)) from None
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
                type_, value = ROS_TYPES[spec.type], spec.default
            initial = value if value not in (None, []) or type_ not in ARRAYS \
                else Parameter.Type(type_)
            node.declare_parameter(spec.name, initial, descriptor(spec), ignore_override=True)
        except ConfigError:
            raise
        except (ValueError, TypeError, ParameterException) as error:
            raise ConfigError(f'parameter {spec.name!r}: {error}') from None

    def accept_integers_for_doubles(parameters):
        converted = []
        for parameter in parameters:
            spec = specs.get(parameter.name)
            if spec is not None and parameter.type_.value != ROS_TYPES[spec.type]:
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
    return _plain(value)


def _plain(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) or hasattr(value, 'tolist') \
        else value


def build_config(factory, values):
    """
    Return ``factory(**values)``: a node's frozen, validated config from parameter values.

    The config's checks raise ValueError or TypeError; that becomes a ConfigError with the
    same message, so start-up exits with code 2 naming it.
    """
    try:
        return factory(**values)
    except (ValueError, TypeError) as error:
        raise ConfigError(str(error)) from None


def build_configs(values, *factories):
    """Return one config per factory, each from the values of the settings it declares."""
    return tuple(build_config(factory, {name: values[name] for name in declared(factory)})
                 for factory in factories)


class LiveSettings:
    """
    The one way a node takes live parameter changes: validate on set, apply once after.

    ``configs`` are the node's frozen configs (the settings they declare are its
    parameters). A change of parameters is checked by rclpy against the descriptors (type,
    range, read-only), then here by building the new configs
    (:func:`~remote_inference_py.common.settings.replace`: every check of the config runs);
    a refusal is the reason ``ros2 param set`` prints, and nothing changes. Accepted, the new
    configs are handed once to ``apply(configs, changes)`` from the post-set callback, and
    each change is logged.
    """

    def __init__(self, node, configs, apply):
        """Register the on-set and post-set callbacks on ``node``."""
        self.configs = tuple(configs)
        self.specs = declared(*(type(config) for config in self.configs))
        self._apply = apply
        self._logger = node.get_logger()
        self._lock = threading.Lock()
        self._accepted = None
        node.add_on_set_parameters_callback(self._check)
        node.add_post_set_parameters_callback(self._after)

    def _check(self, parameters):
        changes = {}
        for parameter in parameters:
            spec = self.specs.get(parameter.name)
            if spec is None:
                continue   # not ours (use_sim_time, ...): rclpy's own
            if not spec.live:   # the descriptor refuses it first; never apply one anyway
                return SetParametersResult(
                    successful=False, reason=f'parameter {parameter.name!r} is read-only')
            changes[parameter.name] = _plain(parameter.value)
        if not changes:
            return SetParametersResult(successful=True)
        with self._lock:
            try:
                configs = replace(self.configs, changes)
            except ValueError as error:
                return SetParametersResult(successful=False, reason=str(error))
            self._accepted = (configs, changes)
        return SetParametersResult(successful=True)

    def _after(self, parameters):
        with self._lock:
            accepted, self._accepted = self._accepted, None
            if accepted is None:
                return
            self.configs, changes = accepted
        for name, value in changes.items():
            self._logger.info(f'parameter {name} set to {value!r}')
        self._apply(self.configs, changes)
