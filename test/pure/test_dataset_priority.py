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

"""An episode's save (video encoding) runs below the recorder's CPU priority, threads and all."""

import os
import sys
import threading

import pytest

from remote_inference_py.analysis.dataset_writer import call_at_lower_priority, SAVE_NICE

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='per-thread nice values are Linux')


def niceness():
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_the_work_and_every_thread_it_starts_run_lower_and_the_caller_keeps_its_priority():
    base = niceness()
    if base + 1 > 19:
        pytest.skip('this process runs at the lowest priority already')
    seen = {}

    def work():
        seen['work'] = niceness()
        encoder = threading.Thread(target=lambda: seen.setdefault('encoder', niceness()))
        encoder.start()
        encoder.join()
        return 'saved'

    assert call_at_lower_priority(work) == 'saved'
    lowered = min(19, base + SAVE_NICE)
    assert seen == {'work': lowered, 'encoder': lowered}
    assert niceness() == base
    assert call_at_lower_priority(lambda: niceness(), nice=1) == base + 1


def test_an_error_of_the_work_reaches_the_caller():
    def work():
        raise OSError(28, 'No space left on device')

    with pytest.raises(OSError, match='No space left'):
        call_at_lower_priority(work)
