"""The per-joint terms of identification: friction and actuation regressor columns and their
closed-form start.

The joint torque of :class:`engine.models.joint_friction.JointFriction`,
``Fv qd + Fc tanh(qd / v_s) + Ia qdd + tau0``, is linear in ``(Fv, Fc, Ia, tau0)`` and acts
on its own joint only, so

- :func:`joint_regressor` gives its columns of the joint-torque regressor, beside
  :meth:`RobotModel.regressor`'s inertial ones: ``tau = Y(q, qd, qdd) pi + Y_joint(qd, qdd) theta``;
- :func:`joint_columns` gives the same columns flattened and scaled for the identifiability
  analysis (like :func:`engine.identification.synthetic.regressor`'s: the torque of a typical value);
- :func:`joint_terms_start` solves, joint by joint, a non-negative least squares
  (``scipy.optimize.nnls``; the offset as the difference of two non-negative columns) of the
  torque the rigid body leaves unexplained, a physically consistent start for the joint fit.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.models.joint_friction import COULOMB_VELOCITY_SCALE, FRICTION_KINDS, smooth_sign

__all__ = ["JOINT_KINDS", "TYPICAL", "joint_columns", "joint_regressor", "joint_terms_start"]

JOINT_KINDS = FRICTION_KINDS   # damping, coulomb, armature, offset

# the torque of a typical value of each kind, for the regressor's column scale:
# 0.1 N m s/rad, 0.1 N m, 0.01 kg m^2, 0.1 N m
TYPICAL = {"damping": 0.1, "coulomb": 0.1, "armature": 0.01, "offset": 0.1}


def _basis(kind: str, qd: torch.Tensor, qdd: torch.Tensor, velocity_scale: float) -> torch.Tensor:
    """The factor of ``kind`` in the joint torque, (N, dof)."""
    if kind == "damping":
        return qd
    if kind == "coulomb":
        return smooth_sign(qd, velocity_scale)
    if kind == "armature":
        return qdd
    return torch.ones_like(qd)


def joint_regressor(qd: torch.Tensor, qdd: torch.Tensor, kinds=JOINT_KINDS,
                    velocity_scale: float = COULOMB_VELOCITY_SCALE) -> torch.Tensor:
    """The joint-torque regressor of the per-joint terms, ``(..., n, K n)`` for ``K`` kinds.

    qd, qdd: (..., n) in rad/s, rad/s^2 (m/s, m/s^2 for prismatic joints); kinds: some of
    :data:`JOINT_KINDS`, taken in that order; velocity_scale: ``v_s`` of the Coulomb sign (rad/s).
    Column ``k n + i`` is kind ``k`` of joint ``i`` and is nonzero on joint ``i``'s row only:
    ``qd_i`` (damping, N m s/rad), ``tanh(qd_i / v_s)`` (Coulomb, N m), ``qdd_i`` (armature,
    kg m^2), ``1`` (offset, N m). With ``theta = [values[k][i] for k in kinds for i in range(n)]``,
    ``Y_joint @ theta`` is :meth:`JointFriction.torque` of those values (the kinds not listed at 0).
    """
    unknown = [k for k in kinds if k not in JOINT_KINDS]
    if unknown:
        raise ValueError(f"joint_regressor: unknown kind(s) {unknown}; expected some of {JOINT_KINDS}")
    if qd.shape != qdd.shape:
        raise ValueError(f"joint_regressor: qd {tuple(qd.shape)} and qdd {tuple(qdd.shape)} differ in shape")
    n = qd.shape[-1]
    eye = torch.eye(n, dtype=qd.dtype, device=qd.device)
    blocks = [_basis(k, qd, qdd, velocity_scale)[..., :, None] * eye for k in JOINT_KINDS if k in kinds]
    if not blocks:
        return qd.new_zeros(qd.shape + (0,))
    return torch.cat(blocks, dim=-1)


def joint_columns(qd: torch.Tensor, qdd: torch.Tensor, kinds, labels: list[str], velocity_scale: float,
                  scale: torch.Tensor) -> tuple[np.ndarray, list[tuple[str, str, int]]]:
    """Regressor columns ``(N * dof, K)`` of the joint ``kinds`` and their names ``(label, kind, -1)``.

    qd, qdd: (N, dof); labels: one name per joint (the child link, as the inertial kinds are
    named); scale: (dof,) each joint's torque scale (the columns are divided by it).
    """
    cols, names = [], []
    for kind in JOINT_KINDS:
        if kind not in kinds:
            continue
        basis = _basis(kind, qd, qdd, velocity_scale) * TYPICAL[kind]
        for j, label in enumerate(labels):
            col = torch.zeros_like(qd)
            col[:, j] = basis[:, j]
            cols.append((col / scale).reshape(-1))
            names.append((label, kind, -1))
    Y = torch.stack(cols, -1).detach().cpu().numpy() if cols else np.zeros((qd.numel(), 0))
    return Y, names


def joint_terms_start(residual: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor, learn, fixed: dict,
                      velocity_scale: float) -> dict[str, list[float]]:
    """Per joint, the non-negative least-squares ``{kind: [dof values]}`` of the learned kinds.

    residual: (N, dof) the measured torques minus the rigid body's (N m); fixed: ``{kind: (dof,)}``
    values of the kinds not learned (their torque is taken off first). Kinds not learned are
    returned as given in ``fixed``.
    """
    from scipy.optimize import nnls

    r = residual.detach().cpu().double().numpy()
    qd_, qdd_ = qd.detach().cpu().double(), qdd.detach().cpu().double()
    bases = {k: _basis(k, qd_, qdd_, velocity_scale).numpy() for k in JOINT_KINDS}
    dof = r.shape[1]
    out = {k: [float(v) for v in fixed.get(k, [0.0] * dof)] for k in JOINT_KINDS}
    learned = [k for k in JOINT_KINDS if k in learn]
    if not learned:
        return out
    for j in range(dof):
        target = r[:, j].copy()
        for k in JOINT_KINDS:
            if k not in learned:
                target -= out[k][j] * bases[k][:, j]
        cols, owners = [], []
        for k in learned:
            cols.append(bases[k][:, j])
            owners.append((k, 1.0))
            if k == "offset":
                cols.append(-bases[k][:, j])
                owners.append((k, -1.0))
        A = np.stack(cols, 1)
        norms = np.linalg.norm(A, axis=0)
        norms[norms == 0] = 1.0
        x, _ = nnls(A / norms, target)
        x = x / norms
        for k in learned:
            out[k][j] = float(sum(v * s for v, (kk, s) in zip(x, owners) if kk == k))
    return out
