"""Freezing by name pattern and head swaps, from Python and from a record's section."""

from __future__ import annotations

import numpy as np
import pytest
from peftutil import arr, char_model, ids_for, rng_for

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.base.rng import Generator
from scellis.catalog import peft
from scellis.catalog.blocks import ClassificationHead, ClassificationHeadConfig
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import SGD, Adam
from scellis.model import RecordModel

RECORD = {
    "model": "tests/classifier@1",
    "inputs": {"x": {"shape": ["batch", 6], "dtype": "f32"}},
    "blocks": {
        "encoder": {"block_id": "nn/mlp", "in": "x", "in_features": 6, "hidden_features": 8},
        "head": {
            "block_id": "nn/classification_head",
            "in": "encoder",
            "in_features": 6,
            "n_classes": 3,
        },
    },  # fmt: skip
    "seed": 5,
}


def _x(name, rows=4):
    return sc.tensor(rng_for(name).standard_normal((rows, 6)).astype(np.float32))


def test_frozen_parameters_get_no_grad_and_no_optimizer_state():
    m = char_model(seed=3)
    names = peft.freeze(m, ["tok.*", "body.blocks.0.*"])
    assert names[0] == "tok.weight" and all(n.startswith(("tok.", "body.blocks.0.")) for n in names)
    assert len(names) == 1 + 16  # the embedding; weight and bias of 8 blocks in block 0
    train = peft.trainable(m)
    assert set(train) | set(names) == set(dict(m.named_parameters()))
    before = {n: arr(p) for n, p in m.named_parameters()}
    opt = Adam(m, lr=0.05)
    grp = opt._groups[0]
    assert grp.names == train
    assert grp.flat.numel == sum(p.numel for n, p in m.named_parameters() if n in train)
    ids = ids_for("freeze", (2, 8))
    for _ in range(2):
        opt.zero_grad()
        CrossEntropyLoss()(m(ids), ids).backward()
        assert all(p.grad is None for n, p in m.named_parameters() if n in names)
        opt.step()
    assert all(b.numel == grp.flat.numel for b in grp.state.values())
    for n, p in m.named_parameters():
        if n in names:
            np.testing.assert_array_equal(arr(p), before[n], err_msg=n)
        else:
            assert not np.array_equal(arr(p), before[n]), n
    # a frozen parameter is still a parameter: checkpoints and exports keep it
    assert "tok.weight" in m.state_dict()
    assert peft.unfreeze(m, "tok.*") == ["tok.weight"]
    assert "tok.weight" in peft.trainable(m)


def test_a_pattern_that_matches_nothing_is_refused():
    m = char_model()
    with pytest.raises(ScellisError, match=r"pattern 'encoder\.\*' matches no parameter"):
        peft.freeze(m, "encoder.*")


def test_swap_head_draws_a_fresh_block_of_another_size():
    m = RecordModel(RECORD, gen=Generator(5, "init"))
    enc_before = {n: arr(p) for n, p in m.named_parameters() if n.startswith("encoder")}
    new = peft.swap_head(m, "head", Generator(9, "head"), n_classes=5)
    assert m.head is new and isinstance(new, ClassificationHead)
    assert new.config.n_classes == 5 and new.config.in_features == 6
    twin = ClassificationHead(ClassificationHeadConfig(6, 5), gen=Generator(9, "head"))
    np.testing.assert_array_equal(arr(m.head.weight), arr(twin.weight))
    np.testing.assert_array_equal(arr(m.head.bias), arr(twin.bias))
    x = _x("swap")
    out = m(x)
    assert out.shape == (4, 5)
    want = arr(m.encoder(x)) @ arr(twin.weight).T + arr(twin.bias)
    np.testing.assert_allclose(arr(out), want, rtol=1e-5, atol=1e-6)
    assert [n for n, _ in m.named_parameters()][-2:] == ["head.weight", "head.bias"]
    for n, v in enc_before.items():
        np.testing.assert_array_equal(arr(dict(m.named_parameters())[n]), v)
    with pytest.raises(ScellisError, match="has no field 'classes'"):
        peft.swap_head(m, "head", classes=4)
    with pytest.raises(ScellisError, match="no block 'neck'"):
        peft.swap_head(m, "neck", n_classes=4)


def test_swap_head_inside_a_block_and_then_train_only_it():
    m = char_model(seed=4)
    peft.swap_head(m, "body.blocks.1.mlp.fc2", Generator(1, "head"), bias=False)
    assert m.body.blocks[1].mlp.fc2.bias is None
    plan = peft.apply_finetune(m, {"freeze": "*", "train": ["head.*"]})
    assert plan.trainable == ["head.weight"]
    opt = SGD(m, lr=0.1)
    assert opt._groups[0].names == ["head.weight"]


def test_the_record_section_swaps_freezes_and_trains():
    m = RecordModel(RECORD, gen=Generator(5, "init"))
    section = {"swap_head": {"head": {"n_classes": 4}}, "freeze": ["encoder.*"]}
    plan = peft.apply_finetune(m, section, seed=5)
    assert plan.swapped == ["head"]
    assert plan.frozen == [n for n, _ in m.named_parameters() if n.startswith("encoder.")]
    assert plan.trainable == ["head.weight", "head.bias"]
    twin = ClassificationHead(ClassificationHeadConfig(6, 4), gen=Generator(5, "head"))
    np.testing.assert_array_equal(arr(m.head.weight), arr(twin.weight))
    y = sc.tensor([0, 3, 1, 2], dtype="i32")
    opt = Adam(m, lr=0.01)
    assert opt._groups[0].flat.numel == 4 * 6 + 4
    opt.zero_grad()
    CrossEntropyLoss()(m(_x("rec")), y).backward()
    opt.step()
    with pytest.raises(ScellisError, match="unknown finetune key 'freez'"):
        peft.apply_finetune(m, {"freez": ["*"]})
