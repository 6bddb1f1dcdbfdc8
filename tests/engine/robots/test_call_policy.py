"""How the model's methods run (``engine.robots.call_policy``): one intra-op thread at
moderate batches, inference mode when nothing needs a gradient, and results that behave as
normal tensors either way (autograd, in-place updates), also after the caches of constants
were filled inside inference mode."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from engine.robots import call_policy as call_policy_module
from engine.robots.backends import torch_only
from engine.robots.backends.batch_last import BatchLastBackend
from engine.robots.library import load_robot


def _threads_seen(model, q, monkeypatch) -> list:
    seen = []
    inner = BatchLastBackend._terms

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return inner(*args, **kwargs)

    monkeypatch.setattr(BatchLastBackend, "_terms", spy)
    with (
        torch.no_grad(),
        torch_only(),
    ):  # the torch algorithms (without derivatives the compiled kernels serve)
        model.inverse_dynamics(q, torch.zeros_like(q), torch.zeros_like(q))
        model.mass_matrix(q)
    return seen


def test_moderate_batches_run_on_one_thread_and_restore_the_setting(monkeypatch):
    m = load_robot("panda")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        low, high = call_policy_module._ONE_THREAD_WORK
        moderate = torch.zeros(1024, m.dof, dtype=torch.float64)
        assert low <= 1024 * m._n < high
        assert _threads_seen(m, moderate, monkeypatch) == [1, 1]
        assert torch.get_num_threads() == 2
        large = torch.zeros(high // m._n + 1, m.dof, dtype=torch.float64)
        monkeypatch.undo()
        assert _threads_seen(m, large, monkeypatch) == [2, 2]
    finally:
        torch.set_num_threads(before)


def test_results_are_normal_tensors_and_gradients_flow():
    m = load_robot("solo12")
    q = m.neutral().expand(3, m.nq).clone()
    q[:, 7:] = 0.3
    v = torch.ones(3, m.nv, dtype=torch.float64)
    with torch.no_grad():
        tau = m.inverse_dynamics(q, v, v)
    M = m.mass_matrix(q)                                   # grad mode, nothing requires a gradient
    assert not tau.is_inference() and not M.is_inference() and M.grad_fn is None
    tau += 1.0                                             # in place, outside inference mode
    w = torch.ones(m.nv, dtype=torch.float64, requires_grad=True)
    (M @ w).sum().backward()                               # the result takes part in a graph
    assert torch.allclose(w.grad, M.sum(dim=(0, 1)))
    qg = q.clone().requires_grad_(True)
    out = m.inverse_dynamics(qg, v, v)
    assert out.grad_fn is not None and not out.is_inference()


def test_constants_cached_inside_inference_mode_do_not_break_later_gradients():
    # a fresh process, so that the first calls fill every cache of constants in inference mode
    script = textwrap.dedent("""
        import torch
        from engine.robots.library import load_robot
        for name in ("solo12", "panda", "allegro-right"):
            m = load_robot(name)
            for B in (1, 200):
                q = m.neutral().expand(B, m.nq).clone()
                q[:, m.nq - m.dof:] = 0.2
                v = torch.full((B, m.nv), 0.1, dtype=torch.float64)
                with torch.no_grad():
                    m.inverse_dynamics(q, v, v); m.mass_matrix(q); m.forward_dynamics(q, v, v)
                    m.jacobian(q, m.link_names[-1]); m.forward_kinematics(q)
                qg = q.clone().requires_grad_(True)
                total = (m.inverse_dynamics(qg, v, v).sum() + m.mass_matrix(qg).sum()
                         + m.forward_dynamics(qg, v, v).sum() + m.jacobian(qg, m.link_names[-1]).sum())
                total.backward()
                assert torch.isfinite(qg.grad).all(), name
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_torch_func_transforms_see_through_the_policy():
    # their tensors carry derivatives requires_grad does not show; forward AD ignores no_grad
    m = load_robot("panda")
    q = torch.linspace(-0.5, 0.6, 7, dtype=torch.float64)
    v = torch.linspace(0.1, 0.7, 7, dtype=torch.float64)
    rnea = lambda x: m.inverse_dynamics(x, v, v)
    ref = torch.autograd.functional.jacobian(rnea, q)
    torch.testing.assert_close(torch.func.jacrev(rnea)(q), ref)
    torch.testing.assert_close(torch.func.jacfwd(rnea)(q), ref)
    with torch.no_grad():
        dM = torch.func.jacfwd(m.mass_matrix)(q)
    eps = 1e-6
    e0 = torch.zeros(7, dtype=torch.float64)
    e0[0] = eps
    torch.testing.assert_close(
        dM[..., 0], (m.mass_matrix(q + e0) - m.mass_matrix(q - e0)) / (2 * eps), atol=1e-7, rtol=0
    )
    qs = torch.stack([q, 0.5 * q, -q])
    torch.testing.assert_close(
        torch.func.vmap(rnea)(qs), m.inverse_dynamics(qs, v.expand(3, 7), v.expand(3, 7))
    )
