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
Write dataset rows through LeRobot's own ``LeRobotDataset``, on a thread behind a bounded queue.

LeRobot's create, add_frame, save_episode and finalize do the writing.

- :func:`check_existing` refuses, by name, a folder that holds a dataset of other features,
  fps or robot type (LeRobot's ``sanity_check_dataset_robot_compatibility`` compares the same
  three), or a folder that holds something else; a compatible dataset is appended to, as
  ``lerobot-record --resume`` does. It reads ``meta/info.json`` only, so it runs before motion
  without importing LeRobot. The joint features' semantics (their units: degrees or radians
  under the same names) are kept beside LeRobot's files in ``meta/remote_inference.json``,
  and a dataset in other units is refused too.
- :class:`DatasetWriter` takes :class:`~.dataset_rows.Row` and
  :class:`~.dataset_rows.EpisodeEnd` events with :meth:`DatasetWriter.put`, which never
  blocks: when the queue is full the row is dropped and counted (named per episode in the
  log). The thread adds frames (LeRobot writes each camera frame as a PNG) and, at an episode
  end, saves the episode (LeRobot encodes the videos): seconds of every core at once, so the
  save runs at a lower CPU priority (:func:`call_at_lower_priority`; the encoder's threads
  inherit it) and the robot's processes and the recorder's own subscriptions keep the CPU
  they need while it runs. A full disk or an encoder error is
  named, the episode is closed with what could be written (an episode whose video cannot be
  encoded is discarded: LeRobot cannot store it without its video) and the writer stops
  taking rows; earlier episodes stay, and :meth:`DatasetWriter.close` finalizes the dataset.
- Video: LeRobot's own encoder (``encode_video_frames``, PyAV) with codec ``libsvtav1``,
  LeRobot's default, which the pinned PyAV (av 15.1) ships. LeRobot 0.4.4 decodes with
  torchcodec, else through ``torchvision.io.VideoReader``, which torchvision 0.28 no longer
  has; :func:`import_lerobot_dataset` then gives LeRobot's ``decode_video_frames_torchvision``
  the same frames decoded with PyAV directly (:func:`decode_frames_pyav`), so
  ``LeRobotDataset(repo_id, root=folder)`` loads and iterates in a torch DataLoader.
"""

import dataclasses
import errno
import json
import logging
import os
import pathlib
import queue
import shutil
import sys
import threading
import time

from remote_inference_py.analysis.dataset_rows import EpisodeEnd, INTERVENTION, Row

DEFAULT_VCODEC = 'libsvtav1'
QUEUE_ROWS = 256           # rows waiting for the writer: ~8 s at 30 fps
LOW_SPACE = 1_000_000      # [bytes] below this a write error is a full disk, whatever it says
LOG = logging.getLogger('remote_inference.dataset')
# How much lower the CPU priority of an episode's save (video encoding) is: nice +10 gets about
# a tenth of the CPU a normal-priority process gets when both want it.
SAVE_NICE = 10


class DatasetError(ValueError):
    """A dataset folder cannot be recorded to; the message names the folder and the field."""


def _plain(value):
    """JSON-like value with tuples as lists (info.json stores lists)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def as_existing(folder, schema, notes=None):
    """Return ``schema`` as the dataset at ``folder`` records it (``schema`` if none is there).

    A dataset recorded before the ``intervention`` column existed is appended to as before:
    without the column (and so without the frames the human on the leader arm drove), said in
    ``notes``. Anything else that differs is :func:`check_existing`'s to name.
    """
    info_path = pathlib.Path(folder) / 'meta' / 'info.json'
    if not schema.intervention or not info_path.is_file():
        return schema
    try:
        features = json.loads(info_path.read_text()).get('features', {})
    except (OSError, ValueError):
        return schema   # check_existing names it
    if INTERVENTION in features:
        return schema
    if notes is not None:
        notes.append(f'the dataset at {str(folder)!r} has no {INTERVENTION!r} feature (recorded '
                     'before it existed): appending as before, without the frames a human on '
                     'the leader arm drives')
    return dataclasses.replace(schema, intervention=False)


def check_existing(folder, schema, repo_id=''):
    """
    Return True when ``folder`` holds a dataset this schema can append to, False when absent.

    Raise DatasetError naming the folder and what differs (robot_type, fps, a feature and its
    field) when it holds another dataset, or something that is not a LeRobot dataset.
    """
    folder = pathlib.Path(folder)
    if not folder.exists():
        return False
    info_path = folder / 'meta' / 'info.json'
    if not info_path.is_file():
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()      # an empty folder: LeRobot creates it itself
            return False
        raise DatasetError(f'dataset folder {str(folder)!r} exists and is not a LeRobot dataset '
                           '(no meta/info.json): name a new folder or an existing dataset')
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as error:
        raise DatasetError(f'dataset folder {str(folder)!r}: meta/info.json is unreadable '
                           f'({error})') from None
    where = f'dataset folder {str(folder)!r} holds another dataset'
    if info.get('robot_type') != schema.robot_type:
        raise DatasetError(f'{where}: robot_type {info.get("robot_type")!r}, this run records '
                           f'{schema.robot_type!r}')
    if info.get('fps') != schema.fps:
        raise DatasetError(f'{where}: fps {info.get("fps")!r}, this run records {schema.fps} '
                           '(the executor fps)')
    theirs = {k: v for k, v in info.get('features', {}).items()
              if k not in ('timestamp', 'frame_index', 'episode_index', 'index', 'task_index')}
    ours = _plain(schema.features())
    for key in sorted(set(theirs) | set(ours)):
        if key not in ours:
            raise DatasetError(f'{where}: feature {key!r}, which this run does not record')
        if key not in theirs:
            raise DatasetError(f'{where}: no feature {key!r}, which this run records')
        for field in ('dtype', 'shape', 'names'):
            if _plain(theirs[key].get(field)) != ours[key][field]:
                raise DatasetError(f'{where}: feature {key!r} has {field} '
                                   f'{theirs[key].get(field)!r}, this run records '
                                   f'{ours[key][field]!r}')
    units = read_units(folder)
    if units and units != schema_units(schema):
        raise DatasetError(f'{where}: units {units}, this run records {schema_units(schema)} '
                           f'({UNITS_FILE})')
    return True


UNITS_FILE = 'meta/remote_inference.json'


def schema_units(schema):
    """Return {feature: semantics} of the joint features (what the numbers mean)."""
    return {**{s.key: s.semantics for s in schema.states}, 'action': schema.action_semantics}


def read_units(folder):
    """Return the units file of a dataset this package wrote ({} for another's)."""
    path = pathlib.Path(folder) / UNITS_FILE
    return json.loads(path.read_text()).get('units', {}) if path.is_file() else {}


def write_units(folder, schema):
    """Write which semantics the joint features are in, beside LeRobot's meta files."""
    path = pathlib.Path(folder) / UNITS_FILE
    path.write_text(json.dumps({'units': schema_units(schema)}, indent=2) + '\n')


def decode_frames_pyav(video_path, timestamps, tolerance_s, backend='pyav',
                       log_loaded_timestamps=False):
    """Return the frames nearest ``timestamps`` as float32 (N, C, H, W) in [0, 1], via PyAV.

    LeRobot's ``decode_video_frames_torchvision`` contract: every query within ``tolerance_s``
    of a decoded frame, else its ``FrameTimestampError``.
    """
    import av
    import numpy as np
    import torch
    from lerobot.datasets.video_utils import FrameTimestampError
    first, last = min(timestamps), max(timestamps)
    frames, stamps = [], []
    with av.open(str(video_path)) as container:
        stream = container.streams.video[0]
        container.seek(max(int(first / stream.time_base), 0), stream=stream, backward=True)
        for frame in container.decode(stream):
            stamp = float(frame.pts * stream.time_base)
            if stamp >= first - tolerance_s - 1.0:
                frames.append(frame.to_ndarray(format='rgb24'))
                stamps.append(stamp)
            if stamp >= last:
                break
    if not frames:
        raise FrameTimestampError(f'no frame decoded from {video_path} at {timestamps}')
    stamps = np.array(stamps)
    index = [int(np.argmin(np.abs(stamps - t))) for t in timestamps]
    far = [t for t, i in zip(timestamps, index) if abs(stamps[i] - t) >= tolerance_s]
    if far:
        raise FrameTimestampError(f'query timestamps {far} are farther than {tolerance_s} s '
                                  f'from any frame of {video_path}')
    chosen = np.stack([frames[i] for i in index])
    return torch.from_numpy(chosen).permute(0, 3, 1, 2).to(torch.float32) / 255


def import_lerobot_dataset():
    """Import and return LeRobot's ``LeRobotDataset`` class, able to decode its videos."""
    from remote_inference_py.policy_server.lerobot_import import import_lerobot
    import_lerobot('recording a LeRobot dataset')
    import torchvision.io
    from lerobot.datasets import video_utils
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    if not hasattr(torchvision.io, 'VideoReader'):
        video_utils.decode_video_frames_torchvision = decode_frames_pyav
    return LeRobotDataset


def open_dataset(folder, repo_id, schema, vcodec=DEFAULT_VCODEC, image_writer_threads=0):
    """Create the dataset at ``folder``, or open a compatible one to append episodes.

    Frames are written as PNGs on the writer's own thread (``image_writer_threads`` 0), so a
    write error reaches :class:`DatasetWriter` as it happens, with its errno.
    """
    LeRobotDataset = import_lerobot_dataset()
    if check_existing(folder, schema, repo_id):
        dataset = LeRobotDataset(repo_id, root=folder, vcodec=vcodec)
        if image_writer_threads:
            dataset.start_image_writer(num_processes=0, num_threads=image_writer_threads)
        return dataset
    dataset = LeRobotDataset.create(repo_id, schema.fps, schema.features(), root=folder,
                                    robot_type=schema.robot_type, use_videos=True,
                                    image_writer_threads=image_writer_threads, vcodec=vcodec)
    write_units(folder, schema)
    return dataset


def call_at_lower_priority(work, nice=SAVE_NICE):
    """Return ``work()``, run on a thread of its own ``nice`` steps below the caller's priority.

    On Linux the nice value is a thread's own and every thread it starts inherits it (the
    video encoder's threads). Raising it needs no privilege, and lowering it back would: hence
    a thread that ends with the work. Elsewhere the work runs as before. An exception of
    ``work`` is raised here.
    """
    outcome = {}

    def run():
        """Lower this thread's priority, then do the work."""
        if sys.platform.startswith('linux'):
            tid = threading.get_native_id()
            try:
                os.setpriority(os.PRIO_PROCESS, tid,
                               min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
            except OSError:   # a sandbox that refuses: the work runs at the caller's priority
                pass
        try:
            outcome['value'] = work()
        except BaseException as error:  # noqa: B902 - handed to the caller as it is
            outcome['error'] = error

    thread = threading.Thread(target=run, name='dataset-save', daemon=True)
    thread.start()
    thread.join()
    if 'error' in outcome:
        raise outcome['error']
    return outcome.get('value')


def describe_error(error, folder):
    """Name a write error: a full disk, or what failed (the encoder, a file)."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    full = isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)
    if full or (free is not None and free < LOW_SPACE):
        room = '' if free is None else f'; {free / 1e6:.1f} MB free'
        return (f'disk full writing the dataset at {str(folder)!r} '
                f'({type(error).__name__}: {error}{room})')
    return f'{type(error).__name__}: {error}'


class DatasetWriter:
    """Write rows and episode ends to a LeRobot dataset on a thread of its own."""

    def __init__(self, dataset, log=None, queue_rows=QUEUE_ROWS):
        """Take an open ``LeRobotDataset``; ``log(level, text)`` reports (default: logging)."""
        self.dataset = dataset
        self.folder = pathlib.Path(dataset.root)
        self.log = log or (lambda level, text: LOG.log(level, text))
        self.queue = queue.Queue()       # rows bounded by queue_rows; episode ends never
        self.queue_rows = queue_rows
        self.rows_queued = 0
        self._count_lock = threading.Lock()
        self.dropped = 0                 # rows the queue had no room for, whole run
        self.episode_dropped = 0         # ... in the episode being recorded
        self.failed = ''                 # the error that stopped writing, '' while none
        self.episodes_saved = 0
        self.frames_saved = 0
        self.frames_in_episode = 0
        self.errors = []
        self._thread = threading.Thread(target=self._run, name='dataset-writer', daemon=True)
        self._thread.start()

    def put(self, event):
        """Hand a Row or EpisodeEnd to the writer without waiting; False when dropped."""
        if isinstance(event, Row):
            with self._count_lock:
                if self.failed:
                    self.dropped += 1
                    return False
                if self.rows_queued >= self.queue_rows:
                    self.dropped += 1
                    self.episode_dropped += 1
                    return False
                self.rows_queued += 1
        self.queue.put(event)            # unbounded: an episode end is never dropped
        return True

    def put_waiting(self, event):
        """Hand an event to the writer, waiting for room (converting a bag: nothing moves)."""
        while isinstance(event, Row) and self.rows_queued >= self.queue_rows \
                and self._thread.is_alive():
            time.sleep(0.005)
        return self.put(event)

    def close(self, timeout=None):
        """Save an open episode, finalize the dataset, stop the thread; return the errors."""
        self.queue.put(None)
        self._thread.join(timeout)
        return self.errors

    # ---- the writer thread --------------------------------------------------------------

    def _run(self):
        while True:
            event = self.queue.get()
            if event is None:
                self._save('the recording ended')
                self._finalize()
                return
            if isinstance(event, EpisodeEnd):
                self._save(event.reason)
                continue
            with self._count_lock:
                self.rows_queued -= 1
                if self.failed:
                    self.dropped += 1        # after a write error: counted, not written
                    continue
            self._add(event)

    def _add(self, row):
        try:
            self.dataset.add_frame(dict(row.frame))
            self.frames_in_episode += 1
            # LeRobot's write_image reports a failed PNG write on stdout and goes on; a frame
            # whose file is missing or empty is a write error here.
            for key in self.dataset.meta.video_keys:
                path = self.dataset.episode_buffer[key][-1]
                if not os.path.isfile(path) or os.path.getsize(path) == 0:
                    raise OSError(f'LeRobot could not write the frame {path}')
        except Exception as error:  # noqa: B902 - named, the episode closed, the robot unaffected
            self._fail(f'adding frame {self.frames_in_episode} of episode '
                       f'{self.dataset.meta.total_episodes}: '
                       + describe_error(error, self.folder))
            self._save('a write error')

    def _save(self, reason):
        count = self.frames_in_episode
        if count == 0:
            return
        index = self.dataset.meta.total_episodes
        self.frames_in_episode = 0
        dropped, self.episode_dropped = self.episode_dropped, 0
        try:
            call_at_lower_priority(self.dataset.save_episode)
        except Exception as error:  # noqa: B902 - an encoder or disk error: named, not fatal
            self._fail(f'saving episode {index} ({count} frames): '
                       + describe_error(error, self.folder) + '; the episode is discarded')
            try:
                self.dataset.clear_episode_buffer()
            except Exception:  # noqa: B902 - best effort: the buffer's PNGs may be gone
                self.dataset.episode_buffer = self.dataset.create_episode_buffer()
            return
        self.episodes_saved += 1
        self.frames_saved += count
        note = (f'; {dropped} frames dropped (the writer fell behind: its queue of '
                f'{self.queue_rows} rows was full)' if dropped else '')
        self.log(logging.WARNING if dropped else logging.INFO,
                 f'dataset: episode {index} saved, {count} frames ({reason}){note}')

    def _fail(self, text):
        self.failed = self.failed or text
        self.errors.append(text)
        self.log(logging.ERROR, f'dataset: {text}')

    def _finalize(self):
        try:
            call_at_lower_priority(self.dataset.finalize)
        except Exception as error:  # noqa: B902 - named; nothing else to close
            self._fail('finalizing: ' + describe_error(error, self.folder))
