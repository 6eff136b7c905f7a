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
What the cameras saw during a recorded run: a contact sheet (PNG) or a video per camera.

A bag recorded with ``record_images`` holds ``cameras/<name>/image_raw/compressed`` (JPEG).
:func:`camera_frames` collects them by camera, ordered by capture stamp; :func:`contact_sheet`
lays out up to ``count`` frames evenly spread over the run, each labelled with its time since
the first frame; :func:`write_video` writes every frame at the rate they were captured
(OpenCV, ``mp4v`` in an MP4 file).
"""

import io
import pathlib
import re
from typing import Dict, List, Tuple

import numpy as np

from remote_inference_py.transport.values import stamp_ns

CAMERA_TOPIC = re.compile(r'^/cameras/([A-Za-z0-9_]+)/image_raw/compressed$')
Frames = List[Tuple[int, bytes]]


def camera_frames(topics) -> Dict[str, Frames]:
    """Return {camera: [(capture stamp ns, JPEG bytes), ...]} from :func:`read_bag` output."""
    cameras = {}
    for topic, messages in topics.items():
        match = CAMERA_TOPIC.match(topic)
        if not match:
            continue
        frames = [(stamp_ns(msg.header.stamp), bytes(msg.data)) for _, msg in messages]
        if frames:
            cameras[match.group(1)] = sorted(frames, key=lambda f: f[0])
    return cameras


def _decode(data: bytes) -> np.ndarray:
    from PIL import Image
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert('RGB'))


def contact_sheet(frames: Frames, path, title: str = '', count: int = 24,
                  columns: int = 6, thumb_width: int = 213) -> str:
    """Write up to ``count`` frames spread over the run as one PNG grid; return its path."""
    from PIL import Image, ImageDraw
    if not frames:
        raise ValueError('no frames to lay out')
    picks = sorted(set(np.linspace(0, len(frames) - 1, min(count, len(frames))).round()
                       .astype(int)))
    first = frames[0][0]
    thumbs = []
    for index in picks:
        stamp, data = frames[index]
        image = Image.fromarray(_decode(data))
        height = max(1, round(image.height * thumb_width / image.width))
        thumb = image.resize((thumb_width, height))
        ImageDraw.Draw(thumb).text((4, 2), f't={(stamp - first) * 1e-9:.2f} s',
                                   fill=(255, 255, 0))
        thumbs.append(thumb)
    columns = min(columns, len(thumbs))
    rows = -(-len(thumbs) // columns)
    header = 18 if title else 0
    cell_h = max(t.height for t in thumbs)
    sheet = Image.new('RGB', (columns * thumb_width, header + rows * cell_h), (24, 24, 24))
    if title:
        ImageDraw.Draw(sheet).text((4, 3), title, fill=(255, 255, 255))
    for i, thumb in enumerate(thumbs):
        sheet.paste(thumb, ((i % columns) * thumb_width, header + (i // columns) * cell_h))
    path = str(path)
    sheet.save(path)
    return path


def write_video(frames: Frames, path) -> str:
    """Write every frame to an MP4 at the rate they were captured; return its path."""
    try:
        import cv2
    except ImportError as error:
        raise ValueError(f'writing a video needs OpenCV ({error}); install '
                         'opencv-python-headless') from None
    if not frames:
        raise ValueError('no frames to write')
    span = (frames[-1][0] - frames[0][0]) * 1e-9
    fps = (len(frames) - 1) / span if span > 0 else 30.0
    first = _decode(frames[0][1])
    height, width = first.shape[:2]
    path = str(path)
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*'mp4v'), fps, (width, height))
    if not writer.isOpened():
        raise ValueError(f'OpenCV cannot write the video {path}')
    try:
        for _, data in frames:
            frame = _decode(data)
            if frame.shape[:2] != (height, width):
                continue   # a camera that changed size mid-run: keep the first size
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    return path


def write_frames(topics, folder, kinds=('sheet',), title='') -> List[str]:
    """Write each camera's contact sheet and/or video into ``folder``; return the paths."""
    written = []
    for camera, frames in sorted(camera_frames(topics).items()):
        base = pathlib.Path(folder) / f'frames_{camera}'
        if 'sheet' in kinds:
            written.append(contact_sheet(frames, base.with_suffix('.png'),
                                         title=f'{title} {camera}: {len(frames)} frames'.strip()))
        if 'video' in kinds:
            written.append(write_video(frames, base.with_suffix('.mp4')))
    return written
