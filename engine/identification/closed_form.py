"""Closed-form identification: weighted least squares on the base parameters, then a physically
consistent parameter set (Gautier and Khalil 1990; Wensing, Kim and Slotine 2017).

The joint torques are linear in the parameters::

    tau = Y(q, qd, qdd) pi + Y_joint(qd, qdd) theta                       (N, n), N m

``Y`` the inertial regressor (:meth:`RobotModel.regressor`, numba; per body Pinocchio's ``[m,
m c, I about the joint origin]``), ``Y_joint`` the per-joint columns (viscous ``qd_i``, Coulomb
``tanh(qd_i / v_s)``, armature ``qdd_i``, offset ``1``;
:func:`engine.identification.joint_terms.joint_regressor`). :func:`closed_form_fit`:

1. stacks the rows of the training samples, each joint's rows divided by its noise (a weighted
   least squares), the unknowns scaled to order one (``z = (x - x_nominal) / scale``);
2. finds the base parameters: columns below ``tol`` x the largest have no effect on the torques
   (they keep their nominal values); a QR with column pivoting of the normalised columns keeps
   ``r`` independent ones (singular values above ``tol`` x the largest) and writes every other
   column as a combination of them: each base parameter is ``x_i + sum_d c_id x_d``, reported in
   plain words (``"panda_link1 Izz + 1 x panda_joint1 armature"``) with its value;
3. solves the least squares of the torques with a tiny ridge towards the nominal (URDF) values,
   ``eps = (0.1 tol s_max)^2``: identifiable directions are the weighted least-squares estimate
   (bias below 1 % at the threshold), directions the data do not see take the nominal values, and
   the bounds keep it physical (masses > 0, damping, Coulomb friction, armature >= 0;
   ``scipy.optimize.lsq_linear``) -- the point nearest the URDF that reproduces the base
   parameters whenever that point is physical;
4. with all ten inertial parameters of a link learned, its pseudo-inertia ``J = [[Sigma, h], [h^T,
   m]]`` (``Sigma = tr(I)/2 1 - I``) must be positive semidefinite (a mass distribution exists:
   positive mass, triangle inequalities); the links whose solution is not are projected onto it
   (eigenvalues clipped) and refitted, same objective, by block coordinate descent: their ten
   parameters in the log-Cholesky form ``J = L L^T`` (Rucker and Wensing 2022;
   ``scipy.optimize.least_squares``), then every other parameter by the bounded linear least
   squares, a few rounds; until no link is left out of the set (a local answer, not an SDP).

Supported link kinds: the mass alone (centre of mass and inertia about it kept: the torques are
affine in it) or mass, com and inertia together (the ten ``pi`` of each link). A link must be the
child link of a movable joint (the body of :meth:`RobotModel.regressor`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from engine.identification.joint_terms import JOINT_KINDS, TYPICAL, joint_regressor

__all__ = ["ClosedFormResult", "closed_form_fit", "closed_form_unsupported", "link_parameters",
           "link_from_parameters", "pseudo_inertia"]

_PI_WORDS = ("mass", "m cx", "m cy", "m cz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
_PI_KIND = ("mass", "com", "com", "com", "inertia", "inertia", "inertia", "inertia", "inertia", "inertia")
_SYM = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
_FULL = {"mass", "com", "inertia"}


def link_parameters(mass: float, com, inertia) -> np.ndarray:
    """``pi (10,)`` = ``[m, m c (3), Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (kg, kg m, kg m^2; inertia about
    the link origin) from the mass (kg), centre of mass (3,) m and inertia (3, 3) about it."""
    c, Ic = np.asarray(com, dtype=float), np.asarray(inertia, dtype=float)
    Io = Ic + mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
    return np.concatenate([[mass], mass * c, [Io[i, j] for i, j in _SYM]])


def link_from_parameters(pi) -> tuple[float, np.ndarray, np.ndarray]:
    """``(mass, com (3,), inertia (3, 3) about the com)`` of ``pi (10,)`` (mass > 0)."""
    m, h = float(pi[0]), np.asarray(pi[1:4], dtype=float)
    c = h / m
    Io = np.zeros((3, 3))
    for v, (i, j) in zip(pi[4:], _SYM):
        Io[i, j] = Io[j, i] = v
    return m, c, Io - m * (float(c @ c) * np.eye(3) - np.outer(c, c))


def link_from_parameters_raw(pi) -> tuple[float, np.ndarray, np.ndarray]:
    """``(m, h (3,), I about the origin (3, 3))`` of ``pi (10,)``."""
    Io = np.zeros((3, 3))
    for v, (i, j) in zip(pi[4:], _SYM):
        Io[i, j] = Io[j, i] = v
    return float(pi[0]), np.asarray(pi[1:4], dtype=float), Io


def pseudo_inertia(pi) -> np.ndarray:
    """The 4 x 4 pseudo-inertia ``[[Sigma, h], [h^T, m]]`` of ``pi (10,)``; PSD iff some mass
    distribution has these parameters (Wensing, Kim and Slotine 2017)."""
    m, h, Io = link_from_parameters_raw(pi)
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(Io) * np.eye(3) - Io
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def _from_pseudo(J) -> np.ndarray:
    Sigma = J[:3, :3]
    Io = np.trace(Sigma) * np.eye(3) - Sigma
    return np.concatenate([[J[3, 3]], J[:3, 3], [Io[i, j] for i, j in _SYM]])


@dataclass
class ClosedFormResult:
    """What :func:`closed_form_fit` found (module doc).

    masses ``{link: kg}``; coms ``{link: (3,) m}`` and inertias ``{link: (3, 3) kg m^2 about the
    com}`` (full links only), of the links the data act on (the others keep their values);
    joint_values ``{kind: (dof,) floats}`` (every kind; those not learned at their nominal values);
    unidentifiable ``{(link, kind): reason}``; weakly_excited ``{(link, kind): note}``: identifiable
    alone, with a standard deviation over 10 % of the value; base_parameters: one ``{"expression",
    "value", "std", "parameters"}`` per base parameter (units of its first parameter; std: one
    standard deviation from the residual's variance); rank / columns of the stacked regressor;
    condition: its condition number over the kept columns (normalised); repaired: links refitted
    for a PSD pseudo-inertia; residual_rms: the fit's noise-weighted residual, RMS over the rows
    used (about 1 when the model explains the torques to the noise); seconds: wall time.
    """

    masses: dict[str, float]
    coms: dict[str, np.ndarray]
    inertias: dict[str, np.ndarray]
    joint_values: dict[str, list[float]]
    unidentifiable: dict[tuple[str, str], str]
    weakly_excited: dict[tuple[str, str], str]
    base_parameters: list[dict]
    rank: int
    columns: int
    condition: float
    repaired: list[str] = field(default_factory=list)
    residual_rms: float = 0.0
    seconds: float = 0.0


def closed_form_unsupported(model, links, kinds) -> str:
    """Why :func:`closed_form_fit` cannot fit these link ``kinds`` on ``links`` ('' when it can)."""
    lk = set(kinds) & _FULL
    if lk and lk != {"mass"} and lk != _FULL:
        return (f"the closed form fits the mass alone or mass, com and inertia together, not {sorted(lk)}")
    if model.dynamic_parameters().numel() != 10 * model.dof:
        return ("the closed form needs one regressor body per joint (no floating base, no coupled mimic "
                "joints)")
    child = {j.name: j.child for j in model.description.joints}
    bodies = {child[n] for n in model.joint_names}
    other = [l for l in links if l not in bodies]
    if lk and other:
        return f"links {other} are not the child link of a movable joint"
    return ""


def _words(link: str, kind: str, index: int, joint: str | None) -> str:
    if joint is not None:
        return f"{joint} {kind}"
    return f"{link} {_PI_WORDS[index]}" if index >= 0 else f"{link} mass"


def closed_form_fit(rigid, q, qd, qdd, tau, weight, links, labels, kinds, jkinds, nominal_joint: dict,
                    velocity_scale: float, tol: float = 3e-4, min_speed: float = 0.0) -> ClosedFormResult:
    """The closed-form identification of the module doc.

    rigid: the nominal rigid body (:class:`RobotModel`, no joint terms); q, qd, qdd, tau: (N, n)
    float64 tensors (rad, rad/s, rad/s^2, N m) of the training samples; weight: (n,) each joint's
    torque noise (N m); links: the links whose ``kinds`` (``mass`` or ``mass, com, inertia``) are
    fitted; labels: (n,) the child link of each joint (the regressor's bodies); jkinds: the joint
    kinds fitted, the others held at ``nominal_joint`` ``{kind: (n,)}``; velocity_scale: ``v_s``
    (rad/s); tol: relative column norm and singular value below which a direction is not seen;
    min_speed: joint ``i``'s rows where ``|qd_i|`` is below it (rad/s) are left out (near rest a dry
    friction sticks, which no smooth Coulomb model follows; the common practice of friction
    identification), unless that is over 80 % of them (a slow motion keeps every row).
    """
    from scipy.linalg import qr, solve_triangular
    from scipy.optimize import lsq_linear

    t0 = time.monotonic()
    n = rigid.dof
    full = _FULL <= set(kinds)
    with torch.no_grad():
        Y = rigid.regressor(q, qd, qdd).cpu().numpy()                       # (N, n, 10 n)
        pi_fixed = rigid.dynamic_parameters().detach().cpu().numpy().reshape(n, 10).copy()
    body = {label: i for i, label in enumerate(labels)}
    cols: list[np.ndarray] = []
    names: list[tuple[str, str, int, str | None]] = []   # (link, kind, index, joint or None)
    x_nom: list[float] = []
    scale: list[float] = []
    lower: list[float] = []
    for link in (links if "mass" in kinds else []):
        b = body[link]
        m0 = float(rigid.link_mass(link))
        c0 = rigid.link_com(link).detach().cpu().numpy()
        I0 = rigid.link_inertia(link).detach().cpu().numpy()
        pi0 = link_parameters(m0, c0, I0)
        ms = max(m0, 0.1)
        if full:
            pi_fixed[b] -= pi0
            Is = max(float(np.trace(I0)) / 3, 1e-4)
            for k in range(10):
                cols.append(Y[:, :, 10 * b + k])
                names.append((link, _PI_KIND[k], k, None))
                x_nom.append(pi0[k])
                scale.append(ms if k == 0 else (0.05 * ms if k < 4 else Is))
                lower.append(1e-6 * ms if k == 0 else -np.inf)
        else:
            direction = link_parameters(1.0, c0, np.zeros((3, 3)))         # d pi / d m, I about the com kept
            pi_fixed[b] -= m0 * direction
            cols.append(Y[:, :, 10 * b:10 * b + 10] @ direction)
            names.append((link, "mass", -1, None))
            x_nom.append(m0)
            scale.append(ms)
            lower.append(1e-3 * m0)
    with torch.no_grad():
        Yj = joint_regressor(qd, qdd, JOINT_KINDS, velocity_scale).cpu().numpy()   # (N, n, 4 n)
    theta_fixed = np.array([0.0 if k in jkinds else nominal_joint[k][i] for k in JOINT_KINDS for i in range(n)])
    for a, jk in enumerate(JOINT_KINDS):
        if jk not in jkinds:
            continue
        for i in range(n):
            cols.append(Yj[:, :, a * n + i])
            names.append((labels[i], jk, i, rigid.joint_names[i]))
            x_nom.append(float(nominal_joint[jk][i]))
            scale.append(10 * max(abs(float(nominal_joint[jk][i])), TYPICAL[jk]))
            lower.append(-np.inf if jk == "offset" else 0.0)
    x_nom_a, scale_a, lower_a = (np.asarray(v, dtype=float) for v in (x_nom, scale, lower))
    x_nom_a = np.maximum(x_nom_a, lower_a)
    w = np.asarray(weight, dtype=float)[None, :]
    tau_np = tau.detach().cpu().numpy()
    # rows left out: infinite weight (their residual and regressor rows become 0); a joint that is
    # slower than min_speed on most samples keeps all its rows (a slow motion: nothing else to fit)
    slow = np.abs(qd.detach().cpu().numpy()) < min_speed
    slow[:, slow.mean(0) > 0.8] = False
    w = np.where(slow, np.inf, w)
    const = Y @ pi_fixed.reshape(-1) + Yj @ theta_fixed
    P = len(cols)
    if P == 0:
        raise ValueError("closed_form_fit: nothing to fit (no learned kinds)")
    A = np.stack(cols, -1)                                                   # (N, n, P)
    As = (A / w[..., None] * scale_a).reshape(-1, P)
    r = ((tau_np - const - A @ x_nom_a) / w).reshape(-1)

    # 2. base parameters: no-effect columns, then QR with column pivoting of the normalised others
    norms = np.linalg.norm(As, axis=0)
    top = float(norms.max()) if norms.max() > 0 else 1.0
    kept = norms >= tol * top if norms.max() > 0 else np.zeros(P, dtype=bool)
    ki = np.flatnonzero(kept)
    if not len(ki):   # nothing acts on the torques (no motion): every parameter keeps its value
        still = {(l, k): "no effect on the joint torques (the motion does not act on it)" for l, k, _, _ in names}
        values = {k: [float(v) for v in nominal_joint[k]] for k in JOINT_KINDS}
        return ClosedFormResult(masses={}, coms={}, inertias={}, joint_values=values, unidentifiable=still,
                                weakly_excited={}, base_parameters=[], rank=0, columns=P, condition=float("inf"),
                                seconds=time.monotonic() - t0)
    # one QR of [A_n | r] (R alone, Q never formed), then the pivoted QR of its small R: the same
    # R, pivots and Q^T r as a pivoted QR of the tall A_n
    Rr = cast(np.ndarray, np.linalg.qr(np.hstack([As[:, ki] / norms[ki], r[:, None]]), mode="r"))
    Q2, R, piv = qr(Rr[:len(ki), :len(ki)], pivoting=True)
    qtr = Q2.T @ Rr[:len(ki), -1]
    s, Vt = np.linalg.svd(R)[1:]
    rank = int((s > tol * s[0]).sum()) if s.size else 0
    null_weight = np.zeros(len(ki))
    if rank < len(ki):
        null_weight[piv] = (Vt[rank:] ** 2).sum(0)
    beta = solve_triangular(R[:rank, :rank], R[:rank, rank:]) if rank < len(ki) else np.zeros((rank, 0))

    # 3. the base parameters' least squares, b = R11^-1 (Q^T r)_1, and the parameters nearest the nominal
    # ones that reproduce them: min |z|^2 subject to [1 beta] w_pivoted = b (w = norms z, the normalised
    # coordinates); if that breaks a bound, the bounded least squares with a tiny ridge instead
    pos = np.empty_like(piv)
    pos[piv] = np.arange(len(piv))
    M = R[:, pos] * norms[ki][None, :]                                       # z-coordinates, kept columns
    b = solve_triangular(R[:rank, :rank], qtr[:rank])
    C = np.hstack([np.eye(rank), beta])                                      # pivoted order
    e2 = norms[ki][piv] ** 2                                                 # |z|^2 = sum w^2 / norms^2
    w_piv = e2[:, None] * C.T @ np.linalg.solve((C * e2[None, :]) @ C.T, b)
    z = np.empty(len(ki))
    z[piv] = w_piv / norms[ki][piv]
    lo = (lower_a[ki] - x_nom_a[ki]) / scale_a[ki]
    eps = (0.1 * tol * float(np.linalg.norm(M, 2))) ** 2
    if (z < lo).any():
        lhs = np.vstack([M, np.sqrt(eps) * np.eye(len(ki))])
        rhs = np.concatenate([qtr, np.zeros(len(ki))])
        z = lsq_linear(lhs, rhs, bounds=(lo, np.full(len(ki), np.inf)), method="bvls", tol=1e-12).x
    x = x_nom_a.copy()
    x[ki] += scale_a[ki] * z

    # 4. physical consistency of the full links: PSD pseudo-inertias
    repaired: list[str] = []
    if full:
        starts = {l: names.index((l, "mass", 0, None)) for l in (links if "mass" in kinds else [])}
        while True:   # refitting some links can move the others out of the set: until none is left
            bad_links = [l for l, i in starts.items() if l not in repaired
                         and np.linalg.eigvalsh(pseudo_inertia(x[i:i + 10]))[0] < 0]
            if not bad_links:
                break
            repaired += bad_links
            x = _psd_refit(x, repaired, starts, M, qtr, eps, ki, x_nom_a, scale_a, lower_a)

    # 5. the report
    unident: dict[tuple[str, str], str] = {}
    weak: dict[tuple[str, str], str] = {}
    base = []
    words = [_words(*nm) for nm in names]
    xs = x
    # standard deviations of the base parameters: sigma^2 (R11^T R11)^-1 in the normalised coordinates,
    # sigma^2 the weighted residual's variance (1 for white noise at the estimated level; larger with
    # model errors, which it then includes)
    zk = (x[ki] - x_nom_a[ki]) / scale_a[ki]
    dof_left = max(int(np.isfinite(np.broadcast_to(w, tau_np.shape)).sum()) - rank, 1)   # rows used - rank
    sigma2 = max(float(r @ r - qtr @ qtr + np.sum((M @ zk - qtr) ** 2)), 0.0) / dof_left
    Rinv = solve_triangular(R[:rank, :rank], np.eye(rank)) if rank else np.zeros((0, 0))
    for j in range(rank):
        i = ki[piv[j]]
        terms = [(1.0, i)]
        for d in range(beta.shape[1]):
            if abs(beta[j, d]) > 1e-3:
                dcol = ki[piv[rank + d]]
                coef = beta[j, d] * (scale_a[i] / norms[i]) * (norms[dcol] / scale_a[dcol])
                terms.append((float(coef), dcol))
        expr = words[i] + "".join(f" {'+' if c >= 0 else '-'} {abs(c):.4g} x {words[d]}" for c, d in terms[1:])
        value = float(sum(c * xs[d] for c, d in terms))
        std = float(np.sqrt(sigma2) * np.linalg.norm(Rinv[j]) * scale_a[i] / norms[i])
        base.append({"expression": expr, "value": value, "std": std, "parameters": [words[d] for _, d in terms]})
        link, kind = names[i][0], names[i][1]
        if len(terms) == 1 and std > 0.1 * abs(value) and kind != "offset":
            weak[(link, kind)] = (f"weakly excited: {words[i]} {value:.4g} +- {std:.2g} (one standard deviation, "
                                  f"{100 * std / max(abs(value), 1e-300):.0f} %)")
    groups: dict[tuple[str, str], list[int]] = {}
    for c, (link, kind, _, _) in enumerate(names):
        groups.setdefault((link, kind), []).append(c)
    kept_pos = {int(c): p for p, c in enumerate(ki)}
    for key, members in groups.items():
        if not any(kept[c] for c in members):
            unident[key] = f"no effect on the joint torques (relative sensitivity {max(norms[members]) / top:.1e})"
            continue
        combined = [c for c in members if not kept[c] or null_weight[kept_pos[c]] > 0.05]
        if combined:
            exprs = [b["expression"] for b in base if any(words[c] in b["parameters"] for c in members)
                     and len(b["parameters"]) > 1]
            silent = [words[c] for c in members if not kept[c]]
            detail = "; ".join(exprs[:2]) + (f"; no effect: {', '.join(silent)}" if silent else "")
            unident[key] = "identifiable only in combination with other parameters" + (f": {detail}" if detail else "")
    masses, coms, inertias = {}, {}, {}
    for c, (link, kind, idx, joint) in enumerate(names):
        if joint is None and kind == "mass" and kept[c:c + (1 if idx < 0 else 10)].any():   # else: as it was
            if idx < 0:
                masses[link] = float(x[c])
            else:
                m, com, inertia = link_from_parameters(x[c:c + 10])
                masses[link], coms[link], inertias[link] = m, com, inertia
    values = {k: [float(v) for v in nominal_joint[k]] for k in JOINT_KINDS}
    for c, (_, kind, idx, joint) in enumerate(names):
        if joint is not None:
            values[kind][idx] = float(x[c])
    cond = float(s[0] / s[rank - 1]) if rank else float("inf")
    return ClosedFormResult(masses=masses, coms=coms, inertias=inertias, joint_values=values,
                            unidentifiable=unident, weakly_excited=weak, base_parameters=base, rank=rank, columns=P,
                            condition=cond, repaired=repaired, residual_rms=float(np.sqrt(sigma2)),
                            seconds=time.monotonic() - t0)


def _psd_refit(x, bad_links, starts, M, qtr, eps, ki, x_nom, scale, lower, rounds: int = 4):
    """The same objective with the ``bad_links``' pseudo-inertias kept PSD, by block coordinate
    descent from their nearest PSD projections (eigenvalues clipped): in turn, (1) those links' ten
    parameters in the log-Cholesky form ``J = L L^T`` (``scipy.optimize.least_squares``, 10 unknowns
    per link, the rest held) and (2) every other parameter by the bounded linear least squares with
    those links held. Each step lowers the objective; ``rounds`` rounds."""
    from scipy.optimize import least_squares, lsq_linear

    x = x.copy()
    blocks = [starts[l] for l in bad_links]
    in_block = np.zeros(len(x), dtype=bool)
    for i in blocks:
        in_block[i:i + 10] = True
    free, held = np.flatnonzero(~in_block), np.flatnonzero(in_block)
    tril = np.tril_indices(4)
    diag = np.flatnonzero(tril[0] == tril[1])

    def block(v):
        v = v.copy()
        v[diag] = np.exp(v[diag])
        L = np.zeros((4, 4))
        L[tril] = v
        return _from_pseudo(L @ L.T)

    sel = np.zeros((len(ki), len(x)))
    sel[np.arange(len(ki)), ki] = 1.0
    G = np.vstack([M @ sel, np.sqrt(eps) * np.eye(len(x))]) / scale[None, :]   # residual = G (x - x_nom) - c
    c = np.concatenate([qtr, np.zeros(len(x))])
    p = []
    for i in blocks:   # the nearest PSD pseudo-inertias, as log-Cholesky factors
        lam, V = np.linalg.eigh(pseudo_inertia(x[i:i + 10]))
        lam = np.maximum(lam, 1e-6 * max(float(lam.max()), 1e-12))
        v = np.linalg.cholesky((V * lam) @ V.T)[tril]
        v[diag] = np.log(v[diag])
        p.append(v)
        x[i:i + 10] = block(v)
    pv = np.concatenate(p)

    def unpack(pv):
        out = x[held].copy()
        for k in range(len(blocks)):
            out[10 * k:10 * (k + 1)] = block(pv[10 * k:10 * (k + 1)])
        return out

    for _ in range(rounds):
        target = c - G[:, free] @ (x[free] - x_nom[free])

        def residual(pv, target=target):
            return G[:, held] @ (unpack(pv) - x_nom[held]) - target

        def jacobian(pv):
            d = np.zeros((len(held), len(pv)))
            for k in range(len(blocks)):
                for j in range(10):   # central differences of the 10 -> 10 map (quadratic in L: exact)
                    e = np.zeros(len(pv))
                    e[10 * k + j] = 1e-6
                    d[10 * k:10 * (k + 1), 10 * k + j] = (block(pv[10 * k:10 * (k + 1)] + e[10 * k:10 * (k + 1)])
                                                          - block(pv[10 * k:10 * (k + 1)] - e[10 * k:10 * (k + 1)])
                                                          ) / 2e-6
            return G[:, held] @ d

        pv = least_squares(residual, pv, jac=jacobian, method="trf", max_nfev=100).x
        x[held] = unpack(pv)
        rhs = c - G[:, held] @ (x[held] - x_nom[held])
        lo = lower[free] - x_nom[free]
        x[free] = x_nom[free] + lsq_linear(G[:, free], rhs, bounds=(lo, np.full(len(free), np.inf)),
                                           method="bvls", tol=1e-12).x
    return x
