"""The batch-last torch backend: large batches (from ``engine.robots.model.BATCH_LAST_BATCH``
samples on).

Tensors are ``(n, k, B)``: the samples innermost and contiguous, so 3x3 and 6x6 products are
elementwise multiply-adds over the samples (about twice as fast as body-major at batches in
the thousands; :mod:`engine.robots.dynamics_batch_last`). Wide trees (legs, hands) sum over
the tree one depth at a time (:meth:`Tree.level_sums`); a floating base computes its dynamics
in the base frame (:mod:`engine.robots.floating_batch_last`). Full coordinates (see
:mod:`engine.robots.backends`).
"""

from __future__ import annotations

from typing import cast

import torch

from engine.robots import dynamics_batch_last as dyn_bl
from engine.robots import floating as fl
from engine.robots import floating_batch_last as fbl
from engine.robots import kinematics as kin
from engine.robots.backends.body_major import _stack, composite_forward_dynamics
from engine.robots.backends.tree import Inertials, Tree

__all__ = ["BatchLastBackend"]


class BatchLastBackend:
    """fk, jacobians, rnea, crba and aba on batch-last tensors (see the module docstring)."""

    name = "batch-last"

    def __init__(self, tree: Tree):
        self.tree = tree

    def _poses(self, qj, root_top=None):
        """Joint configurations ``(B, nq_joints)`` -> world poses of the movable bodies, top rows
        ``(n, 3, 4, B)`` (root_top: the root's ``(3, 4, B)``)."""
        t = self.tree
        q_int, ball = t.joint_config(qj)
        return kin.body_poses_bl(q_int, t.Ct4, t.levels, t.level_parents, root_top, ball)

    def _joint_poses(self, q):
        """Body poses relative to the root (a floating base: in the base frame)."""
        return self._poses(q[:, 7:] if self.tree.floating else q)

    def _terms(self, W, inertials: Inertials):
        """Motion subspaces ``(n, 6, B)`` and world inertials from body poses ``W``."""
        t = self.tree
        z = kin.axes_bl(W, t.axis3)
        S = dyn_bl.motion_subspaces_bl(
            z, W[:, :, 3], None if t.all_rev else t.rev, None if t.all_rev else t.pri
        )
        return S, dyn_bl.world_inertials_bl(W, *inertials.constants)

    @staticmethod
    def _root(inertials: Inertials):
        m0, c0, Ic0 = inertials.root
        return m0.reshape(1), c0.view(3, 1, 1), Ic0.view(3, 3, 1, 1)

    # ---------------------------------------------------------------- kinematics
    def fk(self, q) -> torch.Tensor:
        t = self.tree
        if not t.floating:
            return kin.link_poses_bl(self._poses(q), t.link_src, t.offset_bodies, t.offset_T)
        T0 = fl.base_pose(q[:, :7])
        W = self._poses(q[:, 7:], T0[:, :3].permute(1, 2, 0).contiguous())
        return kin.link_poses_bl(W, t.link_src, t.offset_bodies, t.offset_T, root=T0)

    def jacobians(self, q, links, point=None, with_poses: bool = False):
        t = self.tree
        top = None
        if t.floating:
            top = fl.base_pose(q[:, :7])[:, :3].permute(1, 2, 0).contiguous()          # (3, 4, B)
            W = self._poses(q[:, 7:], top)
        else:
            W = self._poses(q)
        B = W.shape[-1]
        z = kin.axes_bl(W, t.axis3)
        o = W[:, :, 3]
        poses, Js = [], []
        for l in links:
            b = t.link_body_int[l]
            off = t.link_offset[l]
            local = (
                off[:3, 3] if point is None else off[:3, 3] + point @ off[:3, :3].transpose(0, 1)
            )  # (3,) or (B, 3)
            Wb = W[b - 1] if b > 0 else top
            loc = local.t() if point is not None else local[:, None]
            if Wb is None:
                p = loc.expand(3, B)
            else:
                p = (Wb[:, :3] * loc.unsqueeze(0)).sum(1) + Wb[:, 3]                   # (3, B)
            r = t.link_rev_mask[l][:, None, None]
            lin = kin.cross_bl(z, p.unsqueeze(0) - o) * r
            if not t.all_rev:
                lin = lin + z * t.link_pri_mask[l][:, None, None]
            J = t.to_joint_order(torch.cat([lin, z * r], dim=1)).permute(2, 1, 0)      # (B, 6, n)
            if t.floating:      # base columns: linear [R0 | R0 e_j x (p - p0)], angular [0 | R0]
                R0 = cast(torch.Tensor, top)[:, :3]
                X = kin.cross_bl(R0.transpose(0, 1), (p - cast(torch.Tensor, top)[:, 3]).unsqueeze(0)).transpose(
                    0, 1
                )  # (3, 3, B)
                Jb = torch.cat(
                    [torch.cat([R0, X], 1), torch.cat([torch.zeros_like(R0), R0], 1)], 0
                )  # (6, 6, B)
                J = torch.cat([Jb.permute(2, 0, 1), J], dim=-1)
            Js.append(J)
            if with_poses:
                poses.append(off.expand(B, 4, 4) if Wb is None else torch.cat(
                    [Wb.permute(2, 0, 1) @ off, off.new_tensor([0.0, 0.0, 0.0, 1.0]).expand(B, 1, 4)], dim=1))
        J = _stack(Js)
        return (_stack(poses), J) if with_poses else J

    # ---------------------------------------------------------------- dynamics
    def rnea(self, q, v, a, a0, inertials: Inertials) -> torch.Tensor:
        t = self.tree
        f = t.base[1]
        vj = None if v is None else t.to_internal(v[:, f:])
        aj = None if a is None else t.to_internal(a[:, f:])
        S, iw = self._terms(self._joint_poses(q), inertials)
        if not t.floating:
            tau = dyn_bl.rnea_bl(S, iw, vj, aj, a0, t.anc, t.chain, levels=t.level_sums(), bias_src=t.bias_src)
            return t.to_joint_order(tau).t()
        # in the base frame: the base's motion subspace swaps halves, gravity turns with the base
        B = q.shape[0]
        root = self._root(inertials)
        v0 = None if v is None else fbl.swap_halves(v[:, :6].t())
        ar = q.new_zeros(6, B) if a is None else fbl.swap_halves(a[:, :6].t())
        if a0 is not None:
            ar = ar + fbl.gravity_in_base_bl(q, a0)
        tau, fsum = dyn_bl.rnea_bl(
            S, iw, vj, aj, ar, t.anc, t.chain, v0=v0, total=True, levels=t.level_sums(), bias_src=t.bias_src
        )
        f0 = dyn_bl.body_forces_bl(root[0][:, None], root[1], root[2], ar[:, None],
                                   None if v0 is None else v0[:, None])[:, 0]
        return torch.cat([fbl.swap_halves(fsum + f0).t(), t.to_joint_order(tau).t()], dim=-1)

    def crba(self, q, inertials: Inertials) -> torch.Tensor:
        """``(B, nv, nv)``, a view of a batch-last ``(nv, nv, B)`` tensor. A floating base: the
        base rows are the whole robot's inertia and each joint's composite inertia times its
        motion subspace, seen from the base (M does not depend on the base's pose)."""
        t = self.tree
        S, iw = self._terms(self._joint_poses(q), inertials)
        order = t.dof_body if t.permuted else None
        base = None
        if t.floating:
            root = self._root(inertials)

            def base(F, total):
                return fbl.base_inertia_bl(total + dyn_bl.compact_inertias_bl(*root)[:, 0]), fbl.swap_halves(
                    F
                )

        return dyn_bl.crba_bl(
            S, iw, t.anc, t.anc_strict, t.chain, order=order, levels=t.level_sums(), base=base
        )

    def aba(self, q, v, tau, a0, inertials: Inertials, method: str = "auto") -> torch.Tensor:
        t = self.tree
        if not t.floating:
            S, iw = self._terms(self._joint_poses(q), inertials)
            qdd = dyn_bl.aba_bl(
                S,
                iw,
                t.to_internal(v),
                t.to_internal(tau),
                a0,
                t.anc,
                t.levels,
                t.level_parents,
                t.chain,
                method=method,
                armature=t.armature_int,
                bias_src=t.bias_src,
            )
            return t.to_joint_order(qdd).t()
        if method == "auto":
            method = dyn_bl.auto_fd_method(t.n + 6, len(t.levels) + 1)
        if method == "composite":
            return composite_forward_dynamics(self, q, v, tau, a0, inertials, t.armature_diag)
        # articulated, in the base frame, gravity turned with the base
        S, iw = self._terms(self._joint_poses(q), inertials)
        m0, c0, Ic0 = self._root(inertials)
        I0 = dyn_bl.spatial_inertia_world_bl(m0, c0.transpose(0, 1), Ic0.permute(2, 0, 1, 3))[0]   # (6, 6, 1)
        root = (I0, fbl.swap_halves(v[:, :6].t()), tau[:, :6].t())
        qdd, qdd_b = dyn_bl.aba_bl(S, iw, t.to_internal(v[:, 6:]), t.to_internal(tau[:, 6:]),
                                   None if a0 is None else fbl.gravity_in_base_bl(q, a0), t.anc, t.levels,
                                   t.level_parents, t.chain, method="articulated", armature=t.armature_int,
                                   root=root, bias_src=t.bias_src)
        return torch.cat([qdd_b, t.to_joint_order(qdd)], 0).t()
