"""`python -m engine bench rbd`: the JSON shape (speed itself is never asserted in tests)."""

from __future__ import annotations

import json

from engine.cli import main
from engine.paths import urdf_dir


def test_bench_rbd_json(capsys):
    path = urdf_dir() / "planar_2link.urdf"
    assert main(["bench", "rbd", "--robot", str(path), "--batch", "1,3", "--json", "--repeats", "1",
                 "--min-time", "0.001", "--plain-batch", "5", "--floating", "none", "--derivative-batch", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dof"] == 2 and out["threads"] == 2 and out["robot"] == str(path)
    rows = out["rows"]
    assert [(r["algorithm"], r["batch"]) for r in rows] == [
        (a, b) for b in (1, 3) for a in ("fk_jacobian", "rnea", "crba", "aba")]
    for r in rows:
        assert set(r) == {
            "algorithm",
            "batch",
            "ours_ms",
            "ours_torch_ms",
            "pinocchio_ms",
            "pytorch_kinematics_ms",
            "drm_ms",
        }
        assert r["ours_ms"] > 0 and r["pinocchio_ms"] > 0
        assert r["ours_torch_ms"] > 0
        assert (r["pytorch_kinematics_ms"] is None) == (r["algorithm"] != "fk_jacobian")
    derivs = out["derivative_rows"]
    assert [(r["algorithm"], r["batch"]) for r in derivs] == [
        (a, 2) for a in ("rnea_derivs", "aba_derivs", "id_backward", "fd_backward", "id_vjp", "fd_vjp")]
    for r in derivs:
        assert r["ours_ms"] > 0 and r["ours_torch_ms"] > 0 and r["pinocchio_ms"] > 0
    one = out["batch1_rows"]                        # one sample per call: thin entry, plain API, Pinocchio
    assert [r["algorithm"] for r in one] == ["rnea", "crba", "aba", "fk_jacobian", "rnea_derivs", "aba_derivs"]
    for r in one:
        assert r["thin_us"] > 0 and r["plain_us"] > 0 and r["routed_us"] > 0 and r["pinocchio_us"] > 0
    for key in ("plain_api", "plain_api_torch"):   # in a fresh process without the CLI's settings
        plain = out[key]
        assert plain["path"] == ("torch" if key == "plain_api_torch" else "default")
        assert [(r["algorithm"], r["batch"]) for r in plain["rows"]] == [("rnea", 5), ("crba", 5), ("aba", 5)]
        for r in plain["rows"]:
            assert 0 < r["ours_ms"] <= r["ours_max_ms"] and 0 < r["pinocchio_ms"] <= r["pinocchio_max_ms"]


def test_bench_rbd_floating_base_rows(capsys):
    path = urdf_dir() / "planar_2link.urdf"
    assert main(["bench", "rbd", "--robot", str(path), "--batch", "2", "--json", "--repeats", "1",
                 "--min-time", "0.001", "--floating", "solo12", "--plain-batch", "0"]) == 0
    rows = json.loads(capsys.readouterr().out)["floating_rows"]
    assert [(r["robot"], r["nv"], r["algorithm"], r["batch"]) for r in rows] == [
        ("solo12", 18, a, 2) for a in ("fk_jacobian", "rnea", "crba", "aba")]
    assert all(r["ours_ms"] > 0 and r["pinocchio_ms"] > 0 for r in rows)
    assert all(r["ours_torch_ms"] > 0 for r in rows)


def test_bench_rbd_rejects_bad_batches(capsys):
    assert main(["bench", "rbd", "--batch", "0,x"]) == 2
    assert "--batch" in capsys.readouterr().err
    for argv, flag in ((["--batch", "0,4"], "--batch"), (["--threads", "0"], "--threads"),
                       (["--repeats", "0"], "--repeats"), (["--min-time", "inf"], "--min-time"),
                       (["--min-time", "1e30"], "--min-time"), (["--plain-batch", "-1"], "--plain-batch")):
        assert main(["bench", "rbd", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert flag in err and len(err.splitlines()) == 1, err


def test_plain_import_applies_the_allocator_setting():
    """`import engine` in a plain script tunes malloc as the CLI does (LAGRANGE_NO_TUNE_MALLOC opts out)."""
    import os
    import subprocess
    import sys

    code = "import engine.runtime as r, engine; print(r._tuned)"
    env = {k: v for k, v in os.environ.items() if k != "LAGRANGE_NO_TUNE_MALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "True"
    env["LAGRANGE_NO_TUNE_MALLOC"] = "1"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "None"


def test_intra_op_threads_restores_the_callers_setting():
    import torch

    from engine.runtime import intra_op_threads

    before = torch.get_num_threads()
    with intra_op_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
