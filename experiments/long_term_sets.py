"""How much the long-term figure depends on which 16 states the long-term set holds.

The paper's long-term figure is one set of 16 trajectories of 500 steps: the angle MSE on the
pendulum, the MSE of the whole state on the cart-pole (``PAPER_METRIC``; DEL models' velocities
by backward differences, as ``engine.training.metrics`` computes it). This script draws many more
such sets from the protocol's own distribution (the initial-state ranges of
``engine.data.config.PROTOCOLS``, zero control, the protocol's step), simulates them exactly, and
scores on every set the models a reproduction trained, beside the exact vector field integrated
by RK4. It prints, per model and size, the score on the reproduction's own set (the paper's
draws) and the spread of the scores over the random sets, the share of sets on which the model
scores no worse than the paper's published value (METHODS.md section 2), and per seed the shares
of :func:`joint_shares` and :func:`ordering_shares`.

    python -m experiments.long_term_sets RUNS_DIR [RUNS_DIR ...] [--system pendulum]
        [--sets 100] [--seed 0] [--json OUT]

RUNS_DIR: ``runs`` folders of ``python -m engine learn reproduce symo-<system> --out DIR`` (one
checkpoint folder per model, size and seed); runs of other systems are skipped. Everything runs
on one core, in float32 as the reproduction's own evaluation does.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch

from engine.data.config import DatasetConfig, protocol_for
from engine.data.dataset import generate_dataset
from engine.integrators import rk4_step
from engine.models.registry import load_model
from engine.systems import get_system
from engine.training.metrics import paper_rollout_velocities
from engine.training.report import PAPER_INTEGRATION_MSE, PAPER_METRIC

TRAJECTORIES_PER_SET = 16
STEPS = 500
SIZES = (8, 16, 32, 64, 128)       # the order of PAPER_INTEGRATION_MSE's lists
PAPER_LNODE_RK4_MAX = 0.60         # METHODS: the paper's pendulum L-NODE-RK4 lies in 0.39 to 0.60


def random_long_term_states(system: str, sets: int, seed: int) -> np.ndarray:
    """(sets * 16, 2n) initial states drawn uniformly from ``system``'s protocol ranges."""
    P = protocol_for(system)
    rng = np.random.default_rng(seed)
    return rng.uniform(P.state_low, P.state_high, size=(sets * TRAJECTORIES_PER_SET, len(P.state_low)))


def long_term_points(system, x0: np.ndarray, h: float) -> np.ndarray:
    """(B, 502, 2): the 502 points recorded after each step from ``x0``, as the paper's sampler
    records them (the rollouts start from the first two and predict the other 500)."""
    return system.simulate(x0, np.zeros((len(x0), system.control_dim)), h, STEPS + 2)[:, 1:]


@torch.no_grad()
def per_trajectory_figure(model, x: np.ndarray, whole_state: bool, h: float) -> np.ndarray:
    """(B,) each trajectory's long-term figure for ``model``'s 500-step rollouts from the first
    points of ``x`` (B, 502, 2n): the MSE of the configurations, or with ``whole_state`` of the
    state (q, qd), DEL models' velocities by backward differences (``evaluate``'s figures)."""
    xt = torch.as_tensor(x, dtype=torch.float32)
    n = x.shape[-1] // 2
    u = torch.zeros(len(x), x.shape[1], 1)
    q, qd = model.rollout(xt, u, STEPS)
    if whole_state:
        qd = paper_rollout_velocities(model, xt, q, qd, h)
        err = ((torch.cat([q, qd], -1) - xt[:, 2:STEPS + 2]) ** 2).mean(dim=(1, 2))
    else:
        err = ((q - xt[:, 2:STEPS + 2, :n]) ** 2).mean(dim=(1, 2))
    err = err.double().numpy()
    return np.where(np.isfinite(err), err, np.inf)


def exact_rk4_per_trajectory(system, x: np.ndarray, h: float, whole_state: bool) -> np.ndarray:
    """(B,) the figure of the exact vector field integrated by classical RK4 at step ``h``, from
    the same point as the models' rollouts (``x[:, 1]``) over the same 500 steps."""
    n = system.dof
    state = torch.as_tensor(x[:, 1], dtype=torch.float64)
    zero = torch.zeros(len(x), system.control_dim, dtype=torch.float64)
    states = []
    for _ in range(STEPS):
        state = rk4_step(system.state_derivative, state, zero, h)
        states.append(state)
    pred = torch.stack(states, 1).numpy()
    cols = slice(None) if whole_state else slice(0, n)
    return ((pred[..., cols] - x[:, 2:STEPS + 2, cols]) ** 2).mean(axis=(1, 2))


def set_scores(per_traj: np.ndarray) -> np.ndarray:
    """(sets,) the long-term figure of every set: the mean of its 16 trajectories' errors."""
    return per_traj.reshape(-1, TRAJECTORIES_PER_SET).mean(axis=1)


def summarise(per_traj: np.ndarray, own: float, paper: float | None) -> dict:
    scores = set_scores(per_traj)
    finite = scores[np.isfinite(scores)]
    q = np.quantile(finite, [0.1, 0.5, 0.9]) if finite.size else [math.nan] * 3
    out = {"own_set": own, "p10": float(q[0]), "median": float(q[1]), "p90": float(q[2]),
           "diverged_sets": int(np.sum(~np.isfinite(scores))), "sets": len(scores)}
    if paper is not None:
        out["paper"] = paper
        out["share_no_worse_than_paper"] = float(np.mean(scores <= paper))
    return out


def run_seeds(scores: dict) -> list[str]:
    """The seeds of the scored runs (names ``<model>-N<n>-s<seed>``), in order."""
    return sorted({k.rsplit("-s", 1)[1] for k in scores if k != "exact-rk4"})


def joint_shares(scores: dict, paper: dict, like_paper_max: float | None) -> dict:
    """How often one set would give the paper's figures together, per seed of the runs scored.

    ``scores``: run name (``symo-N32-s0``, ...) or ``exact-rk4`` -> (sets,) figures. For every seed
    with SyMo and E2E-SyMo runs at all five sizes: the share of sets on which SyMo (E2E-SyMo, both)
    is no worse than the paper at every size at once (the issue's target, had the paper's set been
    that one). With ``like_paper_max`` (the pendulum: the paper's L-NODE-RK4 lies at or below
    0.60), also among the sets on which the exact field with RK4 scores at most that (sets like
    the paper's, by its L-NODE-RK4 figure): the share on which each run is no worse than the
    paper, and the run's median figure.
    """
    like_paper = None if like_paper_max is None else scores["exact-rk4"] <= like_paper_max
    out = {"seeds": {}}
    if like_paper is not None:
        out["sets_like_paper_by_lnode_rk4"] = int(like_paper.sum())
    for seed in run_seeds(scores):
        entry = {"no_worse_at_every_n": {}}
        if like_paper is not None:
            entry.update(no_worse_given_like_paper={}, median_given_like_paper={})
        every = {}
        for kind in ("symo", "e2e-symo"):
            keys = [f"{kind}-N{n}-s{seed}" for n in SIZES]
            if all(k in scores for k in keys):
                every[kind] = np.all([scores[k] <= paper[kind][i] for i, k in enumerate(keys)], axis=0)
                entry["no_worse_at_every_n"][kind] = float(every[kind].mean())
            for i, k in enumerate(keys):
                if k in scores and like_paper is not None and like_paper.any():
                    entry["no_worse_given_like_paper"][k] = float(
                        np.mean(scores[k][like_paper] <= paper[kind][i])
                    )
                    entry["median_given_like_paper"][k] = float(np.median(scores[k][like_paper]))
        if len(every) == 2:
            entry["no_worse_at_every_n"]["both"] = float((every["symo"] & every["e2e-symo"]).mean())
        out["seeds"][seed] = entry
    return out


def ordering_shares(scores: dict) -> dict:
    """Per seed and size: the share of sets on which the paper's ordering holds, SyMo and E2E-SyMo
    below L-NODE-RK4 (``del_below_lnode``), L-NODE-RK4 below NODE-RK4 (``lnode_below_node``), and
    both (``ordering``), where the seed has all four runs at that size."""
    out = {}
    for seed in run_seeds(scores):
        for n in SIZES:
            keys = {kind: f"{kind}-N{n}-s{seed}" for kind in ("symo", "e2e-symo", "lnode-rk4", "node-rk4")}
            if not all(k in scores for k in keys.values()):
                continue
            sy, e2e, ln, no = (scores[keys[k]] for k in ("symo", "e2e-symo", "lnode-rk4", "node-rk4"))
            del_below = (sy < ln) & (e2e < ln)
            out.setdefault(seed, {})[f"N{n}"] = {"del_below_lnode": float(del_below.mean()),
                                                 "lnode_below_node": float((ln < no).mean()),
                                                 "ordering": float((del_below & (ln < no)).mean())}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--system", default="pendulum", choices=sorted(PAPER_INTEGRATION_MSE))
    ap.add_argument("--sets", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    name = args.system
    system = get_system(name)
    cfg = DatasetConfig(system=name, sampler="paper")
    h = cfg.time_step
    whole_state = PAPER_METRIC[name] == "integration_mse_state"
    own = generate_dataset(cfg).long_x                              # the reproduction's own set
    drawn = long_term_points(system, random_long_term_states(name, args.sets, args.seed), h)
    paper = PAPER_INTEGRATION_MSE[name]
    like_paper_max = PAPER_LNODE_RK4_MAX if name == "pendulum" else None

    report = {
        "system": name,
        "metric": PAPER_METRIC[name],
        "sets": args.sets,
        "seed": args.seed,
        "models": {},
    }
    exact_own = float(exact_rk4_per_trajectory(system, own, h, whole_state).mean())
    exact_drawn = exact_rk4_per_trajectory(system, drawn, h, whole_state)
    report["models"]["exact-rk4"] = summarise(exact_drawn, exact_own, like_paper_max)
    scores = {"exact-rk4": set_scores(exact_drawn)}
    folders = sorted(
        (p for d in args.runs for p in d.iterdir() if (p / "model.json").exists()), key=lambda p: p.name
    )
    for folder in folders:
        key = folder.name
        if key in scores:
            print(f"{folder}: {key} scored already (from another folder), skipped", flush=True)
            continue
        model, meta = load_model(folder)
        if meta["train_config"]["system"] != name:
            continue
        model.eval()
        kind, n = meta["type"], int(meta["train_config"]["trajectories"])
        own_score = float(per_trajectory_figure(model, own, whole_state, h).mean())
        if kind in paper and n in SIZES:
            published = paper[kind][SIZES.index(n)]
        else:
            published = like_paper_max if kind == "lnode-rk4" else None
        per_traj = per_trajectory_figure(model, drawn, whole_state, h)
        report["models"][key] = summarise(per_traj, own_score, published)
        print(key, json.dumps(report["models"][key]), flush=True)
        scores[key] = set_scores(per_traj)
    print("exact-rk4", json.dumps(report["models"]["exact-rk4"]))
    report["joint"] = joint_shares(scores, paper, like_paper_max)
    report["ordering"] = ordering_shares(scores)
    print("joint", json.dumps(report["joint"], indent=1))
    print("ordering", json.dumps(report["ordering"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
