"""Mesh loading at the edges (app/viewer/geometry.py's loader): paths out of the robot's tree
are not read, oversized files are refused with their size, huge meshes decimated on load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh

from app.viewer import geometry as geo

URDF = """<robot name="r">
  <link name="base"><visual><geometry><mesh filename="{inside}"/></geometry></visual></link>
  <link name="arm"><visual><geometry><mesh filename="{outside}"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def _sphere(path: Path, subdivisions=2) -> int:
    mesh = trimesh.creation.icosphere(subdivisions=subdivisions)
    path.parent.mkdir(parents=True, exist_ok=True)
    mesh.export(str(path))
    return len(mesh.faces)


def _robot(tmp_path: Path, outside: str) -> Path:
    urdf = tmp_path / "lab" / "robot_pkg" / "urdf" / "r.urdf"
    urdf.parent.mkdir(parents=True)
    _sphere(tmp_path / "lab" / "robot_pkg" / "meshes" / "base.stl")
    urdf.write_text(URDF.format(inside="../meshes/base.stl", outside=outside))
    return urdf


def test_a_mesh_path_climbing_out_of_the_robot_tree_is_not_read(tmp_path):
    secret = tmp_path / "outside" / "secret.stl"
    _sphere(secret)
    urdf = _robot(tmp_path, "../../../outside/secret.stl")
    assert (urdf.parent / "../../../outside/secret.stl").resolve() == secret.resolve()
    g = geo.load_robot_geometry(urdf, geo.GeometryOptions(load_collision=False, max_triangles=None))
    assert g.links["base"].visual.triangles == 320          # the mesh inside the tree is read
    warning = [w for w in g.warnings if "arm" in w]
    assert len(warning) == 1 and "outside the robot's folder" in warning[0] and "secret.stl" in warning[0]
    assert g.links["arm"].visual.triangles == 12             # a placeholder box, not the sphere
    # an absolute file:// path outside is refused the same way
    urdf.write_text(URDF.format(inside="../meshes/base.stl", outside=f"file://{secret}"))
    g = geo.load_robot_geometry(urdf, geo.GeometryOptions(load_collision=False, max_triangles=None))
    assert any("outside the robot's folder" in w for w in g.warnings)


def test_a_mesh_file_above_the_size_limit_is_refused_with_its_size(tmp_path, monkeypatch):
    urdf = _robot(tmp_path, "../meshes/big.stl")
    _sphere(tmp_path / "lab" / "robot_pkg" / "meshes" / "big.stl", subdivisions=6)   # 81920 faces, 4 MB
    monkeypatch.setenv(geo.MAX_MESH_MB_ENV, "1")
    g = geo.load_robot_geometry(urdf, geo.GeometryOptions(load_collision=False, max_triangles=None))
    warning = [w for w in g.warnings if "big.stl" in w]
    assert len(warning) == 1 and "4 MB, above the viewer's 1 MB limit" in warning[0]
    monkeypatch.setenv(geo.MAX_MESH_MB_ENV, "30")
    g = geo.load_robot_geometry(urdf, geo.GeometryOptions(load_collision=False, max_triangles=None))
    assert not g.warnings and g.links["arm"].visual.triangles == 81920


def test_a_mesh_above_the_face_limit_is_decimated_on_load(tmp_path, monkeypatch):
    path = tmp_path / "pkg" / "urdf" / "m.stl"
    n = _sphere(path, subdivisions=4)      # 5120 faces
    monkeypatch.setattr(geo, "MAX_MESH_FACES", 1000)
    part = geo._load_mesh_file(path, None, None, geo.GeometryOptions(max_triangles=None), path.parent,
                               "m.stl")
    assert n == 5120 and 500 <= part.triangles <= 1100
    radii = np.linalg.norm(part.vertices, axis=1)            # still the unit sphere
    assert np.all(np.abs(radii - 1.0) < 0.05)
