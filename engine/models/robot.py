"""The learnable rigid-body robot as a learned dynamics model (``robot-rk4``, ``robot-midpoint``).

A state model like L-NODE, with the networks replaced by a robot description: the acceleration
is the rigid-body forward dynamics (:class:`engine.robots.model.RobotModel`) with per-joint
friction and actuation (:class:`engine.models.joint_friction.JointFriction`)

    qdd = (M(q) + diag(Ia))^-1 (B u - C(q, qd) qd - g(q) - Fv qd - Fc tanh(qd / v_s) - tau0)

(B: the spec's input matrix; without armature, Coulomb friction and offset, Featherstone's ABA
with the damping)
integrated by ``spec.robot_substeps`` explicit steps (RK4 or midpoint) per ``h``, trained on the MSE of the next
state ``(q, qd)``. The learnable parameters are the inertial parameters of every moving link
(the child link of each movable joint; links rigidly attached to it keep their URDF values),
in the robot engine's physically consistent parametrisations (softplus-positive mass, free
CoM, log-Cholesky rotational inertia, softplus-positive damping): ``spec.robot_learn`` says
which kinds (default mass, com, inertia), ``spec.robot_perturb`` how far from the URDF they start
(see :class:`~engine.models.base.ModelSpec`). :meth:`RobotDynamics.mass_matrix` is the learned
``H(q)`` (CRBA).

Which robot: ``spec.robot`` (a library name or a URDF, xacro or MJCF path: any robot's log),
else ``spec.system`` (filled by ``ModelSpec.for_system``), the analytic system, whose URDF
(:data:`SYSTEM_URDFS`, under :func:`engine.paths.urdf_dir`) has the same joint order and
conventions as ``engine.systems``, so the model with its URDF values is the analytic system.
The robot file's damping, friction and armature (and an actuation file beside it, see
:mod:`engine.models.robot_source`) start the joint friction; :meth:`RobotDynamics.inverse_dynamics`
gives the joint torques, for the torque metrics of a comparison.

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

import math
from pathlib import Path

import torch

from engine.data.windows import Windows
from engine.integrators import get_stepper
from engine.models.base import LearnedDynamics, ModelSpec
from engine.models.joint_friction import FRICTION_KINDS, JointFriction
from engine.models.robot_source import load_rigid_body
from engine.paths import urdf_dir
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
            "the robot model needs a robot: name it (--robot: a library name, or a URDF, xacro or "
            "MJCF file; the model spec's 'robot'), or build the spec for one of the analytic systems "
            f"{', '.join(SYSTEM_URDFS)}"
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


def _initial_guess(nominal, links: list[str], kinds: tuple, perturb: float, damping: list[float]):
    """``nominal`` with the learned ``kinds`` of ``links`` scaled by ``U[1 - perturb, 1 + perturb]``,
    and the joint damping ``damping`` (n,) so perturbed when learned (torch's global RNG: one draw
    block (links, 6) whatever the kinds, so a seed gives the same mass factors with or without,
    say, damping learned). Returns the model and the damping start (n,)."""
    damping = list(damping)
    if perturb == 0:
        return nominal, damping
    f = 1.0 + (2.0 * torch.rand(len(links), 6, dtype=torch.float64) - 1.0) * perturb
    joint_of = {j.child: j.name for j in nominal.description.joints}
    kw: dict[str, dict] = {}
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
            for i, l in enumerate(links):
                if joint_of.get(l) in nominal.joint_names:
                    j = nominal.joint_names.index(joint_of[l])
                    damping[j] = max(damping[j] * float(f[i, 5]), DAMPING_START)
    return nominal.with_link_params(**kw), damping


class RobotDynamics(LearnedDynamics):
    """``xd = (qd, qdd)`` of the robot's rigid body with joint friction (module doc), learnable.

    ``robot``: the rigid-body :class:`~engine.robots.model.RobotModel` (its ``learnable`` modules
    are parameters of this model), ``friction``: the :class:`JointFriction` of its joints,
    ``links``: the moving links whose inertial parameters are learned.
    """

    kind = "state"

    def __init__(self, spec: ModelSpec, integrator: str = "rk4", dtype: torch.dtype = torch.float64):
        super().__init__(spec)
        self.integrator = integrator
        self._stepper = get_stepper(integrator)
        path: Path | str = spec.robot if spec.robot is not None else urdf_for_system(spec.system)
        start = load_rigid_body(path, dtype=dtype)
        nominal = start.model
        _check_matches(nominal, spec, Path(start.path))
        self.links = moving_links(nominal)[0]
        inertial_kinds = tuple(k for k in spec.robot_learn if k in ("mass", "com", "inertia"))
        if not self.links and inertial_kinds:
            raise ValueError(f"{start.path}: no moving link has an <inertial>; there is nothing to learn")
        self.robot, damping = _initial_guess(nominal, self.links, spec.robot_learn, spec.robot_perturb,
                                             start.friction["damping"])
        for link in self.links:
            for kind in inertial_kinds:
                self.robot.make_learnable(link, kind)
        self.friction = JointFriction(
            nominal.dof, {**start.friction, "damping": damping},
            learn=[k for k in spec.robot_learn if k in FRICTION_KINDS],
            velocity_scale=start.velocity_scale, dtype=dtype)
        self.B = self.B.to(dtype)

    def _acceleration(self, q: torch.Tensor, qd: torch.Tensor, force: torch.Tensor) -> torch.Tensor:
        # (M + Ia) qdd = force - h - tau_friction: the compiled ABA with the learned armature on M's diagonal
        # (its backward gives the armature's gradient, -lambda qdd; one O(n) forward and reverse pass), composite
        # where the kernels cannot take it (see RobotModel.forward_dynamics); no armature: plain ABA
        f = self.friction
        armature = f.value("armature")
        extra = armature.to(q.dtype) if "armature" in f.learned or bool(armature.any()) else None
        return self.robot.forward_dynamics(q, qd, force - f.dissipative_torque(qd), armature=extra)

    def vector_field(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``(qd, qdd)`` (..., 2n) for states ``x`` (..., 2n) and controls ``u`` (..., m)."""
        q, qd = x[..., : self.n], x[..., self.n:]
        qdd = self._acceleration(q, qd, self.force(u))
        return torch.cat([qd, qdd.to(x.dtype)], -1)

    def step(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        k = int(self.spec.robot_substeps)
        for _ in range(k):
            x = self._stepper(self.vector_field, x, u, self.h / k)
        return x

    def loss(self, w: Windows) -> torch.Tensor:
        with self.robot.inertials_held():       # the learnable inertials once per step, not per stage
            return ((self.step(w.x, w.u) - w.x_next) ** 2).mean()

    def inverse_dynamics(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
        """Generalised joint forces ``M qdd + C qd + g + tau_joint(qd, qdd)`` (..., n), N m, for
        ``q``, ``qd``, ``qdd`` (..., n) (the controls are ``B^+`` of it)."""
        tau = self.robot.inverse_dynamics(q, qd, qdd)
        return (tau + self.friction.torque(qd, qdd)).to(q.dtype)

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        """The learned inertia matrix ``H(q)`` (..., n, n) (CRBA, armature on the diagonal)."""
        M = self.robot.mass_matrix(q)
        return (M + torch.diag_embed(self.friction.value("armature").to(M.dtype).expand(M.shape[:-1]))).to(
            q.dtype)

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        """The learned gravitational potential ``V(q)`` (...), J (zero at the world origin)."""
        return self.robot.potential_energy(q).to(q.dtype)

    def link_parameters(self) -> dict[str, dict]:
        """Current (learned) values of every moving link: ``{link: {"mass": kg, "com": [m] * 3,
        "inertia": 3x3 kg m^2 about the CoM, "damping": N m s/rad of its joint}}`` (plain floats)."""
        joint_of = {j.child: j.name for j in self.robot.description.joints}
        damping = self.friction.values()["damping"]
        names = list(self.robot.joint_names)
        with torch.no_grad():
            return {l: {"mass": float(self.robot.link_mass(l)), "com": self.robot.link_com(l).tolist(),
                        "inertia": self.robot.link_inertia(l).tolist(),
                        "damping": damping[names.index(joint_of[l])] if joint_of.get(l) in names else 0.0}
                    for l in self.links}

    def migrate_state(self, state: dict) -> dict:
        """A state dict of the layout before :class:`JointFriction` (the learned damping one
        softplus scalar per moving link, ``robot.learnable.damping_<link index>.raw``, N m s/rad;
        no Coulomb friction, armature or offset) in this model's layout: the same damping, the other
        joint terms zero (as that model had none). Any other state is returned as it is."""
        prefix = "robot.learnable.damping_"
        old = {k: v for k, v in state.items() if k.startswith(prefix) and k.endswith(".raw")}
        if not old:
            return state
        if "damping" not in self.friction.learned:
            raise ValueError("the checkpoint learned the joint damping (old layout) but its robot_learn does not "
                             "name damping")
        new = {k: v for k, v in self.state_dict().items()}
        new.update({k: v for k, v in state.items() if k not in old})
        joint_of = {j.child: j.name for j in self.robot.description.joints}
        names = list(self.robot.joint_names)
        damping = self.friction.value("damping").detach().clone()
        for link in self.links:
            key = f"{prefix}{self.robot._link_idx(link)}.raw"
            if key in old and joint_of.get(link) in names:
                damping[names.index(joint_of[link])] = torch.nn.functional.softplus(old[key].to(damping.dtype))
        scale = new["friction._damping_scale"].to(damping.dtype)
        y = (damping * math.log(2.0) / scale).clamp_min(1e-12)     # softplus(raw) = y
        new["friction._damping_raw"] = torch.where(y > 30, y, y + torch.log(-torch.expm1(-y)))
        for kind in ("coulomb", "armature", "offset"):
            if f"friction._{kind}" in new:
                new[f"friction._{kind}"] = torch.zeros_like(new[f"friction._{kind}"])
        return new

    def joint_parameters(self) -> dict[str, dict[str, float]]:
        """Current friction and actuation of every joint: ``{joint: {"damping": N m s/rad,
        "coulomb": N m, "armature": kg m^2, "offset": N m}}``."""
        vals = self.friction.values()
        return {name: {k: vals[k][i] for k in FRICTION_KINDS} for i, name in enumerate(self.robot.joint_names)}
