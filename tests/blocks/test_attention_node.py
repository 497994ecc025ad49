"""Self-attention as one tape node, and cross-entropy's one-node backward, against torch
and against the op-by-op path they replace."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis
import scellis.nn as snn
from scellis.catalog import blocks as B
from scellis.ops.composites import cross_entropy


def _torch_mha(E, H, rng):
    ref = torch.nn.MultiheadAttention(E, H, batch_first=True)
    with torch.no_grad():
        for p in ref.parameters():  # biases too: torch starts them at zero
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    ours = snn.MultiheadAttention(E, H, batch_first=True)
    ours.load_state_dict(
        {k: scellis.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()}
    )
    return ref, ours


@pytest.mark.parametrize("causal,padded", [(True, False), (False, True), (False, False)])
def test_one_node_self_attention_matches_torch(causal, padded):
    rng = np.random.default_rng(3)
    B, T, E, H = 3, 5, 8, 2
    ref, ours = _torch_mha(E, H, rng)
    x = rng.standard_normal((B, T, E)).astype(np.float32)
    pad = np.zeros((B, T), bool)
    if padded:
        pad[0, 3:] = True
        pad[2, 1:] = True
    seed = rng.standard_normal((B, T, E)).astype(np.float32)

    tx = torch.tensor(x, requires_grad=True)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(T) if causal else None
    kpm = torch.tensor(pad) if padded else None
    ty, _ = ref(tx, tx, tx, key_padding_mask=kpm, attn_mask=mask, is_causal=causal)
    (ty * torch.tensor(seed)).sum().backward()

    sx = scellis.tensor(x, requires_grad=True)
    assert ours._block._packs(sx, None)  # the one-node path is the one under test
    kpm_s = scellis.tensor(pad) if padded else None
    sy, _ = ours(sx, sx, sx, key_padding_mask=kpm_s, need_weights=False, is_causal=causal)
    (sy * scellis.tensor(seed)).sum().backward()

    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    theirs = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.grad.numpy(), theirs[name].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name
        )


def _run_block(blk, x, mask, seed):
    sx = scellis.tensor(x, requires_grad=True)
    y = blk(sx, mask)
    (y * scellis.tensor(seed)).sum().backward()
    grads = {n: p.grad.numpy() for n, p in blk.named_parameters()}
    for p in blk.parameters():
        p.grad = None
    return y.detach().numpy(), sx.grad.numpy(), grads


def test_one_node_matches_op_by_op_path_with_a_fully_masked_row():
    """A padding mask that hides every key of a batch row: uniform weights whose
    gradient the mask stops, as the op-by-op path's where does."""
    rng = np.random.default_rng(5)
    cfg = B.AttentionConfig(8, 2, causal=True, attention="naive")
    blk = B.MultiHeadAttention(cfg)
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    seed = rng.standard_normal((2, 4, 8)).astype(np.float32)
    keep = scellis.tensor(np.array([[True, True, False, True], [False] * 4]))
    assert blk._packs(scellis.tensor(x), keep)
    one = _run_block(blk, x, keep, seed)
    blk.q.register_forward_hook(lambda m, a, out: out)  # a hook: the op-by-op path
    assert not blk._packs(scellis.tensor(x), keep)
    ops = _run_block(blk, x, keep, seed)
    for a, b in zip(one[:2], ops[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for name in one[2]:
        np.testing.assert_allclose(one[2][name], ops[2][name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "shape,reduction,smoothing,ignore",
    [((7, 5), "mean", 0.0, -100), ((2, 3, 6), "mean", 0.1, 2), ((6, 4), "sum", 0.2, -100),
     ((6, 4), "none", 0.0, 1)],
)  # fmt: skip
def test_cross_entropy_one_node_backward_matches_torch(shape, reduction, smoothing, ignore):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    t = rng.integers(0, shape[-1], shape[:-1])
    C = shape[-1]
    tx = torch.tensor(x, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(
        tx.reshape(-1, C), torch.tensor(t).reshape(-1), reduction=reduction,
        label_smoothing=smoothing, ignore_index=ignore,
    )  # fmt: skip
    seed = rng.standard_normal(tuple(tl.shape)).astype(np.float32)
    (tl * torch.tensor(seed)).sum().backward()
    sx = scellis.tensor(x, requires_grad=True)
    sl = cross_entropy(sx, scellis.tensor(t.astype(np.int32)), smoothing, ignore, reduction)
    sl = sl.reshape(-1) if reduction == "none" else sl
    (sl * scellis.tensor(seed)).sum().backward()
    np.testing.assert_allclose(sl.detach().numpy(), tl.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("need_weights", [True, False])
def test_is_causal_without_a_mask_hides_the_future_on_either_path(need_weights):
    """torch takes ``is_causal`` as a hint beside the causal mask; given alone, both the
    one-node path and the general one (weights asked for) must still hide the future."""
    rng = np.random.default_rng(11)
    B, T, E, H = 2, 6, 8, 2
    ref, ours = _torch_mha(E, H, rng)
    x = rng.standard_normal((B, T, E)).astype(np.float32)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(T)
    tx = torch.tensor(x)
    ty, tw = ref(tx, tx, tx, attn_mask=mask, is_causal=True, need_weights=need_weights)
    sx = scellis.tensor(x)
    sy, sw = ours(sx, sx, sx, is_causal=True, need_weights=need_weights)
    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    if need_weights:
        np.testing.assert_allclose(sw.detach().numpy(), tw.detach().numpy(), atol=1e-6)
