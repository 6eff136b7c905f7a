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
Camera frames through shared memory, for a policy server on the robot's own host.

A 640x480 frame sent through rclpy and Fast DDS is copied six or seven times (into the
message, into Fast DDS, into its shared-memory segment, out again, into rclpy, into Python)
and crosses two thread hand-offs: most of the image's share of an observation-to-chunk round
trip (bench/results/transport.md). So the hardware interface writes each frame's serialized
``sensor_msgs/Image`` once into a ring of slots in a file under ``/dev/shm`` and publishes
only a small ``remote_inference/SharedImage`` reference (ring name, slot, sequence, size) on
``<image topic>/shm``; a policy server on the same host copies the bytes out once and decodes
them exactly as if they had come on the image topic. A server on another host cannot open
the ring (:class:`RingUnavailable`) and reads the image topic.

Layout (little endian): a 64-byte header ``magic 'RIFR', version u32, slots u32, pad u32,
slot_bytes u64, latest sequence u64``, then ``slots`` slots of ``SLOT_HEAD_BYTES +
slot_bytes`` bytes, each ``sequence u64, size u64, pad, data``. Sequence numbers start at 1;
frame ``n`` lives in slot ``n % slots``.

The slots are a seqlock, made correct for weakly ordered CPUs (aarch64, e.g. a Jetson) as well
as x86 by explicit atomics and fences, not by the order of the Python statements: on ARM a
core may make its stores visible to another core in a different order than it issued them,
and perform its loads out of order too. The sequence, size and latest words are aligned
8-byte words accessed only through libatomic's ``__atomic_load_8`` / ``__atomic_store_8``
(single-copy atomic: never seen half written), and ``atomic_thread_fence`` is a full barrier
(``dmb ish`` on ARM, ``mfence`` on x86). Writer of frame ``n``::

    slot.sequence = 0; slot.size = size     # relaxed: "being written"
    fence                                   # the 0 is visible before any byte of new data
    copy the data                           # plain stores
    slot.sequence = n  (release)            # every data byte is visible before the n
    latest = n         (release)

Reader of frame ``n``::

    latest (acquire); refuse n if latest - n >= slots // 2 (the writer is close)
    slot.sequence (acquire) must be n, slot.size the size   # frame n's data is visible now
    copy the data                           # plain loads: may race with a later writer
    fence                                   # every load of the copy happens before ...
    slot.sequence, latest (relaxed): still n and not close, or FrameGone

Why no torn frame passes: the acquire load that read ``n`` pairs with the writer's release
store of ``n``, so the copy sees frame ``n``'s bytes or newer ones, never older. If any
copied byte came from a later frame ``m`` in this slot, the writer stored ``sequence = 0``
for ``m`` before its fence and that byte after it; the reader saw that byte before its own
fence, so its second sequence load sees ``0`` or ``m`` (fence-to-fence ordering), never
``n``: the frame is refused (:class:`FrameGone`). Sequence numbers only grow, so ``n`` cannot
come back. The reference is published after the write, but correctness does not rest on
DDS ordering. A machine without libatomic (``libatomic1``) shares frames only on x86, whose
stores and loads are already ordered (TSO) and whose aligned 8-byte numpy accesses are
atomic; elsewhere the ring is refused with a named error and frames go on the Image topic.
``test/tools/test_frame_ring.py`` hammers a ring from a writer and a reader process with frames
whose every word is their sequence number and checks that no torn frame is ever handed on.

Files are mode 0600 (one user), created with
``posix_fallocate`` (a full ``/dev/shm`` is an error here, not a SIGBUS later), removed by
:meth:`RingWriter.close`, and rings left by dead writers are removed when the next one starts
(a writer holds an ``flock`` on its file while it lives, which also works across PID
namespaces, e.g. containers sharing ``/dev/shm``).
"""

import ctypes
import fcntl
import functools
import mmap
import os
import platform
import re
import secrets
import struct
from typing import Optional

import numpy as np

MAGIC = b'RIFR'
VERSION = 1
HEADER = struct.Struct('<4sIIIQQ')       # magic, version, slots, pad, slot_bytes, latest
HEADER_BYTES = 64
SLOT_HEAD_BYTES = 64                      # sequence u64, size u64; data cache-line aligned
LATEST_WORD = 3                           # the header's latest sequence, as a u64 index
DEFAULT_SLOTS = 8
PREFIX = 'remote_inference_frames_'
NAME = re.compile(PREFIX + r'(\d+)_[A-Za-z0-9_]{1,64}_[0-9a-f]{8}')
SHM_DIR = '/dev/shm'
MAX_SLOT_BYTES = 1 << 30


class RingError(ValueError):
    """A ring or a reference to it is not usable; the message names which and why."""


class RingUnavailable(RingError):
    """The ring cannot be opened here (another host, another user, or gone)."""


class FrameGone(RingError):
    """The referenced frame was overwritten before it could be read (the reader was late)."""


RELAXED, ACQUIRE, RELEASE, SEQ_CST = 0, 2, 3, 5      # C11 memory orders (GCC's numbering)
TSO_MACHINES = ('x86_64', 'amd64', 'i386', 'i686')
LIBATOMIC = 'libatomic.so.1'


class _LibAtomic:
    """Atomic loads and stores of 8-byte words and full fences, from libatomic."""

    def __init__(self, library):
        # PyDLL: the calls keep the GIL (releasing it would invite a thread switch).
        self.load = getattr(library, '__atomic_load_8')     # getattr: no name mangling
        self.store = getattr(library, '__atomic_store_8')
        self.fence = library.atomic_thread_fence
        self.load.argtypes, self.load.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_uint64
        self.store.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int]
        self.store.restype = None
        self.fence.argtypes, self.fence.restype = [ctypes.c_int], None

    def words(self, words: np.ndarray) -> '_AtomicWords':
        """Return atomic access to ``words`` (which must outlive it)."""
        return _AtomicWords(self, words.ctypes.data)


class _AtomicWords:
    """Word ``i`` of a mapping, loaded and stored atomically with a C11 memory order."""

    def __init__(self, lib: _LibAtomic, base: int):
        self._lib, self._base = lib, base

    def load(self, index: int, order: int) -> int:
        """Load word ``index``."""
        return self._lib.load(self._base + 8 * index, order)

    def store(self, index: int, value: int, order: int) -> None:
        """Store ``value`` into word ``index``."""
        self._lib.store(self._base + 8 * index, value, order)

    def fence(self) -> None:
        """Order every memory access before it before every access after it."""
        self._lib.fence(SEQ_CST)


class _TotalStoreOrder:
    """x86 without libatomic: aligned numpy words are atomic and already ordered (TSO)."""

    def words(self, words: np.ndarray) -> '_NumpyWords':
        """Return access to ``words`` (which must outlive it)."""
        return _NumpyWords(words)


class _NumpyWords:
    """Word ``i`` of a mapping through numpy: one aligned 8-byte load or store each."""

    def __init__(self, words: np.ndarray):
        self._words = words

    def load(self, index: int, order: int) -> int:
        """Load word ``index``."""
        return int(self._words[index])

    def store(self, index: int, value: int, order: int) -> None:
        """Store ``value`` into word ``index``."""
        self._words[index] = value

    def fence(self) -> None:
        """Nothing to do on x86: a call into numpy already keeps the compiler's order."""


@functools.lru_cache(maxsize=None)
def atomics(machine: Optional[str] = None, library: str = LIBATOMIC):
    """
    Return the atomic operations the ring uses on this machine (see the module docstring).

    Raises RingError naming libatomic where neither it nor a TSO CPU is available.
    """
    try:
        return _LibAtomic(ctypes.PyDLL(library))
    except (OSError, AttributeError) as error:
        machine = (machine or platform.machine()).lower()
        if machine in TSO_MACHINES:
            return _TotalStoreOrder()
        raise RingError(f'frames are shared through memory only with memory fences, and '
                        f'{library} cannot be loaded on this {machine} machine ({error}); '
                        'install libatomic1') from None


def ring_size(slots: int, slot_bytes: int) -> int:
    """Bytes of a ring file."""
    return HEADER_BYTES + slots * (SLOT_HEAD_BYTES + slot_bytes)


def _words(mapping) -> np.ndarray:
    """View the mapping as aligned little-endian u64 words (numpy loads/stores them whole)."""
    return np.frombuffer(mapping, dtype='<u8', count=len(mapping) // 8)


def lock_held(path: str) -> Optional[bool]:
    """
    Whether a live process holds an ``flock`` on ``path`` (None: it cannot be opened).

    A lock dies with its process, in any PID namespace (e.g. containers sharing /dev/shm).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)        # also releases our lock, if we got it
    return False


def stale_rings(directory: str = SHM_DIR) -> list:
    """Names of rings whose writer process is gone (killed before it could remove them)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(name for name in names if NAME.fullmatch(name)
                  and lock_held(os.path.join(directory, name)) is False)


def remove_stale(directory: str = SHM_DIR) -> list:
    """Remove rings whose writer process is gone; return their names."""
    removed = []
    for name in stale_rings(directory):
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(name)
        except OSError:
            pass
    return removed


class RingWriter:
    """One writer's ring of frame slots (single writing thread)."""

    def __init__(self, label: str, slot_bytes: int, slots: int = DEFAULT_SLOTS,
                 directory: str = SHM_DIR):
        if not 2 <= slots <= 64:
            raise RingError(f'a frame ring needs 2-64 slots, got {slots}')
        if not 0 < slot_bytes <= MAX_SLOT_BYTES:
            raise RingError(f'frame ring slot size {slot_bytes} is outside 1..{MAX_SLOT_BYTES}')
        slot_bytes = -(-slot_bytes // 64) * 64
        operations = atomics()
        remove_stale(directory)
        label = re.sub(r'[^A-Za-z0-9_]', '_', label)[:64] or 'frames'
        self.name = f'{PREFIX}{os.getpid()}_{label}_{secrets.token_hex(4)}'
        self.path = os.path.join(directory, self.name)
        self.slots, self.slot_bytes = slots, slot_bytes
        size = ring_size(slots, slot_bytes)
        fd = None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)   # held while the writer lives: see stale_rings
            os.posix_fallocate(fd, 0, size)
            self._map = mmap.mmap(fd, size)
        except OSError as error:
            if fd is not None:
                os.close(fd)
                os.unlink(self.path)
            raise RingError(f'cannot create a {size} byte frame ring in {directory}: '
                            f'{error.strerror or error}') from None
        self._fd = fd
        HEADER.pack_into(self._map, 0, MAGIC, VERSION, slots, 0, slot_bytes, 0)
        self._words = _words(self._map)
        self._atomic = operations.words(self._words)
        self._atomic.fence()
        self.latest = 0

    def _slot(self, index: int) -> int:
        return HEADER_BYTES + index * (SLOT_HEAD_BYTES + self.slot_bytes)

    def write(self, *parts) -> tuple:
        """Write the concatenated byte-like ``parts`` as the next frame; return (slot, seq)."""
        size = sum(memoryview(part).nbytes for part in parts)
        if size > self.slot_bytes:
            raise RingError(f'frame of {size} bytes does not fit ring {self.name} '
                            f'({self.slot_bytes} byte slots)')
        sequence = self.latest + 1
        slot = sequence % self.slots
        start = self._slot(slot)
        word, atomic = start // 8, self._atomic
        atomic.store(word, 0, RELAXED)          # "being written" (see the module docstring)
        atomic.store(word + 1, size, RELAXED)
        atomic.fence()
        offset = start + SLOT_HEAD_BYTES
        for part in parts:
            view = memoryview(part).cast('B')
            self._map[offset:offset + view.nbytes] = view
            offset += view.nbytes
        atomic.store(word, sequence, RELEASE)
        atomic.store(LATEST_WORD, sequence, RELEASE)
        self.latest = sequence
        return slot, sequence

    def close(self) -> None:
        """Remove the ring (readers that mapped it keep their mapping until they close)."""
        if self._map is None:
            return
        self._atomic = None
        del self._words
        self._map.close()
        self._map = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)   # releases the lock


class RingReader:
    """Read frames from a ring another process writes."""

    def __init__(self, name: str, directory: str = SHM_DIR):
        if not NAME.fullmatch(name or ''):
            raise RingError(f'{name!r} is not a frame ring name ({PREFIX}<pid>_<label>_<id>)')
        self.name = name
        operations = atomics()
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
        except (FileNotFoundError, PermissionError) as error:
            raise RingUnavailable(f'frame ring {name}: {error.strerror} (the publisher is on '
                                  'another host, runs as another user, or has stopped)') from None
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_BYTES:
                raise RingError(f'frame ring {name}: {size} bytes, shorter than its header')
            self._map = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        magic, version, slots, _, slot_bytes, _ = HEADER.unpack_from(self._map, 0)
        if magic != MAGIC or version != VERSION:
            self.close()
            raise RingError(f'frame ring {name}: not a version {VERSION} ring '
                            f'(magic {magic!r}, version {version})')
        if not 2 <= slots <= 64 or not 0 < slot_bytes <= MAX_SLOT_BYTES or \
                ring_size(slots, slot_bytes) != size:
            self.close()
            raise RingError(f'frame ring {name}: header says {slots} slots of {slot_bytes} '
                            f'bytes, which does not match its {size} bytes')
        self.slots, self.slot_bytes = slots, slot_bytes
        self._words = _words(self._map)
        self._atomic = operations.words(self._words)

    def latest(self) -> int:
        """Return the newest sequence number the writer has completed."""
        return self._atomic.load(LATEST_WORD, ACQUIRE)

    def _gone(self, sequence: int, latest: int) -> bool:
        return latest - sequence >= self.slots // 2

    def read(self, slot: int, sequence: int, size: int) -> bytes:
        """Return a copy of frame ``sequence``; RingError/FrameGone say why not."""
        if sequence < 1 or slot != sequence % self.slots:
            raise RingError(f'frame ring {self.name}: sequence {sequence} cannot be in '
                            f'slot {slot} of {self.slots}')
        if not 0 < size <= self.slot_bytes:
            raise RingError(f'frame ring {self.name}: size {size} is outside '
                            f'1..{self.slot_bytes}')
        latest = self._atomic.load(LATEST_WORD, ACQUIRE)
        if latest < sequence:
            raise RingError(f'frame ring {self.name}: sequence {sequence} is ahead of the '
                            f"writer's latest {latest}")
        if self._gone(sequence, latest):
            raise FrameGone(f'frame {sequence} of ring {self.name} was already being '
                            f'overwritten (latest is {latest})')
        start = HEADER_BYTES + slot * (SLOT_HEAD_BYTES + self.slot_bytes)
        word = start // 8
        held = self._atomic.load(word, ACQUIRE)   # frame `held`'s data is visible after this
        held_size = self._atomic.load(word + 1, RELAXED)
        if held != sequence or held_size != size:
            raise FrameGone(f'slot {slot} of ring {self.name} holds frame {held} of '
                            f'{held_size} bytes, not frame {sequence} of {size}')
        data = self._map[start + SLOT_HEAD_BYTES:start + SLOT_HEAD_BYTES + size]
        self._atomic.fence()                     # the copy's loads happen before these
        held = self._atomic.load(word, RELAXED)
        latest = self._atomic.load(LATEST_WORD, RELAXED)
        if held != sequence or self._gone(sequence, latest):
            raise FrameGone(f'frame {sequence} of ring {self.name} was overwritten while '
                            'it was read')
        return data

    def close(self) -> None:
        """Unmap the ring."""
        if self._map is not None:
            self._atomic = self._words = None
            self._map.close()
            self._map = None
