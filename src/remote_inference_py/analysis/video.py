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
A video of a recorded run on the simulated SO-101, rendered afterwards from its bag.

``python -m remote_inference_py.analysis.video BAG [--out run.webp]`` (``analyze BAG
--video`` and ``./run demo`` call it too). Nothing is rendered while the robot runs: the
frames are rebuilt from the recorded ``joint_states`` (50 Hz; the nearest earlier sample) and
``sim/cube_pose`` (10 Hz, interpolated), put into the simulator's own SO-101 scene and
rendered offscreen with MuJoCo from a camera beside the arm (``--camera side``, which shows
the jaws and the cube in profile) or from one of the scene's cameras (``--camera front``, the
one the camera policies see), in real time at ``fps`` frames a second. So the control loop
never waits for a frame, and a bag recorded on another machine renders the same.

Each frame is marked with what the product is doing at that instant, from the messages'
stamps (:mod:`.summary`): the executor's state (RUNNING in green, WAITING = holding in red,
STOPPING in blue), how much playback is buffered, whether a request is in flight ("policy
computing chunk N") and when a chunk arrives, the cube's lift and the pick's success; a
timeline of the whole run runs underneath with the same colours, chunk arrivals and a
cursor. A query to the policy (``executor/query``, ``./run demo --ask``) is captioned from the
executor's status: the question while the arm holds for it, then the answer for a few seconds
(the CLI prints them too). The output is an animated WebP (``.webp``, lossy; what browsers
and a README on GitHub show inline) or GIF (``.gif``).
"""

import argparse
import bisect
import dataclasses
import os
import pathlib
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.analysis.summary import (
    stamped, start_ns, task_result, turnarounds)
from remote_inference_py.executor.query import read_status

SIDE = 'side'
CAMERA = SIDE
# A free camera beside the arm, which shows the gripper and the cube in profile (the scene's
# ``front`` camera looks along the arm, which hides the cube while it is grasped).
SIDE_VIEW = {'lookat': (0.2, 0.02, 0.06), 'distance': 0.62, 'azimuth': 120.0,
             'elevation': -22.0}
# Coarser visual meshes than the live camera's (SimConfig.mesh_cell_m, 4 mm): a frame renders
# ~30 % faster on a CPU (Mesa llvmpipe) and looks the same at this size.
MESH_CELL_M = 0.006
STATE_RGB = {'RUNNING': (44, 160, 44), 'WAITING': (214, 39, 40), 'STOPPING': (31, 119, 180),
             'STOPPED': (110, 110, 110), 'READY': (150, 150, 150), 'IDLE': (150, 150, 150),
             'FAULT': (0, 0, 0)}
STATE_TEXT = {'WAITING': 'WAITING (holding)', 'STOPPING': 'STOPPING (going home)'}
ARRIVAL_FLASH_S = 0.5
ANSWER_SHOW_S = 5.0       # an answer stays on the frames this long
QUERY_RGB = (214, 39, 40), (75, 60, 150)   # asking (holding, as WAITING), answered
STRIP_HEIGHT = 62
SUFFIXES = ('.webp', '.gif')


@dataclasses.dataclass
class FrameInfo:
    """What one frame shows besides the scene."""

    time_s: float
    state: str
    buffered_s: float
    in_flight: Optional[Tuple[int, float]]     # (chunk number, seconds computing so far)
    arrived: Optional[int]                     # chunk number that just arrived
    lift_m: float
    picked_at_s: Optional[float]
    query: Tuple[str, ...] = ()                # caption lines of a query; () when none
    answered: bool = False                     # the query's answer is on the caption


@dataclasses.dataclass
class QueryMark:
    """One query to the policy as the executor's status showed it [s on the timeline]."""

    asked_s: float
    kind: str
    text: str
    ended_s: Optional[float] = None            # the hold for the text work ended
    answer: Optional[str] = None               # None: no answer (failed, cancelled)


class Timeline:
    """Everything a frame needs, looked up by time [s since the executor's first command]."""

    def __init__(self, topics):
        """Index the recorded topics by their stamps; ValueError if there is nothing to show."""
        self.zero = start_ns(topics)
        joints = stamped(topics.get('/joint_states', []))
        if not joints:
            raise ValueError('the recording has no /joint_states: nothing to render')
        self.joint_names = list(joints[0][1].name)
        self.joint_t = [self.seconds(t) for t, _ in joints]
        self.joints = [np.asarray(m.position, dtype=float) for _, m in joints]
        poses = stamped(topics.get('/sim/cube_pose', []))
        self.cube_t = np.array([self.seconds(t) for t, _ in poses])
        self.cube = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z,
                               m.pose.orientation.w, m.pose.orientation.x,
                               m.pose.orientation.y, m.pose.orientation.z] for _, m in poses])
        rest = self.cube[self.cube_t < 0, 2] if len(poses) else []
        self.rest_z = float(rest[-1]) if len(rest) else (float(self.cube[0, 2]) if len(poses)
                                                         else 0.0)
        statuses = stamped(topics.get('/executor/status', []))
        self.status_t = [self.seconds(t) for t, _ in statuses]
        self.statuses = [(m.state_name, float(m.buffered_playback_s)) for _, m in statuses]
        self.queries = self._queries(statuses)
        self.requests = [(self.seconds(t.sent_ns), self.seconds(t.ready_ns))
                         for t in turnarounds(topics)]
        result = task_result(topics)
        self.picked_at = result.completion_time_s if result and result.success else None
        self.start = min(0.0, self.joint_t[0])
        self.end = self.joint_t[-1]

    def _queries(self, statuses):
        marks, previous = [], None
        for stamp, msg in statuses:
            if msg.message == previous:
                continue   # the periodic status repeats the message
            previous = msg.message
            read = read_status(msg.message)
            t = self.seconds(stamp)
            open_mark = marks[-1] if marks and marks[-1].ended_s is None else None
            if read is not None and read[0] == 'asked':
                if open_mark is not None:
                    open_mark.ended_s = t
                marks.append(QueryMark(t, read[1], read[2]))
            elif open_mark is not None and read is not None:
                open_mark.ended_s, open_mark.answer = t, read[1]
            elif open_mark is not None and ('resuming after' in msg.message
                                            or msg.state_name != 'WAITING'):
                open_mark.ended_s = t
        return marks

    def query_at(self, t):
        """Return (caption lines, answered) for a query asked or answered around ``t``."""
        marks = [m for m in self.queries if m.asked_s <= t]
        if not marks:
            return (), False
        mark = marks[-1]
        if mark.ended_s is None or t < mark.ended_s:
            return ('holding: the policy is asked', f'{mark.kind}: {mark.text}'), False
        if mark.answer is not None and t < mark.ended_s + ANSWER_SHOW_S:
            return (f'{mark.kind}: {mark.text}', f'answer: {mark.answer}'), True
        return (), False

    def seconds(self, stamp_ns):
        """Return a stamp as seconds since the executor's first command."""
        return (stamp_ns - self.zero) * 1e-9

    def joints_at(self, t):
        """Return the measured joint positions at ``t`` (the latest sample not after it)."""
        index = max(bisect.bisect_right(self.joint_t, t) - 1, 0)
        return self.joints[index]

    def cube_at(self, t):
        """Return the cube's (x, y, z, qw, qx, qy, qz) at ``t``, interpolated; None if none."""
        if not len(self.cube_t):
            return None
        index = int(np.searchsorted(self.cube_t, t))
        if index <= 0:
            return self.cube[0]
        if index >= len(self.cube_t):
            return self.cube[-1]
        t0, t1 = self.cube_t[index - 1], self.cube_t[index]
        w = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
        a, b = self.cube[index - 1], self.cube[index]
        if np.dot(a[3:], b[3:]) < 0:
            b = np.concatenate([b[:3], -b[3:]])
        value = (1 - w) * a + w * b
        value[3:] /= np.linalg.norm(value[3:]) or 1.0
        return value

    def info(self, t):
        """Return the :class:`FrameInfo` at ``t``."""
        index = bisect.bisect_right(self.status_t, t) - 1
        state, buffered = self.statuses[index] if index >= 0 else ('IDLE', 0.0)
        in_flight, arrived = None, None
        for number, (sent, ready) in enumerate(self.requests, start=1):
            if sent <= t < ready:
                in_flight = (number, t - sent)
            elif ready <= t < ready + ARRIVAL_FLASH_S:
                arrived = number
        cube = self.cube_at(t)
        lift = float(cube[2]) - self.rest_z if cube is not None else 0.0
        picked = self.picked_at if self.picked_at is not None and t >= self.picked_at else None
        query, answered = self.query_at(t)
        return FrameInfo(t, state, buffered, in_flight, arrived, lift, picked, query, answered)

    def state_spans(self):
        """Return [(state, start s, end s)] over the run."""
        spans = []
        for t, (state, _) in zip(self.status_t, self.statuses):
            if spans and spans[-1][0] == state:
                continue
            if spans:
                spans[-1][2] = t
            spans.append([state, t, t])
        if spans:
            spans[-1][2] = max(spans[-1][2], self.end)
        return spans


class SceneRenderer:
    """The simulator's SO-101 scene, posed from recorded values and rendered offscreen."""

    def __init__(self, joint_names: Sequence[str], width: int, height: int,
                 camera: str = CAMERA):
        """Compile the scene with simplified meshes (about 1 s) and open a renderer."""
        os.environ.setdefault('MUJOCO_GL', 'egl')
        import mujoco
        from remote_inference_py.hardware.sim_scene import (
            build_spec, CUBE_BODIES, scene_path, simplify_meshes)
        self._mujoco = mujoco
        spec = build_spec(scene_path())
        simplify_meshes(spec, MESH_CELL_M)
        model = spec.compile()
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        model.vis.quality.shadowsize = 0
        self.model, self.data = model, mujoco.MjData(model)
        self.qpos = []
        for name in joint_names:
            joint = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            self.qpos.append(int(model.jnt_qposadr[joint]) if joint >= 0 else -1)
        cube = next(n for n in CUBE_BODIES
                    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) >= 0)
        self.cube_qpos = int(model.jnt_qposadr[model.body_jntadr[model.body(cube).id]])
        if camera == SIDE:
            self.camera = mujoco.MjvCamera()
            self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
            self.camera.lookat[:] = SIDE_VIEW['lookat']
            for key in ('distance', 'azimuth', 'elevation'):
                setattr(self.camera, key, SIDE_VIEW[key])
        elif mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) >= 0:
            self.camera = camera
        else:
            names = [model.camera(i).name for i in range(model.ncam)]
            raise ValueError(f'camera {camera!r} is neither {SIDE!r} nor a camera of the '
                             f'SO-101 scene ({", ".join(names)})')
        self.renderer = mujoco.Renderer(model, height, width)
        for flag in ('mjRND_SHADOW', 'mjRND_SKYBOX', 'mjRND_REFLECTION'):
            self.renderer.scene.flags[getattr(mujoco.mjtRndFlag, flag)] = 0

    def render(self, joints, cube) -> np.ndarray:
        """Return an (height, width, 3) uint8 frame of the arm at ``joints`` and the cube."""
        for address, value in zip(self.qpos, joints):
            if address >= 0:
                self.data.qpos[address] = value
        if cube is not None:
            self.data.qpos[self.cube_qpos:self.cube_qpos + 7] = cube
        self._mujoco.mj_kinematics(self.model, self.data)
        self._mujoco.mj_camlight(self.model, self.data)
        self.renderer.update_scene(self.data, camera=self.camera)
        return self.renderer.render()

    def close(self):
        """Release the rendering context."""
        self.renderer.close()


def _fonts():
    from PIL import ImageFont
    try:
        return ImageFont.load_default(15), ImageFont.load_default(12)
    except TypeError:   # Pillow without FreeType: one bitmap size
        font = ImageFont.load_default()
        return font, font


def decorate(frame: np.ndarray, info: FrameInfo, timeline: Timeline, fonts=None):
    """Return a PIL image: the frame with its marks and the run's timeline underneath."""
    from PIL import Image, ImageDraw
    big, small = fonts or _fonts()
    height, width = frame.shape[:2]
    image = Image.new('RGB', (width, height + STRIP_HEIGHT), (255, 255, 255))
    image.paste(Image.fromarray(frame), (0, 0))
    draw = ImageDraw.Draw(image)
    colour = STATE_RGB.get(info.state, (90, 90, 90))

    def label(xy, text, fill, font, anchor='la'):
        box = draw.textbbox(xy, text, font=font, anchor=anchor)
        draw.rectangle((box[0] - 4, box[1] - 3, box[2] + 4, box[3] + 3), fill=fill)
        draw.text(xy, text, fill=(255, 255, 255), font=font, anchor=anchor)

    label((8, 8), STATE_TEXT.get(info.state, info.state), colour, big)
    label((8, 34), f't {info.time_s:4.1f} s   buffer {info.buffered_s:.2f} s', (60, 60, 60),
          small)
    if info.in_flight is not None:
        number, elapsed = info.in_flight
        label((width - 8, 8), f'policy: chunk {number} {elapsed:.2f} s', (220, 140, 0), big,
              'ra')
    if info.arrived is not None:
        label((width - 8, 34), f'chunk {info.arrived} arrived', (20, 120, 20), big, 'ra')
        draw.rectangle((0, 0, width - 1, height - 1), outline=(20, 160, 20), width=4)
    for row, line in enumerate(info.query):   # the query, under the state and the buffer
        label((8, 60 + 20 * row), _fit(draw, line, small, width - 24), QUERY_RGB[info.answered],
              small)
    cube = f'cube lifted {max(info.lift_m, 0.0) * 100:.1f} cm'
    if info.picked_at_s is not None:
        label((8, height - 10), f'{cube}   picked at {info.picked_at_s:.1f} s',
              (20, 120, 20), big, 'ld')
    else:
        label((8, height - 10), cube, (60, 60, 60), small, 'ld')
    _draw_strip(draw, timeline, info.time_s, width, height, small)
    return image


def _fit(draw, text, font, width):
    """Return ``text``, shortened with an ellipsis to fit ``width`` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + '...', font=font) > width:
        text = text[:-1]
    return text + '...'


def _draw_strip(draw, timeline, now, width, top, font):
    """Draw the run's timeline: state bar, requests in flight, chunk arrivals, a cursor."""
    left, right = 8, width - 8
    span = max(timeline.end - timeline.start, 1e-3)

    def x(t):
        return left + (right - left) * (min(max(t, timeline.start), timeline.end)
                                        - timeline.start) / span
    bar = (top + 22, top + 36)
    draw.rectangle((left, bar[0], right, bar[1]), fill=(225, 225, 225))
    for state, begin, end in timeline.state_spans():
        draw.rectangle((x(begin), bar[0], max(x(end), x(begin) + 1), bar[1]),
                       fill=STATE_RGB.get(state, (150, 150, 150)))
    for sent, ready in timeline.requests:   # requests in flight, above the bar
        draw.rectangle((x(sent), top + 15, max(x(ready), x(sent) + 1), top + 19),
                       fill=(220, 140, 0))
        draw.polygon([(x(ready) - 4, bar[1] + 8), (x(ready) + 4, bar[1] + 8),
                      (x(ready), bar[1] + 1)], fill=(0, 0, 0))
    if timeline.picked_at is not None:
        draw.text((x(timeline.picked_at), top + 1), 'picked', fill=(20, 120, 20), font=font,
                  anchor='ma')
    draw.line((x(now), top + 12, x(now), bar[1] + 9), fill=(0, 0, 0), width=2)
    x_text = left   # the legend, each word in its colour
    for word, fill in (('running', STATE_RGB['RUNNING']), ('waiting', STATE_RGB['WAITING']),
                       ('stopping', STATE_RGB['STOPPING']), ('policy computing', (220, 140, 0)),
                       ('chunk arrived', (0, 0, 0))):
        if word == 'chunk arrived':
            draw.polygon([(x_text, bar[1] + 20), (x_text + 8, bar[1] + 20),
                          (x_text + 4, bar[1] + 12)], fill=fill)
            x_text += 11
        draw.text((x_text, bar[1] + 10), word, fill=fill, font=font)
        x_text = draw.textbbox((x_text, bar[1] + 10), word, font=font)[2] + 12


def write_video(topics, path, fps: float = 8.0, width: int = 400, height: int = 300,
                quality: int = 60, camera: str = CAMERA) -> pathlib.Path:
    """Render the run to an animated WebP or GIF at ``path``; return it.

    ValueError names what is wrong: an unknown suffix, a bad size or rate, a bag without
    joint states.
    """
    path = pathlib.Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise ValueError(f'video {str(path)!r}: the name must end in {" or ".join(SUFFIXES)}')
    if not (0 < fps <= 60):
        raise ValueError(f'video frame rate {fps!r} must be in (0, 60] frames a second')
    if not (16 <= width <= 1920 and 16 <= height <= 1080):
        raise ValueError(f'video size {width}x{height} must be within 16x16 to 1920x1080')
    if not (1 <= quality <= 100):
        raise ValueError(f'video quality {quality!r} must be within 1 to 100')
    timeline = Timeline(topics)
    renderer = SceneRenderer(timeline.joint_names, width, height, camera)
    fonts = _fonts()
    images = []
    try:
        times = np.arange(timeline.start, timeline.end + 1e-9, 1.0 / fps)
        for t in times:
            frame = renderer.render(timeline.joints_at(t), timeline.cube_at(t))
            images.append(decorate(frame, timeline.info(t), timeline, fonts))
    finally:
        renderer.close()
    options = {'save_all': True, 'append_images': images[1:], 'loop': 0,
               'duration': int(round(1000 / fps))}
    if path.suffix.lower() == '.webp':
        options.update(quality=quality, method=4)
    else:
        images = [im.convert('P', palette=1, colors=128) for im in images]
        options['append_images'] = images[1:]
    images[0].save(path, **options)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    """Render a bag's run; exit 1 with a message naming the problem if it cannot."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('bag', help='rosbag2 folder recorded on the simulated arm')
    parser.add_argument('--out', default='', help='video path (.webp or .gif; default '
                        'BAG/run.webp)')
    parser.add_argument('--namespace', default='', help='robot namespace, e.g. /robot1')
    parser.add_argument('--fps', type=float, default=8.0)
    parser.add_argument('--width', type=int, default=400)
    parser.add_argument('--height', type=int, default=300)
    parser.add_argument('--quality', type=int, default=60, help='WebP quality, 1-100')
    parser.add_argument('--camera', default=CAMERA,
                        help=f'{SIDE} (beside the arm) or a camera of the scene, e.g. front')
    options = parser.parse_args(argv)
    from remote_inference_py.analysis.bag import read_bag
    out = options.out or str(pathlib.Path(options.bag) / 'run.webp')
    try:
        topics = read_bag(options.bag, options.namespace)
        path = write_video(topics, out, options.fps, options.width, options.height,
                           options.quality, options.camera)
    except (ValueError, OSError) as error:
        print(f'video: {error}', file=sys.stderr)
        return 1
    print(f'video: {path} ({path.stat().st_size / 1e3:.0f} kB)')
    for line in query_lines(Timeline(topics)):
        print(f'video: {line}')
    return 0


def query_lines(timeline: Timeline) -> List[str]:
    """Return one line per query the frames caption: when, what was asked, the answer."""
    lines = []
    for mark in timeline.queries:
        answer = repr(mark.answer) if mark.answer is not None else 'no answer'
        lines.append(f'query at {mark.asked_s:.1f} s: {mark.kind} {mark.text!r} -> {answer}')
    return lines


if __name__ == '__main__':
    sys.exit(main())
