"""Helpers for the planner tests: example records at several sizes, a measured loop run."""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

import scellis as sc  # noqa: E402
from scellis.base.rng import Generator  # noqa: E402
from scellis.catalog.registry import lookup  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.model import finetune_model  # noqa: E402
from scellis.model.build import RecordModel, config_of  # noqa: E402
from scellis.train import Batches  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def example(name: str) -> dict:
    return load_record(str(ROOT / "examples" / f"{name}.sml"))


def lstm(hidden: int, batch: int) -> dict:
    r = copy.deepcopy(example("lstm_forecaster"))
    r["blocks"]["lstm"]["hidden_size"] = hidden
    r["blocks"]["head"]["in_features"] = hidden
    r["batch_size"] = batch
    return r


def transformer(d_model: int, layers: int, batch: int) -> dict:
    r = copy.deepcopy(example("char_transformer"))
    for name in ("tok", "pos", "body", "head"):
        b = r["blocks"][name]
        for key in ("embedding_dim", "dim", "d_model"):
            if key in b:
                b[key] = d_model
    r["blocks"]["body"]["num_layers"] = layers
    r["batch_size"] = batch
    return r


def mixed(record: dict) -> dict:
    return {**record, "precision": "mixed_f16"}


# three sizes of each example model (kept tiny: lavapipe is a software GPU)
SIZES = [
    ("lstm-h16-b4", lambda: lstm(16, 4)),
    ("lstm-h32-b8", lambda: lstm(32, 8)),
    ("lstm-h48-b16", lambda: lstm(48, 16)),
    ("transformer-d32-l1-b2", lambda: transformer(32, 1, 2)),
    ("transformer-d48-l1-b4", lambda: transformer(48, 1, 4)),
    ("transformer-d64-l2-b4", lambda: transformer(64, 2, 4)),
    ("transformer-d64-l2-b4-remat", lambda: {**transformer(64, 2, 4),
                                             "activation_checkpointing": True}),
]  # fmt: skip


def _entry(section: dict, kind: str, *args):
    entry = lookup(section["block_id"], kind)
    cfg = config_of(entry, section, kind)
    return entry.impl(*args, config=cfg) if args else entry.impl(config=cfg)


def measured_loop_peak(
    record: dict, device, steps: int = 2, seed: int = 0, replay: bool = False
) -> int:
    """The allocator's peak (what it held) over ``steps`` steps of the real train loop on ``device``
    (fresh, so its peak counts this run only), with random data; eager steps unless
    ``replay``."""
    rng = np.random.default_rng(seed)
    b = record["batch_size"]
    (spec,) = record["inputs"].values()
    shape = [b * steps if isinstance(d, str) else d for d in spec["shape"]]
    if spec["dtype"] == "i32":
        vocab = record["blocks"]["tok"]["num_embeddings"]
        x = rng.integers(0, vocab, size=shape).astype(np.int32)
        y = rng.integers(0, vocab, size=shape).astype(np.int32)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.standard_normal((shape[0], 1)).astype(np.float32)
    if record.get("finetune"):  # adapters, a quantised base: as a run builds it
        model, _ = finetune_model(record, device=device)
    else:
        model = RecordModel(record, device=device, gen=Generator(0, "init"))
    opt = _entry(record["optimizer"], "optimizer", model)
    loss = _entry(record["loss"], "loss")
    sc.train.run(
        model,
        loss,
        opt,
        Batches(x, y, b, device=device, shuffle=False),
        epochs=1,
        max_steps=steps,
        determinism_tier="debug",
        grad_clip=record.get("grad_clip"),
        precision=record.get("precision"),
        log_every=1000,
        replay=replay,
    )
    # what the device held: on WebGPU the pool's free storages too, and its scratch
    mem = device.memory()
    return mem.get("held_peak_bytes", mem["peak_bytes"]) + mem.get("scratch_bytes", 0)


# mixed f16 (f32 masters, f16 working copies, dynamic loss scaling): on the reference,
# which emulates f16, and on an adapter with shader-f16
MIXED = [
    ("lstm-h32-b8-mixed", lambda: mixed(lstm(32, 8))),
    ("transformer-d48-l1-b4-mixed", lambda: mixed(transformer(48, 1, 4))),
]
