"""The Robot workspace's load notes name the constraints that close loops (MJCF connect, weld, tendon)."""

from __future__ import annotations

import pytest

pytest.importorskip("mujoco")

FILE = """<mujoco model="loop">
  <worldbody>
    <body name="a"><joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.01" mass="0.2"/></body>
    <body name="b" pos="0.6 0 0"><joint name="jb" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 -0.3 0 0" size="0.01" mass="0.2"/></body>
  </worldbody>
  <equality><connect name="pin" body1="a" body2="b" anchor="0.3 0 0"/></equality>
</mujoco>"""


def test_load_notes_list_the_constraints(tmp_path):
    from app.workspaces.robot.robot_jobs import _load_model

    path = tmp_path / "loop.xml"
    path.write_text(FILE)
    model, notes = _load_model(path)
    assert [c.name for c in model.description.constraints] == ["pin"]
    assert "constraints: connect 'pin'" in notes
    assert not any("<connect>" in n for n in notes)
