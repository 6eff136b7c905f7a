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
Two lanes for the workers of ``./run test``: timed tests, and a background lane.

Most of the suite runs nodes, timers and deadlines in real time: on two cores, two workers at
a time are what it stands without a late message failing a test, and those two workers leave
the cores idle about a third of the time (they wait on DDS, leases, timeouts). A third worker
started at the lowest CPU priority (``nice=19`` in its pytest-xdist ``--tx`` spec) fills that
idle time with tests that never read the clock: compiles, linters, model builds, simulated-time
evaluations (``BACKGROUND_FILES``). Beside a timed worker that wants the CPU it gets almost
none (the kernel weighs nice 19 at 1.5 % of nice 0), so it hardly delays a timed test.

:class:`LaneScheduling` hands each worker a whole test file at a time (so a module's fixtures
are built once, as in a serial run), and the next file when fewer than two of its tests are
left (pytest-xdist runs a test once it knows the next one): a background worker only background
files, a timed worker timed files first and background ones when no timed file is left, so the
run never ends waiting on the slow lane alone. A file belongs in ``BACKGROUND_FILES`` only if
it waits on nothing; as a backstop, ``test/pure/test_lanes.py`` reads each listed file (not
the helpers it calls) for clocks, sleeps, short timeouts and DDS fixtures, and fails when one
appears.

A niced worker is starved by design whenever the timed lane and anything else on the machine
keep both cores busy: beside two CPU hogs it gets well under 1 % of a core, so a file it holds
does not advance. So the lanes end when the timed lane's queue is empty: the controller then
writes the release flag (``RI_TEST_LANE_RELEASE``, a path), and the background worker, which
polls it, renices itself and every process it started to normal priority and finishes at the
speed of the others. A test's stuck clock (:class:`StuckWatch`, ``STUCK_TEST_S``) counts only
time its worker ran at normal priority: before, a colcon build held by the niced worker beside
two hogs ran into the wall-clock bound and the worker was ended as stuck (``node down: Not
properly terminated``), though nothing had hung.

The scheduler has the ``config`` attribute every pytest-xdist scheduler has: plugins reach
the run's configuration through it (pytest-rerunfailures, installed with colcon-core, reads
``sched.config.failures_db`` when a worker crashes; without it the crash became an
INTERNALERROR instead of a report naming the test).
"""

import collections
import faulthandler
import os
import pathlib
import sys
import threading
import time

import pytest

BACKGROUND_FILES = (
    'test/system/test_build_and_setup.py',       # the colcon build and ./run's set-up
    'test/tools/test_lint.py',
    'test/tools/test_flow_policy.py',
    'test/tools/test_lerobot_runtime.py',
    'test/tools/test_lerobot_newer_folders.py',
    'test/tools/test_analysis.py',
    'test/tools/test_evaluation_trace.py',
    'test/tools/test_evaluation_simtime.py',
    'test/tools/test_evaluation_learned.py',
    'test/tools/test_layout.py',
    'test/tools/test_docs.py',                   # the Sphinx build of docs/
    'test/pure/test_executor_properties.py',
    'test/pure/test_flow_head.py',
    'test/pure/test_policy_runtimes.py',
    'test/tools/test_dataset.py',
    'test/tools/test_gpu_path.py',
    'test/pure/test_policy_devices.py',
)
"""Test files the background worker may run: CPU-bound, waiting on no clock."""

PENDING_PER_WORKER = 2
"""Below this many tests held, a worker gets the next file (the test it runs and the next one)."""


STUCK_TEST_S = 900.0
"""A test (set-up and teardown included) still running after this long at normal priority is
stuck: its worker prints every thread's stack and exits, so pytest-xdist reports that test as
crashed and goes on with a new worker instead of the whole run waiting for the CI time limit.
The longest test, the colcon build, takes about 3 minutes on a loaded 2-core machine."""

GIL_STALL_S = 60.0
"""A worker at normal priority whose watch thread could not run for this long is stuck in a C
call that holds the GIL, which no Python thread can bound: rclpy holds it through the C++ call
Fast DDS 3.2 deadlocks in (docs/tests.md), and a clean-clone run hung for good in a product
call (``Subscription.destroy``), the watch thread waiting for the GIL. So each beat of the watch
re-arms faulthandler's watchdog, a C thread: GIL_STALL_S after the last beat it prints every
thread's stack (``Timeout (0:01:00)!``) and ends the worker. A niced worker, which may wait any
time for the CPU, is not bounded so until it is released. Pure Python gives the GIL up every
5 ms and a module import's C part takes seconds, so only a stuck call lasts a minute."""

RELEASE_VARIABLE = 'RI_TEST_LANE_RELEASE'
"""The release flag's path (set by the controller's conftest, inherited by the workers)."""

WATCH_PERIOD_S = 1.0

CRASHED = pytest.StashKey[set]()
"""The tests whose worker died in this run (the controller's; handle_crash)."""

STACKS_VARIABLE = 'RI_TEST_WORKER_STACKS'
"""A folder (set by the controller's conftest) where each worker's watch writes what it prints
on ending its worker, as ``<worker>.txt``: pytest captures a test's file descriptor 2, so a
worker that dies inside a test takes what it wrote there with it."""


def file_of(nodeid: str) -> str:
    """Return the file of the test `nodeid`."""
    return nodeid.split('::', 1)[0]


def is_background(nodeid: str) -> bool:
    """Return True if the test `nodeid` belongs to the background lane."""
    return file_of(nodeid) in BACKGROUND_FILES


def is_background_worker(node) -> bool:
    """Return True if pytest-xdist started `node` at a lowered priority (``nice=`` in --tx)."""
    return bool(node.gateway.spec.nice)


def handle_crash(crashitem: str, report, sched) -> None:
    """Name what a dead worker printed, and queue its test once more unless ``--reruns`` does.

    The pytest_handlecrashitem hook of test/conftest.py. A worker dies when the test process
    itself does (the GIL_STALL_S bound ending Fast DDS's deadlock, the stuck watch, a
    segfault), never because a test failed: a node that crashes is a failed test. The stacks
    its watch wrote (STACKS_VARIABLE) go into the crash report, which pytest-xdist makes;
    its test runs once more, shown as ``R`` with those stacks printed, and a second crash
    fails it. A failed test is never run again. ``--reruns N`` (``./run test --under-load``)
    leaves crashes to pytest-rerunfailures, and suite_report.py counts every rerun as red.
    """
    folder = os.environ.get(STACKS_VARIABLE)
    stacks = pathlib.Path(folder, f'{report.node.gateway.id}.txt') if folder else None
    said = stacks.read_text(errors='replace').strip() if stacks and stacks.is_file() else ''
    if said:
        report.longrepr = f'{report.longrepr}\n{said}'
    terminal = sched.config.pluginmanager.get_plugin('terminalreporter')
    say = terminal.write_line if terminal is not None else print
    say(f'\nlanes: {report.longrepr}')
    if sched.config.getoption('reruns', 0):
        return
    crashed = sched.config.stash.setdefault(CRASHED, set())
    if crashitem in crashed:
        return
    crashed.add(crashitem)
    try:
        sched.mark_test_pending(crashitem)
    except NotImplementedError:   # a scheduler that cannot run a test again
        return
    report.outcome = 'rerun'
    say(f'lanes: running {crashitem} once more')


def make_scheduler(config, log):
    """Return a LaneScheduling when a worker is started niced (as ./run test does), else None.

    The pytest_xdist_make_scheduler hook of test/conftest.py.
    """
    from execnet import XSpec
    from xdist.workermanage import parse_tx_spec_config
    specs = parse_tx_spec_config(config)
    if any(XSpec(spec).nice for spec in specs):
        return LaneScheduling(config, specs, log)
    return None


class LaneScheduling:
    """A pytest-xdist scheduler with a timed lane and a background lane (see the module)."""

    def __init__(self, config, tx_specs, log=None):
        """Expect one worker per spec of `tx_specs` (the parsed --tx list) in run `config`."""
        from execnet import XSpec
        self.config = config
        self.released = False
        self.timed_workers = sum(not XSpec(spec).nice for spec in tx_specs)
        self.node2collection = {}
        self.node2pending = {}
        self.collection = None
        self.queues = {True: collections.deque(), False: collections.deque()}
        self.log = log.lanesched if log is not None else (lambda *args: None)

    @property
    def nodes(self):
        """Return the workers taking part."""
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        """Return True once every timed worker has collected (the background one may follow)."""
        timed = sum(not is_background_worker(node) for node in self.node2collection)
        return timed >= self.timed_workers and bool(self.node2collection)

    @property
    def tests_finished(self) -> bool:
        """Return True when no test is queued and each worker holds at most its last one."""
        if not self.collection_is_completed or any(self.queues.values()):
            return False
        return all(len(pending) < 2 for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        """Return True while a test is queued or held by a worker."""
        return any(self.queues.values()) or any(self.node2pending.values())

    def add_node(self, node) -> None:
        """Take part a worker that has started."""
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node, collection) -> None:
        """Record a worker's collection; it must be the same as the others'.

        A worker that never took part is ignored: pytest-xdist shuts a replacement worker down
        instead of adding it when it comes up while the run is shutting down, and a second
        crash then clears that state before the replacement's collection arrives (seen with
        ``--reruns``, a worker crashing twice; an assertion here was an INTERNALERROR).
        """
        if node not in self.node2pending:
            return
        reference = self.collection or next(iter(self.node2collection.values()), None)
        if reference is not None and list(collection) != list(reference):
            from xdist.report import report_collection_diff
            other = next(iter(self.node2collection))
            raise RuntimeError(report_collection_diff(
                reference, collection, other.gateway.id, node.gateway.id))
        self.node2collection[node] = list(collection)

    def schedule(self) -> None:
        """Queue the collection by lane, file by file (first call), then fill every worker."""
        if self.collection is None:
            self.collection = next(iter(self.node2collection.values()))
            files = {}
            for index, nodeid in enumerate(self.collection):
                files.setdefault(file_of(nodeid), []).append(index)
            for name, indices in files.items():
                self.queues[is_background(name)].append(indices)
        for node in self.nodes:
            self.check_schedule(node)

    def check_schedule(self, node, duration: float = 0) -> None:
        """Give `node` files until it holds PENDING_PER_WORKER tests, or shut it down."""
        if node.shutting_down or node not in self.node2collection or self.collection is None:
            return
        lanes = (False, True) if not is_background_worker(node) else (True,)
        pending = self.node2pending[node]
        sent = []
        for lane in lanes:
            while len(pending) + len(sent) < PENDING_PER_WORKER and self.queues[lane]:
                sent.extend(self.queues[lane].popleft())
        if sent:
            pending.extend(sent)
            node.send_runtest_some(sent)
        elif not any(self.queues[lane] for lane in lanes):
            node.shutdown()
        if not self.queues[False]:
            self.release()
        self.log('queued files: timed', len(self.queues[False]),
                 'background', len(self.queues[True]))

    def release(self) -> None:
        """Let the background worker run at normal priority: the timed lane's queue is empty."""
        if self.released:
            return
        self.released = True
        path = os.environ.get(RELEASE_VARIABLE)
        if path:
            with open(path, 'w') as flag:
                flag.write('the timed lane is empty\n')
        self.log('timed lane empty: background worker released')

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        """Note that `node` has run a test, and give it the next."""
        self.node2pending[node].remove(item_index)
        self.check_schedule(node, duration)

    def mark_test_pending(self, item: str) -> None:
        """Queue a test again, first in its lane (pytest_handlecrashitem may ask for it)."""
        self.queues[is_background(item)].appendleft([self.collection.index(item)])
        for node in self.nodes:
            self.check_schedule(node)

    def remove_pending_tests_from_node(self, node, indices) -> None:
        """Not used: only the work-stealing scheduler asks workers to give tests back."""
        raise NotImplementedError

    def remove_node(self, node):
        """Take a worker out; requeue what it held and return the test it crashed in, if any."""
        pending = self.node2pending.pop(node)
        if not pending:
            return None
        crashed = self.collection[pending.pop(0)]
        if pending:   # the rest of its files, as one group first in the lane of each
            for lane in (False, True):
                rest = [i for i in pending if is_background(self.collection[i]) == lane]
                if rest:
                    self.queues[lane].appendleft(rest)
        for other in self.nodes:
            self.check_schedule(other)
        return crashed


def descendants(pid: int) -> list:
    """Return the pids of every living process below `pid` (from /proc)."""
    children = collections.defaultdict(list)
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as stat:
                ppid = int(stat.read().rsplit(')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue   # gone meanwhile
        children[ppid].append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def renice_tree(pid: int, nice: int = 0) -> str:
    """Set `pid` and its descendants to `nice`; return '' or why one could not be set."""
    problem = ''
    for target in [pid, *descendants(pid)]:
        try:
            os.setpriority(os.PRIO_PROCESS, target, nice)
        except ProcessLookupError:
            continue
        except PermissionError as error:
            problem = problem or f'could not renice process {target}: {error}'
    return problem


def stacks_file():
    """Return this worker's file in the folder of STACKS_VARIABLE (standard error without)."""
    folder, worker = os.environ.get(STACKS_VARIABLE), os.environ.get('PYTEST_XDIST_WORKER')
    if not folder or not worker:
        return sys.__stderr__
    return open(os.path.join(folder, f'{worker}.txt'), 'w', buffering=1)


class StuckWatch:
    """End a worker whose test ran STUCK_TEST_S at normal priority (see the module docstring).

    One thread per worker; :meth:`begin` and :meth:`end` bracket each test. While the worker
    runs niced, the stuck clock stands still and the release flag is polled; once it is there,
    the worker and its processes are reniced to normal priority (where this user may: root
    may, others keep their nice value) and the clock runs.
    """

    def __init__(self, bound_s: float = STUCK_TEST_S, release_path: str = '',
                 clock=time.monotonic, period_s: float = WATCH_PERIOD_S,
                 gil_stall_s: float = GIL_STALL_S, out=None):
        """Watch with `bound_s`; `release_path` is the flag's path ('' = never released).

        `out`, a file, gets the stacks on an end (by default :meth:`start` opens this worker's
        file in the folder of STACKS_VARIABLE, else takes standard error).
        """
        self.bound_s, self.release_path, self.clock = bound_s, release_path, clock
        self.period_s, self.gil_stall_s = period_s, gil_stall_s
        self.out = out
        self.test = None
        self.counted = 0.0
        self.last = None
        self.released = False
        self.notes = []
        self.lock = threading.Lock()

    @staticmethod
    def niced() -> bool:
        """Return True while this process runs below normal priority."""
        return os.getpriority(os.PRIO_PROCESS, 0) > 0

    def begin(self, nodeid: str) -> None:
        """Start the stuck clock of test `nodeid`."""
        with self.lock:
            self.test, self.counted, self.last = nodeid, 0.0, self.clock()

    def end(self) -> None:
        """Stop the clock: the test has finished."""
        with self.lock:
            self.test = None

    def check(self) -> bool:
        """Advance the clock (release the worker when flagged); return True if stuck."""
        if not self.released and self.release_path and os.path.exists(self.release_path):
            self.released = True
            if self.niced():
                problem = renice_tree(os.getpid())
                self.notes.append(problem or 'timed lane empty: reniced to normal priority')
        with self.lock:
            if self.test is None:
                return False
            now = self.clock()
            if self.released or not self.niced():   # the clock runs from the release on
                self.counted += now - self.last
            self.last = now
            return self.counted >= self.bound_s

    def beat(self) -> None:
        """Re-arm the GIL-free bound (GIL_STALL_S) at normal priority; disarm it while niced.

        faulthandler has one such timer per process: the ros fixture's bounded teardown
        (node_main.destroy_bounded) arms it too, and the next beat sets it back to this bound.
        """
        if self.niced():
            faulthandler.cancel_dump_traceback_later()
        else:
            faulthandler.dump_traceback_later(self.gil_stall_s, exit=True, file=self.out)

    def run_forever(self) -> None:
        """Check every period; on a stuck test print every stack and end the worker."""
        while True:
            self.beat()
            time.sleep(self.period_s)
            for note in self.notes:
                print(f'\nlanes: {note}', file=sys.__stderr__, flush=True)
            self.notes.clear()
            if self.check():
                print(f'lanes: {self.test} ran {self.bound_s:.0f} s at normal priority: '
                      'stuck; every thread:', file=self.out, flush=True)
                faulthandler.dump_traceback(file=self.out, all_threads=True)
                os._exit(1)

    def start(self) -> None:
        """Run the watch on a daemon thread."""
        self.out = self.out or stacks_file()
        threading.Thread(target=self.run_forever, name='stuck-watch', daemon=True).start()
