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

"""The live dataset recorder node (``record_dataset``): when it starts the executor."""

import re

from node_fixtures import EXECUTOR
from remote_inference.msg import ExecutorStatus
from std_msgs.msg import String

from remote_inference_py.transport import qos

FINALIZED = re.compile(r'finalized: (\d+) episodes, (\d+) frames saved; left out: (\d+) held '
                       r'or starved ticks, (\d+) returning home')


def test_recording_waits_until_the_executor_is_heard_then_starts_it_and_records_each_tick(
        processes, ros, tmp_path, offline):
    """
    The hardware's joint states and the server heard, the dataset open, no executor yet: the
    recorder is not ready (its readers may not have matched the executor's writers, which
    would lose the run's first ticks). Once the executor is heard it says ``recording`` and
    starts it, and the dataset holds a row for each tick the executor dispatched.
    """
    node, spinner = ros
    states, statuses = [], []
    node.create_subscription(String, 'dataset/state', lambda msg: states.append(msg.data),
                             qos.LATCHED)
    node.create_subscription(ExecutorStatus, 'executor/status', statuses.append, qos.LATCHED)
    arm = processes.peer('fake_arm.py', node_name='fake_arm', params={'log_commands': False})
    processes.peer('scripted_server.py', node_name='scripted_server', params={'delay_s': 0.05})
    recorder = processes.console_script('record_dataset', node_name='dataset_recorder', params={
        'dataset_dir': str(tmp_path / 'data'), 'repo_id': 'local/data', 'start_executor': True})
    recorder.wait_for_output(r'recording dataset .* at 30 fps', 120, spinner)
    spinner.spin_for(2.0)   # the joint states and the server's presence come meanwhile
    assert states == [], recorder.output()
    executor = processes.console_script('executor', node_name='executor',
                                        params={**EXECUTOR, 'autostart': False})
    spinner.until(lambda: 'recording' in states, 60, "the recorder's 'recording'")
    recorder.wait_for_output(r'recording: executor/start called', 30, spinner)
    spinner.until(lambda: statuses and statuses[-1].dispatched_ticks >= 30, 60,
                  'a second of dispatched ticks')
    assert executor.stop(spinner=spinner) == 0
    assert arm.stop(spinner=spinner) == 0
    assert recorder.wait(60) == 0, recorder.output()
    final = statuses[-1]
    episodes, frames, held, returning = FINALIZED.search(recorder.output()).groups()
    # Every tick from the first: the held ones of the first wait too.
    assert (int(episodes), int(frames), int(held)) == (
        1, final.dispatched_ticks, final.held_ticks), recorder.output()
    assert int(returning) > 0
