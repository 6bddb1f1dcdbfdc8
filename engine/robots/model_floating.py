"""General coordinates of a :class:`engine.robots.model.RobotModel`: a floating base, coupled
mimic joints, joint armature, and the configuration manifold.

A mixin of the model. Coordinates (Pinocchio's, so results compare one to one):

- a floating base (``description.floating_base``): ``q = [base position in the world (3),
  base quaternion x y z w (4), joint positions (dof)]``, ``v = [base linear velocity, base
  angular velocity, both in the base frame (6), joint velocities (dof)]`` (see
  :mod:`engine.robots.floating`); the first six generalised forces are the base wrench in
  the base frame ``[force; moment about the base origin]``;
- coupled mimic joints: ``q_mimic = multiplier * q_master + offset``; they carry no degree
  of freedom: with ``G`` the map from the independent joints to all movable joints,
  ``tau = G^T tau_all`` and ``M = G^T M_all G`` (Pinocchio 4's ``mimic=True`` model);
- armature (rotor inertia) ``Joint.armature`` on the joint-space inertia's diagonal, in
  RNEA and in forward dynamics (Pinocchio's ``model.armature``, MuJoCo's ``armature``).

Models with a floating base or mimic joints run the ``_g_*`` methods here (the fixed-base
algorithms with a moving root and the projections; forward dynamics ``M^-1 (tau - h)`` by a
tree-sparse LDL^T solve); plain fixed-base models keep the model's fast paths.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.robots import dynamics_batch_last as dyn_bl
from engine.robots import dynamics_body_major as dyn
from engine.robots import floating as fl
from engine.robots import floating_batch_last as fbl
from engine.robots import kinematics as kin
from engine.spatial import skew, small_matmul

__all__ = ["GeneralCoordinates"]


class GeneralCoordinates:
    """nq / nv coordinates, the floating base, mimic coupling, armature; the configuration manifold."""

    def _init_coordinates(self, joints, buf) -> None:
        """joints: every movable joint (topology order); buf(name, value): registers a buffer."""
        by_name = {j.name: j for j in joints}
        self.joint_names = [j.name for j in joints if j.mimic is None]
        self.mimic_joint_names = [j.name for j in joints if j.mimic is not None]
        self.dof = len(self.joint_names)
        self.nq = self.dof + (7 if self.floating else 0)
        self.nv = self.dof + (6 if self.floating else 0)
        self._generic = self.floating or bool(self.mimic_joint_names)
        user = {name: i for i, name in enumerate(self.joint_names)}
        if self.mimic_joint_names:
            G, off = np.zeros((len(joints), self.dof)), np.zeros(len(joints))
            for k, j in enumerate(joints):
                a, b, name, seen = 1.0, 0.0, j.name, set()
                while by_name[name].mimic is not None:
                    m = by_name[name].mimic
                    if m.joint not in by_name:
                        raise ValueError(f"joint {name!r} mimics {m.joint!r}, which is not a movable joint of "
                                         f"{self.description.name!r}; load with mimic='independent'")
                    if name in seen:
                        raise ValueError(f"mimic joints of {self.description.name!r} form a loop at {name!r}")
                    seen.add(name)
                    a, b, name = a * m.multiplier, b + a * m.offset, m.joint
                G[k, user[name]], off[k] = a, b
            buf("_G", G)
            buf("_mimic_offset", off)
        else:
            self.register_buffer("_G", None, persistent=False)
            self.register_buffer("_mimic_offset", None, persistent=False)
        arm = np.array([j.armature for j in joints], dtype=float)
        if arm.size and np.any(arm != 0):
            buf("_armature_full", arm)
            body_dof = self.topology.body_dof
            buf("_armature_int", arm[body_dof])
            buf("_armature", arm)                       # used by the fast paths (no mimic: the user order)
        else:
            for name in ("_armature_full", "_armature_int", "_armature"):
                self.register_buffer(name, None, persistent=False)

    # ------------------------------------------------------------------ coordinates
    def _expand_q(self, qj):
        """Independent joint positions ``(B, dof)`` -> every movable joint's ``(B, n)``."""
        return qj if self._G is None else torch.addmm(self._mimic_offset, qj, self._G.t())

    def _expand_v(self, vj):
        return vj if self._G is None else vj @ self._G.t()

    def _project(self, x):
        """Forces on every movable joint ``(..., n)`` -> on the independent ones ``(..., dof)`` (``G^T x``)."""
        return x if self._G is None else x @ self._G

    def neutral(self) -> torch.Tensor:
        """The neutral configuration ``(nq,)``: joints at zero, the base at the origin, unrotated."""
        q = torch.zeros(self.nq, dtype=self.dtype, device=self.device)
        if self.floating:
            q[6] = 1.0
        return q

    def integrate(self, q, v, dt=1.0) -> torch.Tensor:
        """The configuration reached from ``q (..., nq)`` moving at ``v (..., nv)`` for ``dt``
        (``pinocchio.integrate(model, q, v * dt)``: the base moves by ``exp`` of its twist)."""
        shape, (q, v) = self._flat(q, v, kinds="qv")
        v = v * dt
        if not self.floating:
            return (q + v).reshape(shape + (self.nq,))
        out = torch.cat([fl.integrate(q[:, :7], v[:, :6]), q[:, 7:] + v[:, 6:]], dim=-1)
        return out.reshape(shape + (self.nq,))

    def difference(self, q0, q1) -> torch.Tensor:
        """The velocity ``(..., nv)`` that takes ``q0`` to ``q1`` in unit time (``pinocchio.difference``)."""
        shape, (q0, q1) = self._flat(q0, q1)
        if not self.floating:
            return (q1 - q0).reshape(shape + (self.nv,))
        out = torch.cat([fl.difference(q0[:, :7], q1[:, :7]), q1[:, 7:] - q0[:, 7:]], dim=-1)
        return out.reshape(shape + (self.nv,))

    def center_of_mass(self, q) -> torch.Tensor:
        """The centre of mass of the moving bodies in the world ``(..., 3)``: every link of a
        floating-base robot; without the base (the root body) of a fixed-base one, as
        ``pinocchio.centerOfMass``."""
        shape, (q,) = self._flat(q)
        T = self._g_body_poses(q) if self._generic else self._body_poses(self._to_internal(q))
        m, c, _ = self._body_parts()
        if not self.floating:
            T, m, c = T[1:], m[1:], c[1:]
        c1 = torch.cat([c, torch.ones_like(c[:, :1])], dim=-1).unsqueeze(-1)
        cw = kin.apply_to_bodies(T, c1)[..., :3, 0]
        com = (m[:, None, None] * cw).sum(0) / m.sum()
        return com.reshape(shape + (3,))

    # ------------------------------------------------------------------ kinematics
    def _g_root_and_joints(self, q):
        """Flat ``q (B, nq)`` -> (base pose ``(B, 4, 4)`` or None, internal joint positions ``(n, B)``)."""
        if self.floating:
            return fl.base_pose(q[:, :7]), self._to_internal(self._expand_q(q[:, 7:]))
        return None, self._to_internal(self._expand_q(q))

    def _g_body_poses(self, q):
        """World poses of the root and the bodies, body-major ``(n + 1, B, 4, 4)``."""
        T0, q_int = self._g_root_and_joints(q)
        T = self._body_poses(q_int)
        return T if T0 is None else small_matmul(T0, T)

    def _g_terms(self, q):
        """(base pose or None, poses, motion subspaces, world inertials, batch-last?) for flat ``q``."""
        T0, q_int = self._g_root_and_joints(q)
        if self._batch_last(q.shape[0]):
            W = self._body_poses_bl(q_int, root=T0)
            _, S, inertials = self._kinematic_terms_bl(None, W=W)
            return T0, W, S, inertials, True
        T = self._body_poses(q_int)
        if T0 is not None:
            T = small_matmul(T0, T)
        _, S, inertials = self._kinematic_terms(None, T=T)
        return T0, T, S, inertials, False

    def _g_terms_bl(self, q):
        """A floating base at a large batch, in the base frame (see
        :mod:`engine.robots.floating_batch_last`): (motion subspaces, world inertials of the
        bodies, of the root: constants ``(m (1,), c (3, 1, 1), Ic (3, 3, 1, 1))``), batch-last."""
        _, S, inertials = self._kinematic_terms_bl(self._to_internal(self._expand_q(q[:, 7:])))
        m0, c0, Ic0 = self._root_inertial()
        return S, inertials, (m0.reshape(1), c0.view(3, 1, 1), Ic0.view(3, 3, 1, 1))

    def _g_forward_kinematics(self, q):
        """Flat ``q`` -> link poses ``(B, L, 4, 4)``."""
        if self._batch_last(q.shape[0]):
            T0, q_int = self._g_root_and_joints(q)
            W = self._body_poses_bl(q_int, root=T0)
            return kin.link_poses_bl(W, None if self._link_src_identity else self._link_src, self._offset_bodies,
                                     self._offset_T, root=T0)
        T = self._g_body_poses(q)
        return kin.link_poses(T, self._link_body, self._offset_links, self._offset_bodies, self._offset_T).transpose(0, 1)

    def _g_jacobian(self, q, l: int, point):
        """Flat ``q`` -> ``(B, 6, nv)``: rows linear, angular (world); base columns first."""
        if self.floating and self._batch_last(q.shape[0]):
            return self._g_jacobian_bl(q, l, point)
        T = self._g_body_poses(q)
        z = kin.apply_to_bodies(T[1:], self._axis4)[..., :3, 0]
        return self._jacobian_from_poses(T, z, l, point)[1]

    def _g_jacobian_bl(self, q, l: int, point):
        """A floating base at a large batch: :meth:`_g_jacobian` on batch-last poses."""
        top = fl.base_pose(q[:, :7])[:, :3].permute(1, 2, 0).contiguous()                 # (3, 4, B)
        W = kin.body_poses_bl(self._to_internal(self._expand_q(q[:, 7:])), self._Ct4, self._levels,
                              self._levels_parents(), top)
        J, p = self._jacobian_bl(None, l, point, W=W, root_top=top)
        R0 = top[:, :3]
        # base columns: linear velocity [R0 | R0 e_j x (p - p0)], angular velocity [0 | R0]
        X = kin.cross_bl(R0.transpose(0, 1), (p - top[:, 3]).unsqueeze(0)).transpose(0, 1)    # (3, 3, B)
        Jb = torch.cat([torch.cat([R0, X], 1), torch.cat([torch.zeros_like(R0), R0], 1)], 0)   # (6, 6, B)
        return torch.cat([Jb.permute(2, 0, 1), self._project(J)], dim=-1)

    def _jacobian_from_poses(self, T, z, l: int, point=None):
        """Body poses ``T (n + 1, B, 4, 4)`` (world), joint axes ``z (n, B, 3)`` -> (link pose
        ``(B, 4, 4)``, Jacobian ``(B, 6, nv)`` of its origin or of ``point (B, 3)`` in its frame)."""
        Tl = torch.matmul(T[self._link_body_int[l]], self._link_offset[l])
        p = Tl[:, :3, 3]
        if point is not None:
            p = p + torch.matmul(Tl[:, :3, :3], point.unsqueeze(-1)).squeeze(-1)
        J = kin.point_jacobian(z, T[1:, :, :3, 3], self._link_rev_mask[l], self._link_pri_mask[l], p)
        J = self._project(self._to_user(J).permute(1, 2, 0))
        if not self.floating:
            return Tl, J
        R0, p0 = T[0, :, :3, :3], T[0, :, :3, 3]
        Jb = torch.cat([torch.cat([R0, -small_matmul(skew(p - p0), R0)], -1),
                        torch.cat([torch.zeros_like(R0), R0], -1)], -2)
        return Tl, torch.cat([Jb, J], dim=-1)

    def frame_jacobians(self, q, links):
        """World poses ``(..., T, 4, 4)`` and Jacobians ``(..., T, 6, nv)`` (rows linear, angular;
        world frame; at each link's origin) of several links from one kinematics pass."""
        shape, (q,) = self._flat(q)
        T = self._g_body_poses(q)
        z = kin.apply_to_bodies(T[1:], self._axis4)[..., :3, 0]
        out = [self._jacobian_from_poses(T, z, self._link_idx(link)) for link in links]
        poses = torch.stack([o[0] for o in out], dim=1)
        J = torch.stack([o[1] for o in out], dim=1)
        return poses.reshape(shape + poses.shape[1:]), J.reshape(shape + J.shape[1:])

    # ------------------------------------------------------------------ dynamics
    def _g_rnea(self, q, v, a, gravity):
        """Flat inputs (v, a None: zero) -> generalised forces ``(B, nv)``."""
        B = q.shape[0]
        bl_root = None
        if self.floating and self._batch_last(B):
            S, inertials, bl_root = self._g_terms_bl(q)
            bl = True
        else:
            T0, _, S, inertials, bl = self._g_terms(q)
        f = 6 if self.floating else 0
        vj = None if v is None else self._expand_v(v[:, f:])
        aj = None if a is None else self._expand_v(a[:, f:])
        vj_int = None if vj is None else self._to_internal(vj)
        aj_int = None if aj is None else self._to_internal(aj)
        a0 = self._gravity_acc(gravity)
        if bl_root is not None:     # in the base frame: S0 swaps halves, gravity turns with the base
            root = bl_root
            v0 = None if v is None else fbl.swap_halves(v[:, :6].t())
            ar = q.new_zeros(6, B) if a is None else fbl.swap_halves(a[:, :6].t())
            if a0 is not None:
                ar = ar + fbl.gravity_in_base_bl(q, a0)
            tau_int, fsum = dyn_bl.rnea_bl(S, inertials, vj_int, aj_int, ar, self._anc, self._chain, v0=v0, total=True,
                                           levels=self._level_sums())
            f0 = dyn_bl.body_forces_bl(root[0][:, None], root[1], root[2], ar[:, None],
                                       None if v0 is None else v0[:, None])[:, 0]
            tau_b = fbl.swap_halves(fsum + f0).t()
        elif self.floating:     # small batches, body-major, in the world frame
            S0 = fl.base_motion_subspace(T0)
            v0 = None if v is None else (S0 * v[:, None, :6]).sum(-1)
            ar = q.new_zeros(B, 6) if a is None else (S0 * a[:, None, :6]).sum(-1)
            if a0 is not None:
                ar = ar + a0
            tau_int, fsum = dyn.rnea(S, inertials, vj_int, aj_int, ar, self._anc, self._chain, v0=v0, total=True)
            root = fl.root_inertial_world(T0, *self._root_inertial())
            wrench = fsum + fl.root_force(root, ar, v0)
            tau_b = (S0 * wrench.unsqueeze(-1)).sum(-2)
        else:
            kw = {"levels": self._level_sums()} if bl else {}
            tau_int = (dyn_bl.rnea_bl if bl else dyn.rnea)(S, inertials, vj_int, aj_int, a0, self._anc, self._chain, **kw)
        tau = self._to_user(tau_int).t()
        if self._armature_full is not None and aj is not None:
            tau = tau + self._armature_full * aj
        tau = self._project(tau)
        return torch.cat([tau_b, tau], dim=-1) if self.floating else tau

    def _g_mass_matrix(self, q):
        """Flat ``q`` -> ``M (B, nv, nv)``."""
        if self.floating and self._batch_last(q.shape[0]):
            return self._g_mass_matrix_bl(q)
        T0, _, S, inertials, bl = self._g_terms(q)
        order = self._dof_body if self._permuted else None
        if bl:          # mimic joints on a fixed base
            M = dyn_bl.crba_bl(S, inertials, self._anc, self._anc_strict, self._chain, order=order,
                               levels=self._level_sums())
            out = None
        else:
            out = dyn.crba(S, inertials, self._anc, self._anc_strict, self._chain, composite=self.floating)
            M = out[0] if self.floating else out
            if self._permuted:
                M = M.index_select(1, self._dof_body).index_select(2, self._dof_body)
        if self._armature_full is not None:
            M = M + torch.diag(self._armature_full)
        if self._G is not None:
            M = self._G.t() @ M @ self._G
        if not self.floating:
            return M
        _, F, total = out
        total = total + fl.compact_root(*self._root_inertial(), T0)
        M_bb, M_bj = fl.base_blocks(fl.base_motion_subspace(T0), F, total)
        if self._permuted:
            M_bj = M_bj.index_select(2, self._dof_body)
        M_bj = self._project(M_bj)
        return torch.cat([torch.cat([M_bb, M_bj], -1), torch.cat([M_bj.transpose(-1, -2), M], -1)], -2)

    def _g_mass_matrix_bl(self, q):
        """A floating base at a large batch: ``M (B, nv, nv)`` (without mimic joints a view of a
        batch-last ``(nv, nv, B)`` tensor). The base rows are the whole robot's inertia and each
        joint's composite inertia times its motion subspace, seen from the base; mimic joints:
        ``P^T M_all P`` with ``P = diag(1_6, G)``."""
        S, inertials, root = self._g_terms_bl(q)       # in the base frame: M does not depend on the base pose

        def base(F, total):
            return fbl.base_inertia_bl(total + dyn_bl.compact_inertias_bl(*root)[:, 0]), fbl.swap_halves(F)

        M = dyn_bl.crba_bl(S, inertials, self._anc, self._anc_strict, self._chain, base=base,
                           order=self._dof_body if self._permuted else None, levels=self._level_sums())
        if self._armature_full is not None:     # M is fresh: in place
            M[:, 6:, 6:].diagonal(0, 1, 2).add_(self._armature_full)
        if self._G is None:
            return M
        P = torch.block_diag(torch.eye(6, dtype=M.dtype, device=M.device), self._G)
        return P.t() @ M @ P

    def _g_forward_dynamics(self, q, v, tau, gravity, method: str = "auto"):
        """Generalised accelerations ``(B, nv)``: the articulated-body algorithm with the base as
        its root step (a floating base without mimic joints), or ``M^-1 (tau - h)`` by a
        tree-sparse LDL^T solve, base rows first ("composite"; always with mimic joints)."""
        if method == "auto":
            method = dyn_bl.auto_fd_method(self._n + 6, len(self._levels) + 1) if self.floating else "composite"
        if method not in ("articulated", "composite"):
            raise ValueError(f"unknown forward dynamics method {method!r}")
        if method == "composite" or not self.floating or self._G is not None or self._n == 0:
            M = self._g_mass_matrix(q)
            h = self._g_rnea(q, v, None, gravity)
            return dyn_bl.solve_mass_matrix_bl(M.permute(1, 2, 0), (tau - h).t()).t()
        a0 = self._gravity_acc(gravity)
        if self._batch_last(q.shape[0]):        # in the base frame, gravity turned with the base
            S, inertials, (m0, c0, Ic0) = self._g_terms_bl(q)
            I0 = dyn_bl.spatial_inertia_world_bl(m0, c0.transpose(0, 1), Ic0.permute(2, 0, 1, 3))[0]   # (6, 6, 1)
            root = (I0, fbl.swap_halves(v[:, :6].t()), tau[:, :6].t())
            args = (self._to_internal(v[:, 6:]), self._to_internal(tau[:, 6:]),
                    None if a0 is None else fbl.gravity_in_base_bl(q, a0), self._anc, self._levels,
                    self._levels_parents(), self._chain)
            qdd, qdd_b = dyn_bl.aba_bl(S, inertials, *args, method="articulated", armature=self._armature_int,
                                       root=root)
            return torch.cat([qdd_b, self._to_user(qdd)], 0).t()
        args = (self._to_internal(v[:, 6:]), self._to_internal(tau[:, 6:]), a0, self._anc, self._levels,
                self._levels_parents(), self._chain)
        T0, _, S, inertials, _ = self._g_terms(q)
        S0 = fl.base_motion_subspace(T0)
        root_w = fl.root_inertial_world(T0, *self._root_inertial())
        root = (dyn.spatial_inertia_world(*root_w)[0], S0, (S0 * v[:, None, :6]).sum(-1), tau[:, :6])
        qdd, qdd_b = dyn.aba(S, dyn.spatial_inertia_world(*inertials), *args, method="articulated",
                             armature=self._armature_int, root=root)
        return torch.cat([qdd_b, self._to_user(qdd).t()], dim=-1)

    def _g_damping_forces(self, v):
        """``D v`` on the joints (zero on the base), ``(B, nv)``."""
        f = 6 if self.floating else 0
        tau = self._project(self._joint_damping_full() * self._expand_v(v[:, f:]))
        return torch.cat([torch.zeros_like(v[:, :f]), tau], dim=-1)

    def _g_potential_energy(self, q, gravity):
        """``-g . sum m c`` over the movable bodies (and the floating base), ``(B,)``."""
        T = self._g_body_poses(q)
        m, c, _ = self._body_parts()
        if not self.floating:
            T, m, c = T[1:], m[1:], c[1:]
        c1 = torch.cat([c, torch.ones_like(c[:, :1])], dim=-1).unsqueeze(-1)
        cw = kin.apply_to_bodies(T, c1)[..., :3, 0]
        return dyn.potential_energy(m, cw, gravity)
