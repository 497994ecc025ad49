"""Shared test helpers: the op-case record, gradcheck, torch comparison, op spies.

A ``Case`` is one row of the op table the reference tests drive: a scellis function,
the torch function that defines the same maths, and how to draw its inputs. The same
row feeds the float64 finite-difference check and the float32 torch check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import scellis as sc
from inputs import case_rng
from scellis.devices import get_device

# -- the case record --


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable  # scellis: fn(*tensors) -> Tensor
    torch: Callable | None  # torch: same maths on torch tensors; None: no torch twin
    inputs: Sequence
    grad: tuple | None = None  # inputs differentiated; None = every float input
    h: float = 1e-6  # finite-difference step (a power of two for exactly cast inputs)
    tags: frozenset = field(default_factory=frozenset)

    def arrays(self, salt: int = 0) -> list[np.ndarray]:
        rng = case_rng(self.name, salt)
        out: list[np.ndarray] = []
        for spec in self.inputs:
            out.append(np.asarray(spec.make(rng, out)))
        return out

    def diff(self, arrays) -> tuple[int, ...]:
        if self.grad is not None:
            return self.grad
        return tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")

    def __repr__(self) -> str:
        return self.name


def to_sc(a: np.ndarray, float_dtype: str, requires_grad=False):
    if a.dtype.kind == "f":
        return sc.tensor(a, dtype=float_dtype, requires_grad=requires_grad)
    if a.dtype.kind == "b":
        return sc.tensor(a, dtype="bool")
    return sc.tensor(a, dtype="i32")


def values(t) -> np.ndarray:
    return np.asarray(t.tolist())


# -- float64 central differences --

MAX_COORDS = 32  # coordinates probed one by one per input; a random direction covers all


def gradcheck(case: Case, tol: float = 1e-6) -> None:
    """Check d(sum(out * R))/d(input) for a random R against central differences (f64).

    Every coordinate is probed when an input has at most ``MAX_COORDS`` elements; larger
    inputs get ``MAX_COORDS`` random coordinates plus one random direction over all of
    them. The error is relative to the largest gradient entry, which must not be zero.
    """
    arrays = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in case.arrays()]
    diff = case.diff(arrays)
    assert diff, f"{case.name}: no input to differentiate"
    h = case.h
    rng = case_rng(case.name, 1)

    def loss_of(arrs) -> float:
        with sc.no_grad():
            out = case.fn(*[to_sc(a, "f64") for a in arrs])
        return float(np.sum(values(out) * R))

    with sc.no_grad():
        out0 = values(case.fn(*[to_sc(a, "f64") for a in arrays]))
    R = rng.standard_normal(out0.shape)
    ts = [to_sc(a, "f64", requires_grad=i in diff) for i, a in enumerate(arrays)]
    out = case.fn(*ts)
    assert out.dtype == sc.f64, f"{case.name}: f64 inputs gave {out.dtype}"
    (out * sc.tensor(R)).sum().backward()

    for i in diff:
        assert ts[i].grad is not None, f"{case.name}: input {i} got no gradient"
        ana = values(ts[i].grad).reshape(arrays[i].shape)
        n = arrays[i].size
        coords = range(n) if n <= MAX_COORDS else rng.choice(n, MAX_COORDS, replace=False)
        num = np.empty(len(coords))
        for j, k in enumerate(coords):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i].reshape(-1)[k] += h
            minus[i].reshape(-1)[k] -= h
            num[j] = (loss_of(plus) - loss_of(minus)) / (2 * h)
        got = ana.reshape(-1)[list(coords)]
        scale = max(np.abs(num).max(), np.abs(got).max())
        assert scale > 0, f"{case.name}: input {i} has an all-zero gradient"
        err = np.abs(got - num).max() / scale
        assert err < tol, f"{case.name}: input {i} rel err {err:.2e}\n{got}\n{num}"
        if n > MAX_COORDS:
            v = rng.standard_normal(arrays[i].shape)
            plus, minus = list(arrays), list(arrays)
            plus[i], minus[i] = arrays[i] + h * v, arrays[i] - h * v
            num_d = (loss_of(plus) - loss_of(minus)) / (2 * h)
            ana_d = float(np.sum(ana * v))
            err = abs(num_d - ana_d) / max(float(np.sum(np.abs(ana * v))), 1e-300)
            assert err < tol, f"{case.name}: input {i} directional rel err {err:.2e}"


# -- float32 against torch --


def torch_check(case: Case) -> None:
    """Forward and backward (cotangent R) against torch in float32, assert_close defaults."""
    import torch

    arrays = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in case.arrays()]
    diff = case.diff(arrays)
    ts = [to_sc(a, "f32", requires_grad=i in diff) for i, a in enumerate(arrays)]
    tts = []
    for i, a in enumerate(arrays):
        t = torch.from_numpy(a.astype(np.int64) if a.dtype.kind in "iu" else a.copy())
        tts.append(t.requires_grad_(i in diff))
    out, tout = case.fn(*ts), case.torch(*tts)
    got = torch.from_numpy(np.asarray(values(out))).to(tout.dtype)
    assert tuple(out.shape) == tuple(tout.shape), (out.shape, tout.shape)
    if tout.dtype.is_floating_point:
        assert out.dtype == sc.f32, f"{case.name}: f32 inputs gave {out.dtype}"
    torch.testing.assert_close(got, tout.detach())
    if not diff:
        return
    R = case_rng(case.name, 2).standard_normal(tout.shape).astype(np.float32)
    out.backward(sc.tensor(R, dtype="f32"))
    tout.backward(torch.from_numpy(R))
    for i in diff:
        g = torch.from_numpy(values(ts[i].grad).astype(np.float32).reshape(arrays[i].shape))
        torch.testing.assert_close(g, tts[i].grad, msg=lambda m, i=i: f"grad {i}: {m}")


# -- which primitives a forward runs --


@contextlib.contextmanager
def recorded_ops():
    """Collect the op names the reference device runs inside the block."""
    dev = get_device("reference")
    seen: set[str] = set()
    inner = dev.run

    def spy(op, *args):
        seen.add(op)
        return inner(op, *args)

    dev.run = spy
    try:
        yield seen
    finally:
        del dev.run


def tape_ops(t) -> set[str]:
    """Op names on the tape that produced ``t`` (views included)."""
    seen, stack, ids = set(), [t], set()
    while stack:
        x = stack.pop()
        if id(x) in ids or x._node is None:
            continue
        ids.add(id(x))
        seen.add(x._node.op)
        stack.extend(i for i in x._node.inputs if i is not None)
    return seen


def forward_ops(case: Case) -> set[str]:
    arrays = case.arrays()
    diff = case.diff(arrays)
    ts = [to_sc(a, "f64", requires_grad=i in diff) for i, a in enumerate(arrays)]
    with recorded_ops() as seen:
        out = case.fn(*ts)
    return seen | tape_ops(out)
