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
The hardware interface node: Feetech SO-101 servos or the MuJoCo SO-101, one lifecycle node.

A thin ROS 2 wrapper: parameters become a backend (:mod:`.backend`), command limits
(:mod:`.commands`) and runner settings; one worker thread (:mod:`.runner`) does all bus I/O
and physics; callbacks only validate and hand over.

Topics (relative names; remap in the launch file):

============================  ====  ==============================  =============================
name                          dir   type                            role
============================  ====  ==============================  =============================
``joint_states``              out   sensor_msgs/JointState          measured positions [rad] at
                                                                    ``publish_rate_hz``, stamped
                                                                    with the measurement time
``applied_command``           out   sensor_msgs/JointState          each target applied, after
                                                                    clamping (what holds the arm)
``hardware/info``             out   remote_inference/HardwareInfo   latched; on every change
``joint_commands``            in    JointState (by name) or         targets [rad]
                                    Float64MultiArray (in order)
``cameras/<name>/image_raw``  out   sensor_msgs/Image (rgb8, or     ``sim_cameras`` (sim) or
                                    bgr8 by ``color_mode``)         ``cameras`` (feetech), each
                                                                    stamped with its capture
                                                                    time; with ``share_images``
                                                                    only while it has a
                                                                    subscriber
``<image topic>/shm``         out   remote_inference/SharedImage    each frame in shared memory
                                                                    (``share_images``)
``<image topic>/compressed``  out   sensor_msgs/CompressedImage     JPEG (``jpeg_quality``),
                                                                    only while it has a
                                                                    subscriber (another host)
``sim/cube_pose``             out   geometry_msgs/PoseStamped       sim only, ``world`` frame,
                                                                    10 Hz
============================  ====  ==============================  =============================

Services: ``hardware/enable_torque`` and ``hardware/disable_torque`` (``std_srvs/Trigger``),
plus the lifecycle services (``hardware_interface/change_state``, ``get_state``, ...).

Commands (:mod:`.commands`): a command must name every joint once (a missing, unknown or
repeated joint, a NaN, or a value more than ``limit_tolerance_rad`` beyond a joint limit
rejects the whole command with a named reason: logged at most once a second per reason,
counted, and put in ``hardware/info``'s message; the arm keeps its last applied target).
Accepted targets are clamped to the joint limits, then to ``max_relative_target`` around the
latest measured position, rounded to whole servo ticks, written, and echoed on
``applied_command``. Commands are refused while inactive, in fault or with torque off. The
watchdog (``command_timeout_s``) logs once when commands stop and the arm holds the last
applied target (the servos keep their goal; nothing is re-sent). An INFO summary of the
counters is logged every 5 s while they change.

Lifecycle (``rclpy.lifecycle``): configure = open the backend (connect and ping every motor,
configure the servos and check the calibration; or build the simulation) and start reading;
activate = torque on, commands applied; deactivate = stop applying commands, the arm holds
its last target with torque on; cleanup = close (torque off when
``disable_torque_on_shutdown``). With ``autostart`` (default) the node configures and
activates itself at startup, and exits with code 2 when it cannot (the log names the port,
motor, file or setting). ``hardware/info`` state: ``unconfigured``, ``inactive``, ``active``,
``fault``, ``shutting_down`` or ``finalized``; ``position_hold`` is true while active with
torque on. A persistent bus failure gives ``fault`` (commands refused, the servos keep their
last goal, or torque goes off with ``disable_torque_on_fault``); cleanup then configure clears
it; a node that ends in fault exits with code 1.

Stop (SIGINT, SIGTERM): while active, commands are still applied for up to
``shutdown_grace_s`` until none has arrived for 0.5 s (the executor returns the arm to its
initial pose meanwhile), then the arm holds and the bus is closed with torque off when
``disable_torque_on_shutdown``. A second Ctrl+C at least 1 s after the first closes at once
(repeats of the same stop do not; ``common/node_main.py``).

Cameras of the real arm (``cameras``, LeRobot's camera dictionary, :mod:`.cameras`): opened
on configure (one that cannot be opened, or delivers another size than configured, fails
configure with a message naming it: exit code 2 under autostart); each has a thread of its
own that captures and publishes, so a camera never delays the servo loop. A camera that is
unplugged, stalls (no frame for ``camera_stall_timeout_s``) or changes size mid-run is named
in ``hardware/info``'s message (``camera 'front' (/dev/video0) stalled: ...``) and logged;
the state stays ``active`` and the arm keeps being driven: the policy server, which then has
no fresh frame, answers with a stale-observation error and the executor holds and faults by
its own rules. The message clears when frames come again (an unplugged camera is reopened).

Threads: the node spins on one thread (``run_node``); the worker thread reads, writes and
publishes ``joint_states`` and ``applied_command``; the sim's camera thread renders and
publishes images; each real camera has a capture thread. Torque services and lifecycle
transitions do their (short) bus I/O in the service callback, serialized with the worker by
the bus lock.
"""

import logging
import threading
import time

from geometry_msgs.msg import PoseStamped
from rclpy.duration import Duration
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.time import Time
from remote_inference.msg import HardwareInfo, ObservationFeature
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from remote_inference_py.common.node_main import ConfigError, run_node
from remote_inference_py.common.params import (
    build_config, declare_parameters, declared, LiveSettings)
from remote_inference_py.hardware.backend import (
    BackendError, BackendFault, BackendOpenError, check_limits, limits_source)
from remote_inference_py.hardware.cameras import CameraError, CameraSet
from remote_inference_py.hardware.commands import CommandLimits, CommandRejected
from remote_inference_py.hardware.config import HardwareConfig
from remote_inference_py.hardware.runner import HardwareRunner, RunnerSink, Throttle
from remote_inference_py.robot.calibration import CalibrationError
from remote_inference_py.transport import qos
from remote_inference_py.transport.endpoints import JointStatePublisher, TransportChoiceError
from remote_inference_py.transport.shared_images import ImagePublisher

SUMMARY_PERIOD_S = 5.0
CUBE_POSE_RATE_HZ = 10.0
CAMERA_CHECK_PERIOD_S = 0.25

# Declared once, as the fields of HardwareConfig.
PARAMETERS = declared(HardwareConfig)


class _DriverLogHandler(logging.Handler):
    """Forward the servo driver's Python log records to the node's logger at DEBUG.

    The runner logs what matters (throttled) and the periodic summary carries the driver's
    counters; per-operation driver messages are visible with ``--log-level debug``.
    """

    def __init__(self, logger):
        super().__init__(logging.DEBUG)
        self.logger = logger

    def emit(self, record):
        try:
            self.logger.debug(f'{record.name}: {record.getMessage()}')
        except Exception:  # noqa: B902 - logging must never raise into the driver
            self.handleError(record)


class _Sink(RunnerSink):
    """Forward the runner's outputs to the node's publishers."""

    def __init__(self, node):
        self.node = node

    def on_joint_state(self, positions, stamp):
        self.node.publish_joint_state(self.node.joint_state_pub, positions, stamp)

    def on_applied(self, target, stamp):
        self.node.publish_joint_state(self.node.applied_pub, target, stamp)

    def on_status(self):
        self.node.publish_info()

    def on_finished(self):
        self.node.on_runner_finished()


class HardwareInterfaceNode(LifecycleNode):
    """Drive the arm (servos or simulation): measured states out, safe commands in."""

    def __init__(self, **kwargs):
        super().__init__('hardware_interface', **kwargs)
        self.config = build_config(HardwareConfig, declare_parameters(self, PARAMETERS.values()))
        self.camera_configs = self.config.camera_configs()   # the real arm's (feetech)
        self.cameras = None
        self.camera_problems = []
        self.finished = False
        self.exit_code = 0
        self.lock = threading.RLock()
        self.runner = None
        self.backend_name = self.config.backend
        self.stop_reason = None
        self.last_error = ''
        self.last_info = None
        self.last_summary = ''
        self.info_lock = threading.Lock()
        self.reject_throttle = Throttle()
        self.driver_log = logging.getLogger('remote_inference_py.hardware')
        self.driver_log_handler = _DriverLogHandler(self.get_logger().get_child('driver'))
        self.driver_log.addHandler(self.driver_log_handler)
        self.driver_log.setLevel(logging.DEBUG)
        self.driver_log.propagate = False

        names = self.config.joint_names
        self.joint_state_pub = JointStatePublisher(self, 'joint_states', names, qos.JOINT_STATES)
        self.applied_pub = JointStatePublisher(self, 'applied_command', names, qos.COMMANDS)
        self.info_pub = self.create_publisher(HardwareInfo, 'hardware/info', qos.LATCHED)
        self.image_pubs = {}
        self.cube_pub = None
        if self.backend_name == 'sim':
            if self.config.sim_render:
                self.image_pubs = {
                    camera: ImagePublisher(self, f'cameras/{camera}/image_raw', qos.IMAGES,
                                           self.config.share_images, camera,
                                           jpeg_quality=self.config.jpeg_quality)
                    for camera in self.config.sim_cameras}
            self.cube_pub = self.create_publisher(PoseStamped, 'sim/cube_pose',
                                                  qos.JOINT_STATES)
        else:
            self.image_pubs = {
                camera.name: ImagePublisher(self, f'cameras/{camera.name}/image_raw', qos.IMAGES,
                                            self.config.share_images, camera.name,
                                            jpeg_quality=self.config.jpeg_quality)
                for camera in self.camera_configs}
        if self.camera_configs:
            self.create_timer(CAMERA_CHECK_PERIOD_S, self.check_cameras)
        if self.config.command_format == 'joint_state':
            self.create_subscription(JointState, 'joint_commands', self.on_joint_command,
                                     qos.COMMANDS)
        else:
            self.create_subscription(Float64MultiArray, 'joint_commands',
                                     self.on_array_command, qos.COMMANDS)
        self.create_service(Trigger, 'hardware/enable_torque', self.on_enable_torque)
        self.create_service(Trigger, 'hardware/disable_torque', self.on_disable_torque)
        self.live = LiveSettings(self, (self.config,), self.apply_settings)
        self.create_timer(SUMMARY_PERIOD_S, self.log_summary)
        self.autostart_timer = None
        if self.config.autostart:
            self.autostart_timer = self.create_timer(0.01, self.autostart)
        self.publish_info()
        self.get_logger().info(
            f'hardware interface up: backend={self.backend_name}'
            f'{" port=" + self.config.port if self.backend_name == "feetech" else ""}, '
            f'joints={list(self.config.joint_names)}, '
            f'publish_rate_hz={self.config.publish_rate_hz}, '
            f'command_format={self.config.command_format}, '
            f'autostart={self.config.autostart}')

    # ---- parameters ---------------------------------------------------------------------

    def _limits(self, backend, config):
        """Return the command limits from the parameters and the backend's range."""
        names = config.joint_names
        if config.joint_lower_limits is None:
            lower, upper = backend.lower, backend.upper
        else:
            lower, upper = check_limits(names, config.joint_lower_limits,
                                        config.joint_upper_limits, backend.lower,
                                        backend.upper, limits_source(backend))
        return CommandLimits(joint_names=names, lower=tuple(lower), upper=tuple(upper),
                             max_relative_target=config.max_relative_target,
                             limit_tolerance=config.limit_tolerance_rad)

    def apply_settings(self, configs, changes):
        """Hand the new tunables to the runner; they apply from the next command."""
        self.config, = configs
        runner = self.runner
        if runner is not None:
            limits = runner.limits
            runner.update(self.config.runner_settings(), CommandLimits(
                joint_names=limits.joint_names, lower=limits.lower, upper=limits.upper,
                max_relative_target=self.config.max_relative_target,
                limit_tolerance=self.config.limit_tolerance_rad))

    # ---- lifecycle ----------------------------------------------------------------------

    def autostart(self):
        """Configure and activate once at startup; exit with code 2 when that fails."""
        self.autostart_timer.cancel()
        self.destroy_timer(self.autostart_timer)
        if self.stop_reason is not None:
            return
        if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            self._cannot_start('configure failed')
            return
        if self.stop_reason is not None:
            return
        if self.trigger_activate() != TransitionCallbackReturn.SUCCESS:
            self._cannot_start('activate failed')

    def _cannot_start(self, what):
        message = self.runner.message if self.runner is not None else self.last_error
        self.get_logger().fatal(f'cannot start: {what}: {message}')
        self.exit_code = 2
        self.finished = True

    def on_configure(self, state):
        """Open the backend (connect and ping, or build the sim) and start reading."""
        self.last_error = ''
        try:
            backend = self._make_backend()
        except (ConfigError, CalibrationError, OSError, ValueError) as error:
            return self._transition_failed('configure', error)
        try:
            backend.open()
            limits = self._limits(backend, self.config)
        except (BackendOpenError, ValueError) as error:
            backend.close(self.config.disable_torque_on_shutdown)
            return self._transition_failed('configure', error)
        except Exception as error:  # noqa: B902 - an unexpected failure must not leave it open
            backend.close(self.config.disable_torque_on_shutdown)
            return self._transition_failed(
                'configure', f'{type(error).__name__}: {error}')
        problem = self._open_cameras()
        if problem:
            backend.close(self.config.disable_torque_on_shutdown)
            return self._transition_failed('configure', problem)
        for note in backend.notes:
            self.get_logger().info(note)
        for warning in backend.warnings:
            self.get_logger().warning(warning)
        runner = HardwareRunner(backend, limits, self.config.runner_settings(),
                                _Sink(self), self.get_logger())
        with self.lock:
            self.runner = runner
        runner.start()
        self.get_logger().info(
            f'configured {backend.name}: limits [rad] '
            + ', '.join(f'{n} [{lo:.3f}, {hi:.3f}]' for n, lo, hi in zip(
                limits.joint_names, limits.lower, limits.upper))
            + f'; max_relative_target={limits.max_relative_target} rad')
        self.publish_info()
        return TransitionCallbackReturn.SUCCESS

    def _make_backend(self):
        s = self.config
        if s.backend == 'sim':
            from remote_inference_py.hardware.sim_backend import SimBackend
            return SimBackend(s.sim_config(), on_frame=self.publish_image,
                              on_cube_pose=self.publish_cube_pose,
                              cube_pose_rate_hz=CUBE_POSE_RATE_HZ)
        # Only this backend needs the servo SDK (and a serial port).
        from remote_inference_py.hardware.feetech_backend import FeetechBackend
        return FeetechBackend(s.feetech_bus(), s.calibration_file, s.configure_servos)

    def _transition_failed(self, what, error):
        self.last_error = str(error)
        self.get_logger().error(f'{what} failed: {error}')
        self.publish_info(message=str(error))
        return TransitionCallbackReturn.FAILURE

    def on_activate(self, state):
        """Switch torque on and start applying commands."""
        runner = self.runner
        try:
            runner.activate()
        except (BackendError, BackendFault) as error:
            return self._transition_failed('activate', error)
        self.get_logger().info('active: torque on, applying joint_commands')
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state):
        """Stop applying commands; the arm holds its last target with torque on."""
        self.runner.deactivate()
        self.get_logger().info('inactive: holding the last target, commands ignored')
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state):
        """Close the backend (torque off when disable_torque_on_shutdown)."""
        self._close_runner()
        self.publish_info()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        """Close the backend and let the process end (code 1 if it ends in fault)."""
        runner = self.runner
        problem = self._close_runner()
        if problem or (runner is not None and runner.faulted):
            self.exit_code = max(self.exit_code, 1)
        self.finished = True
        self.publish_info()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state):
        """Close whatever is open; go back to unconfigured."""
        self._close_runner()
        self.publish_info()
        return TransitionCallbackReturn.SUCCESS

    def _close_runner(self):
        with self.lock:
            runner, self.runner = self.runner, None
        if runner is None:
            return ''
        try:
            return runner.close(self.config.disable_torque_on_shutdown)
        finally:
            self._close_cameras()
            for publisher in self.image_pubs.values():   # the camera thread has stopped
                publisher.close()

    # ---- cameras (hardware/cameras.py) ----------------------------------------------------

    def _open_cameras(self):
        """Open the real arm's cameras and start their threads; return a problem or ''."""
        if not self.camera_configs or self.cameras is not None:
            return ''
        cameras = CameraSet(self.camera_configs, self.publish_image,
                            stall_timeout_s=self.config.camera_stall_timeout_s)
        try:
            cameras.open()
        except CameraError as error:
            return str(error)
        for note in cameras.notes:
            self.get_logger().warning(note)
        self.cameras = cameras
        self.get_logger().info('cameras: ' + ', '.join(
            f'{r.label} {r.size[0]}x{r.size[1]} {r.config.encoding} -> cameras/{name}/image_raw'
            for name, r in cameras.readers.items()))
        return ''

    def _close_cameras(self):
        cameras, self.cameras = self.cameras, None
        if cameras is not None:
            stuck = cameras.close()
            if stuck:
                self.get_logger().warning(f'camera thread(s) {stuck} still blocked in the '
                                          'driver; left to the process exit')

    def check_cameras(self):
        """Report camera faults (and their end) on hardware/info and in the log."""
        cameras = self.cameras
        problems = cameras.problems() if cameras is not None else []
        if [p[:2] for p in problems] == [p[:2] for p in self.camera_problems]:
            self.camera_problems = problems   # same faults: keep the newest text, no re-publish
            return
        before = {name for name, _, _ in self.camera_problems}
        for name, code, text in problems:
            self.get_logger().error(f'camera fault [{code}]: {text}')
        for name in before - {name for name, _, _ in problems}:
            self.get_logger().info(f'camera {name!r} delivers frames again')
        self.camera_problems = problems
        self.publish_info()

    # ---- commands and services ----------------------------------------------------------

    def _reject(self, rejection):
        """Log a rejected command, at most once a second per reason (all are counted)."""
        if not self.reject_throttle.ready(rejection.reason, time.monotonic()):
            return
        runner = self.runner
        count = runner.rejected.get(rejection.reason, 0) if runner is not None else 0
        self.get_logger().error(f'command rejected ({rejection.reason}, {count} so far): '
                                f'{rejection}; the arm keeps its last applied target')

    def on_joint_command(self, msg):
        """Hand a by-name command to the runner (validated at once)."""
        runner = self.runner
        if runner is None:
            self.get_logger().warning('command ignored: not configured',
                                      throttle_duration_sec=2.0)
            return
        try:
            runner.command_by_name(msg.name, msg.position)
        except CommandRejected as rejection:
            self._reject(rejection)

    def on_array_command(self, msg):
        """Hand a command in joint_names order to the runner (validated at once)."""
        runner = self.runner
        if runner is None:
            self.get_logger().warning('command ignored: not configured',
                                      throttle_duration_sec=2.0)
            return
        try:
            runner.command_in_order(msg.data)
        except CommandRejected as rejection:
            self._reject(rejection)

    def _torque(self, enabled, response):
        runner = self.runner
        word = 'on' if enabled else 'off'
        if runner is None:
            response.success, response.message = False, 'not configured'
            return response
        try:
            runner.set_torque(enabled)
        except (BackendError, BackendFault) as error:
            response.success, response.message = False, f'torque {word} failed: {error}'
            self.get_logger().error(response.message)
            return response
        response.success = True
        response.message = f'torque {word}' + ('' if enabled else '; commands are refused')
        self.get_logger().info(f'hardware/{"enable" if enabled else "disable"}_torque: '
                               f'{response.message}')
        return response

    def on_enable_torque(self, request, response):
        """Switch torque on, holding the present position."""
        return self._torque(True, response)

    def on_disable_torque(self, request, response):
        """Switch torque off (the arm goes limp; commands are refused until enabled)."""
        return self._torque(False, response)

    # ---- publishing (any thread) --------------------------------------------------------

    def _stamp_ns(self, monotonic_time):
        """Convert a monotonic time to a time [ns] on the node's clock."""
        return self.get_clock().now().nanoseconds - int(
            (time.monotonic() - monotonic_time) * 1e9)

    def publish_joint_state(self, publisher, positions, stamp):
        """Publish positions [rad] by joint name, stamped at monotonic time ``stamp``."""
        sec, nanosec = divmod(self._stamp_ns(stamp), 1_000_000_000)
        publisher.publish(sec, nanosec, positions)

    def publish_image(self, camera, frame, stamp, encoding='rgb8'):
        """Publish one frame captured at monotonic time ``stamp`` (from a camera thread)."""
        publisher = self.image_pubs.get(camera)
        if publisher is None:
            return
        sec, nanosec = divmod(self._stamp_ns(stamp), 1_000_000_000)
        publisher.publish(sec, nanosec, f'{camera}_camera', frame, encoding)

    def publish_cube_pose(self, position, orientation, stamp):
        """Publish the cube pose in the world frame [m]."""
        msg = PoseStamped()
        msg.header.stamp = Time(nanoseconds=self._stamp_ns(stamp)).to_msg()
        msg.header.frame_id = 'world'
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
            float(v) for v in position)
        (msg.pose.orientation.w, msg.pose.orientation.x, msg.pose.orientation.y,
         msg.pose.orientation.z) = (float(v) for v in orientation)
        self.cube_pub.publish(msg)

    def _info_state(self):
        runner = self.runner
        if runner is not None:
            return runner.state
        return 'finalized' if self.finished else 'unconfigured'

    def publish_info(self, message=None):
        """Publish hardware/info when anything in it changed."""
        runner = self.runner
        info = HardwareInfo(backend=self.backend_name,
                            joint_names=list(self.config.joint_names))
        if runner is not None:
            limits = runner.limits
            info.lower_limits = [float(v) for v in limits.lower]
            info.upper_limits = [float(v) for v in limits.upper]
            info.position_hold = runner.position_hold
            info.torque_enabled = runner.torque_enabled is True
            info.message = runner.message
        info.state = self._info_state()
        info.cameras = [ObservationFeature(topic=topic, shape=shape, dtype=dtype, kind=kind)
                        for topic, shape, dtype, kind in self._camera_declarations()]
        if message is not None:
            info.message = message
        if self.camera_problems:
            info.message = '; '.join([m for m in (info.message,) if m]
                                     + [text for _, _, text in self.camera_problems])
        key = (tuple(info.lower_limits), tuple(info.upper_limits), info.position_hold,
               info.torque_enabled, info.state, info.message,
               tuple(self._camera_declarations()))
        with self.info_lock:
            if key == self.last_info:
                return
            self.last_info = key
            info.header.stamp = self.get_clock().now().to_msg()
            self.info_pub.publish(info)

    def _camera_declarations(self):
        """(topic, [height, width, channels], dtype, kind) of each camera whose size is known.

        Declared on hardware/info, so that the executor offers the sizes it publishes at
        admission and a size the policy server cannot serve is refused before motion.
        """
        if self.backend_name == 'sim':
            return [(f'cameras/{camera}/image_raw',
                     (self.config.sim_image_height, self.config.sim_image_width, 3), 'uint8',
                     'rgb') for camera in self.image_pubs]
        cameras = self.cameras
        if cameras is None:
            return []
        out = []
        for name, reader in cameras.readers.items():
            if reader.size is not None:
                width, height = reader.size   # rgb8 or bgr8: three channels
                out.append((f'cameras/{name}/image_raw', (height, width, 3), 'uint8', 'rgb'))
        return out

    def log_summary(self):
        """Log the counters every few seconds when they changed."""
        runner = self.runner
        if runner is None:
            return
        summary = runner.summary()
        if self.cameras is not None:
            summary += f'; cameras: {self.cameras.summary()}'
        if self.image_pubs:
            summary += '; sent: ' + ', '.join(f'{name} {pub.counts()}'
                                              for name, pub in self.image_pubs.items())
        if summary != self.last_summary:
            self.last_summary = summary
            self.get_logger().info(f'[{runner.state}] {summary}')

    # ---- stop ---------------------------------------------------------------------------

    def on_runner_finished(self):
        """Finish the node: the runner closed the backend at the end of a stop."""
        runner = self.runner
        if runner is not None and (runner.faulted or runner.close_problem):
            self.exit_code = max(self.exit_code, 1)
        self.publish_info()
        self.get_logger().info(
            'hardware interface stopped' + (f' after a fault: {runner.message}'
                                            if runner is not None and runner.faulted else ''))
        self.finished = True

    def request_stop(self, reason):
        """Stop: keep applying commands briefly while active, hold, then close."""
        self.get_logger().info(f'stop requested: {reason}')
        with self.lock:
            self.stop_reason = reason
            runner = self.runner
        if runner is None or not runner.running:
            self.finished = True   # close() closes what is open
        else:
            runner.begin_shutdown(reason)

    def close(self):
        """Close the backend if still open (no grace), publish the final state."""
        try:
            self._close_runner()
        finally:
            self.finished = True
            self.publish_info()
            self.info_pub.wait_for_all_acked(Duration(seconds=1.0))
            self.driver_log.removeHandler(self.driver_log_handler)


def main(args=None):
    """Run the hardware interface node; exit 2 when it cannot start, 1 after a fault."""
    raise SystemExit(run_node(HardwareInterfaceNode, args,
                              config_errors=(TransportChoiceError,)))


if __name__ == '__main__':
    main()
