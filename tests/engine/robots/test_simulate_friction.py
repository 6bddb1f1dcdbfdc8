"""The simulation applies the joints' friction and actuation (engine/robots/simulate.py JointTerms):
the robot file's Coulomb friction and an identified robot's actuation file (damping, Coulomb
``Fc tanh(qd / v_s)``, armature, offset), the model identification fits.

References: a single pendulum's equation of motion written here in closed form and integrated by
scipy (DOP853, tight tolerances), and the dry-friction oscillator's closed form: each half swing
of small amplitude loses ``2 Fc / k`` (k = m g l), the amplitude falling linearly, not
geometrically as with viscous damping.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from engine.robots.model import RobotModel
from engine.robots.simulate import COULOMB_VELOCITY_SCALE, JointTerms, SimulationOptions, simulate

M, L, IYY, G = 1.0, 0.5, 1e-3, 9.81
I_PIVOT = M * L * L + IYY                 # kg m^2 about the hinge


def _pendulum(tmp_path, friction=0.0, damping=0.0):
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(f"""<robot name="pendulum">
  <link name="base"/>
  <link name="rod"><inertial><origin xyz="0 0 {-L}"/><mass value="{M}"/>
    <inertia ixx="{IYY}" iyy="{IYY}" izz="{IYY}" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/>
    <dynamics damping="{damping}" friction="{friction}"/></joint>
</robot>""")
    return RobotModel.from_file(str(urdf))


def _reference(theta0, t, damping=0.0, coulomb=0.0, armature=0.0, offset=0.0, v_s=COULOMB_VELOCITY_SCALE):
    """theta(t) of (I + Ia) theta'' = -m g l sin(theta) - d theta' - Fc tanh(theta' / v_s) - tau0."""
    def f(_, y):
        th, om = y
        acc = -M * G * L * np.sin(th) - damping * om - coulomb * np.tanh(om / v_s) - offset
        return [om, acc / (I_PIVOT + armature)]

    sol = solve_ivp(f, (0.0, t[-1]), [theta0, 0.0], t_eval=t, method="DOP853", rtol=1e-11, atol=1e-12)
    return sol.y[0]


def test_the_velocity_scale_is_the_identifications():
    from engine.models.joint_friction import COULOMB_VELOCITY_SCALE as IDENTIFIED

    assert COULOMB_VELOCITY_SCALE == IDENTIFIED


def test_the_files_coulomb_friction_is_applied_and_decays_as_dry_friction(tmp_path):
    fc = 0.1
    model = _pendulum(tmp_path, friction=fc)
    assert JointTerms.of_model(model).coulomb == (fc,)
    opts = SimulationOptions(duration=3.0, dt=1e-3, frame_rate=1000.0)
    res = simulate(model, [0.2], options=opts)
    theta = res.q[:, 0]
    np.testing.assert_allclose(theta, _reference(0.2, res.t, coulomb=fc), atol=2e-6)
    # the closed form: each half swing loses 2 Fc / (m g l); the amplitudes fall by equal steps
    turns = [i for i in range(1, len(theta) - 1) if abs(theta[i]) >= abs(theta[i - 1]) and abs(theta[i]) > abs(
        theta[i + 1]) and abs(theta[i]) > 0.05]
    amps = np.abs(theta[[0] + turns])
    drops = -np.diff(amps)
    assert len(drops) >= 3
    np.testing.assert_allclose(drops, 2 * fc / (M * G * L), rtol=0.08)
    # without the friction (options.damping off) nothing is lost
    free = simulate(model, [0.2], options=SimulationOptions(duration=3.0, dt=1e-3, frame_rate=1000.0, damping=False))
    assert np.abs(free.q[:, 0]).max() == pytest.approx(0.2, abs=1e-6)


def test_an_actuation_file_is_simulated_as_identified(tmp_path):
    """Damping, Coulomb, an armature and an offset from an actuation file (as read_actuation gives
    them) replace the file's; v_s is the file's."""
    from engine.models.robot_source import read_actuation, write_actuation

    model = _pendulum(tmp_path, friction=0.5, damping=0.5)      # the file's, replaced below
    vals = {"damping": [0.05], "coulomb": [0.08], "armature": [0.02], "offset": [0.03]}
    path = write_actuation(tmp_path / "pendulum.actuation.json", ["hinge"], vals, 0.02)
    joints, v_s = read_actuation(path, ["hinge"])
    terms = JointTerms.with_actuation(model, joints, v_s)
    opts = SimulationOptions(duration=2.0, dt=1e-3, frame_rate=200.0)
    res = simulate(model, [0.4], options=opts, joint_terms=terms)
    want = _reference(0.4, res.t, damping=0.05, coulomb=0.08, armature=0.02, offset=0.03, v_s=0.02)
    np.testing.assert_allclose(res.q[:, 0], want, atol=2e-6)
    # the offset moves the rest position: m g l sin(theta*) = -tau0
    still = simulate(model, [0.0], options=SimulationOptions(duration=20.0, dt=2e-3, frame_rate=10.0),
                     joint_terms=JointTerms.with_actuation(model, {"hinge": {"damping": 1.0, "coulomb": 0.0,
                                                                            "offset": 0.03}}))
    assert still.q[-1, 0] == pytest.approx(np.arcsin(-0.03 / (M * G * L)), abs=1e-6)


def test_robot_simulate_on_the_command_line_uses_the_actuation_file_beside_the_robot(tmp_path, capsys):
    """`robot simulate FILE` simulates an identified robot as identified: with an actuation file
    beside it the swing loses energy (and the JSON names the file); --no-damping leaves it out."""
    import json

    from engine.cli import main
    from engine.models.robot_source import write_actuation

    path = tmp_path / "rigid_body.urdf"
    path.write_text("""<robot name="pendulum"><link name="base"/>
      <link name="rod"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
        <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/></joint>
    </robot>""")

    def swing(*flags):
        assert main(["robot", "simulate", str(path), "--q0", "0.5", "--duration", "1.0", "--json", *flags]) == 0
        out = json.loads(capsys.readouterr().out)
        return min(row[0] for row in out["q"]), out["notes"]

    plain, notes = swing()
    assert notes == []
    write_actuation(tmp_path / "rigid_body.actuation.json", ["hinge"],
                    {"damping": [0.4], "coulomb": [0.1], "armature": [0.0], "offset": [0.0]}, 0.03)
    identified, notes = swing()
    assert identified > plain + 0.05 and "rigid_body.actuation.json" in notes[0]
    assert swing("--no-damping") == (plain, [])
