"""The tree-sparse ``L^T D L`` factorisation of :mod:`engine.robots.tree_solve_kernels` on ``L``
samples at once, for :mod:`engine.robots.derivative_lane_kernels`: ``H (nv, nv, L)``, the lane
index last, every row operation a loop over the lanes (vectorised by LLVM; see
:mod:`engine.robots.lane_terms`). Dofs in an internal order where parents come before children,
``lam (nv,)`` each dof's parent dof (-1: none). Importing this module imports numba.
"""

from __future__ import annotations

from engine.robots.compiled_kernels import _inline


@_inline
def _ltdl_lanes(L, H, lam, r, x):
    """Factorise each lane's tree-sparse SPD ``H[:, :, l]`` in place as ``L^T D L`` (Featherstone
    2008, table 6.3); ``r, x (L,)`` scratch."""
    nv = H.shape[0]
    for k in range(nv - 1, -1, -1):
        for l in range(L):
            r[l] = 1.0 / H[k, k, l]
        i = lam[k]
        while i != -1:
            for l in range(L):
                x[l] = H[k, i, l] * r[l]
            j = i
            while j != -1:
                for l in range(L):
                    H[i, j, l] -= x[l] * H[k, j, l]
                j = lam[j]
            for l in range(L):
                H[k, i, l] = x[l]
            i = lam[i]


@_inline
def _ltdl_solve_lanes(L, H, lam, x):
    """``x[:, l] = H[:, :, l]^-1 x[:, l]`` in place, ``x (nv, L)``, H factorised by :func:`_ltdl_lanes`."""
    nv = H.shape[0]
    for i in range(nv - 1, -1, -1):
        j = lam[i]
        while j != -1:
            for l in range(L):
                x[j, l] -= H[i, j, l] * x[i, l]
            j = lam[j]
    for i in range(nv):
        for l in range(L):
            x[i, l] /= H[i, i, l]
    for i in range(nv):
        j = lam[i]
        while j != -1:
            for l in range(L):
                x[i, l] -= H[i, j, l] * x[j, l]
            j = lam[j]
