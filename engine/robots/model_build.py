"""The constants of :class:`engine.robots.model.RobotModel`, built once from its description.

One function, :func:`model_constants`, with what it needs as arguments; the model registers
the tensors as non-persistent buffers (they follow ``.to()``) and keeps the values as plain
attributes (both declared in :class:`engine.robots.backends.tree.ModelBuffers`).
"""

from __future__ import annotations

import numpy as np
import torch

from engine.robots import dynamics_body_major as dyn
from engine.robots.backends.tree import coupling_matrix, tree_constants
from engine.robots.description import Joint, RobotDescription, massless_moving_subtrees
from engine.robots.topology import Topology

__all__ = ["check_forward_dynamics", "model_constants", "singular_joints"]


def model_constants(description: RobotDescription, topo: Topology, joints: list[Joint],
                    joint_names: list[str], dtype: torch.dtype, device: str | torch.device,
                    gravity) -> tuple[dict[str, torch.Tensor | None], dict[str, object]]:
    """``(tensors, values)`` by attribute name, for a tree of ``n`` movable joints (``joints``, every
    one, topology order; ``joint_names`` the independent ones, ``dof``) and ``L`` links.

    Tensors (None where absent): the tree's (:func:`tree_constants`); the mimic coupling (velocities
    ``_G (n, dof)``; configurations ``_Gq (nq_all, nq_j)`` and ``_mimic_offset (nq_all,)``, the joint
    parts, ``nq_all = n + balls``: ball quaternions pass through) and, with the base, ``_P (nv_all,
    nv)``; armature
    ``_armature_v (nv_all,)`` and ``_armature_int (n,)`` (body order); link inertials
    ``_link_mass (L,)`` kg, ``_link_com (L, 3)`` m and ``_link_inertia (L, 3, 3)`` kg m^2 (about the
    CoM, link axes), the bodies' ``_body_m``, ``_body_c``, ``_body_Ic`` and their
    :func:`dyn.body_constants` ``_bc_m``, ``_bc_c1``, ``_bc_Ic4``; joint damping ``_damping (n,)``;
    the base acceleration ``_a0 = [0; -g] (6,)`` from ``gravity (3,)`` m/s^2. Values: the tree's,
    the joint limits ``_limits`` (numpy ``(dof, 4)``: lower, upper, velocity, effort) and ``_balls``
    (each ball joint's first column in the independent joints' part of ``q`` and of ``v``).
    """
    n = topo.n_bodies
    floating = bool(description.floating_base)
    independent = set(joint_names)
    dof = sum(1 for j in joints if j.name in independent)    # a ball joint: three rows
    tensors: dict[str, torch.Tensor | None] = {}

    def buf(name, value, dtype_=None):
        tensors[name] = torch.as_tensor(np.asarray(value), dtype=dtype_ or dtype, device=device)

    if any(j.mimic is not None for j in joints):
        G, Gq, off = coupling_matrix(joints, joint_names, description.name, topo.q_columns())
        buf("_G", G)                                 # (n, dof): every joint's velocity from the independent ones
        buf("_Gq", Gq)                               # (nq_all, nq): the same for configurations (balls pass)
        buf("_mimic_offset", off)
        f = 6 if floating else 0
        P = np.zeros((f + n, f + dof))
        P[:f, :f] = np.eye(f)
        P[f:, f:] = G
        buf("_P", P)                                 # (nv_all, nv): the same with the base
    else:
        for name in ("_G", "_Gq", "_mimic_offset", "_P"):
            tensors[name] = None
    arm = np.array([j.armature for j in joints], dtype=float)
    if arm.size and np.any(arm != 0):
        buf("_armature_v", np.concatenate([np.zeros(6 if floating else 0), arm]))
        buf("_armature_int", arm[topo.body_dof])
    else:
        for name in ("_armature_v", "_armature_int"):
            tensors[name] = None

    arrays, values = tree_constants(topo, dtype, device)
    tensors.update(arrays)
    # link inertials, link_names order
    mass, com, inertia = [], [], []
    for name in topo.link_names:
        inertial = description.link(name).inertial
        if inertial is None:
            mass.append(0.0)
            com.append(np.zeros(3))
            inertia.append(np.zeros((3, 3)))
        else:
            mass.append(inertial.mass)
            com.append(np.asarray(inertial.origin.xyz, dtype=float))
            inertia.append(inertial.inertia_in_link_frame())
    buf("_link_mass", np.array(mass))
    buf("_link_com", np.array(com).reshape(-1, 3))
    buf("_link_inertia", np.array(inertia).reshape(-1, 3, 3))
    mb, cb, Ib = dyn.link_inertia_to_bodies(tensors["_link_mass"], tensors["_link_com"],
                                            tensors["_link_inertia"], arrays["_link_body"],
                                            arrays["_link_offset"], n)
    tensors.update(_body_m=mb, _body_c=cb, _body_Ic=Ib)
    tensors.update(zip(("_bc_m", "_bc_c1", "_bc_Ic4"), dyn.body_constants(mb, cb, Ib)))
    buf("_damping", [j.damping for j in joints])
    buf("_a0", [0.0, 0.0, 0.0] + [-float(g) for g in gravity])   # base acceleration [0; -g]
    q_starts, v_starts, qc, vc = [], [], 0, 0
    for name in joint_names:                        # the balls among the independent joints
        if description.joint(name).type == "ball":
            q_starts.append(qc)
            v_starts.append(vc)
        qc, vc = (qc + 4, vc + 3) if description.joint(name).type == "ball" else (qc + 1, vc + 1)
    values["_balls"] = (tuple(q_starts), tuple(v_starts))
    values["_limits"] = np.array([[j.limit.lower, j.limit.upper, j.limit.velocity, j.limit.effort]
                                  for j in joints if j.name in independent], dtype=float).reshape(dof, 4)
    return tensors, values


def singular_joints(description: RobotDescription) -> tuple[str, ...]:
    """The independent joints that move no mass or inertia (the loader names them in a warning): the
    mass matrix is singular along them, so forward dynamics is undefined (a mimic joint's row is
    folded into its master's, so it is not one of them; a joint with armature, a rotor inertia on
    its diagonal, is not singular)."""
    return tuple(j for j, _ in massless_moving_subtrees(description, links=False)
                 if description.joint(j).mimic is None and not (description.joint(j).armature or 0.0) > 0.0)


def check_forward_dynamics(name: str, joints: tuple[str, ...]) -> None:
    """Raise ValueError naming ``joints`` (:func:`singular_joints`) when there are any."""
    if joints:
        shown = ", ".join(repr(j) for j in joints[:8]) + (f" and {len(joints) - 8} more" if len(joints) > 8
                                                          else "")
        raise ValueError(f"robot {name!r}: forward dynamics is undefined: joint{'s' if len(joints) > 1 else ''} "
                         f"{shown} move{'s' if len(joints) == 1 else ''} no mass or inertia, so the mass matrix "
                         "is singular along them; give a link they move a mass, or make the joints fixed "
                         "(kinematics, inverse dynamics and the mass matrix are defined)")
