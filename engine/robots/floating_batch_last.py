"""The floating base on batch-last tensors (samples innermost), for large batches.

The dynamics of a free-flying robot do not depend on where its base is, only on how gravity
pulls on it: with ``v_b = [v; w]`` and ``a_b`` in the base frame (Pinocchio's free-flyer
convention, see :mod:`engine.robots.floating`), RNEA, CRBA and ABA give the same results
computed in a world frame that coincides with the base frame at that instant, with gravity
turned into it (``R^T g``). There the base motion subspace ``S0 = [[0, R], [R, p^ R]]``
becomes ``[[0, 1], [1, 0]]``: base velocities and forces only swap their halves, the base
pose never enters the kinematics, and the root's inertia is a constant. What is left per
sample is gravity in the base frame (one product from the quaternion's squares).

Component-major planes as :mod:`engine.robots.dynamics_batch_last`: spatial vectors
``(6, ..., B)`` ``[angular; linear]``.
"""

from __future__ import annotations

import torch

__all__ = ["base_inertia_bl", "gravity_in_base_bl", "swap_halves"]


# R, row-major (9,), as a linear map of the quaternion's products q_i q_j (x y z w, 16 of
# them) plus the identity: R = 1 + 2 (...) (Eigen's formula)
_ROTATION_TERMS = {
    0: ((1, 1, -2), (2, 2, -2)), 1: ((0, 1, 2), (2, 3, -2)), 2: ((0, 2, 2), (1, 3, 2)),
    3: ((0, 1, 2), (2, 3, 2)), 4: ((0, 0, -2), (2, 2, -2)), 5: ((1, 2, 2), (0, 3, -2)),
    6: ((0, 2, 2), (1, 3, -2)), 7: ((1, 2, 2), (0, 3, 2)), 8: ((0, 0, -2), (1, 1, -2)),
}
_rotation_maps: dict = {}


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _rotation_map(dtype, device):
    """``(C (9, 16), e (9, 1))``: R (row-major) = e + C (q q^T) (built once per dtype and device)."""
    key = (dtype, device)
    hit = _rotation_maps.get(key)
    if hit is None:
        C = torch.zeros(9, 16, dtype=torch.float64)
        for row, terms in _ROTATION_TERMS.items():
            for i, j, w in terms:
                C[row, 4 * i + j] += w
        e = torch.zeros(9, 1, dtype=torch.float64)
        e[[0, 4, 8]] = 1.0
        hit = _rotation_maps[key] = (C.to(dtype=dtype, device=device), e.to(dtype=dtype, device=device))
    return hit


def _quaternion_squares(qb: torch.Tensor) -> torch.Tensor:
    """``q_b (B, 7)`` -> the products of its quaternion's components ``(16, B)``."""
    quat = qb[:, 3:7].t().contiguous()                               # (4, B)
    return (quat.unsqueeze(1) * quat.unsqueeze(0)).view(16, -1)


def gravity_in_base_bl(qb: torch.Tensor, a0: torch.Tensor) -> torch.Tensor:
    """The world's spatial acceleration ``a0 (6,)`` (``[0; -g]``, see the model's
    ``_gravity_acc``) in the base frame of each sample: ``[R^T a0_ang; R^T a0_lin] (6, B)``,
    one product with the quaternion's squares."""
    C, e = _rotation_map(qb.dtype, qb.device)
    # (R^T x)_i = sum_k R[k, i] x_k: rows of the map weighted by the components of x
    Ct = C.view(3, 3, 16).transpose(0, 1)                           # [i, k]: row (k, i) of R
    et = e.view(3, 3).t()
    x = a0.view(2, 1, 3, 1)                                          # [angular, linear]
    G = (Ct.unsqueeze(0) * x).sum(2).reshape(6, 16)                  # (6, 16)
    g0 = (et.unsqueeze(0) * a0.view(2, 1, 3)).sum(2).reshape(6, 1)
    return torch.addmm(g0, G, _quaternion_squares(qb))


def swap_halves(x: torch.Tensor) -> torch.Tensor:
    """``[x[3:]; x[:3]]`` along the first dimension: in the base frame the base motion subspace
    ``S0``, its transpose and their inverses are all this swap (base velocities ``[v; w]``
    to spatial ``[w; v]``, spatial forces ``[n; f]`` to the base wrench ``[f; n]``)."""
    return torch.cat([x[3:], x[:3]])


# rows of the base block [[m 1, -m c^], [m c^, J]] in a table of sources: 0-8 J
# (row-major), 9-11 m c, 12-14 -m c, 15 m, 16 zero (c: the centre of mass)
_BASE_SOURCES = (15, 16, 16, 16, 11, 13,
                 16, 15, 16, 14, 16, 9,
                 16, 16, 15, 10, 12, 16,
                 16, 14, 10, 0, 1, 2,
                 11, 16, 12, 3, 4, 5,
                 13, 9, 16, 6, 7, 8)
_base_index: dict = {}


def base_inertia_bl(total: torch.Tensor) -> torch.Tensor:
    """``S0^T I S0 (6, 6, B)`` in the base frame: the inertia of a whole rigid body seen by the
    base velocity ``[v; w]``, from its compact inertia ``total (13, B)`` (``[m, h = m c, J]``
    about the base origin): ``[[m 1, -m c^], [m c^, J]]``."""
    m, h, J = total[0], total[1:4], total[4:].view(3, 3, -1)
    J = 0.5 * (J + J.transpose(0, 1))
    src = torch.cat([J.reshape(9, -1), h, -h, m.unsqueeze(0), torch.zeros_like(m).unsqueeze(0)])
    idx = _base_index.get(src.device)
    if idx is None:
        with torch.inference_mode(False):
            idx = _base_index[src.device] = torch.tensor(_BASE_SOURCES, device=src.device)
    return src.index_select(0, idx).view(6, 6, -1)
