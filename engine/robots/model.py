"""RobotModel: a URDF as a batched, differentiable torch module (kinematics and dynamics).

Build it once::

    model = RobotModel.from_urdf("panda.urdf")             # float64, CPU by default
    model = RobotModel.from_urdf("solo12.urdf", floating_base=True)   # a free-flyer base
    model = RobotModel.from_string(xml, base_dir=folder)
    model = RobotModel.from_description(description)       # description.floating_base too

then call pure functions of ``(parameters, inputs)``; each takes any leading batch shape
``...`` and nothing is stored on the model between calls (safe to share across threads).
Coordinates: ``q (..., nq)``, velocities, accelerations and forces ``(..., nv)``; for a
fixed base ``nq = nv = dof`` (the joints, ``joint_names`` order); for a floating base
Pinocchio's free-flyer convention, ``q = [base xyz in the world, base quaternion x y z w,
joints]`` (``nq = dof + 7``) and ``v = [base linear, base angular velocity, both in the base
frame, joints]`` (``nv = dof + 6``; the first six forces are the base wrench in the base
frame). Coupled mimic joints carry no coordinate (``mimic_joint_names``); see
:mod:`engine.robots.model_floating`.

=======================================  ==============================================
``forward_kinematics(q)``                ``(..., n_links, 4, 4)`` world poses, ``link_names`` order
``link_pose(q, link)``                   ``(..., 4, 4)``
``jacobian(q, link, point=None)``        ``(..., 6, nv)`` world frame; rows: linear then
                                         angular velocity of the link origin (or of
                                         ``point (..., 3)`` given in the link frame)
``frame_jacobians(q, links)``            poses ``(..., T, 4, 4)``, Jacobians ``(..., T, 6, nv)``
``inverse_dynamics(q, qd, qdd)``         ``(..., nv)`` RNEA (N m / N)
``mass_matrix(q)``                       ``(..., nv, nv)`` CRBA
``bias_forces(q, qd)``                   ``C(q, qd) qd + g(q)``
``gravity_torques(q)``                   ``g(q)``
``forward_dynamics(q, qd, tau)``         ``(..., nv)`` ABA (rad/s^2 / m/s^2)
``kinetic_energy(q, qd)``                ``(...)`` J
``potential_energy(q)``                  ``(...)`` J (movable bodies and a floating base; a
                                         fixed base is a constant)
``center_of_mass(q)``                    ``(..., 3)`` of the moving bodies (a floating base
                                         included, a fixed one not: as Pinocchio)
``integrate(q, v, dt)``                  ``(..., nq)`` (``pinocchio.integrate(q, v dt)``)
``difference(q0, q1)``                   ``(..., nv)`` (``pinocchio.difference``)
``neutral()``                            ``(nq,)`` joints at zero, base at the origin
=======================================  ==============================================

Joint armature (``Joint.armature``, rotor inertia) is on the joint-space inertia's
diagonal, in RNEA and in forward dynamics, as Pinocchio's ``model.armature``.

``gravity``: True (the model's ``gravity``, default ``(0, 0, -9.81)`` m/s^2), False, or a
``(3,)`` tensor. ``damping=True`` adds the joint viscous damping ``D qd`` to the joint
forces (inverse dynamics) or subtracts it from the applied ones (forward dynamics).

Learnable parameters (the model is an ``nn.Module``; ``model.parameters()`` feeds an
optimiser)::

    model.make_learnable("panda_link3", "mass")             # softplus-positive mass
    model.make_learnable("panda_link3", "inertia")          # log-Cholesky, physically consistent
    model.make_learnable("panda_link3", "com")              # free 3-vector (link frame)
    model.make_learnable("panda_link3", "damping")          # of the joint whose child is the link
    model.make_learnable("panda_link3", "mass", parametrization=my_module)  # any nn.Module

Current values, differentiable: ``link_mass(link)`` ``()``, ``link_com(link)`` ``(3,)`` (link
frame, m), ``link_inertia(link)`` ``(3, 3)`` (about the CoM, link-frame axes, kg m^2),
``joint_damping()`` ``(dof,)``. Copies: ``clone()`` (a deep copy, learnables included);
``with_link_params(mass={link: kg}, com={link: xyz}, inertia={link: 3x3}, damping={joint: d})``
returns a new, non-learnable model with those values replaced (e.g. a perturbed robot for
identification); ``current_description()`` bakes the current (learned) values into a
:class:`RobotDescription`.

Loading options: ``mimic="coupled"`` (the default) couples each mimic joint to its master
(``q = multiplier q_master + offset``, no coordinate of its own, as Pinocchio's
``mimic=True``), ``mimic="independent"`` makes them independent joints (Pinocchio's
default), ``mimic="error"`` refuses them; ``floating_base=True`` attaches the root link to
the world by a free-flyer joint; ``strict=False`` accepts published
URDFs whose inertias are slightly unphysical (e.g. example-robot-data's Allegro hand), with
a warning.

Implementation: fixed joints are merged into their parent bodies; internally bodies are
numbered breadth first and tensors are body-major ``(n, B, ...)``, so per-body constants
enter as one matrix product over all samples, tree recursions of RNEA/CRBA are products
with the ancestor matrix (cumulative sums for serial chains) and ABA takes one vectorised
step per tree depth (see :mod:`engine.robots.dynamics_body_major`,
:mod:`engine.robots.dynamics_batch_last`, :mod:`engine.robots.kinematics`).
From ``_BATCH_LAST_BATCH`` samples on, the same algorithms run on *batch-last* tensors
``(n, k, B)`` (samples innermost and contiguous, 3x3 and 6x6 products written as
elementwise multiply-adds over the samples), which is about twice as fast at batches in
the thousands; both paths agree with Pinocchio to 1e-9. There, wide trees (legs, hands) sum
over the tree one depth at a time, and a floating base computes its dynamics in the base
frame (:mod:`engine.robots.floating_batch_last`). Calls at moderate batches run on one
intra-op thread (``_call_policy``): steady times, no stalls when another
program holds a core.

Calls that carry no derivative (no input or parameter requires a gradient, or no_grad /
inference mode; no torch.func transform) of ``inverse_dynamics``, ``bias_forces``,
``gravity_torques``, ``mass_matrix``, ``forward_dynamics``, ``forward_kinematics`` and
``jacobian`` on a float64 CPU model run compiled per-sample kernels instead (:mod:`engine.robots.model_compiled`,
numba): 2 to 10 times faster than the torch algorithms at batch 1024 and about 10 times at
batch 1. ``LAGRANGE_NO_COMPILED=1`` or ``with engine.robots.model_compiled.torch_only():``
keeps every call on the torch algorithms.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections import namedtuple
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine.robots import dynamics_batch_last as dyn_bl
from engine.robots import dynamics_body_major as dyn
from engine.robots import kinematics as kin
from engine.robots.description import RobotDescription
from engine.robots.topology import build_topology
from engine.robots.model_compiled import CompiledDynamics, needs_grad
from engine.robots.model_floating import GeneralCoordinates
from engine.robots.model_params import LinkParameters
from engine.robots.urdf import load_urdf, parse_urdf_string
from engine.runtime import intra_op_threads

__all__ = ["JointLimits", "RobotModel"]

JointLimits = namedtuple("JointLimits", ["lower", "upper", "velocity", "effort"])
JointLimits.__doc__ = "Joint limits, tensors (dof,): position (rad or m), velocity, effort (+-inf where absent)."

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
# from this batch size on, forward kinematics composes one depth at a time (fewer flops)
# instead of by pointer jumping (fewer calls)
_SEQUENTIAL_FK_BATCH = 128
# from this batch size on, the algorithms run on batch-last tensors (samples innermost)
_BATCH_LAST_BATCH = 96
# samples x bodies from which torch's intra-op threads serve a call; between these bounds each
# call runs on its calling thread alone (see _call_policy)
_ONE_THREAD_WORK = (4096, 1 << 17)
# largest result (elements) a call computes in inference mode and copies out (see _call_policy)
_INFERENCE_RESULT = 1 << 16


def _call_policy(result_per_sample):
    """How a model method ``(self, q, ...)`` runs on the CPU; ``result_per_sample(model)``: the
    number of elements of its result per sample.

    - One intra-op thread at moderate batches. The algorithms are a few hundred elementwise
      operations over ``(bodies, samples)`` planes; from batches of a few hundred, many are
      just above torch's parallel grain and open an OpenMP region over every core, whose fork
      and join cost about what the arithmetic saves, and when a core is busy elsewhere (other
      processes, the GUI, a virtual machine's host) each region waits for a descheduled
      thread: measured here, a call at batch 1024 took 1.5 to 2.7 ms on two threads from one
      minute to the next (up to 900 ms with the cores shared by a test run), and a steady 1.6
      to 1.9 ms on one. At the largest batches the threads pay for themselves and are kept.
      Other threads of the program keep their settings (:class:`engine.runtime.intra_op_threads`).
    - Inference mode when nothing needs a gradient (no grad mode, or no input and no parameter
      requires one) and the result is small: autograd's bookkeeping (version counters, view
      tracking) costs each of the hundreds of small operations a share, 10 to 20 % of a call
      at batch 1. The result is copied out, so callers get a normal tensor; cached constants
      are built outside inference mode (``torch.inference_mode(False)`` where they are made).
    """

    def decorate(method):
        @functools.wraps(method)
        def run(self, q, *args, **kwargs):
            if not isinstance(q, torch.Tensor) or q.device.type != "cpu" or q.dim() == 0 \
                    or torch.is_inference_mode_enabled():
                return method(self, q, *args, **kwargs)
            B = q.numel() // max(q.shape[-1], 1)
            work = B * max(self._n, 1)
            one_thread = _ONE_THREAD_WORK[0] <= work < _ONE_THREAD_WORK[1] and torch.get_num_threads() > 1
            tensors = [q] + [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]
            inference = B * result_per_sample(self) <= _INFERENCE_RESULT and not needs_grad(self, tensors)
            with intra_op_threads(1) if one_thread else contextlib.nullcontext():
                if not inference:
                    return method(self, q, *args, **kwargs)
                with torch.inference_mode():
                    out = method(self, q, *args, **kwargs)
            return out.clone() if out.is_inference() else out     # compiled results are normal tensors already

        return run

    return decorate


class RobotModel(CompiledDynamics, GeneralCoordinates, LinkParameters, nn.Module):
    """A kinematic tree (fixed or floating base) with batched Featherstone algorithms (see the module docstring)."""

    def __init__(self, description: RobotDescription, dtype: torch.dtype = torch.float64,
                 device: str | torch.device = "cpu", gravity=DEFAULT_GRAVITY):
        super().__init__()
        self.description = description
        topo = build_topology(description)
        self.topology = topo
        n = topo.n_bodies
        self._n = n                                  # movable joints (= bodies), mimic joints included
        self.floating = bool(description.floating_base)
        self.link_names = list(topo.link_names)
        self._link_index = {name: i for i, name in enumerate(self.link_names)}
        self._full_joint_names = list(topo.joint_names)
        self._dof_of_child = {link: k for k, link in enumerate(topo.child_link_of_dof)}
        kw = {"dtype": dtype, "device": device}

        def buf(name, value, dtype_=None):
            t = torch.as_tensor(np.asarray(value), dtype=dtype_ or dtype, device=device)
            self.register_buffer(name, t, persistent=False)

        joints = [description.joint(j) for j in self._full_joint_names]
        self._init_coordinates(joints, buf)          # joint_names, dof, nq, nv, mimic map, armature
        self._joint_index = {name: i for i, name in enumerate(self.joint_names)}

        rev = topo.revolute.astype(float)
        buf("_axis4", np.concatenate([topo.axis.reshape(n, 3), np.zeros((n, 1))], -1).reshape(n, 4, 1))
        buf("_rev", rev)
        buf("_pri", 1.0 - rev)
        C0, C = kin.joint_transform_basis(torch.as_tensor(topo.tree_transform, **kw).reshape(n, 4, 4),
                                          torch.as_tensor(topo.axis, **kw).reshape(n, 3),
                                          torch.as_tensor(topo.revolute, device=device))
        self.register_buffer("_C0", C0, persistent=False)
        self.register_buffer("_C", C, persistent=False)
        self.register_buffer("_Ct4", torch.cat([C[:, :, :12].transpose(1, 2), C0.reshape(n, 16)[:, :12, None]], dim=2)
                             .contiguous(), persistent=False)
        buf("_axis3", topo.axis.reshape(n, 3))
        self._all_rev = bool(topo.revolute.all())
        self._jump_names = []
        for k, table in enumerate(topo.jumps):
            buf(f"_jump{k}", table, torch.long)
            self._jump_names.append(f"_jump{k}")
        buf("_link_body", topo.link_body, torch.long)
        self._link_body_int = [int(b) for b in topo.link_body]
        buf("_link_offset", topo.link_offset)
        anc = topo.ancestors.astype(float)
        buf("_anc", anc)
        buf("_anc_strict", anc - np.eye(n))
        buf("_body_dof", topo.body_dof, torch.long)        # internal body i+1 -> dof index
        buf("_dof_body", topo.dof_body - 1, torch.long)    # dof index -> internal position
        self._permuted = not np.array_equal(topo.body_dof, np.arange(n))
        # per link: which joints move it (internal order)
        link_anc = np.zeros((len(self.link_names), n))
        for l, b in enumerate(topo.link_body):
            if b > 0:
                link_anc[l] = topo.ancestors[b - 1]
        buf("_link_rev_mask", link_anc * rev)
        buf("_link_pri_mask", link_anc * (1.0 - rev))
        self._levels = [(s - 1, e - 1) for s, e in topo.levels]
        self._level_parent_names = [None]
        for d in range(1, len(self._levels)):
            s, e = topo.levels[d]
            ps, pe = topo.levels[d - 1]
            local = topo.body_parent[s:e] - ps
            if e - s == pe - ps and np.array_equal(local, np.arange(e - s)):
                self._level_parent_names.append(None)
            else:
                buf(f"_level_parent{d}", local, torch.long)
                self._level_parent_names.append(f"_level_parent{d}")
        # link inertials, link_names order
        mass, com, inertia = [], [], []
        for name in self.link_names:
            inertial = description.link(name).inertial
            if inertial is None:
                mass.append(0.0), com.append(np.zeros(3)), inertia.append(np.zeros((3, 3)))
            else:
                mass.append(inertial.mass)
                com.append(np.asarray(inertial.origin.xyz, dtype=float))
                inertia.append(inertial.inertia_in_link_frame())
        buf("_link_mass", np.array(mass))
        buf("_link_com", np.array(com).reshape(-1, 3))
        buf("_link_inertia", np.array(inertia).reshape(-1, 3, 3))
        mb, cb, Ib = dyn.link_inertia_to_bodies(self._link_mass, self._link_com, self._link_inertia,
                                                self._link_body, self._link_offset, n)
        self.register_buffer("_body_m", mb, persistent=False)
        self.register_buffer("_body_c", cb, persistent=False)
        self.register_buffer("_body_Ic", Ib, persistent=False)
        for name, t in zip(("_bc_m", "_bc_c1", "_bc_Ic4"), dyn.body_constants(mb, cb, Ib)):
            self.register_buffer(name, t, persistent=False)
        # a serial chain (each body the child of the previous one): tree sums are cumsums
        self._chain = bool(np.array_equal(topo.body_parent, np.maximum(np.arange(n + 1) - 1, 0)))
        # links whose frame is not their body's frame need one more product in FK
        offset_links = [l for l in range(len(self.link_names)) if not np.allclose(topo.link_offset[l], np.eye(4), atol=0, rtol=0)]
        buf("_offset_links", offset_links, torch.long)
        buf("_offset_bodies", topo.link_body[offset_links] if offset_links else [], torch.long)
        buf("_offset_T", topo.link_offset[offset_links] if offset_links else np.zeros((0, 4, 4)))
        link_src = [int(b) for b in topo.link_body]
        for j, l in enumerate(offset_links):
            link_src[l] = n + 1 + j
        buf("_link_src", link_src, torch.long)
        self._link_src_identity = link_src == list(range(len(link_src)))
        buf("_damping", [j.damping for j in joints])
        buf("_a0", [0.0, 0.0, 0.0] + [-float(g) for g in gravity])   # base acceleration [0; -g]
        self._limits = np.array([[j.limit.lower, j.limit.upper, j.limit.velocity, j.limit.effort] for j in joints
                                 if j.name in self._joint_index], dtype=float).reshape(self.dof, 4)
        self.learnable = nn.ModuleDict()
        self._learnable: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_description(cls, description: RobotDescription, dtype=torch.float64, device="cpu",
                         gravity=DEFAULT_GRAVITY) -> RobotModel:
        return cls(description, dtype=dtype, device=device, gravity=gravity)

    @classmethod
    def from_urdf(cls, path: str | Path, dtype=torch.float64, device="cpu", mimic: str = "coupled",
                  strict: bool | None = None, gravity=DEFAULT_GRAVITY, floating_base: bool = False) -> RobotModel:
        """Load a URDF file (see :func:`engine.robots.urdf.load_urdf` for ``mimic`` and ``strict``);
        ``floating_base``: attach the root link to the world by a free-flyer joint."""
        desc = load_urdf(path, mimic=mimic, strict=strict)
        if floating_base:
            desc = replace(desc, floating_base=True)
        return cls(desc, dtype=dtype, device=device, gravity=gravity)

    @classmethod
    def from_file(cls, path: str | Path, dtype=torch.float64, device="cpu", gravity=DEFAULT_GRAVITY,
                  **options) -> RobotModel:
        """Load a URDF, xacro or MJCF file, the loader picked from the file (see
        :func:`engine.robots.files.load_description` for ``options``: mimic, strict, xacro_args,
        floating_base)."""
        from engine.robots.files import load_description

        return cls(load_description(path, **options), dtype=dtype, device=device, gravity=gravity)

    @classmethod
    def from_string(cls, xml: str | bytes, base_dir=None, dtype=torch.float64, device="cpu",
                    mimic: str = "coupled", strict: bool | None = None, gravity=DEFAULT_GRAVITY,
                    floating_base: bool = False) -> RobotModel:
        desc = parse_urdf_string(xml, base_dir=base_dir, mimic=mimic, strict=strict)
        if floating_base:
            desc = replace(desc, floating_base=True)
        return cls(desc, dtype=dtype, device=device, gravity=gravity)

    # ------------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        return self.description.name

    @property
    def dtype(self) -> torch.dtype:
        return self._C0.dtype

    @property
    def device(self) -> torch.device:
        return self._C0.device

    @property
    def gravity(self) -> torch.Tensor:
        """The model's gravity vector ``(3,)`` (m/s^2), set at construction."""
        return -self._a0[3:]

    @property
    def joint_limits(self) -> JointLimits:
        t = torch.as_tensor(self._limits, dtype=self.dtype, device=self.device)
        return JointLimits(*t.unbind(-1)) if self.dof else JointLimits(*(t.new_zeros(0),) * 4)

    @property
    def total_mass(self) -> float:
        return self.description.total_mass

    def extra_repr(self) -> str:
        base = ", floating base" if self.floating else ""
        return f"name={self.name!r}, dof={self.dof}, links={len(self.link_names)}{base}"

    # ------------------------------------------------------------------ helpers
    def _flat(self, *xs, kinds: str | None = None):
        """Broadcast inputs to one batch shape and flatten it: -> (batch_shape, (B, size)...).

        kinds: per input "q" (a configuration, ``nq``) or "v" (a velocity, acceleration or
        force, ``nv``); default all "q"."""
        dtype, device = self.dtype, self.device
        ts = [x if isinstance(x, torch.Tensor) and x.dtype == dtype and x.device == device
              else torch.as_tensor(x, dtype=dtype, device=device) for x in xs]
        nq, nv = self.nq, self.nv
        for t, k in zip(ts, kinds or "q" * len(ts)):
            size = nq if k == "q" else nv
            if t.shape[-1:] != (size,):
                what = "configurations" if k == "q" and nq != nv else "joint vectors"
                raise ValueError(f"expected {what} of shape (..., {size}), got {tuple(t.shape)}")
        shape = ts[0].shape[:-1]
        if len(ts) > 1 and any(t.shape[:-1] != shape for t in ts[1:]):
            shape = torch.broadcast_shapes(*(t.shape[:-1] for t in ts))
            ts = [t.expand(shape + t.shape[-1:]) for t in ts]
        B = math.prod(shape)
        return shape, [t if t.dim() == 2 else t.reshape(B, t.shape[-1]) for t in ts]

    def _to_internal(self, x):
        """(B, n) user order -> (n, B) internal (body-major) order."""
        return x.t().index_select(0, self._body_dof) if self._permuted else x.t().contiguous()

    def _to_user(self, x):
        """(n, B, ...) internal order -> (n, B, ...) user order."""
        return x.index_select(0, self._dof_body) if self._permuted else x

    def _body_poses(self, q_int):
        if q_int.shape[1] >= _SEQUENTIAL_FK_BATCH and len(self._levels) > 1:
            return kin.body_poses_by_level(q_int, self._C0, self._C, self._levels, self._levels_parents())
        return kin.body_poses(q_int, self._C0, self._C, [getattr(self, n) for n in self._jump_names])

    def _batch_last(self, B: int) -> bool:
        return B >= _BATCH_LAST_BATCH and self._n > 0

    def _body_poses_bl(self, q_int, root=None):
        """(n, B) -> world poses of the movable bodies, top rows ``(n, 3, 4, B)`` (root: the
        floating base's pose ``(B, 4, 4)``)."""
        top = None if root is None else root[:, :3].permute(1, 2, 0).contiguous()
        return kin.body_poses_bl(q_int, self._Ct4, self._levels, self._levels_parents(), top)

    def _kinematic_terms_bl(self, q_int, W=None):
        """Batch-last body poses, motion subspaces ``(n, 6, B)`` and world inertials (poses W given: from them)."""
        W = self._body_poses_bl(q_int) if W is None else W
        z = kin.axes_bl(W, self._axis3)
        S = dyn_bl.motion_subspaces_bl(z, W[:, :, 3], None if self._all_rev else self._rev,
                                    None if self._all_rev else self._pri)
        return W, S, dyn_bl.world_inertials_bl(W, *self._body_inertials())

    def _link_idx(self, link: str) -> int:
        try:
            return self._link_index[link]
        except KeyError:
            raise KeyError(f"no link named {link!r} in robot {self.name!r}") from None

    def _gravity_acc(self, gravity):
        """Spatial base acceleration [0; -g] (6,), or None."""
        if gravity is False or gravity is None:
            return None
        if gravity is True:
            return self._a0
        g = torch.as_tensor(gravity, dtype=self.dtype, device=self.device)
        return torch.cat([torch.zeros_like(g), -g])

    def _levels_parents(self):
        return [None if n is None else getattr(self, n) for n in self._level_parent_names]

    def _level_sums(self):
        """``(levels, level_parents)`` for the batch-last tree sums of a wide tree (at least twice as
        many bodies as depths: one step per depth beats a product with the ancestor matrix,
        O(n) against O(n^2) work), else None."""
        if self._chain or 2 * len(self._levels) > self._n:
            return None
        return self._levels, self._levels_parents()

    # ------------------------------------------------------------------ kinematics
    @_call_policy(lambda m: 16 * len(m.link_names))
    def forward_kinematics(self, q) -> torch.Tensor:
        """World poses of every link, ``(..., n_links, 4, 4)`` in ``link_names`` order."""
        shape, (q,) = self._flat(q)
        if self._use_compiled(q):
            return self._c_forward_kinematics(q).reshape(shape + (len(self.link_names), 4, 4))
        if self._generic:
            return self._g_forward_kinematics(q).reshape(shape + (len(self.link_names), 4, 4))
        if self._batch_last(q.shape[0]):
            out = kin.link_poses_bl(self._body_poses_bl(self._to_internal(q)),
                                    None if self._link_src_identity else self._link_src, self._offset_bodies,
                                    self._offset_T)
            return out.reshape(shape + out.shape[1:])
        T = self._body_poses(self._to_internal(q))
        out = kin.link_poses(T, self._link_body, self._offset_links, self._offset_bodies, self._offset_T)
        return out.transpose(0, 1).reshape(shape + out.shape[:1] + (4, 4))

    @_call_policy(lambda m: 16)
    def link_pose(self, q, link: str) -> torch.Tensor:
        """World pose of ``link``, ``(..., 4, 4)``."""
        l = self._link_idx(link)
        shape, (q,) = self._flat(q)
        T = self._g_body_poses(q) if self._generic else self._body_poses(self._to_internal(q))
        out = torch.matmul(T[self._link_body_int[l]], self._link_offset[l])
        return out.reshape(shape + (4, 4))

    @_call_policy(lambda m: 6 * m.nv)
    def jacobian(self, q, link: str, point=None) -> torch.Tensor:
        """Geometric Jacobian ``(..., 6, dof)`` of ``link`` in the world frame.

        Rows 0-2: linear velocity of the link origin (or of ``point``, ``(3,)`` or ``(..., 3)``
        in the link frame, m); rows 3-5: angular velocity. Columns follow ``joint_names``.
        """
        l = self._link_idx(link)
        if point is not None:
            point = torch.as_tensor(point, dtype=self.dtype, device=self.device)
            q_t = torch.as_tensor(q, dtype=self.dtype, device=self.device)
            shape = torch.broadcast_shapes(q_t.shape[:-1], point.shape[:-1])
            q = q_t.expand(shape + q_t.shape[-1:])
            point = point.expand(shape + (3,)).reshape(-1, 3)
        shape, (q,) = self._flat(q)
        if self._use_compiled(q, *([] if point is None else [point])):
            return self._c_jacobian(q, l, point).reshape(shape + (6, self.nv))
        if self._generic:
            return self._g_jacobian(q, l, point).reshape(shape + (6, self.nv))
        if self._batch_last(q.shape[0]):
            return self._jacobian_bl(q, l, point).reshape(shape + (6, self.dof))
        T = self._body_poses(self._to_internal(q))
        Tl = torch.matmul(T[self._link_body_int[l]], self._link_offset[l])
        p = Tl[:, :3, 3]
        if point is not None:
            p = p + torch.matmul(Tl[:, :3, :3], point.unsqueeze(-1)).squeeze(-1)
        z = kin.apply_to_bodies(T[1:], self._axis4)[..., :3, 0]
        J = kin.point_jacobian(z, T[1:, :, :3, 3], self._link_rev_mask[l], self._link_pri_mask[l], p)
        return self._to_user(J).permute(1, 2, 0).reshape(shape + (6, self.dof))

    def _jacobian_bl(self, q, l: int, point, W=None, root_top=None):
        """Batch-last :meth:`jacobian` for flat ``q (B, n)`` -> ``(B, 6, n)`` (every movable
        joint, user order); or from body poses ``W`` given with the root's pose ``root_top (3, 4,
        B)`` (a floating base) -> ``(J, the point in the world (3, B))``."""
        given = W is not None
        if not given:
            W = self._body_poses_bl(self._to_internal(q))
        B = W.shape[-1]
        b = self._link_body_int[l]
        off = self._link_offset[l]
        local = off[:3, 3] if point is None else off[:3, 3] + point @ off[:3, :3].transpose(0, 1)   # (3,) or (B, 3)
        Wb = W[b - 1] if b > 0 else root_top
        if Wb is None:
            p = local.reshape(-1, 3).t().expand(3, B) if point is not None else local[:, None].expand(3, B)
        else:
            loc = local.t() if point is not None else local[:, None]
            p = (Wb[:, :3] * loc.unsqueeze(0)).sum(1) + Wb[:, 3]                       # (3, B)
        z = kin.axes_bl(W, self._axis3)
        o = W[:, :, 3]
        r = self._link_rev_mask[l][:, None, None]
        lin = kin.cross_bl(z, p.unsqueeze(0) - o) * r
        if not self._all_rev:
            lin = lin + z * self._link_pri_mask[l][:, None, None]
        J = self._to_user(torch.cat([lin, z * r], dim=1)).permute(2, 1, 0)             # (B, 6, n)
        return (J, p) if given else J

    # ------------------------------------------------------------------ dynamics
    def _kinematic_terms(self, q_int, T=None):
        """Body poses, motion subspaces and world inertials ``(m, c_w, Ic_w)`` (poses T given: from them)."""
        T = self._body_poses(q_int) if T is None else T
        S, _, _ = dyn.motion_subspaces(T, self._axis4, self._rev, self._pri)
        return T, S, dyn.world_inertia_terms(T, *self._body_inertials())

    @_call_policy(lambda m: m.nv)
    def inverse_dynamics(self, q, qd, qdd, gravity=True, damping: bool = False) -> torch.Tensor:
        """Joint forces ``tau = M qdd + C qd + g (+ D qd)``, ``(..., nv)`` (RNEA)."""
        shape, (q, qd, qdd) = self._flat(q, qd, qdd, kinds="qvv")
        compiled = self._use_compiled(q, qd, qdd)
        if compiled or self._generic:
            tau = self._c_rnea(q, qd, qdd, gravity) if compiled else self._g_rnea(q, qd, qdd, gravity)
            if damping:
                tau = tau + self._g_damping_forces(qd)
            return tau.reshape(shape + (self.nv,))
        if self._batch_last(q.shape[0]):
            _, S, inertials = self._kinematic_terms_bl(self._to_internal(q))
            rnea = dyn_bl.rnea_bl
        else:
            _, S, inertials = self._kinematic_terms(self._to_internal(q))
            rnea = dyn.rnea
        kw = {"levels": self._level_sums()} if rnea is dyn_bl.rnea_bl else {}
        tau = self._to_user(rnea(S, inertials, self._to_internal(qd), self._to_internal(qdd),
                                 self._gravity_acc(gravity), self._anc, self._chain, **kw)).t()
        if self._armature is not None:
            tau = tau + self._armature * qdd
        if damping:
            tau = tau + self.joint_damping() * qd
        return tau.reshape(shape + (self.dof,))

    @_call_policy(lambda m: m.nv)
    def bias_forces(self, q, qd, gravity=True) -> torch.Tensor:
        """``C(q, qd) qd + g(q)``, ``(..., nv)``."""
        shape, (q, qd) = self._flat(q, qd, kinds="qv")
        if self._use_compiled(q, qd):
            return self._c_rnea(q, qd, None, gravity).reshape(shape + (self.nv,))
        if self._generic:
            return self._g_rnea(q, qd, None, gravity).reshape(shape + (self.nv,))
        if self._batch_last(q.shape[0]):
            _, S, inertials = self._kinematic_terms_bl(self._to_internal(q))
            tau = dyn_bl.rnea_bl(S, inertials, self._to_internal(qd), None, self._gravity_acc(gravity), self._anc,
                                 self._chain, levels=self._level_sums())
            return self._to_user(tau).t().reshape(shape + (self.dof,))
        _, S, inertials = self._kinematic_terms(self._to_internal(q))
        tau = dyn.rnea(S, inertials, self._to_internal(qd), None, self._gravity_acc(gravity), self._anc, self._chain)
        return self._to_user(tau).t().reshape(shape + (self.dof,))

    @_call_policy(lambda m: m.nv)
    def gravity_torques(self, q, gravity=True) -> torch.Tensor:
        """``g(q)``: the joint forces that hold the robot still, ``(..., nv)`` (a floating base: and
        the base wrench that holds the base)."""
        shape, (q,) = self._flat(q)
        if self._use_compiled(q):
            return self._c_rnea(q, None, None, gravity).reshape(shape + (self.nv,))
        if self._generic:
            return self._g_rnea(q, None, None, gravity).reshape(shape + (self.nv,))
        if self._batch_last(q.shape[0]):
            _, S, inertials = self._kinematic_terms_bl(self._to_internal(q))
            tau = dyn_bl.rnea_bl(S, inertials, None, None, self._gravity_acc(gravity), self._anc, self._chain,
                                 levels=self._level_sums())
            return self._to_user(tau).t().reshape(shape + (self.dof,))
        _, S, inertials = self._kinematic_terms(self._to_internal(q))
        tau = dyn.rnea(S, inertials, None, None, self._gravity_acc(gravity), self._anc, self._chain)
        return self._to_user(tau).t().reshape(shape + (self.dof,))

    @_call_policy(lambda m: m.nv * m.nv)
    def mass_matrix(self, q) -> torch.Tensor:
        """Joint-space inertia matrix ``M(q)``, ``(..., nv, nv)`` (CRBA; armature on the diagonal)."""
        shape, (q,) = self._flat(q)
        if self._use_compiled(q):
            return self._c_mass_matrix(q).reshape(shape + (self.nv, self.nv))
        if self._generic:
            return self._g_mass_matrix(q).reshape(shape + (self.nv, self.nv))
        if self._batch_last(q.shape[0]):
            _, S, inertials = self._kinematic_terms_bl(self._to_internal(q))
            M = dyn_bl.crba_bl(S, inertials, self._anc, self._anc_strict, self._chain,
                               order=self._dof_body if self._permuted else None, levels=self._level_sums())
        else:
            _, S, inertials = self._kinematic_terms(self._to_internal(q))
            M = dyn.crba(S, inertials, self._anc, self._anc_strict, self._chain)
            if self._permuted:
                M = M.index_select(1, self._dof_body).index_select(2, self._dof_body)
        if self._armature is not None:
            M = M + torch.diag(self._armature)
        return M.reshape(shape + (self.dof, self.dof))

    @_call_policy(lambda m: m.nv)
    def forward_dynamics(self, q, qd, tau, gravity=True, damping: bool = False, method: str = "auto") -> torch.Tensor:
        """Joint accelerations ``qdd = M^-1 (tau - C qd - g - D qd)``, ``(..., dof)``.

        ``method``: ``"articulated"`` (Featherstone's ABA), ``"composite"`` (CRBA, the RNEA bias
        and a tree-sparse LDL^T solve) or ``"auto"``: composite for small deep trees (a 7-DoF
        arm), where it is faster, ABA for wide ones (a hand). Both agree to rounding. A floating
        base: ABA with the base as its root step, or composite; coupled mimic joints: composite.
        """
        shape, (q, qd, tau) = self._flat(q, qd, tau, kinds="qvv")
        if method not in ("auto", "articulated", "composite"):
            raise ValueError(f"unknown forward dynamics method {method!r}: use 'auto', 'articulated' or 'composite'")
        if self._use_compiled(q, qd, tau):     # the articulated-body algorithm whatever the method
            if damping:
                tau = tau - self._g_damping_forces(qd)
            return self._c_forward_dynamics(q, qd, tau, gravity).reshape(shape + (self.nv,))
        if self._generic:
            if damping:
                tau = tau - self._g_damping_forces(qd)
            return self._g_forward_dynamics(q, qd, tau, gravity, method).reshape(shape + (self.nv,))
        if self.dof == 0:
            return tau.reshape(shape + (0,))
        if damping:
            tau = tau - self.joint_damping() * qd
        if self._batch_last(q.shape[0]):
            _, S, inertials = self._kinematic_terms_bl(self._to_internal(q))
            qdd = dyn_bl.aba_bl(S, inertials, self._to_internal(qd), self._to_internal(tau), self._gravity_acc(gravity),
                                self._anc, self._levels, self._levels_parents(), self._chain, method=method,
                                armature=self._armature_int)
            return self._to_user(qdd).t().reshape(shape + (self.dof,))
        _, S, inertials = self._kinematic_terms(self._to_internal(q))
        qdd = dyn.aba(S, dyn.spatial_inertia_world(*inertials), self._to_internal(qd), self._to_internal(tau),
                      self._gravity_acc(gravity), self._anc, self._levels, self._levels_parents(), self._chain,
                      method=method, armature=self._armature_int)
        return self._to_user(qdd).t().reshape(shape + (self.dof,))

    @_call_policy(lambda m: 1)
    def kinetic_energy(self, q, qd) -> torch.Tensor:
        """``0.5 qd^T M(q) qd`` (J), ``(...)`` (armature included)."""
        shape, (q, qd) = self._flat(q, qd, kinds="qv")
        if self._generic or self._armature is not None:
            M = self.mass_matrix(q)
            return 0.5 * torch.einsum("bi,bij,bj->b", qd, M, qd).reshape(shape)
        _, S, inertials = self._kinematic_terms(self._to_internal(q))
        return dyn.kinetic_energy(S, inertials, self._to_internal(qd), self._anc, self._chain).reshape(shape)

    @_call_policy(lambda m: 1)
    def potential_energy(self, q, gravity=True) -> torch.Tensor:
        """Gravitational potential energy of the movable bodies (J), ``(...)``; zero at the world origin
        (a floating base: the base included)."""
        shape, (q,) = self._flat(q)
        a0 = self._gravity_acc(gravity)
        if a0 is None:
            return torch.zeros(shape, dtype=self.dtype, device=self.device)
        if self._generic:
            return self._g_potential_energy(q, -a0[3:]).reshape(shape)
        T = self._body_poses(self._to_internal(q))
        m, c1, _ = self._body_inertials()
        c_w = kin.apply_to_bodies(T[1:], c1)[..., :3, 0]
        return dyn.potential_energy(m, c_w, -a0[3:]).reshape(shape)
