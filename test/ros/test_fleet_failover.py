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
``on_server_loss: failover`` over real DDS: the installed executor with two candidate servers
(scripted servers in ``/gpu1`` and ``/gpu2``, the executor lists ``[gpu1, gpu2]``) and the
kinematic arm. The server in use is killed; the executor drains, holds, joins the other one as
a new session and runs again, from a capture taken after the new admission.
"""

import re

from node_fixtures import EXECUTOR
from remote_inference.msg import ExecutorStatus, InferenceRequest
from ros_fixtures import clean_dead_segments, write_params

from remote_inference_py.transport import qos

LEASE = {'presence_lease_s': 0.5}


def test_a_lost_server_is_replaced_by_the_other_candidate_as_a_new_session(processes, ros):
    node, spinner = ros
    statuses = []
    requests = {'gpu1': [], 'gpu2': []}
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    for name, seen in requests.items():
        node.create_subscription(InferenceRequest, f'/{name}/policy/request', seen.append,
                                 qos.COMMANDS)
    processes.peer('fake_arm.py', params={}, node_name='fake_arm')
    params = write_params(processes.log_dir / 'servers.params.yaml', '/**',
                          {'delay_s': 0.05, **LEASE})
    servers = {name: processes.peer('scripted_server.py', params=params,
                                    node_name=f'server_{name}', namespace=f'/{name}',
                                    args=['--ros-args', '-r', 'joint_states:=/joint_states'])
               for name in ('gpu1', 'gpu2')}
    executor = processes.console_script('executor', node_name='executor', params={
        **EXECUTOR, **LEASE, 'policy_servers': ['gpu1', 'gpu2'],
        'on_server_loss': 'failover'})
    spinner.until(lambda: statuses and statuses[-1].state_name == 'RUNNING'
                  and statuses[-1].chunks_accepted >= 2, 30, 'running with two chunks')
    first = statuses[-1]
    assert first.server in ('gpu1', 'gpu2') and first.failovers == 0
    # A candidate that answers over 1 s after the first (a loaded machine) is 'no answer'.
    assert re.fullmatch(r"'gpu1': (0/1 clients|no answer); 'gpu2': (0/1 clients|no answer)",
                        first.server_choice), first.server_choice
    assert f"'{first.server}': 0/1 clients" in first.server_choice
    other = 'gpu2' if first.server == 'gpu1' else 'gpu1'
    # The test node may find the executor after its first requests: wait for the next refill.
    spinner.until(lambda: requests[first.server], 10, f'a request to {first.server}')
    assert not requests[other]   # only the chosen one is asked

    servers[first.server].kill()
    clean_dead_segments()
    spinner.until(lambda: statuses[-1].failovers == 1 and statuses[-1].state_name == 'RUNNING',
                  20, 'failed over and running again')
    after = statuses[-1]
    assert after.server == other and after.session_id != first.session_id
    assert after.server_presence == 'alive'
    spinner.until(lambda: statuses[-1].chunks_accepted >= after.chunks_accepted + 2, 10,
                  'chunks of the new session')
    assert statuses[-1].state_name == 'RUNNING'
    # The other server only ever heard the new session (its capture is the pure tests' part).
    assert requests[other] and all(r.session_id == after.session_id for r in requests[other])
    output = executor.output()
    assert re.search(r'policy server instance \S+ lost', output) and 'failing over' in output
    assert f"failed over to server '{other}'" in output
    assert executor.stop() == 0
