"""The body-major torch backend: small batches, and every call that needs derivatives below
the batch-last threshold.

Tensors are ``(n, B, ...)`` (bodies first): per-body constants enter as one matrix product
over all samples, tree recursions are products with the ancestor matrix (cumulative sums for
serial chains), ABA takes one vectorised step per depth (:mod:`engine.robots.kinematics`,
:mod:`engine.robots.dynamics_body_major`). A floating base is the root of the recursions, in
the world frame (:mod:`engine.robots.floating`). Full coordinates (see
:mod:`engine.robots.backends`).
"""

from __future__ import annotations

import torch

from engine.robots import dynamics_batch_last as dyn_bl
from engine.robots import dynamics_body_major as dyn
from engine.robots import floating as fl
from engine.robots import kinematics as kin
from engine.robots.backends.tree import Inertials, Tree
from engine.spatial import skew, small_matmul

__all__ = ["BodyMajorBackend", "composite_forward_dynamics"]

# from this batch size on, forward kinematics composes one depth at a time (fewer flops)
# instead of by pointer jumping (fewer calls)
SEQUENTIAL_FK_BATCH = 128


def composite_forward_dynamics(backend, q, v, tau, a0, inertials: Inertials, armature_diag=None):
    """``M^-1 (tau - h)`` from a backend's CRBA and RNEA (``armature_diag (nv, nv)`` added to M),
    by the LDL^T solve of :func:`engine.robots.dynamics_batch_last.solve_mass_matrix_bl`."""
    M = backend.crba(q, inertials)
    if armature_diag is not None:
        M = M + armature_diag
    h = backend.rnea(q, v, None, a0, inertials)
    return dyn_bl.solve_mass_matrix_bl(M.permute(1, 2, 0), (tau - h).t()).t()


def _stack(per_link: list) -> torch.Tensor:
    """``T`` tensors ``(B, ...)`` -> ``(B, T, ...)``; one link: a view (no copy of a large batch)."""
    return per_link[0].unsqueeze(1) if len(per_link) == 1 else torch.stack(per_link, dim=1)


class BodyMajorBackend:
    """fk, jacobians, rnea, crba, aba and body_poses on body-major tensors (see the module docstring)."""

    name = "body-major"

    def __init__(self, tree: Tree):
        self.tree = tree

    # ---------------------------------------------------------------- kinematics
    def _poses(self, qj):
        """Joint configurations ``(B, nq_joints)`` -> body poses relative to the root ``(n + 1, B, 4, 4)``."""
        t = self.tree
        q_int, ball = t.joint_config(qj)
        if q_int.shape[1] >= SEQUENTIAL_FK_BATCH and len(t.levels) > 1:
            return kin.body_poses_by_level(q_int, t.C0, t.C, t.levels, t.level_parents, ball)
        return kin.body_poses(q_int, t.C0, t.C, t.jumps, ball)

    def body_poses(self, q) -> torch.Tensor:
        """World poses of the root and the bodies, ``(n + 1, B, 4, 4)``."""
        t = self.tree
        if not t.floating:
            return self._poses(q)
        return small_matmul(fl.base_pose(q[:, :7]), self._poses(q[:, 7:]))

    def fk(self, q) -> torch.Tensor:
        t = self.tree
        T = self.body_poses(q)
        return kin.link_poses(T, t.link_body, t.offset_links, t.offset_bodies, t.offset_T).transpose(0, 1)

    def jacobians(self, q, links, point=None, with_poses: bool = False):
        t = self.tree
        T = self.body_poses(q)
        z = kin.apply_to_bodies(T[1:], t.axis4)[..., :3, 0]
        o = T[1:, :, :3, 3]
        poses, Js = [], []
        for l in links:
            Tl = torch.matmul(T[t.link_body_int[l]], t.link_offset[l])
            p = Tl[:, :3, 3]
            if point is not None:
                p = p + torch.matmul(Tl[:, :3, :3], point.unsqueeze(-1)).squeeze(-1)
            J = t.to_joint_order(kin.point_jacobian(z, o, t.link_rev_mask[l], t.link_pri_mask[l], p)).permute(
                1, 2, 0
            )
            if t.floating:      # base columns: linear [R0 | -(p - p0)^ R0], angular [0 | R0]
                R0, p0 = T[0, :, :3, :3], T[0, :, :3, 3]
                Jb = torch.cat([torch.cat([R0, -small_matmul(skew(p - p0), R0)], -1),
                                torch.cat([torch.zeros_like(R0), R0], -1)], -2)
                J = torch.cat([Jb, J], dim=-1)
            poses.append(Tl)
            Js.append(J)
        J = _stack(Js)
        return (_stack(poses), J) if with_poses else J

    # ---------------------------------------------------------------- dynamics
    def _terms(self, q, inertials: Inertials):
        """(body poses, motion subspaces, world inertials)."""
        t = self.tree
        T = self.body_poses(q)
        S, _, _ = dyn.motion_subspaces(T, t.axis4, t.rev, t.pri)
        return T, S, dyn.world_inertia_terms(T, *inertials.constants)

    def rnea(self, q, v, a, a0, inertials: Inertials) -> torch.Tensor:
        t = self.tree
        f = t.base[1]
        vj = None if v is None else t.to_internal(v[:, f:])
        aj = None if a is None else t.to_internal(a[:, f:])
        T, S, iw = self._terms(q, inertials)
        if not t.floating:
            return t.to_joint_order(dyn.rnea(S, iw, vj, aj, a0, t.anc, t.chain, bias_src=t.bias_src)).t()
        # the base as the root of the recursion, in the world frame
        T0 = T[0]
        S0 = fl.base_motion_subspace(T0)
        v0 = None if v is None else (S0 * v[:, None, :6]).sum(-1)
        ar = q.new_zeros(q.shape[0], 6) if a is None else (S0 * a[:, None, :6]).sum(-1)
        if a0 is not None:
            ar = ar + a0
        tau, fsum = dyn.rnea(S, iw, vj, aj, ar, t.anc, t.chain, v0=v0, total=True, bias_src=t.bias_src)
        wrench = fsum + fl.root_force(fl.root_inertial_world(T0, *inertials.root), ar, v0)
        tau_b = (S0 * wrench.unsqueeze(-1)).sum(-2)
        return torch.cat([tau_b, t.to_joint_order(tau).t()], dim=-1)

    def crba(self, q, inertials: Inertials) -> torch.Tensor:
        t = self.tree
        T, S, iw = self._terms(q, inertials)
        out = dyn.crba(S, iw, t.anc, t.anc_strict, t.chain, composite=t.floating)
        M = out[0] if t.floating else out
        if t.permuted:
            M = M.index_select(1, t.dof_body).index_select(2, t.dof_body)
        if not t.floating:
            return M
        _, F, total = out
        T0 = T[0]
        total = total + fl.compact_root(*inertials.root, T0)
        M_bb, M_bj = fl.base_blocks(fl.base_motion_subspace(T0), F, total)
        if t.permuted:
            M_bj = M_bj.index_select(2, t.dof_body)
        return torch.cat([torch.cat([M_bb, M_bj], -1), torch.cat([M_bj.transpose(-1, -2), M], -1)], -2)

    def aba(self, q, v, tau, a0, inertials: Inertials, method: str = "auto") -> torch.Tensor:
        t = self.tree
        if not t.floating:
            if t.n == 0:
                return tau
            _, S, iw = self._terms(q, inertials)
            qdd = dyn.aba(S, dyn.spatial_inertia_world(*iw), t.to_internal(v), t.to_internal(tau), a0, t.anc,
                          t.levels, t.level_parents, t.chain, method=method, armature=t.armature_int,
                          bias_src=t.bias_src)
            return t.to_joint_order(qdd).t()
        if method == "auto":
            method = dyn_bl.auto_fd_method(t.n + 6, len(t.levels) + 1)
        if method == "composite" or t.n == 0:
            return composite_forward_dynamics(self, q, v, tau, a0, inertials, t.armature_diag)
        # the articulated-body algorithm with the base as its root step
        T, S, iw = self._terms(q, inertials)
        T0 = T[0]
        S0 = fl.base_motion_subspace(T0)
        root_w = fl.root_inertial_world(T0, *inertials.root)
        root = (dyn.spatial_inertia_world(*root_w)[0], S0, (S0 * v[:, None, :6]).sum(-1), tau[:, :6])
        qdd, qdd_b = dyn.aba(
            S,
            dyn.spatial_inertia_world(*iw),
            t.to_internal(v[:, 6:]),
            t.to_internal(tau[:, 6:]),
            a0,
            t.anc,
            t.levels,
            t.level_parents,
            t.chain,
            method="articulated",
            armature=t.armature_int,
            root=root,
            bias_src=t.bias_src,
        )
        return torch.cat([qdd_b, t.to_joint_order(qdd).t()], dim=-1)
