"""Fixed-tendon limits (MJCF ``<fixed limited="true" range>``) as one-sided constraints: read from
the file, listed by ``robot info``, no longer named as not modelled; the force only pushes (an
analytic pendulum resting on its limit, a release when gravity pulls back into range); a double
pendulum falling into its limit follows MuJoCo's (stiff) simulation of the same file. A robot
with loops simulates its joint limits the same way (one-sided rows beside the loops)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from engine.robots import RobotModel
from engine.robots.constrained_dynamics import constrained_forward_dynamics, project_state
from engine.robots.constraints import TendonLimit, constraint_marks, limit_terms
from engine.robots.simulate import SimulationOptions, simulate

mujoco = pytest.importorskip("mujoco")

# a double pendulum in the x-z plane (hinges about y: gravity turns both links positive from
# horizontal) whose fixed tendon L = q1 + 0.5 q2 is limited to [-0.5, 0.5]
DOUBLE = """<mujoco model="double">
  <option timestep="0.0001"><flag contact="disable"/></option>
  <worldbody>
    <body name="upper">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="sum" limited="true" range="-0.5 0.5" SOFT>
      <joint joint="j1" coef="1"/><joint joint="j2" coef="0.5"/>
    </fixed>
  </tendon>
</mujoco>"""

# one hinge, a point mass 0.4 m out: its joint-coupling tendon L = 2 q limited to [-1, 0.6]
SINGLE = """<mujoco model="single">
  <option><flag contact="disable"/></option>
  <worldbody>
    <body name="arm">
      <joint name="h" type="hinge" axis="0 1 0"/>
      <geom type="sphere" pos="0.4 0 0" size="0.01" mass="2"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="twice" limited="true" range="-1 0.6"><joint joint="h" coef="2"/></fixed>
  </tendon>
</mujoco>"""


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _file(tmp_path, text, name="f.xml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_limits_are_read_listed_and_no_longer_named_as_not_modelled(tmp_path, capsys):
    from engine.cli import main

    path = _file(tmp_path, DOUBLE.replace("SOFT", ""))
    model = RobotModel.from_file(path)
    (limit,) = model.description.constraints
    assert limit == TendonLimit("sum", ("j1", "j2"), (1.0, 0.5), -0.5, 0.5)
    assert not any(line.startswith("tendons") for line in model.description.not_modelled)
    assert any(line.startswith("tendon limit softness") and "'sum'" in line for line in model.description.not_modelled)
    assert main(["robot", "info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["constraints"] == [{"name": "sum", "kind": "tendon limit", "joints": {"j1": 1.0, "j2": 0.5},
                                    "range": [-0.5, 0.5], "rows": 0}]
    assert main(["robot", "info", str(path)]) == 0
    assert "constraint sum: tendon limit (1 j1 + 0.5 j2 in [-0.5, 0.5]), one-sided" in capsys.readouterr().out
    # a spring on the tendon is not modelled: the tendon is still named
    sprung = RobotModel.from_file(_file(tmp_path, DOUBLE.replace("SOFT", 'stiffness="3"'), "s.xml"))
    assert any(line.startswith("tendons") and "'sum'" in line for line in sprung.description.not_modelled)


def test_a_pendulum_resting_on_its_limit_is_held_by_the_static_torque(tmp_path):
    """At the upper bound (L = 2 q = 0.6) gravity turns the arm further (q grows): the limit holds
    it, qdd = 0, and the force along the tendon f (generalised torque 2 f) balances gravity's
    torque -m g r cos(q). At the lower bound gravity pulls it back into range: no force, free fall."""
    model = RobotModel.from_file(_file(tmp_path, SINGLE))
    cons = model.description.constraints
    q_up = torch.tensor([0.3], dtype=torch.float64)
    out = constrained_forward_dynamics(model, cons, q_up, torch.zeros(1), torch.zeros(1))
    torque = 2.0 * 9.81 * 0.4 * np.cos(0.3)                  # gravity's torque, turning q positive
    assert out.qdd.item() == pytest.approx(0.0, abs=1e-9)
    assert out.limit_forces.item() == pytest.approx(-torque / 2.0, rel=1e-9)      # pushes L down
    q_lo = torch.tensor([-0.5], dtype=torch.float64)
    out = constrained_forward_dynamics(model, cons, q_lo, torch.zeros(1), torch.zeros(1))
    assert out.limit_forces.item() == 0.0                     # released: it would have to pull
    inertia = 2.0 * 0.4 ** 2 + 0.4 * 2.0 * 0.01 ** 2           # the point mass, and the sphere's own
    assert out.qdd.item() == pytest.approx(2.0 * 9.81 * 0.4 * np.cos(-0.5) / inertia, rel=1e-9)
    # batched: each state its own active set (held at the upper bound, released at the lower)
    both = constrained_forward_dynamics(model, cons, torch.tensor([[0.3], [-0.5]], dtype=torch.float64),
                                        torch.zeros(2, 1), torch.zeros(2, 1))
    np.testing.assert_allclose(both.limit_forces[:, 0].numpy(), [-torque / 2.0, 0.0], rtol=1e-9)
    np.testing.assert_allclose(both.qdd[:, 0].numpy(), [0.0, out.qdd.item()], atol=1e-9)
    # simulated from the bound at rest: it stays there
    res = simulate(model, np.array([0.3]), options=SimulationOptions(duration=0.5, dt=0.002, damping=False))
    assert np.abs(res.q[:, 0] - 0.3).max() < 1e-9
    # from inside the range it falls onto the limit and stops there (an inelastic stop, no rebound)
    res = simulate(model, np.array([0.0]), options=SimulationOptions(duration=1.0, dt=0.002, damping=False))
    assert res.q[:, 0].max() <= 0.3 + 1e-9
    assert res.q[-1, 0] == pytest.approx(0.3, abs=1e-9) and abs(res.qd[-1, 0]) < 1e-9


def test_projection_brings_a_length_into_range_and_stops_the_motion_out_of_it(tmp_path):
    model = RobotModel.from_file(_file(tmp_path, DOUBLE.replace("SOFT", "")))
    cons = model.description.constraints
    q, v = project_state(model, cons, torch.tensor([[0.6, 0.2], [0.1, 0.0]], dtype=torch.float64),
                         torch.tensor([[1.0, 0.5], [1.0, 0.5]], dtype=torch.float64))
    L, a = limit_terms(model, cons, q)
    assert float(L[0, 0]) == pytest.approx(0.5, abs=1e-12)              # beyond: back to the bound
    assert float(a[0, 0] @ v[0]) == pytest.approx(0.0, abs=1e-12)     # no velocity out of range
    np.testing.assert_allclose(q[1].numpy(), [0.1, 0.0])                 # inside: untouched
    np.testing.assert_allclose(v[1].numpy(), [1.0, 0.5])
    (mark,) = constraint_marks(model, cons, torch.tensor([[0.6, 0.2], [0.1, 0.0]], dtype=torch.float64))
    np.testing.assert_allclose(mark.value.numpy(), [0.7, 0.1])
    np.testing.assert_allclose(mark.violation.numpy(), [0.2, 0.0], atol=1e-12)


def test_a_double_pendulum_falling_into_its_limit_follows_mujoco(tmp_path, one_thread):
    """Released from horizontal, the chain swings until L = q1 + 0.5 q2 reaches 0.5, slides along
    the limit, leaves it, swings to the lower bound -0.5 and slides along that. MuJoCo (RK4, 0.1 ms,
    a stiff limit: solreflimit 0.0002, solimplimit 0.9999) is the reference. Measured: identical
    (1e-9) until the first impact; ours stops inelastically at a bound where MuJoCo's soft limit
    rebounds by up to 0.015 for ~50 ms, so the lengths differ by up to 0.015 then, and the angles
    by up to 0.03 rad over the second; sliding on a bound, the lengths agree to 1e-4."""
    soft = 'solreflimit="0.0002 1" solimplimit="0.9999 0.9999 0.001 0.5 2"'
    path = _file(tmp_path, DOUBLE.replace("SOFT", soft))
    model = RobotModel.from_file(path)
    res = simulate(model, np.zeros(2), options=SimulationOptions(duration=1.0, dt=0.001, damping=False,
                                                                  frame_rate=50))
    L_ours = res.q[:, 0] + 0.5 * res.q[:, 1]
    assert L_ours.max() <= 0.5 + 1e-9 and L_ours.min() >= -0.5 - 1e-9
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    rows = []
    for step in range(1, 10001):
        mujoco.mj_step(m, d)
        if step % 200 == 0:
            k = int(np.argmin(np.abs(res.t - step * 1e-4)))
            assert abs(res.t[k] - step * 1e-4) < 1e-9
            rows.append((res.t[k], L_ours[k], float(d.ten_length[0]), float(np.abs(res.q[k] - d.qpos).max())))
    t, L, L_mj, dq = (np.array(c) for c in zip(*rows))
    before = t <= 0.22                                      # before the first impact (at ~0.225 s)
    assert np.abs(L - L_mj)[before].max() < 1e-6 and dq[before].max() < 1e-6
    on_bound = (np.abs(np.abs(L_mj) - 0.5) < 1e-4) & (np.abs(np.abs(L) - 0.5) < 1e-9)
    assert on_bound.sum() >= 15                             # both slide along a bound for 0.3 s or more
    assert np.abs(L - L_mj)[on_bound].max() < 1e-4 and dq[on_bound].max() < 0.01
    assert np.abs(L - L_mj).max() < 0.02 and dq.max() < 0.04
    assert (L_mj > 0.499).any() and (L_mj < -0.499).any()       # both bounds reached


# two branches welded at their tips; the carriage's slide is limited to [-0.2, 0.2], which the
# falling linkage reaches: the joint limit must hold together with the weld
WELDED = """<mujoco model="welded">
  <option timestep="0.0001"><flag contact="disable"/></option>
  <worldbody>
    <body name="l1">
      <joint name="h1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.015" mass="0.5"/>
      <body name="l2" pos="0.3 0 0">
        <joint name="h2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.015" mass="0.4"/>
      </body>
    </body>
    <body name="carriage" pos="0 0 0.3">
      <joint name="s" type="slide" axis="1 0 0" range="-0.2 0.2" SOFT/>
      <geom type="box" size="0.03 0.03 0.03" mass="0.3"/>
      <body name="arm">
        <joint name="h3" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.015" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <equality><weld name="tips" body1="l2" body2="arm" anchor="0.3 0 0" SOFTEQ/></equality>
</mujoco>"""


def test_joint_limits_hold_with_the_loops_in_simulation(tmp_path, one_thread):
    """A welded linkage falling until its carriage reaches its slide's limit: the limit is a
    one-sided row beside the weld (a clamp after the loops' projection pushed the slide 1.3 mm past
    it, or opened the weld), so both hold. MuJoCo (stiff limit and weld) is the reference: measured,
    identical (1e-6) until the carriage hits the limit at ~0.25 s, then MuJoCo's soft limit rebounds
    (up to 0.02 rad / m apart) while ours stops, and both come to rest at the same pose on the limit
    (to 1e-5) by 0.4 s."""
    from engine.robots.constraints import constraint_residual

    stiff = 'solreflimit="0.0002 1" solimplimit="0.9999 0.9999 0.001 0.5 2"'
    path = _file(tmp_path, WELDED.replace("SOFTEQ", 'solref="0.0002 1" solimp="0.9999 0.9999 0.001 0.5 2"')
                 .replace("SOFT", stiff))
    model = RobotModel.from_file(path)
    res = simulate(model, np.zeros(model.nq), options=SimulationOptions(duration=0.6, dt=0.001, damping=False,
                                                                         frame_rate=50))
    s = res.q[:, model.joint_names.index("s")]
    assert s.max() == pytest.approx(0.2, abs=1e-9)                 # it reaches the limit and stays within
    assert float(constraint_residual(model, model.description.constraints, torch.tensor(res.q)).abs().max()) < 1e-6
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    diff = {}
    for step in range(1, 6001):
        mujoco.mj_step(m, d)
        if step % 200 == 0:
            k = int(np.argmin(np.abs(res.t - step * 1e-4)))
            assert abs(res.t[k] - step * 1e-4) < 1e-9
            diff[round(step * 1e-4, 4)] = float(np.abs(res.q[k] - d.qpos).max())
    assert max(v for t, v in diff.items() if t <= 0.24) < 1e-6          # before the impact
    assert max(diff.values()) < 0.03                                     # MuJoCo's rebound
    assert max(v for t, v in diff.items() if t >= 0.4) < 1e-5            # at rest on the limit, both
    assert np.abs(res.qd[-1]).max() < 1e-6


def test_tendons_and_joint_limits_of_a_robot_with_ball_joints_follow_mujoco(tmp_path):
    """Ball joints make nq != nv: a tendon's length reads the scalar joints' q columns and its row
    their v columns (MuJoCo's ten_length and ten_J), and the joint-limit rows of simulation name
    the scalar joints with their own limits (a ball's cone is not modelled)."""
    from pathlib import Path

    from engine.robots.constraints import joint_limit_constraints

    text = (Path(__file__).parent / "mjcf" / "ball_chain.xml").read_text()
    text = text.replace('axis="0.2 1 0.1" pos="0.01 0 0"', 'axis="0.2 1 0.1" pos="0.01 0 0" range="-1 1.2"')
    text = text.replace('axis="0 1 0"/>', 'axis="0 1 0" range="-0.03 0.04"/>')
    text = text.replace("</worldbody>", """</worldbody>
  <tendon>
    <fixed name="pair" limited="true" range="-0.6 0.7">
      <joint joint="elbow" coef="1"/><joint joint="thumb" coef="-2"/>
    </fixed>
  </tendon>""")
    path = _file(tmp_path, text.replace(
        '<option gravity="0 0 -9.81"/>', '<option gravity="0 0 -9.81"/><compiler autolimits="true" angle="radian"/>'))
    model = RobotModel.from_file(path)
    assert (model.nq, model.nv) == (10, 8)
    limits = joint_limit_constraints(model)
    assert [(c.name, c.lower, c.upper) for c in limits] == [("joint elbow", -1.0, 1.2), ("joint thumb", -0.03, 0.04)]
    tendon = [c for c in model.description.constraints if isinstance(c, TendonLimit)]
    assert [c.name for c in tendon] == ["pair"]

    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    for _ in range(3):
        qpos = rng.normal(size=m.nq)
        for a in (0, 5):                                  # MuJoCo's quaternions (w, x, y, z)
            qpos[a:a + 4] /= np.linalg.norm(qpos[a:a + 4])
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        ours = qpos.copy()                                # ours: (x, y, z, w)
        for a in (0, 5):
            ours[a:a + 4] = np.r_[qpos[a + 1:a + 4], qpos[a]]
        L, J = limit_terms(model, tendon + list(limits), torch.tensor(ours))
        assert float(L[0]) == pytest.approx(float(d.ten_length[0]), abs=1e-12)
        row = np.zeros(m.nv)                              # MuJoCo's tendon Jacobian (sparse or dense)
        if d.ten_J.size == m.ntendon * m.nv:
            row[:] = np.asarray(d.ten_J).reshape(m.ntendon, m.nv)[0]
        else:
            adr, nnz = m.ten_J_rowadr[0], m.ten_J_rownnz[0]
            row[m.ten_J_colind[adr:adr + nnz]] = d.ten_J[adr:adr + nnz]
        assert np.allclose(J[0].numpy(), row, atol=1e-12) and row[3] == 1.0 and row[7] == -2.0
        assert np.allclose(L[1:].numpy(), [ours[4], ours[9]])

    # simulated: the loop-free chain falls with its tendon and joints held in range
    q0 = model.neutral().reshape(-1)
    res = simulate(model, q0, options=SimulationOptions(mode="free_fall", duration=0.3, dt=0.001))
    q = torch.as_tensor(res.q)
    L, _ = limit_terms(model, tendon + list(limits), q)
    lo = torch.tensor([c.lower for c in tendon + list(limits)], dtype=L.dtype)
    hi = torch.tensor([c.upper for c in tendon + list(limits)], dtype=L.dtype)
    assert bool(((L >= lo - 1e-6) & (L <= hi + 1e-6)).all())
    assert torch.allclose(q[:, :4].norm(dim=-1), torch.ones(len(q), dtype=q.dtype), atol=1e-9)
