"""The learnable rigid-body robot as a learned dynamics model (``robot-rk4``, ``robot-midpoint``).

A state model like L-NODE, with the networks replaced by the system's URDF: the acceleration
is the rigid-body forward dynamics (Featherstone's ABA, :class:`engine.robots.model.RobotModel`)

    qdd = ABA(q, qd, B u - D qd)        (B: the spec's input matrix; D: the joint damping)

integrated by an explicit step (RK4 or midpoint) of size ``h``, trained on the MSE of the next
state ``(q, qd)``. The learnable parameters are the inertial parameters of every moving link
(the child link of each movable joint; links rigidly attached to it keep their URDF values),
in the robot engine's physically consistent parametrisations (softplus-positive mass, free
CoM, log-Cholesky rotational inertia, softplus-positive damping): ``spec.robot_learn`` says
which kinds (default mass, com, inertia), ``spec.robot_perturb`` how far from the URDF they start
(see :class:`~engine.models.base.ModelSpec`). :meth:`RobotDynamics.mass_matrix` is the learned
``H(q)`` (CRBA).

Which URDF: ``spec.system`` (filled by ``ModelSpec.for_system``) names the analytic system; its
URDF (:data:`SYSTEM_URDFS`, under :func:`engine.paths.urdf_dir`) has the same joint order and
conventions as ``engine.systems``, so the model with its URDF values is the analytic system.

Precision: the model runs in float64, the rigid-body engine's default (it is checked against
Pinocchio in float64). The trainer and the metrics take the dtype of the model's first
parameter, so windows, training and evaluation are float64 end to end; a float32 model is
``model.float()`` (the robot's buffers and parameters follow), with little speed gained: the
cost of these small systems is the number of operations, not their width.

Not identifiable from trajectories (and left where they start, or moved only in combination):
parameters that do not act on the motion (a translating cart's CoM and inertia; a rod's
inertia about its own axis) and the split of what acts only in combination (the pendulum's
mass, CoM and inertia enter only as ``m c`` and ``m c^2 + I_yy``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from engine.data.windows import Windows
from engine.integrators import get_stepper
from engine.models.base import LearnedDynamics, ModelSpec
from engine.paths import urdf_dir
from engine.robots.model import RobotModel
from engine.robots.parametrizations import moving_links

__all__ = ["DAMPING_START", "SYSTEM_URDFS", "RobotDynamics", "urdf_for_system"]

# analytic system (engine.systems name) -> its URDF under urdf_dir()
SYSTEM_URDFS = {"pendulum": "pendulum.urdf", "cartpole": "cartpole.urdf", "acrobot": "acrobot.urdf"}

# a learned damping whose perturbed start would be 0 (undamped URDF) starts here instead (N m s/rad):
# at 0 the softplus is flat and Adam could not move it
DAMPING_START = 1e-3


def urdf_for_system(system: str | None) -> Path:
    """The URDF file of an analytic system; ``ValueError`` saying why there is none."""
    if system is None:
        raise ValueError(
            "the robot model needs the analytic system whose URDF it learns (the model spec's "
            "system), and this model spec names none (a spec made by hand or for a hardware log); "
            f"build the spec for one of the systems {', '.join(SYSTEM_URDFS)}"
        )
    try:
        name = SYSTEM_URDFS[system]
    except KeyError:
        raise ValueError(f"the robot model has no URDF for system {system!r}; systems with one: "
                         f"{', '.join(SYSTEM_URDFS)} (engine/models/robot.py SYSTEM_URDFS)") from None
    path = urdf_dir() / name
    if not path.is_file():
        raise ValueError(f"the robot model of system {system!r} needs {path}, which does not exist; "
                         "add the system's URDF there")
    return path


def _check_matches(robot, spec: ModelSpec, path: Path) -> None:
    if robot.dof != spec.dof:
        raise ValueError(
            f"{path}: the robot has {robot.dof} movable joints, the model spec {spec.dof} coordinates"
        )
    for i, name in enumerate(robot.joint_names):
        if robot.description.joint(name).type == "prismatic" and spec.angle_mask[i]:
            raise ValueError(
                f"{path}: joint {name!r} (coordinate {i}) is prismatic but the spec says it is an angle"
            )


def _initial_guess(nominal, links: list[str], kinds: tuple, perturb: float):
    """``nominal`` with the learned ``kinds`` of ``links`` scaled by ``U[1 - perturb, 1 + perturb]``
    (torch's global RNG: one draw block (links, 6) whatever the kinds, so a seed gives the same mass
    factors with or without, say, damping learned)."""
    if perturb == 0:
        return nominal
    f = 1.0 + (2.0 * torch.rand(len(links), 6, dtype=torch.float64) - 1.0) * perturb
    joint_of = {j.child: j.name for j in nominal.description.joints}
    kw = {}
    with torch.no_grad():
        if "mass" in kinds:
            kw["mass"] = {l: float(nominal.link_mass(l)) * float(f[i, 0]) for i, l in enumerate(links)}
        if "com" in kinds:
            kw["com"] = {
                l: nominal.link_com(l).detach().double().cpu() * f[i, 1:4] for i, l in enumerate(links)
            }
        if "inertia" in kinds:
            kw["inertia"] = {
                l: nominal.link_inertia(l).detach().double().cpu() * f[i, 4] for i, l in enumerate(links)
            }
        if "damping" in kinds:
            d = nominal.joint_damping().detach()
            kw["damping"] = {
                joint_of[l]: max(
                    float(d[nominal.joint_names.index(joint_of[l])]) * float(f[i, 5]), DAMPING_START
                )
                for i, l in enumerate(links)
            }
    return nominal.with_link_params(**kw)


class RobotDynamics(LearnedDynamics):
    """``xd = (qd, ABA(q, qd, B u))`` of the system's URDF with learnable inertial parameters.

    ``robot``: the :class:`~engine.robots.model.RobotModel` (its ``learnable`` modules are this
    model's parameters); ``links``: the moving links whose parameters are learned.
    """

    kind = "state"

    def __init__(self, spec: ModelSpec, integrator: str = "rk4", dtype: torch.dtype = torch.float64):
        super().__init__(spec)
        self.integrator = integrator
        self._stepper = get_stepper(integrator)
        path = urdf_for_system(spec.system)
        nominal = RobotModel.from_urdf(path, dtype=dtype)
        _check_matches(nominal, spec, path)
        self.links = moving_links(nominal)[0]
        if not self.links:
            raise ValueError(f"{path}: no moving link has an <inertial>; there is nothing to learn")
        self.robot = _initial_guess(nominal, self.links, spec.robot_learn, spec.robot_perturb)
        for link in self.links:
            for kind in spec.robot_learn:
                self.robot.make_learnable(link, kind)
        self.B = self.B.to(dtype)

    def vector_field(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``(qd, qdd)`` (..., 2n) for states ``x`` (..., 2n) and controls ``u`` (..., m)."""
        q, qd = x[..., : self.n], x[..., self.n:]
        qdd = self.robot.forward_dynamics(q, qd, self.force(u), damping=True)
        return torch.cat([qd, qdd.to(x.dtype)], -1)

    def step(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return self._stepper(self.vector_field, x, u, self.h)

    def loss(self, w: Windows) -> torch.Tensor:
        return ((self.step(w.x, w.u) - w.x_next) ** 2).mean()

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        """The learned inertia matrix ``H(q)`` (..., n, n)."""
        return self.robot.mass_matrix(q).to(q.dtype)

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        """The learned gravitational potential ``V(q)`` (...), J (zero at the world origin)."""
        return self.robot.potential_energy(q).to(q.dtype)

    def link_parameters(self) -> dict[str, dict]:
        """Current (learned) values of every moving link: ``{link: {"mass": kg, "com": [m] * 3,
        "inertia": 3x3 kg m^2 about the CoM, "damping": N m s/rad of its joint}}`` (plain floats)."""
        joint_of = {j.child: j.name for j in self.robot.description.joints}
        with torch.no_grad():
            damping = self.robot.joint_damping()
            return {l: {"mass": float(self.robot.link_mass(l)), "com": self.robot.link_com(l).tolist(),
                        "inertia": self.robot.link_inertia(l).tolist(),
                        "damping": float(damping[self.robot.joint_names.index(joint_of[l])])}
                    for l in self.links}
