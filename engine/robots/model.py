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
:mod:`engine.robots.floating`. A ball joint (MJCF ``ball``, ``ball_joint_names``) has four
configuration numbers, its unit quaternion (x, y, z, w), and three velocity coordinates, the
child's angular velocity in its frame (``dof`` counts velocity coordinates; ``joint_coordinates(
joint)`` gives a joint's q and v slices; :mod:`engine.robots.ball`). Ball joints and coupled
joints combine: a coupling is between scalar joints, the balls' quaternions pass through it.

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

``gravity``: True (the model's ``gravity``: the file's, MJCF ``<option gravity>``, else ``(0, 0, -9.81)``
m/s^2), False, or a
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

Implementation: each public method flattens its inputs to one batch ``(B, ...)``, maps the
user's coordinates to every movable joint's (coupled mimic joints: ``q_all = Gq q + offset``,
``v_all = G v``),
lets the backend chosen by :meth:`RobotModel._backend_for` compute (compiled numba kernels for
float64 CPU calls, RNEA and ABA with analytic backwards where a gradient is needed
(:mod:`engine.robots.derivatives`); else torch body-major below ``BATCH_LAST_BATCH``
samples, batch-last from there), then adds armature, damping and projects back, in one place
each: :mod:`engine.robots.backends` says when each backend runs and how to add an algorithm.
All agree with Pinocchio to 1e-9 (``tests/engine/robots/test_backends.py``). Calls at moderate
batches run on one intra-op thread (``engine.robots.call_policy``): steady times. The
constants are built by :mod:`engine.robots.model_build`, coordinates handled by
:mod:`engine.robots.model_coords`, learnable parameters by :mod:`engine.robots.model_params`.
"""

from __future__ import annotations

import contextlib
import copy
from collections import namedtuple
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine.robots import compiled_dynamics as cdyn
from engine.robots import derivatives
from engine.robots import dynamics_batch_last as dyn_bl
from engine.robots import dynamics_body_major as dyn
from engine.robots import kinematics as kin
from engine.robots.backends import Inertials, Tree, compiled_switched_off
from engine.robots.backends.batch_last import BatchLastBackend
from engine.robots.backends.body_major import BodyMajorBackend
from engine.robots.backends.compiled import CompiledBackend
from engine.robots.backends.tree import DenseTreeMasks
from engine.robots.ball import BallMap
from engine.robots.call_policy import call_policy
from engine.robots.description import RobotDescription
from engine.robots.model_build import check_forward_dynamics, model_constants, singular_joints
from engine.robots.model_coords import (
    difference_configuration,
    flat_batch,
    integrate_configuration,
    neutral_configuration,
)
from engine.robots.model_params import (
    body_inertials,
    joint_damping_values,
    new_parametrization,
    requested_values,
    with_values,
)
from engine.robots.topology import build_topology
from engine.robots.urdf import load_urdf, parse_urdf_string

__all__ = ["JointLimits", "RobotModel"]

JointLimits = namedtuple("JointLimits", ["lower", "upper", "velocity", "effort"])
JointLimits.__doc__ = ("Joint limits, tensors (dof,): position (rad or m), velocity, effort "
                       "(+-inf where absent).")

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
# from this batch size on, the torch algorithms run on batch-last tensors (samples innermost)
BATCH_LAST_BATCH = 96


class RobotModel(DenseTreeMasks, derivatives.DerivativeMethods, nn.Module):
    """A kinematic tree (fixed or floating base) with batched Featherstone algorithms: each public
    method picks one backend (:meth:`_backend_for`) and calls one of its methods; armature,
    damping and the mimic projection are applied here, once (see the module docstring). The
    tree's constants and backends are built once (:meth:`_backends`); learnable link
    parameters are evaluated per call (:meth:`_inertials`), so gradients reach them."""

    def __init__(self, description: RobotDescription, dtype: torch.dtype = torch.float64,
                 device: str | torch.device = "cpu", gravity=None):
        super().__init__()
        self.description = description
        topo = build_topology(description)
        self.topology = topo
        self._n = topo.n_bodies                      # movable joints (= bodies), mimic joints included
        self.floating = bool(description.floating_base)
        self.link_names = list(topo.link_names)
        self._link_index = {name: i for i, name in enumerate(self.link_names)}
        self._full_joint_names = list(topo.joint_names)
        self._dof_of_child = {link: k for k, link in enumerate(topo.child_link_of_dof)}

        joints = [description.joint(j) for j in self._full_joint_names]     # one per dof (a ball: 3)
        self.joint_names = list(dict.fromkeys(j.name for j in joints if j.mimic is None))
        self.mimic_joint_names = [j.name for j in joints if j.mimic is not None]
        self.dof = sum(1 for j in joints if j.mimic is None)     # joint velocity coordinates
        self.nq = self.dof + len(topo.ball_dofs) + (7 if self.floating else 0)
        self.nv = self.dof + (6 if self.floating else 0)
        self._joint_index = {name: i for i, name in enumerate(self.joint_names)}
        gravity = description.gravity if gravity is None else gravity   # None: the file's (URDF: -9.81 z)
        tensors, values = model_constants(description, topo, joints, self.joint_names, dtype, device, gravity)
        for name, t in tensors.items():
            self.register_buffer(name, t, persistent=False)
        for name, v in values.items():
            setattr(self, name, v)
        self._backend_cache = None                    # (key, backends): see _backends
        self.singular_joints = singular_joints(description)   # joints moving no mass: no forward dynamics
        self.learnable = nn.ModuleDict()
        self._learnable: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_description(cls, description: RobotDescription, dtype=torch.float64, device="cpu",
                         gravity=None) -> RobotModel:
        return cls(description, dtype=dtype, device=device, gravity=gravity)

    @classmethod
    def from_urdf(cls, path: str | Path, dtype=torch.float64, device="cpu", mimic: str = "coupled",
                  strict: bool | None = None, gravity=DEFAULT_GRAVITY,
                  floating_base: bool = False) -> RobotModel:
        """Load a URDF file (see :func:`engine.robots.urdf.load_urdf` for ``mimic`` and ``strict``);
        ``floating_base``: attach the root link to the world by a free-flyer joint."""
        desc = load_urdf(path, mimic=mimic, strict=strict)
        if floating_base:
            desc = replace(desc, floating_base=True)
        return cls(desc, dtype=dtype, device=device, gravity=gravity)

    @classmethod
    def from_file(cls, path: str | Path, dtype=torch.float64, device="cpu", gravity=None,
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

    # ------------------------------------------------------------------ backends
    def _tree(self) -> Tree:
        """The tree's constants (the model's buffers, not copies): see :class:`Tree`."""
        n = self._n
        return Tree(
            n=n, floating=self.floating, chain=self._chain, all_rev=self._all_rev, permuted=self._permuted,
            body_parent=self.topology.body_parent, body_dof=self._body_dof, dof_body=self._dof_body,
            C0=self._C0, C=self._C, Ct4=self._Ct4, axis3=self._axis3, axis4=self._axis4, rev=self._rev,
            pri=self._pri, anc=self._anc, anc_strict=self._anc_strict,
            jumps=[getattr(self, name) for name in self._jump_names], levels=self._levels,
            level_parents=[None if name is None else getattr(self, name)
                           for name in self._level_parent_names],
            link_body=self._link_body, link_body_int=self._link_body_int, link_offset=self._link_offset,
            link_rev_mask=self._link_rev_mask, link_pri_mask=self._link_pri_mask,
            offset_links=self._offset_links, offset_bodies=self._offset_bodies, offset_T=self._offset_T,
            link_src=None if self._link_src_identity else self._link_src, armature_int=self._armature_int,
            armature_v=self._armature_v,
            armature_diag=None if self._armature_v is None else torch.diag(self._armature_v),
            ball=BallMap(*(getattr(self, name) for name in self._ball_names)) if self._ball_names else None,
            joints=self._compiled_joints)

    def _backends(self) -> dict:
        """``{"body-major", "batch-last", "compiled" (a factory: built on first use)}`` over this
        model's :class:`Tree`, built once and kept until the buffers change (a move to another
        device or dtype). Building is idempotent: threads that race build equal objects."""
        key = self._buffers["_C0"]          # replaced with every buffer by .to(), .double()...
        cache = self._backend_cache
        if cache is None or cache[0] is not key:
            with torch.inference_mode(False):       # constants are normal tensors (see _call_policy)
                tree = self._tree()
            backends = {"tree": tree, "body-major": BodyMajorBackend(tree),
                        "batch-last": BatchLastBackend(tree)}
            cache = self._backend_cache = (key, backends)
        return cache[1]

    def _compiled(self) -> CompiledBackend:
        backends = self._backends()
        out = backends.get("compiled")
        if out is None:
            out = backends.setdefault("compiled", CompiledBackend(backends["tree"]))
        return out

    def _backend_for(self, *tensors):
        """The backend of one call on flat inputs (already of the model's dtype and device):

        - compiled kernels for float64 CPU calls (no torch.func transform or forward AD), with
          analytic backwards where inputs or learnable inertials need a gradient
          (:func:`engine.robots.derivatives.compiled_backend_for`), unless switched off
          (``LAGRANGE_NO_COMPILED``, :class:`engine.robots.backends.torch_only`);
        - else batch-last from ``BATCH_LAST_BATCH`` samples on, body-major below.

        Ball joints (:mod:`engine.robots.ball`) included.
        """
        t = tensors[0]
        if (self._n and t.dtype == torch.float64 and t.device.type == "cpu" and not compiled_switched_off()
                and cdyn.available() and (chosen := self._compiled_for(tensors, BATCH_LAST_BATCH)) is not None):
            return chosen
        backends = self._backends()
        return backends["batch-last" if t.shape[0] >= BATCH_LAST_BATCH and self._n > 0 else "body-major"]

    def _body_major(self) -> BodyMajorBackend:
        return self._backends()["body-major"]

    def _inertials(self) -> Inertials:
        """The body inertials of this call: the constants, or values of the learnable parameters
        (computed once for a whole :meth:`inertials_held` block)."""
        held = getattr(self, "_held_inertials", None)
        if held is not None:
            return held
        if not any(kind != "damping" for _, kind in self._learnable):
            return Inertials((self._body_m, self._body_c, self._body_Ic),
                             (self._bc_m, self._bc_c1, self._bc_Ic4), fixed=True)
        return Inertials(self._body_parts())

    @contextlib.contextmanager
    def inertials_held(self):
        """Within the block every call uses the learnable inertials computed once on entry (a
        training step's integrator stages and rollout steps), not recomputed per call; gradients
        flow to the parameters as before. Do not step an optimiser inside the block."""
        outer = getattr(self, "_held_inertials", None)
        self._held_inertials = self._inertials() if outer is None else outer
        try:
            yield self
        finally:
            self._held_inertials = outer

    def has_learnable_parameters(self) -> bool:
        """Whether any link parameter was made learnable (:meth:`make_learnable`)."""
        return bool(self._learnable)

    # ------------------------------------------------------------------ learnable parameters
    def make_learnable(self, link: str, kind: str,
                       parametrization: None | str | nn.Module = None) -> nn.Module:
        """Make ``kind`` ("mass", "com", "inertia", "damping") of ``link`` learnable.

        ``parametrization``: None for the default physical one (see
        :mod:`engine.robots.parametrizations`), "softplus" or "exp" for a positive scalar, or
        any ``nn.Module`` whose ``forward()`` returns the value (shape ``()``, ``(3,)``,
        ``(3, 3)``). Returns the module (registered under ``model.learnable``; its
        parameters are in ``model.parameters()``).
        """
        l = self._link_idx(link)
        current = {"mass": self.link_mass, "com": self.link_com, "inertia": self.link_inertia,
                   "damping": self._link_damping}.get(kind)
        moved = link in self._dof_of_child
        with torch.no_grad():
            value = current(link).detach().clone() if current and (kind != "damping" or moved) else None
        module = new_parametrization(kind, link, value, parametrization, self.description.link(link).inertial
                                     is not None, moved)
        key = self._learnable.get((link, kind)) or f"{kind}_{l}"
        self.learnable[key] = module
        self._learnable[(link, kind)] = key
        return module

    def learnable_parameters(self) -> dict[tuple[str, str], nn.Module]:
        """``{(link, kind): module}`` of everything made learnable."""
        return {k: self.learnable[v] for k, v in self._learnable.items()}

    def _learned(self, link: str, kind: str):
        key = self._learnable.get((link, kind))
        return None if key is None else self.learnable[key]()

    def link_mass(self, link: str) -> torch.Tensor:
        """Current mass of ``link`` (kg), shape ``()``."""
        v = self._learned(link, "mass")
        return v if v is not None else self._link_mass[self._link_idx(link)]

    def link_com(self, link: str) -> torch.Tensor:
        """Current centre of mass of ``link`` in the link frame (m), shape ``(3,)``."""
        v = self._learned(link, "com")
        return v if v is not None else self._link_com[self._link_idx(link)]

    def link_inertia(self, link: str) -> torch.Tensor:
        """Current rotational inertia of ``link`` about its CoM, link-frame axes (kg m^2), ``(3, 3)``."""
        v = self._learned(link, "inertia")
        return v if v is not None else self._link_inertia[self._link_idx(link)]

    def _link_damping(self, link: str) -> torch.Tensor:
        v = self._learned(link, "damping")
        return v if v is not None else self._damping[self._dof_of_child[link]]

    def _joint_damping_full(self) -> torch.Tensor:
        """Viscous damping of every movable joint (mimic joints included, topology order), ``(n,)``."""
        learned = [(link, self.learnable[key]()) for (link, kind), key in self._learnable.items() if kind == "damping"]
        # a ball joint's damping acts on its three velocity coordinates (dofs k - 2, k - 1, k)
        width = {link: 3 if getattr(self.description.parent_joint(link), "type", "") == "ball" else 1
                 for link, _ in learned}
        return joint_damping_values(self._damping, [(self._dof_of_child[link] - i, value) for link, value in learned
                                                    for i in range(width[link])])

    def joint_damping(self) -> torch.Tensor:
        """Current viscous damping of every joint (N m s/rad or N s/m), ``(dof,)`` (a master joint
        carries its mimic joints' damping times their multipliers squared)."""
        d = self._joint_damping_full()
        return d if self._G is None else (self._G * self._G * d[:, None]).sum(0)

    def _body_parts(self):
        """(m (n+1,), c (n+1, 3), Ic (n+1, 3, 3)): every body's inertial in its frame, learnables applied."""
        learned = {kind: [(self._link_index[link], self.learnable[key]())
                          for (link, k), key in self._learnable.items() if k == kind]
                   for kind in ("mass", "com", "inertia")}
        values = {"mass": self._link_mass, "com": self._link_com, "inertia": self._link_inertia}
        return body_inertials(values, learned, self._link_body, self._link_offset, self._n)

    # ------------------------------------------------------------------ copies
    def clone(self):
        """An independent deep copy (learnable modules included)."""
        return copy.deepcopy(self)

    def current_description(self) -> RobotDescription:
        """The description with the current (possibly learned) inertials and damping baked in."""
        with torch.no_grad():
            damping = {self._full_joint_names[self._dof_of_child[link]]: self._link_damping(link)
                       for link, kind in self._learnable if kind == "damping"}
            inertials = {link: (self.link_mass(link), self.link_com(link), self.link_inertia(link))
                         for link in {l for l, k in self._learnable if k != "damping"}}
        return with_values(self.description, inertials, damping)

    def with_link_params(self, mass: Mapping[str, float] | None = None, com: Mapping | None = None,
                         inertia: Mapping | None = None, damping: Mapping[str, float] | None = None,
                         check: bool = True):
        """A new (non-learnable) model with some link parameters replaced.

        mass ``{link: kg}``, com ``{link: (3,) m, link frame}``, inertia ``{link: (3, 3) kg m^2
        about the CoM, link-frame axes}``, damping ``{joint name: N m s/rad}``. The values
        start from the current ones (learned values included); ``check`` validates physical
        consistency (raises ``URDFError``).
        """
        for joint in damping or {}:
            if joint not in self._full_joint_names:
                raise KeyError(f"no movable joint named {joint!r} in robot {self.name!r}")
        values = requested_values(lambda l: (self.link_mass(l), self.link_com(l), self.link_inertia(l)),
                                  mass, com, inertia)
        desc = with_values(self.current_description(), values, damping or {}, check=check)
        return type(self)(desc, dtype=self.dtype, device=self.device, gravity=tuple(self.gravity.tolist()))

    # ------------------------------------------------------------------ coordinates
    def _flat(self, *xs, kinds: str | None = None):
        """Broadcast inputs to one batch shape and flatten it: -> (batch_shape, (B, size)...)
        (:func:`flat_batch`; kinds: per input "q" or "v", default all "q")."""
        return flat_batch(xs, kinds or "q" * len(xs), self.nq, self.nv, self.dtype, self.device)

    def _all_q(self, q):
        """Flat ``(B, nq)`` -> every movable joint's configuration ``(B, nq_all)`` (coupled mimic
        joints: ``Gq q + offset``, ball quaternions passed through)."""
        if self._Gq is None:
            return q
        if not self.floating:
            return torch.addmm(self._mimic_offset, q, self._Gq.t())
        return torch.cat([q[:, :7], torch.addmm(self._mimic_offset, q[:, 7:], self._Gq.t())], dim=-1)

    def _all_v(self, v):
        """Flat ``(B, nv)`` (or None) -> ``(B, nv_all)``: ``P v``."""
        return v if v is None or self._P is None else v @ self._P.t()

    def _project(self, x):
        """Forces or Jacobian columns on every joint ``(..., nv_all)`` -> on the independent ones
        ``(..., nv)``: ``x P`` (``P^T tau``)."""
        return x if self._P is None else x @ self._P

    def _joint_forces(self, backend, q_all, v_all, a_all, gravity):
        """RNEA in user coordinates: the backend's, plus armature, projected (``P^T tau``)."""
        tau = backend.rnea(q_all, v_all, a_all, self._gravity_acc(gravity), self._inertials())
        if self._armature_v is not None and a_all is not None:
            tau = tau + self._armature_v * a_all
        return self._project(tau)

    def _joint_inertia(self, backend, q_all):
        """CRBA in user coordinates: the backend's, plus armature, projected (``P^T M P``)."""
        M = backend.crba(q_all, self._inertials())
        if self._armature_v is not None:
            M = M + torch.diag(self._armature_v)
        return M if self._P is None else self._P.t() @ M @ self._P

    def _damping_forces(self, v):
        """``D v`` (user coordinates, zero on the base): ``P^T diag(d) P v`` over every joint."""
        f = 6 if self.floating else 0
        d = torch.cat([torch.zeros(f, dtype=self.dtype, device=self.device), self._joint_damping_full()])
        return self._project(d * self._all_v(v))

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

    @property
    def ball_joint_names(self) -> list[str]:
        """The ball (spherical) joints, ``joint_names`` order (:mod:`engine.robots.ball`)."""
        return [name for name in self.joint_names if self.description.joint(name).type == "ball"]

    def joint_coordinates(self, joint: str) -> tuple[slice, slice]:
        """``(q slice, v slice)`` of an independent joint in ``q (nq,)`` and ``v (nv,)`` (a floating
        base's coordinates before it): one column each, a ball joint four (quaternion x, y, z, w)
        and three (angular velocity in the child frame, rad/s)."""
        qc, vc = (7, 6) if self.floating else (0, 0)
        for name in self.joint_names:
            wq, wv = (4, 3) if self.description.joint(name).type == "ball" else (1, 1)
            if name == joint:
                return slice(qc, qc + wq), slice(vc, vc + wv)
            qc, vc = qc + wq, vc + wv
        raise KeyError(f"no independent movable joint named {joint!r} in robot {self.name!r}")

    def neutral(self) -> torch.Tensor:
        """The neutral configuration ``(nq,)``: joints at zero, the base at the origin, unrotated."""
        return neutral_configuration(self.nq, self.floating, self.dtype, self.device, self._balls)

    def integrate(self, q, v, dt=1.0) -> torch.Tensor:
        """The configuration reached from ``q (..., nq)`` moving at ``v (..., nv)`` for ``dt``
        (``pinocchio.integrate(model, q, v * dt)``: the base moves by ``exp`` of its twist)."""
        shape, (q, v) = self._flat(q, v, kinds="qv")
        return integrate_configuration(q, v * dt, self.floating, self._balls).reshape(shape + (self.nq,))

    def difference(self, q0, q1) -> torch.Tensor:
        """The velocity ``(..., nv)`` that takes ``q0`` to ``q1`` in unit time (``pinocchio.difference``)."""
        shape, (q0, q1) = self._flat(q0, q1)
        return difference_configuration(q0, q1, self.floating, self._balls).reshape(shape + (self.nv,))

    def joints_moving(self, links) -> list[int]:
        """Indices of the joint velocity coordinates (``joint_names`` order, the base's not counted)
        that move at least one of ``links``: one per joint, a ball joint's three."""
        idx = torch.tensor([self._link_idx(link) for link in links], dtype=torch.long)
        mask = ((self._link_rev_mask + self._link_pri_mask).cpu().index_select(0, idx).sum(0) > 0).numpy()
        full = sorted(int(self._body_dof[i]) for i in np.flatnonzero(mask))      # tree joint order
        if self._G is None:
            return full
        G = self._G.cpu().numpy()
        return sorted({int(j) for k in full for j in np.flatnonzero(G[k])})

    # ------------------------------------------------------------------ kinematics
    @call_policy(lambda m: 16 * len(m.link_names))
    def forward_kinematics(self, q) -> torch.Tensor:
        """World poses of every link, ``(..., n_links, 4, 4)`` in ``link_names`` order."""
        shape, (q,) = self._flat(q)
        out = self._backend_for(q).fk(self._all_q(q))
        return out.reshape(shape + out.shape[1:])

    @call_policy(lambda m: 16)
    def link_pose(self, q, link: str) -> torch.Tensor:
        """World pose of ``link``, ``(..., 4, 4)``."""
        l = self._link_idx(link)
        shape, (q,) = self._flat(q)
        return self._backend_for(q).fk(self._all_q(q))[:, l].reshape(shape + (4, 4))

    @call_policy(lambda m: 6 * m.nv)
    def jacobian(self, q, link: str, point=None) -> torch.Tensor:
        """Geometric Jacobian ``(..., 6, nv)`` of ``link`` in the world frame.

        Rows 0-2: linear velocity of the link origin (or of ``point``, ``(3,)`` or ``(..., 3)``
        in the link frame, m); rows 3-5: angular velocity. Columns follow ``joint_names`` (a
        floating base: its six velocity coordinates first).
        """
        l = self._link_idx(link)
        if point is not None:
            point = torch.as_tensor(point, dtype=self.dtype, device=self.device)
            q_t = torch.as_tensor(q, dtype=self.dtype, device=self.device)
            shape = torch.broadcast_shapes(q_t.shape[:-1], point.shape[:-1])
            q = q_t.expand(shape + q_t.shape[-1:])
            point = point.expand(shape + (3,)).reshape(-1, 3)
        shape, (q,) = self._flat(q)
        backend = self._backend_for(q, *([] if point is None else [point]))
        J = backend.jacobians(self._all_q(q), [l], point)[:, 0]
        return self._project(J).reshape(shape + (6, self.nv))

    def frame_jacobians(self, q, links):
        """World poses ``(..., T, 4, 4)`` and Jacobians ``(..., T, 6, nv)`` (rows linear, angular;
        world frame; at each link's origin) of several links from one kinematics pass."""
        shape, (q,) = self._flat(q)
        poses, J = self._backend_for(q).jacobians(self._all_q(q), [self._link_idx(link) for link in links],
                                                  with_poses=True)
        J = self._project(J)
        return poses.reshape(shape + poses.shape[1:]), J.reshape(shape + J.shape[1:])

    def center_of_mass(self, q) -> torch.Tensor:
        """The centre of mass of the moving bodies in the world ``(..., 3)``: every link of a
        floating-base robot; without the base (the root body) of a fixed-base one, as
        ``pinocchio.centerOfMass``."""
        shape, (q,) = self._flat(q)
        m, cw = self._moving_masses(q)
        return ((m[:, None, None] * cw).sum(0) / m.sum()).reshape(shape + (3,))

    def _moving_masses(self, q) -> tuple[torch.Tensor, torch.Tensor]:
        """Masses ``(k,)`` and world centres of mass ``(k, B, 3)`` of the moving bodies (a floating
        base included, a fixed one not), by the body-major backend's poses."""
        T = self._body_major().body_poses(self._all_q(q))
        m, c, _ = self._inertials().parts
        if not self.floating:
            T, m, c = T[1:], m[1:], c[1:]
        c1 = torch.cat([c, torch.ones_like(c[:, :1])], dim=-1).unsqueeze(-1)
        return m, kin.apply_to_bodies(T, c1)[..., :3, 0]

    # ------------------------------------------------------------------ dynamics
    @call_policy(lambda m: m.nv)
    def inverse_dynamics(self, q, qd, qdd, gravity=True, damping: bool = False) -> torch.Tensor:
        """Joint forces ``tau = M qdd + C qd + g (+ D qd)``, ``(..., nv)`` (RNEA)."""
        shape, (q, qd, qdd) = self._flat(q, qd, qdd, kinds="qvv")
        tau = self._joint_forces(self._backend_for(q, qd, qdd), self._all_q(q), self._all_v(qd),
                                 self._all_v(qdd), gravity)
        if damping:
            tau = tau + self._damping_forces(qd)
        return tau.reshape(shape + (self.nv,))

    @call_policy(lambda m: m.nv)
    def bias_forces(self, q, qd, gravity=True) -> torch.Tensor:
        """``C(q, qd) qd + g(q)``, ``(..., nv)``."""
        shape, (q, qd) = self._flat(q, qd, kinds="qv")
        tau = self._joint_forces(self._backend_for(q, qd), self._all_q(q), self._all_v(qd), None, gravity)
        return tau.reshape(shape + (self.nv,))

    @call_policy(lambda m: m.nv)
    def gravity_torques(self, q, gravity=True) -> torch.Tensor:
        """``g(q)``: the joint forces that hold the robot still, ``(..., nv)`` (a floating base: and
        the base wrench that holds the base)."""
        shape, (q,) = self._flat(q)
        tau = self._joint_forces(self._backend_for(q), self._all_q(q), None, None, gravity)
        return tau.reshape(shape + (self.nv,))

    @call_policy(lambda m: m.nv * m.nv)
    def mass_matrix(self, q) -> torch.Tensor:
        """Joint-space inertia matrix ``M(q)``, ``(..., nv, nv)`` (CRBA; armature on the diagonal)."""
        shape, (q,) = self._flat(q)
        M = self._joint_inertia(self._backend_for(q), self._all_q(q))
        return M.reshape(shape + (self.nv, self.nv))

    @call_policy(lambda m: m.nv)
    def forward_dynamics(self, q, qd, tau, gravity=True, damping: bool = False,
                         method: str = "auto", armature=None) -> torch.Tensor:
        """Joint accelerations ``qdd = M^-1 (tau - C qd - g - D qd)``, ``(..., nv)``.

        ``method``: ``"articulated"`` (Featherstone's ABA), ``"composite"`` (CRBA, the RNEA bias
        and a tree-sparse LDL^T solve) or ``"auto"``: composite for small deep trees (a 7-DoF
        arm), where it is faster, ABA for wide ones (a hand). Both agree to rounding. A floating
        base: ABA with the base as its root step, or composite; coupled mimic joints: composite
        (``M^-1 (tau - h)`` with the projected M and h); the compiled kernels: ABA.
        ``armature (nv,)``: rotor inertia on ``M``'s diagonal beyond the file's (kg m^2; it may
        carry a gradient, as a learned one does): in the compiled ABA of a fixed base, else composite.
        """
        check_forward_dynamics(self.name, self.singular_joints)
        shape, (q, qd, tau) = self._flat(q, qd, tau, kinds="qvv")
        if method not in ("auto", "articulated", "composite"):
            raise ValueError(f"unknown forward dynamics method {method!r}: use 'auto', 'articulated' or "
                             "'composite'")
        backend = self._backend_for(q, qd, tau)
        if damping:
            tau = tau - self._damping_forces(qd)
        q_all = self._all_q(q)
        extra = {} if armature is None else {"armature": armature.to(tau.dtype)}
        if self._G is None and (not extra or backend.name.startswith("compiled") and not self.floating
                                and not self._ball_names):
            qdd = backend.aba(q_all, qd, tau, self._gravity_acc(gravity), self._inertials(), method, **extra)
        else:
            M = self._joint_inertia(backend, q_all) + (torch.diag(extra["armature"]) if extra else 0.0)
            h = self._joint_forces(backend, q_all, self._all_v(qd), None, gravity)
            qdd = dyn_bl.solve_mass_matrix_bl(M.permute(1, 2, 0), (tau - h).t()).t()
        return qdd.reshape(shape + (self.nv,))

    @call_policy(lambda m: 1)
    def kinetic_energy(self, q, qd) -> torch.Tensor:
        """``0.5 qd^T M(q) qd`` (J), ``(...)`` (armature included)."""
        shape, (q, qd) = self._flat(q, qd, kinds="qv")
        M = self._joint_inertia(self._backend_for(q, qd), self._all_q(q))
        return 0.5 * torch.einsum("bi,bij,bj->b", qd, M, qd).reshape(shape)

    @call_policy(lambda m: 1)
    def potential_energy(self, q, gravity=True) -> torch.Tensor:
        """Gravitational potential energy of the movable bodies (J), ``(...)``; zero at the world origin
        (a floating base: the base included)."""
        shape, (q,) = self._flat(q)
        a0 = self._gravity_acc(gravity)
        if a0 is None:
            return torch.zeros(shape, dtype=self.dtype, device=self.device)
        return dyn.potential_energy(*self._moving_masses(q), -a0[3:]).reshape(shape)

