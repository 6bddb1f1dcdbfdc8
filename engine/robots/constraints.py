"""Holonomic constraints that close loops in a kinematic tree: what they are and their residuals.

A :class:`RobotDescription` is a tree; loop closures and couplings that a tree cannot express are
carried beside it as ``RobotDescription.constraints`` (MJCF ``<equality connect/weld/tendon>``:
:mod:`engine.robots.mjcf_constraints`). Each constraint is ``r(q) = 0`` with rows as MuJoCo
defines them (``mj_instantiateEquality``):

- :class:`LoopConstraint` (``connect``, 3 rows): ``p1 - p2`` (m, world frame), ``p_i`` the anchor
  ``anchor_i`` (m, in link ``body_i``'s frame) moved with its link;
- :class:`WeldConstraint` (``weld``, 6 rows): the same 3 position rows, then ``torquescale *
  imag(q_e)`` with ``q_e = conj(q2 f2) q1 f1`` (``q_i`` the links' world orientations, ``f_i``
  the constant ``frame_i`` quaternions: MuJoCo's ``relpose`` on body1, or the sites' frames);
  zero when the frames coincide;
- :class:`TendonConstraint` (a linear fixed-tendon equality, 1 row): ``sum_j c_j q_j - offset``;
- :class:`TendonLimit` (a fixed tendon's range, unilateral): ``lower <= L(q) = sum_j c_j q_j <= upper``;
  no equality row (``rows = 0``): :func:`limit_terms` gives its length and Jacobian, and
  :mod:`engine.robots.constrained_dynamics` pushes at a bound the tendon reaches.

``body = None`` is the world. The functions here are batched (``q (..., nq)``), torch and
differentiable: :func:`constraint_residual` ``(..., m)``, :func:`constraint_jacobian` ``(..., m, nv)``
(``d r / dt = J v``; from the model's frame Jacobians) and :func:`constraint_drift`
``(..., m)`` (``J-dot v``, the rows' acceleration at zero ``qdd``, along the motion ``q (+) t v``: by
forward-mode AD when gradients are asked for, else by a central difference).
:func:`constraint_marks` gives what a viewer draws (world anchor points and frames, the coupled
joints' positions, each constraint's violation) for a batch of configurations.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.robots.model_coords import limited_coordinates

__all__ = [
    "Constraint",
    "LoopConstraint",
    "TendonConstraint",
    "WeldConstraint",
    "ConstraintMark",
    "TendonLimit",
    "constraint_marks",
    "constraint_drift",
    "constraint_jacobian",
    "constraint_residual",
    "constraint_rows",
    "constraint_terms",
    "equalities",
    "joint_limit_constraints",
    "limit_terms",
    "tendon_limits",
]

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


@dataclass(frozen=True)
class LoopConstraint:
    """Points ``anchor1`` of ``body1`` and ``anchor2`` of ``body2`` (m, each in its link's frame)
    coincide: a ball joint closing a loop (MJCF ``<equality connect>``). 3 rows."""

    name: str
    body1: str | None
    body2: str | None
    anchor1: Vec3 = (0.0, 0.0, 0.0)
    anchor2: Vec3 = (0.0, 0.0, 0.0)
    kind = "connect"
    rows = 3


@dataclass(frozen=True)
class WeldConstraint:
    """``body1``'s frame ``frame1`` (a quaternion w x y z in its link frame) at point ``anchor1``
    stays on ``body2``'s frame ``frame2`` at ``anchor2``: the relative pose is fixed (MJCF
    ``<equality weld>``, ``relpose`` folded into ``anchor1`` and ``frame1``). 6 rows; the last
    three scaled by ``torquescale`` (MuJoCo's; zero leaves only the point coincident)."""

    name: str
    body1: str | None
    body2: str | None
    anchor1: Vec3 = (0.0, 0.0, 0.0)
    anchor2: Vec3 = (0.0, 0.0, 0.0)
    frame1: Quat = (1.0, 0.0, 0.0, 0.0)
    frame2: Quat = (1.0, 0.0, 0.0, 0.0)
    torquescale: float = 1.0
    kind = "weld"
    rows = 6


@dataclass(frozen=True)
class TendonConstraint:
    """``sum_j coefficients[j] * q[joints[j]] = offset`` (rad or m): a linear coupling of fixed
    tendons (MJCF ``<equality tendon>`` with a linear ``polycoef``). 1 row. ``joints`` may name
    mimic joints (they follow their masters)."""

    name: str
    joints: tuple[str, ...]
    coefficients: tuple[float, ...]
    offset: float = 0.0
    tendons: tuple[str, ...] = ()
    kind = "tendon"
    rows = 1


@dataclass(frozen=True)
class TendonLimit:
    """A fixed tendon's range: ``lower <= L = sum_j coefficients[j] * q[joints[j]] <= upper``
    (m or rad; ``-inf``/``inf`` for an open side; MJCF ``<tendon><fixed limited="true" range>``).
    Unilateral: no equality row (``rows = 0``); at a bound the constraint force only pushes."""

    name: str
    joints: tuple[str, ...]
    coefficients: tuple[float, ...]
    lower: float = float("-inf")
    upper: float = float("inf")
    kind = "tendon limit"
    rows = 0


Constraint = LoopConstraint | WeldConstraint | TendonConstraint | TendonLimit


def equalities(constraints) -> tuple:
    """The equality constraints (connect, weld, tendon) of ``constraints``: the rows of :func:`constraint_terms`."""
    return tuple(c for c in constraints if not isinstance(c, TendonLimit))


def joint_limit_constraints(model) -> tuple[TendonLimit, ...]:
    """The finite limits of ``model``'s joints as one-sided rows (``joint <name>``: ``L = q_j``),
    for a robot whose constraints must share the joints' limits with its loops (simulation)."""
    lo = model.joint_limits.lower.detach().cpu().tolist()
    hi = model.joint_limits.upper.detach().cpu().tolist()
    balls = set(getattr(model, "ball_joint_names", ()))
    scalar = [j for j in model.joint_names if j not in balls]    # a ball's cone is not modelled
    rows = limited_coordinates(model)[2]
    return tuple(TendonLimit(f"joint {j}", (j,), (1.0,), float(lo[r]), float(hi[r]))
                 for j, r in zip(scalar, rows) if lo[r] > float("-inf") or hi[r] < float("inf"))


def tendon_limits(constraints) -> tuple[TendonLimit, ...]:
    """The unilateral tendon limits of ``constraints``."""
    return tuple(c for c in constraints if isinstance(c, TendonLimit))


def constraint_rows(constraints) -> int:
    """The number of scalar rows ``m`` of ``constraints``."""
    return sum(c.rows for c in constraints)


def _quat_matrix(wxyz, like: torch.Tensor) -> torch.Tensor:
    w, x, y, z = (float(v) for v in wxyz)
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return like.new_tensor([
        [1.0 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
        [s * (x * y + z * w), 1.0 - s * (x * x + z * z), s * (y * z - x * w)],
        [s * (x * z - y * w), s * (y * z + x * w), 1.0 - s * (x * x + y * y)],
    ])


def _skew(a: torch.Tensor) -> torch.Tensor:
    """``[a]x`` ``(..., 3, 3)`` of ``a (..., 3)``."""
    z = torch.zeros_like(a[..., 0])
    return torch.stack([torch.stack([z, -a[..., 2], a[..., 1]], -1),
                        torch.stack([a[..., 2], z, -a[..., 0]], -1),
                        torch.stack([-a[..., 1], a[..., 0], z], -1)], -2)


def _rotation_quat_parts(R: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(w (...,), v (..., 3))`` of the unit quaternion of rotations ``R (..., 3, 3)``, ``w >= 0``
    (MuJoCo's error quaternion near the satisfied constraint)."""
    tr = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    w = 0.5 * torch.sqrt(torch.clamp(1.0 + tr, min=1e-12))
    vee = torch.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    return w, vee / (4.0 * w[..., None])


def _bodies(constraints) -> list[str]:
    out: list[str] = []
    for c in constraints:
        for b in (getattr(c, "body1", None), getattr(c, "body2", None)):
            if b is not None and b not in out:
                out.append(b)
    return out


def _tendon_row(model, c: TendonConstraint | TendonLimit, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Residual ``(B,)`` and Jacobian row ``(B, nv)`` of a tendon equality over flat ``q (B, nq)``
    (of a tendon limit: its length ``L``)."""
    aq, av = _tendon_coefficients(model, c, q)
    r = model._all_q(q)[:, (7 if model.floating else 0):] @ aq - float(getattr(c, "offset", 0.0))
    return r, model._project(av[None, :]).expand(q.shape[0], -1)


def _tendon_coefficients(model, c, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A tendon's coefficients on every movable joint's configuration ``(nq_all,)`` (the joint part;
    a ball joint's quaternion four columns) and velocity ``(nv_all,)`` (a floating base's six
    first, zero): its length is ``q_all . aq``, its Jacobian ``P^T av`` (coupled joints projected).
    A tendon over a ball joint is refused (MuJoCo's fixed tendons take scalar joints only)."""
    names = list(model._full_joint_names)
    cols = model.topology.q_columns()
    fv = 6 if model.floating else 0
    aq, av = like.new_zeros(model.topology.nq), like.new_zeros(fv + len(names))
    for j, coef in zip(c.joints, c.coefficients):
        if j not in names:
            raise ValueError(f"{c.kind} {c.name!r}: robot {model.name!r} has no joint {j!r}")
        if model.description.joint(j).type == "ball":
            raise ValueError(f"{c.kind} {c.name!r}: joint {j!r} is a ball joint; a tendon over a ball joint "
                             "is not supported")
        k = names.index(j)
        aq[int(cols[k])] += float(coef)
        av[fv + k] += float(coef)
    return aq, av


def constraint_terms(model, constraints, q) -> tuple[torch.Tensor, torch.Tensor]:
    """Residuals ``r (..., m)`` and Jacobians ``J (..., m, nv)`` (``d r / dt = J v``) of
    ``constraints`` at ``q (..., nq)``, from one kinematics pass (see the module docstring); tendon
    limits have no row here (:func:`limit_terms`)."""
    constraints = equalities(constraints)
    q = torch.as_tensor(q, dtype=model.dtype, device=model.device)
    shape = q.shape[:-1]
    qf = q.reshape(-1, model.nq)
    B = qf.shape[0]
    links = _bodies(constraints)
    poses = J6 = None
    if links:
        poses, J6 = model.frame_jacobians(qf, links)          # (B, L, 4, 4), (B, L, 6, nv)
    eye = qf.new_zeros(B, 4, 4) + torch.eye(4, dtype=qf.dtype, device=qf.device)
    zero = qf.new_zeros(B, 6, model.nv)

    def frame(body):
        if body is None:
            return eye, zero
        i = links.index(body)
        return poses[:, i], J6[:, i]

    rs, Js = [], []
    for c in constraints:
        if isinstance(c, TendonConstraint):
            r, J = _tendon_row(model, c, qf)
            rs.append(r[:, None])
            Js.append(J[:, None, :])
            continue
        (T1, J1), (T2, J2) = frame(c.body1), frame(c.body2)
        a1 = T1[:, :3, :3] @ qf.new_tensor(c.anchor1)          # (B, 3) lever arms, world frame
        a2 = T2[:, :3, :3] @ qf.new_tensor(c.anchor2)
        p1, p2 = T1[:, :3, 3] + a1, T2[:, :3, 3] + a2
        Jp1 = J1[:, :3] - _skew(a1) @ J1[:, 3:]
        Jp2 = J2[:, :3] - _skew(a2) @ J2[:, 3:]
        rs.append(p1 - p2)
        Js.append(Jp1 - Jp2)
        if isinstance(c, WeldConstraint):
            F1, F2 = _quat_matrix(c.frame1, qf), _quat_matrix(c.frame2, qf)
            G2 = T2[:, :3, :3] @ F2
            Re = G2.transpose(-1, -2) @ T1[:, :3, :3] @ F1
            w, v = _rotation_quat_parts(Re)
            ts = float(c.torquescale)
            rs.append(ts * v)
            L = 0.5 * (w[:, None, None] * torch.eye(3, dtype=qf.dtype, device=qf.device) - _skew(v))
            Js.append(ts * (L @ G2.transpose(-1, -2) @ (J1[:, 3:] - J2[:, 3:])))
    if not rs:
        return qf.new_zeros(shape + (0,)), qf.new_zeros(shape + (0, model.nv))
    r = torch.cat(rs, dim=-1)
    J = torch.cat(Js, dim=-2)
    return r.reshape(shape + r.shape[-1:]), J.reshape(shape + J.shape[-2:])


def constraint_residual(model, constraints, q) -> torch.Tensor:
    """``r(q) (..., m)``: zero where every constraint holds (m or rad-like units, see the module docstring)."""
    return constraint_terms(model, constraints, q)[0]


def constraint_jacobian(model, constraints, q) -> torch.Tensor:
    """``J(q) (..., m, nv)`` with ``d r / dt = J v``."""
    return constraint_terms(model, constraints, q)[1]


def constraint_drift(model, constraints, q, v, method: str = "auto") -> torch.Tensor:
    """``J-dot(q, v) v (..., m)``: the rows' second time derivative at ``qdd = 0``, the derivative
    of ``J(q (+) t v) v`` at ``t = 0``. ``method``: ``"ad"`` forward-mode AD (exact; follows
    gradients exactly, slower), ``"difference"`` a central difference in ``t`` with step
    ``1e-5 / max(1, |v|)`` s (relative error ~1e-10; runs on the compiled kernels), ``"auto"``:
    AD when ``q`` or ``v`` requires a gradient, else the difference."""
    q = torch.as_tensor(q, dtype=model.dtype, device=model.device)
    v = torch.as_tensor(v, dtype=model.dtype, device=model.device)
    shape = torch.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    qf = q.expand(shape + q.shape[-1:]).reshape(-1, model.nq)
    vf = v.expand(shape + v.shape[-1:]).reshape(-1, model.nv)
    if method == "auto":
        method = "ad" if torch.is_grad_enabled() and (q.requires_grad or v.requires_grad) else "difference"
    if method not in ("ad", "difference"):
        raise ValueError(f"constraint drift method {method!r}: use 'auto', 'ad' or 'difference'")

    def Jv(t):
        J = constraint_jacobian(model, constraints, model.integrate(qf, vf * t[:, None]))
        return (J @ vf[:, :, None])[..., 0]

    if method == "ad":
        t0 = qf.new_zeros(qf.shape[0])
        out = torch.func.jvp(Jv, (t0,), (torch.ones_like(t0),))[1]
    else:
        eps = 1e-5 / vf.abs().amax(-1).clamp(min=1.0)
        qs = model.integrate(torch.cat([qf, qf]), torch.cat([vf * eps[:, None], -vf * eps[:, None]]))
        J = constraint_jacobian(model, constraints, qs)
        Jv2 = (J @ torch.cat([vf, vf])[:, :, None])[..., 0]
        B = qf.shape[0]
        out = (Jv2[:B] - Jv2[B:]) / (2.0 * eps[:, None])
    return out.reshape(shape + out.shape[-1:])


def limit_terms(model, limits, q) -> tuple[torch.Tensor, torch.Tensor]:
    """Lengths ``L (..., k)`` and Jacobians ``dL/dq (..., k, nv)`` of the tendon ``limits`` at ``q (..., nq)``."""
    q = torch.as_tensor(q, dtype=model.dtype, device=model.device)
    shape = q.shape[:-1]
    qf = q.reshape(-1, model.nq)
    if not limits:
        return qf.new_zeros(shape + (0,)), qf.new_zeros(shape + (0, model.nv))
    rows = [_tendon_coefficients(model, c, qf) for c in limits]   # one kinematics-free pass for every limit
    aq, av = torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])
    L = model._all_q(qf)[:, (7 if model.floating else 0):] @ aq.T
    J = model._project(av).expand(qf.shape[0], -1, -1)
    return L.reshape(shape + L.shape[-1:]), J.reshape(shape + J.shape[-2:])


@dataclass
class ConstraintMark:
    """What a viewer draws of one constraint over a batch of ``B`` configurations.

    ``points (B, k, 3)`` world points (m): a connect's or weld's two anchors (``body1``'s, then
    ``body2``'s), a tendon's coupled joints' origins (the joints' child links' origins, in the
    order of ``joints``); ``frames (B, 2, 3, 3)`` a weld's two frames' world orientations
    (columns the axes), else None; ``violation (B,)``: how far it is from holding (m for a
    connect, the larger of the anchors' distance (m) and the frames' angle (rad) for a weld,
    ``|r|`` for a tendon equality, the length beyond the range for a tendon limit, 0 inside);
    ``value (B,)``: a tendon's length ``sum c_j q_j`` (None for a connect or weld)."""

    name: str
    kind: str
    points: torch.Tensor
    violation: torch.Tensor
    frames: torch.Tensor | None = None
    joints: tuple[str, ...] = ()
    value: torch.Tensor | None = None


def constraint_marks(model, constraints, q) -> list[ConstraintMark]:
    """One :class:`ConstraintMark` per constraint at ``q (B, nq)`` or ``(nq,)`` (then ``B = 1``),
    from one forward-kinematics pass: the world anchors, frames and coupled joints a viewer
    draws, with each constraint's violation."""
    q = torch.as_tensor(q, dtype=model.dtype, device=model.device).reshape(-1, model.nq)
    poses = model.forward_kinematics(q)                       # (B, n_links, 4, 4)
    B = q.shape[0]
    eye = torch.eye(3, dtype=q.dtype, device=q.device).expand(B, 3, 3)
    child = {j.name: j.child for j in model.description.joints}

    def frame(body):
        if body is None:
            return eye, q.new_zeros(B, 3)
        T = poses[:, model.link_names.index(body)]
        return T[:, :3, :3], T[:, :3, 3]

    out = []
    for c in constraints:
        if isinstance(c, (TendonConstraint, TendonLimit)):
            pts = torch.stack([frame(child[j])[1] for j in c.joints], 1) if c.joints else q.new_zeros(B, 0, 3)
            L = _tendon_row(model, c, q)[0]
            if isinstance(c, TendonLimit):
                viol = torch.clamp(float(c.lower) - L, min=0.0) + torch.clamp(L - float(c.upper), min=0.0)
            else:
                viol = L.abs()
                L = L + float(c.offset)
            out.append(ConstraintMark(c.name, c.kind, pts, viol, joints=tuple(c.joints), value=L))
            continue
        (R1, t1), (R2, t2) = frame(c.body1), frame(c.body2)
        p1 = t1 + R1 @ q.new_tensor(c.anchor1)
        p2 = t2 + R2 @ q.new_tensor(c.anchor2)
        viol = torch.linalg.vector_norm(p1 - p2, dim=-1)
        frames = None
        if isinstance(c, WeldConstraint):
            F1 = R1 @ _quat_matrix(c.frame1, q)
            F2 = R2 @ _quat_matrix(c.frame2, q)
            frames = torch.stack([F1, F2], 1)
            rel = F2.transpose(-1, -2) @ F1
            w, v = _rotation_quat_parts(rel)
            viol = torch.maximum(viol, 2.0 * torch.atan2(torch.linalg.vector_norm(v, dim=-1), w))
        out.append(ConstraintMark(c.name, c.kind, torch.stack([p1, p2], 1), viol, frames=frames))
    return out
