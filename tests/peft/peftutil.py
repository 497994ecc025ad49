"""Helpers for the PEFT tests: small seeded models, host arrays, torch twins of the maths.

The torch functions write LoRA and DoRA out by hand from the papers' formulas (no
PEFT library), so they are an independent statement of the same maths.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

import scellis as sc
from scellis.base.rng import Generator
from scellis.model.zoo import CharTransformer


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def arr(t) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float64)


def th(t) -> torch.Tensor:
    return torch.from_numpy(arr(t))


def char_model(device="reference", seed=0, vocab=11, d=16, heads=2, layers=2, context=12):
    return CharTransformer(
        vocab, d, heads, layers, context, device=device, gen=Generator(seed, "init")
    )


def ids_for(name: str, shape=(2, 6), vocab=11, device="reference"):
    a = rng_for(name).integers(0, vocab, shape).astype(np.int32)
    return sc.tensor(a, dtype="i32", device=device)


def torch_lora(x, w, b, A, B, scale):
    y = x @ w.T + scale * (x @ A.T) @ B.T
    return y if b is None else y + b


def torch_dora(x, w, b, A, B, m, scale):
    v = w + scale * B @ A
    coef = m / v.norm(dim=1)
    y = (x @ w.T + scale * (x @ A.T) @ B.T) * coef
    return y if b is None else y + b
