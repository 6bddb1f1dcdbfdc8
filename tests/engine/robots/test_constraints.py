"""Loop closures, welds and tendon equalities (MJCF) as holonomic constraints: residuals and
Jacobians against MuJoCo's own, constrained accelerations and forces against Pinocchio's
``constraintDynamics`` and an analytic gripper, and simulations that keep the loops closed and
follow MuJoCo's (stiff) simulation of the same file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from engine.robots import RobotModel
from engine.robots.constrained_dynamics import Baumgarte, constrained_forward_dynamics, project_state
from engine.robots.constraints import (
    LoopConstraint,
    TendonConstraint,
    WeldConstraint,
    constraint_drift,
    constraint_jacobian,
    constraint_residual,
    constraint_terms,
)
from engine.robots.simulate import SimulationOptions, simulate

mujoco = pytest.importorskip("mujoco")

# a planar four-bar: crank (a) and coupler (b) from the world, rocker (d) from the world, the
# coupler's end pinned to the rocker (a 3-row connect of which one row repeats the others)
FOUR_BAR = """<mujoco model="fourbar">
  <option timestep="0.0001"><flag contact="disable"/></option>
  <worldbody>
    <body name="crank">
      <joint name="a" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.15" size="0.01" mass="0.3"/>
      <body name="coupler" pos="0 0 0.15">
        <joint name="b" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.45 0 0.1" size="0.01" mass="0.6"/>
      </body>
    </body>
    <body name="rocker" pos="0.4 0 0">
      <joint name="d" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.05 0 0.25" size="0.01" mass="0.4"/>
    </body>
  </worldbody>
  <equality>
    <connect name="close" body1="coupler" body2="rocker" anchor="0.45 0 0.1" SOFT/>
  </equality>
</mujoco>"""

# two branches from the world welded at their tips (one degree of freedom left), a gripper's
# fingers mirrored by a fixed-tendon equality, and a three-hinge chain pinned to the palm by a
# connect written with sites (rigid: its three rows take its three joints)
LINKAGE = """<mujoco model="linkage">
  <option><flag contact="disable"/></option>
  <worldbody>
    <body name="l1">
      <joint name="h1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/>
      <body name="l2" pos="0.3 0 0">
        <joint name="h2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.02" mass="0.4"/>
        <site name="s2" pos="0 0 0.3"/>
      </body>
    </body>
    <body name="carriage" pos="0 0 0.3">
      <joint name="s" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.03 0.03 0.03" mass="0.3"/>
      <body name="arm">
        <joint name="h3" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.3"/>
        <site name="s3" pos="0.3 0 0"/>
      </body>
    </body>
    <body name="palm" pos="1 0 0">
      <geom type="box" size="0.05 0.05 0.02" mass="1"/>
      <site name="socket" pos="0.1 0.4 0.1"/>
      <body name="left" pos="-0.03 0 0">
        <joint name="fl" type="slide" axis="1 0 0"/>
        <geom type="box" size="0.01 0.02 0.04" mass="0.1"/>
      </body>
      <body name="right" pos="0.03 0 0">
        <joint name="fr" type="slide" axis="1 0 0"/>
        <geom type="box" size="0.01 0.02 0.04" mass="0.15"/>
      </body>
      <body name="pin">
        <joint name="p1" type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 0.2 0" size="0.01" mass="0.1"/>
        <site name="tip" pos="0 0.2 0"/>
        <body name="pin2" pos="0 0.2 0">
          <joint name="p2" type="hinge" axis="0 0 1"/>
          <joint name="p3" type="hinge" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 0.2 0" size="0.01" mass="0.1"/>
          <site name="tip2" pos="0.1 0.2 0.1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="left_t"><joint joint="fl" coef="1"/></fixed>
    <fixed name="right_t"><joint joint="fr" coef="0.5"/></fixed>
  </tendon>
  <equality>
    <weld name="tips" body1="l2" body2="arm" anchor="0.3 0 0" torquescale="2"/>
    <tendon name="mirror" tendon1="left_t" tendon2="right_t" polycoef="0 -2 0 0 0"/>
    <connect name="sites" site1="tip2" site2="socket"/>
  </equality>
</mujoco>"""


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)          # small matrices: threads only wait on each other
    yield
    torch.set_num_threads(n)


def _four_bar(tmp_path, soft=""):
    path = tmp_path / "fourbar.xml"
    path.write_text(FOUR_BAR.replace("SOFT", soft))
    return path


def _linkage(tmp_path):
    path = tmp_path / "linkage.xml"
    path.write_text(LINKAGE)
    return path


def test_mjcf_equalities_become_constraints(tmp_path):
    desc = RobotModel.from_file(_linkage(tmp_path)).description
    kinds = {c.name: c for c in desc.constraints}
    assert isinstance(kinds["tips"], WeldConstraint) and kinds["tips"].torquescale == 2.0
    assert (kinds["tips"].body1, kinds["tips"].body2) == ("l2", "arm")
    assert isinstance(kinds["sites"], LoopConstraint) and kinds["sites"].anchor1 == (0.1, 0.2, 0.1)
    assert (kinds["sites"].body1, kinds["sites"].body2) == ("pin2", "palm")
    mirror = kinds["mirror"]
    assert isinstance(mirror, TendonConstraint)
    assert dict(zip(mirror.joints, mirror.coefficients)) == {"fl": 1.0, "fr": 1.0}   # 1 - (-2) 0.5
    missing = " ".join(desc.not_modelled)
    assert "<connect>" not in missing and "<weld>" not in missing and "<tendon>" not in missing
    assert "tendons" not in missing                    # the tendons do nothing else
    assert "solref" in missing and "'tips'" in missing  # the softness is named


def _mujoco_rows(path, q):
    """MuJoCo's equality rows at ``q``: residuals (nefc,) and dense Jacobians (nefc, nv)."""
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    eq = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return d.efc_pos[eq].copy(), d.efc_J.reshape(d.nefc, m.nv)[eq].copy()


@pytest.mark.parametrize("maker", [_four_bar, _linkage])
def test_residuals_and_jacobians_are_mujocos(tmp_path, maker, dynamics_path):
    path = maker(tmp_path)
    model = RobotModel.from_file(path)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-0.6, 0.6, model.nq)
        r, J = constraint_terms(model, model.description.constraints, torch.tensor(q))
        r_mj, J_mj = _mujoco_rows(path, q)
        np.testing.assert_allclose(r.numpy(), r_mj, atol=1e-12)
        np.testing.assert_allclose(J.numpy(), J_mj, atol=1e-12)


def test_jacobian_and_drift_are_the_residuals_derivatives(tmp_path):
    model = RobotModel.from_file(_linkage(tmp_path))
    cons = model.description.constraints
    rng = np.random.default_rng(0)
    q, v = torch.tensor(rng.uniform(-0.5, 0.5, (2, model.nq))), torch.tensor(rng.normal(size=(2, model.nv)))
    eps = 1e-6
    r_dot = (constraint_residual(model, cons, q + eps * v) - constraint_residual(model, cons, q - eps * v)) / (2 * eps)
    J = constraint_jacobian(model, cons, q)
    np.testing.assert_allclose((J @ v[..., None])[..., 0].numpy(), r_dot.numpy(), atol=1e-8)
    eps = 1e-4                          # second derivative of r along the straight motion q + t v
    r_ddot = (constraint_residual(model, cons, q + eps * v) - 2 * constraint_residual(model, cons, q)
              + constraint_residual(model, cons, q - eps * v)) / eps ** 2
    ad = constraint_drift(model, cons, q, v, method="ad")
    np.testing.assert_allclose(ad.numpy(), r_ddot.numpy(), atol=2e-6)
    np.testing.assert_allclose(constraint_drift(model, cons, q, v, method="difference").numpy(), ad.numpy(),
                               atol=1e-8)


def _pinocchio_four_bar(model):
    """Pinocchio's model of the four-bar (from the same inertials) and its 3D loop constraint."""
    pin = pytest.importorskip("pinocchio")
    from engine.robots.urdf_export import description_to_urdf

    pm = pin.buildModelFromXML(description_to_urdf(model.description).decode())
    c = model.description.constraints[0]

    def placement(link, anchor):
        f = pm.frames[pm.getFrameId(link)]
        return f.parentJoint, f.placement * pin.SE3(np.eye(3), np.array(anchor))

    (j1, p1), (j2, p2) = placement(c.body1, c.anchor1), placement(c.body2, c.anchor2)
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, j1, p1, j2, p2, pin.ReferenceFrame.LOCAL)
    joints = [pm.joints[pm.getJointId(n)] for n in model.joint_names]
    perm = [j.idx_v for j in joints]

    def config(q):          # continuous joints are (cos, sin) pairs in Pinocchio's q
        out = np.empty(pm.nq)
        for j, x in zip(joints, q):
            out[j.idx_q:j.idx_q + j.nq] = [np.cos(x), np.sin(x)] if j.nq == 2 else [x]
        return out

    return pin, pm, cm, perm, config


def test_accelerations_and_forces_match_pinocchio_constraint_dynamics(tmp_path, dynamics_path):
    model = RobotModel.from_file(_four_bar(tmp_path))
    cons = model.description.constraints
    pin, pm, cm, perm, config = _pinocchio_four_bar(model)
    pd = pm.createData()
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    cms.append(cm)
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-10, 50)
    rng = np.random.default_rng(1)
    for start in (0.0, 0.4, -0.7):
        q, v = project_state(model, cons, torch.tensor([start, 0.1, -0.2]), torch.tensor(rng.normal(size=3)))
        tau = torch.tensor(rng.normal(size=3))
        out = constrained_forward_dynamics(model, cons, q, v, tau, gains=None)
        vp, tp = np.empty(3), np.empty(3)
        qp = config(q.numpy())
        vp[perm], tp[perm] = v.numpy(), tau.numpy()
        ddq = pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox)
        np.testing.assert_allclose(out.qdd.numpy(), ddq[perm], atol=1e-9)
        # the generalised constraint force J^T lambda (unique, unlike the split over the redundant rows)
        J = constraint_jacobian(model, cons, q)
        f_pin = (pin.rnea(pm, pd, qp, vp, ddq) - tp)[perm]
        np.testing.assert_allclose((J.T @ out.forces).numpy(), f_pin, atol=1e-9)


def test_gripper_mirrored_by_a_tendon_analytic(tmp_path):
    """Fingers of mass m_l, m_r coupled by q_l + q_r = 0, a force F on the left one:
    both accelerate at F / (m_l + m_r), the coupling carries lambda = -m_r F / (m_l + m_r)."""
    model = RobotModel.from_file(_linkage(tmp_path))
    cons = tuple(c for c in model.description.constraints if c.name == "mirror")
    i, k = model.joint_names.index("fl"), model.joint_names.index("fr")
    tau = torch.zeros(model.nv, dtype=torch.float64)
    tau[i] = 2.0
    out = constrained_forward_dynamics(model, cons, torch.zeros(model.nq), torch.zeros(model.nv), tau)
    assert out.qdd[i].item() == pytest.approx(2.0 / 0.25, abs=1e-10)
    assert out.qdd[k].item() == pytest.approx(-2.0 / 0.25, abs=1e-10)
    assert out.forces.item() == pytest.approx(-0.15 * 2.0 / 0.25, abs=1e-10)


def test_simulation_keeps_the_loops_closed(tmp_path, one_thread):
    """2 s of a gripper closing (a constant force on one mirrored finger) with a welded linkage and
    a site-connected pendulum falling: every constraint holds to under 1e-6 (m, or rad-like)."""
    model = RobotModel.from_file(_linkage(tmp_path))
    cons = model.description.constraints
    tau = [0.0] * model.nv
    tau[model.joint_names.index("fl")] = 0.5
    result = simulate(model, np.zeros(model.nq), options=SimulationOptions(duration=2.0, dt=0.004,
                                                                          tau=tuple(tau), frame_rate=25))
    r = constraint_residual(model, cons, torch.tensor(result.q))
    assert float(r.abs().max()) < 1e-6
    moved = np.abs(result.q[-1] - result.q[0])
    assert moved[model.joint_names.index("fl")] > 0.5 and moved[model.joint_names.index("h1")] > 0.1
    # no Baumgarte and no projection: the same integration drifts (the stabilisation is needed)
    q, v = torch.zeros(model.nq, dtype=torch.float64), torch.zeros(model.nv, dtype=torch.float64)
    f = lambda q, v: constrained_forward_dynamics(model, cons, q, v, torch.tensor(tau), gains=None).qdd  # noqa: E731
    for _ in range(100):
        a = f(q, v)
        q, v = q + 0.02 * v + 0.0002 * a, v + 0.02 * a
    assert float(constraint_residual(model, cons, q).abs().max()) > 1e-4


def test_four_bar_follows_mujocos_stiff_simulation(tmp_path, one_thread):
    """The four-bar falling under gravity for 2 s: the loop stays closed to 1e-6 m, and the joint
    angles follow MuJoCo's simulation of the same file with stiff constraints (solref 0.0002,
    solimp 0.9999, RK4 at 0.1 ms) to 5e-4 rad (measured: 7e-5 rad at most, over swings of 6 rad)."""
    path = _four_bar(tmp_path, 'solref="0.0002 1" solimp="0.9999 0.9999 0.001 0.5 2"')
    model = RobotModel.from_file(path)
    result = simulate(model, np.zeros(3), options=SimulationOptions(duration=2.0, dt=0.002, damping=False,
                                                                     frame_rate=50))
    r = constraint_residual(model, model.description.constraints, torch.tensor(result.q))
    assert float(r.abs().max()) < 1e-6
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    ref = {}
    for step in range(1, 20001):
        mujoco.mj_step(m, d)
        if step % 2000 == 0:
            ref[round(step * 1e-4, 6)] = d.qpos.copy()
    swing = 0.0
    for t, q_mj in ref.items():
        k = int(np.argmin(np.abs(result.t - t)))
        assert abs(result.t[k] - t) < 1e-9
        np.testing.assert_allclose(result.q[k], q_mj, atol=5e-4)
        swing = max(swing, float(np.abs(q_mj).max()))
    assert swing > 0.3                              # it moved


def test_constrained_dynamics_is_batched_and_differentiable(tmp_path):
    model = RobotModel.from_file(_four_bar(tmp_path))
    cons = model.description.constraints
    q, v = project_state(model, cons, torch.tensor([[0.0, 0.0, 0.0], [0.3, 0.1, -0.1]]),
                         torch.tensor([[0.5, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    tau = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    out = constrained_forward_dynamics(model, cons, q, v, tau, gains=Baumgarte())
    assert out.qdd.shape == (2, 3) and out.forces.shape == (2, 3)
    for b in range(2):          # batched = one by one
        one = constrained_forward_dynamics(model, cons, q[b], v[b], tau[b].detach())
        np.testing.assert_allclose(one.qdd.numpy(), out.qdd[b].detach().numpy(), atol=1e-12)
    # the acceleration keeps the loop: J qdd + Jdot v = 0 at a satisfied state
    J = constraint_jacobian(model, cons, q)
    acc = (J @ out.qdd[..., None])[..., 0] + constraint_drift(model, cons, q, v)
    assert float(acc.detach().abs().max()) < 1e-8
    # d qdd / d tau = the constrained inverse inertia, checked by a finite difference
    out.qdd[0, 0].backward()
    dq = [(constrained_forward_dynamics(model, cons, q[0], v[0], torch.eye(3)[j] * 1e-6).qdd[0]
           - constrained_forward_dynamics(model, cons, q[0], v[0], torch.zeros(3)).qdd[0]).item() / 1e-6
          for j in range(3)]
    np.testing.assert_allclose(tau.grad[0].numpy(), dq, atol=1e-6)


def test_robot_info_lists_every_constraint(tmp_path, capsys):
    from engine.cli import main

    path = _linkage(tmp_path)
    assert main(["robot", "info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    by_name = {c["name"]: c for c in info["constraints"]}
    assert by_name["tips"] == {"name": "tips", "kind": "weld", "bodies": ["l2", "arm"], "rows": 6}
    assert by_name["sites"] == {"name": "sites", "kind": "connect", "bodies": ["pin2", "palm"], "rows": 3}
    assert by_name["mirror"] == {"name": "mirror", "kind": "tendon", "joints": {"fl": 1.0, "fr": 1.0},
                                 "tendons": ["left_t", "right_t"], "rows": 1}
    assert not any("<weld>" in line or "<connect>" in line for line in info["not_modelled"])
    assert main(["robot", "info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "constraint tips: weld (l2 - arm), 6 rows" in text
    assert "constraint mirror: tendon (1 fl + 1 fr), 1 row" in text


FLOATING = """<mujoco model="floatloop">
  <option><flag contact="disable"/></option>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.05 0.05" mass="1"/>
      <body name="arm" pos="0.1 0 0">
        <joint name="h" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <equality><connect name="hang" body1="arm" body2="world" anchor="0.3 0 0"/></equality>
</mujoco>"""


def test_a_floating_body_hung_from_the_world(tmp_path, one_thread):
    """A free box hangs by its arm's tip from a point of the world: the Jacobian is the residual's
    derivative along ``q (+) t v`` (the base's twist in its own frame), and 2 s of falling and
    swinging keep the tip on the point."""
    path = tmp_path / "float.xml"
    path.write_text(FLOATING)
    model = RobotModel.from_file(path)
    cons = model.description.constraints
    assert model.floating and cons[0].body2 is None and cons[0].anchor2 == pytest.approx((0.4, 0.0, 1.0))
    q0 = model.neutral().clone()
    q0[2] = 1.0
    assert float(constraint_residual(model, cons, q0).abs().max()) < 1e-15
    v = torch.tensor(np.random.default_rng(2).normal(size=model.nv))
    eps = 1e-6
    fd = (constraint_residual(model, cons, model.integrate(q0, eps * v))
          - constraint_residual(model, cons, model.integrate(q0, -eps * v))) / (2 * eps)
    np.testing.assert_allclose((constraint_jacobian(model, cons, q0) @ v).numpy(), fd.numpy(), atol=1e-8)
    result = simulate(model, q0.numpy(), options=SimulationOptions(duration=2.0, dt=0.002, frame_rate=10))
    assert float(constraint_residual(model, cons, torch.tensor(result.q)).abs().max()) < 1e-6
    assert abs(result.q[-1, 2] - 1.0) > 0.1                  # the box fell and swings below the point


def test_simulation_starts_on_the_constraints_or_says_why_not(tmp_path):
    model = RobotModel.from_file(_four_bar(tmp_path))
    cons = model.description.constraints
    result = simulate(model, np.array([0.2, 0.0, 0.0]), options=SimulationOptions(duration=0.02, dt=0.002))
    assert float(constraint_residual(model, cons, torch.tensor(result.q[0])).abs().max()) < 1e-12
    assert np.abs(result.q[0] - [0.2, 0.0, 0.0]).max() < 0.2      # moved less than back to the file pose
    far = tmp_path / "far.xml"        # a pendulum's tip pinned to a point it cannot reach
    far.write_text("""<mujoco><worldbody><site name="post" pos="1 0 0"/>
      <body name="p"><joint name="j" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.01" mass="0.2"/><site name="tip" pos="0.3 0 0"/>
      </body></worldbody><equality><connect name="reach" site1="tip" site2="post"/></equality></mujoco>""")
    with pytest.raises(ValueError, match="constraint 'reach' \\(connect\\) cannot be closed"):
        simulate(RobotModel.from_file(far), np.zeros(1), options=SimulationOptions(duration=0.02, dt=0.002))


def test_drawn_marks_are_mujocos_sites_anchors_and_residuals(tmp_path):
    """constraint_marks over a batch: the connect's anchors are MuJoCo's sites, the weld's second
    anchor is MuJoCo's point on body2 and its frames coincide at MuJoCo's qpos0, each violation is
    the size of MuJoCo's equality rows (efc_pos), and a tendon's joints sit on their moving bodies."""
    from engine.robots.constraints import constraint_marks

    path = _linkage(tmp_path)
    model = RobotModel.from_file(path)
    qs = np.random.default_rng(5).uniform(-0.5, 0.5, (4, model.nq))
    marks = {mk.name: mk for mk in constraint_marks(model, model.description.constraints, torch.tensor(qs))}
    assert set(marks) == {"tips", "mirror", "sites"}
    assert marks["tips"].frames.shape == (4, 2, 3, 3) and marks["sites"].frames is None
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    for b, q in enumerate(qs):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        np.testing.assert_allclose(marks["sites"].points[b, 0], d.site("tip2").xpos, atol=1e-12)
        np.testing.assert_allclose(marks["sites"].points[b, 1], d.site("socket").xpos, atol=1e-12)
        arm = d.body("arm")
        np.testing.assert_allclose(marks["tips"].points[b, 1], arm.xpos + arm.xmat.reshape(3, 3) @ [0.3, 0, 0],
                                   atol=1e-12)
        rows = {}
        for k in np.flatnonzero(d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY):
            rows.setdefault(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, d.efc_id[k]), []).append(d.efc_pos[k])
        assert float(marks["sites"].violation[b]) == pytest.approx(np.linalg.norm(rows["sites"]), abs=1e-12)
        angle = 2 * np.arcsin(min(1.0, np.linalg.norm(rows["tips"][3:]) / 2.0))       # torquescale 2
        assert float(marks["tips"].violation[b]) == pytest.approx(max(np.linalg.norm(rows["tips"][:3]), angle),
                                                                  abs=1e-9)
        assert float(marks["mirror"].violation[b]) == pytest.approx(abs(rows["mirror"][0]), abs=1e-12)
        assert marks["mirror"].joints == ("fl", "fr")
        np.testing.assert_allclose(marks["mirror"].points[b], [d.body("left").xpos, d.body("right").xpos],
                                   atol=1e-12)          # the slides' moving bodies (joints at their origins)
    d.qpos[:] = m.qpos0
    at_rest = constraint_marks(model, model.description.constraints, torch.tensor(m.qpos0))
    for mk in at_rest:                           # MuJoCo's compiler closes every constraint at qpos0
        assert float(mk.violation[0]) < 1e-12, mk.name
    tips = next(mk for mk in at_rest if mk.name == "tips")
    np.testing.assert_allclose(tips.frames[0, 0], tips.frames[0, 1], atol=1e-12)


def test_baumgarte_closes_an_open_loop_as_a_critically_damped_spring(tmp_path, one_thread):
    """Without projection, an open loop's error obeys e'' = -kd e' - kp e exactly (the rows'
    acceleration is imposed): with kp = 100, kd = 20, from rest, e(t) = e0 (1 + 10 t) exp(-10 t)."""
    from engine.integrators import rk4_step_t

    model = RobotModel.from_file(_four_bar(tmp_path))
    cons = model.description.constraints
    q = torch.tensor([0.05, 0.0, 0.0], dtype=torch.float64)         # the crank turned: the loop opens
    e0 = constraint_residual(model, cons, q)
    assert float(e0.abs().max()) > 1e-3

    def field(t, x):
        return torch.cat([x[3:], constrained_forward_dynamics(model, cons, x[:3], x[3:], torch.zeros(3),
                                                              gains=Baumgarte(kp=100.0, kd=20.0)).qdd])

    x, dt = torch.cat([q, torch.zeros(3, dtype=torch.float64)]), 1e-3
    for k in range(300):
        x = rk4_step_t(field, k * dt, x, dt)
        t = (k + 1) * dt
        if (k + 1) % 100 == 0:
            expected = e0 * (1 + 10 * t) * np.exp(-10 * t)
            np.testing.assert_allclose(constraint_residual(model, cons, x[:3]).numpy(), expected.numpy(), atol=1e-7)
