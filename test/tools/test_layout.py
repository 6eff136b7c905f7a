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

"""The package's rooms and who may import whom (the picture in docs/design.md), from the AST.

Every import counts, also one inside a function: a lazy import still ties two rooms together.
"""

import ast
import pathlib
import re
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'src' / 'remote_inference_py'
NODE_ROOMS = ('executor', 'policy_server', 'hardware')
SHARED_ROOMS = ('robot', 'contract', 'transport', 'common')
ROS_PACKAGES = ('rclpy', 'rcl_interfaces', 'rosidl_runtime_py', 'sensor_msgs', 'std_msgs',
                'std_srvs', 'geometry_msgs', 'trajectory_msgs', 'lifecycle_msgs',
                'remote_inference', 'launch', 'launch_ros')
# The modules that map ROS onto the cores; everything else runs without ROS.
ROS_MODULES = {'executor.node', 'policy_server.node', 'hardware.node', 'common.node_main',
               'common.params', 'analysis.record', 'analysis.dataset_record', 'demo', 'smoke',
               'evaluation.realtime', 'launching', 'teleop.node', 'evaluation.expert_leader'}


def modules():
    """Map a dotted name below the package (``executor.core``) to its file."""
    found = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        found['.'.join(parts)] = path
    return found


def imports(path):
    """Every absolute module name imported anywhere in the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f'{node.module}.{alias.name}' for alias in node.names)
    return names


def internal_graph():
    """Our module -> the set of our modules it imports."""
    ours = modules()
    graph = {}
    for name, path in ours.items():
        targets = set()
        for imported in imports(path):
            if imported.startswith('remote_inference_py.'):
                target = imported[len('remote_inference_py.'):]
                while target and target not in ours:
                    target = target.rpartition('.')[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def room(module):
    return module.split('.')[0]


def test_no_node_room_imports_another():
    crossings = [f'{m} imports {t}' for m, targets in internal_graph().items()
                 for t in targets
                 if room(m) in NODE_ROOMS and room(t) in NODE_ROOMS and room(t) != room(m)]
    assert not crossings, '\n'.join(crossings)


def test_no_test_module_imports_another():
    """What several test files share is a helper module beside test/conftest.py."""
    tests = PACKAGE.parents[1] / 'test'
    test_modules = {path.stem for path in tests.rglob('test_*.py')}
    wrong = sorted({f'{path.relative_to(tests)} imports {name.split(".")[0]}'
                    for path in tests.rglob('*.py') for name in imports(path)
                    if name.split('.')[0] in test_modules})
    assert not wrong, '\n'.join(wrong)


def test_shared_rooms_stand_on_nothing_above_them():
    # The contract declares the settings both nodes have with common.settings (pure).
    allowed = {'robot': {'robot'}, 'contract': {'contract', 'common.settings'},
               'transport': {'transport', 'contract'}, 'common': {'common'}}
    wrong = [f'{m} imports {t}' for m, targets in internal_graph().items()
             for t in targets if room(m) in allowed
             and room(t) not in allowed[room(m)] and t not in allowed[room(m)]]
    assert not wrong, '\n'.join(wrong)


def test_no_import_circles():
    graph = internal_graph()
    circles = []
    state = {}

    def visit(module, stack):
        state[module] = 'open'
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 'open':
                circles.append(' -> '.join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[module] = 'done'

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not circles, '\n'.join(circles)


def test_only_the_mapping_modules_and_transport_import_ros():
    offenders = []
    for name, path in modules().items():
        if name in ROS_MODULES or room(name) == 'transport':
            continue
        ros = sorted(i for i in imports(path) if i.split('.')[0] in ROS_PACKAGES)
        if ros:
            offenders.append(f'{name}: {", ".join(ros)}')
    assert not offenders, '\n'.join(offenders)


def test_the_node_rooms_each_have_one_node():
    for node_room in NODE_ROOMS:
        assert (PACKAGE / node_room / 'node.py').is_file(), node_room


@pytest.mark.parametrize('module, absent', [
    ('remote_inference_py.hardware.node', 'scservo_sdk'),     # backend:=sim needs no servo SDK
    ('remote_inference_py.hardware.node', 'cv2'),             # OpenCV only with cameras or JPEG
    ('remote_inference_py.policy_server.node', 'torch'),      # torch only with a model runtime
    ('remote_inference_py.executor.node', 'torch'),
    ('remote_inference_py.executor.node', 'mujoco'),
])
def test_heavy_packages_are_imported_only_when_needed(module, absent):
    code = f'import sys, {module}; print({absent!r} in sys.modules)'
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'False'


def test_the_repository_explains_itself():
    # Docs and docstrings cite docs/ inside the repository, never documents it does not hold.
    # .ci/ is the CI machine's script: it installs the ROS 2 tools from beside the checkout.
    root = PACKAGE.parents[1]
    tracked = subprocess.run(['git', 'ls-files'], cwd=root, capture_output=True, text=True,
                             check=True).stdout.split()
    outside = re.compile(r'\.\./shared|contract\.md|platform\.md|house-style\.md|\bissue \d+',
                         re.IGNORECASE)
    texts = ('.py', '.md', '.yaml', '.msg', '.srv', '.txt', '.xml', '')
    found = [f'{name}:{number}: {line.strip()}'
             for name in tracked
             if not name.startswith('.ci/') and name != 'test/tools/test_layout.py'
             and (root / name).is_file() and (root / name).suffix in texts
             for number, line in enumerate((root / name).read_text(errors='replace')
                                           .splitlines(), 1)
             if outside.search(line)]
    assert not found, '\n'.join(found)
