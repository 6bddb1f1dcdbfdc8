"""When the compiled kernels serve a call (engine.robots.backends.compiled) and when the torch
algorithms do, and that both give the same answers for everything a call may carry: learned
link parameters, damping, armature, gravity off or turned, batch shapes, a floating base.

Both paths meet Pinocchio in test_rbd_paths, test_against_pinocchio, test_floating_base and
test_mjcf (the ``dynamics_path`` fixture); here the compiled path is held against the torch
algorithms, which autograd differentiates and finite differences check.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from robots_testdata import SMALL_TREE

from engine.robots import RobotModel, compiled_dynamics, compiled_kernels
from engine.robots.backends import compiled_autograd, torch_only
from engine.robots.library import load_robot


def _calls(monkeypatch):
    """Counts the kernel calls of each algorithm (after the build's own test calls), whichever
    route reaches them (the compiled backend, or the model's CompiledCalls shortcut); "grad": the
    forward of a differentiable RNEA or ABA call (vjp_kernels.forward_kernel, which keeps what its
    backward reads)."""
    assert compiled_dynamics.available()
    from engine.robots import vjp_kernels

    counts = {"rnea": 0, "crba": 0, "aba": 0, "link_poses": 0, "jacobian": 0, "grad": 0}
    kernels = {"rnea": "rnea_kernel", "crba": "crba_kernel", "aba": "aba_kernel", "link_poses": "fk_kernel",
               "jacobian": "jacobian_kernel"}
    for module, name, kernel in [(compiled_kernels, n, k) for n, k in kernels.items()] + [
            (vjp_kernels, "grad", "forward_kernel")]:
        inner = getattr(module, kernel)

        def spy(*args, _inner=inner, _name=name, **kwargs):
            counts[_name] += 1
            return _inner(*args, **kwargs)

        monkeypatch.setattr(module, kernel, spy)
    return counts


def _state(m, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, m.nq, dtype=torch.float64, generator=g)
    if m.floating:
        q[:, 3:7] /= q[:, 3:7].norm(dim=1, keepdim=True)
    v, a = (torch.randn(batch, m.nv, dtype=torch.float64, generator=g) for _ in range(2))
    return q, v, a


def _all(m, q, v, a, **kw):
    last = m.link_names[-1]
    point = q[:, :3] * 0.1           # a point in the last link's frame, one per sample
    return (m.inverse_dynamics(q, v, a, **kw), m.mass_matrix(q), m.forward_dynamics(q, v, a, **kw),
            m.gravity_torques(q), m.bias_forces(q, v), m.forward_kinematics(q), m.jacobian(q, last),
            m.jacobian(q, last, point=point))


def _same(ours, ref, tol=1e-9):
    for x, y in zip(ours, ref):
        scale = max(1.0, float(y.abs().max()))
        assert float((x - y).abs().max()) <= tol * scale


def test_calls_without_derivatives_take_the_kernels_and_others_do_not(monkeypatch):
    m = load_robot("solo12")
    q, v, a = _state(m, 3)
    counts = _calls(monkeypatch)
    _all(m, q, v, a)
    assert counts == {"rnea": 3, "crba": 1, "aba": 1, "link_poses": 1, "jacobian": 2, "grad": 0}
    with torch.no_grad():
        m.inverse_dynamics(q.requires_grad_(True), v, a)
    assert counts["rnea"] == 4 and counts["grad"] == 0   # no_grad: nothing to differentiate
    tau = m.inverse_dynamics(q, v, a)                # q requires a gradient: the kernels, analytic backward
    assert counts["rnea"] == 4 and counts["grad"] == 1 and tau.grad_fn is not None
    monkeypatch.setattr(compiled_autograd, "ENABLED", False)     # LAGRANGE_COMPILED_BACKWARD=0: torch
    assert m.inverse_dynamics(q, v, a).grad_fn is not None and counts["rnea"] == 4 and counts["grad"] == 1
    monkeypatch.setattr(compiled_autograd, "ENABLED", True)
    q = q.detach()
    torch.func.jacrev(lambda x: m.inverse_dynamics(x, v, a))(q[:1])      # a functorch transform
    torch.func.vmap(lambda x: m.mass_matrix(x))(q)
    with torch_only():
        m.forward_dynamics(q, v, a)
    monkeypatch.setenv("LAGRANGE_NO_COMPILED", "1")
    m.forward_dynamics(q, v, a)
    assert counts == {"rnea": 4, "crba": 1, "aba": 1, "link_poses": 1, "jacobian": 2, "grad": 1}
    monkeypatch.delenv("LAGRANGE_NO_COMPILED")
    J = m.jacobian(q, "FL_FOOT", point=torch.zeros(3, dtype=torch.float64, requires_grad=True))
    assert J.grad_fn is not None                      # a point that needs a gradient: torch
    m32 = load_robot("panda", dtype=torch.float32)   # float32 models stay on torch (the kernels are float64)
    m32.mass_matrix(torch.zeros(2, m32.dof))
    assert counts == {"rnea": 4, "crba": 1, "aba": 1, "link_poses": 1, "jacobian": 2, "grad": 1}
    mimic = load_robot("panda-erd")  # coupled mimic fingers: kernels on every joint, projected
    assert mimic.mimic_joint_names
    x = torch.zeros(2, mimic.nq, dtype=torch.float64)
    mimic.mass_matrix(x)
    mimic.forward_dynamics(x, x, x)                   # M^-1 (tau - h): CRBA and RNEA
    assert counts == {"rnea": 5, "crba": 3, "aba": 1, "link_poses": 1, "jacobian": 2, "grad": 1}


def test_learnable_parameters_take_the_kernels_with_analytic_backwards(monkeypatch):
    m = RobotModel.from_string(SMALL_TREE)
    m.make_learnable("c", "mass")
    m.make_learnable("b", "inertia")
    with torch.no_grad():       # a trained model's values, not the file's
        for p in m.parameters():
            p.add_(0.1)
    q, v, a = _state(m, 5, seed=1)
    counts = _calls(monkeypatch)
    # grad mode with parameters: RNEA, CRBA and ABA by the kernels with analytic backwards (to the
    # parameters through the regressor, test_derivatives, test_vjp_kernels): RNEA's (inverse
    # dynamics, gravity, bias) and ABA's (as M^-1 (tau - h)) forward by the vjp kernel that keeps
    # what the backward reads; kinematics, Jacobians: torch
    ours_grad = _all(m, q, v, a, damping=True)
    assert counts == {"rnea": 0, "crba": 1, "aba": 0, "link_poses": 0, "jacobian": 0, "grad": 4}
    assert ours_grad[0].grad_fn is not None and ours_grad[2].grad_fn is not None
    with torch_only():
        ref = _all(m, q, v, a, damping=True)
    with torch.no_grad():
        ours = _all(m, q, v, a, damping=True)
    assert counts["rnea"] == 3 and counts["grad"] == 4
    _same(ours, [r.detach() for r in ref])
    _same([r.detach() for r in ours_grad], [r.detach() for r in ref])


@pytest.mark.parametrize("name", ["panda", "allegro-right", "solo12", "talos", "baxter", "talos-full"])
@pytest.mark.parametrize("batch", [1, 200])
def test_same_answers_as_the_torch_algorithms(name, batch):
    """Arms, a hand, legged robots, and coupled mimic grippers on a fixed (Baxter) and a floating base."""
    m = load_robot(name, floating_base=name in ("solo12", "talos", "talos-full"))
    if name in ("baxter", "talos-full"):
        assert m.mimic_joint_names
    q, v, a = _state(m, batch, seed=batch)
    ours = _all(m, q, v, a, damping=True)
    with torch_only():
        ref = _all(m, q, v, a, damping=True)
    _same(ours, ref)
    # gravity off and turned; leading batch dimensions and a single state
    g = (0.0, 3.0, -4.0)
    for kw in ({"gravity": False}, {"gravity": g}):
        ours = (
            m.inverse_dynamics(q, v, a, **kw),
            m.forward_dynamics(q, v, a, **kw),
            m.gravity_torques(q, **kw),
        )
        with torch_only():
            ref = (
                m.inverse_dynamics(q, v, a, **kw),
                m.forward_dynamics(q, v, a, **kw),
                m.gravity_torques(q, **kw),
            )
        _same(ours, ref)
    shaped = m.mass_matrix(q[:1].expand(2, 3, m.nq))
    assert shaped.shape == (2, 3, m.nv, m.nv)
    assert torch.equal(shaped[1, 2], m.mass_matrix(q[0]))


def test_armature_on_a_tree_and_a_floating_base():
    from dataclasses import replace

    from engine.robots.urdf import parse_urdf_string

    for floating in (False, True):
        desc = replace(parse_urdf_string(SMALL_TREE), floating_base=floating)
        desc = replace(
            desc, joints=tuple(replace(j, armature=0.1 * (k + 1)) for k, j in enumerate(desc.joints))
        )
        m = RobotModel.from_description(desc)
        q, v, a = _state(m, 9, seed=4)
        ours = _all(m, q, v, a)
        with torch_only():
            ref = _all(m, q, v, a)
        _same(ours, ref)
        # the armature is on M's joint diagonal: M qdd + h = tau
        M, h = ours[1], ours[4]
        assert torch.allclose((M @ ours[2].unsqueeze(-1)).squeeze(-1) + h, a, atol=1e-9)


def test_threads_share_the_kernels():
    """The kernels release the GIL and keep no state between calls: threads get their own answers."""
    m = load_robot("talos", floating_base=True)
    states = [_state(m, 64, seed=s) for s in range(4)]
    expected = [m.forward_dynamics(*s).numpy() for s in states]
    results = [None] * 4

    def work(k):
        for _ in range(5):
            results[k] = m.forward_dynamics(*states[k]).numpy()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)


def test_a_kernel_build_failure_leaves_the_torch_algorithms_serving(monkeypatch, caplog):
    """A compiler or cache failure (numba's, the platform's) is logged once and never reaches a call."""
    def broken():
        raise OSError("no space left for the kernel cache")

    monkeypatch.setattr(compiled_dynamics, "_ready", None)
    monkeypatch.setattr(compiled_dynamics, "_kernels", compiled_dynamics._kernels)  # restored after the test
    monkeypatch.setattr(compiled_dynamics, "_exercise", broken)
    m = load_robot("iiwa")
    q, v, a = _state(m, 4, seed=2)
    with caplog.at_level("WARNING", logger="engine.robots.compiled_dynamics"):
        tau = m.inverse_dynamics(q, v, a)
        m.mass_matrix(q)
    assert not compiled_dynamics.available()
    warnings = [r for r in caplog.records if "could not be built" in r.getMessage()]
    assert len(warnings) == 1 and "no space left" in warnings[0].getMessage()
    with torch_only():
        assert torch.equal(tau, m.inverse_dynamics(q, v, a))


WARM_UP = """
from engine.robots import compiled_kernels, regressor_kernels, vjp_kernels
from engine.robots import derivative_lane_kernels as dl
from engine.robots.kernel_warm_up import warm_up
assert warm_up()
kernels = [compiled_kernels.rnea_kernel, compiled_kernels.aba_kernel, dl.rnea_lanes, dl.aba_lanes, dl.rnea_one,
           dl.aba_one, regressor_kernels.regressor_kernel, regressor_kernels.regressor_vjp_kernel,
           vjp_kernels.forward_kernel, vjp_kernels.adjoint_kernel, vjp_kernels.crba_vjp_kernel]
print("unbuilt", [k.__name__ for k in kernels if not k.signatures])
"""


def test_warm_up_builds_the_derivative_and_backward_kernels(subprocess_env):
    """``dev.py setup`` runs kernel_warm_up.warm_up so that no first call of a session waits for the compiler: in a
    fresh process, after it, each kernel (values, derivatives, regressor, the backward's passes)
    holds a compiled signature (built, or loaded from numba's cache)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", WARM_UP], env=subprocess_env, capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, out.stderr
    assert "unbuilt []" in out.stdout, out.stdout
