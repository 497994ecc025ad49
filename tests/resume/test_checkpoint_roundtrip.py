"""TrainState -> checkpoint objects -> a fresh TrainState: every leaf comes back exactly."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from scellis.run.session import start_run
from scellis.runtime.tensor import Tensor
from scellis.store.objects import ObjectStore
from scellis.store.safetensors import loads
from scellis.train import checkpoint as ckpt
from storeutil import train_steps, write_record


def _plain(tree):
    if isinstance(tree, Tensor):
        return ("tensor", str(tree.dtype), tuple(tree.shape), tree.tolist())
    if isinstance(tree, dict):
        return {k: _plain(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_plain(v) for v in tree]
    return tree


def _setup(folder: Path):
    rec = write_record(folder)
    return start_run(rec.read_bytes(), str(rec), base_dir=folder, device="reference").prep


def test_save_then_load_restores_every_leaf(tmp_path):
    s = _setup(tmp_path)
    train_steps(s, 5)
    s.ts.metrics["odd"] = float("nan")  # JSON has no NaN: the manifest must still hold it
    objs = ObjectStore(tmp_path / "store")
    record = objs.put((tmp_path / "tiny.sml").read_bytes())
    h, m = asyncio.run(ckpt.save(s.ts, objs, record=record, dataset=s.digest, tier=s.tier))
    # the weights object is plain safetensors keyed by the dotted parameter paths
    weights, meta = loads(objs.get(m["weights"]))
    assert set(weights) == set(s.ts.model.state_dict()) and meta == {"format": "scellis"}
    for name, (code, shape, view) in weights.items():
        t = s.ts.model.state_dict()[name]
        assert code == "F32" and shape == tuple(t.shape)
        assert bytes(view) == asyncio.run(ckpt.tensor_bytes(t))
    assert m["rng_state"]["shuffle"]["algorithm"] == "philox4x32"
    assert set(m["rng_state"]["dropout"]["counter"]) == {"step", "draw"}
    fresh = _setup(tmp_path)
    before = _plain(fresh.ts.state_dict())
    got = ckpt.load(fresh.ts, objs, h)
    after, want = _plain(fresh.ts.state_dict()), _plain(s.ts.state_dict())
    assert after != before  # something really was loaded
    odd_a, odd_w = after["metrics"].pop("odd"), want["metrics"].pop("odd")
    assert math.isnan(odd_a) and math.isnan(odd_w)
    assert after == want
    assert got["step"] == 5 and got["tier"] == "debug"
