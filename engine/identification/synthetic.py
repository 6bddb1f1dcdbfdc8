"""Inertial parameter identification: the learning loop of the differentiable-robot-model paper.

:func:`identify` (or :func:`identification_job` for a background job):

1. takes a ground-truth robot and makes a copy whose link masses (and, optionally, rotational
   inertias) are perturbed by up to ``perturb`` (relative, uniform, seeded);
2. generates sine motions from the true model at ``rate_hz`` (250 Hz in the paper): each
   joint follows a sum of sines within its limits, ``q, qd, qdd`` analytic, ``tau`` by RNEA;
3. makes the perturbed parameters learnable (softplus-positive masses, log-Cholesky
   inertias) and fits them on a normalised MSE (each joint's error divided by the variance
   of its data) of the torques (``loss="tau"``, inverse dynamics) or of the accelerations
   (``loss="qdd"``, forward dynamics, as in the paper), with Adam (the paper) or L-BFGS;
4. reports each parameter's error before and after, the torque error on fresh test motions,
   and which parameters the data cannot identify.

Identifiability is structural, computed from the regressor ``Y = d tau / d p`` (``tau`` is
linear in the inertial parameters) on the training motions, each column scaled by the
parameter's true value: a column that is (relatively) zero means the parameter does not act on
the joint torques (the Panda's link 1 turns about the vertical axis: its mass only enters
through its tiny centre-of-mass offset from that axis), and parameters with weight in the
numerical null space of ``Y`` are identifiable only in combination with others. Links that
no joint moves (the fixed base) never act on the torques and are reported too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol, cast

import numpy as np
import torch

from engine.devices import resolve_device
from engine.jobs import JobContext, NullJobContext
from engine.robots.library import load_robot
from engine.robots.parametrizations import moving_links
from engine.validation import check_allocation, check_choice, check_int, check_range

__all__ = [
    "IdentificationConfig", "ParameterReport", "IdentificationResult", "SineMotion",
    "sine_motion", "moving_links", "checked_links", "PreconditionedMass", "perturbed_model", "regressor",
    "identifiability",
    "identify", "identification_job",
]


MAX_RATE_HZ = 10_000.0       # samples per second of the synthetic motions, at most
MAX_DURATION_S = 3600.0      # seconds of training (and of test) motion, at most
BYTES_PER_SAMPLE = 16 << 10  # memory per sample: motion, regressor rows and a full-batch step's graph


@dataclass(frozen=True)
class IdentificationConfig:
    """Settings of the learning loop (one source of truth for the CLI and the GUI).

    robot: library name or URDF path. perturb: largest relative perturbation of each mass
    (and inertia when ``perturb_inertia``). learn: ``"mass"`` or ``"mass+inertia"``.
    links: links to perturb and learn (default: the child link of every movable joint, one per
    moving body; links rigidly attached to a body, like a hand, keep their URDF values).
    duration (s) at rate_hz (Hz) gives the training samples; test_duration the fresh test
    motions. n_sines per joint, frequencies in [min_freq, max_freq] Hz, amplitude
    ``amplitude`` x half the joint range (at most max_amplitude rad or m).
    optimizer: ``"lbfgs"`` (full batch) or ``"adam"`` (mini-batches of batch_size, lr,
    the paper's loop). loss: ``"tau"`` or ``"qdd"``. parametrization of the learned masses:
    ``"preconditioned"`` (:class:`PreconditionedMass`, fast and accurate with L-BFGS) or
    ``"physical"`` (the model's softplus-positive default; inertias always use the model's
    log-Cholesky parametrisation). identifiability_tol: relative column
    norm / singular value below which a parameter is reported unidentifiable.
    """

    robot: str = "panda"
    perturb: float = 0.3
    perturb_inertia: bool = False
    learn: str = "mass"
    links: tuple[str, ...] | None = None
    seed: int = 0
    rate_hz: float = 250.0
    duration: float = 4.0
    test_duration: float = 2.0
    n_sines: int = 3
    min_freq: float = 0.2
    max_freq: float = 1.0
    amplitude: float = 0.4
    max_amplitude: float = 1.0
    loss: str = "tau"
    optimizer: str = "lbfgs"
    parametrization: str = "preconditioned"
    epochs: int = 60
    lr: float = 1e-2
    batch_size: int = 256
    identifiability_tol: float = 3e-4
    dtype: str = "float64"
    device: str = "cpu"      # cpu, cuda, cuda:N or auto (engine/devices.py); the dtype stays the config's

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Every number checked before the work (the CLI flags and the GUI form come from here)."""
        who = "identification setting"
        check_range(who, "perturb (--perturb)", self.perturb, 0.0, 1.0, hi_open=True,
                    hint="a relative perturbation such as 0.3")
        check_choice(who, "learn (--learn)", self.learn, ("mass", "mass+inertia"))
        check_choice(who, "loss (--loss)", self.loss, ("tau", "qdd"))
        check_choice(
            who, "parametrization (--parametrization)", self.parametrization, ("preconditioned", "physical")
        )
        check_choice(who, "optimizer (--optimizer)", self.optimizer, ("lbfgs", "adam"))
        check_choice(who, "dtype (--dtype)", self.dtype, ("float32", "float64"))
        check_int(who, "seed (--seed)", self.seed, 0, 2**62)
        rate = check_range(
            who,
            "rate_hz (--rate-hz)",
            self.rate_hz,
            0.0,
            MAX_RATE_HZ,
            lo_open=True,
            unit="Hz",
            hint="a sample rate such as 250",
        )
        train = check_range(who, "duration (--duration)", self.duration, 0.0, MAX_DURATION_S, lo_open=True,
                            unit="s", hint="seconds of training motion, such as 4")
        test = check_range(who, "test_duration (--test-duration)", self.test_duration, 0.0, MAX_DURATION_S,
                           lo_open=True, unit="s", hint="seconds of test motion, such as 2")
        check_allocation(
            f"the motions ({rate:g} Hz x {train + test:g} s = {rate * (train + test):.3g} samples)",
            rate * (train + test),
            BYTES_PER_SAMPLE,
            field="--rate-hz",
            hint="lower --rate-hz, --duration or --test-duration",
        )
        check_int(who, "n_sines (--n-sines)", self.n_sines, 1, 100)
        lo = check_range(who, "min_freq (--min-freq)", self.min_freq, 0.0, rate / 2, lo_open=True, unit="Hz",
                         hint="the lowest sine frequency, below half the sample rate")
        check_range(who, "max_freq (--max-freq)", self.max_freq, lo, rate / 2, unit="Hz",
                    hint="at least --min-freq and at most half of --rate-hz")
        check_range(who, "amplitude (--amplitude)", self.amplitude, 0.0, 1.0, lo_open=True,
                    hint="a fraction of half the joint range, such as 0.4")
        check_range(who, "max_amplitude (--max-amplitude)", self.max_amplitude, 0.0, 10.0, lo_open=True,
                    hint="rad or m, such as 1")
        check_int(who, "epochs (--epochs)", self.epochs, 0, 100_000)
        check_range(who, "lr (--lr)", self.lr, 0.0, 10.0, lo_open=True, hint="for example 0.01")
        check_int(who, "batch_size (--batch-size)", self.batch_size, 1, 10_000_000)
        check_range(who, "identifiability_tol (--identifiability-tol)", self.identifiability_tol, 0.0, 1.0,
                    hi_open=True, hint="for example 0.0003")


@dataclass
class ParameterReport:
    """One identified parameter: ``link``, ``kind`` ("mass", "inertia"), values (kg or the
    inertia's Frobenius norm, kg m^2), relative errors, and whether the data identify it."""

    link: str
    kind: str
    true: float
    initial: float
    fitted: float
    initial_error: float
    fitted_error: float
    identifiable: bool
    reason: str = ""


class _NamedParameter(Protocol):
    link: str
    kind: str


class ParameterLookup:
    """``parameter(link, kind)`` for a result that holds a ``parameters`` list (synthetic or from a log)."""

    parameters: Sequence[_NamedParameter]

    def parameter(self, link: str, kind: str = "mass"):
        for p in self.parameters:
            if p.link == link and p.kind == kind:
                return p
        raise KeyError(f"no learned {kind} for link {link!r}")


@dataclass
class IdentificationResult(ParameterLookup):
    """What :func:`identify` found.

    parameters: one report per learned parameter. unidentifiable: ``{link or link/kind:
    reason}`` including links that never move. torque_rmse_* (N m) and torque_nmse_* (the
    normalised MSE) on the test motions, before (perturbed model) and after the fit.
    loss_history: training loss per epoch. samples: training samples. seconds: wall time.
    """

    robot: str
    parameters: list[ParameterReport]
    unidentifiable: dict[str, str]
    torque_rmse_before: float
    torque_rmse_after: float
    torque_nmse_before: float
    torque_nmse_after: float
    loss_history: list[float]
    samples: int
    seconds: float
    config: dict = field(default_factory=dict)


    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- data

@dataclass(frozen=True)
class SineMotion:
    """Sampled sine motions: q, qd, qdd, tau (N, dof) and the sample times t (N,) (s)."""

    t: torch.Tensor
    q: torch.Tensor
    qd: torch.Tensor
    qdd: torch.Tensor
    tau: torch.Tensor


def sine_motion(model, duration: float, rate_hz: float = 250.0, n_sines: int = 3, min_freq: float = 0.2,
                max_freq: float = 1.0, amplitude: float = 0.4, max_amplitude: float = 1.0,
                seed: int = 0, gravity=True) -> SineMotion:
    """Sum-of-sines joint motions within the limits, with torques from ``model`` (RNEA).

    Each joint: ``q = mid + sum_k a_k sin(2 pi f_k t + phi_k)`` with random frequencies in
    [min_freq, max_freq] Hz and phases; the amplitudes add up to ``amplitude`` x half the
    joint range (joints without limits: max_amplitude). ``duration`` s at ``rate_hz``.
    """
    dtype, device = model.dtype, model.device
    gen = torch.Generator().manual_seed(int(seed))
    dof = model.dof
    lim = model.joint_limits
    lower, upper = lim.lower.to(dtype), lim.upper.to(dtype)
    bounded = torch.isfinite(lower) & torch.isfinite(upper)
    mid = torch.where(bounded, 0.5 * (lower.nan_to_num(0) + upper.nan_to_num(0)), torch.zeros_like(lower))
    half = torch.where(bounded, 0.5 * (upper - lower).nan_to_num(0), torch.full_like(lower, max_amplitude))
    total_amp = torch.clamp(amplitude * half, max=max_amplitude)                      # (dof,)
    n = max(int(round(duration * rate_hz)), 2)
    t = torch.arange(n, dtype=dtype) / rate_hz
    f = min_freq + (max_freq - min_freq) * torch.rand(dof, n_sines, generator=gen, dtype=dtype)
    phi = 2 * math.pi * torch.rand(dof, n_sines, generator=gen, dtype=dtype)
    w = torch.rand(dof, n_sines, generator=gen, dtype=dtype) + 0.5
    a = total_amp[:, None].cpu() * w / w.sum(-1, keepdim=True)                         # (dof, K)
    om = 2 * math.pi * f
    arg = om[None] * t[:, None, None] + phi[None]                                      # (N, dof, K)
    q = mid.cpu() + (a * torch.sin(arg)).sum(-1)
    qd = (a * om * torch.cos(arg)).sum(-1)
    qdd = -(a * om ** 2 * torch.sin(arg)).sum(-1)
    q, qd, qdd, t = (x.to(device) for x in (q, qd, qdd, t))
    with torch.no_grad():
        tau = model.inverse_dynamics(q, qd, qdd, gravity=gravity)
    return SineMotion(t, q, qd, qdd, tau)


# --------------------------------------------------------------------------- parameters

def checked_links(model, requested, where: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """``(links, body, attached, fixed)``: the links to learn (``requested``, or every body link)
    and :func:`~engine.robots.parametrizations.moving_links`' groups; ``ValueError`` (prefixed by
    ``where``) for a link the robot does not have or one that never moves."""
    body, attached, fixed = moving_links(model)
    links = list(requested) if requested else body
    for l in links:
        if l not in model.link_names:
            raise ValueError(f"{where}: no link named {l!r} in robot {model.name!r}")
        if l in fixed:
            raise ValueError(f"{where}: link {l!r} never moves; its parameters cannot be identified")
    return links, body, attached, fixed


def perturbed_model(model, links: Sequence[str], perturb: float, seed: int = 0, inertia: bool = False):
    """A copy of ``model`` whose masses (and inertias) of ``links`` are scaled by ``1 + u``,
    ``u`` uniform in [-perturb, perturb] (seeded). An inertia is scaled as a whole (it stays
    physically consistent)."""
    gen = torch.Generator().manual_seed(int(seed) + 7919)
    u = (2 * torch.rand(len(links), 2, generator=gen, dtype=torch.float64) - 1) * perturb
    mass = {l: float(model.link_mass(l)) * (1 + float(u[i, 0])) for i, l in enumerate(links)}
    kw = dict(mass=mass)
    if inertia:
        kw["inertia"] = {
            l: model.link_inertia(l).detach() * (1 + float(u[i, 1])) for i, l in enumerate(links)
        }
    return model.with_link_params(**kw)


def _param_values(model, links, kinds) -> list[torch.Tensor]:
    out = []
    for l in links:
        for k in kinds:
            out.append(model.link_mass(l) if k == "mass" else model.link_inertia(l))
    return out


def regressor(model, motion: SineMotion, links: Sequence[str], kinds: Sequence[str] = ("mass",),
              max_samples: int = 400) -> tuple[np.ndarray, list[tuple[str, str, int]]]:
    """Scaled regressor ``(N dof, P)``: the change of the torques when each parameter goes
    from 0 to its value in ``model`` (tau is linear in mass and inertia). Columns: one per
    mass, six per inertia (ixx, ixy, ixz, iyy, iyz, izz; each the change when that entry
    moves by the inertia's Frobenius norm). Rows use at most ``max_samples``
    samples, each joint divided by its torque standard deviation."""
    N = motion.q.shape[0]
    idx = torch.linspace(0, N - 1, min(N, max_samples)).round().long()
    q, qd, qdd = motion.q[idx], motion.qd[idx], motion.qdd[idx]
    with torch.no_grad():
        base = model.inverse_dynamics(q, qd, qdd)
        scale = motion.tau.std(0).clamp_min(1e-9)
        cols, names = [], []
        for l in links:
            m0 = model.link_mass(l).detach()
            if "mass" in kinds:
                # the mass with the inertia about the CoM fixed: tau(m) - tau(m = tiny)
                other = model.with_link_params(mass={l: float(m0) * 1e-9}, check=False)
                d = base - other.inverse_dynamics(q, qd, qdd)
                cols.append((d / scale).reshape(-1))
                names.append((l, "mass", -1))
            if "inertia" in kinds:
                I0 = model.link_inertia(l).detach()
                for c, (i, j) in enumerate([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]):
                    E = torch.zeros(3, 3, dtype=I0.dtype, device=I0.device)
                    E[i, j] = E[j, i] = 1.0
                    h = float(torch.linalg.matrix_norm(I0)) or 1e-6
                    other = model.with_link_params(inertia={l: I0 + h * E}, check=False)
                    d = other.inverse_dynamics(q, qd, qdd) - base   # linear: exact for any h
                    cols.append((d / scale).reshape(-1))
                    names.append((l, "inertia", c))
    Y = torch.stack(cols, dim=-1).cpu().numpy() if cols else np.zeros((q.numel(), 0))
    return Y, names


def identifiability(Y: np.ndarray, names, tol: float = 3e-4) -> dict[tuple[str, str], str]:
    """``{(link, kind): reason}`` for the parameters the regressor cannot identify.

    A column whose norm is below ``tol`` x the largest one has no effect on the torques; a
    parameter with more than 5 % of its weight in the singular directions (singular value below
    ``tol`` x the largest) is identifiable only in combination with others.
    """
    out: dict[tuple[str, str], str] = {}
    if Y.size == 0:
        return out
    norms = np.linalg.norm(Y, axis=0)
    top = norms.max() if norms.size else 0.0
    if top <= 0:
        return {(l, k): "no effect on the joint torques" for l, k, _ in names}
    weak = norms < tol * top
    for (l, k, _), w, nrm in zip(names, weak, norms):
        if w and (l, k) not in out:
            out[(l, k)] = f"no effect on the joint torques (relative sensitivity {nrm / top:.1e})"
    keep = ~weak
    if keep.sum() > 0:
        Yk = Y[:, keep] / norms[keep]
        _, s, Vt = np.linalg.svd(Yk, full_matrices=False)
        null = Vt[s < tol * s[0]]
        if null.size:
            weight = (null ** 2).sum(0)
            kept_names = [n for n, k in zip(names, keep) if k]
            for (l, k, _), wgt in zip(kept_names, weight):
                if wgt > 0.05 and (l, k) not in out:
                    out[(l, k)] = "identifiable only in combination with other parameters"
    return out


class PreconditionedMass(torch.nn.Module):
    value: torch.Tensor  # a buffer
    """A mass ``m0 (1 + raw / sensitivity)`` (kg), ``raw`` starting at 0.

    The torques are linear in the masses, so with this parametrisation the fit is a
    quadratic problem that L-BFGS solves in a few steps; ``sensitivity`` (the parameter's
    relative regressor column norm) preconditions it, so weakly excited masses converge as
    fast as strongly excited ones. It does not constrain the sign: :func:`identify` checks
    that the fitted masses are positive (the physical softplus parametrisation of the model,
    ``parametrization="physical"``, keeps them positive throughout, at the price of a slower,
    ill-conditioned fit).
    """

    def __init__(self, value, sensitivity: float = 1.0):
        super().__init__()
        value = torch.as_tensor(value)
        self.register_buffer("value", value.detach().clone())
        self.scale = float(max(sensitivity, 1e-12))
        self.raw = torch.nn.Parameter(torch.zeros((), dtype=value.dtype, device=value.device))

    def forward(self) -> torch.Tensor:
        return self.value * (1.0 + self.raw / self.scale)


def _nmse(pred, target, var):
    return (((pred - target) ** 2) / var).mean()


# --------------------------------------------------------------------------- the loop

def identify(config: IdentificationConfig = IdentificationConfig(), ctx: JobContext | None = None,
             model=None) -> IdentificationResult:
    """Run the learning loop (see the module docstring). ``model``: the ground truth (default:
    ``load_robot(config.robot)``), in the config's dtype."""
    config.validate()
    ctx = ctx or NullJobContext()
    t_start = time.monotonic()
    dtype = getattr(torch, config.dtype)
    truth = model if model is not None else load_robot(config.robot, dtype=dtype,
                                                       device=resolve_device(config.device))
    ctx.progress(0.0, f"identification: {truth.name}")
    links, body, attached, fixed = checked_links(truth, config.links, "identification")
    for l in links:
        if l not in body and l not in attached:
            raise ValueError(f"identification: link {l!r} has no mass")
    kinds = ("mass", "inertia") if config.learn == "mass+inertia" else ("mass",)

    train = sine_motion(
        truth,
        config.duration,
        config.rate_hz,
        config.n_sines,
        config.min_freq,
        config.max_freq,
        config.amplitude,
        config.max_amplitude,
        seed=config.seed,
    )
    test = sine_motion(truth, config.test_duration, config.rate_hz, config.n_sines, config.min_freq,
                       config.max_freq, config.amplitude, config.max_amplitude, seed=config.seed + 1)
    ctx.check_cancelled()
    learner = perturbed_model(truth, links, config.perturb, config.seed, inertia=config.perturb_inertia)
    initial = [v.detach().clone() for v in _param_values(learner, links, kinds)]
    true_vals = [v.detach().clone() for v in _param_values(truth, links, kinds)]
    with torch.no_grad():
        tau_before = learner.inverse_dynamics(test.q, test.qd, test.qdd)
    # structural identifiability from the learner's own regressor (the truth is not needed)
    ctx.progress(0.02, "identifiability")
    Y, names = regressor(learner, train, links, kinds)
    bad = identifiability(Y, names, config.identifiability_tol)
    norms = np.linalg.norm(Y, axis=0)
    rel = (
        {(l, k): float(nrm / norms.max()) for (l, k, c), nrm in zip(names, norms) if k == "mass"}
        if Y.size
        else {}
    )
    for l in links:
        for k in kinds:
            # weakly identifiable parameters are learned too (noise-free synthetic data pin them
            # down; leaving them wrong would bias the others); the report flags them
            if k == "mass" and config.parametrization == "preconditioned":
                learner.make_learnable(
                    l, k, PreconditionedMass(learner.link_mass(l).detach(), rel.get((l, k), 1.0))
                )
            else:
                learner.make_learnable(l, k)
    params = [p for p in learner.parameters() if p.requires_grad]

    target = train.tau if config.loss == "tau" else train.qdd
    var = target.var(0).clamp_min(1e-12)

    def predict(sl):
        if config.loss == "tau":
            return learner.inverse_dynamics(train.q[sl], train.qd[sl], train.qdd[sl])
        return learner.forward_dynamics(train.q[sl], train.qd[sl], train.tau[sl])

    history: list[float] = []
    N = train.q.shape[0]
    if config.optimizer == "lbfgs":
        opt: torch.optim.Optimizer = torch.optim.LBFGS(params, lr=1.0, max_iter=20, history_size=20,
                                                       line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                                                       tolerance_change=1e-15)
        full = slice(None)

        def closure():
            opt.zero_grad()
            loss = _nmse(predict(full), target, var)
            loss.backward()
            return loss

        for epoch in range(config.epochs):
            ctx.check_cancelled()
            loss = float(cast(torch.Tensor, opt.step(closure)).detach())  # LBFGS returns the loss
            history.append(loss)
            ctx.progress((epoch + 1) / max(config.epochs, 1) * 0.9, f"epoch {epoch + 1}/{config.epochs}",
                         {"loss": loss})
            if loss < 1e-20 or (len(history) > 3 and abs(history[-2] - loss) <= 1e-14 * max(loss, 1e-30)):
                break
    else:
        opt = torch.optim.Adam(params, lr=config.lr)
        gen = torch.Generator().manual_seed(int(config.seed) + 1)
        for epoch in range(config.epochs):
            perm = torch.randperm(N, generator=gen).to(train.q.device)
            total = 0.0
            for b in range(0, N, config.batch_size):
                ctx.check_cancelled()
                sl = perm[b:b + config.batch_size]
                opt.zero_grad()
                loss = _nmse(predict(sl), target[sl], var)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * sl.numel()
            history.append(total / N)
            ctx.progress((epoch + 1) / max(config.epochs, 1) * 0.9, f"epoch {epoch + 1}/{config.epochs}",
                         {"loss": history[-1]})

    with torch.no_grad():
        fitted_vals = [v.detach().clone() for v in _param_values(learner, links, kinds)]
        tau_after = learner.inverse_dynamics(test.q, test.qd, test.qdd)
        var_test = test.tau.var(0).clamp_min(1e-12)
        rmse_b = float(((tau_before - test.tau) ** 2).mean().sqrt())
        rmse_a = float(((tau_after - test.tau) ** 2).mean().sqrt())
        nmse_b = float(_nmse(tau_before, test.tau, var_test))
        nmse_a = float(_nmse(tau_after, test.tau, var_test))
    reports = []
    i = 0
    for l in links:
        for k in kinds:
            tv, iv, fv = true_vals[i], initial[i], fitted_vals[i]
            i += 1
            norm = (lambda x: float(x)) if k == "mass" else (lambda x: float(torch.linalg.matrix_norm(x)))
            denom = max(norm(tv), 1e-300)
            reports.append(ParameterReport(
                link=l, kind=k, true=norm(tv), initial=norm(iv), fitted=norm(fv),
                initial_error=float(torch.linalg.vector_norm((iv - tv).reshape(-1))) / denom,
                fitted_error=float(torch.linalg.vector_norm((fv - tv).reshape(-1))) / denom,
                identifiable=(l, k) not in bad,
                reason=bad.get((l, k), "") or ("the fitted mass is not positive: not physical"
                                                if k == "mass" and float(fv) <= 0 else "")))
    unidentifiable = {f"{l}/{k}": reason for (l, k), reason in bad.items()}
    for l in fixed:
        unidentifiable[l] = "never moves (attached to the fixed base): no effect on the joint torques"
    ctx.progress(1.0, "identification done", {"torque_rmse": rmse_a})
    return IdentificationResult(
        robot=truth.name, parameters=reports, unidentifiable=unidentifiable,
        torque_rmse_before=rmse_b, torque_rmse_after=rmse_a, torque_nmse_before=nmse_b,
        torque_nmse_after=nmse_a, loss_history=history, samples=N,
        seconds=time.monotonic() - t_start, config=asdict(config))


def identification_job(config: IdentificationConfig = IdentificationConfig(), model=None):
    """A job ``job(ctx) -> IdentificationResult`` for the job runners."""

    def job(ctx: JobContext) -> IdentificationResult:
        return identify(config, ctx=ctx, model=model)

    return job
