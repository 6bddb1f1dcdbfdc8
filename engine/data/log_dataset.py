"""Log-backed data sets: a prepared hardware log cut into the trajectory chunks the trainer reads.

A prepared log (:class:`engine.logs.PreparedLog`, uniform step ``dt``) becomes a
:class:`LogDataset`, a :class:`~engine.data.base.TrajectoryData` like the generated
:class:`~engine.data.dataset.TrajectoryDataset`, so the trainer trains on it unchanged:

- the training time ranges are cut into chunks of ``steps + 2`` points that overlap by two
  points, so every three-point window of the training range is used exactly once;
- the validation ranges give the one-step test windows the same way, and chunks of
  ``horizon + 2`` points (restarted every ``horizon`` steps) for k-step rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engine.data.base import TrajectoryData

__all__ = ["LogDataset", "LogSystem", "log_dataset"]

ANGLE_UNITS = ("rad", "deg", "rev")


@dataclass
class LogSystem:
    """What the trainer needs to know of a system behind a log: sizes, angles, actuation."""

    dof: int
    control_dim: int
    angle_mask: tuple
    name: str = "log"

    def input_matrix(self, dtype=torch.float32, device=None) -> torch.Tensor:
        """``B`` (n, m): the controls drive the first m coordinates (as the analytic systems do)."""
        B = torch.zeros(self.dof, self.control_dim, dtype=dtype, device=device)
        k = min(self.dof, self.control_dim)
        B[:k, :k] = torch.eye(k, dtype=dtype, device=device)
        return B

    def describe(self) -> dict:
        return {"name": self.name, "dof": self.dof, "control_dim": self.control_dim,
                "angle_mask": list(self.angle_mask)}


@dataclass
class LogDataset(TrajectoryData):
    """Trajectory chunks from a prepared log.

    ``train_x`` (N, steps + 2, 2n), ``train_u`` (N, steps + 2, m); ``test_x``/``test_u`` the same
    from the validation ranges; ``long_x``/``long_u`` (R, horizon + 2, ...) validation rollout
    chunks; ``long_t`` (R, horizon + 2) their times (s). ``h``: time step (s).
    """

    kind = "log"

    system: LogSystem
    h: float
    train_x: np.ndarray
    train_u: np.ndarray
    test_x: np.ndarray
    test_u: np.ndarray
    long_x: np.ndarray
    long_u: np.ndarray
    long_t: np.ndarray
    q_names: list = field(default_factory=list)
    description: dict = field(default_factory=dict)

    def subset(self, n_train: int) -> LogDataset:
        if not 1 <= n_train <= len(self.train_x):
            raise ValueError(f"train trajectories: asked for {n_train}, the log gives {len(self.train_x)}")
        return LogDataset(self.system, self.h, self.train_x[:n_train], self.train_u[:n_train], self.test_x,
                          self.test_u, self.long_x, self.long_u, self.long_t, self.q_names, self.description)

    def describe(self) -> dict:
        return {"kind": "log", "h": self.h, "system": self.system.describe(), "q_names": self.q_names,
                "shapes": {k: list(getattr(self, k).shape) for k in ("train_x", "test_x", "long_x")},
                **self.description}

    def fingerprint(self) -> str:
        """The prepared log's data hash when it has one, else the arrays' (see the base class)."""
        return str(self.description.get("data_hash") or super().fingerprint())


def _chunks(x: np.ndarray, u: np.ndarray, t: np.ndarray, segments: list[slice], length: int, stride: int):
    xs, us, ts = [], [], []
    for seg in segments:
        for a in range(seg.start, seg.stop - length + 1, stride):
            xs.append(x[a:a + length])
            us.append(u[a:a + length])
            ts.append(t[a:a + length])
    if not xs:
        return None
    return np.stack(xs), np.stack(us), np.stack(ts)


def log_dataset(prepared, steps: int = 32, horizon: int = 50) -> LogDataset:
    """Cut a :class:`~engine.logs.PreparedLog` into training, test and rollout chunks.

    ``steps``: windows per training chunk (chunks have ``steps + 2`` points); ``horizon``: the
    length of each validation rollout (steps). Raises ``ValueError`` naming the range that is
    too short for one chunk.
    """
    desc = prepared.description or {}
    q = np.asarray(prepared.q, dtype=np.float64)
    x = np.concatenate([q, np.asarray(prepared.qd, dtype=np.float64)], axis=1)
    u = np.asarray(prepared.u, dtype=np.float64)
    if u.shape[1] == 0:
        u = np.zeros((len(x), 1))
    t = np.asarray(prepared.t, dtype=np.float64)
    source = desc.get("source") or "the log"
    train_seg = prepared.segments(prepared.train_mask)
    val_seg = prepared.segments(prepared.val_mask)
    L = steps + 2
    train = _chunks(x, u, t, train_seg, L, steps)
    if train is None:
        raise ValueError(f"{source}: the training range holds no run of {L} samples (steps + 2); "
                         "widen it or lower 'steps'")
    test = _chunks(x, u, t, val_seg, L, steps)
    if test is None:
        raise ValueError(f"{source}: the validation range holds no run of {L} samples (steps + 2); "
                         "widen it or lower 'steps'")
    K = horizon + 2
    long = _chunks(x, u, t, val_seg, K, horizon)
    if long is None:
        raise ValueError(f"{source}: the validation range holds no run of {K} samples (horizon + 2); "
                         "widen it or lower 'horizon'")
    mapping = desc.get("mapping") or {}
    units = mapping.get("units") or {}
    q_names = list(desc.get("q_names") or [f"q{i}" for i in range(q.shape[1])])
    angle_mask = tuple(units.get(name, "") in ANGLE_UNITS for name in q_names)
    system = LogSystem(dof=q.shape[1], control_dim=u.shape[1], angle_mask=angle_mask,
                       name=Path(source).stem if source != "the log" else "log")
    info = {"source": desc.get("source"), "data_hash": getattr(prepared, "data_hash", None),
            "dt": float(prepared.dt), "steps": steps, "horizon": horizon,
            "n_train_chunks": len(train[0]), "n_val_chunks": len(test[0])}
    return LogDataset(system=system, h=float(prepared.dt), train_x=train[0], train_u=train[1],
                      test_x=test[0], test_u=test[1], long_x=long[0], long_u=long[1], long_t=long[2],
                      q_names=q_names, description=info)
