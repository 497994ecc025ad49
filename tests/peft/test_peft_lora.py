"""LoRA and DoRA: forward and gradients against hand-written torch maths, merge, targets.

float64 on the reference device against float64 torch (tight tolerances); B starts at
zero in a real run, so here every adapter tensor is given random values first.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from peftutil import arr, char_model, ids_for, rng_for, th, torch_dora, torch_lora

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.base.rng import Generator
from scellis.catalog import peft
from scellis.catalog.blocks import Linear, LinearConfig, Sequential
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import Adam
from scellis.catalog.peft.select import put_param
from scellis.runtime.creation import generator
from scellis.runtime.functional import dropout

KINDS = {"lora": (peft.LoRAConfig, torch_lora), "dora": (peft.DoRAConfig, torch_dora)}


def _randomise(mod, name: str, dtype="f64") -> None:
    """Random values for every adapter tensor (B would start at zero)."""
    rng = rng_for(name)
    for attr in ("lora_A", "lora_B", "magnitude"):
        t = getattr(mod, attr, None)
        if t is not None:
            v = rng.standard_normal(t.shape) * 0.5 + (1.0 if attr == "magnitude" else 0.0)
            put_param(mod, attr, sc.tensor(v, dtype=dtype, requires_grad=True))


def _adapted_linear(kind: str, bias: bool, name: str):
    cfg_t, _ = KINDS[kind]
    net = Sequential.of(
        Linear(LinearConfig(5, 4, bias), dtype="f64", device="reference", gen=Generator(3, "init"))
    )
    cfg = cfg_t(target_modules=("0",), rank=3, alpha=6.0)
    assert peft.apply_lora(net, cfg, gen=Generator(4, "peft")) == ["0"]
    _randomise(net[0], name)
    return net


@pytest.mark.parametrize("kind", ["lora", "dora"])
@pytest.mark.parametrize("bias", [True, False])
def test_forward_and_grads_match_torch(kind, bias):
    name = f"{kind}-{bias}"
    net = _adapted_linear(kind, bias, name)
    mod = net[0]
    assert isinstance(mod, peft.LoRALinear)
    x_np = rng_for(name + ":x").standard_normal((2, 3, 5))
    x = sc.tensor(x_np, dtype="f64", requires_grad=True)
    y = net(x)
    R = rng_for(name + ":R").standard_normal(y.shape)
    (y * sc.tensor(R, dtype="f64")).sum().backward()

    tx = torch.tensor(x_np, requires_grad=True)
    tA, tB = th(mod.lora_A).requires_grad_(), th(mod.lora_B).requires_grad_()
    tb = th(mod.bias) if bias else None
    extra = [th(mod.magnitude).requires_grad_()] if kind == "dora" else []
    ty = KINDS[kind][1](tx, th(mod.weight), tb, tA, tB, *extra, mod.scale)
    (ty * torch.from_numpy(R)).sum().backward()

    np.testing.assert_allclose(arr(y), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    pairs = [(x, tx), (mod.lora_A, tA), (mod.lora_B, tB)]
    if kind == "dora":
        pairs.append((mod.magnitude, extra[0]))
    for ours, theirs in pairs:
        np.testing.assert_allclose(arr(ours.grad), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    # the base weights are frozen: no gradient is even computed for them
    assert mod.weight.grad is None and (mod.bias is None or mod.bias.grad is None)
    assert not mod.weight.requires_grad


def test_dora_magnitude_grad_vs_finite_differences():
    net = _adapted_linear("dora", True, "fd")
    mod = net[0]
    x = sc.tensor(rng_for("fd:x").standard_normal((4, 5)), dtype="f64")
    R = sc.tensor(rng_for("fd:R").standard_normal((4, 4)), dtype="f64")
    (net(x) * R).sum().backward()
    for attr in ("magnitude", "lora_A", "lora_B"):
        base = arr(getattr(mod, attr))
        ana = arr(getattr(mod, attr).grad).reshape(-1)
        for k in range(base.size):
            vals = []
            for h in (1e-6, -1e-6):
                v = base.copy().reshape(-1)
                v[k] += h
                put_param(mod, attr, sc.tensor(v.reshape(base.shape), dtype="f64"))
                with sc.no_grad():
                    vals.append(float((net(x) * R).sum().item()))
            put_param(mod, attr, sc.tensor(base, dtype="f64", requires_grad=True))
            num = (vals[0] - vals[1]) / 2e-6
            assert abs(num - ana[k]) <= 1e-6 * max(1.0, abs(num)), (attr, k, num, ana[k])


@pytest.mark.parametrize("kind", ["lora", "dora"])
def test_fresh_adapter_leaves_the_model_unchanged(kind):
    """B = 0 and m = ||W||_row: the adapted model starts as the base one."""
    m = char_model(seed=1)
    ids = ids_for("fresh")
    before = arr(m(ids))
    peft.apply_adapter(m, {"block_id": f"peft/{kind}", "target_modules": ["q", "v", "fc1"]})
    np.testing.assert_allclose(arr(m(ids)), before, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["lora", "dora"])
def test_only_adapters_train_and_merge_reproduces_outputs(kind):
    m = char_model(seed=2)
    names0 = list(m.state_dict())
    plan = peft.apply_finetune(
        m,
        {
            "adapters": [
                {
                    "block_id": f"peft/{kind}",
                    "target_modules": ["*.attn.q", "*.attn.v", "*.mlp.fc2"],
                    "rank": 2,
                }
            ]
        },
    )
    adapter_names = [n for n in plan.trainable]
    assert adapter_names and all(".lora_" in n or n.endswith(".magnitude") for n in adapter_names)
    frozen_before = {n: arr(p) for n, p in m.named_parameters() if not p.requires_grad}
    opt = Adam(m, lr=0.05)
    n_adapter = sum(p.numel for n, p in m.named_parameters() if p.requires_grad)
    grp = opt._groups[0]
    assert grp.names == adapter_names
    assert grp.flat.numel == n_adapter
    ids = ids_for("train", (3, 8))
    loss_fn = CrossEntropyLoss()
    for _ in range(3):
        opt.zero_grad()
        loss_fn(m(ids), ids).backward()
        for n, p in m.named_parameters():
            assert (p.grad is not None) == p.requires_grad, n
        opt.step()
    assert sorted(grp.state) == ["exp_avg", "exp_avg_sq"]
    assert all(b.numel == n_adapter for b in grp.state.values())
    for n, p in m.named_parameters():
        if not p.requires_grad:
            np.testing.assert_array_equal(arr(p), frozen_before[n], err_msg=n)
    m.eval()
    adapted = arr(m(ids))
    merged = peft.merge_lora(m)
    assert len(merged) == 2 * 3
    assert not peft.adapters_of(m)
    assert list(m.state_dict()) == names0  # the base model's names, nothing added
    np.testing.assert_allclose(arr(m(ids)), adapted, rtol=1e-5, atol=1e-5)


def test_dropout_masks_the_adapter_input_only():
    net = _adapted_linear("lora", True, "drop")
    mod = net[0]
    object.__setattr__(mod, "config", peft.LoRAConfig(("0",), rank=3, alpha=6.0, dropout=0.5))
    x_np = rng_for("drop:x").standard_normal((16, 5))
    x = sc.tensor(x_np, dtype="f64")
    tw, tb, tA, tB = (th(t) for t in (mod.weight, mod.bias, mod.lora_A, mod.lora_B))
    net.eval()
    want = torch_lora(torch.from_numpy(x_np), tw, tb, tA, tB, mod.scale).numpy()
    np.testing.assert_allclose(arr(net(x)), want, rtol=1e-12, atol=1e-12)
    net.train()
    live = generator("dropout")
    saved = (live.seed, live.step, live.draw)
    got = arr(net(x))
    live.seed, live.step, live.draw = saved
    h = torch.from_numpy(arr(dropout(x, 0.5, True)))  # the same draw of the stream
    assert 0 < int((h == 0).sum()) < h.numel()
    base = torch.from_numpy(x_np) @ tw.T + tb
    want = (base + mod.scale * (h @ tA.T) @ tB.T).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_targets_must_match_a_dense_block():
    m = char_model()
    with pytest.raises(ScellisError, match="pattern 'attn.qq' matches no dense block"):
        peft.apply_lora(m, peft.LoRAConfig(target_modules=("attn.qq",)))
    with pytest.raises(ScellisError, match="pattern 'tok' matches no dense block"):
        peft.apply_lora(m, peft.LoRAConfig(target_modules=("tok",)))
    with pytest.raises(ScellisError, match="rank must be >= 1"):
        peft.apply_adapter(m, {"block_id": "peft/lora", "target_modules": ["q"], "rank": 0})
    with pytest.raises(ScellisError, match="no field 'rnak'"):
        peft.apply_adapter(m, {"block_id": "peft/lora", "target_modules": ["q"], "rnak": 2})
    with pytest.raises(ScellisError, match="no LoRA"):
        peft.merge_lora(m)


def test_plain_pattern_matches_the_last_part_only():
    m = char_model(layers=2)
    paths = peft.apply_lora(m, peft.LoRAConfig(target_modules=("q",), rank=2))
    assert paths == ["body.blocks.0.attn.q", "body.blocks.1.attn.q"]
    m2 = char_model(layers=2)
    paths = peft.apply_lora(m2, peft.LoRAConfig(target_modules=("body.blocks.1.*",), rank=2))
    assert paths == [f"body.blocks.1.{p}" for p in ("attn.q", "attn.k", "attn.v", "attn.o",
                                                    "mlp.fc1", "mlp.fc2")]  # fmt: skip


def test_the_adapter_graph_holds_no_full_width_tensor_of_its_own_scaling():
    """The scale multiplies the rank-wide x A^T, not the full-width x A^T B^T, and the
    tape keeps an input only where its VJP reads it: the base product and the delta
    feed only the sum (whose VJP reads neither), so they are freed with the forward.
    Held after it: the sum itself, [tokens, out], plus rank-wide tensors (x A^T, read
    by B's gradient) and a scalar; the input is the caller's."""
    tokens, d_in, d_out, rank = 64, 16, 256, 2
    dev = sc.devices.get_device("reference")
    net = Sequential.of(
        Linear(LinearConfig(d_in, d_out, False), device="reference", gen=Generator(5, "init"))
    )
    peft.apply_lora(net, peft.LoRAConfig(target_modules="*", rank=rank), gen=Generator(6, "peft"))
    _randomise(net[0], "held", dtype="f32")
    x = sc.tensor(
        rng_for("held:x").standard_normal((tokens, d_in)), dtype="f32", requires_grad=True
    )
    before = dev.live_bytes
    y = net(x)
    held = dev.live_bytes - before
    wide, narrow = tokens * d_out * 4, tokens * rank * 4
    assert wide <= held <= wide + 4 * narrow
    y.sum().backward()  # and the gradient still flows to the adapter
    assert net[0].lora_A.grad is not None and net[0].lora_B.grad is not None
