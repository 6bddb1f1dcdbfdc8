"""Joint torques in a log: the preparation that suits inverse dynamics, and the torque noise.

Shared by identification (:mod:`engine.identification.from_log`) and the comparison of models on
a robot's log (:mod:`engine.training.robot_compare`), which judge torques against the same noise.
"""

from __future__ import annotations

import numpy as np

from engine.logs.prepare import PrepareConfig

__all__ = ["SLIDING_SPEED", "robot_prepare_config", "sliding_rmse", "torque_noise_level", "torque_scale_warning"]


def robot_prepare_config(**overrides):
    """The log preparation that suits identification: accelerations (and velocities) as
    Savitzky-Golay derivatives of ``q`` (window 31, polyorder 5 at ~100 Hz), torques not
    smoothed (their noise is estimated from them), the last 30 % of the time held out.
    ``overrides`` replace any :class:`engine.logs.PrepareConfig` field."""
    base = {"window": 31, "polyorder": 5, "derivative": "savgol", "use_logged_velocities": False,
            "accelerations": True, "smooth_controls": False, "val_fraction": 0.3}
    base.update(overrides)
    return PrepareConfig(**base)


def torque_noise_level(tau: np.ndarray, window: int = 21, polyorder: int = 5, trim: int = 0) -> np.ndarray:
    """Per-column white-noise standard deviation of ``tau`` (N, k), in its units, ``(k,)``.

    The residual ``r = tau - S tau`` of a Savitzky-Golay filter ``S`` (a local polynomial
    projection) has, for white noise of standard deviation ``sigma``, the standard deviation
    ``sigma sqrt(1 - c0)`` (``c0``: the centre coefficient); slowly varying signals pass
    ``S`` and leave no residual. ``trim`` samples are dropped at each end (filter edges).
    """
    from scipy.signal import savgol_coeffs, savgol_filter

    tau = np.asarray(tau, dtype=np.float64)
    if tau.ndim != 2 or tau.shape[0] < window + 2 * trim:
        raise ValueError(f"torque_noise_level: need (N, k) torques with N >= {window + 2 * trim}, "
                         f"got shape {tau.shape}")
    r = tau - savgol_filter(tau, window, polyorder, axis=0, mode="interp")
    h = window // 2
    inner = r[max(trim, h):tau.shape[0] - max(trim, h)]
    c0 = float(savgol_coeffs(window, polyorder)[h])
    return np.sqrt((inner ** 2).mean(0) / (1.0 - c0))


def torque_scale_warning(logged: np.ndarray, modelled: np.ndarray, joint_names: list[str],
                         low: float = 0.2, high: float = 5.0, light: float = 0.1,
                         light_band: float = 50.0) -> str | None:
    """A plain warning when the logged torques (N, n) are far from the scale of a model's torques
    for the same motion (N, n) (e.g. mN m logged as N m, motor-side torques before the gear): the
    ratio of their RMS, over all joints and per joint, outside ``[low, high]``; None otherwise.
    A *light* joint, whose modelled RMS is under ``light`` times the median joint's (a wrist, where
    the friction the robot file lacks can be most of the torque), is judged by the wider band
    ``[1 / light_band, light_band]``: a unit or gear error is still 50 to 1000 times off."""
    lg, md = np.asarray(logged, dtype=float), np.asarray(modelled, dtype=float)
    model_rms = np.sqrt((md ** 2).mean(0))
    per = np.sqrt((lg ** 2).mean(0)) / np.maximum(model_rms, 1e-12)
    overall = float(np.sqrt((lg ** 2).mean()) / max(float(np.sqrt((md ** 2).mean())), 1e-12))
    is_light = model_rms < light * float(np.median(model_rms))
    off = [f"{n} x{r:.3g}" for n, r, lt in zip(joint_names, per, is_light)
           if not ((1.0 / light_band <= r <= light_band) if lt else (low <= r <= high))]
    if low <= overall <= high and not off:
        return None
    return (f"the logged torques are {overall:.3g} times the robot model's for the same motion (per joint: "
            f"{', '.join(off) or 'all within range'}); check the torque units (N m, not mN m) and whether they "
            "are motor-side (before the gear)")


SLIDING_SPEED = 0.1   # rad/s (m/s): below it a joint's dry friction may stick


def sliding_rmse(residuals: np.ndarray, qd: np.ndarray, speed: float = SLIDING_SPEED) -> tuple[float, list[float]]:
    """``(rmse, per joint)`` of torque ``residuals`` (N, n; N m) over the sliding samples: joint i's
    where ``|qd_i| >= speed`` (rad/s), NaN for a joint that never slides. Near rest a dry friction
    sticks: any torque inside its band gives the same (zero) motion, so there the torque is not a
    function of the motion and no inverse-dynamics model, the true one included, predicts it."""
    slides = np.abs(np.asarray(qd)) >= speed
    e2 = np.where(slides, np.asarray(residuals, dtype=np.float64) ** 2, 0.0)
    counts = slides.sum(0)
    per_joint = [float(np.sqrt(e2[:, i].sum() / c)) if c else float("nan") for i, c in enumerate(counts)]
    total = float(np.sqrt(e2.sum() / counts.sum())) if counts.sum() else float("nan")
    return total, per_joint
