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

"""Every node stops when asked, again and again: within its bound, its own stop path first.

Each node is started and stopped STOPS times, by SIGINT and by SIGTERM in turn (as Ctrl+C and
a supervisor do). Each stop must end the process within the bounds the node declares: its own
stop (the hardware interface's ``shutdown_grace_s``), then ``CLEANUP_REPORT_S`` for its
clean-up and ``TEARDOWN_BOUND_S`` for destroying its DDS endpoints. A process still alive then
fails the test. It exits 0 after its stop path logged its end, or 1 when Fast DDS's teardown
deadlocked (``common/node_main.py`` names it and removes its own segments); either way no
shared-memory segment of it is left behind. ``./run test --under-load`` runs it beside CPU
hogs.
"""

import contextlib
import signal

from emulator import EmulatorProcess
from node_fixtures import EXECUTOR
import pytest
from ros_fixtures import dead_segments, NodeProcess, teardown_deadlocked

from remote_inference_py.common.node_main import CLEANUP_REPORT_S, TEARDOWN_BOUND_S

STOPS = 4
GRACE_S = 0.2
NODES = {   # name: (parameters, a line it logs once ready, the line its stop path ends with)
    'executor': ({**EXECUTOR, 'admission_timeout_s': 600.0}, 'waiting for the policy server',
                 'executor finished: STOPPED'),
    'policy_server': ({'deployment': 'test', 'warmup_iterations': 1}, 'Policy server ready',
                      ''),
    'hardware_interface': ({'backend': 'sim', 'sim_render': False,
                            'shutdown_grace_s': GRACE_S}, 'active: torque on',
                           'hardware interface stopped'),
    'leader_arm': ({}, 'publishing leader/joint_states', 'leader arm stopped'),  # bus below
}


@pytest.mark.parametrize('name', NODES)
def test_a_node_stops_within_its_bounds_every_time(name, tmp_path, ros):
    params, ready, stopped = NODES[name]
    with contextlib.ExitStack() as bus:
        if name == 'leader_arm':   # the leader's servo bus, emulated
            params = {**params, 'port': bus.enter_context(EmulatorProcess()).port}
        stop_again_and_again(name, params, ready, stopped, tmp_path)


def stop_again_and_again(name, params, ready, stopped, tmp_path):
    """Start node `name` and stop it STOPS times, checking each stop (module doc)."""
    bound = GRACE_S + CLEANUP_REPORT_S + TEARDOWN_BOUND_S
    before = dead_segments()
    for index in range(STOPS):
        signum = (signal.SIGINT, signal.SIGTERM)[index % 2]
        proc = NodeProcess.console_script(name, tmp_path / f'{name}_{index}', params=params,
                                          node_name=name)
        try:
            proc.wait_for_output(ready, 120)
            proc.proc.send_signal(signum)
            code = proc.wait(timeout=bound)   # fails naming the node if it is still alive
        finally:
            proc.kill()
        output = proc.output()
        assert code == 0 or teardown_deadlocked(code, output), (signum, code, output)
        assert f'stop requested: received {signal.Signals(signum).name}' in output, output
        if stopped:   # the node's own stop path ran to its end first
            assert stopped in output, output
        assert not dead_segments() - before, f'{name} left shared memory behind'
