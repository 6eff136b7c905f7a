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

"""The suite's two lanes (test/lanes.py): what the background worker may run, and how."""

import pathlib
import re
import types

import lanes
from lanes import BACKGROUND_FILES, is_background, LaneScheduling, StuckWatch
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HANG_BOUND_S = 120.0   # a timeout at least this long only stops a hung child

# What makes a test wait on a clock: reading or sleeping on it, spinning DDS, node processes.
CLOCKS = re.compile(r'time\.(monotonic|time|perf_counter|sleep)\b|\.until\(|spin_for\(|'
                    r'def \w+\([^)]*\b(ros|processes|ros_context)\b|deadline=(?!None)')
TIMEOUT = re.compile(r'timeout=([0-9.]+)')


@pytest.mark.parametrize('path', BACKGROUND_FILES)
def test_a_background_file_waits_on_no_clock(path):
    text = (ROOT / path).read_text()
    found = CLOCKS.search(text)
    assert found is None, f'{path} waits on a clock ({found.group(0)!r}): take it out of ' \
                          f'lanes.BACKGROUND_FILES, a niced worker would make it late'
    short = [float(value) for value in TIMEOUT.findall(text) if float(value) < HANG_BOUND_S]
    assert not short, f'{path} has timeouts {short} s, shorter than a hang bound'


def test_the_clock_check_catches_what_it_names():
    for line in ('began = time.monotonic()', 'time.sleep(0.1)', 'spinner.until(done, 5)',
                 'def test_x(processes, tmp_path):', 'settings(deadline=200)'):
        assert CLOCKS.search(line), line
    for line in ('settings(max_examples=9, deadline=None)', 'request_timeout_s=2.0',
                 'def test_x(tmp_path, rospy_free):'):
        assert not CLOCKS.search(line), line
    assert TIMEOUT.findall('run(args, timeout=60)') == ['60']


class Worker:
    """A pytest-xdist worker as the scheduler sees it: it runs what it is sent, in order."""

    def __init__(self, name, nice=None):
        self.gateway = types.SimpleNamespace(id=name, spec=types.SimpleNamespace(nice=nice))
        self.shutting_down = False
        self.held = []
        self.ran = []

    def send_runtest_some(self, indices):
        assert not self.shutting_down
        self.held.extend(indices)

    def shutdown(self):
        self.shutting_down = True


CONFIG = types.SimpleNamespace(option=types.SimpleNamespace())
COLLECTION = ['test/system/test_system.py::test_a',
              'test/system/test_build_and_setup.py::test_build',
              'test/ros/test_sim.py::test_b',
              'test/ros/test_sim.py::test_c',
              'test/tools/test_lint.py::test_flake8',
              'test/tools/test_feetech_bus.py::test_d',
              'test/pure/test_flow_head.py::test_e',
              'test/pure/test_merge.py::test_f']


def start(workers, specs):
    scheduler = LaneScheduling(CONFIG, specs)
    for worker in workers:
        scheduler.add_node(worker)
    return scheduler


def run_one(scheduler, worker):
    """Let `worker` finish the first test it holds, as xdist reports it."""
    index = worker.held.pop(0)
    worker.ran.append(COLLECTION[index])
    scheduler.mark_test_complete(worker, index)


def test_the_background_worker_runs_only_background_tests_and_every_test_runs_once():
    timed = [Worker('gw0'), Worker('gw1')]
    background = Worker('gw2', nice='19')
    scheduler = start([*timed, background], ['popen', 'popen', 'popen//nice=19'])
    for worker in timed:
        scheduler.add_node_collection(worker, COLLECTION)
    # The timed workers start without waiting for the niced one's collection.
    assert scheduler.collection_is_completed
    scheduler.schedule()
    # A whole file at a time, until a worker holds two tests.
    assert [[COLLECTION[i].split('::')[0] for i in worker.held] for worker in timed] == [
        ['test/system/test_system.py', 'test/ros/test_sim.py', 'test/ros/test_sim.py'],
        ['test/tools/test_feetech_bus.py', 'test/pure/test_merge.py']]
    assert not background.held
    scheduler.add_node_collection(background, COLLECTION)
    scheduler.schedule()
    assert [COLLECTION[i] for i in background.held] == [
        'test/system/test_build_and_setup.py::test_build', 'test/tools/test_lint.py::test_flake8']
    # The background worker is slow: the timed ones run their lane, then take background tests.
    while any(worker.held for worker in timed):
        for worker in timed:
            if worker.held:
                run_one(scheduler, worker)
    assert all(worker.shutting_down for worker in timed)
    while background.held:
        run_one(scheduler, background)
    assert scheduler.tests_finished and background.shutting_down
    assert all(is_background(nodeid) for nodeid in background.ran)
    ran = [nodeid for worker in (*timed, background) for nodeid in worker.ran]
    assert sorted(ran) == sorted(COLLECTION)
    assert 'test/pure/test_flow_head.py::test_e' in timed[0].ran + timed[1].ran


def test_a_crashed_workers_tests_go_back_to_the_head_of_their_lanes():
    timed = [Worker('gw0'), Worker('gw1')]
    background = Worker('gw2', nice='19')
    scheduler = start([*timed, background], ['popen', 'popen', 'popen//nice=19'])
    for worker in (*timed, background):
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    crashed = scheduler.remove_node(timed[0])
    assert crashed == COLLECTION[0]
    # The rest it held (test_sim's two tests) are the next ones handed out.
    rest = timed[0].held[1:]
    assert [COLLECTION[i] for i in rest] == COLLECTION[2:4]
    run_one(scheduler, timed[1])
    assert timed[1].held[-2:] == rest
    assert not scheduler.tests_finished and scheduler.has_pending


def test_the_collection_of_a_worker_that_never_took_part_is_ignored():
    timed = [Worker('gw0'), Worker('gw1')]
    scheduler = start(timed, ['popen', 'popen'])
    for worker in timed:
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    scheduler.remove_node(timed[0])
    replacement = Worker('gw3')      # shut down by xdist when it came up: never added
    replacement.shutdown()
    scheduler.add_node_collection(replacement, COLLECTION)
    assert replacement not in scheduler.nodes and not replacement.held
    while timed[1].held:
        run_one(scheduler, timed[1])
    assert scheduler.tests_finished


def test_without_a_niced_worker_the_timed_workers_run_everything():
    timed = [Worker('gw0'), Worker('gw1')]
    scheduler = start(timed, ['popen', 'popen'])
    for worker in timed:
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    while any(worker.held for worker in timed):
        for worker in timed:
            if worker.held:
                run_one(scheduler, worker)
    assert sorted(timed[0].ran + timed[1].ran) == sorted(COLLECTION)
    assert scheduler.tests_finished


def test_workers_that_collected_different_tests_are_named():
    timed = [Worker('gw0'), Worker('gw1')]
    scheduler = start(timed, ['popen', 'popen'])
    scheduler.add_node_collection(timed[0], COLLECTION)
    with pytest.raises(RuntimeError, match='gw0.*gw1|gw1.*gw0'):
        scheduler.add_node_collection(timed[1], COLLECTION[:-1])


def test_the_background_worker_is_released_when_the_timed_lane_is_empty(tmp_path, monkeypatch):
    flag = tmp_path / 'release'
    monkeypatch.setenv(lanes.RELEASE_VARIABLE, str(flag))
    timed = [Worker('gw0'), Worker('gw1')]
    background = Worker('gw2', nice='19')
    scheduler = start([*timed, background], ['popen', 'popen', 'popen//nice=19'])
    for worker in (*timed, background):
        scheduler.add_node_collection(worker, COLLECTION)
    assert scheduler.config is CONFIG   # plugins read the run's configuration here
    scheduler.schedule()
    while scheduler.queues[False]:
        assert not flag.exists()          # timed files still queued: the lane stays niced
        run_one(scheduler, next(w for w in timed if w.held))
    assert flag.exists()


class Niced(StuckWatch):
    """A StuckWatch on a manual clock, niced until released."""

    def __init__(self, flag, nice=19):
        self.now, self.nice, self.reniced = 0.0, nice, []
        super().__init__(bound_s=10.0, release_path=str(flag), clock=lambda: self.now)

    def niced(self):
        return self.nice > 0


def test_a_test_starved_at_low_priority_is_not_stuck_until_released(tmp_path, monkeypatch):
    flag = tmp_path / 'release'
    watch = Niced(flag)
    monkeypatch.setattr(lanes, 'renice_tree', lambda pid: watch.reniced.append(pid) or '')
    watch.begin('test/system/test_build_and_setup.py::test_build')
    for _ in range(100):          # 1000 s starved beside the timed lane: the clock stands
        watch.now += 10.0
        assert not watch.check()
    flag.write_text('empty')
    watch.now += 1.0
    assert not watch.check() and watch.reniced   # released: reniced, the clock runs
    watch.nice = 0
    watch.now += 8.99
    assert not watch.check()        # just inside the bound: 9.99 s since the release
    watch.now += 0.01
    assert watch.check()            # at the bound: stuck


def test_a_timed_workers_test_is_stuck_after_the_bound_and_a_finished_one_never(tmp_path):
    watch = Niced(tmp_path / 'never', nice=0)
    watch.begin('test/ros/test_sim.py::test_b')
    watch.now = 9.99
    assert not watch.check()
    watch.now = 10.0
    assert watch.check()
    watch.end()
    watch.now = 100.0
    assert not watch.check()
    assert lanes.descendants(1)     # every process descends from init


def test_the_gil_free_bound_is_armed_at_normal_priority_only(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(lanes.faulthandler, 'dump_traceback_later',
                        lambda timeout, exit, file: calls.append(('arm', timeout, exit, file)))
    monkeypatch.setattr(lanes.faulthandler, 'cancel_dump_traceback_later',
                        lambda: calls.append(('disarm',)))
    watch = Niced(tmp_path / 'release')
    watch.beat()                    # niced: it may wait any time for the CPU
    watch.nice = 0
    watch.beat()                    # released to normal priority: bounded, stacks to its file
    assert calls == [('disarm',), ('arm', lanes.GIL_STALL_S, True, watch.out)]
