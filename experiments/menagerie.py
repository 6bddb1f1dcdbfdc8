"""Every MJCF file of a robot collection (MuJoCo Menagerie) through the loader, against MuJoCo.

    python -m experiments.menagerie FOLDER [--states 5] [--out results/menagerie] [--label TEXT]

FOLDER: a checkout of a collection of MJCF files (e.g. google-deepmind/mujoco_menagerie); every
``*.xml`` whose root element is ``<mujoco>`` and that MuJoCo itself compiles is a model file (the
others, include fragments and files whose meshes are absent, are counted apart). Each model file
is loaded by :func:`engine.robots.mjcf.load_mjcf_trees` (every kinematic tree, each its own
description): it loads, or it is refused by one :class:`~engine.robots.mjcf.MJCFError` line
naming the unsupported element (the line is recorded); anything else (a traceback) is a fault.
Each tree's model is compared with MuJoCo at ``--states`` random states (joints uniform in +-1.5
rad or m, random base poses, normal velocities), on the compiled and on the torch path:

- the mass matrix, ``P^T T^T M_mj T P`` (``T``: MuJoCo's velocity per the model's; a free root's
  linear velocity is in the world frame there, in the base frame here; ``P``: joints coupled by
  ``<equality joint>`` follow their masters, written from the description's mimic joints);
- the bias forces, ``P^T T^T (qfrc_bias + M_mj dT/dt v)``, at the file's gravity;
- the gravity torques (``qfrc_bias`` at rest);
- where a body has ``gravcomp``: ``qfrc_gravcomp``.

A file with several trees whose robot is fixed to the world is compared once more as
:func:`engine.robots.mjcf.load_mjcf` loads it by default, the robot with its free objects
beside it (three world slides from the object's initial position and a ball from its initial
orientation each: MuJoCo's free joint), coupled joints or not (``"scene"`` in the results).

The error of a quantity is ``max |ours - MuJoCo's| / max(1, max |MuJoCo's|)`` over the states; a
tree matches at the worst of its quantities. Writes ``menagerie.json`` (per file: status, trees,
errors, the not-modelled lines) and ``README.md`` (counts, date, the collection's commit when
FOLDER is a git checkout or ``--label`` says it) to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import subprocess
import sys
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

THRESHOLDS = (1e-11, 1e-9, 1e-6)


def is_mjcf(path: Path) -> bool:
    from engine.robots.files import file_format

    try:
        return file_format(path) == "mjcf"
    except ValueError:
        return False


def _chain(desc, name: str) -> tuple[str, float, float]:
    """``(independent joint, a, b)`` with ``q_name = a q_joint + b`` (mimic joints followed)."""
    a, b = 1.0, 0.0
    while desc.joint(name).mimic is not None:
        m = desc.joint(name).mimic
        a, b, name = a * m.multiplier, b + a * m.offset, m.joint
    return name, a, b


def _state(model, mm, md, rng):
    """A random state of ``model`` set into MuJoCo's data (other trees: MuJoCo's reference pose) ->
    ``(q, v, dofs, TP, dTv)``: MuJoCo's dof indices of every joint of the tree (a free root's six
    first), ``TP`` MuJoCo's velocity there per the model's (``T``: a free root's linear velocity is
    in the world frame in MuJoCo; ``P``: coupled joints follow their masters), ``dT/dt v``."""
    import mujoco
    from scipy.spatial.transform import Rotation

    desc = model.description
    md.qpos[:] = mm.qpos0
    md.qvel[:] = 0.0
    f = 6 if model.floating else 0
    q = rng.uniform(-1.5, 1.5, model.nq)
    v = rng.normal(size=model.nv)
    di: list[int] = []
    R = np.eye(3)
    if model.floating:
        j = mm.body_jntadr[mm.body(desc.root).id]
        a, d = mm.jnt_qposadr[j], mm.jnt_dofadr[j]
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)                            # x y z w
        md.qpos[a:a + 3], md.qpos[a + 3] = q[:3], q[6]
        md.qpos[a + 4:a + 7] = q[3:6]
        R = Rotation.from_quat(q[3:7]).as_matrix()
        di += list(range(d, d + 6))
    movable = [j.name for j in desc.movable_joints]
    rows = []                  # each movable joint's rows of P (a ball joint: three)
    for name in movable:
        obj = _free_object(desc, mm, name)
        if obj is not None:    # a free object beside a fixed robot: slides from qpos0, then the ball
            j, axis = obj
            sq, sv = model.joint_coordinates(name)
            a, d = int(mm.jnt_qposadr[j]), int(mm.jnt_dofadr[j])
            if axis is None:
                quat = rng.normal(size=4)
                q[sq] = quat / np.linalg.norm(quat)
                turned = np.zeros(4)             # MuJoCo's quaternion: the initial one times the ball's
                mujoco.mju_mulQuat(turned, mm.qpos0[a + 3:a + 7], np.r_[q[sq][3], q[sq][:3]])
                md.qpos[a + 3:a + 7] = turned
                rows += [(sv.start + i, 1.0) for i in range(3)]
                di += [d + 3 + i for i in range(3)]
            else:
                md.qpos[a + axis] = mm.qpos0[a + axis] + q[sq.start]
                rows.append((sv.start, 1.0))
                di.append(d + axis)
            continue
        if desc.joint(name).type == "ball":     # quaternion x y z w here, w x y z in MuJoCo; v the same
            sq, sv = model.joint_coordinates(name)
            quat = rng.normal(size=4)
            q[sq] = quat / np.linalg.norm(quat)
            adr = mm.joint(name).qposadr[0]
            md.qpos[adr], md.qpos[adr + 1:adr + 4] = q[sq][3], q[sq][:3]
            rows += [(sv.start + i, 1.0) for i in range(3)]
            di += [int(mm.joint(name).dofadr[0]) + i for i in range(3)]
            continue
        master, a, b = _chain(desc, name)
        sq, sv = model.joint_coordinates(master)
        rows.append((sv.start, a))
        md.qpos[mm.joint(name).qposadr[0]] = a * q[sq.start] + b
        di.append(int(mm.joint(name).dofadr[0]))
    P = np.zeros((f + len(rows), model.nv))
    P[:f, :f] = np.eye(f)
    for row, (col, a) in enumerate(rows):
        P[f + row, col] = a
    T = np.eye(f + len(rows))
    T[:f // 2, :f // 2] = R[:f // 2, :f // 2]                       # the identity on a fixed base
    dTv = np.zeros(f + len(rows))
    if model.floating:
        dTv[:3] = R @ np.cross(v[3:6], v[:3])
    dofs = np.array(di, dtype=int)
    md.qvel[dofs] = T @ P @ v
    return q, v, dofs, T @ P, dTv


def _free_object(desc, mm, name: str) -> tuple[int, int | None] | None:
    """``(MuJoCo's free joint, axis 0-2 of a slide or None for the ball)`` where ``name`` is a joint
    of a free object kept beside a fixed robot (``<joint>_x``, ``_y``, ``_z`` and the ball
    ``<joint>``: :func:`engine.robots.mjcf._free_object_joints`), else None."""
    import mujoco

    base, axis = (name[:-2], "xyz".index(name[-1])) if name[-2:] in ("_x", "_y", "_z") else (name, None)
    try:
        joint = desc.joint(base)
        j = int(mm.body(joint.child).jntadr[0]) if joint.type == "ball" else -1
    except KeyError:
        return None
    if j < 0 or mm.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
        return None
    return j, axis


def _error(ours, ref) -> float:
    ref = np.asarray(ref)
    return float(np.abs(np.asarray(ours) - ref).max(initial=0.0) / max(1.0, np.abs(ref).max(initial=0.0)))


def compare_tree(model, mm, states: int, seed: int) -> dict:
    """Worst relative errors (see the module docstring) of one tree's model, both paths."""
    import mujoco
    import torch

    from engine.robots.backends import torch_only
    from engine.robots.gravcomp import gravity_compensation, has_gravity_compensation

    md = mujoco.MjData(mm)
    rng = np.random.default_rng(seed)
    err: dict[str, float] = {}
    M_full = np.zeros((mm.nv, mm.nv))
    for _ in range(states):
        q, v, di, TP, dTv = _state(model, mm, md, rng)
        mujoco.mj_forward(mm, md)
        mujoco.mj_fullM(mm, md, M_full)
        M_mj = M_full[np.ix_(di, di)]
        bias = TP.T @ (md.qfrc_bias[di] + M_mj @ dTv)
        gc_ref = TP.T @ md.qfrc_gravcomp[di]
        qt, vt = torch.as_tensor(q), torch.as_tensor(v)
        md.qvel[:] = 0.0
        mujoco.mj_forward(mm, md)
        g_ref = TP.T @ md.qfrc_bias[di]
        for path in ("compiled", "torch"):
            ctx = torch_only() if path == "torch" else _nothing()
            with ctx, torch.no_grad():
                found = {
                    "mass_matrix": _error(model.mass_matrix(qt).numpy(), TP.T @ M_mj @ TP),
                    "bias": _error(model.bias_forces(qt, vt).numpy(), bias),
                    "gravity": _error(model.gravity_torques(qt).numpy(), g_ref),
                }
                if has_gravity_compensation(model):
                    found["gravcomp"] = _error(gravity_compensation(model, qt).numpy(), gc_ref)
            for k, e in found.items():
                err[k] = max(err.get(k, 0.0), e)
    return err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def run_file(path: Path, states: int) -> dict:
    """One file: ``{"status": "loaded" | "refused" | "not_compiled" | "fault", ...}``."""
    import mujoco

    from engine.robots.mjcf import MJCFError, load_mjcf, load_mjcf_trees
    from engine.robots.model import RobotModel

    try:
        mm = mujoco.MjModel.from_xml_path(str(path))
    except Exception as exc:  # noqa: BLE001 - MuJoCo's own compiler refuses it (a fragment, a missing mesh)
        out = {"status": "not_compiled", "message": str(exc).strip().splitlines()[0][:300]}
        try:                                   # the loader must refuse it too, in one line
            load_mjcf_trees(path)
            out["loader"] = "loaded"
        except MJCFError as err:
            out["loader"] = "one line" if "\n" not in str(err) else "several lines"
        except Exception:  # noqa: BLE001
            out["loader"] = "fault"
            out["traceback"] = traceback.format_exc()[-2000:]
        return out
    try:
        descs = load_mjcf_trees(path)
    except MJCFError as exc:
        message = str(exc)
        return {"status": "refused", "message": message, "one_line": "\n" not in message}
    except Exception:  # noqa: BLE001 - recorded: a loader fault
        return {"status": "fault", "traceback": traceback.format_exc()[-2000:]}
    out: dict = {"status": "loaded", "nv_mujoco": int(mm.nv), "trees": {}, "not_modelled": []}
    for i, (name, desc) in enumerate(descs.items()):
        try:
            model = RobotModel.from_description(desc)
            errors = compare_tree(model, mm, states, seed=i)
        except Exception:  # noqa: BLE001
            out["status"] = "fault"
            out["traceback"] = traceback.format_exc()[-2000:]
            return out
        out["trees"][name] = {"floating": desc.floating_base, "nv": model.nv, "coupled": len(model.mimic_joint_names),
                              "errors": errors,
                              "worst": max(errors.values(), default=0.0)}
        if i == 0:
            out["not_modelled"] = [l for l in desc.not_modelled if not l.startswith("other kinematic trees")]
    out["nv_kept"] = sum(t["nv"] + t["coupled"] for t in out["trees"].values())     # coupled joints: kept
    out["worst"] = max((t["worst"] for t in out["trees"].values()), default=0.0)
    if len(descs) > 1:         # load_mjcf's default: a fixed robot with its free objects, one model
        try:
            desc = load_mjcf(path)
            if any(_free_object(desc, mm, j.name) for j in desc.movable_joints):
                model = RobotModel.from_description(desc)
                errors = compare_tree(model, mm, states, seed=len(descs))
                out["scene"] = {"floating": False, "nv": model.nv, "coupled": len(model.mimic_joint_names),
                                "errors": errors,
                                "worst": max(errors.values(), default=0.0)}
                out["worst"] = max(out["worst"], out["scene"]["worst"])
        except Exception:  # noqa: BLE001
            out["status"] = "fault"
            out["traceback"] = traceback.format_exc()[-2000:]
    return out


def _commit(folder: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def summarise(results: dict[str, dict]) -> dict:
    from engine.robots.mjcf_inventory import line_kind

    status = Counter(r["status"] for r in results.values())
    loaded = {k: r for k, r in results.items() if r["status"] == "loaded"}
    within = {f"{th:g}": sum(1 for r in loaded.values() if r["worst"] <= th) for th in THRESHOLDS}
    trees = [t for r in loaded.values() for t in r["trees"].values()]
    kinds: Counter = Counter()
    for r in loaded.values():
        kinds.update({line_kind(l) for l in r["not_modelled"]})
    refusals: Counter = Counter()
    for r in results.values():
        if r["status"] == "refused":
            reason = r["message"].split(": ", 1)[-1]
            refusals[reason.split(" '", 1)[0].split(" (", 1)[0][:80]] += 1
    return {
        "files": len(results), "status": dict(status), "loaded_within": within,
        "trees": len(trees), "floating_trees": sum(t["floating"] for t in trees),
        "several_trees": sum(1 for r in loaded.values() if len(r["trees"]) > 1),
        "coupled_files": sum(1 for r in loaded.values() if any(t["coupled"] for t in r["trees"].values())),
        "all_dof_kept": sum(1 for r in loaded.values() if r["nv_kept"] == r["nv_mujoco"]),
        "scenes": sum(1 for r in loaded.values() if "scene" in r),
        "scenes_all_dof": sum(1 for r in loaded.values()
                              if "scene" in r and r["scene"]["nv"] + r["scene"]["coupled"] == r["nv_mujoco"]),
        "scenes_coupled": sum(1 for r in loaded.values() if r.get("scene", {}).get("coupled")),
        "refused_one_line": sum(1 for r in results.values() if r["status"] == "refused" and r["one_line"]),
        "not_compiled_missing_file": sum(1 for r in results.values() if r["status"] == "not_compiled"
                                         and "Error opening file" in r["message"]),
        "not_compiled_loader": dict(Counter(r["loader"] for r in results.values() if r["status"] == "not_compiled")),
        "refusal_reasons": dict(refusals), "not_modelled_files": dict(kinds.most_common()),
        "gravcomp_files": sum(1 for r in loaded.values() if any("gravcomp" in t["errors"]
                                                                 for t in r["trees"].values())),
    }


def _tree_text(name: str, tree: dict) -> str:
    coupled = f", {tree['coupled']} coupled" if tree["coupled"] else ""
    return f"{name} ({tree['nv']} DoF{', free' if tree['floating'] else ''}{coupled})"


def write_report(out: Path, summary: dict, results: dict, label: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "menagerie.json").write_text(json.dumps({"summary": summary, "label": label, "files": results},
                                                   indent=1, sort_keys=True))
    s = summary
    lines = [
        "# MJCF collection through the loader, against MuJoCo",
        "",
        f"{label}",
        "",
        "Produced by `python -m experiments.menagerie FOLDER` (see its docstring for the protocol). Files with "
        "several kinematic trees (a robot and free objects) are compared tree by tree (`load_mjcf_trees`; "
        "`load_mjcf` without `tree=` loads a robot fixed to the world with its free objects beside it, each "
        "as three world slides and a ball joint, coupled joints or not, compared as one model too; beside "
        "a floating robot the largest tree, naming the others); joints coupled by a linear "
        "`<equality joint>` are mimic joints, compared as `P^T M P`, `P^T h`.",
        "",
        f"- files with a `<mujoco>` root: {s['files']}; status: "
        + ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())),
        f"- refused: {s['status'].get('refused', 0)}, each in one line: {s['refused_one_line']}; faults "
        f"(tracebacks): {s['status'].get('fault', 0)}",
        f"- not compiled by MuJoCo itself: {s['status'].get('not_compiled', 0)} (a file absent from the "
        f"snapshot: {s['not_compiled_missing_file']}; the rest are include fragments); the loader on them: "
        + ", ".join(f"{k} {v}" for k, v in sorted(s["not_compiled_loader"].items())),
        f"- loaded files: {s['status'].get('loaded', 0)}, with {s['trees']} kinematic trees "
        f"({s['floating_trees']} floating); files with several trees: {s['several_trees']}; files whose "
        f"trees hold all of MuJoCo's joints: {s['all_dof_kept']}; files with <equality joint> couplings "
        f"loaded as mimic joints: {s['coupled_files']}",
        f"- files `load_mjcf` loads as a fixed robot with its free objects beside it (compared as one model "
        f"too): {s['scenes']}, holding all of MuJoCo's joints: {s['scenes_all_dof']}, with coupled joints: "
        f"{s['scenes_coupled']}",
        "- loaded files whose every tree matches MuJoCo's mass matrix, bias forces and gravity torques "
        "(and qfrc_gravcomp where used), compiled and torch paths: "
        + ", ".join(f"<= {k}: {v}" for k, v in s["loaded_within"].items()),
        f"- files with body gravity compensation (compared): {s['gravcomp_files']}",
        "",
        "Refusal reasons (files):",
        "",
        *[f"- {k}: {v}" for k, v in sorted(s["refusal_reasons"].items())],
        "",
        "What loaded files hold that the model does not (files naming each kind in `not_modelled`):",
        "",
        *[f"- {k}: {v}" for k, v in s["not_modelled_files"].items()],
        "",
        "Files (status, worst relative error, trees):",
        "",
    ]
    for name, r in sorted(results.items()):
        if r["status"] == "loaded":
            trees = ", ".join(_tree_text(k, t) for k, t in r["trees"].items())
            if "scene" in r:
                trees += f"; with its objects: {_tree_text('world', r['scene'])}"
            lines.append(f"- `{name}`: loaded, worst {r['worst']:.1e}; {trees}")
        else:
            lines.append(f"- `{name}`: {r['status']}: {r.get('message', 'traceback in menagerie.json')[:240]}")
    (out / "README.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--states", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("results/menagerie"))
    parser.add_argument("--label", default=None, help="where the collection comes from (else its git commit)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)            # the loader's warnings are in the results
    files = sorted(p for p in args.folder.rglob("*.xml") if is_mjcf(p))
    results = {}
    for i, path in enumerate(files):
        rel = str(path.relative_to(args.folder))
        results[rel] = run_file(path, args.states)
        r = results[rel]
        print(f"[{i + 1}/{len(files)}] {rel}: {r['status']}"
              + (f" worst {r['worst']:.1e}" if r["status"] == "loaded" else f": {r.get('message', '')[:160]}"),
              file=sys.stderr, flush=True)
    commit = _commit(args.folder)
    label = args.label or (f"Collection: {args.folder.name} at commit {commit}" if commit
                           else f"Collection: {args.folder}")
    now = _dt.datetime.now(_dt.timezone.utc)
    label += f"\n\nRun {now:%Y-%m-%d %H:%M} UTC, engine commit {_commit(Path.cwd()) or '?'}."
    summary = summarise(results)
    write_report(args.out, summary, results, label)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
