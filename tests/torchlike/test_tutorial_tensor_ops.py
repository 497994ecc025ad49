"""Tensor operations tutorials use, against torch CPU: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from tlutil import close, pair

import scellis as sc
import scellis.nn.functional as F

pytestmark = pytest.mark.torch


def test_dtype_names_and_int64_said_once(recwarn):
    assert sc.float32 == sc.f32 and sc.float == sc.f32 and sc.float64 == sc.f64
    assert sc.bool == sc.bool_ and sc.int32 == sc.i32 and sc.half == sc.f16
    assert (
        sc.long == sc.i32 and sc.int64 == sc.i32 and sc.tensor([1], dtype=sc.long).dtype == sc.i32
    )
    said = [w for w in recwarn.list if "i32" in str(w.message)]
    assert len(said) <= 1  # once per process (an earlier test may have said it)
    assert sc.tensor([1.5, -2.0]).long().tolist() == torch.tensor([1.5, -2.0]).long().tolist()


def test_bool_tensors_sum_and_count():
    sx, tx = pair(4, 5)
    assert (sx > 0).sum().item() == (tx > 0).sum().item()
    assert (sx > 0).sum(1).tolist() == (tx > 0).sum(1).tolist()
    assert (sx > 0).sum().dtype == sc.i32


def test_masked_fill_tril_triu_cumsum_repeat():
    sx, tx = pair(2, 4, 4, grad=True)
    mask = sc.ones(4, 4).tril() == 0
    tmask = torch.ones(4, 4).tril() == 0
    s_out = sx.masked_fill(mask, float("-inf")).softmax(-1)
    t_out = tx.masked_fill(tmask, float("-inf")).softmax(-1)
    close(s_out, t_out)
    s2 = sc.triu(sx, 1) + sx.tril(-1) * 2 + sx.cumsum(1) + sx.repeat(1, 2, 1)[:, :4]
    t2 = torch.triu(tx, 1) + tx.tril(-1) * 2 + tx.cumsum(1) + tx.repeat(1, 2, 1)[:, :4]
    close(s2, t2)
    ((s_out * s2).sum() + sx.repeat(2, 1, 3).square().sum()).backward()
    ((t_out * t2).sum() + tx.repeat(2, 1, 3).square().sum()).backward()
    close(sx.grad, tx.grad, atol=1e-4)
    assert sc.tensor([1, 0, 1, 1]).cumsum(0).tolist() == [1, 1, 2, 3]


@pytest.mark.parametrize(
    "spec,shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("bhtd,bhsd->bhts", [(2, 2, 3, 4), (2, 2, 5, 4)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
        ("i,i->", [(5,), (5,)]),
        ("ij->ji", [(3, 4)]),
        ("ij,kj->ikj", [(3, 4), (2, 4)]),
        ("bi,bi->b", [(3, 4), (3, 4)]),
    ],
)
def test_einsum_matches_torch_with_gradients(spec, shapes):
    pairs = [pair(*s, seed=i, grad=True) for i, s in enumerate(shapes)]
    ours = sc.einsum(spec, *[p[0] for p in pairs])
    theirs = torch.einsum(spec, *[p[1] for p in pairs])
    close(ours, theirs, atol=1e-4)
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    for s, t in pairs:
        close(s.grad, t.grad, atol=1e-3)


def test_bmm_and_sdpa_with_masks():
    (sq, tq), (sk, tk), (sv, tv) = (pair(2, 3, 4, 8, seed=i, grad=True) for i in range(3))
    close(sc.bmm(sq[0], sk[0].transpose(1, 2)), torch.bmm(tq[0], tk[0].transpose(1, 2)), 1e-4)
    keep = sc.tensor(np.random.default_rng(3).random((4, 4)) > 0.3) | sc.eye(4).cast("bool")
    tkeep = torch.tensor(keep.tolist())
    add = sc.randn(4, 4)
    cases = [
        (dict(is_causal=True), dict(is_causal=True)),
        (dict(attn_mask=keep), dict(attn_mask=tkeep)),
        (dict(attn_mask=add, scale=0.3), dict(attn_mask=torch.tensor(add.tolist()), scale=0.3)),
    ]
    total_s, total_t = 0, 0
    for ks, kt in cases:
        ys = F.scaled_dot_product_attention(sq, sk, sv, **ks)
        yt = TF.scaled_dot_product_attention(tq, tk, tv, **kt)
        close(ys, yt, atol=1e-4)
        total_s, total_t = ys.sum() + total_s, yt.sum() + total_t
    (total_s * total_s).backward()
    (total_t * total_t).backward()
    for s, t in ((sq, tq), (sk, tk), (sv, tv)):
        close(s.grad, t.grad, atol=1e-3)


def test_index_assignment_and_mask_and_list_indexing():
    sx, tx = pair(4, 6)
    sv, tv = pair(2, 3, seed=2)
    for key in [1, (slice(None), 2), (slice(1, 3), slice(0, 6, 2)), (Ellipsis, -1), (None, 0, 1)]:
        sx[key] = 0.25 if key != (slice(1, 3), slice(0, 6, 2)) else sv
        tx[key] = 0.25 if key != (slice(1, 3), slice(0, 6, 2)) else tv
        close(sx, tx)
    m = sx > 0.1
    tm = tx > 0.1
    close(sx[m], tx[tm])
    sx[m] = -1.0
    tx[tm] = -1.0
    close(sx, tx)
    rows = sx[:, 0] < 0
    n = int(rows.sum().item())
    fill = sc.arange(n * 6).reshape(n, 6).float()
    sx[rows] = fill
    tx[torch.tensor(rows.tolist())] = torch.tensor(fill.tolist())
    close(sx, tx)
    close(sx[[0, 2, 3]], tx[[0, 2, 3]])
    sx[[3, 1]] = sc.tensor([[7.0] * 6, [8.0] * 6])
    tx[[3, 1]] = torch.tensor([[7.0] * 6, [8.0] * 6])
    close(sx, tx)
    close(
        sx[sc.arange(4), sc.tensor([0, 5, 2, -1])], tx[torch.arange(4), torch.tensor([0, 5, 2, -1])]
    )


def test_gradient_through_picked_logits():
    sx, tx = pair(5, 7, grad=True)
    y = [3, 0, 6, 6, 1]
    (-sx.log_softmax(1)[sc.arange(5), sc.tensor(y)]).mean().backward()
    (-tx.log_softmax(1)[torch.arange(5), torch.tensor(y)]).mean().backward()
    close(sx.grad, tx.grad)


def test_functional_pad_normalize_leaky_one_hot():
    sx, tx = pair(2, 3, 4, grad=True)
    ys = F.pad(sx, (1, 2, 0, 1), value=0.5) * 2 + 0
    yt = TF.pad(tx, (1, 2, 0, 1), value=0.5) * 2 + 0
    close(ys, yt)
    zs = F.normalize(sx, dim=-1) + F.normalize(sx, p=1.0, dim=1) + F.leaky_relu(sx, 0.2)
    zt = TF.normalize(tx, dim=-1) + TF.normalize(tx, p=1.0, dim=1) + TF.leaky_relu(tx, 0.2)
    close(zs, zt)
    (ys.sum() + (zs * zs).sum() + sc.nn.LeakyReLU()(sx).sum()).backward()
    (yt.sum() + (zt * zt).sum() + torch.nn.LeakyReLU()(tx).sum()).backward()
    close(sx.grad, tx.grad, atol=1e-4)
    idx = [2, 0, 4]
    assert F.one_hot(sc.tensor(idx)).tolist() == TF.one_hot(torch.tensor(idx)).tolist()
    assert F.one_hot(sc.tensor(idx), 6).tolist() == TF.one_hot(torch.tensor(idx), 6).tolist()


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_class_weights(smoothing, reduction):
    sx, tx = pair(6, 4, grad=True)
    w = [0.5, 2.0, 1.0, 3.0]
    y = [0, 3, 1, 1, -100, 2]
    ls = sc.nn.CrossEntropyLoss(weight=sc.tensor(w), reduction=reduction, label_smoothing=smoothing)
    lt = torch.nn.CrossEntropyLoss(
        weight=torch.tensor(w), reduction=reduction, label_smoothing=smoothing
    )
    out_s, out_t = ls(sx, sc.tensor(y)), lt(tx, torch.tensor(y))
    close(out_s, out_t)
    out_s.sum().backward()
    out_t.sum().backward()
    close(sx.grad, tx.grad)


def test_random_helpers_draw_valid_samples():
    g = sc.Generator().manual_seed(3)
    p = sc.randperm(20, generator=g)
    assert sorted(p.tolist()) == list(range(20))
    assert sc.randperm(20, generator=sc.Generator().manual_seed(3)).tolist() == p.tolist()
    probs = sc.tensor([[0.0, 0.7, 0.3, 0.0], [0.25, 0.25, 0.25, 0.25]])
    draws = sc.multinomial(probs, 200, replacement=True, generator=g).tolist()
    assert set(draws[0]) <= {1, 2} and 100 < draws[0].count(1) < 180
    once = sc.multinomial(probs, 2, generator=g).tolist()
    assert sorted(once[0]) == [1, 2] and len(set(once[1])) == 2


def test_grad_modes_autograd_grad_and_data():
    sx, tx = pair(3, grad=True)
    with sc.inference_mode():
        assert not (sx * 2).requires_grad
    sc.set_grad_enabled(False)
    assert not (sx * 2).requires_grad
    sc.set_grad_enabled(True)
    with sc.set_grad_enabled(False):
        assert not sc.is_grad_enabled()
    assert sc.is_grad_enabled()
    sx.grad = sc.ones(3)
    ys = (sx * sx).sum()
    (gs,) = sc.autograd.grad(ys, sx)
    (gt,) = torch.autograd.grad((tx * tx).sum(), tx)
    close(gs, gt)
    assert sx.grad.tolist() == [1.0, 1.0, 1.0]  # autograd.grad leaves .grad alone
    sx.data.mul_(2.0)  # .data writes outside autograd, as in torch
    tx.data.mul_(2.0)
    close(sx, tx)
