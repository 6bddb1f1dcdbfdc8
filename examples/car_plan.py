"""Plan an RC car manoeuvre: a shipped scenario (parallel parking), trajectory optimisation
on the car's simulator model, then the controls executed open loop on the simulator. About
10-20 s on a CPU:

    python examples/car_plan.py
"""

from __future__ import annotations

from engine.car.dynamics import load_dynamics
from engine.car.optimiser import OptimiserConfig
from engine.car.scenarios import execute_open_loop, plan_trajectory, scenario
from engine.jobs import run_job
from engine.systems.rc_car import CarParams


def main() -> dict:
    params = CarParams()
    plan = scenario("parallel-parking")
    dynamics = load_dynamics("sim", params)           # or a folder holding a learned car model
    config = OptimiserConfig(candidates=32, max_iterations=8)
    outcome = run_job(lambda ctx: plan_trajectory(plan, dynamics, params, config, ctx=ctx))
    result = outcome.result
    executed = execute_open_loop(plan, outcome.controls, params)
    print(f"{plan.name} on {dynamics.name}: cost {result.initial_cost:.3g} -> {result.cost:.3g} in "
          f"{result.iterations} iterations ({result.seconds:.1f} s)")
    print(f"executed on the simulator: end position error {executed['position_error']:.3f} m, "
          f"heading error {executed['heading_error']:.3f} rad")
    return {"initial_cost": float(result.initial_cost), "cost": float(result.cost),
            "position_error": float(executed["position_error"])}


if __name__ == "__main__":
    out = main()
    assert out["cost"] < out["initial_cost"], out
