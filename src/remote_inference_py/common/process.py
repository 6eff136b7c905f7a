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
Process-level settings every node applies before it creates anything.

glibc returns ~1 MB message buffers (an image, a chunk batch) to the OS after each use and
faults them back in on the next message: 420-650 minor page faults per observation/chunk round
trip. Raising the mmap and trim thresholds keeps them in the heap; round trips were 2-2.6x
faster on every transport on our machines (``bench/bench_transport.py`` measures both). Nodes
call :func:`tune_allocator` first thing in ``main()``, so users get this without setting
``MALLOC_*`` variables themselves.

A process that seems stuck can be asked where it is: after :func:`print_stacks_on_request`,
``kill -USR1 <pid>`` prints every thread's Python stack to its stderr (faulthandler, which
needs no GIL) and the process goes on. The nodes do it in ``run_node``; ``analyze``, the
demo, the evaluation and the closed loop do it first thing in ``main()``, and
:func:`communicate_bounded` asks a child past its bound for them before it kills it.
"""

import ctypes
import ctypes.util
import faulthandler
import os
import signal
import subprocess
import sys

# mallopt parameter numbers from <malloc.h>.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 256 * 1024 * 1024

# Setting this variable to 0 leaves glibc's defaults (for benchmarks that compare both).
DISABLE_VARIABLE = 'REMOTE_INFERENCE_TUNE_MALLOC'

STACKS_SIGNAL = signal.SIGUSR1   # prints every thread's stack; the process goes on
STACKS_WAIT_S = 2.0              # how long a process (even a loaded one) gets to print them [s]


def print_stacks_on_request():
    """Print every thread's stack to stderr on STACKS_SIGNAL, and go on (see the module)."""
    faulthandler.register(STACKS_SIGNAL, file=sys.__stderr__, all_threads=True)


def communicate_bounded(process, timeout_s, kill=None):
    """
    Wait for `process` (a Popen with text pipes); return ``(stdout, stderr, ended)``.

    A process still running after `timeout_s` is asked for its stacks (STACKS_SIGNAL), gets
    STACKS_WAIT_S to print them, and is killed (``kill(process)``, default
    ``process.kill()``); ``ended`` is then False, and what it printed says where it hung.
    """
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
        return stdout, stderr, True
    except subprocess.TimeoutExpired:
        pass
    process.send_signal(STACKS_SIGNAL)
    try:
        stdout, stderr = process.communicate(timeout=STACKS_WAIT_S)
        return stdout, stderr, False   # it ended by itself meanwhile
    except subprocess.TimeoutExpired:
        (kill or type(process).kill)(process)
    stdout, stderr = process.communicate()
    return stdout, stderr, False


def tune_allocator():
    """
    Keep large message buffers in the heap instead of returning them to the OS.

    Returns True when the settings were applied, False when disabled, not on glibc, or when
    the user already chose their own ``MALLOC_MMAP_THRESHOLD_`` (theirs wins).
    """
    if os.environ.get(DISABLE_VARIABLE, '1') == '0':
        return False
    if 'MALLOC_MMAP_THRESHOLD_' in os.environ:
        return False
    name = ctypes.util.find_library('c')
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    ok = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok
    return ok


SHM = '/dev/shm'
FASTDDS_PREFIXES = ('fastrtps_', 'fast_datasharing', 'fastdds_')


def owned_segments(pid: int) -> set:
    """Return the Fast DDS shared-memory segments process `pid` owns.

    A live participant holds an flock on each of its segments' ``<name>_el`` files
    (``/proc/locks``); port files are shared between processes and never counted.
    """
    try:
        with open('/proc/locks') as locks:
            lines = locks.read().splitlines()
        names = os.listdir(SHM)
    except OSError:
        return set()
    inodes = {int(fields[5].rsplit(':', 1)[1]) for fields in map(str.split, lines)
              if len(fields) > 5 and fields[1] == 'FLOCK' and fields[4] == str(pid)}
    owned = set()
    for name in names:
        if name.startswith(FASTDDS_PREFIXES) and 'port' not in name and name.endswith('_el'):
            try:
                if os.stat(os.path.join(SHM, name)).st_ino in inodes:
                    owned.add(name[:-len('_el')])
            except OSError:
                pass
    return owned


def remove_segments(names) -> list:
    """Remove these segments and their lock files from /dev/shm; return the files' names."""
    removed = []
    for name in sorted(names):
        for path in (os.path.join(SHM, name), os.path.join(SHM, name + '_el')):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            removed.append(os.path.basename(path))
    return removed
