"""Batched inverse kinematics: Levenberg-Marquardt (damped least squares) with joint limits.

``solve_ik(model, {link: target, ...})`` finds joint positions that put each link at its
target: a ``(..., 4, 4)`` pose (position and orientation) or a ``(..., 3)`` position. All
targets share one leading batch shape ``B`` (broadcast), and every sample of the batch is
solved at once, without a Python loop over samples:

- residual per target: position error ``p* - p(q)`` (m) and, for poses, the rotation error
  ``log(R* R(q)^T)`` (rad, world frame), weighted by ``IKOptions.rotation_weight``;
- Levenberg-Marquardt step ``dq = (J^T W J + lambda I)^-1 J^T W e`` with the geometric
  world-frame Jacobian and ``lambda = mu * cost + damping`` (after Sugihara 2011, so the
  damping vanishes near a solution), ``mu`` adapted per sample (accepted steps shrink it,
  rejected ones grow it); steps are projected onto the joint limits, and a joint that sits
  at a limit the gradient pushes against is held still (an active set), so the other joints
  keep making progress;
- a sample stops when every target is within ``tol_pos`` and ``tol_rot``, or when it stalls
  (no 5 % progress over ``stall_window`` iterations, or ``mu`` at its ceiling); finished
  samples leave the working set, so the cost follows the unsolved ones;
- multi-start: the first start is ``q0`` (or the neutral pose: the middle of the joint
  limits); for small batches every start runs at once (the first to converge wins), for
  large ones the unsolved samples are restarted from ``n_starts - 1`` random poses within
  the limits (all at once); the best solution is kept.

Kinematics are the model's: :meth:`RobotModel.frame_jacobians` (one forward-kinematics and
Jacobian pass of the model's backend for every target; the compiled kernels where no
derivative is needed), the columns restricted to the joints that move a target
(:meth:`RobotModel.joints_moving`). Nothing is cached or stored on the model.

Floating-base robots, robots with coupled mimic joints and robots with ball joints are solved by
:func:`engine.robots.ik_floating.solve_whole_body_ik` (on the configuration manifold, the
base free or fixed, chosen links held in place): ``solve_ik(model, targets, q0, hold=(...),
base="free")`` dispatches there and returns q ``(*B, nq)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from engine.robots.ik_floating import solve_whole_body_ik
from engine.spatial import rotation_error_vector
from engine.validation import check_int, check_range

__all__ = ["IKOptions", "IKResult", "solve_ik", "neutral_configuration",
           "rotation_error_vector"]


@dataclass(frozen=True)
class IKOptions:
    """Defaults of the IK solver (shared by the CLI, the GUI and :func:`solve_ik`).

    tol_pos: position tolerance (m); tol_rot: rotation tolerance (rad), both per target.
    Damping: lambda = mu * cost + damping, with mu starting at mu_init, multiplied by mu_down
    after an accepted step and by mu_up after a rejected one, within [mu_min, mu_max] (a start
    whose mu reaches mu_max is given up). rotation_weight: weight of the rotation rows
    (m per rad) in the least-squares problem. max_step: largest joint step per iteration
    (rad or m). stall_window: a start that has not reduced its cost by 5 % over this many
    iterations is given up (0: never).
    n_starts: starts per sample (the first from q0, the others random within the limits).
    parallel_starts_limit: when batch x n_starts is at most this, all starts run at once
    (cheap for small batches); otherwise random restarts follow for unsolved samples only.
    """

    max_iters: int = 100
    tol_pos: float = 1e-3
    tol_rot: float = 1e-2
    damping: float = 1e-3
    mu_init: float = 1.0
    mu_down: float = 0.5
    mu_up: float = 4.0
    mu_min: float = 1e-3
    mu_max: float = 1e6
    rotation_weight: float = 1.0
    max_step: float = 0.5
    n_starts: int = 16
    stall_window: int = 20
    parallel_starts_limit: int = 64
    seed: int = 0
    position_only: bool = False

    def __post_init__(self):
        """Every number checked here, once, for the CLI flags, the GUI and :func:`solve_ik`."""
        who = "IK setting"
        check_int(who, "max_iters (--max-iters)", self.max_iters, 1, 100_000)
        check_range(who, "tol_pos (--tol-pos)", self.tol_pos, 0.0, 1.0, lo_open=True, unit="m",
                    hint="a position tolerance such as 0.001 (1 mm)")
        check_range(who, "tol_rot (--tol-rot)", self.tol_rot, 0.0, math.pi, lo_open=True, unit="rad",
                    hint="a rotation tolerance such as 0.01")
        check_range(who, "damping (--damping)", self.damping, 0.0, 10.0, hint="a small damping such as 0.001")
        check_range(who, "mu_min (--mu-min)", self.mu_min, 0.0, 1e9, lo_open=True, hint="for example 0.001")
        check_range(who, "mu_max (--mu-max)", self.mu_max, self.mu_min, 1e12, lo_open=True,
                    hint="it must be above --mu-min; for example 1e6")
        check_range(who, "mu_init (--mu-init)", self.mu_init, self.mu_min, self.mu_max,
                    hint="it must lie between --mu-min and --mu-max; for example 1")
        check_range(who, "mu_down (--mu-down)", self.mu_down, 0.0, 1.0, lo_open=True, hi_open=True,
                    hint="the factor after an accepted step, for example 0.5")
        check_range(who, "mu_up (--mu-up)", self.mu_up, 1.0, 1e6, lo_open=True,
                    hint="the factor after a rejected step, for example 4")
        check_range(who, "rotation_weight (--rotation-weight)", self.rotation_weight, 0.0, 1e3, lo_open=True,
                    unit="m/rad", hint="for example 1")
        check_range(who, "max_step (--max-step)", self.max_step, 0.0, 10.0, lo_open=True,
                    hint="the largest joint step per iteration (rad or m), for example 0.5")
        check_int(who, "n_starts (--n-starts)", self.n_starts, 1, 10_000)
        check_int(
            who, "stall_window (--stall-window)", self.stall_window, 0, 100_000, hint="0 never gives up"
        )
        check_int(
            who, "parallel_starts_limit (--parallel-starts-limit)", self.parallel_starts_limit, 0, 1_000_000
        )
        check_int(who, "seed (--seed)", self.seed, 0, 2**63 - 1)


@dataclass
class IKResult:
    """Result of :func:`solve_ik` for a batch of shape ``B``.

    q: (*B, dof) joint positions, within the limits. converged: (*B,) bool, every target within
    tol_pos and tol_rot. position_error: (*B,) largest position error over the targets (m).
    rotation_error: (*B,) largest rotation error over the pose targets (rad; 0 without any).
    residual: (*B,) norm of the weighted residual vector. iterations: (*B,) LM iterations
    spent on the sample (all starts). starts: (*B,) starts used (1 = converged from q0).
    """

    q: torch.Tensor
    converged: torch.Tensor
    position_error: torch.Tensor
    rotation_error: torch.Tensor
    residual: torch.Tensor
    iterations: torch.Tensor
    starts: torch.Tensor

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name).detach().cpu().tolist() for f in fields(self)}


# --------------------------------------------------------------------------- kinematics

class _TargetKinematics:
    """Poses and world Jacobians of the target links, from the model's backend
    (:meth:`RobotModel.frame_jacobians`: one kinematics pass for every target, compiled where
    no derivative is needed), the Jacobian's columns restricted to the joints that move at
    least one target (``active`` indexes q; ``n`` of them). Made per solve: nothing is cached.

    ``__call__(q (N, dof))`` -> poses ``(N, T, 4, 4)``, Jacobians ``(N, T, 6, n)`` in q's dtype.
    """

    def __init__(self, model, links: Sequence[str], dtype, device):
        names = getattr(model, "link_names", None)
        if names is None or not hasattr(model, "frame_jacobians"):
            raise TypeError(f"{type(model).__name__} is not an engine RobotModel; solve_ik needs one")
        for link in links:
            if link not in names:
                close = ", ".join(sorted(names)[:20])
                raise ValueError(f"no link named {link!r} in robot {model.name!r} (links: {close})")
        self.model, self.links, self.dtype = model, tuple(links), dtype
        active = model.joints_moving(self.links)
        self.n = len(active)
        self._every_joint = self.n == model.dof
        self.active = torch.tensor(active, dtype=torch.long, device=device)

    def __call__(self, q: torch.Tensor):
        poses, J = self.model.frame_jacobians(q, self.links)
        if not self._every_joint:
            J = J.index_select(-1, self.active.to(J.device))
        return poses.to(self.dtype), J.to(self.dtype)


# --------------------------------------------------------------------------- rotations

# --------------------------------------------------------------------------- helpers

def _limits(model, dof, dtype, device):
    lim = getattr(model, "joint_limits", None)
    if lim is None:
        lower = torch.full((dof,), -math.inf, dtype=dtype, device=device)
        return lower, -lower
    if isinstance(lim, Mapping):
        lower, upper = lim["lower"], lim["upper"]
    elif hasattr(lim, "lower"):
        lower, upper = lim.lower, lim.upper
    else:
        lower, upper = lim[0], lim[1]
    return (torch.as_tensor(lower, dtype=dtype, device=device).reshape(dof),
            torch.as_tensor(upper, dtype=dtype, device=device).reshape(dof))


def neutral_configuration(model, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """The neutral pose (dof,): the middle of each joint's limits, zero where a joint has none.

    (For the Panda: elbow at -1.57 rad and wrist at 1.87 rad, a well-conditioned pose, where
    zero would clamp the elbow to its singular, stretched limit.)
    """
    dof = int(model.dof)
    lower, upper = _limits(model, dof, dtype, device)
    bounded = torch.isfinite(lower) & torch.isfinite(upper)
    mid = torch.where(bounded, 0.5 * (lower.nan_to_num(0.0) + upper.nan_to_num(0.0)), torch.zeros_like(lower))
    return torch.minimum(torch.maximum(mid, lower), upper)


def _random_configurations(lower, upper, shape, generator, dtype, device):
    lo = torch.where(torch.isfinite(lower), lower, torch.full_like(lower, -math.pi))
    hi = torch.where(torch.isfinite(upper), upper, torch.full_like(upper, math.pi))
    hi = torch.maximum(hi, lo)
    u = torch.rand(*shape, lower.shape[-1], generator=generator, dtype=dtype).to(device)
    return lo + u * (hi - lo)


@dataclass
class _Problem:
    kin: _TargetKinematics
    pos_t: torch.Tensor               # (*B, T, 3)
    rot_t: torch.Tensor | None     # (*B, T, 3, 3) or None
    rot_mask: torch.Tensor            # (T,) bool: target t has an orientation
    weights: torch.Tensor             # (T, 6) row weights (0 for unused rows)


def _residual(prob: _Problem, poses: torch.Tensor, pos_t, rot_t):
    """Residual rows (..., T, 6), position errors (..., T), rotation errors (..., T)."""
    e_p = pos_t - poses[..., :3, 3]
    perr = torch.linalg.vector_norm(e_p, dim=-1)
    if rot_t is not None:
        R_err = rot_t @ poses[..., :3, :3].transpose(-1, -2)
        e_r, theta = rotation_error_vector(R_err)
        e_r = e_r * prob.rot_mask[:, None]
        rerr = theta * prob.rot_mask
    else:
        e_r = torch.zeros_like(e_p)
        rerr = torch.zeros_like(perr)
    return torch.cat([e_p, e_r], dim=-1), perr, rerr


def _lm(prob: _Problem, q, pos_t, rot_t, lower, upper, opts: IKOptions, starts: int = 1,
        ctx=None, progress=(0.0, 1.0)):
    """Levenberg-Marquardt on a flat batch of N problems: q (N, dof), targets (N, T, ...).

    With ``starts > 1`` the N problems are ``starts`` blocks of N / starts samples (start-major)
    and a sample stops as soon as one of its starts has converged. The damping is
    ``lambda = mu * cost + damping`` (after Sugihara, 2011: it vanishes near a solution, for
    fast final convergence), ``mu`` adapted per problem. Problems that are done leave the
    working set. Returns q, per-target position and rotation errors, cost, iterations.
    """
    kin = prob.kin
    active = kin.active
    N = q.shape[0]
    G = N // starts
    W = prob.weights.reshape(-1)                           # (6T,)
    lo_a, hi_a = lower.index_select(0, active), upper.index_select(0, active)
    eye = torch.eye(kin.n, dtype=q.dtype, device=q.device)
    tol_p, tol_r = opts.tol_pos, opts.tol_rot

    q = q.clone()
    poses, J = kin(q)
    e, perr, rerr = _residual(prob, poses, pos_t, rot_t)
    cost = (W * e.reshape(N, -1) ** 2).sum(-1)
    conv = (perr <= tol_p).all(-1) & (rerr <= tol_r).all(-1)
    iters = torch.zeros(N, dtype=torch.long, device=q.device)
    if kin.n == 0:  # no joint moves the targets: nothing to solve
        return q, perr, rerr, cost, iters

    # working set (live problems); full-size arrays are updated when the set shrinks
    live = torch.arange(N, device=q.device)
    q_l, J_l, e_l, cost_l = q, J, e, cost
    perr_l, rerr_l, pt_l, rt_l = perr, rerr, pos_t, rot_t
    mu_l = torch.full((N,), opts.mu_init, dtype=q.dtype, device=q.device)
    it_l = iters
    ref_l = cost
    done_l = conv if starts == 1 else conv.view(starts, G).any(0).repeat(starts)

    def _flush():
        for full, part in ((q, q_l), (perr, perr_l), (rerr, rerr_l), (cost, cost_l), (iters, it_l)):
            if part is not full:
                full.index_copy_(0, live, part)

    for it in range(opts.max_iters):
        n_done = int(done_l.sum())
        if n_done:
            if n_done == live.numel():
                break
            # leave the done problems behind
            _flush()
            keep = torch.nonzero(~done_l).squeeze(-1)
            live = live.index_select(0, keep)
            q_l, J_l, e_l, cost_l = (t.index_select(0, keep) for t in (q_l, J_l, e_l, cost_l))
            perr_l, rerr_l, mu_l, it_l, ref_l = (
                t.index_select(0, keep) for t in (perr_l, rerr_l, mu_l, it_l, ref_l)
            )
            pt_l = pt_l.index_select(0, keep)
            rt_l = rt_l.index_select(0, keep) if rt_l is not None else None
        if ctx is not None:
            ctx.check_cancelled()
            if it % 10 == 0:
                ctx.progress(progress[0] + (progress[1] - progress[0]) * it / max(opts.max_iters, 1),
                             f"IK iteration {it}", {"unsolved": float(live.numel())})
        M = live.numel()
        Jf = J_l.reshape(M, -1, kin.n)                     # (M, 6T, n)
        qa = q_l.index_select(-1, active)
        JtW = Jf.transpose(-1, -2) * W
        g = JtW @ e_l.reshape(M, -1, 1)
        # active set: a joint at a limit that the gradient pushes outwards is held still
        blocked = ((qa <= lo_a) & (g[..., 0] < 0)) | ((qa >= hi_a) & (g[..., 0] > 0))
        free = (~blocked).to(q.dtype)
        JtW = JtW * free[..., None]
        g = g * free[..., None]
        A = torch.baddbmm((mu_l * cost_l + opts.damping)[:, None, None] * eye, JtW, Jf * free[:, None, :])
        dq = torch.linalg.solve(A, g).squeeze(-1)
        dq = dq * (opts.max_step / dq.abs().amax(-1, keepdim=True).clamp_min(opts.max_step))
        qa_new = torch.minimum(torch.maximum(qa + dq, lo_a), hi_a)
        q_new = q_l.index_copy(-1, active, qa_new)
        poses_n, J_n = kin(q_new)
        e_n, perr_n, rerr_n = _residual(prob, poses_n, pt_l, rt_l)
        cost_n = (W * e_n.reshape(M, -1) ** 2).sum(-1)
        accept = cost_n < cost_l
        a1 = accept[:, None]
        q_l = torch.where(a1, q_new, q_l)
        J_l = torch.where(accept[:, None, None, None], J_n, J_l)
        e_l = torch.where(accept[:, None, None], e_n, e_l)
        perr_l = torch.where(a1, perr_n, perr_l)
        rerr_l = torch.where(a1, rerr_n, rerr_l)
        cost_l = torch.where(accept, cost_n, cost_l)
        mu_l = torch.where(accept, mu_l * opts.mu_down, mu_l * opts.mu_up).clamp(opts.mu_min, opts.mu_max)
        it_l = it_l + 1
        conv_l = (perr_l <= tol_p).all(-1) & (rerr_l <= tol_r).all(-1)
        # a problem whose damping hit the ceiling is stuck in a local minimum
        done_l = conv_l | (mu_l >= opts.mu_max)
        if opts.stall_window and (it + 1) % opts.stall_window == 0:
            # no 5 % progress over a window: a local minimum (or a target out of reach)
            done_l = done_l | (cost_l > 0.95 * ref_l)
            ref_l = cost_l
        if starts > 1:
            conv.index_copy_(0, live, conv_l)
            group_done = conv.view(starts, G).any(0).repeat(starts)
            done_l = done_l | group_done.index_select(0, live)
    _flush()
    return q, perr, rerr, cost, iters


def _pick_best(S: int, G: int, q, perr, rerr, cost, opts: IKOptions):
    """Best of S starts (start-major blocks of G): converged first, then the lowest cost."""
    conv = ((perr <= opts.tol_pos).all(-1) & (rerr <= opts.tol_rot).all(-1)).view(S, G)
    score = torch.where(conv, cost.view(S, G) - 1e300, cost.view(S, G))
    best = score.argmin(0)
    pick = best * G + torch.arange(G, device=q.device)
    return pick, conv


def _as_tensor(x, dtype, device):
    if isinstance(x, torch.Tensor):
        return x.detach().to(dtype=dtype, device=device)
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=dtype, device=device)


def solve_ik(model, targets: Mapping[str, object], q0=None, *, position_only: bool | None = None,
             max_iters: int | None = None, tol_pos: float | None = None, tol_rot: float | None = None,
             damping: float | None = None, n_starts: int | None = None, seed: int | None = None,
             options: IKOptions | None = None, ctx=None, **overrides) -> IKResult:
    """Solve inverse kinematics for a batch of targets.

    model: an engine RobotModel. targets: ``{link name: (*B, 4, 4) pose or (*B, 3) position}``
    (world frame, m); the batch shapes broadcast. q0: (*B, dof) or (dof,) start (default: the
    neutral pose). Keyword overrides of :class:`IKOptions` (``options``; None keeps its
    value): ``position_only`` (ignore the orientation of pose targets), ``max_iters``,
    ``tol_pos`` (m), ``tol_rot`` (rad), ``damping``, ``n_starts``, ``seed``, and any other
    field (``rotation_weight``, ``max_step``, ``stall_window``...).
    ctx: a job context (progress, cancellation), optional.

    Returns an :class:`IKResult` with q (*B, dof) inside the joint limits. The dtype and device
    follow q0 if given, else the targets (float64 on the CPU for numpy inputs).
    """
    opts = options or IKOptions()
    overrides.update(position_only=position_only, max_iters=max_iters, tol_pos=tol_pos, tol_rot=tol_rot,
                     damping=damping, n_starts=n_starts, seed=seed)
    known = {f.name for f in fields(IKOptions)} | {"hold", "base"}
    unknown = set(overrides) - known
    if unknown:
        raise TypeError(f"solve_ik: unknown option(s) {sorted(unknown)}; known: {sorted(known)}")
    hold, base = overrides.pop("hold", ()), overrides.pop("base", "free")
    opts = replace(opts, **{k: v for k, v in overrides.items() if v is not None})
    if (getattr(model, "floating", False) or getattr(model, "mimic_joint_names", None)
            or getattr(model, "ball_joint_names", None)):
        if opts.position_only:
            targets = {k: (torch.as_tensor(t)[..., :3, 3] if torch.as_tensor(t).shape[-2:] == (4, 4) else t)
                       for k, t in targets.items()}
        r = solve_whole_body_ik(
            model,
            targets,
            q0,
            hold=hold,
            base=base,
            max_iters=max(opts.max_iters, 1),
            tol_pos=opts.tol_pos,
            tol_rot=opts.tol_rot,
            rotation_weight=opts.rotation_weight,
        )
        return IKResult(q=r.q, converged=r.converged, position_error=r.position_error,
                        rotation_error=r.rotation_error, residual=r.position_error.hypot(r.rotation_error),
                        iterations=r.iterations, starts=torch.ones_like(r.iterations))
    if not targets:
        raise ValueError("solve_ik: no targets given")
    if opts.max_iters < 0 or opts.n_starts < 1:
        raise ValueError("solve_ik: max_iters must be >= 0 and n_starts >= 1")

    ref = (
        q0
        if isinstance(q0, torch.Tensor)
        else next((t for t in targets.values() if isinstance(t, torch.Tensor)), None)
    )
    dtype = ref.dtype if ref is not None and ref.is_floating_point() else torch.float64
    device = ref.device if ref is not None else torch.device("cpu")
    dof = int(model.dof)
    links = tuple(targets)
    kin = _TargetKinematics(model, links, dtype, device)
    lower, upper = _limits(model, dof, dtype, device)

    # targets -> (*B, T, 3) positions and (*B, T, 3, 3) rotations
    pos_list, has_rot, batch_shapes = [], [], []
    rot_list: list[torch.Tensor | None] = []
    for link, t in targets.items():
        t = _as_tensor(t, dtype, device)
        if t.shape[-2:] == (4, 4):
            batch_shapes.append(t.shape[:-2])
            pos_list.append(t[..., :3, 3])
            if opts.position_only:
                rot_list.append(None)
                has_rot.append(False)
            else:
                rot_list.append(t[..., :3, :3])
                has_rot.append(True)
        elif t.shape[-1:] == (3,):
            batch_shapes.append(t.shape[:-1])
            pos_list.append(t)
            rot_list.append(None)
            has_rot.append(False)
        else:
            raise ValueError(f"solve_ik: target for {link!r} must have shape (..., 4, 4) or (..., 3), "
                             f"got {tuple(t.shape)}")
        if not torch.isfinite(t).all():
            raise ValueError(f"solve_ik: target for {link!r} contains NaN or inf")
    if q0 is not None:
        q0 = _as_tensor(q0, dtype, device)
        if q0.shape[-1] != dof:
            raise ValueError(f"solve_ik: q0 has {q0.shape[-1]} joint values, the robot has {dof}")
        batch_shapes.append(q0.shape[:-1])
    B = torch.broadcast_shapes(*batch_shapes)
    N = int(np.prod(B)) if len(B) else 1
    T = len(links)
    pos_t = torch.stack([p.expand(*B, 3) for p in pos_list], dim=-2).reshape(N, T, 3)
    any_rot = any(has_rot)
    eye = torch.eye(3, dtype=dtype, device=device)
    rot_t = (torch.stack([(r if r is not None else eye).expand(*B, 3, 3) for r in rot_list], dim=-3)
             .reshape(N, T, 3, 3) if any_rot else None)
    rot_mask = torch.tensor(has_rot, dtype=dtype, device=device)
    weights = torch.ones(T, 6, dtype=dtype, device=device)
    weights[:, 3:] = opts.rotation_weight ** 2 * rot_mask[:, None]
    prob = _Problem(kin, pos_t, rot_t, rot_mask, weights)

    if q0 is None:
        q_start = neutral_configuration(model, dtype, device).expand(N, dof)
    else:
        q_start = q0.expand(*B, dof).reshape(N, dof)
    q_start = torch.minimum(torch.maximum(q_start, lower), upper)

    S = opts.n_starts
    gen = torch.Generator().manual_seed(int(opts.seed))
    with torch.no_grad():
        if S > 1 and N * S <= opts.parallel_starts_limit:
            # small batches: every start at once (they cost about as much as one)
            q_r = _random_configurations(lower, upper, (S - 1, N), gen, dtype, device).reshape(-1, dof)
            q_all = torch.cat([q_start, q_r])
            rep = lambda t: None if t is None else t.repeat(S, *([1] * (t.dim() - 1)))
            qs, perr_s, rerr_s, cost_s, iters_s = _lm(prob, q_all, rep(pos_t), rep(rot_t), lower, upper,
                                                      opts, starts=S, ctx=ctx)
            pick, conv_s = _pick_best(S, N, qs, perr_s, rerr_s, cost_s, opts)
            q, perr, rerr, cost = qs[pick], perr_s[pick], rerr_s[pick], cost_s[pick]
            iters = iters_s.view(S, N).amax(0)
            starts = torch.where(
                conv_s.any(0), conv_s.float().argmax(0) + 1, torch.full((N,), S, device=device)
            )
        else:
            q, perr, rerr, cost, iters = _lm(prob, q_start, pos_t, rot_t, lower, upper, opts, ctx=ctx,
                                             progress=(0.0, 1.0 / S))
            starts = torch.ones(N, dtype=torch.long, device=device)
            conv = (perr <= opts.tol_pos).all(-1) & (rerr <= opts.tol_rot).all(-1)
            if S > 1 and not bool(conv.all()):
                # restart the unsolved samples from S - 1 random poses each, all at once
                idx = torch.nonzero(~conv).squeeze(-1)
                M = idx.numel()
                q_r = _random_configurations(lower, upper, (S - 1, M), gen, dtype, device).reshape(-1, dof)
                pt = pos_t.index_select(0, idx).repeat(S - 1, 1, 1)
                rt = rot_t.index_select(0, idx).repeat(S - 1, 1, 1, 1) if rot_t is not None else None
                q2, perr2, rerr2, cost2, iters2 = _lm(prob, q_r, pt, rt, lower, upper, opts, starts=S - 1,
                                                      ctx=ctx, progress=(1.0 / S, 1.0))
                pick, conv2 = _pick_best(S - 1, M, q2, perr2, rerr2, cost2, opts)
                better = conv2.any(0) | (cost2[pick] < cost[idx])
                b1 = better[:, None]
                q[idx] = torch.where(b1, q2[pick], q[idx])
                perr[idx] = torch.where(b1, perr2[pick], perr[idx])
                rerr[idx] = torch.where(b1, rerr2[pick], rerr[idx])
                cost[idx] = torch.where(better, cost2[pick], cost[idx])
                iters[idx] = iters[idx] + iters2.view(S - 1, M).amax(0)
                starts[idx] = torch.where(conv2.any(0), conv2.float().argmax(0) + 2,
                                          torch.full((M,), S, device=device))
        conv = (perr <= opts.tol_pos).all(-1) & (rerr <= opts.tol_rot).all(-1)
    if ctx is not None:
        ctx.progress(1.0, "IK done", {"converged": float(conv.sum())})
    return IKResult(
        q=q.reshape(*B, dof),
        converged=conv.reshape(B),
        position_error=perr.amax(-1).reshape(B),
        rotation_error=rerr.amax(-1).reshape(B),
        residual=cost.sqrt().reshape(B),
        iterations=iters.reshape(B),
        starts=starts.reshape(B),
    )
