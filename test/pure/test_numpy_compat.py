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
The code runs on numpy 2 (requirements.txt) and on numpy 1.26 (constraints-ros-apt.txt).

CI runs this file in both venvs (``./run test`` and ``RI_ROS_APT=1 ./run test -m "pure or
tools"``). Each numpy name the code uses (``np.trapezoid``, ``np.linalg.norm``, ``from numpy
import ...``) must exist in the numpy of the venv, and each keyword given to a numpy function
must be one it takes (``np.asarray(..., copy=...)`` is numpy 2 only): passing in both venvs
means the code uses the names both have, in the nodes too, which the numpy 1.26 venv does
not run.
"""

import ast
import importlib.metadata
import inspect
import os
import pathlib
import re
import types

import numpy
from packaging.requirements import Requirement
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODE_DIRS = ['src', 'test', 'bench', 'tools', 'launch']
ROS_APT = os.environ.get('RI_ROS_APT') == '1'


def python_files():
    for name in CODE_DIRS:
        yield from (p for p in sorted((ROOT / name).rglob('*.py'))
                    if '__pycache__' not in p.parts)


def numpy_aliases(nodes):
    """Return {local name: numpy module name} for every `import numpy...` among nodes."""
    aliases = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == 'numpy' or alias.name.startswith('numpy.'):
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases['numpy'] = 'numpy'
    return aliases


def resolve(dotted):
    """Return the numpy object at a dotted path, or raise AttributeError naming the part."""
    parts = dotted.split('.')
    obj = numpy
    for i, part in enumerate(parts[1:], start=1):
        name = '.'.join(parts[:i + 1])
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:  # a submodule that numpy does not import by itself
            obj = importlib.import_module(name)
        except ImportError:
            raise AttributeError(name) from None
    return obj


def keyword_names(func):
    """Return the keyword names func takes, or None when unknown or open (**kwargs)."""
    try:
        params = inspect.signature(func).parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        return {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
    except (TypeError, ValueError):
        pass
    # numpy 1.x C functions have no signature, but their docstring starts with one.
    first = (getattr(func, '__doc__', None) or '').strip().split('\n', 1)[0]
    match = re.fullmatch(r'\w+(\(.*\))', first)
    if not match:
        return None
    try:
        args = ast.parse(f'def f{match.group(1)}: pass').body[0].args
    except SyntaxError:
        return None
    if args.kwarg:
        return None
    return {a.arg for a in args.args + args.kwonlyargs}


def dotted_name(node, aliases):
    """Return 'numpy.x.y' for an attribute chain on a numpy alias, else None."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases and names:
        return '.'.join([aliases[node.id]] + names[::-1])
    return None


def problems_in(path):
    """List 'file:line: ...' for numpy names or keywords the installed numpy lacks."""
    text = path.read_text()
    if 'numpy' not in text:
        return []
    nodes = list(ast.walk(ast.parse(text, filename=str(path))))
    aliases = numpy_aliases(nodes)
    where = path.relative_to(ROOT) if ROOT in path.parents else path
    # Only whole chains: np.linalg.norm, not its part np.linalg again.
    inner = {id(node.value) for node in nodes if isinstance(node, ast.Attribute)}
    found = []
    for node in nodes:
        uses = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
                node.module == 'numpy' or node.module.startswith('numpy.')):
            uses = [f'{node.module}.{alias.name}' for alias in node.names]
        elif isinstance(node, ast.Import):
            uses = [a.name for a in node.names if a.name.startswith('numpy.')]
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            name = dotted_name(node, aliases)
            uses = [name] if name else []
        for name in uses:
            try:
                resolve(name)
            except AttributeError as error:
                found.append(f'{where}:{node.lineno}: {error} is not in numpy '
                             f'{numpy.__version__}')
        if isinstance(node, ast.Call) and node.keywords:
            name = dotted_name(node.func, aliases)
            try:
                func = resolve(name) if name else None
            except AttributeError:
                continue  # named above
            if not callable(func) or isinstance(func, (type, types.ModuleType)):
                continue
            accepted = keyword_names(func)
            for keyword in node.keywords:
                if accepted is not None and keyword.arg and keyword.arg not in accepted:
                    found.append(f'{where}:{node.lineno}: {name}() takes no keyword '
                                 f'{keyword.arg!r} in numpy {numpy.__version__}')
    return found


def test_every_numpy_name_and_keyword_exists_in_this_numpy():
    files = list(python_files())
    assert len(files) > 50
    problems = [line for path in files for line in problems_in(path)]
    assert not problems, '\n'.join(problems)


@pytest.mark.parametrize('source, bad', [
    ('import numpy as np\nnp.definitely_not_numpy(1)\n', 'numpy.definitely_not_numpy'),
    ('import numpy as xp\nxp.linalg.no_such_norm(1)\n', 'numpy.linalg.no_such_norm'),
    ('import numpy.linalg as la\nla.no_such_norm\n', 'numpy.linalg.no_such_norm'),
    ('from numpy.typing import NoSuchType\n', 'numpy.typing.NoSuchType'),
    ('from numpy import no_such_name\n', 'numpy.no_such_name'),
    ('import numpy\nnumpy.interp(1, [0], [0], no_such_keyword=2)\n', "'no_such_keyword'"),
])
def test_the_check_names_what_this_numpy_lacks(tmp_path, source, bad):
    path = tmp_path / 'probe.py'
    path.write_text(source)
    problems = problems_in(path)
    assert len(problems) == 1 and bad in problems[0], problems


def test_the_check_knows_the_keywords_of_c_functions():
    # np.asarray is a C function: numpy 1.26 gives no signature, only the docstring's.
    assert {'a', 'dtype', 'order', 'like'} <= keyword_names(numpy.asarray)
    numpy_2 = int(numpy.__version__.split('.')[0]) >= 2
    assert ('copy' in keyword_names(numpy.asarray)) == numpy_2


def pins(path):
    """Return {name: Requirement} for the lines of a requirements or constraints file."""
    lines = (line.split('#')[0].strip() for line in path.read_text().splitlines())
    requirements = [Requirement(line) for line in lines if line]
    return {req.name.lower(): req for req in requirements}


def test_the_venv_holds_the_versions_its_pin_files_name():
    # The numpy 1.26 venv (RI_ROS_APT=1) holds what constraints-ros-apt.txt names; the main
    # venv holds what requirements*.txt name for the same packages (contourpy, which
    # matplotlib pulls, is pinned in the constraints only).
    constrained = pins(ROOT / 'constraints-ros-apt.txt')
    assert constrained['numpy'].specifier == Requirement('numpy==1.26.4').specifier
    expected = constrained if ROS_APT else {
        **pins(ROOT / 'requirements.txt'), **pins(ROOT / 'requirements-lerobot.txt')}
    for name in set(constrained) & set(expected):
        installed = importlib.metadata.version(name)
        assert expected[name].specifier.contains(installed, prereleases=True), (
            f'{name} {installed} installed; {expected[name]} expected')
    assert numpy.__version__.startswith('1.26.' if ROS_APT else '2.')
