"""`python -m engine bench rbd`: the JSON shape (speed itself is never asserted in tests)."""

from __future__ import annotations

import json

from engine.cli import main
from engine.paths import urdf_dir


def test_bench_rbd_json(capsys):
    path = urdf_dir() / "planar_2link.urdf"
    assert main(["bench", "rbd", "--robot", str(path), "--batch", "1,3", "--json", "--repeats", "1",
                 "--min-time", "0.001", "--floating", "none"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dof"] == 2 and out["threads"] == 2 and out["robot"] == str(path)
    rows = out["rows"]
    assert [(r["algorithm"], r["batch"]) for r in rows] == [
        (a, b) for b in (1, 3) for a in ("fk_jacobian", "rnea", "crba", "aba")]
    for r in rows:
        assert set(r) == {"algorithm", "batch", "ours_ms", "pinocchio_ms", "pytorch_kinematics_ms", "drm_ms"}
        assert r["ours_ms"] > 0 and r["pinocchio_ms"] > 0
        assert (r["pytorch_kinematics_ms"] is None) == (r["algorithm"] != "fk_jacobian")


def test_bench_rbd_floating_base_rows(capsys):
    path = urdf_dir() / "planar_2link.urdf"
    assert main(["bench", "rbd", "--robot", str(path), "--batch", "2", "--json", "--repeats", "1",
                 "--min-time", "0.001", "--floating", "solo12"]) == 0
    rows = json.loads(capsys.readouterr().out)["floating_rows"]
    assert [(r["robot"], r["nv"], r["algorithm"], r["batch"]) for r in rows] == [
        ("solo12", 18, a, 2) for a in ("fk_jacobian", "rnea", "crba", "aba")]
    assert all(r["ours_ms"] > 0 and r["pinocchio_ms"] > 0 for r in rows)


def test_bench_rbd_rejects_bad_batches(capsys):
    assert main(["bench", "rbd", "--batch", "0,x"]) == 2
    assert "--batch" in capsys.readouterr().err
