"""experiments.menagerie on files written here (CI has no copy of the collection): a scene with
three trees, gravity compensation and a joint coupling matches MuJoCo tree by tree and as one
model (the arm with its free objects beside it); a ball joint loads and matches; a ball joint with
a joint coupling in its tree loads and matches; an include fragment MuJoCo cannot compile is
refused by the loader in one line."""

from __future__ import annotations

from experiments.menagerie import main
from tests.engine.robots.mjcf_scene import write_scene

COUPLING = '<equality><joint joint1="j3" joint2="j2" polycoef="0.1 0.5 0 0 0"/></equality>'


def test_the_collection_run_on_a_small_folder(tmp_path, capsys):
    folder = tmp_path / "collection"
    folder.mkdir()
    write_scene(folder, gravity="0.3 0 -981", extra=COUPLING)
    (folder / "ball.xml").write_text('<mujoco><worldbody><body name="a"><joint name="s" type="ball"/>'
                                     '<geom size="0.1 0.2 0.3" type="box" mass="1"/></body></worldbody></mujoco>')
    (folder / "coupled.xml").write_text(
        '<mujoco><worldbody><body name="a"><joint name="s" type="ball"/><geom size="0.1" mass="1"/><body name="b">'
        '<joint name="h1"/><geom size="0.1" mass="1"/><body name="c"><joint name="h2"/><geom size="0.1" mass="1"/>'
        '</body></body></body></worldbody><equality><joint joint1="h2" joint2="h1"/></equality></mujoco>')
    (folder / "fragment.xml").write_text('<mujoco><actuator><position class="x" joint="j"/></actuator></mujoco>')
    (folder / "notes.xml").write_text("<notes/>")                    # not an MJCF file: not counted
    out = tmp_path / "out"
    assert main([str(folder), "--states", "2", "--out", str(out), "--label", "test"]) == 0
    import json

    report = json.loads((out / "menagerie.json").read_text())
    files, summary = report["files"], report["summary"]
    assert summary["files"] == 4 and summary["status"] == {"loaded": 3, "not_compiled": 1}
    scene = files["scene.xml"]
    assert sorted(scene["trees"]) == ["ball", "box", "world"] and scene["nv_kept"] == scene["nv_mujoco"] == 16
    assert scene["trees"]["world"]["coupled"] == 1 and "gravcomp" in scene["trees"]["box"]["errors"]
    assert scene["scene"]["nv"] == 15 and scene["scene"]["coupled"] == 1       # the arm, the box and the ball
    assert set(scene["scene"]["errors"]) == {"mass_matrix", "bias", "gravity", "gravcomp"}
    assert scene["worst"] < 1e-11 and scene["scene"]["worst"] < 1e-11 and summary["loaded_within"]["1e-11"] == 3
    assert (summary["scenes"], summary["scenes_all_dof"], summary["scenes_coupled"]) == (1, 1, 1)
    assert files["ball.xml"]["nv_kept"] == 3 and files["ball.xml"]["worst"] < 1e-11 and "scene" not in files["ball.xml"]
    coupled = files["coupled.xml"]
    assert coupled["nv_kept"] == coupled["nv_mujoco"] == 5 and coupled["trees"]["world"]["coupled"] == 1
    assert coupled["worst"] < 1e-11
    assert files["fragment.xml"]["loader"] == "one line"
    readme = (out / "README.md").read_text()
    assert "loaded files: 3" in readme and "free objects beside it (compared as one model too): 1" in readme
