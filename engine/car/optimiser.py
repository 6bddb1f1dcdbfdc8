"""The paper's optimiser: gradient through the whole rollout, then a line search over 512
log-spaced step sizes in [1e-6, 1] evaluated as one batch; repeat until converged.

The search direction is a choice (``OptimiserConfig.direction``); the line search is the same:

- ``"gradient"``: the paper's steepest descent.
- ``"conjugate"``: Polak-Ribiere+ conjugate gradient.
- ``"gauss-newton"`` (the default): for costs that are a sum of squares of target residuals
  plus the control regulariser (plans), ``H d = g`` with ``H = 2 J^T J + H_control``, where
  ``J`` is the residuals' Jacobian through the whole rollout and ``H_control`` the exact
  Hessian of the regulariser and soft bounds (positive definite, so ``d`` is always a descent
  direction). The plan's cost is badly conditioned (early and late controls, throttle and
  steering act on the targets at very different scales), which leaves steepest descent with a
  long slow tail; this direction removes it. A Levenberg-Marquardt damping ``mu I`` is added
  and adapted from the step the line search picked (full steps: less damping; short ones:
  more), since far from the optimum the model's nonlinearity makes the undamped step overshoot.
  Where the stage cost has no residual form (the MPC's track cost) it falls back to
  ``"conjugate"``.

The line search keeps the current controls when no candidate is cheaper, so it never returns
a higher cost than it started from. Convergence: the relative cost decrease stayed below
``tolerance`` for ``patience`` iterations in a row, or no candidate improved at all, or the
gradient vanished.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import torch

from engine.car.costs import control_hessian
from engine.validation import check_int, check_range

__all__ = ["DIRECTIONS", "OptimiseResult", "OptimiserConfig", "budget_progress", "gauss_newton_direction",
           "line_search", "optimise", "step_sizes", "supports_gauss_newton"]

DIRECTIONS = ("gauss-newton", "conjugate", "gradient")


@dataclass(frozen=True)
class OptimiserConfig:
    """Hyperparameters of the gradient + batched line-search optimiser."""

    candidates: int = 512
    step_min: float = 1e-6
    step_max: float = 1.0
    max_iterations: int = 400
    tolerance: float = 5e-4        # relative decrease per iteration counted as "no progress"
    patience: int = 6
    grad_tolerance: float = 1e-7
    time_limit: float = 0.0  # s, 0 = none
    direction: str = "gauss-newton"
    damping: float = 2.0  # initial Levenberg-Marquardt damping of "gauss-newton", x mean(diag(2 J^T J))

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction {self.direction!r}: choose one of {', '.join(DIRECTIONS)}")
        who = "optimiser setting"      # plain-language messages naming the flag (engine/validation.py)
        check_int(who, "candidates (--candidates)", self.candidates, 1, 100_000,
                  hint="512 step sizes are tried at once by default")
        check_int(who, "max_iterations (--max-iterations)", self.max_iterations, 1, 1_000_000)
        check_range(who, "step_min", self.step_min, 0.0, 1e6, lo_open=True)
        check_range(who, "step_max", self.step_max, self.step_min, 1e6, hint="at least step_min")
        check_range(who, "tolerance", self.tolerance, 0.0, 1.0)
        check_int(who, "patience", self.patience, 1, 1_000_000)
        check_range(who, "grad_tolerance", self.grad_tolerance, 0.0, 1e6)
        check_range(who, "time_limit", self.time_limit, 0.0, 86_400.0, unit="s", hint="0 means no limit")
        check_range(who, "damping", self.damping, 0.0, 1e12)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> OptimiserConfig:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class OptimiseResult:
    controls: torch.Tensor          # normalised controls (N, 2)
    cost: float
    initial_cost: float
    iterations: int
    converged: bool
    seconds: float
    costs: list = field(default_factory=list)
    pose: torch.Tensor | None = None  # (N+1, 3)
    v: torch.Tensor | None = None     # (N+1, 3)
    reason: str = ""


_STEP_CACHE: dict = {}


def step_sizes(config: OptimiserConfig, dtype=torch.float32) -> torch.Tensor:
    """The ``candidates`` log-spaced step sizes in [step_min, step_max]."""
    key = (config.candidates, config.step_min, config.step_max, dtype)
    if key not in _STEP_CACHE:
        _STEP_CACHE[key] = torch.logspace(math.log10(config.step_min), math.log10(config.step_max),
                                          config.candidates, dtype=dtype)
    return _STEP_CACHE[key]


def line_search(evaluator, W: torch.Tensor, grad: torch.Tensor, cost: float,
                config: OptimiserConfig = OptimiserConfig()):
    """Try ``W - alpha grad`` for all step sizes at once; return ``(W_new, cost_new, alpha, traj)``.

    ``grad`` may be any search direction's negative (``W - alpha * grad``). ``alpha`` is 0 (and
    ``W`` returned unchanged) when no candidate beats ``cost``.
    """
    alphas = step_sizes(config, W.dtype).to(W.device)
    Wc = W.unsqueeze(0) - alphas[:, None, None] * grad.unsqueeze(0)
    costs, traj = evaluator.batch_costs(Wc)
    costs = torch.nan_to_num(costs, nan=float("inf"))
    k = int(torch.argmin(costs))
    best = float(costs[k])
    if not best < cost:
        return W, cost, 0.0, None
    return Wc[k], best, float(alphas[k]), traj


def budget_progress(iteration: int, limit: int, elapsed: float, time_limit: float = 0.0) -> tuple[float, str]:
    """(fraction, message) of an optimisation after ``iteration`` of at most ``limit`` in ``elapsed``
    seconds: the share of the budget spent (iterations, or the time limit when that is nearer),
    and the time per iteration with the most time left. A plan usually converges before its
    budget, so the time left is an upper bound and is said as one."""
    per = elapsed / max(iteration, 1)
    left = per * max(limit - iteration, 0)
    fraction = iteration / limit
    if time_limit > 0:
        left = min(left, max(time_limit - elapsed, 0.0))
        fraction = max(fraction, elapsed / time_limit)
    return min(0.99, fraction), (f"iteration {iteration} of at most {limit}, {per:.2g} s each, "
                                 f"at most {_duration(left)} left")


def _duration(seconds: float) -> str:
    s = max(0, int(round(seconds)))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def optimise(evaluator, W0: torch.Tensor, config: OptimiserConfig = OptimiserConfig(), ctx=None,
             on_iteration=None, iterations: int | None = None) -> OptimiseResult:
    """Minimise the evaluator's cost over normalised controls starting from ``W0`` (N, 2).

    ``ctx`` (a job context) gets progress with the cost and is checked for cancellation;
    ``on_iteration(i, cost, W, traj)`` is called after every iteration. ``iterations`` forces
    a fixed number of iterations (MPC) and skips the convergence test.
    """
    t0 = time.perf_counter()
    W = W0.detach().clone()
    cost, grad, traj = evaluator.cost_and_grad(W)
    initial = cost
    costs = [cost]
    quiet = 0
    converged = False
    reason = "iteration limit"
    limit = iterations if iterations is not None else config.max_iterations
    it = 0
    gauss_newton = config.direction == "gauss-newton" and supports_gauss_newton(evaluator)
    direction = "conjugate" if config.direction == "gauss-newton" and not gauss_newton else config.direction
    damping = config.damping
    search = gauss_newton_direction(evaluator, W, grad, traj[1], damping) if gauss_newton else grad
    if ctx is not None and iterations is None:
        ctx.progress(0.0, f"cost of the first guess (iteration 0 of at most {limit})")
    for it in range(1, limit + 1):
        if not math.isfinite(cost):
            reason = "cost is not finite"
            break
        if iterations is None and float(grad.abs().max()) < config.grad_tolerance:
            converged, reason = True, "gradient vanished"
            it -= 1
            break
        W_new, new_cost, alpha, new_traj = line_search(evaluator, W, search, cost, config)
        if alpha == 0 and search is not grad:  # the conjugate direction failed: restart along the gradient
            search = grad
            W_new, new_cost, alpha, new_traj = line_search(evaluator, W, search, cost, config)
        improved = alpha > 0
        if gauss_newton:
            damping = _adapt_damping(damping, alpha if search is not grad else 0.0)
        decrease = cost - new_cost
        if improved:
            W = W_new
            traj_v = new_traj[1] if new_traj is not None else None
            cost = new_cost
            if it < limit:
                g_old = grad
                _, grad, traj = _grad(evaluator, W, traj_v)
                if gauss_newton:
                    search = gauss_newton_direction(evaluator, W, grad, traj_v, damping)
                else:
                    search = _direction(direction, grad, g_old, search)
            else:
                traj = new_traj
        costs.append(cost)
        if on_iteration is not None:
            on_iteration(it, cost, W, traj)
        if ctx is not None:
            ctx.check_cancelled()
            if iterations is None:
                fraction, message = budget_progress(it, limit, time.perf_counter() - t0, config.time_limit)
                ctx.progress(fraction, message, {"cost": cost, "step": alpha})
        if iterations is not None:
            continue
        if not improved:
            converged, reason = True, "no candidate improved"
            break
        quiet = quiet + 1 if decrease <= config.tolerance * max(abs(cost), 1e-12) else 0
        if quiet >= config.patience:
            converged, reason = True, "relative decrease below tolerance"
            break
        if config.time_limit and time.perf_counter() - t0 > config.time_limit:
            reason = "time limit"
            break
    P, V = traj if traj is not None else evaluator.trajectory(W)
    return OptimiseResult(W, cost, initial, it, converged, time.perf_counter() - t0, costs, P, V, reason)


def supports_gauss_newton(evaluator) -> bool:
    """Whether the evaluator's cost has the residual form the Gauss-Newton direction needs."""
    return hasattr(evaluator, "residual_jacobian") and hasattr(evaluator.stage_cost, "residuals")


def gauss_newton_direction(evaluator, W: torch.Tensor, grad: torch.Tensor, V=None,
                           damping: float = 0.0) -> torch.Tensor:
    """``d`` (N, 2) solving ``(2 J^T J + H_control + mu I) d = grad`` at controls ``W`` (N, 2),
    as a "gradient" to subtract (``W - alpha d``). ``V`` (N+1, 3): the velocities at ``W`` if
    known. ``mu = damping * mean(diag(2 J^T J))`` (Levenberg-Marquardt; relative, so the same
    ``damping`` suits any cost weights).

    Solved in float64 with torch: the system is 2N x 2N (120 x 120 for the Drifting Turn), a
    fraction of a millisecond against the line search's milliseconds. (Not NumPy: its OpenBLAS
    threads keep spinning after the solve and slow torch's own threads down by several times.)
    """
    _, J = evaluator.residual_jacobian(W, V)
    Jf = J.reshape(J.shape[0], -1).double()
    w_prev = None if evaluator.w_prev is None else evaluator.w_prev.double()
    JtJ = 2.0 * Jf.T @ Jf
    H = JtJ + control_hessian(W.double(), evaluator.weights, w_prev)
    if damping > 0:
        H = H + damping * float(JtJ.diagonal().mean()) * torch.eye(H.shape[0], dtype=H.dtype, device=H.device)
    d = torch.linalg.solve(H, grad.reshape(-1, 1).double())
    return d.to(W.dtype).reshape(W.shape)


def _adapt_damping(damping: float, alpha: float) -> float:
    """Levenberg-Marquardt's rule on the line search's pick: a full step (alpha >= 0.5) means
    the model is trusted, a short one (alpha < 0.1, or the direction failed: 0) that it is not."""
    if alpha >= 0.5:
        return max(damping / 3.0, 1e-6)
    if alpha < 0.1:
        return min(damping * 3.0, 1e6)
    return damping


def _direction(direction, grad, g_old, search_old):
    """The next search direction (as a "gradient" to subtract): the gradient, or Polak-Ribiere+
    conjugate gradient ``g + beta * s_old`` with ``beta = max(0, g.(g - g_old) / |g_old|^2)``."""
    if direction != "conjugate":
        return grad
    denom = float((g_old * g_old).sum())
    beta = max(0.0, float((grad * (grad - g_old)).sum()) / denom) if denom > 0 else 0.0
    d = grad + beta * search_old
    return d if float((d * grad).sum()) > 0 else grad


def _grad(evaluator, W, V=None):
    if V is not None and hasattr(evaluator, "jacobians"):
        return evaluator.cost_and_grad(W, V)
    return evaluator.cost_and_grad(W)
