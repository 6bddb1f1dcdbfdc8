"""Every URDF of example-robot-data through the default loader, against Pinocchio (issue #31).

    python -m experiments.example_robot_data [--states 3] [--out results/example_robot_data]

Each ``*.urdf`` under the installed package's ``robots/`` folder is loaded by
:func:`engine.robots.library.load_robot` with the default settings (a library entry's own options
where the file is one: a floating base). A file loads, or is refused by one
:class:`~engine.robots.urdf.URDFError` line (recorded); anything else is a fault. A loaded model is
compared at ``--states`` random states (joints uniform within their limits clipped to +-pi, a random
base pose, normal velocities and accelerations) with Pinocchio's model of the same file
(``pin.buildModelFromUrdf``, a free-flyer where ours floats, every joint independent; a coupled
mimic joint by the URDF's definition ``q = multiplier * q_master + offset``, so ours is ``G^T M G``
and ``G^T tau`` of Pinocchio's): the link poses, the mass matrix (CRBA), the joint forces (RNEA)
and, where it is defined, forward dynamics (the residual ``M qdd - (tau - h)`` of Pinocchio's M and
h). The error of a quantity is ``max |ours - Pinocchio's| / max(1, max |Pinocchio's|)``; a file's
error is the worst of them. Writes ``example_robot_data.json`` and ``README.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import sys
from pathlib import Path

import numpy as np

_OUT = Path("results/example_robot_data")


def robots_dir() -> Path | None:
    """example-robot-data's ``robots/`` folder, None when the package is not installed."""
    from engine.robots.urdf import description_package_roots

    for root in description_package_roots():
        for candidate in (root / "example-robot-data" / "robots", root):
            if (candidate / "ur_description").is_dir():
                return candidate
    return None


def _error(ours, ref) -> float:
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    if ref.size == 0:
        return 0.0
    return float(np.abs(ours - ref).max() / max(1.0, float(np.abs(ref).max())))


def compare_with_pinocchio(model, path: Path, states: int, seed: int = 0) -> dict:
    """``{"poses", "mass_matrix", "rnea", "forward_dynamics"}``: each quantity's error against
    Pinocchio over ``states`` random states (``forward_dynamics`` None where the model refuses it)."""
    import torch

    from experiments.pinocchio_reference import LoadedPair

    pair = LoadedPair(model, path)
    q, v, a = pair.random_states(states, seed)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    poses = model.forward_kinematics(t(q)).numpy()
    M = model.mass_matrix(t(q)).numpy()
    tau = model.inverse_dynamics(t(q), t(v), t(a)).numpy()
    qdd = None if model.singular_joints else model.forward_dynamics(t(q), t(v), t(a)).numpy()
    err = {"poses": 0.0, "mass_matrix": 0.0, "rnea": 0.0, "forward_dynamics": None if qdd is None else 0.0}
    for s in range(states):
        err["poses"] = max(err["poses"], _error(poses[s], pair.link_poses(q[s], model.link_names)))
        Mp = pair.crba(q[s])
        err["mass_matrix"] = max(err["mass_matrix"], _error(M[s], Mp))
        err["rnea"] = max(err["rnea"], _error(tau[s], pair.rnea(q[s], v[s], a[s])))
        if qdd is not None:
            h = pair.rnea(q[s], v[s], np.zeros(model.nv))
            err["forward_dynamics"] = max(err["forward_dynamics"], _error(Mp @ qdd[s], a[s] - h))
    return err


def survey(states: int) -> list[dict]:
    """One row per URDF file of example-robot-data (see the module docstring)."""
    from engine.robots.library import load_robot
    from engine.robots.urdf import URDFError

    root = robots_dir()
    if root is None:
        raise SystemExit("example-robot-data is not installed (pip install example-robot-data)")
    rows = []
    for path in sorted(root.rglob("*.urdf")):
        row: dict = {"file": str(path.relative_to(root))}
        try:
            model = load_robot(path)
        except URDFError as exc:
            rows.append(row | {"status": "refused", "reason": exc.reason})
            continue
        except Exception as exc:  # noqa: BLE001 - a fault of ours, recorded, not hidden
            rows.append(row | {"status": "fault", "reason": f"{type(exc).__name__}: {exc}"})
            continue
        errors = compare_with_pinocchio(model, path, states)
        rows.append(row | {"status": "loaded", "dof": model.dof, "nv": model.nv, "floating": model.floating,
                           "mimic": len(model.mimic_joint_names), "warnings": list(model.description.warnings),
                           "singular_joints": list(model.singular_joints), "errors": errors,
                           "max_error": max(e for e in errors.values() if e is not None)})
    return rows


def _kind(warning: str) -> str:
    """A short name of a warning line for the table."""
    if "kept as written" in warning:
        kinds = [k for k, phrase in (("point mass", "point mass"), ("thin body", "thin body"),
                                     ("root mass 0", "root link with mass 0"),
                                     ("not PD", "not positive definite"), ("triangle", "triangle inequality"),
                                     ("mass 0 with an inertia, strict=False entry", "mass must be positive"))
                 if phrase in warning]
        return "inertia (" + ", ".join(kinds) + ")"
    if "move no mass" in warning or "moves no mass" in warning:
        return "joints moving no mass: " + warning.split(" move")[0].split(" ", 1)[1]
    if "mimic" in warning:
        return f"mimic without master ({warning.count(' mimics ')})"
    return warning[:60]


def write_report(rows: list[dict], out: Path, states: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "example_robot_data.json").write_text(json.dumps(rows, indent=1) + "\n")
    loaded = [r for r in rows if r["status"] == "loaded"]
    refused = [r for r in rows if r["status"] == "refused"]
    faults = [r for r in rows if r["status"] == "fault"]
    worst = max((r["max_error"] for r in loaded), default=0.0)
    lines = [
        "# example-robot-data through the default loader, against Pinocchio",
        "",
        f"`python -m experiments.example_robot_data --states {states}` on {_dt.date.today().isoformat()} "
        f"(example-robot-data {_version('example-robot-data')}, Pinocchio {_version('pin')}).",
        "",
        f"**{len(loaded)} of {len(rows)} files load with the default settings**, {len(refused)} refused, "
        f"{len(faults)} faults. Every loaded model matches Pinocchio to {worst:.1e} (the worst of the link "
        f"poses, mass matrix, RNEA and forward dynamics over {states} random states per file, relative to "
        "max(1, |Pinocchio's|)).",
        "",
        "The refused file, `ur_description/urdf/ur3.urdf`, is an empty `<robot>` (a xacro output with no name "
        "and no link): Pinocchio (`buildModelFromUrdf`: \"does not contain a valid URDF model\") and yourdfpy "
        "(`KeyError: 'name'`) refuse it too. Every file that is a robot loads.",
        "",
        "Warnings (one line per kind, in `RobotDescription.warnings`, `robot info --json` and the app; "
        "`strict=True` refuses each): inertias kept as written (point masses, thin bodies, a root link with "
        "mass 0, rotational inertias that are not positive definite or break the triangle inequality); joints "
        "that move no mass (forward dynamics and simulation are refused naming them, FD column `refused`); "
        "a `<mimic>` naming an absent joint (dropped, the joint independent, as Pinocchio's mimic=False). "
        "Where an inconsistent inertia is kept, the mass matrix was positive definite at every sampled state "
        "(the forward-dynamics residual is finite and small); a state where it is not would give ABA's "
        "solution of the indefinite system, not an error.",
        "",
        "DoF: the independent joints (a floating base adds 6 velocities; coupled mimic joints counted apart). "
        "Base: floating where the library's entry for the file says so. FD: the forward-dynamics residual "
        "alone.",
        "",
        "| file | DoF | base | loaded | warnings | max error vs Pinocchio | FD |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] != "loaded":
            lines.append(f"| {r['file']} | - | - | no: {r['reason']} | - | - | - |")
            continue
        warn = "; ".join(_kind(w) for w in r["warnings"]) or "-"
        fd = "refused" if r["errors"]["forward_dynamics"] is None else f"{r['errors']['forward_dynamics']:.1e}"
        base = "floating" if r["floating"] else "fixed"
        mimic = f" ({r['mimic']} mimic)" if r["mimic"] else ""
        lines.append(f"| {r['file']} | {r['dof']}{mimic} | {base} | yes | {warn} | {r['max_error']:.1e} | {fd} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=3, help="random states per file (default 3)")
    parser.add_argument("--out", type=Path, default=_OUT, help=f"output folder (default {_OUT})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)      # the loader's warnings are in the table
    rows = survey(args.states)
    write_report(rows, args.out, args.states)
    loaded = sum(r["status"] == "loaded" for r in rows)
    print(f"{loaded} of {len(rows)} files load; report in {args.out / 'README.md'}")
    return 1 if any(r["status"] == "fault" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
