"""The model's shortcut to its CompiledCalls for simple calls (engine.robots.compiled_shortcut):
when it is taken and when not, and that it changes no number, error or result type.

CompiledCalls meets Pinocchio in test_compiled_calls, the backends in test_backends; here each
shortcut call (values, derivatives, regressor) is held against the same call through the
model's own route (the shortcut switched off) to 1e-12, so both routes answer to Pinocchio.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from test_compiled_calls import _small_tree
from test_mimic import GRIPPER

from engine.robots import RobotModel, compiled_shortcut
from engine.robots.backends import torch_only
from engine.robots.library import load_robot


@pytest.fixture(scope="module", params=["armature", "solo12", "mimic-floating"])
def model(request, tmp_path_factory):
    if request.param == "armature":
        return _small_tree(False)
    if request.param == "solo12":
        return load_robot("solo12")
    path = tmp_path_factory.mktemp("shortcut") / "gripper.urdf"
    path.write_text(GRIPPER)
    return RobotModel.from_urdf(path, floating_base=True)


@pytest.fixture
def taken(monkeypatch):
    """Counts the calls that the shortcut serves."""
    count = [0]
    inner = compiled_shortcut.model_calls

    def spy(model):
        count[0] += 1
        return inner(model)

    monkeypatch.setattr(compiled_shortcut, "model_calls", spy)
    return count


def _state(m, batch_shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(*batch_shape, m.nq, generator=g, dtype=torch.float64) - 0.5
    if m.floating:
        q[..., 3:7] /= q[..., 3:7].norm(dim=-1, keepdim=True)
    return (q,) + tuple(torch.randn(*batch_shape, m.nv, generator=g, dtype=torch.float64) for _ in range(2))


def _every_call(m, q, v, a):
    last = m.link_names[-1]
    return [m.inverse_dynamics(q, v, a), m.inverse_dynamics(q, v, a, gravity=False, damping=True),
            m.bias_forces(q, v), m.gravity_torques(q), m.mass_matrix(q), m.forward_dynamics(q, v, a),
            m.forward_dynamics(q, v, a, damping=True, method="articulated"), m.forward_kinematics(q),
            m.link_pose(q, last), m.jacobian(q, last), m.jacobian(q, last, point=q[..., :3] * 0.1),
            *m.rnea_derivatives(q, v, a, damping=True), *m.aba_derivatives(q, v, a, gravity=False),
            m.regressor(q, v, a)]


@pytest.mark.parametrize("batch_shape", [(), (1,), (3,)])
def test_same_numbers_as_the_backends(model, batch_shape, taken, monkeypatch):
    q, v, a = _state(model, batch_shape)
    ours = _every_call(model, q, v, a)
    assert taken[0] == len(ours) - 4                  # the derivatives: one call for three results
    monkeypatch.setattr(compiled_shortcut, "ENABLED", False)
    ref = _every_call(model, q, v, a)
    for k, (x, y) in enumerate(zip(ours, ref, strict=True)):
        assert x.shape == y.shape and x.dtype == y.dtype, k
        assert float((x - y).abs().max()) <= 1e-12 * max(1.0, float(y.abs().max())), k
        assert not x.is_inference() and x.grad_fn is None and not x.requires_grad
    ours[0] += 1.0                                    # a normal, writable tensor


def test_when_it_is_not_taken(taken):
    m = load_robot("panda")
    q, v, a = _state(m, (2,))
    refused = [
        lambda: m.inverse_dynamics(q.requires_grad_(True), v, a),          # a gradient to carry
        lambda: m.inverse_dynamics(q.detach(), v[:1], a),                   # broadcasting
        lambda: m.inverse_dynamics(q.detach(), v.numpy(), a),               # arrays: the model converts them
        lambda: m.inverse_dynamics(q.detach().float(), v, a),               # another dtype
        lambda: m.inverse_dynamics(q.detach()[None], v[None], a[None]),     # more than one batch dimension
        lambda: m.inverse_dynamics(q.detach(), v, torch.complex(a, a).conj().imag),   # a negative bit
        lambda: m.mass_matrix(q.detach()),
    ]
    for call in refused[:-1]:
        call()
    assert taken[0] == 0
    negative_bit = torch.complex(a, a).conj().imag                   # -a, read through a negative bit
    torch.testing.assert_close(m.inverse_dynamics(q.detach(), v, negative_bit), m.inverse_dynamics(q.detach(), v, -a))
    taken[0] = 0
    with torch_only():
        refused[-1]()
    assert taken[0] == 0
    with torch.no_grad():                             # no_grad: nothing to carry, the shortcut serves
        m.inverse_dynamics(q, v, a)
    assert taken[0] == 1
    learnable = m.clone()
    learnable.make_learnable(m.link_names[3], "mass")
    with torch.no_grad():
        learnable.inverse_dynamics(q, v, a)
    assert taken[0] == 1                              # learnable values change: never a snapshot


def test_errors_are_the_models():
    m = load_robot("panda")
    q, v, a = _state(m, (2,))
    with pytest.raises(ValueError, match=rf"expected joint vectors of shape \(\.\.\., {m.nq}\)"):
        m.mass_matrix(q[:, :-1])
    with pytest.raises(KeyError, match="no link named"):
        m.jacobian(q, "nowhere")
    with pytest.raises(ValueError, match="unknown forward dynamics method"):
        m.forward_dynamics(q, v, a, method="fast")


def test_edits_and_moves_of_the_model_are_followed(taken):
    m = _small_tree(False)
    q, v, a = _state(m, ())
    before = m.inverse_dynamics(q, v, a)
    with torch.no_grad():
        m._body_m.mul_(2.0)                           # an in-place edit of the inertials
    after = m.inverse_dynamics(q, v, a)
    with torch_only():
        ref = m.inverse_dynamics(q, v, a)
    assert taken[0] == 2 and not torch.allclose(before, after)
    torch.testing.assert_close(after, ref, rtol=1e-12, atol=1e-12)
    m32 = m.to(torch.float32)                          # float32 buffers: the torch route
    out = m32.inverse_dynamics(q.float(), v.float(), a.float())
    assert taken[0] == 2 and out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


def test_threads_share_one_model():
    """The GUI and a worker calling one model at once: each call writes only its own result."""
    m = load_robot("solo12")
    states = [_state(m, (), seed=s) for s in range(8)]
    with torch_only():
        ref = [m.forward_dynamics(*x) for x in states]
    out: dict = {}

    def work(k):
        for _ in range(200):
            out[k] = m.forward_dynamics(*states[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(states))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, r in enumerate(ref):
        torch.testing.assert_close(out[k], r, rtol=1e-12, atol=1e-12)
