"""Prefix and prompt tuning, checked against the base model fed real tokens.

Oracle for prompt tuning: a prompt equal to the embeddings of some token ids makes
the model compute what it computes on those ids prepended (positions dropped again).
Oracle for prefix tuning: in a causal model without position encodings, a prefix equal
to the keys and values that real prefix tokens produce in every layer makes the model
compute what it computes on those tokens prepended.
"""

from __future__ import annotations

import numpy as np
import pytest
from peftutil import arr, char_model, ids_for, rng_for

import scellis as sc
from scellis.base.errors import ShapeError
from scellis.base.rng import Generator
from scellis.catalog import peft
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import Adam
from scellis.catalog.peft.select import put_param
from scellis.model import RecordModel

NOPOS = {
    "model": "tests/nopos@1",
    "inputs": {"ids": {"shape": ["batch", 6], "dtype": "i32"}},
    "blocks": {
        "tok": {"block_id": "nn/embedding", "in": "ids", "num_embeddings": 9, "embedding_dim": 8},
        "body": {
            "block_id": "nn/transformer",
            "in": "tok",
            "d_model": 8,
            "num_heads": 2,
            "num_layers": 2,
            "kind": "decoder",
        },
        "head": {"block_id": "nn/lm_head", "in": "body", "d_model": 8, "vocab_size": 9},
    },  # fmt: skip
}


def _cat_ids(prefix: list[int], ids):
    a = np.asarray(ids.tolist(), dtype=np.int32)
    pre = np.tile(np.asarray(prefix, dtype=np.int32), (a.shape[0], 1))
    return sc.tensor(np.concatenate([pre, a], 1), dtype="i32")


def test_prompt_of_token_embeddings_equals_prepending_those_tokens():
    m = char_model(seed=7, context=12)
    ids = ids_for("prompt", (2, 6))
    pid = [3, 9, 1]
    want = arr(m(_cat_ids(pid, ids)))[:, len(pid) :]
    peft.apply_prompt(m, peft.PromptConfig(num_virtual_tokens=3), gen=Generator(0, "peft"))
    tok = m.tok
    assert isinstance(tok, peft.PromptEmbedding)
    put_param(tok, "prompt", sc.tensor(arr(tok.weight)[pid].astype(np.float32),
                                       requires_grad=True))  # fmt: skip
    got = m(ids)
    assert got.shape == (2, 6, 11)
    np.testing.assert_allclose(arr(got), want, rtol=1e-5, atol=1e-5)
    # names are the base model's plus the prompt
    assert "tok.weight" in m.state_dict() and "tok.prompt" in m.state_dict()


def _prefix_kv(model, ids_pre, n):
    """Each layer's k and v projections of the first n positions, fed ``ids_pre``."""
    out = []
    with sc.no_grad():
        h = model.tok(ids_pre)
        for blk in model.body.blocks:
            a = blk.ln1(h)
            out.append((arr(blk.attn.k(a))[0, :n], arr(blk.attn.v(a))[0, :n]))
            h = blk(h)
    return out


def test_prefix_of_real_keys_values_equals_prepending_those_tokens():
    m = RecordModel(NOPOS, gen=Generator(2, "init"))
    ids = ids_for("prefix", (2, 6), vocab=9)
    pid = [4, 0, 7, 2]
    full = _cat_ids(pid, ids)
    want = arr(m(full))[:, len(pid) :]
    kv = _prefix_kv(m, full, len(pid))
    paths = peft.apply_prefix(m, peft.PrefixConfig(num_virtual_tokens=4))
    assert paths == ["body.blocks.0.attn", "body.blocks.1.attn"]
    for blk, (k, v) in zip(m.body.blocks, kv):
        assert isinstance(blk.attn, peft.PrefixAttention)
        put_param(blk.attn, "prefix_key", sc.tensor(k.astype(np.float32), requires_grad=True))
        put_param(blk.attn, "prefix_value", sc.tensor(v.astype(np.float32), requires_grad=True))
    np.testing.assert_allclose(arr(m(ids)), want, rtol=1e-5, atol=1e-5)


def test_prefix_with_a_padding_mask_keeps_the_prefix_visible():
    m = RecordModel(NOPOS, gen=Generator(2, "init"))
    peft.apply_prefix(m, peft.PrefixConfig(num_virtual_tokens=2), gen=Generator(1, "peft"))
    attn = m.body.blocks[0].attn
    x = sc.tensor(rng_for("mask:x").standard_normal((2, 5, 8)).astype(np.float32))
    keep = sc.tensor([[True] * 5, [True, True, True, False, False]], dtype="bool")
    got = arr(attn(x, keep))
    # row 0 keeps every key: the mask changes nothing there; row 1 masks its last two keys,
    # which equals cutting them off (the causal rows before them never saw them anyway)
    np.testing.assert_allclose(got[0], arr(attn(x))[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1, :3], arr(attn(x[1:2, :3]))[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ShapeError):
        attn(x, sc.tensor([[True] * 4] * 2, dtype="bool"))


@pytest.mark.parametrize("kind", ["prefix", "prompt"])
def test_only_the_virtual_tokens_train(kind):
    m = char_model(seed=8, context=12)
    plan = peft.apply_finetune(
        m, {"adapters": [{"block_id": f"peft/{kind}", "num_virtual_tokens": 3}]}, seed=1
    )
    opt = Adam(m, lr=0.05)
    n = sum(p.numel for _, p in m.named_parameters() if p.requires_grad)
    expected = 2 * 2 * 3 * 16 if kind == "prefix" else 3 * 16  # layers * (k, v) * n * d
    assert n == expected == opt._groups[0].flat.numel
    assert all(("prefix_" in t) or t.endswith("prompt") for t in plan.trainable)
    ids = ids_for("tune", (2, 6))
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = CrossEntropyLoss()(m(ids), ids)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_describe_declares_eager_and_graph_paths():
    m = char_model(seed=9, context=12)
    peft.apply_finetune(
        m,
        {"adapters": [
            {"block_id": "peft/lora", "target_modules": ["q"], "rank": 2},
            {"block_id": "peft/prefix", "target_modules": ["body.blocks.1.attn"],
             "num_virtual_tokens": 2},
            {"block_id": "peft/prompt", "num_virtual_tokens": 2},
        ]},
    )  # fmt: skip
    text = peft.describe(m)
    lines = text.splitlines()
    total = sum(p.numel for _, p in m.named_parameters())
    trained = sum(p.numel for _, p in m.named_parameters() if p.requires_grad)
    assert lines[0].startswith(f"peft: 5 adapted block(s); trainable {trained:,} of {total:,}")
    by_path = {ln.split()[0]: ln for ln in lines[1:]}
    assert "peft/lora" in by_path["body.blocks.0.attn.q"]
    assert "lowered: op graph" in by_path["body.blocks.0.attn.q"]
    for p in ("body.blocks.1.attn", "tok", "head"):
        assert "eager path" in by_path[p], p
    # the prefix block wraps the LoRA'd q of layer 1: both adapters are listed
    assert "body.blocks.1.attn.q" in by_path
