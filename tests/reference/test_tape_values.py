"""The tape keeps an input's value only where the op's VJP reads it.

Against float64 torch on random inputs: a LoRA'd linear stack and a small Transformer
give torch's gradients, while an intermediate no VJP reads (a term of a sum, the input
of a frozen product's weight side, what tanh's saved result stands for) is freed as
soon as the caller drops it; ``retain_grad`` and ``grads_at`` still reach such an
intermediate, and an in-place change refuses only where the changed value is read.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.autograd import VJP
from scellis.autograd.rules import reads
from scellis.autograd.tape import Edge, grads_at
from scellis.base.errors import AutogradError
from scellis.base.rng import Generator
from scellis.catalog import peft
from scellis.catalog.blocks import Linear, LinearConfig, Sequential
from scellis.catalog.peft.select import put_param

RNG = np.random.default_rng(20240611)


def arr(t) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float64)


def rand(*shape, grad=False):
    a = RNG.standard_normal(shape)
    return sc.tensor(a, dtype="f64", requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _lora_stack(widths=((5, 8), (8, 6), (5, 6))):
    """LoRA'd dense blocks (frozen bases, random adapters) and their torch twins."""
    blocks = [
        Linear(LinearConfig(i, o, True), dtype="f64", device="reference", gen=Generator(k, "init"))
        for k, (i, o) in enumerate(widths)
    ]
    net = Sequential.of(*blocks)
    peft.apply_lora(net, peft.LoRAConfig(target_modules="*", rank=3, alpha=6.0),
                    gen=Generator(9, "peft"))  # fmt: skip
    twins = []
    for mod in net.layers:
        for attr in ("lora_A", "lora_B"):
            t = getattr(mod, attr)
            put_param(mod, attr, sc.tensor(RNG.standard_normal(t.shape) * 0.5, dtype="f64",
                                           requires_grad=True))  # fmt: skip
        w, b = (torch.tensor(arr(getattr(mod, n))) for n in ("weight", "bias"))
        a, bb = (
            torch.tensor(arr(getattr(mod, n)), requires_grad=True) for n in ("lora_A", "lora_B")
        )
        twins.append((w, b, a, bb, mod.scale))
    return net, twins


def _torch_lora(x, w, b, a, bb, scale):
    return x @ w.T + scale * (x @ a.T) @ bb.T + b


def _close(ours, theirs):
    np.testing.assert_allclose(arr(ours), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_a_lora_stack_frees_what_no_vjp_reads_and_gives_torchs_gradients():
    net, twins = _lora_stack()
    l0, l1, l2 = net.layers
    x, tx = rand(4, 5, grad=True)
    R, tR = rand(4, 6)
    h = l0(x)  # feeds tanh only, whose VJP reads its saved result: not held
    u = h.tanh()  # read by l1's adapter (A's gradient is (u)^T g ...)
    v = l1(u)  # a term of the sum: not held
    w = l2(x)  # the other term: not held
    z = v + w  # multiplied by a constant: not held
    loss = (z * R).sum()
    bufs = {n: weakref.ref(t._buf) for n, t in dict(h=h, u=u, v=v, w=w, z=z).items()}
    del h, u, v, w, z
    freed = {n for n, r in bufs.items() if r() is None}
    assert freed == {"h", "v", "w", "z"}  # u is read by a VJP: the tape keeps it
    loss.backward()

    th_ = _torch_lora(tx, *twins[0]).tanh()
    tz = _torch_lora(th_, *twins[1]) + _torch_lora(tx, *twins[2])
    (tz * tR).sum().backward()
    _close(x.grad, tx.grad)
    for mod, (_, _, ta, tb, _) in zip(net.layers, twins):
        _close(mod.lora_A.grad, ta.grad)
        _close(mod.lora_B.grad, tb.grad)
        assert mod.weight.grad is None  # the frozen base gets none


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's note on its nested-tensor path
def test_a_transformer_drops_its_residual_terms_and_gives_torchs_gradients():
    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0)
        return lib.nn.TransformerEncoder(layer, num_layers=2, norm=lib.nn.LayerNorm(8))

    torch.manual_seed(int(RNG.integers(1 << 30)))
    theirs, ours = build(torch), build(sc)
    ours.load_state_dict(theirs.state_dict())
    xa, Ra = (RNG.standard_normal((5, 3, 8)).astype(np.float32) for _ in range(2))
    x, tx = sc.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    loss = (ours(x) * sc.tensor(Ra)).sum()
    (theirs(tx) * torch.tensor(Ra)).sum().backward()
    # every residual sum holds its terms as edges (a dense layer's bias add is inside its
    # one node); the terms no other VJP reads (attention's and the MLP's projections)
    # are already gone
    nodes, stack, seen = [], [loss], set()
    while stack:
        t = stack.pop()
        if t._node is None or id(t._node) in seen:
            continue
        seen.add(id(t._node))
        nodes.append(t._node)
        stack.extend(i for i in t._node.inputs if i is not None)
    adds = [n for n in nodes if n.op == "add"]
    assert adds and all(isinstance(i, Edge) or i._node is None for n in adds for i in n.inputs)
    dead = [i for n in adds for i in n.inputs if isinstance(i, Edge) and i.tensor() is None]
    assert len(dead) >= 2 * 2  # two residual sums per layer at least
    # a held value is one its node's VJP reads (or a leaf that needs a gradient)
    for n in nodes:
        for i, r in zip(n.inputs, reads(n.op, n.needs, n.attrs)):
            if i is not None and not isinstance(i, Edge):
                assert r or (i._node is None and i.requires_grad), (n, i.shape)
    loss.backward()
    tol = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(arr(x.grad), tx.grad.numpy(), **tol)
    named = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(arr(named[name].grad), p.grad.numpy(), **tol)


def test_retain_grad_reaches_an_intermediate_held_only_as_an_edge_and_both_ways():
    net, twins = _lora_stack()
    x, tx = rand(4, 5, grad=True)
    s, ts = rand(4, 8, grad=True)
    R, tR = rand(4, 8)
    h = net.layers[0](x)  # read by h * s (s needs a gradient) and an edge of the sum
    k = h.tanh().exp()  # k feeds only the sum: reached as an edge alone
    h.retain_grad()
    k.retain_grad()
    loss = ((h + h * s + k) * R).sum()
    loss.backward()
    th_ = _torch_lora(tx, *twins[0])
    th_.retain_grad()
    tk = th_.tanh().exp()
    tk.retain_grad()
    ((th_ + th_ * ts + tk) * tR).sum().backward()
    _close(h.grad, th_.grad)  # both shares, added once
    _close(k.grad, tk.grad)
    _close(x.grad, tx.grad)
    _close(s.grad, ts.grad)


def test_an_in_place_change_refuses_only_where_the_value_is_read():
    net, twins = _lora_stack()
    lin = net.layers[0]
    x, tx = rand(3, 5, grad=True)
    c, tc = rand(3, 8)
    R, tR = rand(3, 8)
    # h only feeds a sum: its value is not needed, so changing it breaks nothing
    h = lin(x)
    loss = ((h + c) * R).sum()
    with sc.no_grad():
        h.mul_(3.0)
    loss.backward()
    ((_torch_lora(tx, *twins[0]) + tc) * tR).sum().backward()
    _close(x.grad, tx.grad)
    _close(lin.lora_A.grad, twins[0][2].grad)
    # h times a weight that needs a gradient: the weight's gradient reads h
    s = sc.tensor(RNG.standard_normal((3, 8)), dtype="f64", requires_grad=True)
    h = lin(x)
    loss = (h * s).sum()
    with sc.no_grad():
        h.mul_(3.0)
    with pytest.raises(AutogradError, match="in-place"):
        loss.backward()
    # a constant factor is read by the other side's gradient: changing it refuses too
    h = lin(x)
    loss = (h * c).sum()
    with sc.no_grad():
        c.add_(1.0)
    with pytest.raises(AutogradError, match="in-place"):
        loss.backward()


def test_grads_at_an_intermediate_target_is_backwards_share_and_torchs():
    net, twins = _lora_stack()
    x, tx = rand(4, 5, grad=True)
    s, ts = rand(4, 8, grad=True)
    R, tR = rand(4, 8)

    def forward():
        h = net.layers[0](x)
        return h, ((h + h * s + h.sigmoid()) * R).sum()

    h, loss = forward()
    got_h, got_s, got_x = grads_at(loss, loss.ones_like(), [h, s, x], VJP)
    assert x.grad is None and s.grad is None  # nothing written
    assert got_x is None  # the walk stops at h, and every path to x passes through it
    th_ = _torch_lora(tx, *twins[0])
    tloss = ((th_ + th_ * ts + th_.sigmoid()) * tR).sum()
    want_h, want_s = torch.autograd.grad(tloss, [th_, ts])
    _close(got_h, want_h)
    _close(got_s, want_s)
    # bitwise what backward accumulates at the same tensors
    h.retain_grad()
    loss.backward()
    assert arr(h.grad).tobytes() == arr(got_h).tobytes()
    assert arr(s.grad).tobytes() == arr(got_s).tobytes()
