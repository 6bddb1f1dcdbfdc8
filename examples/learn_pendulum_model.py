"""Learn the dynamics of a pendulum from simulated trajectories with a small SyMo model
(a structured, energy-based network), then read its test metrics. About 10-20 s on a CPU:

    python examples/learn_pendulum_model.py
"""

from __future__ import annotations

import tempfile

from engine.jobs import run_job
from engine.training import TrainConfig, train_job


def main() -> dict:
    config = TrainConfig(model="symo", system="pendulum", trajectories=8, epochs=200, hidden=32, seed=0)
    with tempfile.TemporaryDirectory() as folder:
        # a job (progress, cancellation) run in this thread; the model is saved to `folder`
        # as safetensors + JSON, the format the app opens
        result = run_job(train_job(config, out_dir=folder))
        row = result["row"]
    print(f"{config.model} on {config.system}, {config.trajectories} trajectories, {config.epochs} epochs:")
    for key in ("final_loss", "train_mse", "test_mse", "integration_mse", "energy_mse", "seconds"):
        if key in row:
            print(f"  {key:16} {row[key]:.4g}")
    return row


if __name__ == "__main__":
    row = main()
    losses = [value for key, value in row.items() if key.endswith("mse") and value is not None]
    assert losses and all(value == value for value in losses), row  # finite, not NaN
