"""The shipped MuJoCo robot log (resources/logs/panda_friction.*): the files are what the generator
writes, and the truth its README states is the generator's (read back from the text, not from the
code that wrote it)."""

from __future__ import annotations

import json
import re

import numpy as np

from engine.data.example_logs import EXAMPLES, write_example
from engine.data.mujoco_logs import PANDA_JOINTS, PANDA_LINKS, PandaFrictionLogConfig, panda_friction_log
from engine.logs import LogMapping, read_log
from engine.paths import resource


def test_shipped_panda_friction_files_are_what_the_generator_writes(tmp_path):
    assert "panda_friction" in EXAMPLES
    write_example(panda_friction_log(), tmp_path)
    for suffix in (".README.md", ".mapping.json", ".params.json"):
        shipped = resource("logs", f"panda_friction{suffix}").read_text()
        assert shipped == (tmp_path / f"panda_friction{suffix}").read_text(), suffix
    shipped, fresh = read_log(resource("logs", "panda_friction.csv")), read_log(tmp_path / "panda_friction.csv")
    assert shipped.columns == fresh.columns and shipped.n_rows == fresh.n_rows == 4001
    for name in shipped.columns:   # MuJoCo's last bits may differ between machines: one printed digit
        np.testing.assert_allclose(shipped.column(name), fresh.column(name), rtol=0, atol=2e-3, err_msg=name)
    assert resource("logs", "panda_friction.csv").stat().st_size < 1_000_000


def _table(readme: str, header: str) -> dict[str, list[float]]:
    block = readme.split(header, 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in block.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = [float(c) for c in cells[1:]]
    return rows


def test_readme_truth_matches_the_generator_parameters():
    cfg = PandaFrictionLogConfig()
    readme = resource("logs", "panda_friction.README.md").read_text()
    joints = _table(readme, "| joint | damping")
    assert list(joints) == list(PANDA_JOINTS)
    for i, name in enumerate(PANDA_JOINTS):
        assert joints[name] == [cfg.damping[i], cfg.coulomb[i], cfg.armature[i]]
    links = _table(readme, "| link | URDF mass")
    assert list(links) == list(PANDA_LINKS)
    from engine.robots import RobotModel

    urdf = RobotModel.from_urdf(_panda_urdf())
    for i, link in enumerate(PANDA_LINKS):
        nominal, factor, mass = links[link]
        assert abs(nominal - float(urdf.link_mass(link))) < 1e-6
        assert factor == cfg.mass_factor[i]
        assert abs(mass - nominal * factor) < 1e-5
    params = json.loads(resource("logs", "panda_friction.params.json").read_text())
    assert params["damping"] == list(cfg.damping) and params["coulomb"] == list(cfg.coulomb)
    assert params["armature"] == list(cfg.armature)
    assert f"seed {cfg.seed}" in readme and re.search(rf"\| `duration` \| {cfg.duration} \|", readme)


def _panda_urdf():
    from engine.paths import urdf_dir

    return urdf_dir() / "panda.urdf"


def test_the_log_obeys_its_friction_truth_where_the_arm_moves():
    """Independent of the engine's identification: MuJoCo itself, told the truth, reproduces the
    logged torques from the logged (noisy) states within a few noise levels, and without the
    friction and armature it does not."""
    import mujoco
    from scipy.signal import savgol_filter

    cfg = PandaFrictionLogConfig()
    table = read_log(resource("logs", "panda_friction.csv"))
    mapping = LogMapping.load(resource("logs", "panda_friction.mapping.json"))
    q = np.column_stack([table.column(c) for c in mapping.q])
    tau = np.column_stack([table.column(c) for c in mapping.u])
    m = mujoco.MjModel.from_xml_path(str(_panda_urdf()))
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    for link, k in zip(PANDA_LINKS, cfg.mass_factor):
        m.body_mass[m.body(link).id] *= k
    dofs = [m.joint(j).dofadr[0] for j in PANDA_JOINTS]
    h = 1.0 / cfg.rate
    # velocity and acceleration of q by a Savitzky-Golay filter (scipy), away from the ends
    q_s, qd, qdd = (savgol_filter(q, 31, 5, deriv=k, delta=h, axis=0) for k in (0, 1, 2))
    moving = np.all(np.abs(qd) > 0.2, axis=1)
    moving[:40] = moving[-40:] = False

    def residual(with_friction: bool) -> float:
        m.dof_damping[dofs] = cfg.damping if with_friction else 0.0
        m.dof_armature[dofs] = cfg.armature if with_friction else 0.0
        d = mujoco.MjData(m)
        err = []
        for k in np.flatnonzero(moving)[::10]:
            d.qpos[dofs], d.qvel[dofs], d.qacc[dofs] = q_s[k], qd[k], qdd[k]
            mujoco.mj_inverse(m, d)
            coulomb = np.asarray(cfg.coulomb) * np.sign(qd[k]) if with_friction else 0.0
            err.append(d.qfrc_inverse[dofs] + coulomb - tau[k])
        return float(np.sqrt(np.mean(np.square(err))))

    with_truth, without = residual(True), residual(False)
    assert with_truth < 3 * max(cfg.torque_noise) and with_truth < 0.2 * without
