"""engine.spatial against independent constructions (scipy rotations, the URDF convention)."""

from __future__ import annotations

import numpy as np
import torch
from scipy.spatial.transform import Rotation

from engine import spatial
from engine.robots.description import rpy_to_matrix


def _rand(*shape, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).normal(size=shape))


def test_rotations_match_scipy_and_urdf():
    rpy = _rand(5, 3)
    R = spatial.rpy_to_rotation(rpy)
    ref = Rotation.from_euler("xyz", rpy.numpy()).as_matrix()          # extrinsic x, y, z = URDF rpy
    assert np.allclose(R.numpy(), ref, atol=1e-14)
    assert np.allclose(rpy_to_matrix(rpy[0].tolist()), ref[0], atol=1e-14)
    axis = torch.nn.functional.normalize(_rand(5, 3, seed=1), dim=-1)
    angle = _rand(5, seed=2)
    ref = Rotation.from_rotvec((axis * angle[:, None]).numpy()).as_matrix()
    assert np.allclose(spatial.rotation_about_axis(axis, angle).numpy(), ref, atol=1e-14)


def test_cross_products_and_transforms():
    v, m, f = _rand(4, 6, seed=3), _rand(4, 6, seed=4), _rand(4, 6, seed=5)
    a, b = _rand(4, 3, seed=6), _rand(4, 3, seed=7)
    assert torch.allclose(spatial.skew(a) @ b.unsqueeze(-1), torch.linalg.cross(a, b).unsqueeze(-1))
    # duality: (v x m) . f = -m . (v x* f)
    assert torch.allclose((spatial.cross_motion(v, m) * f).sum(-1), -(m * spatial.cross_force(v, f)).sum(-1))
    R = spatial.rpy_to_rotation(_rand(4, 3, seed=8))
    T = spatial.homogeneous(R, _rand(4, 3, seed=9))
    XM, XF = spatial.motion_transform(T), spatial.force_transform(T)
    assert torch.allclose(XF, torch.linalg.inv(XM).transpose(-1, -2), atol=1e-12)
    assert torch.allclose(
        spatial.invert_homogeneous(T) @ T, torch.eye(4, dtype=T.dtype).expand(4, 4, 4), atol=1e-12
    )
    # an inertia moved with its body: I_A = XF I_B XF^T equals the inertia built at the moved CoM
    mass, com = torch.rand(4, dtype=torch.float64) + 0.5, _rand(4, 3, seed=10)
    L = torch.tril(_rand(4, 3, 3, seed=11))
    Ic = L @ L.transpose(-1, -2)
    I_B = spatial.spatial_inertia(mass, com, Ic)
    moved = spatial.spatial_inertia(
        mass, (R @ com.unsqueeze(-1)).squeeze(-1) + T[:, :3, 3], R @ Ic @ R.transpose(-1, -2)
    )
    assert torch.allclose(spatial.transform_inertia(T, I_B), moved, atol=1e-12)
