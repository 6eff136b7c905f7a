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
frame ``n`` lives in slot ``n % slots``. The writer zeroes a slot's sequence, writes the data,
then stores the sequence and the header's latest. Each of these is an aligned 8-byte word
loaded and stored whole through numpy (``struct`` writes byte by byte, after zeroing: a
reader saw 0). A reader refuses a reference the writer is about to reach
(``latest - n >= slots // 2``), copies the data, and checks again afterwards that the slot
still holds ``n``: a frame overwritten while it was copied is never handed on
(:class:`FrameGone`). The reference itself is published after the write, so a reader never
sees a slot before it is complete. Files are mode 0600 (one user), created with
``posix_fallocate`` (a full ``/dev/shm`` is an error here, not a SIGBUS later), removed by
:meth:`RingWriter.close`, and rings left by dead writers are removed when the next one starts
(a writer holds an ``flock`` on its file while it lives, which also works across PID
namespaces, e.g. containers sharing ``/dev/shm``).
"""

import fcntl
import mmap
import os
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
        word = start // 8
        self._words[word] = 0                   # single 8-byte stores: never seen torn
        self._words[word + 1] = size
        offset = start + SLOT_HEAD_BYTES
        for part in parts:
            view = memoryview(part).cast('B')
            self._map[offset:offset + view.nbytes] = view
            offset += view.nbytes
        self._words[word] = sequence
        self._words[LATEST_WORD] = sequence
        self.latest = sequence
        return slot, sequence

    def close(self) -> None:
        """Remove the ring (readers that mapped it keep their mapping until they close)."""
        if self._map is None:
            return
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
        latest = int(self._words[LATEST_WORD])
        if latest < sequence:
            raise RingError(f'frame ring {self.name}: sequence {sequence} is ahead of the '
                            f"writer's latest {latest}")
        if self._gone(sequence, latest):
            raise FrameGone(f'frame {sequence} of ring {self.name} was already being '
                            f'overwritten (latest is {latest})')
        start = HEADER_BYTES + slot * (SLOT_HEAD_BYTES + self.slot_bytes)
        word = start // 8
        held, held_size = int(self._words[word]), int(self._words[word + 1])
        if held != sequence or held_size != size:
            raise FrameGone(f'slot {slot} of ring {self.name} holds frame {held} of '
                            f'{held_size} bytes, not frame {sequence} of {size}')
        data = self._map[start + SLOT_HEAD_BYTES:start + SLOT_HEAD_BYTES + size]
        held, latest = int(self._words[word]), int(self._words[LATEST_WORD])
        if held != sequence or self._gone(sequence, latest):
            raise FrameGone(f'frame {sequence} of ring {self.name} was overwritten while '
                            'it was read')
        return data

    def close(self) -> None:
        """Unmap the ring."""
        if self._map is not None:
            self._words = None
            self._map.close()
            self._map = None
