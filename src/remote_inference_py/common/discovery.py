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
Discovery through a Fast DDS discovery server instead of every participant meeting every other.

With simple discovery each participant announces itself to all the others and learns every
endpoint of every one of them, so discovery traffic and memory grow with the square of the
participants on a shared network. With a discovery server, each participant (a *client*)
talks to the server only; the server tells each client about the participants and endpoints it
needs, and data still flows directly between the participants. Fast DDS switches a process to
client mode when ``ROS_DISCOVERY_SERVER`` names the server(s): ``HOST:PORT``, several
separated by ``;`` (redundant servers, each one knowing everything).

The launch argument ``discovery_server`` (:func:`parse`):

- ``''``: as before, the environment decides (simple discovery unless
  ``ROS_DISCOVERY_SERVER`` is already set).
- ``off``: simple discovery, even if the environment names a server.
- ``start`` or ``start:PORT``: start a server on this host (every interface, port 11811 or
  PORT) and use it; other hosts use ``HOST:PORT`` with this host's address.
- ``HOST:PORT[;HOST:PORT...]``: use running server(s).

A client sees only what it needs, so ``ros2 node list`` and ``ros2 topic list`` see nothing
unless the CLI is a *super client* (``ROS_SUPER_CLIENT=TRUE`` beside ``ROS_DISCOVERY_SERVER``,
and ``--no-daemon`` or a daemon started with both).

The server itself (:func:`main`, console script ``discovery_server``) is the
``fast-discovery-server`` binary of Fast DDS, run with ``config/fastdds_discovery_server.xml``:
its short lease (2 s) makes clients notice a restarted server within about that time and
announce themselves to the new instance, instead of after Fast DDS's default 20 s. Pure:
no rclpy import at module level.
"""

import argparse
from dataclasses import dataclass
import glob
import os
import shutil
import sys

DEFAULT_PORT = 11811
ENV = 'ROS_DISCOVERY_SERVER'
SUPER_CLIENT_ENV = 'ROS_SUPER_CLIENT'
BINARY = 'fast-discovery-server'
# fast-discovery-server's own command number for "run a server" (what ``fastdds discovery``
# passes it first).
SERVER_COMMAND = '42'
PROFILE = 'fastdds_discovery_server.xml'
USAGE = "expected '' (the environment decides), off, start, start:PORT or HOST:PORT[;HOST:PORT...]"


@dataclass(frozen=True)
class Discovery:
    """
    What ``discovery_server`` asks for.

    ``mode`` is ``environment``, ``off``, ``start`` or ``servers``; ``port`` the port to start
    a server on; ``servers`` the ``(host, port)`` pairs to use.
    """

    mode: str
    port: int = DEFAULT_PORT
    servers: tuple = ()

    def client_value(self):
        """Return the ``ROS_DISCOVERY_SERVER`` value the nodes get ('' for none, None: leave)."""
        if self.mode == 'environment':
            return None
        if self.mode == 'off':
            return ''
        if self.mode == 'start':
            return f'127.0.0.1:{self.port}'
        return ';'.join(f'{host}:{port}' for host, port in self.servers)


def _port(text, what):
    try:
        port = int(text)
    except ValueError:
        port = None
    if port is None or not 1 <= port <= 65535 or text.strip() != text:
        raise ValueError(f'discovery_server {what!r}: port {text!r} is not a number from 1 to '
                         f'65535')
    return port


def parse(value):
    """Return the :class:`Discovery` that ``value`` asks for; a ValueError names a bad value."""
    text = value.strip()
    if text == '':
        return Discovery('environment')
    if text.lower() == 'off':
        return Discovery('off')
    if text.lower() == 'start':
        return Discovery('start')
    if text.lower().startswith('start:'):
        return Discovery('start', port=_port(text[len('start:'):], value))
    servers = []
    for entry in text.split(';'):
        host, colon, port = entry.strip().rpartition(':')
        if not colon or not host:
            raise ValueError(f'discovery_server {value!r}: {entry.strip()!r} is not HOST:PORT; '
                             f'{USAGE}')
        if any(c.isspace() for c in host) or host.startswith('[') != host.endswith(']'):
            raise ValueError(f'discovery_server {value!r}: host {host!r} is not an address or '
                             f'a name')
        servers.append((host, _port(port, value)))
    return Discovery('servers', servers=tuple(servers))


def find_binary(search_path=None):
    """Return the path of ``fast-discovery-server``: on PATH, or beside this interpreter."""
    found = shutil.which(BINARY, path=search_path)
    if found is None:
        beside = os.path.join(os.path.dirname(sys.executable), BINARY)
        found = beside if os.access(beside, os.X_OK) else None
    if found is None:
        raise FileNotFoundError(
            f'{BINARY} (Fast DDS discovery server) is not on PATH nor beside {sys.executable}: '
            f'install Fast DDS with its tools (the ros-fastdds wheel, or ros-<distro>-fastdds)')
    return found


def library_path(binary, environ):
    """
    Return the ``LD_LIBRARY_PATH`` the binary needs.

    Installed from the ROS wheels, it finds ``libfastdds`` in the prefix's ``lib/`` and the
    renamed ``libtinyxml2`` in ``site-packages/ros_fastdds.libs``; neither is on the loader's
    path in a plain venv. On a sourced ROS 2 install they already are, and nothing is added.
    """
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
    extra = [os.path.join(prefix, 'lib')]
    extra += sorted(glob.glob(os.path.join(prefix, 'lib', 'python3*', 'site-packages',
                                           'ros_fastdds.libs')))
    current = [p for p in environ.get('LD_LIBRARY_PATH', '').split(':') if p]
    return ':'.join([p for p in extra if os.path.isdir(p) and p not in current] + current)


def server_command(binary, port, listen='0.0.0.0', profile=None):
    """Return the argv that runs a discovery server listening on ``listen:port`` (UDP)."""
    argv = [binary, SERVER_COMMAND, '-l', listen, '-p', str(port)]
    if profile:
        argv += ['-x', profile]
    return argv


def default_profile():
    """Return the server profile shipped in this package's share folder, or None."""
    try:
        from ament_index_python.packages import get_package_share_directory
        share = get_package_share_directory('remote_inference')
    except Exception:   # not installed as a ROS package (e.g. run from the source tree)
        share = os.path.join(os.path.dirname(__file__), '..', '..', '..')
    path = os.path.join(share, 'config', PROFILE)
    return os.path.realpath(path) if os.path.isfile(path) else None


def main(argv=None):
    """Run a Fast DDS discovery server in place of this process (console script)."""
    parser = argparse.ArgumentParser(
        prog='discovery_server', description='Run the Fast DDS discovery server that nodes '
        f'started with {ENV}=HOST:PORT (or discovery_server:=HOST:PORT) discover each other '
        'through. Stops on Ctrl+C, and with the launcher that started it.')
    parser.add_argument('--port', default=str(DEFAULT_PORT),
                        help=f'UDP port to listen on (default {DEFAULT_PORT})')
    parser.add_argument('--listen', default='0.0.0.0',
                        help='address to listen on (default 0.0.0.0: every interface)')
    parser.add_argument('--profile', default=None,
                        help=f'Fast DDS XML profile of the server (default config/{PROFILE})')
    argv = list(sys.argv[1:] if argv is None else argv)
    if '--ros-args' in argv:   # from ros2 run or a launcher: not a node, nothing to read there
        argv = argv[:argv.index('--ros-args')]
    options = parser.parse_args(argv)
    try:
        port = _port(options.port, f'--port {options.port}')
        binary = find_binary()
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f'discovery_server: error: {error}\n')
    profile = options.profile or default_profile()
    if options.profile and not os.path.isfile(options.profile):
        parser.exit(2, f'discovery_server: error: --profile {options.profile!r} does not '
                       f'exist\n')
    env = dict(os.environ, LD_LIBRARY_PATH=library_path(binary, os.environ))
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    from remote_inference_py.common.node_main import stop_with_parent
    stop_with_parent()   # the parent-death signal survives exec: no orphan server
    sys.stdout.flush()
    os.execve(binary, server_command(binary, port, options.listen, profile), env)


if __name__ == '__main__':
    main()
