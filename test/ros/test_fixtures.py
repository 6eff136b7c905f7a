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

"""The test fixtures themselves: the shared-memory leak detector finds a real leak."""

import os

from conftest import LEAK_CHECK
import pytest
from ros_fixtures import clean_dead_segments, dead_segments, owned_segments


def test_environment_is_isolated():
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    # The worker's domain in the run's block, then the spare domains of a benchmark's cells.
    base, domain = int(os.environ['RI_TEST_DOMAIN_BASE']), int(os.environ['ROS_DOMAIN_ID'])
    spare = int(os.environ['RI_TEST_SPARE_DOMAIN'])
    assert 1 <= base <= domain < base + 4 == spare and spare + 8 <= 233
    assert os.environ['FASTDDS_DEFAULT_PROFILES_FILE'].endswith('config/fastdds_shm.xml')


@pytest.mark.skipif(not LEAK_CHECK, reason='this worker shares /dev/shm with another worker')
def test_a_killed_node_leaks_shared_memory_and_the_detector_sees_it(processes, ros):
    node, spinner = ros
    before = dead_segments()
    peer = processes.peer('echo.py')
    peer.wait_for_output('echo peer ready', spinner=spinner)
    assert dead_segments() == before, 'a live process must not count as a leak'
    owned = owned_segments(peer.pid)
    assert owned and not owned & owned_segments(os.getpid())
    peer.kill()
    leaked = dead_segments() - before
    assert leaked, 'SIGKILL left no segment behind: the detector cannot see leaks'
    assert leaked == owned, 'the segments of the killed peer are the ones it owned'
    clean_dead_segments()
    assert not (dead_segments() - before)
