"""The pieces the large-batch paths are built from, each against an independent reference.

The whole algorithms are checked against Pinocchio in test_rbd_paths.py and
test_floating_base.py; here: gravity in the base frame (scipy's rotations) and the tree
sums one depth at a time (products with the ancestor matrix).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from engine.robots import floating_batch_last as fbl
from engine.robots.dynamics_batch_last import planes
from engine.robots.library import load_robot


def _base_states(n: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=(n, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    return torch.as_tensor(np.concatenate([rng.normal(size=(n, 3)), quat], axis=1))


@pytest.mark.parametrize("a0", [(0, 0, 0, 0, 0, 9.81), (0.3, -0.2, 0.1, 1.0, -2.0, 9.81)])
def test_gravity_in_base_frame_matches_scipy(a0):
    qb = _base_states(40, 1)
    a0 = torch.tensor(a0, dtype=torch.float64)
    out = fbl.gravity_in_base_bl(qb, a0).t().numpy()                   # (B, 6)
    R = Rotation.from_quat(qb[:, 3:7].numpy()).as_matrix()
    ref = np.concatenate(
        [np.einsum("bki,k->bi", R, a0[:3].numpy()), np.einsum("bki,k->bi", R, a0[3:].numpy())], 1
    )
    np.testing.assert_allclose(out, ref, atol=1e-13)


def test_swap_halves_is_its_own_inverse():
    x = torch.arange(12.0).view(6, 2)
    assert torch.equal(fbl.swap_halves(x)[:3], x[3:]) and torch.equal(fbl.swap_halves(fbl.swap_halves(x)), x)


@pytest.mark.parametrize("name", ["solo12", "allegro-right"])
def test_tree_sums_by_depth_match_the_ancestor_products(name):
    tree = load_robot(name)._backends()["tree"]
    assert not tree.chain and len(tree.levels) > 1
    x = torch.randn(6, tree.n, 33, dtype=torch.float64)
    levels = (tree.levels, tree.level_parents)
    anc = tree.anc
    torch.testing.assert_close(planes._tree_down_levels(x, *levels), torch.matmul(anc, x), rtol=0, atol=1e-12)
    torch.testing.assert_close(
        planes._tree_up_levels(x, *levels), torch.matmul(anc.t(), x), rtol=0, atol=1e-12
    )
