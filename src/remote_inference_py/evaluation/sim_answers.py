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

"""Scripted answers about the simulated pick-the-cube scene (the expert's text commands).

The scripted expert (:mod:`.expert`) answers the executor's queries from what it observes: the
simulated cube pose and the measured joints. No language model is involved: a question about
holding ("is the cube held?") gets yes or no with the cube's height; any other question gets
where the cube is, relative to the arm's base, and whether it is held. A subtask (or a steering
round) is the expert's next phase in words (:data:`SUBTASKS`).
"""

import numpy as np

from remote_inference_py.evaluation.task import cube_rest_z

HELD_ABOVE_M = 0.01    # the cube's centre this far above its resting height, jaws closed: held
SUBTASKS = {'approach': 'move the gripper above the cube',
            'descend': 'lower the open gripper around the cube',
            'close': 'close the gripper on the cube',
            'lift': 'lift the cube',
            'reopen': 'open the gripper and reach for the cube again'}
HOLD_WORDS = ('held', 'hold', 'holding', 'grasp', 'grasped', 'picked')


def cube_held(cube_pose, gripper_closed: bool) -> bool:
    """Return True when the cube is off the table with the jaws closed."""
    return gripper_closed and float(cube_pose[2]) > cube_rest_z() + HELD_ABOVE_M


def describe_cube(cube_pose, held: bool) -> str:
    """Say where the cube is [cm from the arm's base] and whether it is held."""
    x, y, z = (float(v) for v in np.asarray(cube_pose)[:3])
    side = 'left' if y >= 0 else 'right'
    where = (f'{x * 100:.0f} cm in front of the base and {abs(y) * 100:.0f} cm to the {side}')
    height = (z - cube_rest_z()) * 100
    if held:
        return f'the cube is held {height:.0f} cm above the table, {where}'
    if height > HELD_ABOVE_M * 100:
        return f'the cube is {height:.0f} cm above the table, not held, {where}'
    return f'the cube rests on the table, {where}; it is not held'


def answer_question(question: str, cube_pose, held: bool) -> str:
    """Answer a question about the scene (see the module docstring)."""
    words = question.lower().replace('?', ' ').split()
    if any(word in HOLD_WORDS for word in words):
        return ('yes: ' if held else 'no: ') + describe_cube(cube_pose, held)
    return describe_cube(cube_pose, held)


def subtask(phase: str) -> str:
    """Return the next subtask for the expert's phase."""
    return SUBTASKS.get(phase, 'move the gripper above the cube')
