"""Design an eigenmode of the double pendulum: learn a control potential that turns a
pick-and-place motion (from q0 to a target and back) into a natural oscillation. A short
run (a few hundred epochs) takes about 10-20 s on a CPU:

    python examples/eigenmode_design.py
"""

from __future__ import annotations

from engine.eigenmodes.config import DesignConfig
from engine.eigenmodes.jobs import LearnJob, learn_summary
from engine.jobs import run_job


def main() -> dict:
    design = DesignConfig()
    design.task.q0 = (-0.6, -0.2)
    design.task.target = (1.25, -1.5)
    design.task.period = 2.5
    design.train.epochs = 60
    design.validate()                                  # every field checked before the work
    mode = run_job(LearnJob(design))
    summary = learn_summary(mode)
    for key, value in summary.items():
        print(f"{key}: {value}")
    return summary


if __name__ == "__main__":
    main()
