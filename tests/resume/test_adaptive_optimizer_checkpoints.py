"""Adagrad, NAdam and RAdam runs checkpoint their state buffers and step counts and a
fresh run of the record restores them exactly (the resume path's load)."""

from __future__ import annotations

import asyncio

import pytest

from scellis.run.session import start_run
from scellis.runtime.tensor import Tensor
from scellis.store.objects import ObjectStore
from scellis.train import checkpoint as ckpt
from storeutil import train_steps, write_record

OPTIMIZERS = {
    "adagrad": "{ block_id: training/optimizer/adagrad, lr: 0.05, initial_accumulator_value: 0.1 }",
    "nadam": "{ block_id: training/optimizer/nadam, lr: 0.01, momentum_decay: 0.01 }",
    "radam": "{ block_id: training/optimizer/radam, lr: 0.01, decoupled_weight_decay: true, "
    "weight_decay: 0.1 }",
}


def _plain(tree):
    if isinstance(tree, Tensor):
        return tree.tolist()
    if isinstance(tree, dict):
        return {k: _plain(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_plain(v) for v in tree]
    return tree


def _setup(folder, name):
    rec = write_record(folder)
    text = rec.read_text().replace(
        "{ block_id: training/optimizer/adam, lr: 0.02 }", OPTIMIZERS[name]
    )
    rec.write_text(text)
    return start_run(text.encode(), str(rec), base_dir=folder, device="reference").prep


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_state_survives_a_checkpoint(tmp_path, name):
    s = _setup(tmp_path, name)
    train_steps(s, 6)
    state = s.ts.optimizer.state_dict()["param_groups"][0]
    assert state["steps"][0] == 6 and state["state"]  # the moments exist and are saved
    objs = ObjectStore(tmp_path / "store")
    record = objs.put((tmp_path / "tiny.sml").read_bytes())
    h, _ = asyncio.run(ckpt.save(s.ts, objs, record=record, dataset=s.digest, tier=s.tier))
    fresh = _setup(tmp_path, name)
    ckpt.load(fresh.ts, objs, h)
    assert _plain(fresh.ts.optimizer.state_dict()) == _plain(s.ts.optimizer.state_dict())
    assert _plain(fresh.ts.model.state_dict()) == _plain(s.ts.model.state_dict())
