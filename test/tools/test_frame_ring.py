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

"""The shared-memory frame ring: round trips, late readers, bad references, bad files."""

import errno
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from remote_inference_py.transport import frame_ring
from remote_inference_py.transport.frame_ring import (
    FrameGone, RingError, RingReader, RingUnavailable, RingWriter)
from remote_inference_py.transport.image_cdr import decode_image, encode_image, image_parts


@pytest.fixture
def ring(tmp_path):
    writer = RingWriter('front', 1000, slots=8, directory=str(tmp_path))
    reader = RingReader(writer.name, directory=str(tmp_path))
    yield writer, reader
    reader.close()
    writer.close()


def test_frames_round_trip_through_every_slot_and_past_the_wrap(ring):
    writer, reader = ring
    for n in range(1, 30):
        payload = bytes([n % 256]) * (n * 10)
        slot, sequence = writer.write(payload[:5], payload[5:])
        assert (slot, sequence) == (n % 8, n)
        assert reader.read(slot, sequence, len(payload)) == payload


def test_an_image_written_in_parts_decodes_like_the_published_bytes(tmp_path):
    frame = np.arange(48 * 64 * 3, dtype=np.uint32).astype(np.uint8).reshape(48, 64, 3)
    writer = RingWriter('cam', 48 * 64 * 3 + 200, directory=str(tmp_path))
    head, pixels = image_parts(5, 6, 'cam_camera', frame, 'rgb8')
    slot, sequence = writer.write(head, pixels)
    data = RingReader(writer.name, directory=str(tmp_path)).read(
        slot, sequence, len(head) + len(pixels))
    assert data == encode_image(5, 6, 'cam_camera', frame, 'rgb8')
    image = decode_image(data)
    assert (image.sec, image.nanosec, image.height, image.width) == (5, 6, 48, 64)
    assert bytes(image.data) == frame.tobytes()
    writer.close()


def test_a_late_reader_gets_frame_gone_never_a_newer_frame(ring):
    writer, reader = ring
    slot, first = writer.write(b'a' * 10)
    for _ in range(3):
        writer.write(b'b' * 10)
    assert reader.read(slot, first, 10) == b'a' * 10      # 3 behind: still safe
    writer.write(b'c' * 10)                                 # 4 behind: the writer is close
    with pytest.raises(FrameGone, match='already being overwritten'):
        reader.read(slot, first, 10)
    for _ in range(4):
        writer.write(b'd' * 10)                             # slot reused by frame 9
    with pytest.raises(FrameGone):
        reader.read(slot, first, 10)


@pytest.mark.parametrize('slot, sequence, size, message', [
    (2, 1, 10, 'cannot be in slot 2'),
    (0, 0, 10, 'sequence 0'),
    (1, 1, 0, 'size 0 is outside'),
    (1, 1, 1025, 'size 1025 is outside'),
    (1, 1, 11, 'not frame 1 of 11'),
    (2, 2, 10, 'ahead of the writer'),
])
def test_a_bad_reference_names_the_ring_and_the_field(ring, slot, sequence, size, message):
    writer, reader = ring
    writer.write(b'x' * 10)
    with pytest.raises(RingError, match=message) as error:
        reader.read(slot, sequence, size)
    assert writer.name in str(error.value)


@pytest.mark.parametrize('name', [
    '', '../../etc/passwd', 'fastrtps_port7411', 'remote_inference_frames_12_cam',
    'remote_inference_frames_12_cam/x_0123abcd', 'remote_inference_frames_12_a b_0123abcd'])
def test_only_frame_ring_names_are_opened(tmp_path, name):
    with pytest.raises(RingError, match='is not a frame ring name'):
        RingReader(name, directory=str(tmp_path))


def test_a_ring_that_is_not_here_is_unavailable(tmp_path):
    with pytest.raises(RingUnavailable, match='another host'):
        RingReader('remote_inference_frames_1_front_0123abcd', directory=str(tmp_path))


def _corrupt(tmp_path, content):
    name = 'remote_inference_frames_1_front_0123abcd'
    (tmp_path / name).write_bytes(content)
    return name


@pytest.mark.parametrize('content, message', [
    (b'RIFR', 'shorter than its header'),
    (frame_ring.HEADER.pack(b'JUNK', 1, 8, 0, 64, 0).ljust(5000, b'\0'), "magic b'JUNK'"),
    (frame_ring.HEADER.pack(b'RIFR', 2, 8, 0, 64, 0).ljust(5000, b'\0'), 'version 2'),
    (frame_ring.HEADER.pack(b'RIFR', 1, 8, 0, 64, 0).ljust(5000, b'\0'), 'does not match'),
    (frame_ring.HEADER.pack(b'RIFR', 1, 1, 0, 64, 0).ljust(192, b'\0'), '1 slots'),
])
def test_a_malformed_ring_file_is_refused_with_what_is_wrong(tmp_path, content, message):
    with pytest.raises(RingError, match=message):
        RingReader(_corrupt(tmp_path, content), directory=str(tmp_path))


def test_a_frame_larger_than_a_slot_is_refused(ring):
    writer, _ = ring
    with pytest.raises(RingError, match='does not fit'):
        writer.write(b'x' * 1025)
    assert writer.latest == 0


def test_a_full_shm_is_a_named_error_and_leaves_no_file(tmp_path, monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, 'posix_fallocate', full)
    with pytest.raises(RingError, match='No space left'):
        RingWriter('front', 1 << 20, directory=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_close_removes_the_file_and_rings_of_dead_writers_are_cleaned(tmp_path):
    writer = RingWriter('front', 64, directory=str(tmp_path))
    assert (tmp_path / writer.name).exists()
    assert oct((tmp_path / writer.name).stat().st_mode & 0o777) == '0o600'
    # A writer killed with SIGKILL leaves its ring, and its lock goes with it.
    killed = subprocess.run(
        [sys.executable, '-c', 'import os, signal, sys\n'
         'from remote_inference_py.transport.frame_ring import RingWriter\n'
         f'print(RingWriter("side", 64, directory={str(tmp_path)!r}).name, flush=True)\n'
         'os.kill(os.getpid(), signal.SIGKILL)'], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    assert (tmp_path / killed.stdout.strip()).exists()
    # A live writer whose pid means nothing here (another PID namespace) holds its lock.
    foreign = tmp_path / 'remote_inference_frames_999999999_front_0123abcd'
    foreign.write_bytes(b'a ring written from a container')
    lock = os.open(foreign, os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    other = tmp_path / 'fastrtps_port7411'
    other.write_bytes(b'not ours')
    assert frame_ring.stale_rings(str(tmp_path)) == [killed.stdout.strip()]
    second = RingWriter('side', 64, directory=str(tmp_path))   # cleans up on start
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [writer.name, second.name, foreign.name, other.name])
    os.close(lock)
    writer.close()
    second.close()
    writer.close()                                              # twice is fine
    assert frame_ring.remove_stale(str(tmp_path)) == [foreign.name]
    assert [p.name for p in tmp_path.iterdir()] == [other.name]


WRITER = """
import struct, sys, time
from remote_inference_py.transport.frame_ring import RingWriter
writer = RingWriter('race', 1 << 16, slots=4, directory=sys.argv[1])
print(writer.name, flush=True)
end = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < end:
    n += 1
    writer.write(struct.pack('<Q', n), bytes([n % 251]) * ((1 << 16) - 8))
sys.stdin.read()
writer.close()
"""


def test_a_reader_racing_the_writer_gets_whole_frames_or_frame_gone(tmp_path):
    proc = subprocess.Popen([sys.executable, '-c', WRITER, str(tmp_path), '2.0'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        reader = RingReader(proc.stdout.readline().strip(), directory=str(tmp_path))
        whole = gone = 0
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            latest = reader.latest()
            for sequence in (latest, latest - 1):     # the newest, and one being overtaken
                if sequence < 1:
                    continue
                try:
                    data = reader.read(sequence % 4, sequence, 1 << 16)
                except FrameGone:
                    gone += 1
                    continue
                assert struct.unpack_from('<Q', data)[0] == sequence
                assert data[8:] == bytes([sequence % 251]) * ((1 << 16) - 8), sequence
                whole += 1
        reader.close()
    finally:
        proc.communicate('', timeout=10)
    assert whole > 100 and gone > 0, (whole, gone)


# Stress: a writer process and a reader process hammer one small ring. Every 8-byte word of
# frame n is n, and its size depends on n, so any mix of two frames (or a wrong size) shows.
STRESS_COMMON = """
import json, sys, time
import numpy as np
from remote_inference_py.transport.frame_ring import FrameGone, RingReader, RingWriter
WORDS, SLOTS = 4096, 2

def size_of(n):
    return 8 * (WORDS - n % 7)
"""
STRESS_WRITER = STRESS_COMMON + """
writer = RingWriter('stress', 8 * WORDS, slots=SLOTS, directory=sys.argv[1])
print(writer.name, flush=True)
frame = np.zeros(WORDS, '<u8')
end = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < end:
    n += 1
    frame[:] = n
    writer.write(frame.data.cast('B')[:size_of(n)])
print(n, flush=True)
sys.stdin.read()
writer.close()
"""
STRESS_READER = STRESS_COMMON + """
reader = RingReader(sys.argv[2], directory=sys.argv[1])
counts = {'whole': 0, 'gone': 0, 'raced': 0, 'torn': 0, 'first_torn': None}
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    n = reader.latest()
    if n < 1:
        continue
    try:
        data = reader.read(n % SLOTS, n, size_of(n))
    except FrameGone as error:
        counts['raced' if 'while it was read' in str(error) else 'gone'] += 1
        continue
    words = np.frombuffer(data, '<u8')
    if len(data) != size_of(n) or not (words == n).all():
        counts['torn'] += 1
        counts['first_torn'] = counts['first_torn'] or [n, sorted(set(words.tolist()))[:4]]
    else:
        counts['whole'] += 1
reader.close()
print(json.dumps(counts), flush=True)
"""


def test_a_writer_and_a_reader_process_hammering_a_ring_never_pass_a_torn_frame(tmp_path):
    writer = subprocess.Popen([sys.executable, '-c', STRESS_WRITER, str(tmp_path), '4.0'],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        name = writer.stdout.readline().strip()
        reader = subprocess.run(
            [sys.executable, '-c', STRESS_READER, str(tmp_path), name, '3.5'],
            capture_output=True, text=True, timeout=60)
        assert reader.returncode == 0, reader.stderr
        counts = json.loads(reader.stdout)
        written = int(writer.stdout.readline())
    finally:
        writer.communicate('', timeout=20)
    assert counts['torn'] == 0, counts
    # The test has teeth: many whole frames were read, and the writer overtook the reader
    # in the middle of a copy (found by the check after it) while frames kept coming.
    assert counts['whole'] > 100 and counts['raced'] > 0 and written > 1000, (counts, written)


def test_without_libatomic_x86_uses_its_ordered_stores_and_other_cpus_refuse_by_name(
        tmp_path, monkeypatch):
    assert type(frame_ring.atomics()).__name__ == '_LibAtomic'   # libatomic1 is here
    with pytest.raises(RingError, match=r'libatomic_not_here.so.1 cannot be loaded on this '
                                        r'aarch64 machine .*install libatomic1'):
        frame_ring.atomics('aarch64', 'libatomic_not_here.so.1')
    tso = frame_ring.atomics('x86_64', 'libatomic_not_here.so.1')
    monkeypatch.setattr(frame_ring, 'atomics', lambda: tso)
    writer = RingWriter('tso', 64, slots=2, directory=str(tmp_path))
    reader = RingReader(writer.name, directory=str(tmp_path))
    for n in range(1, 6):
        assert reader.read(*writer.write(bytes([n]) * 40), 40) == bytes([n]) * 40
    assert reader.latest() == 5
    reader.close()
    writer.close()
