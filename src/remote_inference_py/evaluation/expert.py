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
The scripted expert for the pick-the-cube task, and a do-nothing policy, as policy runtimes.

Both are served by the policy server like any other policy (``policy_type: python``)::

    policy_type: python
    checkpoint: remote_inference_py.evaluation.expert:expert_runtime   # or :idle_runtime

**The expert** (:class:`PickExpert`) maps one observation to one chunk of joint targets: the
measured joint positions (``observation.state``, SI radians) and the cube pose
(``observation.cube_pose``: x, y, z [m] and the quaternion qx, qy, qz, qw, from the
simulator's ``sim/cube_pose``). The cube pose is ground truth no real robot has, so the
manifest declares it ``kind: privileged``. Each chunk is planned from scratch (the expert
keeps no state between requests), so it re-plans from wherever the arm and the cube are:

1. *approach*: the point between the jaw pads moves in a straight line to ``hover_m`` above
   the cube, jaws open (a grasp point below the hover height first rises);
2. *descend* to the cube's centre, then *settle* briefly;
3. *close* the jaws for ``close_s``;
4. *lift* the grasp point ``lift_m`` above the cube's resting height and hold it there.

The phase it starts from is read off the observation: gripper closed with the cube between
the jaws -> lift; cube between the open jaws -> close; gripper closed on nothing (a missed
grasp, or the half-closed start pose) -> open and approach again; jaws above the cube ->
descend; else approach. Waypoints are sampled at the action period along the segments at
their speeds, starting ``lead_s`` along the path (a position-controlled arm lags its targets;
without the lead, frequent re-planning from the measured pose would stall in the joints'
friction), and solved with Levenberg-Marquardt IK (as ``lerobot_env_so101.ik_control``
does) on a private copy of the sim's SO-101 model every few steps, joints interpolated in
between: grasp point on the waypoint, gripper pointing straight down, jaws closing across
two faces of the cube (its yaw from the quaternion). The pads are exactly as far apart as
the cube is wide, so the grasp point is offset ``fixed_jaw_clearance_m`` toward the fixed
jaw. The position actuators only have a proportional gain, so each arm target is offset by
the gravity torque divided by the gain: the arm settles where the plan says instead of
sagging a few centimetres.

**Text.** The expert also answers the executor's queries while the arm holds (question,
subtask, steering; docs/ask.md), from the same observation, with scripted
sentences (:mod:`.sim_answers`): where the cube is and whether it is held, and its next phase
as the subtask.

**The do-nothing policy** (:class:`IdleRuntime`) returns the observed pose for every step:
the arm holds still and the cube never moves, so it scores 0.
"""

import dataclasses
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from remote_inference_py.evaluation import sim_answers
from remote_inference_py.evaluation.task import cube_rest_z, JOINT_NAMES
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import PolicyRuntime, RuntimeOptions, TextAnswer

SEMANTICS = 'si-radians-v1'
FPS = 30.0
CHUNK_LENGTH = 50
STATE_FEATURE = 'observation.state'
CUBE_FEATURE = 'observation.cube_pose'
CUBE_TOPIC = 'sim/cube_pose'
CUBE_POSE_NAMES = ('x', 'y', 'z', 'qx', 'qy', 'qz', 'qw')
ARM_JOINTS = JOINT_NAMES[:5]
GRIPPER = JOINT_NAMES.index('gripper')
SITE = 'gripperframe'
APPROACH_AXIS = 0     # gripperframe x runs out of the gripper along the jaws
JAW_AXIS = 2          # gripperframe z runs from the fixed jaw toward the moving jaw
GRASP_JAW_ANGLE = 0.46  # gripper angle at which the pads are parallel, 40 mm apart [rad]
DOWN = np.array([0.0, 0.0, -1.0])
ORIENTATION_WEIGHT = 0.1   # metres of position error per radian of tilt
IK_DAMPING = 0.01
IK_TOLERANCE = 5e-4   # [m] (and 5 mrad of tilt)
TILT_AXES = [1, 2]   # the gripperframe axes other than the approach axis
KEYFRAME_STEPS = 4   # IK every this many steps (and at every segment change), joints lerp


@dataclasses.dataclass(frozen=True)
class ExpertSettings:
    """Geometry, speeds and timings of the scripted pick."""

    hover_m: float = 0.06          # grasp point above the cube centre while approaching [m]
    grasp_dz_m: float = 0.0        # grasp point relative to the cube centre when closing [m]
    lift_m: float = 0.09           # grasp point above the cube's resting centre after lift [m]
    approach_speed: float = 0.12   # [m/s]
    descend_speed: float = 0.05    # [m/s]
    lift_speed: float = 0.06       # [m/s]
    settle_s: float = 0.3          # pause at the bottom before closing [s]
    close_s: float = 0.6           # jaws closing before the lift starts [s]
    gripper_open: float = 1.2      # [rad]
    gripper_closed: float = -0.1   # [rad] below contact, so the jaws squeeze
    aligned_xy_m: float = 0.01     # jaws this close above the cube (xy) may descend [m]
    in_jaws_xy_m: float = 0.015    # grasp point this close to its target (xy): cube in the jaws
    in_jaws_z_m: float = 0.012     # ... and this close in height: time to close [m]
    held_z_m: float = 0.03         # closed jaws this close to the cube's height hold it [m]
    closed_below: float = 0.75     # gripper angle under which the jaws count as closed [rad]
    fixed_jaw_clearance_m: float = 0.008  # fixed pad beside the cube when closing [m]
    lead_s: float = 0.1            # plans start this far along the path: the arm lags [s]


@dataclasses.dataclass(frozen=True)
class Segment:
    """One piece of the plan: move the grasp point to ``target`` (or wait) with a gripper."""

    target: np.ndarray
    gripper: float
    speed: float = 0.0          # [m/s]; 0 = stay at ``target`` for ``duration``
    duration: float = 0.0       # [s] for waits


class ArmKinematics:
    """Forward and inverse kinematics of the sim's SO-101 model (no physics is stepped)."""

    def __init__(self):
        """Compile the sim's scene once (about 0.3 s) and find the joints and the site."""
        import mujoco
        from remote_inference_py.hardware.sim_scene import compile_scene, import_scene_module
        grasp_point_offset = import_scene_module('mujoco_env').grasp_point_offset
        self._mujoco = mujoco
        self.model = compile_scene()
        self.data = mujoco.MjData(self.model)
        model = self.model
        self.site = model.site(SITE).id
        joints = [model.joint(name).id for name in JOINT_NAMES]
        self.qpos = np.array([model.jnt_qposadr[j] for j in joints])
        self.dofs = np.array([model.jnt_dofadr[j] for j in joints])
        self.arm_qpos = self.qpos[:5]
        self.lower = model.jnt_range[joints, 0].copy()
        self.upper = model.jnt_range[joints, 1].copy()
        gains = []
        for joint in joints:
            actuator = next(i for i in range(model.nu) if model.actuator_trnid[i, 0] == joint)
            gains.append(model.actuator_gainprm[actuator, 0])
        self.gains = np.array(gains)
        self.offset = grasp_point_offset(model, self.site)

    def _pose(self, q: np.ndarray) -> None:
        """Set the joints and compute the kinematics (no collision detection, no dynamics)."""
        self.data.qpos[self.qpos[:len(q)]] = q
        self._mujoco.mj_kinematics(self.model, self.data)
        self._mujoco.mj_comPos(self.model, self.data)

    def grasp_point(self, q: np.ndarray) -> np.ndarray:
        """Return the point between the jaw pads [m] for joint positions ``q``."""
        from remote_inference_py.hardware.sim_scene import import_scene_module
        self._pose(q)
        return import_scene_module('ik_control').control_point(self.data, self.site,
                                                               self.offset)

    def jaw_direction(self, q: np.ndarray, target: np.ndarray,
                      directions: Sequence[np.ndarray]) -> np.ndarray:
        """Pick the face normal the jaws should close along: nearest to where they point now.

        The reference is the jaw axis of pose ``q`` projected on the table when the gripper
        points roughly down, else the direction from the arm's base to ``target``.
        """
        self._pose(q)
        jaw = self.data.site_xmat[self.site].reshape(3, 3)[:, JAW_AXIS].copy()
        jaw[2] = 0.0
        if np.linalg.norm(jaw) < 0.5:
            jaw = np.array([target[0], target[1], 0.0])
        jaw /= np.linalg.norm(jaw) or 1.0
        return max(directions, key=lambda direction: float(direction @ jaw))

    def solve(self, target: np.ndarray, seed: np.ndarray, jaw: np.ndarray,
              iterations: int = 12) -> np.ndarray:
        """Return arm joints (5): grasp point at ``target``, pointing down, jaws along ``jaw``.

        Levenberg-Marquardt (as ``lerobot_env_so101.ik_control``, on kinematics only) on six
        rows: the grasp point's position, the two tilt components of the approach axis, and
        the yaw of the jaw axis about the vertical toward the horizontal unit vector ``jaw``.
        """
        mujoco = self._mujoco
        model, data = self.model, self.data
        target = np.asarray(target, dtype=np.float64)
        q = np.array(seed[:5], dtype=np.float64)
        jac_pos = np.zeros((3, model.nv))
        jac_rot = np.zeros((3, model.nv))
        columns = self.dofs[:5]
        body = model.site_bodyid[self.site]
        for _ in range(iterations):
            data.qpos[self.arm_qpos] = q
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            axes = data.site_xmat[self.site].reshape(3, 3)
            point = data.site_xpos[self.site] + axes @ self.offset
            mujoco.mj_jac(model, data, jac_pos, jac_rot, point, body)
            axis = axes[:, APPROACH_AXIS]
            rotation = np.array([-axis[1], axis[0], 0.0])   # axis x DOWN
            sin_tilt = math.hypot(axis[0], axis[1])
            if sin_tilt > 1e-9:
                rotation *= math.atan2(sin_tilt, -axis[2]) / sin_tilt
            tangent = axes[:, TILT_AXES].T
            jaw_axis = axes[:, JAW_AXIS]
            yaw_error = math.atan2(jaw_axis[0] * jaw[1] - jaw_axis[1] * jaw[0],
                                   jaw_axis[0] * jaw[0] + jaw_axis[1] * jaw[1])
            error = np.concatenate([target - point, ORIENTATION_WEIGHT * (tangent @ rotation),
                                    [ORIENTATION_WEIGHT * yaw_error]])
            if error @ error < IK_TOLERANCE ** 2:
                break
            jac = np.vstack([jac_pos[:, columns],
                             ORIENTATION_WEIGHT * (tangent @ jac_rot[:, columns]),
                             ORIENTATION_WEIGHT * jac_rot[2:3, columns]])
            step = np.linalg.solve(jac.T @ jac + IK_DAMPING * np.eye(5), jac.T @ error)
            q = np.clip(q + step, self.lower[:5], self.upper[:5])
        return q

    def gravity_offset(self, q: np.ndarray) -> np.ndarray:
        """Return the target offset [rad] that cancels gravity sag at pose ``q`` (6 joints)."""
        self._pose(q)
        self.data.qvel[:] = 0.0
        self._mujoco.mj_comVel(self.model, self.data)
        torque = np.zeros(self.model.nv)
        self._mujoco.mj_rne(self.model, self.data, 0, torque)
        return torque[self.dofs] / self.gains


def cube_yaw_directions(quaternion_xyzw: Sequence[float]) -> List[np.ndarray]:
    """Return the four horizontal face normals of a cube (its ±x and ±y axes, flattened)."""
    qx, qy, qz, qw = (float(v) for v in quaternion_xyzw)
    norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw) or 1.0
    qx, qy, qz, qw = qx / norm, qy / norm, qz / norm, qw / norm
    axis_x = np.array([1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy + qw * qz), 0.0])
    axis_y = np.array([2 * (qx * qy - qw * qz), 1 - 2 * (qx * qx + qz * qz), 0.0])
    out = []
    for axis in (axis_y, axis_x):
        length = np.linalg.norm(axis)
        if length < 1e-6:   # cube on its side: that axis is vertical; use the other one
            continue
        out += [axis / length, -axis / length]
    return out or [np.array([0.0, 1.0, 0.0]), np.array([0.0, -1.0, 0.0])]


class PickExpert:
    """Plan chunks of joint targets that pick up the cube (see the module docstring)."""

    def __init__(self, settings: ExpertSettings = ExpertSettings(),
                 kinematics: Optional[ArmKinematics] = None):
        """Use ``settings``; build the kinematics unless given."""
        self.settings = settings
        self.kin = kinematics or ArmKinematics()
        self.last_phase = ''

    def grasp_target(self, cube: np.ndarray, jaw: np.ndarray) -> np.ndarray:
        """Return where the grasp point closes on the cube [m].

        The pads are 40 mm apart when parallel, exactly the cube's width, so the point between
        them is shifted toward the fixed jaw by ``fixed_jaw_clearance_m``: the fixed pad comes
        down beside the cube instead of on its edge, and the moving jaw pushes the cube over.
        """
        s = self.settings
        return (np.asarray(cube[:3], dtype=np.float64) + np.array([0.0, 0.0, s.grasp_dz_m])
                - s.fixed_jaw_clearance_m * jaw)

    def phase(self, q: np.ndarray, cube: np.ndarray, jaw: np.ndarray) -> str:
        """Return the phase the observation is in: approach, descend, close, lift, reopen."""
        s = self.settings
        grasp = self.kin.grasp_point(q)
        offset = grasp - self.grasp_target(cube, jaw)
        near_xy = np.linalg.norm(offset[:2]) < s.in_jaws_xy_m
        if q[GRIPPER] < s.closed_below:
            held = near_xy and abs(grasp[2] - cube[2]) < s.held_z_m
            return 'lift' if held else 'reopen'
        if near_xy and abs(offset[2]) < s.in_jaws_z_m:
            return 'close'
        if (np.linalg.norm(offset[:2]) < s.aligned_xy_m
                and grasp[2] < cube[2] + s.hover_m + 0.01):
            return 'descend'
        return 'approach'

    def segments(self, phase: str, grasp: np.ndarray, cube: np.ndarray,
                 jaw: np.ndarray) -> List[Segment]:
        """Return the rest of the pick from ``phase`` on, as segments of the grasp point."""
        s = self.settings
        bottom = self.grasp_target(cube, jaw)
        hover = bottom + np.array([0.0, 0.0, s.hover_m - s.grasp_dz_m])
        lifted_z = cube_rest_z() + s.lift_m

        def lift(point):
            return np.array([point[0], point[1], lifted_z])

        if phase == 'lift':
            return [Segment(lift(grasp), s.gripper_closed, speed=s.lift_speed)]
        closing = [Segment(bottom, s.gripper_closed, duration=s.close_s),
                   Segment(lift(bottom), s.gripper_closed, speed=s.lift_speed)]
        if phase == 'close':
            return [Segment(bottom, s.gripper_open, speed=s.descend_speed)] + closing
        plan = [Segment(bottom, s.gripper_open, speed=s.descend_speed),
                Segment(bottom, s.gripper_open, duration=s.settle_s)] + closing
        if phase == 'descend':
            return plan
        plan.insert(0, Segment(hover, s.gripper_open, speed=s.approach_speed))
        if phase == 'reopen' or grasp[2] < hover[2] - 0.01:
            rise = np.array([grasp[0], grasp[1], max(grasp[2], hover[2])])
            plan.insert(0, Segment(rise, s.gripper_open, speed=s.descend_speed))
        return plan

    @staticmethod
    def sample(segments: Sequence[Segment], start: np.ndarray, steps: int, period: float,
               lead_s: float = 0.0) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``steps`` grasp points [m], gripper targets and segment indices.

        Step ``i`` is the plan ``lead_s + (i + 1) * period`` after ``start``.
        """
        points = np.empty((steps, 3))
        grippers = np.empty(steps)
        which = np.full(steps, len(segments))
        position = np.asarray(start, dtype=np.float64)
        index = 0
        carry = lead_s   # time already spent in the current segment when a step falls due
        for number, segment in enumerate(segments):
            if segment.speed > 0:
                distance = float(np.linalg.norm(segment.target - position))
                duration = distance / segment.speed
            else:
                duration = segment.duration
            origin = position
            time_s = carry + period
            while index < steps and time_s <= duration + 1e-9:
                fraction = 1.0 if duration <= 0 else time_s / duration
                points[index] = origin + (segment.target - origin) * fraction
                grippers[index] = segment.gripper
                which[index] = number
                index += 1
                time_s += period
            carry = time_s - period - duration
            position = np.asarray(segment.target, dtype=np.float64)
            if index >= steps:
                break
        last_gripper = segments[-1].gripper if segments else 0.0
        while index < steps:
            points[index] = position
            grippers[index] = last_gripper
            index += 1
        return points, grippers, which

    def plan(self, q: np.ndarray, cube_pose: np.ndarray, steps: int = CHUNK_LENGTH,
             fps: float = FPS) -> np.ndarray:
        """Return ``[steps, 6]`` joint targets [rad] from measured ``q`` and the cube pose."""
        q = np.asarray(q, dtype=np.float64)
        cube_pose = np.asarray(cube_pose, dtype=np.float64)
        jaw = self.kin.jaw_direction(q, cube_pose[:3], cube_yaw_directions(cube_pose[3:7]))
        grasp = self.kin.grasp_point(q)
        phase = self.phase(q, cube_pose, jaw)
        self.last_phase = phase
        segments = self.segments(phase, grasp, cube_pose, jaw)
        points, grippers, which = self.sample(segments, grasp, steps, 1.0 / fps,
                                              self.settings.lead_s)
        keys = sorted({0, steps - 1, *range(0, steps, KEYFRAME_STEPS),
                       *(np.flatnonzero(np.diff(which)) + 1)})
        arm = q[:5]
        solved = []
        for key in keys:
            arm = self.kin.solve(points[key], arm, jaw)
            solved.append(arm)
        solved = np.array(solved)
        targets = np.empty((steps, len(JOINT_NAMES)))
        for joint in range(5):
            targets[:, joint] = np.interp(np.arange(steps), keys, solved[:, joint])
        targets[:, GRIPPER] = grippers
        targets += self._gravity(targets)
        return np.clip(targets, self.kin.lower, self.kin.upper)

    def _gravity(self, targets: np.ndarray) -> np.ndarray:
        """Return per-step gravity offsets (computed at a few poses and interpolated)."""
        keys = sorted({0, len(targets) - 1, *range(0, len(targets), 10)})
        offsets = np.array([self.kin.gravity_offset(targets[k]) for k in keys])
        out = np.empty_like(targets)
        for joint in range(targets.shape[1]):
            out[:, joint] = np.interp(np.arange(len(targets)), keys, offsets[:, joint])
        out[:, GRIPPER] = 0.0
        return out


# Policy runtimes.

def _state_feature() -> dict:
    return {'name': STATE_FEATURE, 'kind': 'state', 'shape': [len(JOINT_NAMES)],
            'dtype': 'float32', 'names': list(JOINT_NAMES), 'semantics': SEMANTICS}


def expert_spec_dict() -> dict:
    """Return the expert's manifest as plain data (the cube pose is a privileged feature)."""
    return {
        'policy': 'scripted_pick_expert', 'semantics': SEMANTICS, 'fps': FPS,
        'chunk_length': CHUNK_LENGTH, 'max_batch_size': 1,
        'action': {'names': list(JOINT_NAMES)},
        'features': [
            _state_feature(),
            {'name': CUBE_FEATURE, 'kind': 'privileged', 'shape': [len(CUBE_POSE_NAMES)],
             'dtype': 'float64', 'names': list(CUBE_POSE_NAMES),
             'message': 'geometry_msgs/PoseStamped', 'topic': CUBE_TOPIC},
        ]}


class ExpertRuntime(PolicyRuntime):
    """The scripted pick expert behind the policy server's runtime interface."""

    kind = 'python'
    text_commands = ('question', 'subtask', 'steering')

    def __init__(self, settings: ExpertSettings = ExpertSettings(),
                 expert: Optional[PickExpert] = None):
        """Declare the state and the privileged cube pose; build the expert."""
        spec = spec_from_dict(expert_spec_dict(), 'scripted pick expert')
        super().__init__(spec, 'cpu', 'scripted pick expert (remote_inference_py.evaluation)')
        self.expert = expert or PickExpert(settings)

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Plan one chunk per batch row, in SI radians."""
        states = np.asarray(inputs[STATE_FEATURE], dtype=np.float64)
        cubes = np.asarray(inputs[CUBE_FEATURE], dtype=np.float64)
        chunks = [self.expert.plan(state, cube, self.spec.chunk_length, self.spec.fps)
                  for state, cube in zip(states, cubes)]
        return np.stack(chunks).astype(np.float32)

    def generate_text(self, kind: str, text: str, task: str,
                      inputs: Dict[str, np.ndarray]) -> TextAnswer:
        """Answer from the observed cube pose and joints (:mod:`.sim_answers`)."""
        q = np.asarray(inputs[STATE_FEATURE], dtype=np.float64)
        cube = np.asarray(inputs[CUBE_FEATURE], dtype=np.float64)
        if kind == 'question':
            held = sim_answers.cube_held(cube, q[GRIPPER] < self.expert.settings.closed_below)
            return TextAnswer(sim_answers.answer_question(text, cube, held))
        jaw = self.expert.kin.jaw_direction(q, cube[:3], cube_yaw_directions(cube[3:7]))
        return TextAnswer(sim_answers.subtask(self.expert.phase(q, cube, jaw)))


class IdleRuntime(PolicyRuntime):
    """A policy that does nothing: every step repeats the observed pose."""

    kind = 'python'

    def __init__(self):
        """Declare the state feature only."""
        spec = spec_from_dict({
            'policy': 'do_nothing', 'semantics': SEMANTICS, 'fps': FPS,
            'chunk_length': CHUNK_LENGTH, 'max_batch_size': 8,
            'action': {'names': list(JOINT_NAMES)}, 'features': [_state_feature()]},
            'do-nothing policy')
        super().__init__(spec, 'cpu', 'do-nothing policy (remote_inference_py.evaluation)')

    def infer(self, inputs: Dict[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray:
        """Repeat the observed pose for every step."""
        states = np.asarray(inputs[STATE_FEATURE], dtype=np.float32)
        return np.repeat(states[:, None, :], self.spec.chunk_length, axis=1)


def expert_runtime(options: Optional[RuntimeOptions] = None) -> ExpertRuntime:
    """Build the expert (the policy server's ``policy_type: python`` factory)."""
    return ExpertRuntime()


def idle_runtime(options: Optional[RuntimeOptions] = None) -> IdleRuntime:
    """Build the do-nothing policy (``policy_type: python`` factory)."""
    return IdleRuntime()
