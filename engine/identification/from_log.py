"""System identification of a robot from a joint log, compared with a black box and the URDF.

:func:`identify_from_log` (job form :func:`log_identification_job`) takes a prepared joint log
(:class:`engine.logs.PreparedLog`: ``q``, ``qd``, ``qdd`` on a uniform grid, ``u`` = the
measured joint torques, a train / validation split) and a nominal :class:`RobotModel`
(usually the URDF), and

1. estimates the log's torque noise per joint from the data alone: the residual of a
   Savitzky-Golay fit of each torque, divided by ``sqrt(1 - c0)`` (``c0`` the filter's centre
   coefficient: for white noise of standard deviation ``sigma`` the residual's is
   ``sigma sqrt(1 - c0)``; the smooth motion itself passes the filter);
2. splits the nominal model into its rigid body and its per-joint friction and actuation
   (:func:`engine.models.robot_source.split_rigid_body`): the torque model is
   ``tau = RNEA(q, qd, qdd) + Fv qd + Fc tanh(qd / v_s) + Ia qdd + tau0``
   (:class:`engine.models.joint_friction.JointFriction`; ``v_s`` the config's
   ``coulomb_velocity_scale``), linear in the masses (or the ten inertial parameters of each
   link) and the joint terms;
3. ``method="closed_form"`` (the default; :mod:`engine.identification.closed_form`): stacks the
   regressor of every training sample (joint ``i``'s rows left out where ``|qd_i| < min_speed``,
   where a dry friction sticks), weights each joint by its noise, finds the base parameters by a
   QR with column pivoting (parameters with no effect keep their nominal values; those
   identifiable only in combination are flagged and the combinations reported in plain words,
   ``base_parameters``, with their standard deviations), solves the weighted least squares and
   keeps the result physical (masses > 0, damping, Coulomb friction, armature >= 0, PSD
   pseudo-inertias), nearest the URDF along what the data do not see. The Panda's link-1 mass,
   whose centre of mass lies on the joint-1 axis, acts on no torque and is reported so;
4. ``method="gradient"``: the structural identifiability from the regressor
   (:func:`engine.identification.synthetic.identifiability`), the joint terms started from a
   per-joint non-negative least squares
   (:func:`engine.identification.joint_terms.joint_terms_start`), then L-BFGS on a learnable copy
   of the rigid body (masses preconditioned by their sensitivity, :class:`PreconditionedMass`)
   and the joint terms (softplus: non-negative), the same noise-weighted loss, a small ridge
   towards the nominal values on the parameters identifiable only in combination;
5. trains a black-box MLP ``(q, qd, qdd) -> tau`` on the same training samples;
6. reports the validation torque RMSE (N m) of the learned model, of the nominal model (its
   URDF damping, friction and armature included) and of the black box, with the noise level.

The result's ``model`` is the identified robot as a :class:`RobotModel` with the damping,
Coulomb friction (``Joint.friction``) and armature baked into its joints (what
:func:`engine.robots.urdf_export.save_urdf` writes as ``<dynamics damping friction armature>``);
``joint_values`` and ``velocity_scale`` are what
:func:`engine.models.robot_source.write_actuation` writes beside it (the offsets and ``v_s``,
which URDF cannot hold).

Accelerations come from the log preparation: for a log with ``q`` alone (or noisy ``qd``)
prepare it with :func:`robot_prepare_config` (Savitzky-Golay derivatives of ``q``, a window
long enough for low-bias accelerations).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from engine.identification.closed_form import closed_form_fit, closed_form_unsupported
from engine.identification.joint_terms import JOINT_KINDS, joint_columns, joint_terms_start
from engine.identification.synthetic import (
    ParameterLookup,
    PreconditionedMass,
    SineMotion,
    checked_links,
    identifiability,
    regressor,
)
from engine.jobs import JobContext, NullJobContext
from engine.logs.torques import robot_prepare_config, sliding_rmse, torque_noise_level, torque_scale_warning
from engine.models.joint_friction import COULOMB_VELOCITY_SCALE, JointFriction
from engine.models.nets import MLP
from engine.models.robot_source import split_rigid_body

if TYPE_CHECKING:
    from engine.robots.model import RobotModel

__all__ = [
    "LEARNABLE_KINDS",
    "LogIdentificationConfig",
    "LogIdentificationResult",
    "LogParameter",
    "identify_from_log",
    "log_identification_job",
    "robot_prepare_config",
    "torque_noise_level",
]

LEARNABLE_KINDS = ("mass", "damping", "com", "inertia", "coulomb", "armature", "offset")
LINK_KINDS = ("mass", "com", "inertia")
# weight of the ridge on the relative change of the parameters identifiable only in combination
# (a mass's relative change; a joint term's raw parameter, about its log change): the data term,
# normalised by the noise, is about 1 at the optimum and far stiffer along identifiable directions
RIDGE = 1e-3
# rad/s: the Coulomb velocity scales fit_velocity_scale tries (with the configured one)
VELOCITY_SCALES = (0.005, 0.01, 0.02, 0.035, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class LogIdentificationConfig:
    """Settings of :func:`identify_from_log` (one source of truth for the CLI and the GUI).

    robot: library name or URDF path of the nominal model (used by the CLI and the GUI to
    load it). learn: the parameter kinds to fit, a subset of :data:`LEARNABLE_KINDS`: on each
    link mass, com, inertia; on every joint damping, coulomb, armature, offset. links: the links
    whose inertial parameters are fitted (default: the child link of every movable joint).
    coulomb_velocity_scale: ``v_s`` of the smooth Coulomb sign (rad/s, see
    :mod:`engine.models.joint_friction`).
    trim: samples dropped at each end of the log (filter edge effects). weighting:
    ``"noise"`` (each joint's error divided by its estimated noise: weighted least squares)
    or ``"variance"`` (divided by its torque standard deviation, the paper's normalised MSE).
    method: ``"closed_form"`` (weighted least squares on the base parameters, every training
    sample) or ``"gradient"`` (L-BFGS; module doc). min_speed: rad/s, the closed form leaves out
    joint ``i``'s rows where ``|qd_i|`` is below it. fit_velocity_scale: the closed form chooses
    ``v_s`` among :data:`VELOCITY_SCALES` and the configured one by the error on every training
    sample (the result's ``velocity_scale``; a lower ``v_s`` makes the friction stiffer at rest
    for rollouts).
    epochs: L-BFGS outer steps (20 inner iterations each). max_train_samples: training samples
    used by the gradient fit (evenly spaced; all when fewer). identifiability_tol: see
    :func:`engine.identification.synthetic.identifiability`. noise_window, noise_polyorder: the
    Savitzky-Golay filter of the noise estimate. blackbox_*: the MLP's width, depth,
    full-batch Adam steps and learning rate (0 steps: no black box). seed: the MLP's
    initialisation.
    """

    robot: str = "panda"
    learn: tuple[str, ...] = ("mass",)
    links: tuple[str, ...] | None = None
    trim: int = 20
    weighting: str = "noise"
    epochs: int = 30
    max_train_samples: int = 4000
    identifiability_tol: float = 3e-4
    noise_window: int = 21
    noise_polyorder: int = 5
    blackbox_hidden: int = 64
    blackbox_layers: int = 2
    blackbox_steps: int = 1500
    blackbox_lr: float = 3e-3
    seed: int = 0
    device: str = "cpu"     # where the robot model is loaded and fitted (cpu, cuda, auto; float64 everywhere)
    coulomb_velocity_scale: float = COULOMB_VELOCITY_SCALE   # rad/s, v_s of tanh(qd / v_s)
    method: str = "closed_form"   # closed_form (weighted least squares, base parameters) or gradient (L-BFGS)
    min_speed: float = 0.1   # rad/s: closed form, joint i's rows with |qd_i| below it left out (dry friction sticks)
    fit_velocity_scale: bool = False   # closed form: choose v_s from VELOCITY_SCALES by the training fit

    def validate(self) -> None:
        if not self.learn:
            raise ValueError("learn: name at least one parameter kind")
        for k in self.learn:
            if k not in LEARNABLE_KINDS:
                raise ValueError(f"learn: unknown parameter kind {k!r}; expected some of {LEARNABLE_KINDS}")
        if self.method not in ("closed_form", "gradient"):
            raise ValueError(f"method must be 'closed_form' or 'gradient', got {self.method!r}")
        if self.weighting not in ("noise", "variance"):
            raise ValueError(f"weighting must be 'noise' or 'variance', got {self.weighting!r}")
        if self.trim < 0 or self.epochs < 0 or self.max_train_samples < 10 or self.blackbox_steps < 0:
            raise ValueError("trim, epochs and blackbox_steps must be >= 0 and max_train_samples >= 10")
        if (
            self.noise_window < 3
            or self.noise_window % 2 == 0
            or not 0 <= self.noise_polyorder < self.noise_window
        ):
            raise ValueError("noise_window must be odd >= 3 and noise_polyorder in [0, noise_window)")
        if not self.min_speed >= 0:
            raise ValueError(f"min_speed must be >= 0 rad/s, got {self.min_speed!r}")
        if not self.coulomb_velocity_scale > 0:
            raise ValueError(f"coulomb_velocity_scale must be > 0 rad/s, got {self.coulomb_velocity_scale!r}")
        if self.blackbox_hidden < 1 or self.blackbox_layers < 1 or self.blackbox_lr <= 0:
            raise ValueError("blackbox_hidden and blackbox_layers must be >= 1 and blackbox_lr > 0")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["learn"] = list(self.learn)
        d["links"] = None if self.links is None else list(self.links)
        return d


@dataclass
class LogParameter:
    """One fitted parameter: ``link``, ``kind`` ("mass" kg, "com" (3,) m, "inertia" (3, 3)
    kg m^2 about the CoM; of the link's parent ``joint``: "damping" N m s/rad, "coulomb" N m,
    "armature" kg m^2, "offset" N m), its ``nominal`` (URDF) and ``identified`` values (floats
    or nested lists), whether the log identifies it and why not. ``joint``: None for link kinds."""

    link: str
    kind: str
    nominal: float | list
    identified: float | list
    identifiable: bool
    reason: str = ""
    joint: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LogIdentificationResult(ParameterLookup):
    """What :func:`identify_from_log` found.

    parameters: one entry per learned parameter. unidentifiable: ``{"link/kind": reason}``.
    torque_rmse_validation / torque_rmse_train: ``{"learned", "nominal", "blackbox"}`` RMSE
    over all joints (N m; blackbox None when not trained); the ``*_per_joint`` forms give
    ``(dof,)`` lists. torque_rmse_validation_sliding: the same over the sliding validation samples
    (joint i's where ``|qd_i| >= 0.1``: :func:`engine.logs.torques.sliding_rmse`). noise_level: the
    estimated torque noise, RMS over joints (N m), and
    per joint. loss_history: the weighted loss per L-BFGS step. samples_train /
    samples_validation: sample counts. seconds: wall time. base_parameters (closed form): the base
    parameters, ``{"expression", "value", "std", "parameters"}`` (see
    :class:`engine.identification.closed_form.ClosedFormResult`). model: the learned
    :class:`RobotModel` (not in :meth:`to_dict`). validation: ``{"t": (M,), "tau": (M, dof),
    "learned", "nominal", "blackbox": (M, dof)}`` arrays for plots (not in :meth:`to_dict`).
    """

    robot: str
    joint_names: list[str]
    parameters: list[LogParameter]
    unidentifiable: dict[str, str]
    torque_rmse_validation: dict[str, float | None]
    torque_rmse_validation_per_joint: dict[str, list[float] | None]
    torque_rmse_train: dict[str, float | None]
    torque_rmse_validation_sliding: dict[str, float | None]
    torque_rmse_validation_sliding_per_joint: dict[str, list[float] | None]
    noise_level: float
    noise_level_per_joint: list[float]
    loss_history: list[float]
    samples_train: int
    samples_validation: int
    seconds: float
    config: dict = field(default_factory=dict)
    joint_values: dict = field(default_factory=dict)
    velocity_scale: float = COULOMB_VELOCITY_SCALE
    warnings: list[str] = field(default_factory=list)
    base_parameters: list[dict] = field(default_factory=list)
    model: RobotModel | None = field(default=None, repr=False)
    validation: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        """JSON-ready summary (no model, no arrays)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("model", "validation")}
        d["parameters"] = [p.to_dict() for p in self.parameters]
        return d


# --------------------------------------------------------------------------- helpers

def _value(x: torch.Tensor):
    x = x.detach().cpu()
    return float(x) if x.ndim == 0 else x.tolist()


def _rmse(pred: torch.Tensor, target: torch.Tensor) -> tuple[float, list[float]]:
    e2 = (pred - target) ** 2
    return float(e2.mean().sqrt()), [float(v) for v in e2.mean(0).sqrt()]


def _current(model, link: str, kind: str) -> torch.Tensor:
    return {"mass": model.link_mass, "com": model.link_com, "inertia": model.link_inertia}[kind](link)


def _extra_columns(model, motion: SineMotion, links, kinds, max_samples: int = 400):
    """Regressor columns (scaled like :func:`regressor`'s) for the centre of mass: the
    central-difference derivative for a 1 cm move along each axis (local)."""
    N = motion.q.shape[0]
    idx = torch.linspace(0, N - 1, min(N, max_samples)).round().long()
    q, qd, qdd = motion.q[idx], motion.qd[idx], motion.qdd[idx]
    scale = motion.tau.std(0).clamp_min(1e-9)
    cols, names = [], []
    with torch.no_grad():
        for l in links:
            if "com" in kinds:
                c0 = model.link_com(l).detach()
                for a in range(3):
                    step = torch.zeros(3, dtype=c0.dtype, device=c0.device)
                    step[a] = 1e-3
                    hi = model.with_link_params(com={l: c0 + step}, check=False).inverse_dynamics(q, qd, qdd)
                    lo = model.with_link_params(com={l: c0 - step}, check=False).inverse_dynamics(q, qd, qdd)
                    cols.append(((hi - lo) / 2e-3 * 0.01 / scale).reshape(-1))
                    names.append((l, "com", a))
    Y = torch.stack(cols, -1).cpu().numpy() if cols else np.zeros((q.numel(), 0))
    return Y, names


def _train_blackbox(x_tr, y_tr, config: LogIdentificationConfig, ctx, progress_span):
    """A tanh MLP ``x -> y`` on standardised inputs and outputs (full-batch Adam, cosine lr);
    returns ``predict(x) -> y``."""
    torch.manual_seed(config.seed)
    xm, xs = x_tr.mean(0), x_tr.std(0).clamp_min(1e-9)
    ym, ys = y_tr.mean(0), y_tr.std(0).clamp_min(1e-9)
    net = MLP(x_tr.shape[1], y_tr.shape[1], config.blackbox_hidden, config.blackbox_layers,
              init="torch").to(device=x_tr.device, dtype=x_tr.dtype)
    opt = torch.optim.Adam(net.parameters(), lr=config.blackbox_lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(config.blackbox_steps, 1))
    xn, yn = (x_tr - xm) / xs, (y_tr - ym) / ys
    a, b = progress_span
    for step in range(config.blackbox_steps):
        if step % 25 == 0:
            ctx.check_cancelled()
        opt.zero_grad()
        loss = ((net(xn) - yn) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
        if step % 50 == 0:
            ctx.progress(
                a + (b - a) * step / config.blackbox_steps,
                f"black box: step {step}/{config.blackbox_steps}",
                {"blackbox_loss": float(loss.detach())},
            )

    def predict(x):
        with torch.no_grad():
            return net((x - xm) / xs) * ys + ym

    return predict


# --------------------------------------------------------------------------- the fit

def _gradient_fit(config, ctx, prepared, rigid, links, kinds, jkinds, labels, nominal_joint, v_s, q, qd, qdd, tau,
                  tr, noise_t, weight):
    """The gradient fit (``method="gradient"``; module doc, steps 2-4): ``(learner, joint, bad,
    history, held)``, the fitted rigid body, its :class:`JointFriction`, the unidentifiable
    parameters, the loss per L-BFGS step and the masses held at their nominal values."""
    dof, dtype, device = rigid.dof, rigid.dtype, rigid.device

    def tensor(a):
        return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)

    # 2. identifiability from the nominal model's regressor on the training motion
    ctx.progress(0.03, "identifiability")
    ctx.check_cancelled()
    motion = SineMotion(tensor(prepared.t)[tr], q[tr], qd[tr], qdd[tr], tau[tr])
    base_kinds = tuple(k for k in ("mass", "inertia") if k in kinds)
    Y0, names0 = (
        regressor(rigid, motion, links, base_kinds) if base_kinds else (np.zeros((min(tr.numel(), 400) * dof, 0)), [])
    )
    Y1, names1 = _extra_columns(rigid, motion, links, kinds)
    sub = torch.linspace(0, tr.numel() - 1, min(tr.numel(), 400), device=device).round().long()
    Y2, names2 = joint_columns(qd[tr][sub], qdd[tr][sub], jkinds, labels, v_s, tau[tr].std(0).clamp_min(1e-9))
    Y = np.concatenate([Y0, Y1, Y2], axis=1)
    names = list(names0) + list(names1) + list(names2)
    bad = identifiability(Y, names, config.identifiability_tol)
    norms = np.linalg.norm(Y, axis=0) if Y.size else np.zeros(0)
    top = float(norms.max()) if norms.size and norms.max() > 0 else 1.0
    rel_mass = {l: float(n / top) for (l, k, _), n in zip(names, norms) if k == "mass"}

    # 3. the fit: link parameters on a copy of the rigid body, joint terms from their closed form
    learner = rigid.clone()
    ridge: list = []   # (module, start) of the masses identifiable only in combination
    mass_modules: dict = {}   # link -> its PreconditionedMass
    for l in links:
        for k in kinds:
            if bad.get((l, k), "").startswith("no effect"):
                continue  # the data do not act on it: it keeps the nominal value
            # parameters identifiable only in combination are fitted too, with a small ridge on
            # their change (RIDGE): the identifiable combinations move, the null space keeps its
            # nominal part; the report flags them
            if k == "mass":
                module = learner.make_learnable(
                    l, k, PreconditionedMass(learner.link_mass(l).detach(), rel_mass.get(l, 1.0))
                )
                mass_modules[l] = module
                if (l, k) in bad:
                    ridge.append((module, learner.link_mass(l).detach().clone()))
            else:
                learner.make_learnable(l, k)
    q_tr, qd_tr, qdd_tr, tau_tr = q[tr], qd[tr], qdd[tr], tau[tr]
    with torch.no_grad():
        residual = tau_tr - rigid.inverse_dynamics(q_tr, qd_tr, qdd_tr)
    start = joint_terms_start(residual, qd_tr, qdd_tr, jkinds, nominal_joint, v_s)
    for i, label in enumerate(labels):   # a term the motion does not act on keeps its nominal value
        for k in jkinds:
            if bad.get((label, k), "").startswith("no effect"):
                start[k][i] = nominal_joint[k][i]
    joint = JointFriction(dof, start, learn=jkinds, velocity_scale=v_s, offset_scale=noise_t.clamp_min(1e-6),
                          dtype=dtype, device=device)
    params = [p for p in learner.parameters() if p.requires_grad] + list(joint.parameters())
    joint_ridge = [(getattr(joint, f"_{k}_raw"), i, getattr(joint, f"_{k}_raw").detach()[i].clone())
                   for k in jkinds for i, label in enumerate(labels) if (label, k) in bad]

    rigid_torque = _rigid_torque(rigid, learner, links, kinds, q_tr, qd_tr, qdd_tr)

    def loss_fn():
        pred = rigid_torque() + joint.torque(qd_tr, qdd_tr)
        loss = (((pred - tau_tr) / weight) ** 2).mean()
        penalty = sum((mod() / m0 - 1.0) ** 2 for mod, m0 in ridge) + sum((p[i] - p0) ** 2
                                                                          for p, i, p0 in joint_ridge)
        return loss + RIDGE * penalty

    history: list[float] = []
    held: dict[str, float] = {}   # masses the fit drove to zero or below: kept at the nominal value, refitted

    def fit(params):
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=20, history_size=20, line_search_fn="strong_wolfe",
                                tolerance_grad=1e-12, tolerance_change=1e-15)

        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss

        for epoch in range(config.epochs):
            ctx.check_cancelled()
            loss = float(opt.step(closure).detach())
            if not math.isfinite(loss):
                raise ValueError("identify_from_log: the fit diverged (the loss is not finite); check the "
                                 "log's units and joint order")
            history.append(loss)
            ctx.progress(0.05 + 0.55 * (epoch + 1) / config.epochs, f"fit: step {epoch + 1}/{config.epochs}",
                         {"loss": loss})
            if len(history) > 2 and abs(history[-2] - loss) <= 1e-12 * max(loss, 1e-30):
                break

    if params and config.epochs:
        fit(params)
        # physical consistency: a mass fitted to zero or below is held at its nominal value and the
        # rest is fitted again without it
        for l, module in mass_modules.items():
            if float(module().detach()) <= 0:
                held[l] = float(module().detach())
                with torch.no_grad():
                    module.raw.zero_()
                module.raw.requires_grad_(False)
        if held:
            history.clear()
            fit([p for p in params if p.requires_grad])

    return learner, joint, bad, history, held


def identify_from_log(prepared, model, config: LogIdentificationConfig = LogIdentificationConfig(),
                      ctx: JobContext | None = None, friction_start: dict | None = None) -> LogIdentificationResult:
    """Fit ``model``'s inertial parameters (and damping) to a prepared joint log (module doc).

    prepared: :class:`engine.logs.PreparedLog` with ``q``, ``qd``, ``qdd`` (N, dof) in rad,
    rad/s, rad/s^2 and ``u`` (N, dof) the joint torques (N m), in the model's joint order.
    model: the nominal :class:`RobotModel` (not changed; a copy is fitted). friction_start:
    ``{kind: (dof,)}`` nominal joint terms over the model's own (e.g. an actuation file's,
    :func:`engine.models.robot_source.read_actuation`).
    """
    config.validate()
    ctx = ctx or NullJobContext()
    t_start = time.monotonic()
    dof = model.dof
    if prepared.qdd is None:
        raise ValueError("identify_from_log: the prepared log has no accelerations; prepare it with "
                         "accelerations=True (see robot_prepare_config)")
    for name, arr in (("q", prepared.q), ("qd", prepared.qd), ("qdd", prepared.qdd), ("u", prepared.u)):
        if arr.ndim != 2 or arr.shape[1] != dof:
            raise ValueError(
                f"identify_from_log: the log's {name} has {arr.shape[-1] if arr.ndim == 2 else '?'} "
                f"columns but robot {model.name!r} has {dof} joints ({', '.join(model.joint_names)}); "
                "map one column per joint, in the robot's joint order"
            )
    N = prepared.n_samples
    inner = np.zeros(N, dtype=bool)
    inner[config.trim:N - config.trim] = True
    train_mask = prepared.train_mask & inner
    val_mask = prepared.val_mask & inner
    if train_mask.sum() < 10:
        raise ValueError(f"identify_from_log: the training part holds {int(train_mask.sum())} samples "
                         f"after trimming {config.trim} at each end; need at least 10")
    if val_mask.sum() < 1:
        raise ValueError("identify_from_log: the validation part is empty; hold out a time range")

    links, body, _, fixed = checked_links(model, config.links, "identify_from_log")
    kinds = [k for k in LINK_KINDS if k in config.learn]
    jkinds = [k for k in JOINT_KINDS if k in config.learn]
    rigid, nominal_joint = split_rigid_body(model)
    if friction_start:
        nominal_joint = {k: [float(v) for v in friction_start.get(k, nominal_joint[k])] for k in JOINT_KINDS}
    v_s = float(config.coulomb_velocity_scale)
    child = {j.name: j.child for j in model.description.joints}
    labels = [child[n] for n in model.joint_names]

    dtype, device = model.dtype, model.device

    def tensor(a):
        return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)

    q, qd, qdd, tau = (tensor(a) for a in (prepared.q, prepared.qd, prepared.qdd, prepared.u))
    tr_idx = np.flatnonzero(train_mask)
    if len(tr_idx) > config.max_train_samples:
        tr_idx = tr_idx[np.linspace(0, len(tr_idx) - 1, config.max_train_samples).round().astype(int)]
    tr = torch.as_tensor(tr_idx, device=device)
    va = torch.as_tensor(np.flatnonzero(val_mask), device=device)

    # 1. noise level, from the torques alone
    ctx.progress(0.0, "estimating the torque noise")
    noise = torque_noise_level(prepared.u, config.noise_window, config.noise_polyorder, trim=config.trim)
    noise_t = tensor(noise).clamp_min(1e-9 * max(float(noise.max()), 1e-30) + 1e-12)
    weight = noise_t if config.weighting == "noise" else tau[tr].std(0).clamp_min(1e-9)

    # 2.-3. the fit: the closed form (default) or the gradient fit
    base_parameters: list[dict] = []
    unsupported = closed_form_unsupported(model, links, kinds) if config.method == "closed_form" else ""
    warnings = [f"identify_from_log: {unsupported}; fitted by gradient instead"] if unsupported else []
    if config.method == "closed_form" and not unsupported:
        ctx.progress(0.03, "closed-form weighted least squares")
        ctx.check_cancelled()
        tr_all = torch.as_tensor(np.flatnonzero(train_mask), device=device)
        args = (rigid, q[tr_all], qd[tr_all], qdd[tr_all], tau[tr_all], weight.cpu().numpy(), links, labels, kinds,
                jkinds, nominal_joint)
        cf = closed_form_fit(*args, v_s, config.identifiability_tol, config.min_speed)
        if config.fit_velocity_scale and "coulomb" in jkinds:
            # v_s is the model's one nonlinear parameter: the closed form on a grid, kept the one whose
            # weighted error on every training sample (the slow ones too) is lowest
            def train_error(fit, v):
                with torch.no_grad():
                    m = rigid.with_link_params(mass=fit.masses, com=fit.coms or None, inertia=fit.inertias or None)
                    pred = m.inverse_dynamics(*args[1:4]) + JointFriction(
                        dof, fit.joint_values, velocity_scale=v, dtype=dtype, device=device).torque(*args[2:4])
                return float((((pred - args[4]) / weight) ** 2).mean())

            best = train_error(cf, v_s)
            for i, v in enumerate(VELOCITY_SCALES):
                ctx.progress(0.03 + 0.5 * i / len(VELOCITY_SCALES), f"Coulomb velocity scale {v:g} rad/s")
                ctx.check_cancelled()
                other = closed_form_fit(*args, v, config.identifiability_tol, config.min_speed)
                err = train_error(other, v)
                if err < best:
                    cf, v_s, best = other, v, err
        learner = rigid.with_link_params(mass=cf.masses, com=cf.coms or None, inertia=cf.inertias or None)
        joint = JointFriction(dof, cf.joint_values, velocity_scale=v_s, dtype=dtype, device=device)
        bad, history, held, base_parameters = cf.unidentifiable, [], {}, cf.base_parameters
        notes = cf.weakly_excited
        n_fit = int(tr_all.numel())
        warnings += [f"identify_from_log: the closed form's {l} was not physically consistent: refitted with a "
                     "positive semidefinite pseudo-inertia" for l in cf.repaired]
    else:
        learner, joint, bad, history, held = _gradient_fit(config, ctx, prepared, rigid, links, kinds, jkinds, labels,
                                                           nominal_joint, v_s, q, qd, qdd, tau, tr, noise_t, weight)
        n_fit = int(tr.numel())
        notes = {}
    nominal_terms = JointFriction(dof, nominal_joint, velocity_scale=v_s, dtype=dtype, device=device)
    q_tr, qd_tr, qdd_tr, tau_tr = q[tr], qd[tr], qdd[tr], tau[tr]

    # 4. the black box
    feats = torch.cat([q, qd, qdd], dim=-1)
    blackbox = None
    if config.blackbox_steps:
        blackbox = _train_blackbox(feats[tr], tau[tr], config, ctx, (0.6, 0.97))

    # 5. evaluation
    with torch.no_grad():
        def learned(a, b, c):
            return learner.inverse_dynamics(a, b, c) + joint.torque(b, c)

        def nominal(a, b, c):
            return rigid.inverse_dynamics(a, b, c) + nominal_terms.torque(b, c)

        preds_val = {"learned": learned(q[va], qd[va], qdd[va]), "nominal": nominal(q[va], qd[va], qdd[va])}
        preds_tr = {"learned": learned(q_tr, qd_tr, qdd_tr), "nominal": nominal(q_tr, qd_tr, qdd_tr)}
        if blackbox is not None:
            preds_val["blackbox"] = blackbox(feats[va])
            preds_tr["blackbox"] = blackbox(feats[tr])
    rmse_val: dict[str, float | None] = {}
    rmse_val_joint: dict[str, list[float] | None] = {}
    rmse_tr: dict[str, float | None] = {}
    sliding: dict[str, float | None] = {}
    sliding_joint: dict[str, list[float] | None] = {}
    for key in ("learned", "nominal", "blackbox"):
        if key in preds_val:
            rmse_val[key], rmse_val_joint[key] = _rmse(preds_val[key], tau[va])
            rmse_tr[key] = _rmse(preds_tr[key], tau_tr)[0]
            sliding[key], sliding_joint[key] = sliding_rmse((preds_val[key] - tau[va]).cpu().numpy(),
                                                            qd[va].cpu().numpy())
        else:
            rmse_val[key] = rmse_val_joint[key] = rmse_tr[key] = sliding[key] = sliding_joint[key] = None

    reports = []
    for l in links:
        for k in kinds:
            reason = bad.get((l, k), notes.get((l, k), ""))
            identified = _current(learner, l, k)
            if k == "mass" and l in held:
                reason = (f"the fit drove it to {held[l]:.3g} kg (not physical): held at the nominal value, "
                          "the other parameters refitted")
            elif k == "mass" and not reason and float(identified.detach()) <= 0:
                reason = "the fitted mass is not positive: not physical"
            reports.append(LogParameter(link=l, kind=k, nominal=_value(_current(model, l, k)),
                                        identified=_value(identified), identifiable=(l, k) not in bad,
                                        reason=reason))
    values = joint.values()
    for i, (name, label) in enumerate(zip(model.joint_names, labels)):
        for k in jkinds:
            reports.append(LogParameter(link=label, kind=k, nominal=nominal_joint[k][i], identified=values[k][i],
                                        identifiable=(label, k) not in bad,
                                        reason=bad.get((label, k), notes.get((label, k), "")), joint=name))
    unidentifiable = {f"{l}/{k}": r for (l, k), r in bad.items()}
    for l in fixed:
        unidentifiable[l] = "never moves (attached to the fixed base): no effect on the joint torques"
    validation = {"t": prepared.t[val_mask], "tau": prepared.u[val_mask]}
    validation.update({k: v.cpu().numpy() for k, v in preds_val.items()})
    ctx.progress(1.0, "identification done", {"torque_rmse_learned": cast(float, rmse_val["learned"])})
    return LogIdentificationResult(
        robot=model.name,
        joint_names=list(model.joint_names),
        parameters=reports,
        unidentifiable=unidentifiable,
        torque_rmse_validation=rmse_val,
        torque_rmse_validation_per_joint=rmse_val_joint,
        torque_rmse_train=rmse_tr,
        torque_rmse_validation_sliding=sliding,
        torque_rmse_validation_sliding_per_joint=sliding_joint,
        noise_level=float(np.sqrt(np.mean(noise**2))),
        noise_level_per_joint=[float(v) for v in noise],
        loss_history=history,
        samples_train=n_fit,
        samples_validation=int(va.numel()),
        seconds=time.monotonic() - t_start,
        config=config.to_dict(),
        joint_values=values,
        velocity_scale=v_s,
        warnings=warnings + [w for w in [torque_scale_warning(tau_tr.cpu().numpy(), preds_tr["nominal"].cpu().numpy(),
                                                              list(model.joint_names))] if w],
        base_parameters=base_parameters,
        model=_with_joint_values(learner, values),
        validation=validation,
    )


def _rigid_torque(rigid, learner, links, kinds, q, qd, qdd):
    """``() -> learner``'s rigid-body torques (N, dof) at the training samples. With masses alone
    learned (centres of mass and inertias about them fixed) the torques are affine in the masses,
    ``tau = tau0 + sum_l (m_l - m_l0) dtau/dm_l`` exactly, so the columns are computed once (the
    regressor of the masses) and each L-BFGS step costs a matrix product, not an RNEA."""
    if set(kinds) - {"mass"} or not [l for l in links if (l, "mass") in learner.learnable_parameters()]:
        return lambda: learner.inverse_dynamics(q, qd, qdd)
    fitted = [l for l in links if (l, "mass") in learner.learnable_parameters()]
    with torch.no_grad():
        base = rigid.inverse_dynamics(q, qd, qdd)
        m0 = {l: float(rigid.link_mass(l)) for l in fitted}
        cols = torch.stack([rigid.with_link_params(mass={l: m0[l] + 1.0}, check=False).inverse_dynamics(q, qd, qdd)
                            - base for l in fitted], -1)            # (N, dof, links): N m per kg
        start = torch.tensor([m0[l] for l in fitted], dtype=base.dtype, device=base.device)

    def torque():
        m = torch.stack([learner.link_mass(l) for l in fitted])
        return base + cols @ (m - start)

    return torque


def _with_joint_values(learner, values: dict[str, list[float]]):
    """The identified robot: ``learner``'s current description with each joint's damping,
    Coulomb friction and armature set (a plain :class:`RobotModel`, nothing learnable)."""
    from dataclasses import replace

    from engine.robots.model import RobotModel

    desc = learner.current_description()
    names = list(learner.joint_names)
    joints = tuple(
        replace(j, damping=values["damping"][names.index(j.name)], friction=values["coulomb"][names.index(j.name)],
                armature=values["armature"][names.index(j.name)]) if j.name in names else j
        for j in desc.joints)
    return RobotModel.from_description(replace(desc, joints=joints), dtype=learner.dtype, device=learner.device,
                                       gravity=tuple(float(g) for g in learner.gravity.detach().cpu()))


def log_identification_job(prepared, model, config: LogIdentificationConfig = LogIdentificationConfig()):
    """A job ``job(ctx) -> LogIdentificationResult`` (the model is copied before the fit)."""

    def job(ctx: JobContext) -> LogIdentificationResult:
        return identify_from_log(prepared, model, config, ctx)

    return job
