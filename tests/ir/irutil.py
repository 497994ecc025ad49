"""Helpers for the IR tests: the example records and small random inputs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

import scellis as sc  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def example(name: str) -> dict:
    return load_record(str(ROOT / "examples" / f"{name}.sml"))


def random_tensor(shape, dtype: str, device, rng, high: int = 2):
    """Floats ~ N(0, 1); ints uniform in [0, high)."""
    if dtype == "i32":
        arr = rng.integers(0, high, size=shape).astype(np.int32)
    else:
        arr = rng.standard_normal(shape).astype(np.float32)
    return sc.tensor(arr.tolist(), dtype=dtype, device=device)


def random_inputs(record: dict, batch: int, device, seed: int = 0) -> list:
    """One random tensor per record input: ids below the vocabulary, floats ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in record["inputs"].values():
        shape = [batch if isinstance(d, str) else d for d in spec["shape"]]
        if spec["dtype"] == "i32":
            vocab = min(b.get("num_embeddings", 1 << 30) for b in record["blocks"].values())
            arr = rng.integers(0, vocab, size=shape).astype(np.int32)
        else:
            arr = rng.standard_normal(shape).astype(np.float32)
        out.append(sc.tensor(arr.tolist(), dtype=spec["dtype"], device=device))
    return out


MODELS = ["lstm_forecaster", "char_transformer"]
