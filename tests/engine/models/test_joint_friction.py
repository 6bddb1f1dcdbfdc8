"""Joint friction and actuation (engine.models.joint_friction), the robot model with it, and the
actuation file beside a robot file.

References: MuJoCo's forward dynamics (its own URDF import, ``dof_damping`` and ``dof_armature``)
for the robot model's accelerations; the closed-form torque formula for the module itself.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import torch

from engine.models import ModelSpec, build_model
from engine.models.joint_friction import COULOMB_VELOCITY_SCALE, JointFriction, smooth_sign
from engine.models.robot_source import actuation_path, load_rigid_body, write_actuation
from engine.paths import urdf_dir

F64 = torch.float64
ARM = urdf_dir() / "arm3.urdf"
START = {"damping": [0.3, 0.2, 0.1], "coulomb": [0.4, 0.0, 0.1], "armature": [0.05, 0.04, 0.0],
         "offset": [0.1, -0.2, 0.0]}


@pytest.mark.parametrize("learn", [(), ("damping", "coulomb", "armature", "offset")])
def test_torque_is_the_documented_formula_and_gradients_reach_every_learned_kind(learn):
    start = {k: [v if v != 0 else 0.02 for v in vals] for k, vals in START.items()}
    f = JointFriction(3, start, learn=learn)
    qd = torch.tensor([[0.5, -1.0, 0.01]], dtype=F64)
    qdd = torch.tensor([[2.0, 1.0, -3.0]], dtype=F64)
    v_s = COULOMB_VELOCITY_SCALE
    want = [start["damping"][i] * qd[0, i] + start["coulomb"][i] * math.tanh(qd[0, i] / v_s)
            + start["armature"][i] * qdd[0, i] + start["offset"][i] for i in range(3)]
    assert torch.allclose(f.torque(qd, qdd)[0], torch.tensor(want, dtype=F64), atol=1e-12)
    if not learn:
        assert not list(f.parameters())
        return
    f.torque(qd, qdd).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in f.parameters())
    assert smooth_sign(torch.tensor([2.65 * v_s]), v_s).item() == pytest.approx(0.99, abs=1e-3)


def test_non_negative_kinds_stay_non_negative_whatever_the_raw_parameters():
    f = JointFriction(3, START, learn=("damping", "coulomb", "armature", "offset"))
    with torch.no_grad():
        for p in f.parameters():
            p.fill_(-50.0)
    vals = f.values()
    assert all(v >= 0 for k in ("damping", "coulomb", "armature") for v in vals[k])
    assert all(v < 0 for v in vals["offset"])          # the offset has either sign
    # a non-negative kind learned from 0 starts at a small positive value (a softplus factor of 0
    # could never grow): 0.01 N m s/rad, 0.01 N m, 0.001 kg m^2
    g = JointFriction(3, learn=("damping", "coulomb", "armature"))
    assert g.values()["damping"] == pytest.approx([0.01] * 3) and g.values()["armature"] == pytest.approx([1e-3] * 3)
    with pytest.raises(ValueError, match="coulomb must be non-negative"):
        JointFriction(3, {"coulomb": [0.1, -0.1, 0.0]})
    with pytest.raises(ValueError, match="unknown joint friction kinds"):
        JointFriction(3, learn=("stiction",))


def test_robot_model_accelerations_match_mujoco_with_damping_and_armature(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    # the truth: MuJoCo's own URDF import with joint damping and armature
    m = mujoco.MjModel.from_xml_path(str(ARM))
    for i, j in enumerate(("joint1", "joint2", "joint3")):
        m.dof_damping[m.joint(j).dofadr[0]] = START["damping"][i]
        m.dof_armature[m.joint(j).dofadr[0]] = START["armature"][i]
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    # ours: the same robot file with an actuation file beside it (read back on loading)
    robot = tmp_path / "arm3.urdf"
    shutil.copy(ARM, robot)
    write_actuation(actuation_path(robot), ["joint1", "joint2", "joint3"],
                    {"damping": START["damping"], "coulomb": [0.0] * 3, "armature": START["armature"],
                     "offset": [0.0] * 3}, 0.05)
    spec = ModelSpec(dof=3, angle_mask=(True,) * 3, control_dim=3,
                     input_matrix=tuple(tuple(float(i == j) for j in range(3)) for i in range(3)),
                     h=0.005, robot=str(robot), robot_learn=("mass", "damping"), robot_perturb=0.0)
    model = build_model("robot-rk4", spec)
    for _ in range(4):
        q, qd, tau = rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3), rng.uniform(-3, 3, 3)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, qd, tau
        mujoco.mj_forward(m, d)
        x = torch.tensor(np.concatenate([q, qd]), dtype=F64)[None]
        ours = model.vector_field(x, torch.tensor(tau, dtype=F64)[None])[0, 3:]
        assert np.allclose(ours.detach().numpy(), d.qacc, atol=1e-9, rtol=1e-9)
        # and back: the model's inverse dynamics gives the applied torque
        back = model.inverse_dynamics(x[:, :3], x[:, 3:], torch.tensor(d.qacc, dtype=F64)[None])
        assert np.allclose(back.detach().numpy()[0], tau, atol=1e-9)


def test_robot_model_gradients_match_finite_differences_and_the_explicit_solve():
    """The robot model's acceleration is differentiated by the implicit function theorem (one RNEA
    and its backward) with the learnable inertials computed once per training step: its loss
    gradient matches central differences and the explicit ``(M + Ia)^-1 (force - h - tau_f)``
    differentiated through CRBA and the solve by torch autograd (the torch algorithms)."""
    from engine.data.windows import Windows
    from engine.robots.backends import torch_only

    spec = ModelSpec(dof=3, angle_mask=(True,) * 3, control_dim=3,
                     input_matrix=tuple(tuple(float(i == j) for j in range(3)) for i in range(3)),
                     h=0.01, robot=str(ARM), robot_perturb=0.1,
                     robot_learn=("mass", "com", "inertia", "damping", "coulomb", "armature", "offset"))
    torch.manual_seed(0)
    model = build_model("robot-rk4", spec)
    rng = np.random.default_rng(5)
    q, qd, q_next, qd_next, q_prev = (torch.tensor(rng.uniform(-1, 1, (6, 3)), dtype=F64) for _ in range(5))
    u_prev, u, u_next = (torch.tensor(rng.uniform(-2, 2, (6, 3)), dtype=F64) for _ in range(3))
    w = Windows(q_prev=q_prev, q=q, qd=qd, q_next=q_next, qd_next=qd_next, u_prev=u_prev, u=u, u_next=u_next)
    params = [p for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    model.loss(w).backward()
    ours = [p.grad.clone() for p in params]

    def explicit(self, q, qd, force):
        f = self.friction
        M = self.robot.mass_matrix(q) + torch.diag_embed(f.value("armature").to(q.dtype).expand(q.shape))
        return torch.linalg.solve(M, force - self.robot.bias_forces(q, qd) - f.dissipative_torque(qd))

    cls = type(model)
    saved = cls._acceleration
    cls._acceleration = explicit
    try:
        with torch_only():
            model.zero_grad()
            model.loss(w).backward()
    finally:
        cls._acceleration = saved
    for a, b in zip(ours, (p.grad for p in params)):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)
    # central differences on one entry of every parameter
    for p, g in zip(params, ours):
        k = int(torch.argmax(g.abs().reshape(-1)))
        e = torch.zeros_like(p).reshape(-1)
        e[k] = 1e-6
        with torch.no_grad():
            p.add_(e.reshape(p.shape))
            up = float(model.loss(w))
            p.sub_(2 * e.reshape(p.shape))
            down = float(model.loss(w))
            p.add_(e.reshape(p.shape))
        assert (up - down) / 2e-6 == pytest.approx(float(g.reshape(-1)[k]), rel=1e-5, abs=1e-10)


def test_actuation_file_round_trip_and_clear_errors(tmp_path):
    robot = tmp_path / "arm3.urdf"
    shutil.copy(ARM, robot)
    side = write_actuation(actuation_path(robot), ["joint1", "joint2", "joint3"], START, 0.02)
    assert side.name == "arm3.actuation.json"
    start = load_rigid_body(str(robot))
    assert start.friction == START and start.velocity_scale == 0.02 and str(side) in start.notes[0]
    # the rigid body carries none of it (nothing counted twice)
    assert float(start.model.joint_damping().abs().sum()) == 0.0
    doc = json.loads(side.read_text())
    doc["joints"]["elbow"] = {"damping": 1.0}
    side.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"arm3.actuation.json: joint 'elbow' is not a movable joint"):
        load_rigid_body(str(robot))
    doc["joints"].pop("elbow")
    doc["joints"]["joint2"]["armature"] = -1.0
    side.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"joints\['joint2'\]\['armature'\] must be a finite number >= 0"):
        load_rigid_body(str(robot))
