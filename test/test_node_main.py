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

"""run_node: what every node process gets before it spins."""

import os
import subprocess
import sys
import textwrap

NODE = textwrap.dedent("""
    import gc
    from rclpy.node import Node
    from remote_inference_py.common.node_main import run_node

    class Probe(Node):
        def __init__(self):
            super().__init__('gc_probe')
            self.finished, self.exit_code = False, 0
            self.garbage = [[] for _ in range(5000)]   # made while starting
            self.create_timer(0.01, self.report)

        def report(self):
            if not self.finished:
                print('frozen', gc.get_freeze_count(), flush=True)
                self.finished = True

        def request_stop(self, reason):
            self.finished = True

        def close(self):
            pass

    raise SystemExit(run_node(Probe))
""")


def test_objects_made_while_starting_are_kept_out_of_garbage_collections():
    result = subprocess.run([sys.executable, '-c', NODE], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    frozen = int(result.stdout.split('frozen')[1].split()[0])
    assert frozen > 5000, result.stdout   # the node's own objects and every module's
