"""Whole-body inverse kinematics: several link targets at once, chosen links held in place,
for floating-base robots (the base free or fixed), robots with coupled mimic joints and robots with
ball joints (their quaternions move by ``integrate``, no limits).

``solve_whole_body_ik(model, {"left_hand": pose, ...}, q0, hold=("left_foot", "right_foot"))``
runs Levenberg-Marquardt (damped least squares) on the configuration manifold, batched:

- unknowns: a velocity ``dv (nv)`` per iteration, applied by ``model.integrate(q, dv)`` (the
  base moves by the exponential of its twist, the quaternion stays unit); with
  ``base="fixed"`` the six base columns are dropped and the base does not move;
- residual per target (and per held link, whose target is its pose at ``q0``): the position
  error ``p* - p(q)`` (m) and, for poses, the rotation error ``log(R* R(q)^T)`` (rad, world
  frame), weighted by ``rotation_weight``; held links weigh ``hold_weight`` times more;
- Jacobians from :meth:`RobotModel.frame_jacobians` (one forward kinematics pass for every
  target), world frame, base columns first; ``lambda = mu * cost + damping`` with ``mu``
  adapted per sample (accepted steps shrink it, rejected ones grow it); joints are clamped
  to their limits after each step, and a joint at a limit that the gradient pushes outwards
  is held still (an active set, as in :func:`engine.robots.ik.solve_ik`);
- a sample stops when every target and held link is within ``tol_pos`` / ``tol_rot``.

Pure function of its inputs; the result's ``q`` is ``(*B, nq)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from engine.robots.model_coords import limited_coordinates
from engine.spatial import rotation_error_vector

__all__ = ["WholeBodyIKResult", "solve_whole_body_ik"]


@dataclass
class WholeBodyIKResult:
    """q ``(*B, nq)``; converged ``(*B,)``; position_error / rotation_error ``(*B,)``: the largest
    over the targets; hold_position_error / hold_rotation_error ``(*B,)``: the largest drift of
    the held links (0 without any); iterations ``(*B,)``."""

    q: torch.Tensor
    converged: torch.Tensor
    position_error: torch.Tensor
    rotation_error: torch.Tensor
    hold_position_error: torch.Tensor
    hold_rotation_error: torch.Tensor
    iterations: torch.Tensor


def _check_link(model, link: str) -> None:
    if link not in model.link_names:
        raise KeyError(f"no link named {link!r} in robot {model.name!r}")


def _targets(model, targets: Mapping[str, object], dtype, device):
    """-> (links, positions (*B, T, 3), rotations (*B, T, 3, 3), has_rotation (T,) bool)."""
    links, pos, rot, has_rot = [], [], [], []
    for link, t in targets.items():
        _check_link(model, link)
        t = torch.as_tensor(t, dtype=dtype, device=device)
        if t.shape[-2:] == (4, 4):
            pos.append(t[..., :3, 3])
            rot.append(t[..., :3, :3])
            has_rot.append(True)
        elif t.shape[-1:] == (3,):
            pos.append(t)
            rot.append(torch.eye(3, dtype=dtype, device=device).expand(t.shape[:-1] + (3, 3)))
            has_rot.append(False)
        else:
            raise ValueError(
                f"target for link {link!r} must have shape (..., 4, 4) or (..., 3), got {tuple(t.shape)}"
            )
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"target for link {link!r} contains NaN or inf")
        links.append(link)
    return links, pos, rot, has_rot


def solve_whole_body_ik(
    model,
    targets: Mapping[str, object],
    q0=None,
    *,
    hold: Sequence[str] = (),
    base: str = "free",
    max_iters: int = 200,
    tol_pos: float = 1e-6,
    tol_rot: float = 1e-6,
    rotation_weight: float = 1.0,
    hold_weight: float = 10.0,
    damping: float = 1e-8,
    mu_init: float = 1e-2,
    max_step: float = 0.5,
) -> WholeBodyIKResult:
    """Solve for ``q`` that puts each target link at its target while the ``hold`` links keep
    their poses at ``q0``.

    targets: ``{link: (*B, 4, 4) pose or (*B, 3) position}`` (world, m). q0: ``(*B, nq)`` or
    ``(nq,)``, default the neutral configuration. base: "free" (a floating base moves) or
    "fixed" (it stays at q0's pose; ignored for fixed-base robots). Tolerances in m and rad.
    """
    if base not in ("free", "fixed"):
        raise ValueError(f"base must be 'free' or 'fixed', got {base!r}")
    if not targets:
        raise ValueError("solve_whole_body_ik: no targets given")
    dtype, device = model.dtype, model.device
    q0 = model.neutral() if q0 is None else torch.as_tensor(q0, dtype=dtype, device=device)
    if q0.shape[-1:] != (model.nq,):
        raise ValueError(f"q0 must have shape (..., {model.nq}), got {tuple(q0.shape)}")
    links, pos, rot, has_rot = _targets(model, targets, dtype, device)
    hold = [h for h in hold if h not in links]
    for h in hold:
        _check_link(model, h)
    shape = torch.broadcast_shapes(q0.shape[:-1], *(p.shape[:-1] for p in pos))
    N = int(torch.Size(shape).numel())
    q = q0.expand(shape + (model.nq,)).reshape(N, model.nq).clone()
    lim = model.joint_limits
    sq, sv, rows = (torch.tensor(x, dtype=torch.long, device=device) for x in limited_coordinates(model))
    lower, upper = lim.lower.index_select(0, rows), lim.upper.index_select(0, rows)   # the scalar joints'
    q[:, sq] = torch.maximum(torch.minimum(q[:, sq], upper), lower)
    all_links = links + hold
    with torch.no_grad():
        if hold:
            held = model.frame_jacobians(q, hold)[0]
            pos += [h.reshape(shape + (3,)) for h in held[:, :, :3, 3].unbind(1)]
            rot += [h.reshape(shape + (3, 3)) for h in held[:, :, :3, :3].unbind(1)]
            has_rot += [True] * len(hold)
        T = len(all_links)
        pos_t = torch.stack([p.expand(shape + (3,)).reshape(N, 3) for p in pos], dim=1)
        rot_t = torch.stack([r.expand(shape + (3, 3)).reshape(N, 3, 3) for r in rot], dim=1)
        rot_mask = torch.tensor(has_rot, dtype=dtype, device=device)
        w = torch.ones(T, 6, dtype=dtype, device=device)
        w[:, 3:] = rotation_weight ** 2 * rot_mask[:, None]
        w[len(links):] *= hold_weight ** 2
        W = w.reshape(-1)
        cols = torch.arange(6 if (model.floating and base == "fixed") else 0, model.nv, device=device)
        n = cols.numel()
        eye = torch.eye(n, dtype=dtype, device=device)
        lo_c = torch.full((model.nv,), -torch.inf, dtype=dtype, device=device).index_copy(0, sv, lower)
        hi_c = torch.full((model.nv,), torch.inf, dtype=dtype, device=device).index_copy(0, sv, upper)
        lo_c, hi_c = lo_c.index_select(0, cols), hi_c.index_select(0, cols)

        def evaluate(q_):
            poses, J = model.frame_jacobians(q_, all_links)
            e_p = pos_t - poses[..., :3, 3]
            e_r, theta = rotation_error_vector(rot_t @ poses[..., :3, :3].transpose(-1, -2))
            e = torch.cat([e_p, e_r * rot_mask[:, None]], dim=-1)                 # (N, T, 6)
            return e, J.index_select(-1, cols), e_p.norm(dim=-1), theta * rot_mask

        def clamp(q_):
            q_[:, sq] = torch.maximum(torch.minimum(q_[:, sq], upper), lower)
            return q_

        e, J, perr, rerr = evaluate(q)
        cost = (W * e.reshape(N, -1) ** 2).sum(-1)
        mu = torch.full((N,), mu_init, dtype=dtype, device=device)
        iters = torch.zeros(N, dtype=torch.long, device=device)
        done = (perr <= tol_pos).all(-1) & (rerr <= tol_rot).all(-1)
        for _ in range(max_iters):
            if bool(done.all()):
                break
            Jf = J.reshape(N, 6 * T, n)
            JtW = Jf.transpose(-1, -2) * W
            g = (JtW @ e.reshape(N, -1, 1))[..., 0]
            # active set: a joint at a limit that the gradient pushes outwards is held still
            qc = q.new_zeros(N, model.nv).index_copy(1, sv, q[:, sq]).index_select(1, cols)
            free = (~(((qc <= lo_c) & (g < 0)) | ((qc >= hi_c) & (g > 0)))).to(dtype)
            JtW, g = JtW * free[..., None], g * free
            A = torch.baddbmm((mu * cost + damping)[:, None, None] * eye, JtW, Jf * free[:, None, :])
            dv_c = torch.linalg.solve(A, g.unsqueeze(-1)).squeeze(-1)
            dv_c = dv_c * (max_step / dv_c.abs().amax(-1, keepdim=True).clamp_min(max_step))
            dv = q.new_zeros(N, model.nv).index_copy(1, cols, dv_c)
            q_new = clamp(model.integrate(q, dv))
            e_n, J_n, perr_n, rerr_n = evaluate(q_new)
            cost_n = (W * e_n.reshape(N, -1) ** 2).sum(-1)
            accept = (cost_n < cost) & ~done
            a = accept[:, None]
            q = torch.where(a, q_new, q)
            e = torch.where(a[..., None], e_n, e)
            J = torch.where(a[..., None, None], J_n, J)
            perr, rerr = torch.where(a, perr_n, perr), torch.where(a, rerr_n, rerr)
            cost = torch.where(accept, cost_n, cost)
            mu = torch.where(accept, mu * 0.5, mu * 4.0).clamp(1e-12, 1e8)
            iters = iters + (~done).long()
            done = done | ((perr <= tol_pos).all(-1) & (rerr <= tol_rot).all(-1)) | (mu >= 1e8)
        conv = (perr <= tol_pos).all(-1) & (rerr <= tol_rot).all(-1)
    k = len(links)
    zero = q.new_zeros(N)
    return WholeBodyIKResult(
        q=q.reshape(shape + (model.nq,)),
        converged=conv.reshape(shape),
        position_error=perr[:, :k].amax(-1).reshape(shape),
        rotation_error=rerr[:, :k].amax(-1).reshape(shape),
        hold_position_error=(perr[:, k:].amax(-1) if hold else zero).reshape(shape),
        hold_rotation_error=(rerr[:, k:].amax(-1) if hold else zero).reshape(shape),
        iterations=iters.reshape(shape),
    )
