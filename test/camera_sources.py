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
Camera stand-ins for node tests: files and pipes that OpenCV in the node process really reads.

- :func:`write_video`: an MJPG AVI file (OpenCV plays it at ``fps``, in a loop).
- :class:`PipeCamera`: a named pipe fed with uncompressed YUV4MPEG2 frames by a thread of the
  test. OpenCV reads it as a live stream: while the test pauses the feed, the node's
  ``grab()`` blocks exactly as it does on a stalled USB camera; when the test closes the pipe,
  ``grab()`` fails as it does when a camera is unplugged.
"""

import os
import threading
import time

import numpy as np


def write_video(path, width, height, frames=30, fps=30.0):
    """Write an MJPG AVI: a red square top-left, a brightness that counts the frames."""
    import cv2
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), fps, (width, height))
    assert writer.isOpened(), f'OpenCV cannot write {path}'
    for index in range(frames):
        frame = np.full((height, width, 3), 40 + 4 * index % 200, np.uint8)
        frame[:height // 4, :width // 4] = (0, 0, 255)   # BGR red
        writer.write(frame)
    writer.release()
    return str(path)


class PipeCamera:
    """A YUV4MPEG2 stream through a named pipe: pause, resume, unplug."""

    def __init__(self, path, width, height, fps=30.0):
        self.path, self.width, self.height, self.period = str(path), width, height, 1.0 / fps
        os.mkfifo(self.path)
        self.running = threading.Event()
        self.running.set()
        self.unplugged = threading.Event()
        self.frames = 0
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _frame(self):
        luma = np.full((self.height, self.width), 60 + self.frames % 150, np.uint8)
        chroma = np.full(self.height * self.width // 2, 128, np.uint8)
        return b'FRAME\n' + luma.tobytes() + chroma.tobytes()

    def _feed(self):
        try:
            with open(self.path, 'wb') as pipe:   # waits for the node to open its end
                pipe.write(f'YUV4MPEG2 W{self.width} H{self.height} F30:1 Ip A1:1 '
                           'C420jpeg\n'.encode())
                while not self.unplugged.is_set():
                    if not self.running.wait(0.05):
                        continue
                    pipe.write(self._frame())
                    pipe.flush()
                    self.frames += 1
                    time.sleep(self.period)
        except (BrokenPipeError, OSError):
            pass

    def pause(self):
        """Stop sending frames: the reader blocks (a stalled camera)."""
        self.running.clear()

    def resume(self):
        """Send frames again."""
        self.running.set()

    def unplug(self):
        """Close the pipe: the reader's next grab fails (an unplugged camera)."""
        self.unplugged.set()
        self.running.set()
        self.thread.join(5)

    def close(self):
        """Stop feeding and remove the pipe."""
        self.unplug()
        if os.path.exists(self.path):
            os.unlink(self.path)
