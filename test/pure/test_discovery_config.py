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

"""The discovery_server launch argument, the server's command line and its shipped profile."""

import os
import pathlib
import xml.etree.ElementTree as ElementTree

import pytest

from remote_inference_py.common import discovery

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize('value, mode, client', [
    ('', 'environment', None),
    ('  ', 'environment', None),
    ('off', 'off', ''),
    ('OFF', 'off', ''),
    ('start', 'start', '127.0.0.1:11811'),
    ('start:1', 'start', '127.0.0.1:1'),
    ('start:65535', 'start', '127.0.0.1:65535'),
    ('10.0.0.5:11811', 'servers', '10.0.0.5:11811'),
    ('gpu-1.lab:11888', 'servers', 'gpu-1.lab:11888'),
    ('10.0.0.5:11811;10.0.0.6:11812', 'servers', '10.0.0.5:11811;10.0.0.6:11812'),
    ('10.0.0.5:11811; 10.0.0.6:11812', 'servers', '10.0.0.5:11811;10.0.0.6:11812'),
])
def test_a_value_says_what_the_nodes_get(value, mode, client):
    choice = discovery.parse(value)
    assert choice.mode == mode
    assert choice.client_value() == client


def test_start_listens_on_its_port_and_a_list_keeps_its_order():
    assert discovery.parse('start:12000').port == 12000
    assert discovery.parse('start').port == discovery.DEFAULT_PORT == 11811
    assert discovery.parse('b:2;a:1').servers == (('b', 2), ('a', 1))


@pytest.mark.parametrize('value, named', [
    ('10.0.0.5', "discovery_server '10.0.0.5': '10.0.0.5' is not HOST:PORT"),
    (':11811', "discovery_server ':11811': ':11811' is not HOST:PORT"),
    ('a:1;', "discovery_server 'a:1;': '' is not HOST:PORT"),
    ('start:0', "discovery_server 'start:0': port '0' is not a number from 1 to 65535"),
    ('start:65536', "port '65536' is not a number from 1 to 65535"),
    ('start:', "port '' is not a number"),
    ('10.0.0.5:x', "discovery_server '10.0.0.5:x': port 'x' is not a number"),
    ('10.0.0.5:-1', "port '-1' is not a number from 1 to 65535"),
    ('my host:11811', "host 'my host' is not an address or a name"),
    ('stop', "discovery_server 'stop': 'stop' is not HOST:PORT; expected '' (the environment "
             'decides), off, start, start:PORT or HOST:PORT[;HOST:PORT...]'),
])
def test_a_bad_value_is_a_named_error(value, named):
    with pytest.raises(ValueError) as raised:
        discovery.parse(value)
    assert named in str(raised.value)


def test_the_server_command_line():
    assert discovery.server_command('/x/fast-discovery-server', 11811) == [
        '/x/fast-discovery-server', '42', '-l', '0.0.0.0', '-p', '11811']
    assert discovery.server_command('fds', 7, listen='10.1.2.3', profile='/p.xml') == [
        'fds', '42', '-l', '10.1.2.3', '-p', '7', '-x', '/p.xml']


def test_the_library_path_of_a_wheel_install(tmp_path):
    (tmp_path / 'bin').mkdir()
    binary = tmp_path / 'bin' / 'fast-discovery-server'
    binary.touch()
    libs = tmp_path / 'lib' / 'python3.11' / 'site-packages' / 'ros_fastdds.libs'
    libs.mkdir(parents=True)
    lib = str(tmp_path / 'lib')
    assert discovery.library_path(str(binary), {}) == f'{lib}:{libs}'
    assert discovery.library_path(str(binary), {'LD_LIBRARY_PATH': '/opt/x'}) == \
        f'{lib}:{libs}:/opt/x'
    # Already there (a sourced ROS install, or a second start): nothing is added twice.
    assert discovery.library_path(str(binary), {'LD_LIBRARY_PATH': f'{lib}:/opt/x'}) == \
        f'{libs}:{lib}:/opt/x'


def test_the_binary_is_found_in_this_install():
    found = discovery.find_binary()
    assert os.path.basename(found) == 'fast-discovery-server' and os.access(found, os.X_OK)


def test_a_bad_port_of_the_console_script_is_named(capsys):
    with pytest.raises(SystemExit) as raised:
        discovery.main(['--port', '0'])
    assert raised.value.code == 2
    assert "port '0' is not a number from 1 to 65535" in capsys.readouterr().err


def test_a_missing_profile_of_the_console_script_is_named(capsys, tmp_path):
    with pytest.raises(SystemExit) as raised:
        discovery.main(['--profile', str(tmp_path / 'none.xml')])
    assert raised.value.code == 2
    assert f"--profile '{tmp_path / 'none.xml'}' does not exist" in capsys.readouterr().err


def test_the_shipped_server_profile_has_the_short_lease():
    ns = {'d': 'http://www.eprosima.com'}
    root = ElementTree.parse(ROOT / 'config' / discovery.PROFILE).getroot()
    config = root.find('.//d:participant/d:rtps/d:builtin/d:discovery_config', ns)
    assert config.find('d:discoveryProtocol', ns).text == 'SERVER'
    assert config.find('d:leaseDuration/d:sec', ns).text == '2'
    assert config.find('d:leaseAnnouncement/d:nanosec', ns).text == '500000000'
