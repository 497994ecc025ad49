"""Param groups in a record (``optimizer.groups``): the run's optimizer against torch's
AdamW with the same two groups, step for step; mistakes located at line:col."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.model.build import RecordModel
from scellis.model.param_groups import optimizer_of
from scellis.run.prepare import check_record
from scellis.run.session import start_run
from storeutil import write_record

RECORD = """\
model: me/groups@1
inputs:
  x: {shape: [batch, 3]}
blocks:
  fc1: {block_id: nn/linear, in: x, in_features: 3, out_features: 8}
  norm: {block_id: nn/layer_norm, in: fc1, normalized_shape: 8}
  fc2: {block_id: nn/linear, in: norm, in_features: 8, out_features: 1}
outputs: [fc2]
optimizer:
  block_id: training/optimizer/adamw
  lr: 0.05
  weight_decay: 0.5
  groups:
    - { params: "*.bias|norm.*", weight_decay: 0 }
loss: {block_id: training/loss/mse}
determinism_tier: debug
seed: 3
"""
TORCH_NAMES = {"fc1": "0", "norm": "1", "fc2": "2"}
NO_DECAY = {"fc1.bias", "norm.weight", "norm.bias", "fc2.bias"}


def _twins():
    record = check_record(RECORD, "m.sml")
    ours = RecordModel(record, device="reference")
    opt = optimizer_of(record["optimizer"], ours)
    tnn = torch.nn
    theirs = tnn.Sequential(tnn.Linear(3, 8), tnn.LayerNorm(8), tnn.Linear(8, 1))
    named = dict(theirs.named_parameters())
    with torch.no_grad():
        for n, p in ours.named_parameters():
            block, leaf = n.split(".")
            named[f"{TORCH_NAMES[block]}.{leaf}"].copy_(torch.tensor(np.asarray(p.tolist())))
    return ours, opt, theirs


def _torch_name(n: str) -> str:
    block, leaf = n.split(".")
    return f"{TORCH_NAMES[block]}.{leaf}"


def _train(ours, opt, theirs, topt, steps=6):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        x = rng.standard_normal((5, 3)).astype(np.float32)
        y = rng.standard_normal((5, 1)).astype(np.float32)
        loss = sc.functional.mse_loss(ours(sc.tensor(x)), sc.tensor(y))
        tloss = torch.nn.functional.mse_loss(theirs(torch.tensor(x)), torch.tensor(y))
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        out.append((loss.item(), tloss.item()))
    return out


def _params_agree(ours, theirs) -> bool:
    named = dict(theirs.named_parameters())
    return all(
        np.allclose(np.asarray(p.tolist()), named[_torch_name(n)].detach().numpy(), rtol=1e-5,
                    atol=1e-6)
        for n, p in ours.named_parameters()
    )  # fmt: skip


def test_groups_match_torch_with_the_same_two_groups():
    ours, opt, theirs = _twins()
    assert [g["weight_decay"] for g in opt.param_groups] == [0.5, 0]
    named = dict(theirs.named_parameters())
    decay = [named[_torch_name(n)] for n, _ in ours.named_parameters() if n not in NO_DECAY]
    keep = [named[_torch_name(n)] for n, _ in ours.named_parameters() if n in NO_DECAY]
    topt = torch.optim.AdamW(
        [{"params": decay}, {"params": keep, "weight_decay": 0.0}], lr=0.05, weight_decay=0.5
    )
    for got, want in _train(ours, opt, theirs, topt):
        assert got == pytest.approx(want, rel=1e-5)
    assert _params_agree(ours, theirs)


def test_without_the_group_torch_decays_every_parameter_and_disagrees():
    """The comparison above can fail: one decayed group in torch ends elsewhere."""
    ours, opt, theirs = _twins()
    topt = torch.optim.AdamW(theirs.parameters(), lr=0.05, weight_decay=0.5)
    _train(ours, opt, theirs, topt)
    assert not _params_agree(ours, theirs)


def test_a_run_trains_with_groups(tmp_path):
    rec = write_record(tmp_path)
    text = rec.read_text().replace(
        "optimizer: { block_id: training/optimizer/adam, lr: 0.02 }",
        "optimizer:\n  block_id: training/optimizer/adamw\n  lr: 0.02\n  groups:\n"
        '    - { params: "head.*", lr: 0.005, weight_decay: 0 }',
    )
    s = start_run(text.encode(), "tiny.sml", base_dir=tmp_path, device="reference")
    groups = s.prep.ts.optimizer.param_groups
    assert [(g["lr"], g["weight_decay"]) for g in groups] == [(0.02, 0.01), (0.005, 0)]
    names = s.prep.ts.optimizer._groups[1].names
    assert names and all(n.startswith("head.") for n in names)


@pytest.mark.parametrize(
    "old,new,message",
    [
        ('"*.bias|norm.*"', '"*.bais"',
         "m.sml:14:17: '*.bais' matches no parameter (the parameters are fc1.weight,"),
        ('"*.bias|norm.*", weight_decay: 0', '"*.bias", weight_decay: 0 }\n    - { params: '
         '"fc1.bias|norm.bias", weight_decay: 0',
         "m.sml:15:17: 'fc1.bias|norm.bias' matches no parameter that an earlier group did not"),
        ("weight_decay: 0 }", "weight_decy: 0 }",
         "m.sml:14:34: unknown key 'weight_decy' of an optimizer group: params or an option "
         "of training/optimizer/adamw; did you mean 'weight_decay'?"),
        ('params: "*.bias|norm.*", ', "", "m.sml:14:7: a group needs params"),
        ("weight_decay: 0 }", "weight_decay: -1 }", "m.sml:14:48: weight_decay must be >= 0"),
    ],
)  # fmt: skip
def test_group_mistakes_are_located(old, new, message):
    with pytest.raises(sc.ScellisError) as e:
        check_record(RECORD.replace(old, new), "m.sml")
    assert message in str(e.value)
