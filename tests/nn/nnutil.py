"""Helpers for the scellis.nn tests: torch's weights into our layer, then compare.

torch is the oracle: its module's ``state_dict()`` goes into ours through
``load_state_dict`` (torch key names), both run on the same random inputs, and the
outputs and every gradient (inputs and parameters, by torch's names) must agree
within float32 tolerance on the reference device.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

import scellis as sc
from scellis.catalog.module_state import exported


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def arr(t) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float32)


def th(t) -> torch.Tensor:
    return torch.from_numpy(arr(t))


def pair(a: np.ndarray, grad: bool = True):
    if a.dtype.kind == "f":
        a = a.astype(np.float32)
        return sc.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)
    if a.dtype.kind == "b":
        return sc.tensor(a, dtype="bool"), torch.from_numpy(a.copy())
    return sc.tensor(a.astype(np.int32), dtype="i32"), torch.from_numpy(a.astype(np.int64))


def first(y):
    """The tensor a torch-convention call returns first (output of (output, state))."""
    return y[0] if isinstance(y, tuple) else y


def compare(ours, theirs, inputs, name: str, call=None, grad_map=None):
    """Load ``theirs``'s state into ``ours``, run both on ``inputs`` (numpy arrays),
    compare the first output and the gradients of float inputs and parameters.
    ``grad_map``: {torch parameter name: function(our module) -> our gradient tensor}
    for parameters torch packs differently."""
    ours.load_state_dict(theirs.state_dict())
    call = call or (lambda m, *xs: m(*xs))
    pairs = [pair(np.asarray(a)) for a in inputs]
    out, tout = (
        first(call(ours, *[p[0] for p in pairs])),
        first(call(theirs, *[p[1] for p in pairs])),
    )
    assert tuple(out.shape) == tuple(tout.shape), (out.shape, tout.shape)
    torch.testing.assert_close(th(out), tout.detach())
    R = rng_for(name + ":cotangent").standard_normal(tuple(tout.shape)).astype(np.float32)
    out.backward(sc.tensor(R))
    tout.backward(torch.from_numpy(R))
    for i, (x, tx) in enumerate(pairs):
        if tx.requires_grad:
            torch.testing.assert_close(th(x.grad), tx.grad, msg=lambda m, i=i: f"input {i}: {m}")
    ours_named = _our_grads(ours)
    for tname, tp in theirs.named_parameters():
        get = (grad_map or {}).get(tname)
        g = get(ours) if get else ours_named[tname]
        torch.testing.assert_close(th(g), tp.grad, msg=lambda m, n=tname: f"{n}: {m}")
    return out


def _our_grads(ours) -> dict:
    """Our gradients under torch's names: the module's own export renames (and packs
    torch's fused attention projections) as it does for the weights."""
    return exported(ours, {n: p.grad for n, p in ours.named_parameters()})


class Fixed:
    """An input of ``compare_fn`` that takes no gradient (a class weight, a target)."""

    def __init__(self, a):
        self.a = np.asarray(a)


def compare_fn(ours_fn, theirs_fn, inputs, name: str, atol=None):
    """Run one function of each library on the same inputs (numpy arrays; float ones
    take gradients unless wrapped in ``Fixed``) and compare the output and every
    float input's gradient."""
    pairs = [pair(a.a, grad=False) if isinstance(a, Fixed) else pair(np.asarray(a)) for a in inputs]
    out = ours_fn(*[p[0] for p in pairs])
    tout = theirs_fn(*[p[1] for p in pairs])
    assert tuple(out.shape) == tuple(tout.shape), (out.shape, tout.shape)
    tol = {} if atol is None else {"atol": atol, "rtol": atol}
    torch.testing.assert_close(th(out), tout.detach(), **tol)
    R = rng_for(name + ":cotangent").standard_normal(tuple(tout.shape)).astype(np.float32)
    out.backward(sc.tensor(R))
    tout.backward(torch.from_numpy(R))
    for i, (x, tx) in enumerate(pairs):
        if tx.requires_grad:
            torch.testing.assert_close(
                th(x.grad), tx.grad, msg=lambda m, i=i: f"input {i}: {m}", **tol
            )
    return out
