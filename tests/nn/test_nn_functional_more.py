"""torch.nn.functional's activations and losses against torch's (reference device):
values and the gradients of every float input, on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nnutil import Fixed, compare_fn, rng_for

import scellis as sc
import scellis.nn.functional as F


def normal(name, *shape, scale=1.0):
    return (rng_for(name).standard_normal(shape) * scale).astype(np.float32)


def uniform(name, *shape, lo=0.05, hi=0.95):
    return rng_for(name).uniform(lo, hi, shape).astype(np.float32)


def signs(name, n):
    return np.where(rng_for(name).random(n) > 0.5, 1.0, -1.0).astype(np.float32)


ACTIVATIONS = {
    "elu": ((), {"alpha": 0.7}),
    "celu": ((), {"alpha": 1.3}),
    "selu": ((), {}),
    "softplus": ((), {"beta": 2.0, "threshold": 3.0}),
    "mish": ((), {}),
    "hardtanh": ((), {"min_val": -0.5, "max_val": 1.2}),
    "relu6": ((), {}),
    "hardsigmoid": ((), {}),
    "hardswish": ((), {}),
    "logsigmoid": ((), {}),
    "softsign": ((), {}),
    "tanhshrink": ((), {}),
    "softshrink": ((), {"lambd": 0.3}),
    "hardshrink": ((), {"lambd": 0.3}),
    "glu": ((), {"dim": 1}),
    "leaky_relu": ((0.2,), {}),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name):
    args, kw = ACTIVATIONS[name]
    x = normal(name, 3, 4, 5, scale=3.0)
    compare_fn(lambda a: getattr(F, name)(a, *args, **kw),
               lambda a: getattr(TF, name)(a, *args, **kw), [x], name)  # fmt: skip


def test_prelu_per_channel_and_softmax_variants():
    x, w = normal("prelu", 2, 3, 4), np.array([0.1, 0.25, -0.4], np.float32)
    compare_fn(F.prelu, TF.prelu, [x, w], "prelu")
    for fn in ("softmax", "log_softmax", "softmin"):
        ours = lambda a, f=fn: getattr(F, f)(a, dim=1, dtype="f32")  # noqa: E731
        theirs = lambda a, f=fn: getattr(TF, f)(a, dim=1, dtype=torch.float32)  # noqa: E731
        compare_fn(ours, theirs, [x], fn)


def test_similarities_and_distances():
    a, b = normal("sim:a", 4, 6), normal("sim:b", 4, 6)
    compare_fn(lambda x, y: F.cosine_similarity(x, y, dim=1),
               lambda x, y: TF.cosine_similarity(x, y, dim=1), [a, b], "cos")  # fmt: skip
    for p in (1.0, 2.0, 3.0):
        compare_fn(lambda x, y, p=p: F.pairwise_distance(x, y, p=p),
                   lambda x, y, p=p: TF.pairwise_distance(x, y, p=p), [a, b], f"pd{p}")  # fmt: skip


def _loss_cases():
    x, t = normal("l:x", 4, 3), normal("l:t", 4, 3)
    p, y = uniform("l:p", 4, 3), uniform("l:y", 4, 3, lo=0.0, hi=1.0)
    w = uniform("l:w", 3, lo=0.5, hi=2.0)
    logp = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)).astype(np.float32)
    q = np.exp(t) / np.exp(t).sum(1, keepdims=True)
    cls = np.array([0, 2, 1, 1])
    s4 = signs("l:s", 4)
    lab = (rng_for("l:lab").random((4, 3)) > 0.5).astype(np.float32)
    counts = rng_for("l:counts").poisson(2.0, (4, 3)).astype(np.float32)
    var = uniform("l:var", 4, 3, lo=0.2, hi=2.0)
    return {
        "bce": ("binary_cross_entropy", [p, y], {}),
        "bce_w_sum": ("binary_cross_entropy", [p, y, Fixed(w)], {"reduction": "sum"}),
        "bcel_pw": ("binary_cross_entropy_with_logits", [x, y], {"pos_weight": "pw"}),
        "bcel_w": ("binary_cross_entropy_with_logits", [x, y, Fixed(w)], {"reduction": "none"}),
        "nll": ("nll_loss", [logp, cls], {}),
        "nll_w_ignore": ("nll_loss", [logp, cls, Fixed(w)], {"ignore_index": 1}),
        "nll_spatial": (
            "nll_loss",
            [logp.reshape(2, 3, 2), np.array([[0, 2], [1, 1]])],
            {"reduction": "sum"},
        ),
        "nll_unbatched": ("nll_loss", [logp[0], np.array(2)], {}),
        "kl_batchmean": ("kl_div", [logp, q.astype(np.float32)], {"reduction": "batchmean"}),
        "kl_logt": (
            "kl_div",
            [logp, np.log(q).astype(np.float32)],
            {"reduction": "sum", "log_target": True},
        ),
        "kl_mean_zero_t": ("kl_div", [logp, Fixed(q.astype(np.float32) * (lab > 0))], {}),
        "smooth_l1": ("smooth_l1_loss", [x, t], {"beta": 0.5}),
        "smooth_l1_0": ("smooth_l1_loss", [x, t], {"beta": 0.0}),
        "huber": ("huber_loss", [x, t], {"delta": 0.5}),
        "soft_margin": ("soft_margin_loss", [x, Fixed(np.sign(t))], {}),
        "margin_rank": ("margin_ranking_loss", [x[:, 0], t[:, 0], Fixed(s4)], {"margin": 0.2}),
        "hinge": ("hinge_embedding_loss", [x, Fixed(np.sign(t))], {"margin": 0.5}),
        "cos_emb": ("cosine_embedding_loss", [x, t, Fixed(s4)], {"margin": 0.1}),
        "triplet": ("triplet_margin_loss", [x, t, x * 0.5 + 0.3], {"margin": 0.8}),
        "triplet_swap_p1": ("triplet_margin_loss", [x, t, y], {"p": 1.0, "swap": True}),
        "multilabel": ("multilabel_soft_margin_loss", [x, lab, Fixed(w)], {}),
        "poisson": ("poisson_nll_loss", [x, Fixed(counts)], {}),
        "poisson_full": (
            "poisson_nll_loss",
            [p * 3, Fixed(counts)],
            {"log_input": False, "full": True},
        ),
        "gauss": ("gaussian_nll_loss", [x, t, var], {}),
        "gauss_row": ("gaussian_nll_loss", [x, t, var[:, 0]], {"full": True, "reduction": "sum"}),
        "mse_none": ("mse_loss", [x, t], {"reduction": "none"}),
        "l1": ("l1_loss", [x, t], {}),
    }


CASES = _loss_cases()


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss(case):
    name, inputs, kw = CASES[case]
    pw = uniform("l:pw", 3, lo=0.5, hi=3.0)
    ours_kw = {k: (sc.tensor(pw) if v == "pw" else v) for k, v in kw.items()}
    theirs_kw = {k: (torch.from_numpy(pw) if v == "pw" else v) for k, v in kw.items()}
    compare_fn(lambda *a: getattr(F, name)(*a, **ours_kw),
               lambda *a: getattr(TF, name)(*a, **theirs_kw), inputs, case)  # fmt: skip


@pytest.mark.parametrize(
    "kw", [{}, {"label_smoothing": 0.2, "reduction": "sum"}, {"weight": "w", "reduction": "none"}]
)
def test_cross_entropy_with_class_probabilities(kw):
    x = normal("soft:x", 4, 3, 2)
    q = np.exp(normal("soft:q", 4, 3, 2))
    q = (q / q.sum(1, keepdims=True)).astype(np.float32)
    w = uniform("soft:w", 3, lo=0.5, hi=2.0)
    ours_kw = {k: (sc.tensor(w) if v == "w" else v) for k, v in kw.items()}
    theirs_kw = {k: (torch.from_numpy(w) if v == "w" else v) for k, v in kw.items()}
    compare_fn(lambda a, b: F.cross_entropy(a, b, **ours_kw),
               lambda a, b: TF.cross_entropy(a, b, **theirs_kw), [x, q], f"soft{kw}")  # fmt: skip


def test_gumbel_softmax_samples_the_softmax_distribution():
    logits = np.float32([0.5, -1.0, 1.5])
    x = sc.tensor(np.tile(logits, (20000, 1)), requires_grad=True)
    soft = np.asarray(F.gumbel_softmax(x, tau=0.7).tolist())
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-5)
    freq = np.bincount(soft.argmax(1), minlength=3) / len(soft)  # the Gumbel-max trick
    np.testing.assert_allclose(freq, torch.softmax(torch.from_numpy(logits), 0).numpy(), atol=0.015)
    hard = F.gumbel_softmax(x, hard=True)
    h = np.asarray(hard.tolist())
    assert set(np.unique(h)) == {0.0, 1.0} and np.all(h.sum(1) == 1)
    (hard * sc.tensor(normal("gs:r", 20000, 3))).sum().backward()
    assert np.isfinite(np.asarray(x.grad.tolist())).all()


def test_gains_match_torch():
    import scellis.nn as nn

    for name in ("linear", "conv2d", "conv_transpose1d", "sigmoid", "tanh", "relu", "selu"):
        assert nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2)
    )
