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
One declaration per setting: a field of a config dataclass, made by :func:`setting`.

A node's settings are the fields of its frozen config dataclasses. Each field is declared
once, where the dataclass is written::

    refill_seconds: float = setting(0.2, 'Request the next chunk when ...', unit='s',
                                    low=0.0, high=60.0, live=True)

The field's annotation is the type, its default the default; ``low``/``high`` (inclusive),
``choices``, ``unit``, the description and ``live`` complete the declaration. No ROS here;
everything else is derived from it:

- the ROS parameter and its descriptor (``common/params.py``: type, range, read-only when not
  ``live``, description with the unit and the choices), and one helper that validates a live
  change in the on-set callback and applies it once;
- the config's own checks (:func:`check_settings`, called first in ``__post_init__``): type,
  NaN, range and choices, with the message a start-up value out of range gets too;
- the tables of docs/parameters.md (:func:`markdown_table`, written by ``tools/param_tables.py``).

A class built from a node's config that also stands alone (a driver's, a worker's, a
simulation's settings, made directly by tools and tests) does not declare those settings
again: its field is :func:`setting_of` the declaration, with the declaration's default and,
in :func:`check_settings`, its check; it is no parameter of its own, and :func:`built_from`
builds it from the node's config. A setting two nodes have (the presence lease, the
deployment) is declared once in ``contract/settings.py`` and is each node's parameter by
:func:`shared`: one default, range, unit and description for both.

Ranges are closed, as a ``ParameterDescriptor`` can say them, and a double within a relative
1e-6 of a bound counts as on it, as rclpy's range check does; the config then checks only what
a range cannot say (one limit per joint, a mode that needs another, ...).
"""

import dataclasses
import math
import typing
from typing import Any, Optional, Tuple

REL_TOL = 1e-6
"""A value this close (relative) to a bound is on it (rclpy's ``Node.PARAM_REL_TOL``)."""

KINDS = {bool: 'bool', int: 'int', float: 'double', str: 'string'}
"""Python type of a field (or of a tuple's items) -> type name in the docs and errors."""

TYPE_WORDS = {'bool': 'a bool', 'int': 'an integer', 'double': 'a number', 'string': 'a string',
              'bool[]': 'a list of bools', 'int[]': 'a list of integers',
              'double[]': 'a list of numbers', 'string[]': 'a list of strings'}


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """
    The declaration of one setting: what its parameter, its check and its docs table row say.

    ``type`` is ``bool``, ``int``, ``double`` or ``string``, with ``[]`` for a list;
    ``default`` None is a list left unset (ROS cannot type an empty list; the node reports it
    as ``[]``). ``low``/``high`` bound a number, inclusive; ``choices`` list the accepted
    values of a string or an integer. ``live`` settings may change while the node runs; the
    others are read-only parameters (structural).
    """

    name: str
    type: str
    default: Any
    description: str
    unit: str = ''
    low: Optional[float] = None
    high: Optional[float] = None
    choices: Tuple[Any, ...] = ()
    live: bool = False

    @property
    def is_array(self) -> bool:
        """Return True for a list setting."""
        return self.type.endswith('[]')

    @property
    def read_only(self) -> bool:
        """Return True for a structural setting (set at start-up only)."""
        return not self.live

    def range_text(self) -> str:
        """Return the accepted values as the docs table and the descriptor say them."""
        if self.low is not None:
            return f'{self.low} to {self.high}'
        if self.choices:
            return ', '.join(repr(c) if c == '' else str(c) for c in self.choices)
        return ''

    def full_description(self) -> str:
        """Return the description with its unit, as ``ros2 param describe`` shows it."""
        if not self.unit:
            return self.description
        text = self.description
        if text.endswith('.'):
            return f'{text[:-1]} [{self.unit}].'
        return f'{text} [{self.unit}]'


def setting(default, description, *, unit='', low=None, high=None, choices=(), live=False):
    """Return a dataclass field that declares one setting; its type is the annotation."""
    if (low is None) != (high is None):
        raise ValueError(f'{description!r}: give both low and high, or neither')
    stored = tuple(default) if isinstance(default, list) else default
    return dataclasses.field(default=stored, metadata={'setting': dict(
        default=default, description=description, unit=unit, low=low, high=high,
        choices=tuple(choices), live=live)})


def shared(config_class, name):
    """
    Return a dataclass field that is setting ``name`` of ``config_class``, as a parameter here.

    For a setting two nodes have (``contract/settings.py``): the field, named ``name`` too,
    takes the declaration as it is written there (default, description, unit, range, choices,
    live); :func:`declared` lists it with a ParamSpec equal to that of ``config_class``, and
    raises TypeError where the field's name or annotation makes it another.
    """
    field = {f.name: f for f in dataclasses.fields(config_class)}.get(name)
    if field is None or 'setting' not in field.metadata:
        raise KeyError(f'{config_class.__name__} declares no setting {name!r}')
    return dataclasses.field(default=field.default, metadata={
        'setting': field.metadata['setting'], 'shared_from': config_class})


def setting_of(config_class, name):
    """
    Return a dataclass field that is setting ``name`` of ``config_class``, under its own name.

    The field's default is the declaration's and :func:`check_settings` checks it as the
    setting (type, NaN, range, choices), so neither can drift from the parameter; a bad value
    raises ValueError naming the field and the parameter. :func:`declared` does not list it.
    """
    spec = declared(config_class).get(name)
    if spec is None:
        raise KeyError(f'{config_class.__name__} declares no setting {name!r}')
    stored = tuple(spec.default) if isinstance(spec.default, list) else spec.default
    return dataclasses.field(default=stored, metadata={'setting_of': spec})


def derived(config_class) -> dict:
    """Return ``{field name: ParamSpec}`` of the fields of ``config_class`` made by setting_of."""
    return {field.name: field.metadata['setting_of'] for field in dataclasses.fields(config_class)
            if 'setting_of' in field.metadata}


def built_from(config, part_class, **others):
    """Return ``part_class`` built from ``config``: each setting_of field its setting's value.

    ``others`` give its other fields (and may override one, e.g. a value derived from two).
    """
    values = {name: getattr(config, spec.name) for name, spec in derived(part_class).items()}
    return part_class(**{**values, **others})


def _kind(annotation, name):
    """Return the type name of a field's annotation (``Optional`` and tuples included)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Union and len(args) == 1:
        return _kind(args[0], name)
    if typing.get_origin(annotation) is tuple and args and args[0] in KINDS:
        return KINDS[args[0]] + '[]'
    if annotation in KINDS:
        return KINDS[annotation]
    raise TypeError(f'setting {name!r}: cannot declare a parameter of type {annotation!r}')


def declared(*config_classes) -> dict:
    """Return ``{name: ParamSpec}`` of the settings of ``config_classes``, in field order."""
    specs = {}
    for cls in config_classes:
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            meta = field.metadata.get('setting')
            if meta is None:
                continue
            if field.name in specs:
                raise ValueError(f'setting {field.name!r} is declared twice')
            default = meta['default']
            specs[field.name] = ParamSpec(
                name=field.name, type=_kind(hints[field.name], field.name),
                default=list(default) if isinstance(default, tuple) else default,
                description=meta['description'], unit=meta['unit'], low=meta['low'],
                high=meta['high'], choices=meta['choices'], live=meta['live'])
            origin = field.metadata.get('shared_from')
            if origin is not None and declared(origin).get(field.name) != specs[field.name]:
                raise TypeError(f'{cls.__name__}.{field.name} is not setting {field.name!r} '
                                f'of {origin.__name__} (another name or type)')
    return specs


def live_names(*config_classes) -> Tuple[str, ...]:
    """Return the names of the settings of ``config_classes`` that may change while running."""
    return tuple(name for name, spec in declared(*config_classes).items() if spec.live)


def _within(value, low, high):
    """Return True when ``value`` is in ``[low, high]``; a float within REL_TOL of a bound is."""
    if isinstance(value, float) and (math.isclose(value, low, rel_tol=REL_TOL)
                                     or math.isclose(value, high, rel_tol=REL_TOL)):
        return True
    return low <= value <= high


def _item(spec, value, kind):
    """Return one value of type ``kind`` checked; ValueError names the setting."""
    if kind == 'bool':
        if not isinstance(value, bool):
            raise ValueError(f'parameter {spec.name!r} must be {TYPE_WORDS[spec.type]}, '
                             f'got {value!r}')
        return value
    if kind == 'string':
        if not isinstance(value, str):
            raise ValueError(f'parameter {spec.name!r} must be {TYPE_WORDS[spec.type]}, '
                             f'got {value!r}')
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            kind == 'int' and not isinstance(value, int)):
        raise ValueError(f'parameter {spec.name!r} must be {TYPE_WORDS[spec.type]}, '
                         f'got {value!r}')
    if kind == 'double':
        value = float(value)
        if math.isnan(value):
            raise ValueError(f'parameter {spec.name!r} is NaN')
    return value


def check_value(spec: ParamSpec, value):
    """
    Return ``value`` as the setting stores it (lists as tuples, integers for doubles as floats).

    Raise ValueError naming the setting when the type is wrong, a number is NaN or out of
    range, or a string is not one of the choices (a list: each item). A list setting with no
    default also takes None or an empty list (unset).
    """
    if spec.is_array:
        if value is None and spec.default is None:
            return None
        if isinstance(value, (str, bytes)) or not hasattr(value, '__iter__'):
            raise ValueError(f'parameter {spec.name!r} must be {TYPE_WORDS[spec.type]}, '
                             f'got {value!r}')
        items = tuple(_item(spec, v, spec.type[:-2]) for v in value)
        if spec.low is not None:
            for item in items:
                if not _within(item, spec.low, spec.high):
                    raise ValueError(f'parameter {spec.name!r} contains {item!r}; expected '
                                     f'{spec.low} to {spec.high}')
        for item in items:
            if spec.choices and item not in spec.choices:
                raise ValueError(f'parameter {spec.name!r} contains {item!r}; expected any '
                                 f'of {spec.range_text()}')
        return items
    value = _item(spec, value, spec.type)
    if spec.low is not None and not _within(value, spec.low, spec.high):
        raise ValueError(f'parameter {spec.name!r} is {value!r}; expected {spec.low} to '
                         f'{spec.high}')
    if spec.choices and value not in spec.choices:
        raise ValueError(f'parameter {spec.name!r} is {value!r}; expected one of '
                         f'{spec.range_text()}')
    return value


def check_settings(config) -> None:
    """Check and normalise every declared (or :func:`setting_of`) setting of a config, in place.

    Call first in ``__post_init__``; the config's own checks follow on the stored values.
    """
    for name, spec in declared(type(config)).items():
        object.__setattr__(config, name, check_value(spec, getattr(config, name)))
    for name, spec in derived(type(config)).items():
        try:
            value = check_value(spec, getattr(config, name))
        except ValueError as error:
            raise ValueError(f'{type(config).__name__}.{name}: {error}') from None
        object.__setattr__(config, name, value)


def replace(configs, changes: dict):
    """Return ``configs`` (a tuple of config dataclasses) with ``changes`` applied by name.

    Each change goes to the config that declares it; the new configs are checked whole
    (ValueError names the setting). A name no config declares raises KeyError.
    """
    remaining = dict(changes)
    result = []
    for config in configs:
        names = set(declared(type(config)))
        mine = {name: remaining.pop(name) for name in list(remaining) if name in names}
        result.append(dataclasses.replace(config, **mine) if mine else config)
    if remaining:
        raise KeyError(f'no setting named {", ".join(sorted(remaining))}')
    return tuple(result)


def _markdown_value(value):
    """Return a value as a user would type it in a YAML file."""
    if value is None:
        return '(unset)'
    if isinstance(value, bool):
        return f'`{str(value).lower()}`'
    if isinstance(value, str):
        return f'`{value}`' if value else "`''`"
    if isinstance(value, (list, tuple)):
        return '`[' + ', '.join(_markdown_value(v).strip('`') for v in value) + ']`'
    return f'`{value!r}`'


def markdown_table(specs) -> str:
    """Return a markdown table of settings: name, type, default, unit, range, live, meaning."""
    lines = ['| parameter | type | default | unit | range or choices | live | description |',
             '|---|---|---|---|---|---|---|']
    for spec in specs:
        text = spec.description.replace('|', '\\|')
        lines.append(f'| `{spec.name}` | {spec.type} | {_markdown_value(spec.default)} | '
                     f'{spec.unit} | {spec.range_text()} | {"yes" if spec.live else ""} | '
                     f'{text} |')
    return '\n'.join(lines) + '\n'
