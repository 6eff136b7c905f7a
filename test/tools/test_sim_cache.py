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

"""The compiled-scene cache of the simulator: the same model, from a file, or compiled."""

import os

import numpy as np
import pytest

mujoco = pytest.importorskip('mujoco')

from remote_inference_py.hardware import sim_scene  # noqa: E402,I100


def trajectory(model, steps=200):
    """Step a fixed control from the model's zero pose; return the qpos at the end."""
    data = mujoco.MjData(model)
    data.ctrl[:] = 0.3
    mujoco.mj_step(model, data, nstep=steps)
    return data.qpos.copy()


def test_a_cached_scene_is_the_compiled_scene(tmp_path, monkeypatch):
    monkeypatch.setenv(sim_scene.COMPILED_CACHE_ENV, str(tmp_path))
    compiled = sim_scene.compile_scene()
    files = list(tmp_path.glob('so101-*.mjb'))
    assert len(files) == 1, 'the first start saves the compiled scene'
    saved = files[0].stat().st_ino
    loaded = sim_scene.compile_scene()
    assert list(tmp_path.glob('so101-*.mjb')) == files
    assert files[0].stat().st_ino == saved, 'the second start read the file, not wrote it'
    for field in ('body_mass', 'geom_size', 'jnt_range', 'actuator_gainprm', 'mesh_vert'):
        np.testing.assert_array_equal(getattr(loaded, field), getattr(compiled, field))
    np.testing.assert_array_equal(trajectory(loaded), trajectory(compiled))


def test_a_damaged_file_is_compiled_again_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv(sim_scene.COMPILED_CACHE_ENV, str(tmp_path))
    reference = sim_scene.compile_scene()
    cached, = tmp_path.glob('so101-*.mjb')
    cached.write_bytes(b'not a model')
    model = sim_scene.compile_scene()
    np.testing.assert_array_equal(trajectory(model, 50), trajectory(reference, 50))
    assert cached.stat().st_size > 1000, 'the damaged file was replaced'


def test_off_compiles_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(sim_scene.COMPILED_CACHE_ENV, 'off')
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    assert sim_scene.compiled_cache_dir() is None
    assert sim_scene.compile_scene().nq > 0
    assert not any(tmp_path.rglob('*.mjb'))


def test_the_key_follows_the_scene_files(tmp_path):
    scene = tmp_path / 'scene.xml'
    scene.write_text('<mujoco/>')
    first = sim_scene.compiled_key(str(scene))
    assert sim_scene.compiled_key(str(scene)) == first
    (tmp_path / 'mesh.stl').write_bytes(b'x' * 100)
    assert sim_scene.compiled_key(str(scene)) != first, 'a new mesh file changes the key'


def test_only_the_newest_files_are_kept(tmp_path, monkeypatch):
    monkeypatch.setenv(sim_scene.COMPILED_CACHE_ENV, str(tmp_path))
    for index in range(sim_scene.COMPILED_CACHE_KEEP + 2):
        old = tmp_path / f'so101-old{index}.mjb'
        old.write_bytes(b'x')
        os.utime(old, (index, index))
    sim_scene.compile_scene()
    assert len(list(tmp_path.glob('*.mjb'))) == sim_scene.COMPILED_CACHE_KEEP
    assert len(list(tmp_path.glob('so101-old*.mjb'))) == sim_scene.COMPILED_CACHE_KEEP - 1
