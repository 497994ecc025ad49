"""Op cases, nn family: softmax, layer_norm, conv and pooling over time, embedding,
dropout, one_hot and the losses."""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from helpers import Case
from inputs import Away, Idx, N, Near, U
from scellis import functional as F
from scellis.catalog.losses import fused_cross_entropy
from scellis.nn import functional as NF
from scellis.ops.composites import flip
from scellis.rng import Generator, bernoulli

DROP_P, DROP_SEED = 0.3, 11


def sc_dropout(x):
    # a fresh generator per call: every forward of the finite differences sees one mask
    return F.dropout(x, DROP_P, gen=Generator(DROP_SEED, "dropout"))


def philox_mask(shape, p=DROP_P, seed=DROP_SEED):
    """The dropout mask from the pure-Python Philox: draw 0, step 0 of the stream."""
    n = 1
    for d in shape:
        n *= d
    keep = bernoulli(Generator(seed, "dropout").key, n, 1.0 - p, 0, 0)
    return torch.tensor(keep).reshape(shape)


def torch_dropout(x):
    return x * philox_mask(tuple(x.shape)).to(x.dtype) / (1.0 - DROP_P)


def classes_last(fn):
    """torch losses want classes on dim 1; scellis puts them last."""
    return lambda x, t, **kw: fn(x.movedim(-1, 1) if x.ndim > 2 else x, t.long(), **kw)


CE = classes_last(TF.cross_entropy)
NLL = classes_last(TF.nll_loss)

CASES = [
    Case("softmax", lambda x: x.softmax(-1), lambda x: x.softmax(-1), [N((3, 7))]),
    # the fast tier's fused dense layer: slot 0 of the packed result is the activation
    Case(
        "dense_act_gelu",
        lambda x, w, b: x.prim("dense_act", w, b, act="gelu")[0],
        lambda x, w, b: TF.gelu(TF.linear(x, w, b)),
        [N((5, 7)), N((6, 7)), N((6,))],
    ),
    Case(
        "dense_act_tanh",
        lambda x, w, b: x.prim("dense_act", w, b, act="tanh")[0],
        lambda x, w, b: torch.tanh(TF.linear(x, w, b)),
        [N((9, 3)), N((8, 3)), N((8,))],
    ),
    Case(
        "dense_act_none",  # a dense layer alone: the bias added in the matmul's store
        lambda x, w, b: x.prim("dense_act", w, b, act="none")[0],
        lambda x, w, b: TF.linear(x, w, b),
        [N((7, 5)), N((12, 5)), N((12,))],
    ),
    Case(
        "dense_act_split",  # the split backward (a GPU's): activation gradient, column sum
        lambda x, w, b: x.prim("dense_act", w, b, act="gelu", split_backward=True)[0],
        lambda x, w, b: TF.gelu(TF.linear(x, w, b)),
        [N((5, 7)), N((6, 7)), N((6,))],
    ),
    Case("softmax0", lambda x: x.softmax(0), lambda x: x.softmax(0), [N((129, 3))]),
    Case(
        "log_softmax", lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1), [N((2, 3, 7), 3.0)]
    ),
    Case("log_softmax1", lambda x: F.log_softmax(x, 1), lambda x: x.log_softmax(1), [N((1, 129))]),
    Case("logsumexp", lambda x: x.logsumexp(-1), lambda x: x.logsumexp(-1), [N((3, 7))]),
    Case(
        "logsumexp_keepdim",
        lambda x: x.logsumexp(0, keepdim=True),
        lambda x: x.logsumexp(0, keepdim=True),
        [N((7, 3), 4.0)],
    ),
    Case(
        "layer_norm",
        lambda x, w, b: F.layer_norm(x, 7, w, b),
        lambda x, w, b: TF.layer_norm(x, (7,), w, b),
        [N((3, 7)), N((7,)), N((7,))],
    ),
    Case(
        "layer_norm_plain",
        lambda x: F.layer_norm(x, (3, 7)),
        lambda x: TF.layer_norm(x, (3, 7)),
        [N((2, 3, 7))],
    ),
    Case(
        "layer_norm_129",
        lambda x, w: F.layer_norm(x, 129, w),
        lambda x, w: TF.layer_norm(x, (129,), w),
        [N((1, 129)), N((129,))],
    ),
    # indices repeat (12 lookups into 7 rows), so the backward must add, not overwrite
    Case("embedding", lambda i, w: F.embedding(i, w), TF.embedding, [Idx((3, 4), 7), N((7, 5))]),
    Case("embedding_1d", lambda i, w: F.embedding(i, w), TF.embedding, [Idx((129,), 3), N((3, 1))]),
    Case("dropout", sc_dropout, torch_dropout, [N((7, 13))]),
    Case(
        "one_hot",
        lambda i, x: F.one_hot(i, 5).cast(x.dtype) * x,
        lambda i, x: TF.one_hot(i.long(), 5).to(x.dtype) * x,
        [Idx((3, 4), 5), N((3, 4, 5))],
    ),
    Case(
        "conv1d_grouped",
        lambda x, w, b: NF.conv1d(x, w, b, stride=2, padding=1, groups=2),
        lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=1, groups=2),
        [N((2, 4, 9)), N((6, 2, 3)), N((6,))],
    ),
    Case(
        "conv1d_same_dilated",
        lambda x, w: NF.conv1d(x, w, padding="same", dilation=2),
        lambda x, w: TF.conv1d(x, w, padding="same", dilation=2),
        [N((2, 3, 8)), N((2, 3, 3))],
    ),
    Case("flip", lambda x: flip(x, 1), lambda x: x.flip(1), [N((2, 5, 3))]),
    Case(
        "max_pool1d",
        lambda x: NF.max_pool1d(x, 3, 2, 1),
        lambda x: TF.max_pool1d(x, 3, 2, 1),
        [N((2, 3, 10))],
    ),
    Case(
        "avg_pool1d",
        lambda x: NF.avg_pool1d(x, 3, 2, 1),
        lambda x: TF.avg_pool1d(x, 3, 2, 1),
        [N((2, 3, 10))],
    ),
]

CE_VARIANTS = [
    ("mean", {}),
    ("sum", {"reduction": "sum"}),
    ("none", {"reduction": "none"}),
    ("smooth", {"label_smoothing": 0.1}),
    ("smooth_none", {"label_smoothing": 0.25, "reduction": "none"}),
]
for tag, kw in CE_VARIANTS:
    CASES.append(
        Case(
            f"cross_entropy_{tag}",
            lambda x, t, kw=kw: F.cross_entropy(x, t, **kw),
            lambda x, t, kw=kw: CE(x, t, **kw),
            [N((7, 5), 2.0), Idx((7,), 5)],
        )
    )

CASES += [
    # the fast tier's fused cross-entropy (ops/xent.py): the mean loss of its packed result
    Case(
        "softmax_xent_ignore_smooth",
        lambda x, t: fused_cross_entropy(x, t, label_smoothing=0.2, ignore_index=3),
        lambda x, t: CE(x, t, label_smoothing=0.2, ignore_index=3),
        [N((2, 3, 4)), Idx((2, 3), 4, ignore=3)],
    ),
    Case(
        "cross_entropy_ignore",
        lambda x, t: F.cross_entropy(x, t, ignore_index=-100),
        lambda x, t: CE(x, t, ignore_index=-100),
        [N((7, 5)), Idx((7,), 5, ignore=-100)],
    ),
    Case(
        "cross_entropy_ignore_smooth",
        lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2, ignore_index=3),
        lambda x, t: CE(x, t, label_smoothing=0.2, ignore_index=3),
        [N((2, 3, 4)), Idx((2, 3), 4, ignore=3)],
    ),
    Case(
        "cross_entropy_ignore_sum",
        lambda x, t: F.cross_entropy(x, t, ignore_index=-1, reduction="sum"),
        lambda x, t: CE(x, t, ignore_index=-1, reduction="sum"),
        [N((3, 129)), Idx((3,), 129, ignore=-1)],
    ),
    Case(
        "cross_entropy_3d",
        lambda x, t: F.cross_entropy(x, t),
        lambda x, t: CE(x, t),
        [N((2, 3, 7)), Idx((2, 3), 7)],
    ),
    Case(
        "nll_loss", lambda x, t: F.nll_loss(x, t), lambda x, t: NLL(x, t), [N((7, 5)), Idx((7,), 5)]
    ),
    Case(
        "nll_loss_ignore_none",
        lambda x, t: F.nll_loss(x.log_softmax(-1), t, ignore_index=0, reduction="none"),
        lambda x, t: NLL(x.log_softmax(-1), t, ignore_index=0, reduction="none"),
        [N((7, 3)), Idx((7,), 3, ignore=0)],
    ),
    Case(
        "nll_loss_sum",
        lambda x, t: F.nll_loss(x, t, reduction="sum"),
        lambda x, t: NLL(x, t, reduction="sum"),
        [N((1, 3)), Idx((1,), 3)],
    ),
    Case("mse", F.mse_loss, TF.mse_loss, [N((3, 7)), N((3, 7))]),
    Case(
        "mse_none",
        lambda a, b: F.mse_loss(a, b, "none"),
        lambda a, b: TF.mse_loss(a, b, reduction="none"),
        [N((129,)), N((129,))],
    ),
    Case("l1", F.l1_loss, TF.l1_loss, [N((3, 7)), Near(0)]),
    Case(
        "l1_sum",
        lambda a, b: F.l1_loss(a, b, "sum"),
        lambda a, b: TF.l1_loss(a, b, reduction="sum"),
        [N((1,)), Near(0)],
    ),
    Case(
        "huber",
        F.huber_loss,
        TF.huber_loss,
        [N((7, 3)), Near(0, points=(-1.0, 0.0, 1.0), margin=0.05)],
    ),
    Case(
        "huber_delta",
        lambda a, b: F.huber_loss(a, b, 0.5, "none"),
        lambda a, b: TF.huber_loss(a, b, reduction="none", delta=0.5),
        [N((129,)), Near(0, points=(-0.5, 0.0, 0.5), margin=0.05)],
    ),
    Case(
        "bce_with_logits",
        F.binary_cross_entropy_with_logits,
        TF.binary_cross_entropy_with_logits,
        [Away((3, 7), scale=3.0), U((3, 7), 0.0, 1.0)],
    ),
    Case(
        "bce_with_logits_sum",
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, "sum"),
        lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction="sum"),
        [Away((129,)), U((129,), 0.0, 1.0)],
        grad=(0,),
    ),
]
