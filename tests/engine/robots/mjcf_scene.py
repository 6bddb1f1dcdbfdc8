"""Helpers of the MJCF tests: one MuJoCo scene written here (no files from the network), and the
map from a model's coordinates to MuJoCo's (dof indices, the free joint's velocity frame)."""

from __future__ import annotations

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

# a fixed 3-joint arm (an anchored hinge, body gravcomp, actuatorgravcomp on j2), a free box with a
# hinged lid (gravcomp 0.3) and a free ball; GRAVITY is written into <option>
SCENE = """
<mujoco model="scene">
  <option gravity="{gravity}"><flag {flags}/></option>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="base" pos="0 0 0.1">
      <joint name="j1" axis="0 0 1" range="-2 2" damping="0.3" armature="0.01"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.4" size="0.05" mass="2"/>
      <body name="upper" pos="0 0 0.4" euler="0.1 0.2 0.3" gravcomp="0.7">
        <joint name="j2" axis="0 1 0" pos="0 0 0.02" actuatorgravcomp="true"/>
        <geom type="box" size="0.05 0.05 0.2" pos="0.1 0 0.2" mass="1.3"/>
        <body name="lower" pos="0.2 0 0.4" gravcomp="1">
          <joint name="j3" axis="1 0 0.5"/>
          <geom type="sphere" size="0.06" pos="0.05 0.02 0.1" mass="0.8"/>
        </body>
      </body>
    </body>
    <body name="box" pos="1 0 0.5" gravcomp="0.3">
      <freejoint name="box_free"/>
      <geom type="box" size="0.1 0.2 0.05" mass="0.9"/>
      <body name="lid" pos="0 0 0.1" gravcomp="0.5">
        <joint name="hinge" axis="0 1 0" damping="0.2"/>
        <geom type="box" size="0.1 0.2 0.01" pos="0.1 0 0" mass="0.2"/>
      </body>
    </body>
    <body name="ball" pos="0 1 0.5">
      <freejoint name="ball_free"/>
      <geom type="sphere" size="0.05" mass="0.3"/>
    </body>
  </worldbody>
  <actuator><motor joint="j2" name="m2"/></actuator>
</mujoco>
"""


def write_scene(folder, gravity="0 0 -9.81", flags="", extra=""):
    """The scene as a file in ``folder`` (``extra``: XML put before ``</mujoco>``)."""
    path = folder / "scene.xml"
    path.write_text(SCENE.format(gravity=gravity, flags=flags).replace("</mujoco>", extra + "</mujoco>"))
    return path


def full_mass_matrix(mm, md):
    M = np.zeros((mm.nv, mm.nv))
    try:
        mujoco.mj_fullM(mm, md, M)          # MuJoCo >= 4
    except TypeError:
        mujoco.mj_fullM(mm, M, md.qM)       # MuJoCo 3
    return M


def assert_poses_match(model, q, mm, md, atol=1e-12):
    """Every MuJoCo body's frame (``md`` after a forward pass at the same state) equals the pose
    of the link of the same name in ``model.forward_kinematics(q)`` (q: (nq,) array)."""
    import torch

    poses = model.forward_kinematics(torch.as_tensor(q, dtype=torch.float64)).numpy()
    for b in range(1, mm.nbody):
        P = poses[model.link_names.index(mm.body(b).name)]
        np.testing.assert_allclose(P[:3, 3], md.xpos[b], atol=atol)
        np.testing.assert_allclose(P[:3, :3], md.xmat[b].reshape(3, 3), atol=atol)


def coordinates(model, mm):
    """MuJoCo's qpos and dof indices of ``model``'s coordinates: ``(qpos_idx (nq,), dof_idx (nv,))``.
    A floating model's base is the free joint of its root body; the base quaternion (x y z w
    here, w x y z in MuJoCo) is reordered."""
    qi, di = [], []
    if model.floating:
        j = mm.body(model.description.root).jntadr[0]
        a, d = mm.jnt_qposadr[j], mm.jnt_dofadr[j]
        qi += [a, a + 1, a + 2, a + 4, a + 5, a + 6, a + 3]
        di += list(range(d, d + 6))
    for name in model.joint_names:
        qi.append(mm.joint(name).qposadr[0])
        di.append(mm.joint(name).dofadr[0])
    return np.array(qi), np.array(di)


def velocity_map(model, mm, md):
    """``T (nv, nv)`` with MuJoCo's velocity = ``T`` times the model's: the identity but for a
    floating base, whose linear velocity MuJoCo gives in the world frame (the model: base frame).
    Forces map back by ``T^T`` and the mass matrix by ``T^T M T``."""
    T = np.eye(model.nv)
    if model.floating:
        w, x, y, z = md.xquat[mm.body(model.description.root).id]
        T[:3, :3] = Rotation.from_quat([x, y, z, w]).as_matrix()
    return T


def random_state(model, mm, md, rng):
    """A random state set into MuJoCo's data (every tree) -> the model's ``(q (nq,), v (nv,))``."""
    md.qpos[:] = mm.qpos0 + 0.0
    for j in range(mm.njnt):
        a = mm.jnt_qposadr[j]
        if mm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            md.qpos[a:a + 3] = rng.normal(size=3)
            quat = rng.normal(size=4)
            md.qpos[a + 3:a + 7] = quat / np.linalg.norm(quat)
        else:
            md.qpos[a] = rng.uniform(-1.5, 1.5)
    md.qvel[:] = rng.normal(size=mm.nv)
    mujoco.mj_forward(mm, md)
    qi, di = coordinates(model, mm)
    T = velocity_map(model, mm, md)
    return md.qpos[qi].copy(), np.linalg.solve(T, md.qvel[di])
