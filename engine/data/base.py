"""The one interface every trajectory data set follows (generated or cut from a log).

A data set holds numpy float64 arrays ``train_x`` (N, T, 2n), ``train_u`` (N, T, m),
``test_x``/``test_u`` and ``long_x``/``long_u`` (R, K, ...), the time step ``h`` (s) and the
``system`` (sizes, angle mask, input matrix; an analytic system also gives energies). The
trainer, the metrics and the runs read only this interface.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["ARRAYS", "TrajectoryData"]

ARRAYS = ("train_x", "train_u", "test_x", "test_u", "long_x", "long_u")


class TrajectoryData:
    """Base of :class:`~engine.data.dataset.TrajectoryDataset` and :class:`~engine.data.log_dataset.LogDataset`.

    Subclasses are dataclasses holding the arrays of :data:`ARRAYS` as fields of those names;
    they give ``system``, ``h``, :meth:`subset` and :meth:`describe`.
    """

    kind = "generated"    # "generated" or "log"

    # and ``system`` (the system's description object) and ``h`` (s): fields or properties of
    # the subclass (not declared here, so that a dataclass subclass can make them fields)

    def subset(self, n_train: int) -> TrajectoryData:  # pragma: no cover - abstract
        """The data set with only the first ``n_train`` training trajectories."""
        raise NotImplementedError

    def describe(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in ARRAYS}

    def fingerprint(self) -> str:
        """sha256 of the six arrays (names, dtypes, shapes and bytes): the data a model saw."""
        h = hashlib.sha256()
        for key, a in self.arrays().items():
            a = np.ascontiguousarray(a)
            h.update(key.encode() + str(a.dtype).encode() + str(a.shape).encode())
            h.update(a.tobytes())
        return h.hexdigest()
