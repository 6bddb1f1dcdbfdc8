"""A robot from the library: forward kinematics, a Jacobian, inverse kinematics to a target,
and the rigid-body dynamics (inverse and forward dynamics, mass matrix), batched and
differentiable. Runs in a few seconds on a CPU:

    python examples/robot_kinematics_dynamics.py
"""

from __future__ import annotations

import torch

from engine.robots import CompiledCalls
from engine.robots.ik import IKOptions, solve_ik
from engine.robots.library import load_robot


def main() -> dict:
    model = load_robot("panda")  # float64 on the CPU: the engine's default for rigid bodies
    link = "panda_hand_tcp"
    print(f"{model.name}: {model.dof} joints, total mass {model.total_mass:.2f} kg")

    # forward kinematics of a batch of 8 random configurations within the limits
    torch.manual_seed(0)
    limits = model.joint_limits
    q = limits.lower + (limits.upper - limits.lower) * torch.rand(8, model.dof, dtype=torch.float64)
    poses = model.link_pose(q, link)                       # (8, 4, 4)
    J = model.jacobian(q, link)                            # (8, 6, dof)
    print(f"hand positions (m):\n{poses[:3, :3, 3]}")
    print(f"Jacobian of the first sample: {tuple(J.shape)}")

    # inverse kinematics: move the hand 10 cm up from where it is in the middle of the joint ranges
    q_mid = (limits.lower + limits.upper) / 2
    target = model.link_pose(q_mid, link).clone()
    target[2, 3] += 0.10
    result = solve_ik(model, {link: target}, q0=q_mid, options=IKOptions())
    reached = float((model.link_pose(result.q, link)[:3, 3] - target[:3, 3]).norm())  # checked by FK
    print(f"IK {'converged' if result.converged else 'did not converge'}: "
          f"the hand is {reached * 1e3:.3f} mm from the target")

    # dynamics: tau = M(q) qdd + b(q, qd), and forward dynamics undoes it
    qd = torch.randn(8, model.dof, dtype=torch.float64)
    qdd = torch.randn(8, model.dof, dtype=torch.float64)
    tau = model.inverse_dynamics(q, qd, qdd)               # (8, dof), N m
    M = model.mass_matrix(q)                               # (8, dof, dof)
    qdd_back = model.forward_dynamics(q, qd, tau)
    error = float((qdd_back - qdd).abs().max())
    print(f"forward dynamics recovers qdd to {error:.2e} rad/s^2; M is symmetric: "
          f"{bool(torch.allclose(M, M.transpose(-1, -2)))}")

    # one sample at a time (a control loop): the same kernels on numpy arrays, a few microseconds a call
    calls = CompiledCalls(model)
    qdd_one = calls.aba(q[0].numpy(), qd[0].numpy(), tau[0].numpy())     # (dof,)
    one_error = float(abs(qdd_one - qdd[0].numpy()).max())
    print(f"one sample through CompiledCalls: the same accelerations to {one_error:.2e} rad/s^2")

    # gradients flow through the dynamics: d(total torque^2)/dq
    q_grad = q.clone().requires_grad_(True)
    model.inverse_dynamics(q_grad, qd, qdd).pow(2).sum().backward()
    print(f"gradient of the squared torques w.r.t. q, first sample: {q_grad.grad[0].numpy().round(2)}")
    return {"ik_converged": bool(result.converged), "ik_error_m": reached,
            "fd_error": max(error, one_error)}


if __name__ == "__main__":
    out = main()
    assert out["ik_converged"] and out["ik_error_m"] < 2e-3 and out["fd_error"] < 1e-8, out
