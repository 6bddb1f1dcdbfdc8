"""Rigid-body dynamics on batch-last tensors, for large batches (samples innermost).

The algorithms of :mod:`engine.robots.dynamics_body_major` (world-frame spatial vectors,
tree recursions as products with the ancestor matrix) on batch-last tensors, which are
about twice as fast at batches in the thousands.

The same algorithms on batch-last, *component-major* tensors: the samples are the
innermost dimension and each component of a quantity is one contiguous ``(n, B)`` plane
over all bodies and samples: spatial vectors ``(6, n, B)``, 3-vectors ``(3, n, B)``,
3x3 matrices ``(3, 3, n, B)``, joint vectors ``(n, B)``. Cross products and 3x3 products
are written out as multiply-adds of whole components (cross products from "doubled"
vectors ``[x, y, z, x, y]``, whose cyclic shifts are contiguous slices): the samples are
many and the bodies few, so a few large elementwise ops per component beat any
per-sample product, and each op runs over contiguous memory (slices inside a body-major
``(n, 6, B)`` tensor are strided and cost about twice as much). Only the poses ``W (n, 3, 4, B)`` (top
rows of the world transforms, shared with kinematics) and the joint axes keep the
body-major order. The articulated-body recursion (``_aba_recursion_bl``) still works on
body-major tensors ``(n, 6, B)``, ``(n, 3, 3, B)``.

One module per algorithm: :mod:`.rnea` (world inertials, motion subspaces, body forces, RNEA),
:mod:`.crba` (composite inertias, the mass matrix and its tree-sparse solve), :mod:`.aba`
(forward dynamics: articulated bodies or the composite solve); :mod:`.planes` holds the
component-major arithmetic they share. The names below are re-exported here.
"""

from __future__ import annotations

from engine.robots.dynamics_batch_last.aba import (
    aba_bl,
    auto_fd_method,
    root_acceleration,
    root_acceleration_bl,
    spatial_inertia_world_bl,
)
from engine.robots.dynamics_batch_last.crba import (
    compact_inertias_bl,
    composite_forces_bl,
    crba_bl,
    solve_mass_matrix_bl,
)
from engine.robots.dynamics_batch_last.rnea import (
    body_forces_bl,
    motion_subspaces_bl,
    rnea_bl,
    world_inertials_bl,
)

__all__ = [
    "aba_bl",
    "auto_fd_method",
    "body_forces_bl",
    "compact_inertias_bl",
    "composite_forces_bl",
    "crba_bl",
    "motion_subspaces_bl",
    "rnea_bl",
    "root_acceleration",
    "root_acceleration_bl",
    "solve_mass_matrix_bl",
    "spatial_inertia_world_bl",
    "world_inertials_bl",
]
