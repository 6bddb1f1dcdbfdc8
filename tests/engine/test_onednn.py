"""The oneDNN products (engine.onednn) and the training networks' passes that use them, in
float32 at the paper's sizes (where oneDNN is chosen), against float64 references."""

import pytest
import torch

from engine import onednn

GEN = torch.Generator().manual_seed(0)


def _rand(*shape):
    return torch.randn(*shape, generator=GEN)


def _close(a, ref, rel=2e-5):
    """float32 against a float64 reference: error relative to the reference's scale."""
    assert a.dtype == torch.float32 and a.shape == ref.shape
    err = float((a.detach().double() - ref.detach()).abs().max())
    assert err <= rel * float(ref.detach().abs().max()), err


def test_the_products_are_large_enough_to_take_the_onednn_path():
    # guards the tests below: on a torch with oneDNN they exercise it, not the fallback
    a = _rand(512, 128)
    assert onednn._worth_it(a, 512, 128, 128) == onednn.fused_available(torch.float32)
    assert not onednn._worth_it(a, 64, 128, 128)                  # small: torch's BLAS
    assert not onednn._worth_it(a.double(), 512, 128, 128)        # float64: torch's BLAS


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_mm_matches_float64_for_strided_operands(transpose_a, transpose_b):
    a = _rand(128, 600).t() if transpose_a else _rand(600, 128)    # (600, 128) either way
    b = _rand(96, 128).t() if transpose_b else _rand(128, 96)
    _close(onednn.mm(a, b), a.double() @ b.double())


def test_linear_and_bmm_match_float64():
    x, w, bias = _rand(700, 128), _rand(64, 128), _rand(64)
    _close(onednn.linear(x, w, bias), x.double() @ w.double().t() + bias.double())
    A, W = _rand(2, 512, 128), _rand(2, 128, 128)
    _close(onednn.bmm(A, W), A.double() @ W.double())
    G = _rand(2, 512, 64)
    _close(onednn.bmm(A.transpose(1, 2), G), A.double().transpose(1, 2) @ G.double())


def test_dual_mlp_at_training_size_matches_the_float64_autograd_path():
    """The L-NODE / SyMo networks (hidden 128) on 512 configurations: values, tangents and
    every parameter gradient of the hand-written pass through oneDNN against autograd in float64."""
    from engine.models.nets import StackedConfigurationMLP

    torch.manual_seed(1)
    net = StackedConfigurationMLP((True,), (1, 1), hidden=128, layers=2)
    ref_net = StackedConfigurationMLP((True,), (1, 1), hidden=128, layers=2).double()
    ref_net.load_state_dict({k: v.double() for k, v in net.state_dict().items()})
    q = (torch.rand(512, 1, generator=GEN) - 0.5) * 6.0
    q32, q64 = q.clone().requires_grad_(True), q.double().requires_grad_(True)
    fast, ref = net._forward_dual(q32), ref_net._forward_autograd(q64, 1)
    ws = [torch.randn(t.shape, generator=GEN, dtype=torch.float64) for o in ref for t in o[:2]]

    def loss(outs):
        return sum((w.to(t.dtype) * t).sum() for w, t in zip(ws, [t for o in outs for t in o[:2]]))

    for a, b in zip(fast, ref):
        _close(a[0], b[0])
        _close(a[1], b[1])
    g_fast = torch.autograd.grad(loss(fast), [q32, *net.parameters()])
    g_ref = torch.autograd.grad(loss(ref), [q64, *ref_net.parameters()])
    for a, b in zip(g_fast, g_ref):
        _close(a, b, rel=1e-4)


def test_graph_free_order_two_pass_at_training_size_matches_float64():
    from engine.models.nets import StackedConfigurationMLP

    torch.manual_seed(2)
    net = StackedConfigurationMLP((True,), (1, 1), hidden=128, layers=2)
    ref_net = StackedConfigurationMLP((True,), (1, 1), hidden=128, layers=2).double()
    ref_net.load_state_dict({k: v.double() for k, v in net.state_dict().items()})
    q = (torch.rand(400, 1, generator=GEN) - 0.5) * 6.0
    with torch.no_grad():
        for a, b in zip(net._forward_stacked(q, 2), ref_net._forward_autograd(q.double(), 2)):
            for x, y in zip(a, b):
                _close(x, y, rel=5e-5)


def test_plain_mlp_at_training_size_matches_float64():
    from engine.models.nets import MLP

    torch.manual_seed(3)
    m = MLP(4, 2, hidden=128, layers=2)
    ref = MLP(4, 2, hidden=128, layers=2).double()
    ref.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    x = _rand(512, 4)
    x32, x64 = x.clone().requires_grad_(True), x.double().requires_grad_(True)
    w = _rand(512, 2)
    y32, y64 = m(x32), ref(x64)
    _close(y32, y64)
    for a, b in zip(torch.autograd.grad((y32 * w).sum(), [x32, *m.parameters()]),
                    torch.autograd.grad((y64 * w.double()).sum(), [x64, *ref.parameters()])):
        _close(a, b, rel=1e-4)
