"""Robot learning goals (issue 30, item 7) on a robot log whose truth is known.

    python -m experiments.robot_learning [--log resources/logs/panda_friction.csv]
        [--mapping ...mapping.json] [--params ...params.json] [--robot panda]
        [--models urdf,rigid-body,...] [--epochs N] [--horizon 200] [--timing-seconds 60]
        [--seeds 8,9] [--noise-factor 2.4] [--skip-compare] [--out results/robot_learning]

Runs, each as the CLI a user would type (``python -m engine ... --json`` in a fresh interpreter):

1. ``identify log --learn mass,damping,coulomb,armature,offset`` on the log: the identified rigid
   body's validation torque RMSE against the log's noise level (goal <= 1.5x), its damping,
   Coulomb friction and armature against the truth (goal within 20 % on the large joints) and its
   link masses against the truth where identifiable (goal 10 %);
2. the same identification on a longer log of the same robot made by the same generator
   (``--timing-seconds`` at 200 Hz, :func:`engine.data.mujoco_logs.panda_friction_log`): the
   identification's own time (its ``seconds``; goal 5 s for 60 s of a 7-DOF arm);
2b. with ``--seeds`` / ``--noise-factor``: the same identification on logs made by the same
   generator with other seeds, or with the torque noise times a factor (the goals are judged on
   the shipped log; these show how far its figures carry);
3. ``learn compare --robot`` of the models at default settings, except ``--horizon`` (rollouts
   of 200 steps reach 1 s at 200 Hz; the default 50 stops at 0.25 s): both metrics per model,
   the hybrid against the rigid body, the structured models against the black boxes at 1 s,
   and the whole comparison's wall time (goal 10 min).

Writes ``robot_learning.json`` and ``README.md`` (figures, the goals met or not, the machine and its
load) to ``--out``. A measurement, not a test: times depend on the machine and what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "resources" / "logs"
MODELS = "urdf,rigid-body,hybrid-rk4,robot-rk4,lnode-rk4,symo,e2e-symo,node-rk4,mlp"
LEARN = "mass,damping,coulomb,armature,offset"
LARGE_JOINTS = 4            # the Panda's joints 1-4 (87 N m motors); 5-7 are the small wrist
STRUCTURED = ("rigid-body", "hybrid-rk4", "robot-rk4", "lnode-rk4", "symo", "e2e-symo")
BLACK_BOXES = ("node-rk4", "mlp")


def run_cli(args: list[str]) -> tuple[dict, float]:
    """``python -m engine ARGS --json`` in a fresh interpreter: ``(its JSON, wall seconds)``."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "engine", *args, "--json"], cwd=ROOT, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"python -m engine {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout), wall


def identify(log: Path, mapping: Path, robot: str) -> tuple[dict, float]:
    """The identification alone (no black-box baseline, so its ``seconds`` is the fit's)."""
    return run_cli(["identify", "log", str(log), "--mapping", str(mapping), "--robot", robot, "--learn", LEARN,
                    "--blackbox-steps", "0"])


def truth_torque_rmse(log: Path, mapping: Path, truth: dict, v_s: float, window: int = 31) -> dict[str, list[float]]:
    """``{"all", "sliding"}``, per joint (N m): the log's torques against the engine's model given the
    truth (the URDF with the true masses, ``D qd + Fc tanh(qd / v_s) + Ia qdd``), q's derivatives by a
    Savitzky-Golay filter (window, polyorder 5), ``window`` samples off each end: what the model
    class can reach, over every sample and over the sliding ones (:func:`engine.logs.torques.sliding_rmse`)."""
    import numpy as np
    import torch
    from scipy.signal import savgol_filter

    from engine.logs import LogMapping, read_log
    from engine.logs.torques import sliding_rmse
    from engine.robots.library import load_robot

    table, mp = read_log(log), LogMapping.load(mapping)
    t = np.asarray(table.column(mp.time), dtype=float)
    q = np.column_stack([table.column(c) for c in mp.q])
    tau = np.column_stack([table.column(c) for c in mp.u])
    h = float(np.median(np.diff(t)))
    q, qd, qdd = (savgol_filter(q, window, 5, deriv=k, delta=h, axis=0)[window:-window] for k in (0, 1, 2))
    robot = load_robot(truth.get("robot", "panda")).with_link_params(mass=dict(zip(truth["links"], truth["mass"])))
    with torch.no_grad():
        rigid = robot.inverse_dynamics(*(torch.as_tensor(a, dtype=robot.dtype) for a in (q, qd, qdd))).numpy()
    d, c, a = (np.asarray(truth[k]) for k in ("damping", "coulomb", "armature"))
    res = rigid + d * qd + c * np.tanh(qd / v_s) + a * qdd - tau[window:-window]
    return {"all": [float(x) for x in np.sqrt(np.mean(res ** 2, axis=0))], "sliding": sliding_rmse(res, qd)[1],
            "sliding_share": float(np.mean(np.abs(qd) >= 0.1))}


def summarise(ident: dict, truth: dict) -> dict:
    """One log's identification against its truth: the torque RMSE over the noise, the relative
    errors (per cent) of damping, Coulomb friction and armature of the large joints and of the
    identifiable masses."""
    errs = {k: [100 * (g / w - 1) for g, w in zip(ident["joint_values"][k][:LARGE_JOINTS], truth[k][:LARGE_JOINTS])]
            for k in ("damping", "coulomb", "armature")}
    true_mass = dict(zip(truth["links"], truth["mass"]))
    errs["mass"] = {p["link"]: 100 * (p["identified"] / true_mass[p["link"]] - 1) for p in ident["parameters"]
                    if p["kind"] == "mass" and p["identifiable"] and p["link"] in true_mass}
    return {"rmse_over_noise": ident["torque_rmse_validation"]["learned"] / ident["noise_level"],
            "sliding_over_noise": ident["torque_rmse_validation_sliding"]["learned"] / ident["noise_level"],
            "torque_rmse": ident["torque_rmse_validation"]["learned"], "noise_level": ident["noise_level"],
            "seconds": ident["seconds"], "errors_percent": errs}


def extra_logs(seeds: list[int], noise_factor: float, robot: str) -> list[dict]:
    """The identification on logs of the same generator: other ``seeds``, and the shipped seed with
    the torque noise times ``noise_factor`` (0: none)."""
    from dataclasses import replace

    from engine.data.example_logs import write_example
    from engine.data.mujoco_logs import PandaFrictionLogConfig, panda_friction_log

    base = PandaFrictionLogConfig()
    variants = [(f"seed {s}", replace(base, seed=s)) for s in seeds]
    if noise_factor > 0:
        variants.append((f"torque noise x {noise_factor:g}",
                         replace(base, torque_noise=tuple(noise_factor * v for v in base.torque_noise))))
    out = []
    for label, cfg in variants:
        print(f"identifying the log with {label} ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            paths = write_example(panda_friction_log(cfg), tmp)
            truth = json.loads(Path(paths[3]).read_text())
            ident, _ = identify(paths[0], paths[1], robot)
            floor = truth_torque_rmse(paths[0], paths[1], truth, ident["coulomb_velocity_scale"])
        row = {"log": label, "torque_noise": list(cfg.torque_noise), "seed": cfg.seed, **summarise(ident, truth)}
        row["truth_rmse_over_noise"] = _rms(floor["all"]) / ident["noise_level"]
        row["truth_sliding_over_noise"] = _rms(floor["sliding"]) / ident["noise_level"]
        out.append(row)
    return out


def _rows(compare) -> list[dict]:
    if isinstance(compare, dict):
        compare = compare.get("rows", compare.get("models", []))
    return list(compare)


def _rms(values) -> float:
    return float(sum(v * v for v in values) / len(values)) ** 0.5


def _num(x) -> str:
    return "none" if x is None else f"{x:.4g}"


def _goal(goal: str, met: bool | None, figure: str) -> dict:
    return {"goal": goal, "met": met, "figure": figure}


def evaluate_goals(report: dict) -> list[dict]:
    """The issue's goals, each ``{"goal", "met" (True, False, None: not measured), "figure"}``."""
    ident, truth = report["identify"], report["truth"]
    goals = []
    rmse, noise = ident["torque_rmse_validation"]["learned"], ident["noise_level"]
    floor = report["truth_torque_rmse"]
    goals.append(_goal("identified rigid body: validation torque RMSE <= 1.5 x noise, every sample",
                       rmse <= 1.5 * noise,
                       f"{rmse:.4f} N m = {rmse / noise:.2f} x noise {noise:.4f} N m (the engine's model given the "
                       f"truth: {_rms(floor['all']) / noise:.2f} x)"))
    sliding = ident["torque_rmse_validation_sliding"]["learned"]
    goals.append(_goal("identified rigid body: validation torque RMSE <= 1.5 x noise, sliding samples "
                       "(|qd| >= 0.1 rad/s, where the motion determines the friction torque)", sliding <= 1.5 * noise,
                       f"{sliding:.4f} N m = {sliding / noise:.2f} x noise (the truth's: "
                       f"{_rms(floor['sliding']) / noise:.2f} x; {100 * floor['sliding_share']:.0f} % of the "
                       "joint samples slide)"))
    worst = []
    for kind in ("damping", "coulomb", "armature"):
        got, want = ident["joint_values"][kind][:LARGE_JOINTS], truth[kind][:LARGE_JOINTS]
        errs = [abs(g - w) / w for g, w in zip(got, want)]
        worst.append(max(errs))
        goals.append(_goal(f"{kind} of joints 1-{LARGE_JOINTS} within 20 % of the truth", max(errs) <= 0.2,
                           "errors " + ", ".join(f"{100 * e:.0f} %" for e in errs)))
    true_mass = dict(zip(truth["links"], truth["mass"]))
    mass_errs = {q["link"]: (q["identified"] - true_mass[q["link"]]) / true_mass[q["link"]]
                 for q in ident["parameters"] if q["kind"] == "mass" and q["identifiable"] and q["link"] in true_mass}
    goals.append(_goal("link masses within 10 % where identifiable",
                       bool(mass_errs) and max(abs(e) for e in mass_errs.values()) <= 0.1,
                       ", ".join(f"{k.replace('panda_', '')} {100 * e:+.0f} %" for k, e in mass_errs.items())))
    rows = {r["model"]: r for r in _rows(report.get("compare", []))}

    def at(name, key="1"):
        r = rows.get(name, {})
        return (r.get("rollout_rmse") or {}).get(key)

    if "hybrid-rk4" in rows and "rigid-body" in rows:
        h, r = rows["hybrid-rk4"], rows["rigid-body"]
        ht, rt = h.get("torque_rmse"), r.get("torque_rmse")
        met = None if ht is None or rt is None else ht <= rt and (at("hybrid-rk4") or 0) <= (at("rigid-body") or 0)
        goals.append(_goal("hybrid no worse than the rigid body (torque RMSE and 1 s rollout)", met,
                           f"torque {_num(ht)} vs {_num(rt)} N m; 1 s rollout {_num(at('hybrid-rk4'))} vs "
                           f"{_num(at('rigid-body'))} rad"))
    else:
        goals.append(_goal("hybrid no worse than the rigid body", None, "not run"))
    s1 = {m: at(m) for m in STRUCTURED if m in rows}
    b1 = {m: at(m) for m in BLACK_BOXES if m in rows}
    if s1 and b1 and None not in s1.values() and None not in b1.values():
        met = max(s1.values()) < min(b1.values())
    else:
        met = None
    goals.append(_goal("every structured model better than the black boxes at 1 s rollouts", met,
                       ", ".join(f"{m} {v:.3g}" if v is not None else f"{m} none" for m, v in {**s1, **b1}.items())
                       or "not run"))
    if "timing" in report:
        t = report["timing"]
        goals.append(_goal(f"identification of {t['log_seconds']:g} s at {t['rate']:g} Hz of a 7-DOF arm within 5 s",
                           t["identification_s"] <= 5.0, f"{t['identification_s']:.1f} s"))
    if "compare_wall_s" in report:
        goals.append(_goal("the whole comparison within 10 minutes", report["compare_wall_s"] <= 600.0,
                           f"{report['compare_wall_s']:.0f} s"))
    return goals


def write_readme(report: dict, path: Path) -> None:
    """The report as Markdown (module doc)."""
    ident, truth = report["identify"], report["truth"]
    lines = ["# Robot learning goals (issue 30, item 7)", "",
             f"Log `{report['log']}` (robot `{report['robot']}`; how it was made and its truth: its README). "
             "Made by `python -m experiments.robot_learning`; the figures are in `robot_learning.json`.", "",
             "## Goals", "", "| goal | met | figure |", "|---|---|---|"]
    for g in report["goals"]:
        lines.append(f"| {g['goal']} | {'yes' if g['met'] else ('no' if g['met'] is False else 'not measured')} "
                     f"| {g['figure']} |")
    lines += ["", "## Identification (`identify log --learn " + LEARN + "`)", "",
              f"Validation torque RMSE {ident['torque_rmse_validation']['learned']:.4f} N m (URDF as it is: "
              f"{ident['torque_rmse_validation']['nominal']:.4f}) against a noise level of "
              f"{ident['noise_level']:.4f} N m; "
              "per joint: " + ", ".join(f"{x:.3f}" for x in ident["torque_rmse_validation_per_joint"]["learned"])
              + f" N m. Identification time {ident['seconds']:.1f} s. For reference, the engine's model given "
              "the truth (true masses, damping, `Fc tanh(qd / v_s)`, armature) scores "
              + ", ".join(f"{x:.3f}" for x in report["truth_torque_rmse"]["all"])
              + " N m per joint on the whole log ("
              + f"{_rms(report['truth_torque_rmse']['all']) / ident['noise_level']:.2f} x noise): the smooth "
              "Coulomb model against MuJoCo's dry friction, which sticks near rest, bounds what any fit of this "
              "model class reaches. Over the sliding samples (joint i's where |qd_i| >= 0.1 rad/s; "
              f"{100 * report['truth_torque_rmse']['sliding_share']:.0f} % of them), where the friction torque is a "
              "function of the motion, the fit scores "
              + ", ".join(f"{x:.3f}" for x in ident["torque_rmse_validation_sliding_per_joint"]["learned"])
              + f" N m ({ident['torque_rmse_validation_sliding']['learned'] / ident['noise_level']:.2f} x noise) and "
              "the truth " + ", ".join(f"{x:.3f}" for x in report["truth_torque_rmse"]["sliding"])
              + f" N m ({_rms(report['truth_torque_rmse']['sliding']) / ident['noise_level']:.2f} x).", "",
              "| joint | damping (truth) | Coulomb (truth) | armature (truth) |", "|---|---|---|---|"]
    for i, j in enumerate(truth["joints"]):
        jv = ident["joint_values"]
        lines.append(f"| {j} | {jv['damping'][i]:.3f} ({truth['damping'][i]}) | {jv['coulomb'][i]:.3f} "
                     f"({truth['coulomb'][i]}) | {jv['armature'][i]:.4f} ({truth['armature'][i]}) |")
    lines += ["", "| link | identified mass (kg) | truth (kg) | note |", "|---|---|---|---|"]
    true_mass = dict(zip(truth["links"], truth["mass"]))
    for q in ident["parameters"]:
        if q["kind"] == "mass" and q["link"] in true_mass:
            lines.append(f"| {q['link']} | {q['identified']:.3f} | {true_mass[q['link']]:.3f} | {q['reason']} |")
    if "timing" in report:
        t = report["timing"]
        lines += ["", f"Timing: {t['log_seconds']:g} s at {t['rate']:g} Hz of the 7-DOF Panda (same generator): "
                  f"identification {t['identification_s']:.1f} s ({t['samples_train']} training samples; "
                  f"the CLI's whole run {t['cli_wall_s']:.1f} s with the interpreter's start-up and reading the "
                  "log)."]
    extra = report.get("extra_logs", [])
    if extra:
        lines += ["", "Other logs of the same generator (same settings unless named; the goals above are judged on "
                  "the shipped log). Errors in per cent of the truth; damping, Coulomb, armature of joints "
                  f"1-{LARGE_JOINTS}.", "",
                  "| log | RMSE / noise (truth's) | sliding RMSE / noise (truth's) | damping | Coulomb | armature | "
                  "masses | seconds |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in extra:
            e = row["errors_percent"]
            lines.append(f"| {row['log']} | {row['rmse_over_noise']:.2f} ({row['truth_rmse_over_noise']:.2f}) | "
                         f"{row['sliding_over_noise']:.2f} ({row['truth_sliding_over_noise']:.2f}) | "
                         + " | ".join(", ".join(f"{v:+.0f}" for v in e[k]) for k in ("damping", "coulomb", "armature"))
                         + " | " + ", ".join(f"{k.replace('panda_', '')} {v:+.0f}" for k, v in e["mass"].items())
                         + f" | {row['seconds']:.1f} |")
    rows = _rows(report.get("compare", []))
    if rows:
        lines += ["", f"## Comparison (`{report['compare_command']}`)", "",
                  f"Wall time {report['compare_wall_s']:.0f} s"
                  + (f", epochs {report['compare_epochs']}" if report.get("compare_epochs") else ", default epochs")
                  + ".", "",
                  "| model | torque RMSE (N m) | sliding (N m) | rollout RMSE 0.1 / 0.5 / 1 s (rad) | seconds | note |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            ro = r.get("rollout_rmse") or {}
            tr = r.get("torque_rmse")
            sl = r.get("torque_rmse_sliding")
            lines.append(f"| {r['model']} | {'-' if tr is None else f'{tr:.4f}'} | "
                         f"{'-' if sl is None else f'{sl:.4f}'} | "
                         + " / ".join(f"{ro[k]:.3g}" if k in ro else "-" for k in ("0.1", "0.5", "1"))
                         + f" | {r.get('seconds', 0):.0f} | {r.get('error') or r.get('torque_note') or ''} |")
    else:
        lines += ["", "## Comparison", "", "Not run in this report (see the goals above)."]
    for key, label in (("machine_before", "before"), ("machine_after", "after")):
        m = report[key]
        lines += ["", f"Machine ({label}): {m['cpu']}, {m['cores']} cores, {m['platform']}, Python {m['python']}; "
                  f"load average (1/5/15 min) {m['load_average_1_5_15']}."]
    notes = report.get("notes", [])
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    path.write_text("\n".join(lines) + "\n")


def machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "load_average_1_5_15": [round(x, 2) for x in load] if load else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log", type=Path, default=LOGS / "panda_friction.csv")
    p.add_argument("--mapping", type=Path, default=LOGS / "panda_friction.mapping.json")
    p.add_argument("--params", type=Path, default=LOGS / "panda_friction.params.json",
                   help="the log's truth (damping, coulomb, armature per joint; links and masses)")
    p.add_argument("--robot", default="panda")
    p.add_argument("--models", default=MODELS)
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default: learn compare's)")
    p.add_argument("--horizon", type=int, default=200, help="rollout steps (200 at 200 Hz: 1 s)")
    p.add_argument("--timing-seconds", type=float, default=60.0,
                   help="length of the generated log the identification is timed on (0: skip)")
    p.add_argument("--seeds", default="", help="comma-separated generator seeds of further logs identified "
                   "the same way (e.g. 8,9; default none)")
    p.add_argument("--noise-factor", type=float, default=0.0,
                   help="also identify the shipped seed's log with the torque noise times this (0: no)")
    p.add_argument("--skip-compare", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "robot_learning")
    p.add_argument("--readme-from", type=Path, default=None,
                   help="only rewrite README.md (goals judged again) from this robot_learning.json")
    args = p.parse_args(argv)
    if args.readme_from is not None:
        report = json.loads(args.readme_from.read_text())
        report["goals"] = evaluate_goals(report)
        args.readme_from.write_text(json.dumps(report, indent=2, default=float) + "\n")
        write_readme(report, args.readme_from.parent / "README.md")
        return 0
    truth = json.loads(args.params.read_text())
    report: dict = {"log": os.path.relpath(args.log, ROOT), "robot": args.robot, "truth": truth,
                    "machine_before": machine()}

    print(f"identifying {args.log.name} ...", flush=True)
    report["identify"], report["identify_wall_s"] = identify(args.log, args.mapping, args.robot)
    report["truth_torque_rmse"] = truth_torque_rmse(args.log, args.mapping, truth,
                                                    report["identify"]["coulomb_velocity_scale"])

    if args.timing_seconds > 0:
        from dataclasses import replace

        from engine.data.example_logs import write_example
        from engine.data.mujoco_logs import PandaFrictionLogConfig, panda_friction_log

        print(f"timing the identification on {args.timing_seconds:g} s ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            cfg = replace(PandaFrictionLogConfig(), duration=float(args.timing_seconds))
            paths = write_example(panda_friction_log(cfg), tmp)
            timed, wall = identify(paths[0], paths[1], "panda")
        report["timing"] = {"log_seconds": args.timing_seconds, "rate": cfg.rate, "dof": 7,
                            "identification_s": timed["seconds"], "cli_wall_s": wall,
                            "samples_train": timed["samples_train"],
                            "torque_rmse_validation": timed["torque_rmse_validation"],
                            "noise_level": timed["noise_level"]}

    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    if seeds or args.noise_factor > 0:
        report["extra_logs"] = extra_logs(seeds, args.noise_factor, args.robot)

    if not args.skip_compare:
        cmd = ["learn", "compare", "--log", str(args.log), "--mapping", str(args.mapping), "--robot", args.robot,
               "--models", args.models, "--horizon", str(args.horizon)]
        if args.epochs is not None:
            cmd += ["--epochs", str(args.epochs)]
        print(f"comparing {args.models} ...", flush=True)
        report["compare"], report["compare_wall_s"] = run_cli(cmd)
        report["compare_command"] = "python -m engine " + " ".join(
            os.path.relpath(c, ROOT) if c.startswith(str(ROOT)) else c for c in cmd)
        report["compare_epochs"] = args.epochs
    report["machine_after"] = machine()
    report["goals"] = evaluate_goals(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "robot_learning.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    write_readme(report, args.out / "README.md")
    for goal in report["goals"]:
        print(f"{'met' if goal['met'] else ('NOT met' if goal['met'] is False else 'n/a')}: {goal['goal']}: "
              f"{goal['figure']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
