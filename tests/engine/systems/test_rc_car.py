"""The drifting simulator against analytic references: friction threshold, kinematic bicycle."""

import math

import pytest
import torch

from engine.systems.rc_car import CarParams, CarParamsError, car_step, car_substep, simulate

P = CarParams()


def test_launch_slips_exactly_above_the_static_limit():
    # At rest only the drive acts: a rear wheel needs 2 * throttle; the limit is mu_s g.
    limit = P.mu_static * P.gravity / 2
    v = torch.zeros(2, 3, dtype=torch.float64)
    u = torch.tensor([[0.97 * limit, 0.0], [1.03 * limit, 0.0]], dtype=torch.float64)
    _, slip = car_substep(v, u, P, P.dt / P.substeps)
    assert slip[0].tolist() == [0, 0, 0, 0]
    assert slip[1].tolist() == [0, 0, 1, 1]          # rear wheels spin, front wheels roll
    # below the limit the car accelerates at the throttle; above, at the dynamic limit
    v1, _ = car_substep(v, u, P, 0.01)
    assert float(v1[0, 0]) == pytest.approx(0.01 * 0.97 * limit, rel=1e-9)
    assert float(v1[1, 0]) == pytest.approx(0.01 * P.mu_dynamic * P.gravity / 2, rel=1e-9)


@pytest.mark.parametrize("speed, steer, slides", [(1.0, 0.3, False), (1.5, 0.15, False),
                                                  (3.5, 0.4, True), (4.0, 0.3, True)])
def test_steady_cornering_slides_only_above_the_friction_limit(speed, steer, slides):
    # Kinematic cornering needs the lateral acceleration v^2 tan(delta) / L; it slides when
    # that exceeds mu_s g (with a margin on both sides).
    need = speed ** 2 * math.tan(steer) / P.wheelbase
    assert (need > 1.2 * P.mu_static * P.gravity) == slides
    assert slides or need < 0.8 * P.mu_static * P.gravity
    hold = P.rolling_resistance * speed + P.drag * speed ** 2 / P.mass
    U = torch.tensor([[hold, steer]], dtype=torch.float64).repeat(40, 1)
    out = simulate(
        torch.zeros(3, dtype=torch.float64), torch.tensor([speed, 0, 0], dtype=torch.float64), U, P
    )
    late_slip = float(out["slip"][10:].max())
    if slides:
        assert late_slip > 0.2
    else:
        assert late_slip == 0.0
        v = out["v"][-1]
        # no slip: the kinematic bicycle about the centre (r = vx tan(delta) / L, vy = r L / 2)
        r = float(v[0]) * math.tan(steer) / P.wheelbase
        assert float(v[2]) == pytest.approx(r, rel=0.03)
        assert float(v[1]) == pytest.approx(r * P.wheelbase / 2, rel=0.05)


def test_sliding_car_keeps_its_momentum_direction():
    # Yawing fast with no traction available the velocity stays fixed in the world frame.
    p = P.with_(mu_static=1e-6, mu_dynamic=1e-6, rolling_resistance=0.0, drag=0.0)
    out = car_step(torch.zeros(3, dtype=torch.float64), torch.tensor([2.0, 0.0, 3.0], dtype=torch.float64),
                   torch.tensor([0.0, 0.4], dtype=torch.float64), p)
    yaw = float(out.pose[2])
    world = (math.cos(yaw) * float(out.v[0]) - math.sin(yaw) * float(out.v[1]),
             math.sin(yaw) * float(out.v[0]) + math.cos(yaw) * float(out.v[1]))
    assert world[0] == pytest.approx(2.0, abs=0.02) and world[1] == pytest.approx(0.0, abs=0.02)
    assert float(out.slip.min()) == 1.0


def test_batched_and_differentiable():
    pose = torch.zeros(5, 3, dtype=torch.float64)
    v = torch.rand(5, 3, dtype=torch.float64)
    u = torch.rand(5, 2, dtype=torch.float64, requires_grad=True)
    out = car_step(pose, v, u, P)
    out.pose.sum().backward()
    assert u.grad.shape == (5, 2) and torch.isfinite(u.grad).all()
    single = car_step(pose[2], v[2], u[2].detach(), P)
    assert torch.allclose(single.pose, out.pose[2].detach())


def test_bad_params_name_the_field():
    with pytest.raises(CarParamsError, match="mu_dynamic"):
        CarParams(mu_dynamic=2.0)
    with pytest.raises(CarParamsError, match="wheelbase"):
        CarParams(wheelbase=-1.0)
