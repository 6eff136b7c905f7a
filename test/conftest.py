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
Shared fixtures. The ROS environment is fixed here, before anything imports rclpy.

Every test run gets its own ROS_DOMAIN_ID (never the user's: a test must not talk to a real
robot), discovery limited to this host, and the shared-memory Fast DDS profile from config/.
"""

import atexit
import os
import pathlib
import re
import shutil
import sys
import tempfile
import warnings

import pytest

TEST_DIR = pathlib.Path(__file__).resolve().parent
ROOT = TEST_DIR.parent
# Helper modules (core_fixtures, model_fixtures, node_fixtures, ros_fixtures, ...) live in test/
# itself and the scripted peers in test/peers; a test module imports helpers only from there,
# never from another test module.
sys.path[:0] = [str(TEST_DIR), str(TEST_DIR / 'peers')]
import lanes  # noqa: E402,I100

# Under pytest-xdist (./run test runs the whole suite on 3 workers), the controller picks a
# block of DOMAIN_BLOCK domains for the run: each worker takes its own (gw0 the first, gw1 the
# next, up to 4 workers), and the rest are spare for a benchmark that runs one cell per domain
# (bench_transport's smoke run: 8 cells from RI_TEST_SPARE_DOMAIN). Before, that benchmark
# counted its cells up from its worker's domain, into the next worker's: a real policy
# server of its cells subscribed to the other worker's policy/request in a clean-clone run.
WORKER = os.environ.get('PYTEST_XDIST_WORKER')   # 'gw0', 'gw1', ... in a worker, else None
WORKER_DOMAINS, SPARE_DOMAINS = 4, 8
DOMAIN_BLOCK = WORKER_DOMAINS + SPARE_DOMAINS
if 'RI_TEST_DOMAIN_BASE' not in os.environ:
    blocks = 228 // DOMAIN_BLOCK   # the highest domain a block reaches stays below 233
    os.environ['RI_TEST_DOMAIN_BASE'] = str(1 + DOMAIN_BLOCK * (os.getpid() % blocks))
_BASE = int(os.environ['RI_TEST_DOMAIN_BASE'])
os.environ['RI_TEST_SPARE_DOMAIN'] = str(_BASE + WORKER_DOMAINS)
os.environ['ROS_DOMAIN_ID'] = os.environ.get(
    'RI_TEST_DOMAIN_ID', str(_BASE + (int(WORKER[2:]) % WORKER_DOMAINS if WORKER else 0)))
# The shared-memory leak check compares /dev/shm before and after a test. It is exact in a
# serial run and in a worker with a /dev/shm of its own (test/xdist_worker); in a worker that
# shares /dev/shm with another, the other worker's killed processes would count, so it is off.
LEAK_CHECK = WORKER is None or os.environ.get('RI_PRIVATE_SHM') == '1'
# The controller's flag for releasing the background worker, and the folder where a worker's
# watch writes the stacks of its end (test/lanes.py), one per run.
if WORKER is None:
    _LANE_DIR = tempfile.mkdtemp(prefix='ri-lanes-')
    atexit.register(shutil.rmtree, _LANE_DIR, True)
    os.environ[lanes.RELEASE_VARIABLE] = os.path.join(_LANE_DIR, 'timed_lane_empty')
    os.environ[lanes.STACKS_VARIABLE] = _LANE_DIR
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(ROOT / 'config' / 'fastdds_shm.xml')
os.environ.pop('ROS_STATIC_PEERS', None)
os.environ['PYTHONUNBUFFERED'] = '1'
os.environ['RCUTILS_LOGGING_BUFFERED_STREAM'] = '0'

from ros_fixtures import (  # noqa: E402
    ask_stacks, dead_segments, NodeProcess, owned_segments, remove_segments, Spinner,
    teardown_deadlocked)

# Test levels: every test file sits in the folder of its level, and the folder is the level's
# pytest marker, so `./run test -m pure` runs the fast level alone (seconds) and
# `-m "not system"` skips the whole-system runs. Helper modules (fixtures, checkpoint builders,
# scripted peers) stay in test/ itself, beside this file.
LEVELS = {
    'pure': 'the cores and codecs: no ROS graph, no subprocess, at most a tiny torch model',
    'tools': 'no ROS graph, but heavier: models (torch, LeRobot, MuJoCo episodes), rendering, '
             'cameras through OpenCV, the servo bus emulator, the ring stress test, linters',
    'ros': 'nodes over DDS on this host, one room at a time; every benchmark in smoke mode',
    'system': 'all nodes together, the real ros2 tools, the demo, two hosts, the build',
}


# Files whose result does not depend on the venv they run in: they read the repository's
# text or run pytest itself, with the same pinned tools in both of CI's venvs. Marked
# ``any_venv``; CI's numpy 1.26 leg leaves them out (.ci/run), as they ran in the main leg.
ANY_VENV_FILES = ('test/tools/test_lint.py', 'test/tools/test_docs.py',
                  'test/tools/test_layout.py', 'test/tools/test_lanes_run.py')


def pytest_configure(config):
    """Register the level markers, the background lane's and ``any_venv``."""
    for level, what in LEVELS.items():
        config.addinivalue_line('markers', f'{level}: test level ({what})')
    config.addinivalue_line('markers', 'background: may run on the low-priority worker '
                            '(test/lanes.py: CPU-bound, waits on no clock)')
    config.addinivalue_line('markers', 'any_venv: the same result in any venv (ANY_VENV_FILES '
                            "in test/conftest.py); CI's numpy 1.26 leg leaves it out")
    missing = [name for name in ANY_VENV_FILES if not (ROOT / name).is_file()]
    if missing:   # a renamed file would silently run in both legs again
        raise pytest.UsageError(f'ANY_VENV_FILES in test/conftest.py names no file: {missing}')


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Schedule by lane (test/lanes.py) when a worker is started niced, as ./run test does."""
    return lanes.make_scheduler(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """Name what a dead worker printed; run its test once more (test/lanes.py)."""
    lanes.handle_crash(crashitem, report, sched)


def pytest_collection_modifyitems(config, items):
    """Mark every test with its folder's level; a test outside the level folders is an error."""
    for item in items:
        folder = item.path.parent
        if folder.parent != TEST_DIR or folder.name not in LEVELS:
            raise pytest.UsageError(f'{item.path.relative_to(ROOT)} is not in a test level '
                                    f'folder: move it to test/<level>/ ({", ".join(LEVELS)})')
        item.add_marker(getattr(pytest.mark, folder.name))
        if lanes.is_background(item.nodeid):
            item.add_marker(pytest.mark.background)
        if lanes.file_of(item.nodeid) in ANY_VENV_FILES:
            item.add_marker(pytest.mark.any_venv)
    # The heaviest levels first, the colcon build (the longest test) at their head: the two
    # workers then end on short tests, instead of one waiting while the other builds.
    heavy_first = ['system', 'ros', 'tools', 'pure']
    items.sort(key=lambda item: (heavy_first.index(item.path.parent.name),
                                 item.path.name != 'test_build_and_setup.py'))


# The test process announces itself every 0.5 s, the nodes every 1 s (config/fastdds_shm.xml):
# a node started after the test process finds it within about half a second (its first
# messages arrive 0.05-0.4 s after it starts), where a node would wait up to 1 s. It was
# 0.1 s: Fast DDS 3.2 can deadlock the event thread that runs these announcements against
# discovery, and a worker then hung in the next call that deleted an endpoint
# (docs/tests.md); five times fewer announcements give that race five times fewer chances.
OBSERVER_ANNOUNCEMENT = '<sec>0</sec><nanosec>500000000</nanosec>'


def observer_profile(shipped: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """Write the shipped profile with the test process's announcement period into folder."""
    text, count = re.subn(r'(<leaseAnnouncement>)(.*?)(</leaseAnnouncement>)',
                          rf'\g<1>{OBSERVER_ANNOUNCEMENT}\g<3>', shipped.read_text(), flags=re.S)
    assert count == 1, f'{shipped} has no single leaseAnnouncement to shorten'
    path = folder / 'fastdds_observer.xml'
    path.write_text(text)
    return path


@pytest.fixture(scope='session')
def ros_context(tmp_path_factory):
    """Initialise rclpy once for the test process; shut down at the end of the session."""
    import rclpy
    from rclpy.node import Node
    # Fast DDS reads the profile when the process makes its first participant; node
    # processes keep the shipped profile.
    shipped = os.environ['FASTDDS_DEFAULT_PROFILES_FILE']
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = str(
        observer_profile(pathlib.Path(shipped), tmp_path_factory.mktemp('dds')))
    try:
        context = rclpy.Context()
        rclpy.init(context=context)
        Node('observer_profile_probe', context=context).destroy_node()
    finally:
        os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = shipped
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture
def ros(ros_context, request):
    """Provide a node in the test process and a spinner for it."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    name = 'test_' + ''.join(c if c.isalnum() else '_' for c in request.node.name)[:40]
    node = Node(name, context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    yield node, Spinner(executor)
    # Bounded like the nodes' (node_main.destroy_bounded): Fast DDS 3.2 can deadlock tearing
    # endpoints down (docs/tests.md); a worker stuck there names it, prints every stack and
    # exits after TEARDOWN_BOUND_S (GIL_FREE_EXTRA_S later if the stuck call holds the GIL),
    # so pytest-xdist reports this test as crashed instead of the worker hanging.
    from remote_inference_py.common.node_main import destroy_bounded
    executor.remove_node(node)
    executor.shutdown()
    destroy_bounded(node)


# On a pytest-xdist worker, a test that runs lanes.STUCK_TEST_S at normal priority is stuck: its
# worker prints every stack and exits, and the run goes on with a new worker (test/lanes.py).
STUCK_WATCH = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """
    Bound each test on a pytest-xdist worker (lanes.StuckWatch); log its cost on request.

    With RI_TEST_COST_LOG=FILE, append each test's wall time and CPU time to FILE. CPU counts
    the test process and every process it started and reaped (node processes, benchmarks),
    set-up and teardown included: the suite's budget is 2 cores, so CPU is what two workers
    share, and a test's wall time on a loaded machine says little. tools/suite_report.py
    reads the file (``./run test --under-load`` prints it).
    """
    import resource
    import time

    def cpu():
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    global STUCK_WATCH
    if WORKER and STUCK_WATCH is None:
        STUCK_WATCH = lanes.StuckWatch(release_path=os.environ.get(lanes.RELEASE_VARIABLE, ''))
        STUCK_WATCH.start()
    if STUCK_WATCH is not None:
        STUCK_WATCH.begin(item.nodeid)
    began, spent = time.monotonic(), cpu()
    try:
        yield
    finally:
        if STUCK_WATCH is not None:
            STUCK_WATCH.end()
    path = os.environ.get('RI_TEST_COST_LOG')
    if path:
        with open(path, 'a') as log:
            log.write(f'{time.monotonic() - began:.2f}\t{cpu() - spent:.2f}\t{item.nodeid}\n')


def pytest_runtest_logreport(report):
    """With RI_TEST_COST_LOG, note each failure and rerun there too (tools/suite_report.py)."""
    path = os.environ.get('RI_TEST_COST_LOG')
    if path and WORKER is None and report.outcome in ('failed', 'rerun'):
        crash = getattr(report.longrepr, 'reprcrash', None)
        why = ' '.join(str(crash.message if crash else report.longrepr).split())
        if len(why) > 1500:   # a message ends with what failed (a step's stderr, say)
            why = f'{why[:300]} [...] {why[-1200:]}'
        with open(path, 'a') as log:   # the controller's view: every worker's, crashes too
            log.write(f'{report.outcome}\t{report.when}\t{report.nodeid}\t{why}\n')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's report on the test item (the processes fixture reads it)."""
    outcome = yield
    setattr(item, f'report_{call.when}', outcome.get_result())


@pytest.fixture
def processes(tmp_path, ros, request):
    """Start node processes; at teardown stop them all with SIGINT and check for leaks."""
    started, peers = [], []
    before = dead_segments()

    class Group:
        log_dir = tmp_path

        def console_script(self, name, **kwargs):
            proc = NodeProcess.console_script(name, tmp_path, **kwargs)
            started.append(proc)
            return proc

        def peer(self, script, **kwargs):
            proc = NodeProcess.peer(script, tmp_path, **kwargs)
            started.append(proc)
            peers.append(proc)
            return proc

    group = Group()
    yield group
    report = getattr(request.node, 'report_call', None)
    if report is not None and report.failed:   # what each process said, for the diagnosis
        ask_stacks(started)   # and where each one still running is
        for proc in started:
            print(f'----- {proc.log_path.name} (last 60 lines) -----')
            print('\n'.join(proc.output().splitlines()[-60:]))
    failures = []
    # All at once, as `ros2 launch` stops its nodes on Ctrl+C: the hardware interface then
    # applies the executor's way home until the commands stop (shutdown_grace_s), instead of
    # waiting out its whole grace for an executor that has not been told to stop yet.
    owned = {proc: owned_segments(proc.pid) for proc in peers}
    for proc in started:
        proc.interrupt()
    for proc in started:
        try:
            proc.stop()
        except AssertionError as error:
            failures.append(str(error))
    # A test peer (a fake of ours) stuck in Fast DDS's teardown deadlock (docs/tests.md)
    # after the bound of peer_main: said, its own segments removed, not a failure of the test.
    # A product node in it still fails the tests that check its exit.
    excused = set()
    for proc in peers:
        if teardown_deadlocked(proc.proc.returncode, proc.output()):
            warnings.warn(f'{proc.log_path.name}: Fast DDS deadlocked destroying the node '
                          f'(ended by the teardown bound)\n{proc.output()[-3000:]}')
            excused |= owned[proc]
    remove_segments(excused)
    # A segment whose owner exited without removing it is a leak (segments of processes
    # that are still alive, e.g. other test runs on this machine, are not).
    leaked = dead_segments() - before - excused
    if leaked and LEAK_CHECK:
        failures.append(f'shared-memory segments left behind by dead processes: '
                        f'{sorted(leaked)}')
    if failures:
        pytest.fail('\n'.join(failures))


@pytest.fixture(params=['fast', 'plain'])
def transport(request, monkeypatch):
    """
    Run a test on both transports (``REMOTE_INFERENCE_TRANSPORT``, see transport/endpoints.py).

    Set before the test starts its node processes, so they and the test's own endpoints use it.
    """
    monkeypatch.setenv('REMOTE_INFERENCE_TRANSPORT', request.param)
    return request.param


@pytest.fixture
def calibration():
    """Load the example SO-101 calibration shipped in config/."""
    from robot_fixtures import EXAMPLE
    from remote_inference_py.robot.calibration import Calibration
    return Calibration.load(EXAMPLE)


@pytest.fixture
def offline(monkeypatch):
    """Nothing reaches for the Hugging Face Hub, in this process or in the nodes."""
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')


@pytest.fixture
def emulator():
    """Run the servo bus emulator with SHAFTS, as its own process on a pseudo-terminal."""
    from emulator import EmulatorProcess
    from node_fixtures import SHAFTS
    with EmulatorProcess(positions=SHAFTS, speed=4000.0) as process:
        yield process
