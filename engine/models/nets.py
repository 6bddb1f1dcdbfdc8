"""Networks on configurations with forward-mode derivatives, and plain MLPs.

:class:`StackedConfigurationMLP` maps a configuration ``q`` (B, n) through the angle
embedding (``(cos q_i, sin q_i)`` for rotational coordinates, ``q_i`` for translational
ones) and K independent tanh MLPs to outputs ``y`` (B, O_k), and propagates exact
derivatives with respect to the raw ``q`` alongside the values (forward mode, in plain
tensor ops, so training needs only first-order back-propagation):

- order 1: ``dy`` (B, n, O), ``dy[b, k] = d y / d q_k``;
- order 2: also ``d2y`` (B, n, n, O).

Speed (training runs millions of these small passes on one CPU core): order 1 with a graph goes
through :class:`_DualTanhMLP`, values and tangents stacked as the rows of one product per layer,
with a hand-written backward (about half the cost of autograd through the same ops); without a
graph (Newton's iterations, rollouts) every order runs as one stacked in-place pass; the plain
:class:`MLP` has a hand-written backward too. The autograd formulation stays as the reference
(tests compare both in float64) and serves torch.func transforms; the hand-written backwards are
once-differentiable (nothing in the engine differentiates a training loss twice). The large
hidden-layer products of those passes go through :mod:`engine.onednn` (twice as fast as torch's
MKL on AMD processors).

Initialisation (``init``): ``"xavier"`` (the default) is the SyMo paper's (ssantos97/SyMo,
``Code/Rigid_Body.py`` ``MLP.weight_init``): Xavier-uniform weights with tanh's gain 5/3 and zero
biases for the layers of its MLPs (the hidden layers; a plain :class:`MLP`'s output layer too),
PyTorch's default for the heads that read the hidden features (its ``Rigid_Body`` heads). On the
pendulum it roughly triples the first layers' weights against PyTorch's default. In the full
pendulum reproduction (seeds 0-2) no SyMo or E2E-SyMo run sends the near-separatrix long-term
trajectory over the top any more; 5 of the 15 SyMo runs did with PyTorch's default (issue #5,
results/reproduction/README.md). ``"torch"``: PyTorch's ``nn.Linear`` default (uniform in
+-1/sqrt(fan_in), biases too).
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn

from engine import onednn

__all__ = [
    "AngleEmbedding",
    "StackedConfigurationMLP",
    "MLP",
    "embed_dim",
    "tanh",
    "dual_tanh_mlp",
    "tanh_mlp",
    "INITS",
]

INITS = ("xavier", "torch")
TANH_GAIN = 5.0 / 3.0  # torch.nn.init.calculate_gain("tanh")


def _check_init(init: str) -> None:
    if init not in INITS:
        raise ValueError(f"network init: expected one of {', '.join(INITS)}, got {init!r}")


def _init_layer_(weight: torch.Tensor, bias: torch.Tensor, fan_in: int, fan_out: int, init: str) -> None:
    """Initialise one layer in place: ``weight`` (..., fan_in, fan_out) or (fan_out, fan_in), ``bias``."""
    with torch.no_grad():
        if init == "xavier":
            bound = TANH_GAIN * math.sqrt(6.0 / (fan_in + fan_out))
            weight.uniform_(-bound, bound)
            bias.zero_()
        else:
            bound = 1.0 / math.sqrt(fan_in)
            weight.uniform_(-bound, bound)
            bias.uniform_(-bound, bound)


def tanh(x: torch.Tensor) -> torch.Tensor:
    """``tanh(x) = 2 sigmoid(2x) - 1``: the same function, about 10x faster than ``torch.tanh``
    on this CPU build (whose tanh kernel is not vectorised), differentiable as usual."""
    return torch.sigmoid(x * 2.0) * 2.0 - 1.0


def _tanh_into(z: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out <- tanh(z)`` in place (as ``2 sigmoid(2z) - 1``, see :func:`tanh`); no autograd."""
    torch.mul(z, 2.0, out=out)
    return out.sigmoid_().mul_(2.0).sub_(1.0)


class _DualTanhMLP(torch.autograd.Function):
    """K stacked tanh MLPs with first-order tangents, forward and backward written out by hand.

    Rows ``0 .. B-1`` of the input ``X`` ((1 + n) B, E) are the points ``e``, rows ``B + b n + k`` the
    tangents ``de[b, k]``. Every layer multiplies values and tangents in one ``bmm``::

        z = a W + b,  a' = tanh(z),  t' = (1 - a'^2) * (t W)      (t: tangents of a)

    and the heads are linear. The backward is the exact adjoint of these few operations: the
    same mathematics as autograd through :meth:`StackedConfigurationMLP._forward_autograd`, at
    about half its cost (no per-op graph, fused and in-place updates).
    """

    @staticmethod
    def forward(ctx, x, n, n_layers, *params):
        R = x.shape[0]
        B = R // (1 + n)
        Ws, bs = params[0:2 * n_layers:2], params[1:2 * n_layers:2]
        heads = params[2 * n_layers:]
        K = Ws[0].shape[0]
        inputs, acts, slopes, dzs = [], [], [], []
        A = x
        for i, (W, b) in enumerate(zip(Ws, bs)):
            inputs.append(A)
            Z = torch.bmm(A.expand(K, *A.shape), W) if i == 0 else onednn.bmm(A, W)   # (K, R, H)
            H = Z.shape[-1]
            A = torch.empty_like(Z)
            # tanh(z + b) = 2 sigmoid(2z + 2b) - 1, tanh' = 1 - a^2 = 4 sg (1 - sg): fewer passes
            sg = torch.add(b * 2.0, Z[:, :B], alpha=2.0, out=A[:, :B]).sigmoid_()
            s = torch.addcmul(sg, sg, sg, value=-1.0).mul_(4.0)
            a = sg.mul_(2.0).sub_(1.0)
            dz = Z[:, B:].view(K, B, n, H)
            torch.mul(dz, s.unsqueeze(2), out=A[:, B:].view(K, B, n, H))
            acts.append(a)
            slopes.append(s)
            dzs.append(dz)
        outs = []
        for k in range(K):
            Wh, bh = heads[2 * k], heads[2 * k + 1]
            Y = torch.mm(A[k], Wh.t())
            Y[:B] += bh
            outs.append(Y)
        ctx.n, ctx.B, ctx.K, ctx.n_layers = n, B, K, n_layers
        ctx.save_for_backward(*params)
        ctx.inputs, ctx.acts, ctx.slopes, ctx.dzs, ctx.last = inputs, acts, slopes, dzs, A
        return tuple(outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        n, B, K, L = ctx.n, ctx.B, ctx.K, ctx.n_layers
        params = ctx.saved_tensors
        Ws = params[0:2 * L:2]
        heads = params[2 * L:]
        A = ctx.last
        R, H = A.shape[1], A.shape[2]
        out = [None] * len(params)
        gA = torch.empty(K, R, H, dtype=A.dtype, device=A.device)
        for k in range(K):
            G = grads[k]                                               # (R, O_k)
            Wh = heads[2 * k]
            out[2 * L + 2 * k] = torch.mm(G.t(), A[k])
            out[2 * L + 2 * k + 1] = G[:B].sum(0)
            torch.mm(G, Wh, out=gA[k])
        gx = None
        for i in range(L - 1, -1, -1):
            a, s, dz, X = ctx.acts[i], ctx.slopes[i], ctx.dzs[i], ctx.inputs[i]
            H = a.shape[-1]
            ga, gt = gA[:, :B], gA[:, B:].view(K, B, n, H)
            GZ = torch.empty(K, R, H, dtype=A.dtype, device=A.device)
            torch.mul(gt, s.unsqueeze(2), out=GZ[:, B:].view(K, B, n, H))   # d/d dz
            gs = (gt * dz).sum(2) if n > 1 else (gt * dz).squeeze(2)          # d/d s
            gz = torch.addcmul(ga, a, gs, value=-2.0, out=GZ[:, :B]).mul_(s)   # d/d z = s (ga - 2 a gs)
            out[2 * i + 1] = gz.sum(1, keepdim=True)
            if i > 0:
                out[2 * i] = onednn.bmm(X.transpose(1, 2), GZ)
                gA = onednn.bmm(GZ, Ws[i].transpose(1, 2))
            else:
                out[0] = torch.bmm(X.t().expand(K, *X.t().shape), GZ)
                if ctx.needs_input_grad[0]:
                    gx = torch.bmm(GZ, Ws[0].transpose(1, 2)).sum(0)
        return (gx, None, None, *out)


class _AngleRows(torch.autograd.Function):
    """One angle ``q`` (B, 1) -> the dual MLP's input rows (2B, 2): ``(cos q, sin q)`` then their
    tangents ``(-sin q, cos q)``, in one node (the general embedding takes a dozen small ops)."""

    @staticmethod
    def forward(ctx, q):
        c, s = torch.cos(q), torch.sin(q)
        ctx.save_for_backward(c, s)
        return torch.cat([torch.cat([c, s], 1), torch.cat([-s, c], 1)])

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        c, s = ctx.saved_tensors
        B = c.shape[0]
        ge, gde = g[:B], g[B:]
        # d/dq (c, s) = (-s, c); d/dq (-s, c) = (-c, -s)
        return (ge[:, 1:] - gde[:, :1]) * c - (ge[:, :1] + gde[:, 1:]) * s


def dual_tanh_mlp(x: torch.Tensor, n: int, weights, biases, heads) -> list[torch.Tensor]:
    """Values and tangents of K stacked tanh MLPs (:class:`_DualTanhMLP`).

    x: ((1 + n) B, E) points then tangents; weights[i] (K, I, O), biases[i] (K, 1, O); heads: K
    ``nn.Linear``. Returns one ((1 + n) B, O_k) tensor per head (values, then tangents).
    """
    params = []
    for W, b in zip(weights, biases):
        params += [W, b]
    for head in heads:
        params += [head.weight, head.bias]
    return list(_DualTanhMLP.apply(x, n, len(weights), *params))


class _TanhMLP(torch.autograd.Function):
    """A plain tanh MLP (``nn.Linear`` layers) with its backward written out by hand."""

    @staticmethod
    def forward(ctx, x, *params):
        L = len(params) // 2
        acts = [x]                      # layer inputs (the output is not kept on ctx: no cycle)
        a = x
        for i in range(L):
            W, b = params[2 * i], params[2 * i + 1]
            a = onednn.linear(a, W, b)
            if i < L - 1:
                a = _tanh_into(a, a)
                acts.append(a)
        ctx.save_for_backward(*params)
        ctx.acts = acts
        return a

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        params = ctx.saved_tensors
        L = len(params) // 2
        acts = ctx.acts
        out = [None] * len(params)
        gx = None
        for i in range(L - 1, -1, -1):
            if i < L - 1:
                a = acts[i + 1]
                g = torch.addcmul(g, g * a, a, value=-1.0)       # through tanh: g (1 - a^2)
            out[2 * i] = onednn.mm(g.t(), acts[i])
            out[2 * i + 1] = g.sum(0)
            if i > 0 or ctx.needs_input_grad[0]:
                g = onednn.mm(g, params[2 * i])
        if ctx.needs_input_grad[0]:
            gx = g
        return (gx, *out)


def tanh_mlp(x: torch.Tensor, linears) -> torch.Tensor:
    """``x`` (B, I) through ``nn.Linear`` layers with tanh between them (:class:`_TanhMLP`)."""
    params = []
    for lin in linears:
        params += [lin.weight, lin.bias]
    return _TanhMLP.apply(x, *params)


def _plain_tensors() -> bool:
    """True unless torch.func transforms (vmap, jacfwd, ...) are active: the hand-written
    autograd functions above serve plain eager calls; under transforms the autograd paths run."""
    try:
        return not torch._C._are_functorch_transforms_active()
    except AttributeError:  # an older torch without the query
        return False


def embed_dim(angle_mask) -> int:
    return len(angle_mask) + sum(bool(a) for a in angle_mask)


class AngleEmbedding(nn.Module):
    """``q`` (B, n) -> ``e`` (B, E): (cos, sin) for angles, identity for translations."""

    src: torch.Tensor  # buffers: (E,) source coordinate of each output, 0/1 masks (E,), one-hot (n, E)
    m_cos: torch.Tensor
    m_sin: torch.Tensor
    m_lin: torch.Tensor
    onehot: torch.Tensor

    def __init__(self, angle_mask):
        super().__init__()
        self.angle_mask = tuple(bool(a) for a in angle_mask)
        n = len(self.angle_mask)
        src, kind = [], []
        for i, a in enumerate(self.angle_mask):
            if a:
                src += [i, i]
                kind += [0, 1]
            else:
                src.append(i)
                kind.append(2)
        kind_t = torch.tensor(kind)
        self.register_buffer("src", torch.tensor(src), persistent=False)
        self.register_buffer("m_cos", (kind_t == 0).float(), persistent=False)
        self.register_buffer("m_sin", (kind_t == 1).float(), persistent=False)
        self.register_buffer("m_lin", (kind_t == 2).float(), persistent=False)
        onehot = torch.zeros(n, len(src))
        onehot[torch.tensor(src), torch.arange(len(src))] = 1.0
        self.register_buffer("onehot", onehot, persistent=False)  # (n, E)

    def forward(self, q: torch.Tensor, order: int = 0):
        """Returns ``(e, de, d2e)``: (B, E), (B, n, E) or None, (B, n, E) diagonal second derivatives or None."""
        if self.angle_mask == (True,):  # one angle: (cos, sin), (-sin, cos), (-cos, -sin)
            c, s = torch.cos(q), torch.sin(q)
            e = torch.cat([c, s], -1)
            if order == 0:
                return e, None, None
            de = torch.cat([-s, c], -1).unsqueeze(-2)
            return e, de, (-e).unsqueeze(-2) if order >= 2 else None
        qs = q[..., self.src]
        mc, ms, ml = (m.to(q.dtype) for m in (self.m_cos, self.m_sin, self.m_lin))
        c, s = torch.cos(qs), torch.sin(qs)
        e = c * mc + s * ms + qs * ml
        if order == 0:
            return e, None, None
        oh = self.onehot.to(q.dtype)
        de = (ms * c - mc * s + ml).unsqueeze(-2) * oh
        d2e = None
        if order >= 2:
            d2e = (-(mc * c) - ms * s).unsqueeze(-2) * oh
        return e, de, d2e


def _linear_stack(sizes, init: str):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        lin = nn.Linear(a, b)  # "torch": nn.Linear's own init, as drawn
        if init == "xavier":
            _init_layer_(lin.weight, lin.bias, a, b, init)
        layers.append(lin)
    return nn.ModuleList(layers)


class MLP(nn.Module):
    """A plain tanh MLP ``(B, I) -> (B, O)``; ``init``: see the module docstring (every layer)."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 128, layers: int = 2, init: str = "xavier"):
        super().__init__()
        _check_init(init)
        self.linears = _linear_stack([in_dim] + [hidden] * layers + [out_dim], init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2 and _plain_tensors():
            return tanh_mlp(x, self.linears)
        for lin in self.linears[:-1]:
            x = tanh(lin(x))
        return self.linears[-1](x)


class StackedConfigurationMLP(nn.Module):
    """K independent MLPs on the same embedded configuration, evaluated in lockstep (``bmm``).

    Mathematically K separate networks (own weights; ``init`` for the hidden layers, see the module
    docstring; the heads keep PyTorch's default ``nn.Linear`` init, as in the paper);
    stacking their hidden layers halves the number of kernel launches for the inertia and
    potential networks. Head ``k`` has ``out_dims[k]`` outputs. :meth:`forward` returns one
    ``(y (B, O_k), dy (B, n, O_k) | None, d2y (B, n, n, O_k) | None)`` per head, derivatives
    with respect to the raw ``q`` (B, n).
    """

    def __init__(self, angle_mask, out_dims, hidden: int = 128, layers: int = 2, init: str = "xavier"):
        super().__init__()
        _check_init(init)
        self.embedding = AngleEmbedding(angle_mask)
        self.n = len(self.embedding.angle_mask)
        K = len(out_dims)
        sizes = [embed_dim(angle_mask)] + [hidden] * layers
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for a, b in zip(sizes[:-1], sizes[1:]):
            W, bias = torch.empty(K, a, b), torch.empty(K, 1, b)
            _init_layer_(W, bias, a, b, init)
            self.weights.append(nn.Parameter(W))
            self.biases.append(nn.Parameter(bias))
        self.heads = nn.ModuleList(nn.Linear(hidden, o) for o in out_dims)

    def fast_dual(self, q: torch.Tensor) -> bool:
        """Whether :meth:`dual_rows` serves ``q`` (plain 2-D tensors, a graph, no torch.func transform)."""
        return q.dim() == 2 and torch.is_grad_enabled() and _plain_tensors()

    def forward(self, q: torch.Tensor, order: int = 1):
        if q.dim() != 2:  # any leading batch shape: flatten, evaluate, restore
            lead = q.shape[:-1]
            outs = self.forward(q.reshape(-1, q.shape[-1]), order)
            return [tuple(None if t is None else t.reshape(*lead, *t.shape[1:]) for t in o) for o in outs]
        if not torch.is_grad_enabled() and _plain_tensors():
            return self._forward_stacked(q, order)
        if order == 1 and _plain_tensors():
            return self._forward_dual(q)
        return self._forward_autograd(q, order)

    @torch.no_grad()
    def _forward_stacked(self, q: torch.Tensor, order: int):
        """Without a graph: values, tangents and second derivatives as the row blocks of one
        (K, (1 + n + n^2) B, H) tensor per layer, so each layer is one ``bmm`` and a few fused
        in-place updates (Newton's iterations and rollouts)."""
        e, de, d2e = self.embedding(q, order)
        B, n = q.shape[0], self.n
        K = len(self.heads)
        n1 = n if order >= 1 else 0
        rows = [e]
        if order >= 1:
            rows.append(de.reshape(B * n, -1))
        if order >= 2:
            if n == 1:
                rows.append(d2e.reshape(B, -1))
            else:
                eye = torch.eye(n, dtype=q.dtype, device=q.device)
                rows.append((d2e.unsqueeze(-2) * eye.unsqueeze(-1)).reshape(B * n * n, -1))
        X = torch.cat(rows) if len(rows) > 1 else e
        X = X.expand(K, *X.shape)
        t0, t1 = B, B + B * n1  # row blocks: [0, t0) values, [t0, t1) tangents, [t1, R) second
        for W, b in zip(self.weights, self.biases):
            Z = onednn.bmm(X, W)
            H = Z.shape[-1]
            a = _tanh_into(Z[:, :B].add_(b), Z[:, :B])   # values: z -> tanh(z), in place
            if order >= 1:
                s = torch.mul(a, a).neg_().add_(1.0).unsqueeze(2)      # (K, B, 1, H)
                dz = Z[:, t0:t1].view(K, B, n, H)
                if order >= 2 and n == 1:
                    d2z = Z[:, t1:].view(K, B, 1, H)
                    cross = (dz * dz).mul_(a.unsqueeze(2)).mul_(s)
                    d2z.mul_(s).add_(cross, alpha=-2.0)
                elif order >= 2:
                    d2z = Z[:, t1:].view(K, B, n, n, H)
                    cross = dz.unsqueeze(3) * dz.unsqueeze(2)           # dz_k dz_l
                    cross.mul_((a.unsqueeze(2) * s).unsqueeze(2)).mul_(-2.0)
                    d2z.mul_(s.unsqueeze(2)).add_(cross)
                dz.mul_(s)
            X = Z
        out = []
        for k, head in enumerate(cast("list[nn.Linear]", self.heads)):
            Y = torch.mm(X[k], head.weight.t())
            Y[:B] += head.bias
            O = Y.shape[-1]
            out.append((Y[:B], Y[t0:t1].view(B, n, O) if order >= 1 else None,
                        Y[t1:].view(B, n, n, O) if order >= 2 else None))
        return out

    def dual_rows(self, q: torch.Tensor) -> list[torch.Tensor]:
        """Order 1 through :func:`dual_tanh_mlp`: per head ((1 + n) B, O_k), rows ``0 .. B-1`` the
        values ``y``, then ``dy`` (B*n rows, ``dy[b, k]`` at row ``B + b n + k``). q: (B, n)."""
        B, n = q.shape[0], self.n
        if self.embedding.angle_mask == (True,):
            x = _AngleRows.apply(q)
        else:
            e, de, _ = self.embedding(q, 1)
            x = torch.cat([e, de.reshape(B * n, -1)])
        return dual_tanh_mlp(x, n, list(self.weights), list(self.biases), list(self.heads))

    def _forward_dual(self, q: torch.Tensor):
        """Order 1 through :func:`dual_tanh_mlp` (one fused value-and-tangent pass)."""
        B, n = q.shape[0], self.n
        return [(Y[:B], Y[B:].view(B, n, -1), None) for Y in self.dual_rows(q)]

    def _forward_autograd(self, q: torch.Tensor, order: int):
        """Any order in plain tensor ops (autograd differentiates it; the reference for order 1)."""
        e, de, d2e = self.embedding(q, order)
        B, n = q.shape[0], self.n
        K = len(self.heads)
        W0, b0 = self.weights[0], self.biases[0]
        z = torch.matmul(e, W0) + b0                                     # (K, B, H)
        dz = torch.matmul(de.reshape(B * n, -1), W0) if order >= 1 else None   # (K, B*n, H)
        d2z = None
        a = z
        if order >= 2:
            eye = torch.eye(n, dtype=q.dtype, device=q.device)
            d2e_full = (d2e.unsqueeze(-2) * eye.unsqueeze(-1)).reshape(B * n * n, -1)
            d2z = torch.matmul(d2e_full, W0)                             # (K, B*n*n, H)
        for i in range(len(self.weights)):
            if i > 0:
                W, b = self.weights[i], self.biases[i]
                z = torch.baddbmm(b, a, W)
                if order >= 1:
                    dz = torch.bmm(cast(torch.Tensor, dz), W)
                if order >= 2:
                    d2z = torch.bmm(cast(torch.Tensor, d2z), W)
            a = tanh(z)
            if order >= 1:
                H = a.shape[-1]
                s = (1.0 - a * a).unsqueeze(2)                           # (K, B, 1, H)
                dz4 = cast(torch.Tensor, dz).view(K, B, n, H)
                if order >= 2:
                    d2z5 = cast(torch.Tensor, d2z).view(K, B, n, n, H)
                    d2z = (s.unsqueeze(2) * d2z5 - 2.0 * (a.unsqueeze(2) * s).unsqueeze(2)
                           * dz4.unsqueeze(3) * dz4.unsqueeze(2)).reshape(K, B * n * n, H)
                dz = (s * dz4).reshape(K, B * n, H)
        out = []
        for k, head in enumerate(cast("list[nn.Linear]", self.heads)):
            y = head(a[k])
            dy = (cast(torch.Tensor, dz)[k] @ head.weight.T).view(B, n, -1) if order >= 1 else None
            d2y = (cast(torch.Tensor, d2z)[k] @ head.weight.T).view(B, n, n, -1) if order >= 2 else None
            out.append((y, dy, d2y))
        return out
