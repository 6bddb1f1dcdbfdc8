"""'Use identified robot' simulates the identified robot: the Robot workspace's load job reads the
actuation file beside the robot file (app/workspaces/robot/robot_jobs.py actuation_terms) and the
simulation applies it (engine/robots/simulate.py JointTerms; its physics is checked against a
closed-form pendulum in tests/engine/robots/test_simulate_friction.py)."""

from __future__ import annotations

import numpy as np

from app.workspaces.robot.robot_jobs import actuation_terms, simulate_job
from engine.models.robot_source import write_actuation
from engine.robots.model import RobotModel
from engine.robots.simulate import SimulationOptions

URDF = """<robot name="pendulum">
  <link name="base"/>
  <link name="rod"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/></joint>
</robot>"""


class _Ctx:
    def progress(self, *a):
        pass

    def check_cancelled(self):
        pass


def test_the_actuation_file_beside_an_identified_urdf_is_simulated(tmp_path):
    path = tmp_path / "rigid_body.urdf"
    path.write_text(URDF)
    model = RobotModel.from_file(str(path))
    notes: list[str] = []
    assert actuation_terms(model, path, notes) is None and notes == []       # no file: the URDF's own
    write_actuation(tmp_path / "rigid_body.actuation.json", ["hinge"],
                    {"damping": [0.4], "coulomb": [0.1], "armature": [0.01], "offset": [0.02]}, 0.03)
    terms = actuation_terms(model, path, notes)
    assert (terms.damping, terms.coulomb, terms.armature, terms.offset, terms.velocity_scale) == (
        (0.4,), (0.1,), (0.01,), (0.02,), 0.03)
    assert "rigid_body.actuation.json" in notes[-1]
    opts = SimulationOptions(duration=1.0, dt=2e-3, frame_rate=50.0)
    plain = simulate_job(model, np.array([0.5]), np.zeros(1), opts)(_Ctx())
    identified = simulate_job(model, np.array([0.5]), np.zeros(1), opts, joint_terms=terms)(_Ctx())
    # friction takes energy out: the identified robot swings less far back than the frictionless one
    assert identified.q[:, 0].min() > plain.q[:, 0].min() + 0.05


def test_a_malformed_actuation_file_is_one_note_and_the_files_own_terms(tmp_path):
    path = tmp_path / "rigid_body.urdf"
    path.write_text(URDF)
    (tmp_path / "rigid_body.actuation.json").write_text("{not json")
    notes: list[str] = []
    assert actuation_terms(RobotModel.from_file(str(path)), path, notes) is None
    assert len(notes) == 1 and "rigid_body.actuation.json" in notes[0] and "\n" not in notes[0]
