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

"""The MuJoCo SO-101 simulation: the model alone, then the hardware interface node on it.

The first tests drive :class:`So101Sim` with a simulated clock (no waiting, no ROS). The node
tests start the installed ``hardware_interface`` console script with ``backend: sim`` and talk
to it over DDS; rendering stays small (64x64 at 5 Hz) to keep them quick. No assertion is
about speed.
"""

from core_fixtures import FakeClock
from geometry_msgs.msg import PoseStamped
import numpy as np
import pytest
from remote_inference.msg import HardwareInfo
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray

from remote_inference_py.hardware.sim import SimConfig, So101Sim
from remote_inference_py.hardware.sim_scene import (
    build_spec, cluster_vertices, cube_position, CUBE_SAMPLING_BOUNDS, SimError)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES
from remote_inference_py.transport import qos
from remote_inference_py.transport.values import stamp_ns

JOINTS = list(SO101_JOINT_NAMES)
POSE = [0.4, 0.3, -0.3, 0.2, 0.5, 0.8]   # [rad], low gravity load, inside every limit


def run_for(sim, clock, seconds, step=0.02):
    for _ in range(int(round(seconds / step))):
        clock.now += step
        sim.advance()


@pytest.fixture(scope='module')
def headless():
    clock = FakeClock(1000.0)
    sim = So101Sim(SimConfig(joint_names=tuple(JOINTS), render=False), clock=clock)
    sim.start()
    yield sim, clock
    sim.close()


# The simulation alone.

def test_scene_has_the_arm_a_table_and_a_cube():
    spec = build_spec()
    geoms = {geom.name for geom in spec.geoms}
    assert {'table_top', 'floor', 'block'} <= geoms
    model = spec.compile()
    assert [model.actuator(i).name for i in range(model.nu)] == JOINTS


def test_follows_position_targets_in_simulated_real_time(headless):
    sim, clock = headless
    applied = sim.set_targets(POSE)
    assert applied.tolist() == POSE
    before = sim.sim_time
    run_for(sim, clock, 1.5)
    assert sim.sim_time - before == pytest.approx(1.5, abs=0.003)
    assert np.abs(sim.positions() - POSE).max() < 0.06   # gravity sag of soft servos


def test_targets_are_clipped_to_the_joint_range(headless):
    sim, _ = headless
    applied = sim.set_targets([5.0, 0.0, 0.0, 0.0, 0.0, -5.0])
    assert applied[0] == pytest.approx(sim.upper[0]) and applied[5] == pytest.approx(sim.lower[5])
    assert sim.upper[0] == pytest.approx(1.91986, abs=1e-4)


def test_torque_off_lets_the_arm_fall_and_torque_on_holds_where_it_is(headless):
    sim, clock = headless
    sim.set_targets(POSE)
    run_for(sim, clock, 1.0)
    sim.set_torque(False)
    run_for(sim, clock, 1.0)
    fallen = sim.positions()
    assert np.abs(fallen - POSE).max() > 0.2
    sim.set_torque(True)
    run_for(sim, clock, 0.5)
    held = sim.positions()
    run_for(sim, clock, 0.5)
    assert np.abs(sim.positions() - held).max() < 0.02


def test_falling_behind_skips_time_instead_of_a_burst(headless):
    sim, clock = headless
    skipped, before = sim.skipped_s, sim.sim_time
    clock.now += 3.0
    sim.advance()
    assert sim.sim_time - before == pytest.approx(sim.config.max_catch_up_s, abs=0.003)
    assert sim.skipped_s - skipped == pytest.approx(3.0 - sim.config.max_catch_up_s, abs=0.003)


def test_cube_rests_on_the_table_at_a_seeded_position():
    fixed = So101Sim(SimConfig(joint_names=tuple(JOINTS), render=False))
    position, orientation = fixed.cube_pose()
    # Settled on the table (SETTLE_S): its centre a half size above the top, within 0.5 mm.
    assert position.tolist() == pytest.approx([0.3, 0.0, 0.02], abs=5e-4)
    assert orientation.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0], abs=1e-3)
    one, again, other = cube_position(7), cube_position(7), cube_position(8)
    assert one == again != other
    seeded = So101Sim(SimConfig(joint_names=tuple(JOINTS), render=False, cube_seed=7))
    assert seeded.cube_pose()[0].tolist() == pytest.approx([*one, 0.02], abs=5e-4)
    (x0, y0), (x1, y1) = CUBE_SAMPLING_BOUNDS
    assert x0 <= one[0] <= x1 and y0 <= one[1] <= y1


def test_unknown_joint_and_camera_are_named():
    with pytest.raises(SimError, match="joint 'elbow' is not in the SO-101 model"):
        So101Sim(SimConfig(joint_names=('shoulder_pan', 'elbow'), render=False))
    with pytest.raises(SimError, match="camera 'wrist' is not in the SO-101 scene"):
        So101Sim(SimConfig(joint_names=tuple(JOINTS), cameras=('wrist',)))
    with pytest.raises(ValueError, match='2 initial positions for 6 joints'):
        SimConfig(joint_names=tuple(JOINTS), initial_positions=(0.0, 0.0))


def test_vertex_clustering_merges_close_vertices_and_drops_degenerate_faces():
    # Two triangles sharing an edge, plus a sliver whose corners fall in one cell.
    corners = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0],
                        [1, 0, 0], [1, 1, 0], [0, 1, 0],
                        [0.001, 0, 0], [0.002, 0, 0], [0, 0.001, 0]], dtype=float)
    vertices, faces = cluster_vertices(corners, cell_m=0.1)
    assert len(vertices) == 4 and len(faces) == 2
    assert faces.max() == 3


def test_offscreen_render_with_simplified_meshes():
    sim = So101Sim(SimConfig(joint_names=tuple(JOINTS), width=64, height=48))
    frame = sim.render_once('front')
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8
    assert frame.std() > 5, 'a uniform image: nothing was drawn'
    assert 0 < sim.mesh_triangles < 30000


# The node on the simulation, over DDS.

class Watch:
    """Collect what the hardware interface publishes."""

    def __init__(self, node, cameras=()):
        self.states, self.applied, self.info, self.cubes = [], [], [], []
        self.images = {camera: [] for camera in cameras}
        node.create_subscription(JointState, 'joint_states', self.states.append,
                                 qos.JOINT_STATES)
        node.create_subscription(JointState, 'applied_command', self.applied.append,
                                 qos.COMMANDS)
        node.create_subscription(HardwareInfo, 'hardware/info', self.info.append, qos.LATCHED)
        node.create_subscription(PoseStamped, 'sim/cube_pose', self.cubes.append,
                                 qos.JOINT_STATES)
        for camera in cameras:
            node.create_subscription(Image, f'cameras/{camera}/image_raw',
                                     self.images[camera].append, qos.IMAGES)

    def active(self):
        return bool(self.info) and self.info[-1].state == 'active'

    def position(self):
        return np.array(self.states[-1].position)


def start_sim(processes, ros, cameras=(), **params):
    node, spinner = ros
    watch = Watch(node, cameras)
    proc = processes.console_script(
        'hardware_interface', node_name='hardware_interface',
        params={'backend': 'sim', 'sim_render': bool(cameras), **params})
    spinner.until(lambda: watch.active() and watch.states, 30, 'an active simulated arm')
    return watch, proc


def test_sim_node_follows_commands_and_declares_position_hold(processes, ros):
    node, spinner = ros
    watch, proc = start_sim(processes, ros)
    info = watch.info[-1]
    assert info.backend == 'sim' and info.position_hold and info.torque_enabled
    assert list(info.joint_names) == JOINTS
    assert info.upper_limits[0] == pytest.approx(1.91986, abs=1e-4)
    commands = node.create_publisher(JointState, 'joint_commands', qos.COMMANDS)
    # A far target, re-sent like an executor holding it: max_relative_target (0.35 rad) lets
    # the arm approach it step by step from the measured position.
    reordered = list(reversed(JOINTS))
    target = dict(zip(JOINTS, POSE))

    def send_and_check():
        commands.publish(JointState(name=reordered, position=[target[n] for n in reordered]))
        return (watch.applied and np.abs(watch.position() - POSE).max() < 0.06
                and np.abs(np.array(watch.applied[-1].position) - POSE).max() < 1e-9)

    spinner.until(send_and_check, 20, 'joint_states converging to the commanded pose')
    first = np.array(watch.applied[0].position)
    assert np.abs(first - POSE).max() > 0.1, 'the first command should have been clamped'
    assert watch.cubes and watch.cubes[-1].pose.position.z == pytest.approx(0.02, abs=0.005)
    assert watch.cubes[-1].header.frame_id == 'world'
    assert proc.stop() == 0
    assert 'holding the last target' in proc.log_path.read_text()


def test_sim_node_takes_float64_arrays_in_declared_order(processes, ros):
    node, spinner = ros
    watch, proc = start_sim(processes, ros, command_format='float64_multi_array',
                            max_relative_target=0.0)
    commands = node.create_publisher(Float64MultiArray, 'joint_commands', qos.COMMANDS)
    spinner.until(lambda: commands.get_subscription_count() > 0, 10, 'command subscriber')
    spinner.until(lambda: 'wrong_length' in watch.info[-1].message, 10, 'named rejection',
                  repeat=lambda: commands.publish(Float64MultiArray(data=[0.1, 0.2])))
    assert '2 values for 6 joints' in watch.info[-1].message
    commands.publish(Float64MultiArray(data=POSE))
    spinner.until(lambda: watch.applied, 10, 'applied command')
    assert list(watch.applied[-1].position) == pytest.approx(POSE)
    assert list(watch.applied[-1].name) == JOINTS
    assert proc.stop() == 0


def test_sim_node_publishes_camera_images_and_cube_pose(processes, ros):
    node, spinner = ros
    watch, proc = start_sim(processes, ros, cameras=('front',), sim_image_width=64,
                            sim_image_height=48, sim_camera_rate_hz=5.0)
    images = watch.images['front']
    spinner.until(lambda: len(images) >= 3, 20, 'three camera images')
    image = images[-1]
    assert (image.width, image.height, image.encoding, image.step) == (64, 48, 'rgb8', 192)
    assert len(image.data) == 64 * 48 * 3
    assert np.frombuffer(bytes(image.data), np.uint8).std() > 5
    # The camera's size is declared on hardware/info, for the executor to offer at admission.
    assert [(c.topic, list(c.shape), c.dtype, c.kind) for c in watch.info[-1].cameras] == [
        ('cameras/front/image_raw', [48, 64, 3], 'uint8', 'rgb')]
    stamps = [stamp_ns(i.header.stamp) * 1e-9 for i in images]
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0]
    spinner.until(lambda: watch.cubes, 10, 'cube pose')
    assert watch.cubes[-1].pose.position.x == pytest.approx(0.3, abs=0.01)
    assert proc.stop() == 0
