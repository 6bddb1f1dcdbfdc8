"""experiments.menagerie on files written here (CI has no copy of the collection): a scene with
three trees, gravity compensation and a joint coupling matches MuJoCo; a ball joint loads and
matches; a ball joint with a joint coupling in its tree is refused in one line; an include
fragment MuJoCo cannot compile is refused by the loader in one line too."""

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
    assert summary["files"] == 4 and summary["status"] == {"loaded": 2, "refused": 1, "not_compiled": 1}
    scene = files["scene.xml"]
    assert sorted(scene["trees"]) == ["ball", "box", "world"] and scene["nv_kept"] == scene["nv_mujoco"] == 16
    assert scene["trees"]["world"]["coupled"] == 1 and "gravcomp" in scene["trees"]["box"]["errors"]
    assert scene["worst"] < 1e-11 and summary["loaded_within"]["1e-11"] == 2
    assert files["ball.xml"]["nv_kept"] == 3 and files["ball.xml"]["worst"] < 1e-11
    assert files["coupled.xml"]["one_line"] and "ball joint 's' and joint 'h2'" in files["coupled.xml"]["message"]
    assert files["fragment.xml"]["loader"] == "one line"
    assert "loaded files: 2" in (out / "README.md").read_text()
