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
The hardware interface node with the evaluation's scene: the fingertip pads collide.

``python -m remote_inference_py.evaluation.hardware_node --ros-args ...`` runs exactly
:func:`remote_inference_py.hardware.node.main`, except that the simulated arm's jaw pads are
switched on after the model is built (:func:`~remote_inference_py.evaluation.task.
enable_jaw_pads`; without them a grasped cube slips out within seconds, see
:mod:`.task`). The real-node runner starts this instead of the ``hardware_interface`` script
as long as :mod:`remote_inference_py.hardware.sim` leaves the pads inert
(:func:`sim_has_jaw_pads`); once the sim enables them itself, the plain script is used and
this module is no longer needed.
"""

from remote_inference_py.evaluation.task import enable_jaw_pads, jaw_pads_enabled


def sim_has_jaw_pads() -> bool:
    """Return True when the hardware interface's own simulation makes the pads collide."""
    from remote_inference_py.evaluation.task import JOINT_NAMES
    from remote_inference_py.hardware.sim import SimConfig, So101Sim
    simulation = So101Sim(SimConfig(joint_names=JOINT_NAMES, render=False))
    try:
        return jaw_pads_enabled(simulation.model)
    finally:
        simulation.close()


def main(args=None):
    """Run the hardware interface node with jaw pads enabled in its simulation."""
    from remote_inference_py.hardware import backend, node, sim

    class So101SimWithPads(sim.So101Sim):
        """The sim's arm with collision enabled on the fingertip pads."""

        def __init__(self, *positional, **keywords):
            super().__init__(*positional, **keywords)
            enable_jaw_pads(self.model)

    backend.So101Sim = So101SimWithPads
    node.main(args)


if __name__ == '__main__':
    main()
