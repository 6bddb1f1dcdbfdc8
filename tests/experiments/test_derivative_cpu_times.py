"""experiments.derivative_cpu_times: the whole script once on a tiny batch (no timing asserted)."""

from __future__ import annotations

import json

from experiments import derivative_cpu_times


def test_rows_of_a_fixed_and_a_floating_robot(tmp_path):
    out = tmp_path / "times.json"
    result = derivative_cpu_times.main(["--robots", "iiwa,solo12", "--batch", "3", "--turns", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    rows = result["rows"]
    assert [(r["robot"], r["algorithm"]) for r in rows] == [
        (robot, alg) for robot in ("iiwa", "solo12") for alg in ("id_backward", "fd_backward", "id_vjp", "fd_vjp")]
    assert all(r["ours_ms"] > 0 and r["pinocchio_ms"] > 0 for r in rows)


def test_rows_of_the_full_derivative_matrices():
    result = derivative_cpu_times.main(["--robots", "solo12", "--batch", "3", "--turns", "1",
                                        "--algorithms", "rnea_derivs,aba_derivs"])
    assert [r["algorithm"] for r in result["rows"]] == ["rnea_derivs", "aba_derivs"]
    assert all(r["ours_ms"] > 0 and r["pinocchio_ms"] > 0 for r in result["rows"])
