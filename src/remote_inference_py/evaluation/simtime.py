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
Run an episode through the system's own cores in simulated time: deterministic and fast.

The three nodes are replaced by the pure classes they wrap, driven by one simulated clock in
a discrete-event loop that reproduces what each node does and when:

==========================  =================================================================
hardware interface          every ``1 / publish_rate_hz``: step the MuJoCo physics up to now
                            (:meth:`So101Sim.advance`, 2 ms steps), publish the joint sample
                            stamped with the physics time; the cube pose at 10 Hz; camera
                            frames at ``sim_camera_rate_hz`` (the state of the last physics
                            update, as the camera thread renders it). Each command is checked
                            and clamped (:class:`~remote_inference_py.hardware.commands.
                            CommandGate`) and applied at once, then echoed as applied.
executor                    :class:`~remote_inference_py.executor.core.ExecutorCore`, one
                            ``tick`` every control period, measured and applied poses fed in
policy server               :class:`~remote_inference_py.policy_server.core.
                            PolicyServerCore` with the same runtime, buffers, admission,
                            observation selection and unit conversion, served by the node's
                            own serving loop (:class:`~remote_inference_py.policy_server.
                            scheduler.Scheduler`) turned on the simulated clock instead of
                            its thread: a request is served as soon as its observation is
                            ready (compute time counts as zero, a session's requests in
                            order) and its answer is held back the injected latency L as the
                            node's ``extra_latency_s`` does (a link: requests in flight
                            overlap, answers arrive in order)
==========================  =================================================================

What the simulated time leaves out: DDS transport (about 1 ms on one host), the policy's
own compute time (milliseconds for the expert) and timer jitter. A camera frame is rendered
only when a request can use it (a request is waiting, or arrives while the frame is the
newest), which yields the same observations as rendering all of them (policies that stack
several frames get every frame).

An episode: the scene is the hardware interface's (:class:`So101Sim`); the physics runs
``settle_s`` with the arm holding its initial pose, the executor is admitted and started
(time 0 of the episode), and the loop runs until the task succeeds, the time limit passes,
or the executor faults. A simulation that blows up (a non-finite state, or MuJoCo resetting
it after a non-finite position, velocity or acceleration) raises :class:`SimulationCrash`;
:func:`run_episode` reports it as a failed episode with its message. Before each episode
:func:`run_episode` calls the runtime's ``reset(seed)``, so a policy that samples noise draws
the same noise for the same episode whatever ran before.
"""

import collections
import dataclasses
import time
from typing import Any, Callable, Dict, Optional

import numpy as np

from remote_inference_py.contract.check import (
    AdmitRequest, FeatureDeclaration, PROTOCOL_VERSION)
from remote_inference_py.contract.plan import CommittedPlan
from remote_inference_py.evaluation.settings import (
    Configuration, CUBE_POSE_RATE_HZ, EvalSettings)
from remote_inference_py.evaluation.stats import EpisodeResult
from remote_inference_py.evaluation.task import JOINT_NAMES, LiftMonitor, TaskConfig
from remote_inference_py.executor.core import Chunk, ExecutorCore, State
from remote_inference_py.hardware.commands import CommandGate, CommandLimits, CommandRejected
from remote_inference_py.policy_server.core import PolicyServerCore, Request
from remote_inference_py.policy_server.images import RawImage
from remote_inference_py.policy_server.scheduler import Scheduler

RUNNER = 'sim-time'
SETTLE_S = 0.5
SIMULTANEOUS_S = 1e-12
"""Events closer than this are one instant (the float noise of times that add up periods)."""
TICK_PHASE_S = 0.007
"""Offset of the executor's ticks from the hardware's reads (their timers are independent)."""
ROBOT = ''
UNSTABLE = {'mjWARN_BADQPOS': 'a non-finite position', 'mjWARN_BADQVEL': 'a non-finite velocity',
            'mjWARN_BADQACC': 'a non-finite acceleration'}
"""MuJoCo warnings after which it has reset the state: the simulation crashed."""


class SimulationCrash(RuntimeError):
    """The physics became invalid; the message says how and when."""


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


class FrameRenderer:
    """Render camera frames of the sim's scene as the hardware interface's camera thread does."""

    def __init__(self, width: int, height: int, simplify: bool = True,
                 mesh_cell_m: float = 0.004):
        """Compile the rendering copy of the scene (simplified meshes, no shadows)."""
        import mujoco
        from remote_inference_py.hardware.sim_scene import build_spec, simplify_meshes
        self._mujoco = mujoco
        spec = build_spec()
        if simplify:
            simplify_meshes(spec, mesh_cell_m)
        model = spec.compile()
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        model.vis.quality.shadowsize = 0
        model.vis.quality.offsamples = 0
        # The floor keeps the scene's 1 cm grid (the live camera draws FLOOR_GRID_M): the
        # evaluation's policies were trained on these frames, and its figures reproduce.
        self.model = model
        self.data = mujoco.MjData(model)
        self.renderer = mujoco.Renderer(model, height, width)
        for flag in ('mjRND_SHADOW', 'mjRND_SKYBOX', 'mjRND_REFLECTION'):
            self.renderer.scene.flags[getattr(mujoco.mjtRndFlag, flag)] = 0

    def render(self, qpos: np.ndarray, camera: str) -> np.ndarray:
        """Return an (height, width, 3) uint8 frame of ``camera`` for the state ``qpos``."""
        mujoco = self._mujoco
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)
        self.renderer.update_scene(self.data, camera=camera)
        return self.renderer.render()

    def close(self) -> None:
        """Release the rendering context."""
        self.renderer.close()


class SimulatedSystem:
    """The hardware interface, executor and policy server on one simulated clock."""

    def __init__(self, runtime, settings: EvalSettings, configuration: Configuration,
                 seed: int, task: TaskConfig = TaskConfig(),
                 renderer_cache: Optional[dict] = None, settle_s: float = SETTLE_S,
                 perturb: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                 on_tick: Optional[Callable[['SimulatedSystem', Any], None]] = None,
                 on_chunk: Optional[Callable[..., None]] = None):
        """Build the sim for cube ``seed``, the executor for the mode, the server core.

        ``perturb(command)`` changes each command before the hardware checks it (recording
        demonstrations with noise); ``on_tick(system, tick_output)`` is called after every
        executor tick (recording observations); ``on_chunk(system, chunk, verdict,
        plan_before)`` after every chunk the executor was handed (tracing). Neither hook
        changes what the episode does.
        """
        from remote_inference_py.hardware.sim import SimConfig, So101Sim
        self.now = 0.0
        self.settings = settings
        self.configuration = configuration
        self.task = task
        self.seed = seed
        self.settle_s = settle_s
        hw = settings.hardware_config()
        self.read_period = 1.0 / hw.publish_rate_hz
        self.cube_period = 1.0 / CUBE_POSE_RATE_HZ
        self.frame_period = 1.0 / hw.sim_camera_rate_hz
        self.runtime = runtime
        spec = runtime.spec
        self.image_features = [f for f in spec.features if f.is_image]
        self.privileged = [f for f in spec.features if f.kind == 'privileged']
        for feature in self.privileged:
            if (feature.topic or 'sim/cube_pose') != 'sim/cube_pose':
                raise ValueError(f'privileged feature {feature.name!r} reads {feature.topic!r};'
                                 ' the simulation provides sim/cube_pose only')
        cameras = [f.name.split('.')[-1] for f in self.image_features]
        self.sim = So101Sim(SimConfig(
            joint_names=JOINT_NAMES, initial_positions=task.initial_positions, render=False,
            cube_seed=seed, width=hw.sim_image_width, height=hw.sim_image_height),
            clock=lambda: self.now)
        self.renderer = None
        if self.image_features:
            key = (self.sim.config.width, self.sim.config.height)
            cache = renderer_cache if renderer_cache is not None else {}
            if key not in cache:
                cache[key] = FrameRenderer(*key, simplify=hw.sim_simplify_meshes)
            self.renderer = cache[key]
        self.cameras = cameras
        # Frames wait to be rendered until a request can use them, unless a policy stacks
        # several frames (then every frame may be part of a later request's history).
        self.lazy_frames = all(f.history == 1 for f in self.image_features)
        self.gate = CommandGate(CommandLimits(
            JOINT_NAMES, tuple(self.sim.lower), tuple(self.sim.upper),
            max_relative_target=hw.max_relative_target,
            limit_tolerance=hw.limit_tolerance_rad))
        self.core = ExecutorCore(settings.executor_config(configuration.mode))
        self.node_settings = settings.executor_settings(configuration.mode)
        self.latency_s = float(configuration.latency_s)
        self.server = PolicyServerCore(
            dataclasses.replace(settings.server_config(), extra_latency_s=self.latency_s),
            runtime, clock=lambda: self.now, sleep=lambda seconds: None)
        self.serving = Scheduler(self.server, self.outbox_append,
                                 simultaneous_s=SIMULTANEOUS_S)
        self.monitor = LiftMonitor(task)
        self.started_at: Optional[float] = None
        self.measured: Optional[np.ndarray] = None
        self.last_stamp = 0.0
        self.next_cube = 0.0
        self.pending_frame: Optional[tuple] = None   # (stamp, qpos) not yet rendered
        self.outbox = collections.deque()   # answers published, not yet delivered
        self.rejected_commands = 0
        self.session_id = ''
        self.perturb = perturb
        self.on_tick = on_tick
        self.on_chunk = on_chunk

    # ---- the hardware interface ----------------------------------------------------------

    def read(self) -> None:
        """Step the physics to now and publish the joint sample (and the cube pose at 10 Hz)."""
        stamp = self.sim.advance(self.now)
        self._check_physics()
        positions = self.sim.positions()
        self.measured = positions
        self.last_stamp = stamp
        self.core.on_measured(positions)
        self.serving.on_joint_states(ROBOT, _ns(stamp), JOINT_NAMES, positions)
        if self.now >= self.next_cube:
            self.next_cube = max(self.next_cube + self.cube_period, self.now - self.cube_period)
            position, quaternion = self.sim.cube_pose()
            pose = [*position, quaternion[1], quaternion[2], quaternion[3], quaternion[0]]
            for feature in self.privileged:
                self.serving.on_privileged(ROBOT, feature.name, _ns(stamp), pose)
            if self.started_at is not None:
                self.monitor.update(stamp - self.started_at, position[2])
            else:   # the cube's resting height: its last pose before the start
                self.monitor.rest_z = float(position[2])

    def _check_physics(self) -> None:
        import mujoco
        data = self.sim.data
        if not np.all(np.isfinite(data.qpos)) or not np.all(np.isfinite(data.qvel)):
            raise SimulationCrash(f'non-finite simulation state at t={self.now:.3f} s')
        for warning, what in UNSTABLE.items():
            if data.warning[getattr(mujoco.mjtWarning, warning)].number:
                raise SimulationCrash(f'MuJoCo reset the simulation after {what} at '
                                      f't={self.now:.3f} s')

    def frame(self) -> None:
        """Capture a camera frame: the state of the last physics update, stamped with it."""
        self.pending_frame = (self.last_stamp, self.sim.data.qpos.copy())
        if not self.lazy_frames or self.server.pending_count():
            self._publish_frame()

    def _publish_frame(self) -> None:
        if self.pending_frame is None or self.renderer is None:
            return
        stamp, qpos = self.pending_frame
        self.pending_frame = None
        for camera, feature in zip(self.cameras, self.image_features):
            image = self.renderer.render(qpos, camera)
            height, width = image.shape[:2]
            self.serving.on_image(ROBOT, feature.name, _ns(stamp),
                                  RawImage('rgb8', height, width, width * 3, image.tobytes()))

    def apply(self, command: np.ndarray) -> None:
        """Check, clamp and apply a command as the hardware runner does; echo it as applied."""
        try:
            target = self.gate.from_array(command)
        except CommandRejected:
            self.rejected_commands += 1
            return
        clamped = self.gate.clamp(target, self.measured)
        applied = self.sim.set_targets(clamped.target)
        self.core.on_applied(applied)

    # ---- admission and the executor -------------------------------------------------------

    def admit(self) -> None:
        """Admit the executor at the server, as the executor node does; raise if refused."""
        cfg = self.core.config
        spec = self.runtime.spec
        request = AdmitRequest(
            protocol_version=PROTOCOL_VERSION, client_name='/executor',
            deployment=self.node_settings.deployment, semantics=self.node_settings.semantics,
            action_names=tuple(cfg.joint_names), action_rate=cfg.fps,
            features=tuple(FeatureDeclaration(f.name, tuple(f.shape), f.dtype, f.kind)
                           for f in spec.features),
            merge_mode='synchronous' if cfg.synchronous else cfg.chunk_merge,
            hardware_position_hold=True, max_requests_in_flight=cfg.max_requests_in_flight)
        result = self.serving.admit(ROBOT, request)
        if not result.success:
            raise ValueError(f'admission refused: {result.message}')
        self.session_id = result.session_id
        self.core.admit(result.session_id, self.server.chunk_length)

    def tick(self) -> None:
        """One executor control tick: command out, request out."""
        out = self.core.tick(self.now)
        if out.request is not None:
            order = out.request
            if self.image_features:
                self._publish_frame()   # the newest frame is available to this request
            plan = order.plan
            if plan is not None:   # the node sends stamps in ns
                plan = CommittedPlan(_ns(plan.start), plan.positions, plan.frozen_steps)
            self.serving.on_request(Request(   # a pushed-out request's error goes out now
                ROBOT, self.session_id, order.request_id, _ns(order.earliest_capture_time),
                self.node_settings.task, _ns(self.now), plan))
        if out.command is not None:
            self.apply(out.command if self.perturb is None else self.perturb(out.command))
        if self.on_tick is not None:
            self.on_tick(self, out)

    # ---- the policy server ----------------------------------------------------------------

    def serve(self) -> None:
        """Turn the serving loop until it has nothing to do now (compute counts as zero).

        Answers held back since L ago go out, then every ready request is served; its answer
        is held back L (the server's ``extra_latency_s``) and published into the outbox then.
        """
        while self.serving.step():
            pass

    def outbox_append(self, answer) -> None:
        """Take a published answer (the scheduler's ``publish``); it is delivered this instant."""
        self.outbox.append(answer)

    def deliver(self, answer) -> None:
        """Hand a chunk (or an error answer) to the executor, as the node's callback does."""
        if answer.error:
            self.core.on_request_failed(answer.request_id, f'server: {answer.error}', self.now)
            return
        positions = np.asarray(answer.positions, dtype=np.float64)
        chunk = Chunk(
            session_id=answer.session_id, request_id=answer.request_id,
            capture_time=answer.capture_stamp_ns * 1e-9, joint_names=tuple(answer.joint_names),
            step_period=answer.step_period, positions=positions.reshape(-1),
            step_count=positions.shape[0])
        before = self.core.plan
        verdict = self.core.on_chunk(chunk, self.now)
        if self.on_chunk is not None:
            self.on_chunk(self, chunk, verdict, before)

    # ---- the loop -------------------------------------------------------------------------

    def run(self) -> Dict[str, Any]:
        """Run the episode; return what happened (success, time, executor counters)."""
        tick_period = self.core.config.tick_period
        start = self.settle_s + TICK_PHASE_S
        next_read, next_frame, next_tick = 0.0, 0.0, start
        end = start + self.task.time_limit_s
        admitted = False
        while True:
            candidates = [next_read, next_tick]
            if self.image_features:
                candidates.append(next_frame)
            turn = self.serving.next_turn()   # a held-back answer or observation deadline
            if turn is not None:
                candidates.append(turn)
            if self.outbox:
                candidates.append(self.now)
            self.now = min(candidates)
            if self.now > end + 1e-9:
                break
            if self.now >= next_read - SIMULTANEOUS_S:
                self.read()
                next_read += self.read_period
            if self.image_features and self.now >= next_frame - SIMULTANEOUS_S:
                self.frame()
                next_frame += self.frame_period
            self.serve()   # what is due or ready now goes out before the tick
            while self.outbox:
                self.deliver(self.outbox.popleft())
            if self.now >= next_tick - SIMULTANEOUS_S:
                if not admitted:
                    self.admit()
                    self.core.start(self.now)
                    self.started_at = self.now
                    admitted = True
                self.tick()
                next_tick = start + round((self.now - start) / tick_period + 1) * tick_period
            self.serve()
            if self.monitor.success or self.core.is_terminal:
                break
        stats = self.core.stats()
        switches = list(stats.recent_seams)[1:]   # the first chunk starts from rest
        return {'state': stats.state.name, 'requests': stats.requests,
                'seam_mean_rad': sum(switches) / len(switches) if switches else None,
                'seam_max_rad': max(switches) if switches else None,
                'chunks_accepted': stats.chunks_accepted, 'chunks_dropped': stats.chunks_dropped,
                'held_ticks': stats.held_ticks, 'starved_ticks': stats.starved_ticks,
                'fault': stats.message if stats.state == State.FAULT else ''}

    def close(self) -> None:
        """Release the simulation (the shared renderer stays cached)."""
        self.sim.close()


def run_episode(runtime, policy_name: str, settings: EvalSettings,
                configuration: Configuration, seed: int, task: TaskConfig = TaskConfig(),
                renderer_cache: Optional[dict] = None, trace=None) -> EpisodeResult:
    """Run one simulated-time episode; a crash becomes a failed result with its message.

    ``trace`` (an :class:`~remote_inference_py.evaluation.trace.EpisodeTrace`) records the
    episode tick by tick and chunk by chunk, and its outcome.
    """
    began = time.perf_counter()
    result = EpisodeResult(policy=policy_name, mode=configuration.mode,
                           latency_s=configuration.latency_s, seed=seed, runner=RUNNER)
    system = None
    try:
        reset = getattr(runtime, 'reset', None)
        if reset is not None:
            reset(seed)   # a sampling policy draws the same noise for the same episode
        hooks = {} if trace is None else {'on_tick': trace.on_tick, 'on_chunk': trace.on_chunk}
        system = SimulatedSystem(runtime, settings, configuration, seed, task, renderer_cache,
                                 **hooks)
        result.cube_xy = tuple(float(v) for v in system.sim.cube_xy)
        counters = system.run()
        outcome = system.monitor.outcome()
        result.success = outcome.success
        result.completion_time_s = outcome.completion_time_s
        result.max_lift_m = outcome.max_lift_m
        result.executor_state = counters.pop('state')
        fault = counters.pop('fault')
        if fault and not outcome.success:
            result.error = f'executor fault: {fault}'
        for key, value in counters.items():
            setattr(result, key, value)
    except SimulationCrash as error:
        result.error = f'simulation crashed: {error}'
    except Exception as error:  # noqa: B902 - one broken episode must not stop the matrix
        result.error = f'{type(error).__name__}: {error}'
    finally:
        if system is not None:
            system.close()
    result.wall_s = time.perf_counter() - began
    if trace is not None:
        trace.finish(result)
    return result
