"""Linear, embedding, MLP and the heads against torch.nn (forward and every gradient)."""

from __future__ import annotations

import math

import numpy as np
import torch
from blockutil import check_normal, check_uniform, compare, gen, rng_for

from scellis.catalog import blocks as B


def test_linear_matches_torch():
    rng = rng_for("linear")
    m = B.Linear(B.LinearConfig(5, 3), gen=gen())
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    compare(m, torch.nn.Linear(5, 3), [rng.standard_normal((2, 4, 5))], name="linear")


def test_linear_without_bias_on_a_vector():
    rng = rng_for("linear_nobias")
    m = B.Linear(B.LinearConfig(4, 2, bias=False), gen=gen())
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    compare(m, torch.nn.Linear(4, 2, bias=False), [rng.standard_normal(4)], name="lin1")


def test_linear_init_is_torchs_distribution():
    m = B.Linear(B.LinearConfig(64, 32), gen=gen(3))
    check_uniform(m.weight, 1 / math.sqrt(64))
    check_uniform(m.bias, 1 / math.sqrt(64))


def test_embedding_matches_torch():
    rng = rng_for("embedding")
    m = B.Embedding(B.EmbeddingConfig(7, 4), gen=gen())
    idx = rng.integers(0, 7, (3, 5))
    compare(m, torch.nn.Embedding(7, 4), [idx], name="embedding")
    check_normal(B.Embedding(B.EmbeddingConfig(100, 16), gen=gen()).weight)


def test_embedding_padding_row_is_zero_and_frozen():
    rng = rng_for("embedding_pad")
    m = B.Embedding(B.EmbeddingConfig(6, 3, padding_idx=-2), gen=gen())
    w = np.asarray(m.weight.tolist())
    assert np.all(w[4] == 0) and np.all(w[[0, 1, 2, 3, 5]] != 0)
    idx = rng.integers(0, 6, (4, 5))
    idx[0, :2] = 4
    compare(m, torch.nn.Embedding(6, 3, padding_idx=4), [idx], name="embpad")
    assert np.all(np.asarray(m.weight.grad.tolist())[4] == 0)


def test_mlp_matches_torch():
    rng = rng_for("mlp")
    m = B.MLP(B.MLPConfig(4, 8, 3), gen=gen())
    assert [n for n, _ in m.named_parameters()] == [
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
    ]
    t = torch.nn.Module()
    t.fc1, t.fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)
    compare(
        m,
        t,
        [rng.standard_normal((2, 3, 4))],
        f_torch=lambda t, x: t.fc2(torch.nn.functional.gelu(t.fc1(x))),
        name="mlp",
    )


def test_regression_head_matches_torch():
    rng = rng_for("regression")
    m = B.RegressionHead(B.RegressionHeadConfig(6, 2), gen=gen())
    compare(m, torch.nn.Linear(6, 2), [rng.standard_normal((5, 6))], name="regression")


def test_classification_head_pools_then_gives_logits():
    rng = rng_for("classify")
    for pool, f in (
        ("last", lambda x: x[:, -1]),
        ("first", lambda x: x[:, 0]),
        ("mean", lambda x: x.mean(1)),
    ):
        m = B.ClassificationHead(B.ClassificationHeadConfig(6, 4, pool=pool), gen=gen())
        compare(
            m,
            torch.nn.Linear(6, 4),
            [rng.standard_normal((3, 5, 6))],
            f_torch=lambda t, x, f=f: t(f(x)),
            name=f"classify_{pool}",
        )


def test_lm_head_own_weight_matches_torch():
    rng = rng_for("lm")
    m = B.LMHead(B.LMHeadConfig(6, 11), gen=gen())
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    compare(m, torch.nn.Linear(6, 11, bias=False), [rng.standard_normal((2, 3, 6))], name="lm")


def test_lm_head_tied_to_an_embedding_shares_its_weight():
    rng = rng_for("lm_tied")
    emb = B.Embedding(B.EmbeddingConfig(11, 6), gen=gen())
    head = B.LMHead(B.LMHeadConfig(6, 11, tie_to="embed"), gen=gen(), embedding=emb)
    assert [n for n, _ in head.named_parameters()] == []
    lm = B.Sequential.of(emb, head)
    assert [n for n, _ in lm.named_parameters()] == ["0.weight"]

    t_emb = torch.nn.Embedding(11, 6)
    t_head = torch.nn.Linear(6, 11, bias=False)
    t_head.weight = t_emb.weight
    compare(lm, torch.nn.Sequential(t_emb, t_head), [rng.integers(0, 11, (2, 5))], name="lm_tied")
