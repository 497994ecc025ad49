"""Helpers for the block tests: copy our weights into a torch twin, compare both ways.

Inputs are seeded normal draws (never zeros); the cotangent of the output is random
too, so every gradient entry is exercised. float32 on the reference device throughout;
tolerances are torch.testing.assert_close's defaults.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

import scellis as sc
from scellis.base.rng import Generator


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def gen(seed: int = 0) -> Generator:
    return Generator(seed, "init")


def arr(t) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float32)


def th(t) -> torch.Tensor:
    return torch.from_numpy(arr(t))


def copy_into_torch(ours, tmod, mapping: dict | None = None) -> None:
    """Each of our parameters into ``tmod``: ``mapping[name] = (torch_name, rows)`` puts it
    at rows ``rows`` (a slice) of a packed torch parameter; unmapped names are equal."""
    mapping = mapping or {}
    tparams = dict(tmod.named_parameters())
    covered: set[str] = set()
    with torch.no_grad():
        for name, p in ours.named_parameters():
            tname, rows = mapping.get(name, (name, None))
            assert tname in tparams, f"{name} -> {tname} not in {sorted(tparams)}"
            dst = tparams[tname] if rows is None else tparams[tname][rows]
            assert tuple(dst.shape) == tuple(p.shape), (name, dst.shape, p.shape)
            dst.copy_(th(p))
            covered.add(tname)
    assert covered == set(tparams), f"torch parameters left unset: {set(tparams) - covered}"


def to_pair(a: np.ndarray, requires_grad: bool):
    if a.dtype.kind == "f":
        a = a.astype(np.float32)
        return (
            sc.tensor(a, dtype="f32", requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad),
        )
    if a.dtype.kind == "b":
        return sc.tensor(a, dtype="bool"), torch.from_numpy(a.copy())
    return sc.tensor(a.astype(np.int32), dtype="i32"), torch.from_numpy(a.astype(np.int64))


def compare(ours, tmod, inputs, f_ours=None, f_torch=None, mapping=None, name="case"):
    """Forward and every gradient (parameters and float inputs) against ``tmod``."""
    copy_into_torch(ours, tmod, mapping)
    f_ours = f_ours or (lambda m, *xs: m(*xs))
    f_torch = f_torch or (lambda m, *xs: m(*xs))
    pairs = [to_pair(np.asarray(a), np.asarray(a).dtype.kind == "f") for a in inputs]
    out = f_ours(ours, *[p[0] for p in pairs])
    tout = f_torch(tmod, *[p[1] for p in pairs])
    assert tuple(out.shape) == tuple(tout.shape), (out.shape, tout.shape)
    torch.testing.assert_close(th(out), tout.detach())
    R = rng_for(name + ":cotangent").standard_normal(tout.shape).astype(np.float32)
    out.backward(sc.tensor(R, dtype="f32"))
    tout.backward(torch.from_numpy(R))
    for i, (x, tx) in enumerate(pairs):
        if tx.requires_grad:
            torch.testing.assert_close(th(x.grad), tx.grad, msg=lambda m, i=i: f"input {i}: {m}")
    tparams = dict(tmod.named_parameters())
    for pname, p in ours.named_parameters():
        tname, rows = (mapping or {}).get(pname, (pname, None))
        tg = tparams[tname].grad if rows is None else tparams[tname].grad[rows]
        assert p.grad is not None, f"{pname} got no gradient"
        torch.testing.assert_close(th(p.grad), tg, msg=lambda m, n=pname: f"grad {n}: {m}")
    return out


def check_uniform(t, bound: float) -> None:
    a = arr(t).ravel()
    assert np.abs(a).max() <= bound * (1 + 1e-6)
    assert len(np.unique(a)) > 1
    if a.size >= 200:
        assert np.abs(a).max() > 0.8 * bound
        assert abs(a.std() - bound / np.sqrt(3)) < 0.2 * bound / np.sqrt(3)
        assert abs(a.mean()) < 0.2 * bound


def check_normal(t, std: float = 1.0) -> None:
    a = arr(t).ravel()
    assert len(np.unique(a)) > 1
    if a.size >= 200:
        assert abs(a.std() - std) < 0.15 * std
        assert abs(a.mean()) < 0.2 * std
