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
USB cameras of the real arm, read with OpenCV on threads of their own (no ROS).

Configuration is LeRobot's: the ``cameras`` parameter takes the same dictionary a LeRobot
user passes as ``--robot.cameras`` (YAML flow or JSON), one entry per camera::

    {front: {type: opencv, index_or_path: /dev/video0, width: 640, height: 480, fps: 30},
     wrist: {type: opencv, index_or_path: 2, width: 640, height: 480, fps: 30,
             rotation: 180, color_mode: rgb}}

with LeRobot's meaning of each key: ``index_or_path`` (a device index, a device path such as
``/dev/video0`` or ``/dev/v4l/by-id/...``, or a video file), ``width`` and ``height`` of the
published frame (after rotation: a 90 degree rotation captures height x width), ``fps``,
``color_mode`` (``rgb`` or ``bgr``: the channel order published, as rgb8 or bgr8),
``rotation`` (0, 90, 180, -90 or 270 degrees clockwise), ``warmup_s`` (frames read and
dropped after opening) and ``fourcc`` (e.g. ``MJPG``, which many USB cameras need for 30 Hz
at 640x480). ``width``, ``height`` and ``fps`` may be left out: then the camera's own mode is
used and locked at start-up.

Each camera has one thread (:class:`CameraReader`) that blocks in OpenCV's ``grab()`` (which
releases the GIL), stamps the frame with the monotonic time right after ``grab()`` returns (the
capture time, not the publish time), decodes, rotates and converts it, and hands it to
``on_frame(name, frame, stamp)``. Nothing here touches the servo bus: a camera that blocks,
fails or is slow delays only its own thread. A video file is played at ``fps`` (its own rate
when unset) in a loop: a stand-in camera for tests and dry runs.

Faults, each a named error:

- at start-up (:meth:`CameraSet.open`): :class:`CameraOpenError` when the device cannot be
  opened or delivers no frame within ``warmup_s`` + ``stall_timeout_s``;
  :class:`CameraSizeError` when it delivers another size than configured.
- while running (:meth:`CameraSet.problems`, polled by the node): ``disconnected`` (``grab``
  failed: unplugged; the reader tries to reopen the device every ``reopen_interval_s``),
  ``stalled`` (no frame for ``stall_timeout_s``), ``wrong_size`` (a frame of another size:
  dropped, never published). A camera that delivers good frames again is ``ok`` again.

The device seam is ``open_source(config) -> source`` with ``grab() -> bool``,
``retrieve() -> ndarray or None`` and ``release()``; :func:`open_opencv` is the real one, tests
put stalling and failing sources there.
"""

import dataclasses
import os
import re
import stat
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

OPENCV_PACKAGE = 'opencv-python-headless'
CAMERA_TYPES = ('opencv',)
COLOR_MODES = ('rgb', 'bgr')
ROTATIONS = {0: 0, 90: 90, 180: 180, -90: -90, 270: -90}
KEYS = ('type', 'index_or_path', 'width', 'height', 'fps', 'color_mode', 'rotation',
        'warmup_s', 'fourcc')
NAME_PATTERN = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')
DEFAULT_STALL_TIMEOUT_S = 1.0
DEFAULT_REOPEN_INTERVAL_S = 1.0
OPEN_TIMEOUT_S = 5.0
"""Time a device may take to open, on top of its warm-up and stall timeout [s]."""

FrameCallback = Callable[[str, np.ndarray, float, str], None]
"""``on_frame(camera, frame, stamp, encoding)``: an (h, w, 3) uint8 frame, its capture time
(monotonic) and its encoding (rgb8 or bgr8)."""


def _discard(name, frame, stamp, encoding):
    """Drop a frame (what a closed reader hands frames to)."""


class CameraError(RuntimeError):
    """A camera problem; the message names the camera and its source."""


class CameraConfigError(CameraError, ValueError):
    """The ``cameras`` setting is malformed; the message names the camera and key."""


class CameraOpenError(CameraError):
    """A camera cannot be opened or delivers nothing at start-up."""


class CameraSizeError(CameraError):
    """A camera delivers frames of another size than configured."""


def import_cv2():
    """Import OpenCV, or raise CameraError naming the package to install."""
    try:
        import cv2
    except ImportError as error:
        raise CameraError(f'cameras and compressed images need OpenCV ({error}); install '
                          f'{OPENCV_PACKAGE} (pip install {OPENCV_PACKAGE})') from None
    return cv2


@dataclasses.dataclass(frozen=True)
class CameraConfig:
    """One camera, with LeRobot's OpenCV camera settings; invalid values raise ValueError."""

    name: str
    index_or_path: Union[int, str]
    width: Optional[int] = None
    height: Optional[int] = None
    fps: Optional[float] = None
    color_mode: str = 'rgb'
    rotation: int = 0
    warmup_s: float = 1.0
    fourcc: str = ''

    def __post_init__(self):
        """Check every field; the error names the camera and the key."""
        def bad(key, text):
            return CameraConfigError(f'camera {self.name!r}: {key} {text}')
        if not NAME_PATTERN.match(self.name or ''):
            raise CameraConfigError(f'camera name {self.name!r} must be letters, digits and _ '
                                    '(it becomes the topic cameras/<name>/image_raw)')
        source = self.index_or_path
        if isinstance(source, bool) or not isinstance(source, (int, str)) or source == '' or (
                isinstance(source, int) and source < 0):
            raise bad('index_or_path', f'is {source!r}; expected a device index (0, 1, ...), a '
                      'device path (/dev/video0) or a video file')
        if (self.width is None) != (self.height is None):
            raise bad('width and height', 'must be given together (or both left out)')
        for key in ('width', 'height'):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 1 <= value <= 16384):
                raise bad(key, f'is {value!r}; expected pixels (1..16384)')
        if self.fps is not None and (isinstance(self.fps, bool)
                                     or not isinstance(self.fps, (int, float))
                                     or not 0 < self.fps <= 1000):
            raise bad('fps', f'is {self.fps!r}; expected frames per second (0..1000]')
        if self.color_mode not in COLOR_MODES:
            raise bad('color_mode', f'is {self.color_mode!r}; expected one of '
                      f'{", ".join(COLOR_MODES)}')
        if self.rotation not in ROTATIONS or isinstance(self.rotation, bool):
            raise bad('rotation', f'is {self.rotation!r}; expected 0, 90, 180 or -90 (270)')
        if isinstance(self.warmup_s, bool) or not isinstance(self.warmup_s, (int, float)) \
                or not 0 <= self.warmup_s <= 60:
            raise bad('warmup_s', f'is {self.warmup_s!r}; expected seconds in [0, 60]')
        if not isinstance(self.fourcc, str) or len(self.fourcc) not in (0, 4):
            raise bad('fourcc', f'is {self.fourcc!r}; expected four characters such as MJPG')

    @property
    def encoding(self) -> str:
        """The published encoding: rgb8 or bgr8."""
        return f'{self.color_mode}8'

    @property
    def turned(self) -> bool:
        """True when the rotation swaps width and height."""
        return ROTATIONS[self.rotation] in (90, -90)

    @property
    def capture_size(self) -> Optional[Tuple[int, int]]:
        """(width, height) the device must deliver, before rotation; None: its own."""
        if self.width is None:
            return None
        return (self.height, self.width) if self.turned else (self.width, self.height)

    @property
    def source_text(self) -> str:
        """The source as a user wrote it, for messages."""
        return str(self.index_or_path)

    @property
    def kind(self) -> str:
        """'device' (an index or a character device), 'file' (played at fps) or 'stream'."""
        source = self.index_or_path
        if isinstance(source, int):
            return 'device'
        try:
            mode = os.stat(source).st_mode
        except OSError:
            return 'device' if source.startswith('/dev/') else 'file'
        if stat.S_ISCHR(mode):
            return 'device'
        return 'file' if stat.S_ISREG(mode) else 'stream'


def parse_cameras(text: str) -> Tuple[CameraConfig, ...]:
    """Parse LeRobot's camera dictionary (YAML flow or JSON); '' or '{}' is no camera."""
    import yaml
    if not text or not text.strip():
        return ()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CameraConfigError(f'cameras is not a YAML/JSON dictionary: {error}') from None
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise CameraConfigError(f'cameras must map camera names to settings, e.g. '
                                f'{{front: {{type: opencv, index_or_path: 0, width: 640, '
                                f'height: 480, fps: 30}}}}; got {data!r}')
    configs = []
    for name, entry in data.items():
        name = str(name)
        if not isinstance(entry, dict):
            raise CameraConfigError(f'camera {name!r}: settings must be a dictionary, got '
                                    f'{entry!r}')
        unknown = sorted(set(map(str, entry)) - set(KEYS))
        if unknown:
            raise CameraConfigError(f'camera {name!r}: unknown key(s) {", ".join(unknown)}; '
                                    f'known: {", ".join(KEYS)}')
        kind = str(entry.get('type', 'opencv'))
        if kind not in CAMERA_TYPES:
            raise CameraConfigError(f'camera {name!r}: type {kind!r} is not supported here '
                                    f'(supported: {", ".join(CAMERA_TYPES)})')
        if 'index_or_path' not in entry:
            raise CameraConfigError(f'camera {name!r}: index_or_path is missing (a device '
                                    'index, /dev/videoN or a video file)')
        settings = {k: v for k, v in entry.items() if k != 'type'}
        if isinstance(settings.get('index_or_path'), str) and \
                settings['index_or_path'].strip().isdigit():
            settings['index_or_path'] = int(settings['index_or_path'])
        if isinstance(settings.get('fourcc'), type(None)):
            settings['fourcc'] = ''
        try:
            configs.append(CameraConfig(name=name, **settings))
        except TypeError as error:
            raise CameraConfigError(f'camera {name!r}: {error}') from None
    return tuple(configs)


class OpenCVSource:
    """A camera or video file through ``cv2.VideoCapture``."""

    def __init__(self, config: CameraConfig):
        """Open the device (V4L2 for devices) and ask for the configured mode."""
        cv2 = import_cv2()
        self.cv2 = cv2
        self.config = config
        source = config.index_or_path
        backend = cv2.CAP_V4L2 if config.kind == 'device' and os.name == 'posix' else \
            cv2.CAP_ANY
        self.capture = cv2.VideoCapture(source, backend)
        if not self.capture.isOpened():
            self.capture.release()
            device = f'/dev/video{source}' if isinstance(source, int) else source
            why = ('no such device or file' if not os.path.exists(device) else
                   'busy, not a camera, or no permission (is the user in group video?)')
            raise CameraOpenError(f'camera {config.name!r} ({config.source_text}) cannot be '
                                  f'opened: {why}')
        if config.kind == 'device':
            if config.fourcc:
                self.capture.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*config.fourcc))
            if config.capture_size is not None:
                width, height = config.capture_size
                self.capture.set(cv2.CAP_PROP_FRAME_WIDTH, width)
                self.capture.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
            if config.fps is not None:
                self.capture.set(cv2.CAP_PROP_FPS, float(config.fps))
            self.capture.set(cv2.CAP_PROP_BUFFERSIZE, 1)   # the newest frame, not an old one

    @property
    def reported_fps(self) -> float:
        """The rate the device or file reports (0 when unknown)."""
        value = self.capture.get(self.cv2.CAP_PROP_FPS)
        return float(value) if value and value > 0 else 0.0

    def grab(self) -> bool:
        """Wait for the next frame; False when none comes (unplugged, end of a stream)."""
        if self.capture.grab():
            return True
        if self.config.kind == 'file':   # a video file plays in a loop
            self.capture.set(self.cv2.CAP_PROP_POS_FRAMES, 0)
            return self.capture.grab()
        return False

    def retrieve(self) -> Optional[np.ndarray]:
        """Decode the grabbed frame (BGR, h x w x 3), or None."""
        ok, frame = self.capture.retrieve()
        return frame if ok else None

    def release(self) -> None:
        """Close the device."""
        self.capture.release()


def open_opencv(config: CameraConfig) -> OpenCVSource:
    """Open a camera through OpenCV (the real device seam)."""
    return OpenCVSource(config)


class CameraReader:
    """One camera on a thread of its own: capture, stamp, convert, hand on."""

    def __init__(self, config: CameraConfig, on_frame: FrameCallback,
                 open_source: Callable[[CameraConfig], object] = open_opencv,
                 stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
                 reopen_interval_s: float = DEFAULT_REOPEN_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic):
        """Configure; nothing is opened until :meth:`open`."""
        self.config = config
        self.on_frame = on_frame
        self.open_source = open_source
        self.stall_timeout_s = stall_timeout_s
        self.reopen_interval_s = reopen_interval_s
        self.clock = clock
        self.source = None
        self.size: Optional[Tuple[int, int]] = config.capture_size
        self.period = 1.0 / config.fps if config.fps else 0.0
        self.frames = 0
        self.dropped = 0
        self.reopened = 0
        self.callback_errors = 0
        self.last_frame_at: Optional[float] = None
        self.notes: List[str] = []
        self._problem: Tuple[str, str] = ('', '')
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._rotate = None
        self._convert = None

    @property
    def label(self) -> str:
        """``camera 'front' (/dev/video0)``, for messages."""
        return f'camera {self.config.name!r} ({self.config.source_text})'

    # ---- start-up -----------------------------------------------------------------------

    def open(self) -> None:
        """
        Open the device and read its warm-up frames; raise a named CameraError.

        A driver call that never returns (a device that opens but sends nothing) is waited
        for at most ``warmup_s + stall_timeout_s + OPEN_TIMEOUT_S``; the helper thread left
        blocked releases the device if it ever returns.
        """
        limit = self.config.warmup_s + self.stall_timeout_s + OPEN_TIMEOUT_S
        outcome = {}

        def attempt():
            try:
                self._open_and_warm_up()
            except BaseException as error:  # noqa: B902 - handed to the caller
                outcome['error'] = error
            finally:
                with self._lock:
                    if outcome.get('abandoned'):
                        self._release_unlocked()
        helper = threading.Thread(target=attempt, name=f'camera-open-{self.config.name}',
                                  daemon=True)
        helper.start()
        helper.join(limit)
        with self._lock:
            if helper.is_alive():
                outcome['abandoned'] = True
                self.on_frame = _discard   # the stuck thread must not keep the consumer alive
                raise CameraOpenError(f'{self.label} opened but delivered no frame within '
                                      f'{limit:g} s')
        if 'error' in outcome:
            raise outcome['error']

    def _open_and_warm_up(self) -> None:
        cv2 = import_cv2()
        rotation = ROTATIONS[self.config.rotation]
        self._rotate = {90: cv2.ROTATE_90_CLOCKWISE, -90: cv2.ROTATE_90_COUNTERCLOCKWISE,
                        180: cv2.ROTATE_180}.get(rotation)
        self._convert = cv2.COLOR_BGR2RGB if self.config.color_mode == 'rgb' else None
        self.source = self.open_source(self.config)
        try:
            reported = getattr(self.source, 'reported_fps', 0.0)
            if self.config.fps is None and reported:
                self.period = 1.0 / reported
            elif self.config.fps is not None and reported and \
                    abs(reported - self.config.fps) > 0.5 and self.config.kind == 'device':
                self.notes.append(f'{self.label} reports {reported:g} fps, configured '
                                  f'{self.config.fps:g}; frames are published as they come')
            self._warm_up()
        except BaseException:
            self._release()
            raise

    def _warm_up(self) -> None:
        """Read frames for ``warmup_s`` (at least one); check their size."""
        started = self.clock()
        limit = self.config.warmup_s + self.stall_timeout_s
        frame = None
        while frame is None or self.clock() - started < self.config.warmup_s:
            if self.clock() - started > limit:
                raise CameraOpenError(f'{self.label} opened but delivered no frame within '
                                      f'{limit:g} s')
            if not self.source.grab():
                raise CameraOpenError(f'{self.label} opened but delivered no frame')
            frame = self.source.retrieve()
        height, width = frame.shape[:2]
        if self.size is None:
            self.size = (width, height)
        elif (width, height) != self.size:
            raise CameraSizeError(self._size_text(width, height))

    def _size_text(self, width: int, height: int) -> str:
        want_w, want_h = self.size
        turned = ' before its rotation' if self.config.turned else ''
        return (f'{self.label} delivers {width}x{height} frames but is configured for '
                f'{want_w}x{want_h}{turned} (width x height); set width and height to a mode '
                'the camera supports')

    # ---- running ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the capture thread (after :meth:`open`)."""
        self._stop.clear()
        self.last_frame_at = self.clock()
        self._thread = threading.Thread(target=self._loop, name=f'camera-{self.config.name}',
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        deadline = self.clock()
        while not self._stop.is_set():
            if self.source is None and not self._reopen():
                continue
            if not self.source.grab():
                if not self._stop.is_set():
                    self._set_problem('disconnected', f'{self.label} stopped delivering frames '
                                      '(unplugged?); reopening it every '
                                      f'{self.reopen_interval_s:g} s')
                    self._release()
                continue
            stamp = self.clock()
            frame = self.source.retrieve()
            if frame is None:
                self.dropped += 1
                continue
            height, width = frame.shape[:2]
            if (width, height) != self.size or frame.ndim != 3 or frame.shape[2] != 3:
                self.dropped += 1
                self._set_problem('wrong_size', self._size_text(width, height))
                continue
            self._deliver(frame, stamp)
            if self.config.kind == 'file' and self.period:   # a file plays at fps
                deadline = max(deadline + self.period, self.clock() - self.period)
                self._stop.wait(max(0.0, deadline - self.clock()))

    def _deliver(self, frame: np.ndarray, stamp: float) -> None:
        cv2 = import_cv2()
        if self._rotate is not None:
            frame = cv2.rotate(frame, self._rotate)
        if self._convert is not None:
            frame = cv2.cvtColor(frame, self._convert)
        with self._lock:
            self.last_frame_at = stamp
            self.frames += 1
            self._problem = ('', '')
        try:
            self.on_frame(self.config.name, frame, stamp, self.config.encoding)
        except Exception:  # noqa: B902 - a publishing error must not end the capture
            self.callback_errors += 1

    def _reopen(self) -> bool:
        if self._stop.wait(self.reopen_interval_s):
            return False
        try:
            source = self.open_source(self.config)
        except CameraError:
            return False
        with self._lock:
            if self._stop.is_set():
                source.release()
                return False
            self.source = source
        self.reopened += 1
        return True

    def _set_problem(self, code: str, text: str) -> None:
        with self._lock:
            self._problem = (code, text)

    def problem(self, now: Optional[float] = None) -> Tuple[str, str]:
        """Return (code, message) of the present fault, or ('', '') while frames come."""
        now = self.clock() if now is None else now
        with self._lock:
            code, text = self._problem
            last = self.last_frame_at
        if code:
            return code, text
        if last is not None and now - last > self.stall_timeout_s:
            return 'stalled', (f'{self.label} stalled: no frame for {now - last:.1f} s '
                               f'(stall_timeout_s={self.stall_timeout_s:g})')
        return '', ''

    def _release(self) -> None:
        with self._lock:
            self._release_unlocked()

    def _release_unlocked(self) -> None:
        source, self.source = self.source, None
        if source is not None:
            source.release()

    def close(self, timeout_s: float = 2.0) -> bool:
        """Stop the thread and release the device; False when the thread is stuck in it."""
        self._stop.set()
        # A thread stuck in the driver keeps this reader alive, but not the consumer (the node
        # and its DDS participant must be finalized at exit).
        self.on_frame = _discard
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                return False   # blocked inside the driver: leave the device to the process exit
        self._release()
        return True


class CameraSet:
    """The arm's cameras: open all at start-up, poll their faults, close all."""

    def __init__(self, configs: Sequence[CameraConfig], on_frame: FrameCallback,
                 open_source: Callable[[CameraConfig], object] = open_opencv,
                 stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
                 reopen_interval_s: float = DEFAULT_REOPEN_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic):
        """Make one reader per camera (nothing opened yet)."""
        self.readers: Dict[str, CameraReader] = {
            c.name: CameraReader(c, on_frame, open_source, stall_timeout_s, reopen_interval_s,
                                 clock) for c in configs}

    def open(self) -> None:
        """Open every camera and start its thread; on a failure close all and raise it."""
        opened = []
        try:
            for reader in self.readers.values():
                reader.open()
                opened.append(reader)
        except BaseException:
            for reader in opened:
                reader.close()
            raise
        for reader in opened:
            reader.start()

    @property
    def notes(self) -> List[str]:
        """What start-up noticed but tolerated."""
        return [note for reader in self.readers.values() for note in reader.notes]

    def problems(self, now: Optional[float] = None) -> List[Tuple[str, str, str]]:
        """Return (camera, code, message) for every camera in fault now."""
        out = []
        for name, reader in self.readers.items():
            code, text = reader.problem(now)
            if code:
                out.append((name, code, text))
        return out

    def summary(self) -> str:
        """Frames per camera (and drops, reopenings), for the periodic log."""
        return ', '.join(
            f'{name} {r.frames} frames'
            + (f' {r.dropped} dropped' if r.dropped else '')
            + (f' {r.reopened} reopened' if r.reopened else '')
            for name, r in self.readers.items())

    def close(self) -> List[str]:
        """Stop every camera; return the names of those whose thread stayed blocked."""
        return [name for name, reader in self.readers.items() if not reader.close()]
