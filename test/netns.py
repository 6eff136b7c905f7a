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
Several "hosts" on one machine, for tests and benchmarks (test support, not installed).

A network namespace per host, all on one switch (a bridge in a namespace of its own), as a
lab's machines on one Ethernet segment.

Needs root and iproute2. Every name (namespaces, veth ends) carries a random tag, so two runs
at once (two pytest-xdist workers) never collide; the addresses exist only inside the
namespaces. Each host reaches the switch through ``eth0`` with ``10.<a>.<b>.<i + 1>/24``; its
``eth0`` byte counters are the host's traffic. Shared memory is not separated by namespaces:
give the processes a UDP-only Fast DDS profile, or the link under test is not the only path.
"""

import json
import subprocess
import uuid


def _ip(*args, check=True):
    done = subprocess.run(['ip', *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f'ip {" ".join(args)}: {done.stderr.strip()}')
    return done.stdout


class Lan:
    """Hosts ``names`` on one switch; use as a context manager (the namespaces go at exit)."""

    def __init__(self, names, subnet='10.232.0'):
        if len(set(names)) != len(names) or not 0 < len(names) < 250:
            raise ValueError(f'host names must be 1 to 249 distinct names, not {names!r}')
        self.tag = uuid.uuid4().hex[:6]
        self.names = list(names)
        self.subnet = subnet
        self.switch = f'ri{self.tag}sw'
        self.namespaces = {name: f'ri{self.tag}h{i}' for i, name in enumerate(self.names)}
        self.addresses = {name: f'{subnet}.{i + 1}' for i, name in enumerate(self.names)}

    def __enter__(self):
        """Create the switch and the hosts."""
        try:
            self._create()
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        """Remove every namespace (their veth ends go with them)."""
        self.close()

    def _create(self):
        _ip('netns', 'add', self.switch)
        switch = ['link add br0 type bridge mcast_snooping 0', 'link set br0 up', 'link set lo up']
        for i, name in enumerate(self.names):
            netns = self.namespaces[name]
            _ip('netns', 'add', netns)
            host_end, switch_end = f'r{self.tag}{i}h', f'r{self.tag}{i}s'
            _ip('link', 'add', host_end, 'netns', netns, 'type', 'veth',
                'peer', 'name', switch_end, 'netns', self.switch)
            self._batch(netns, [f'link set {host_end} name eth0',
                                f'addr add {self.addresses[name]}/24 dev eth0',
                                'link set eth0 up', 'link set lo up',
                                'route add 224.0.0.0/4 dev eth0'])
            switch += [f'link set {switch_end} master br0', f'link set {switch_end} up']
        self._batch(self.switch, switch)

    @staticmethod
    def _batch(netns, commands):
        done = subprocess.run(['ip', '-n', netns, '-batch', '-'], input='\n'.join(commands),
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f'ip -n {netns}: {done.stderr.strip()}')

    def close(self):
        """Delete the namespaces (idempotent)."""
        for netns in [self.switch, *self.namespaces.values()]:
            subprocess.run(['ip', 'netns', 'del', netns], capture_output=True)

    def prefix(self, name):
        """Return the argv prefix that runs a command on host ``name``."""
        return ['ip', 'netns', 'exec', self.namespaces[name]]

    def bytes(self, name):
        """Return ``(received, sent)`` bytes of host ``name``'s link so far."""
        link = json.loads(_ip('-n', self.namespaces[name], '-s', '-j', 'link', 'show', 'eth0'))
        stats = link[0]['stats64']
        return stats['rx']['bytes'], stats['tx']['bytes']

    def set_link(self, name, up):
        """Plug (``up``) or unplug host ``name``'s cable."""
        netns = self.namespaces[name]
        _ip('-n', netns, 'link', 'set', 'eth0', 'up' if up else 'down')
        if up:
            _ip('-n', netns, 'route', 'replace', '224.0.0.0/4', 'dev', 'eth0', check=False)
