"""View ops on random shapes against NumPy: values, shapes, strides, and buffer sharing."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import scellis as sc
from scellis.base.shapes import view_strides


@st.composite
def view_step(draw, shape):
    """One random view op valid for ``shape``, as (name, args)."""
    kinds = ["permute", "slice", "reshape", "unsqueeze"]
    if len(shape) >= 2:
        kinds.append("transpose")
    if 1 in shape:
        kinds += ["expand", "squeeze"]
    kind = draw(st.sampled_from(kinds))
    if kind == "permute":
        return kind, tuple(draw(st.permutations(range(len(shape)))))
    if kind == "transpose":
        a, b = draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2, unique=True))
        return kind, (a, b)
    if kind == "slice":
        key = []
        for d in shape:
            start = draw(st.integers(0, max(d - 1, 0)))
            stop = draw(st.integers(start, d))
            key.append(slice(start, stop, draw(st.integers(1, 3))))
        return kind, tuple(key)
    if kind == "expand":
        return kind, tuple(draw(st.integers(1, 4)) if d == 1 else d for d in shape)
    if kind == "squeeze":
        return kind, draw(st.sampled_from([i for i, d in enumerate(shape) if d == 1]))
    if kind == "unsqueeze":
        return kind, draw(st.integers(0, len(shape)))
    n = int(np.prod(shape, dtype=np.int64))
    dims = [d for d in range(1, n + 1) if n % d == 0] if n else [0]
    first = draw(st.sampled_from(dims))
    return kind, (first, -1) if first else (0, draw(st.integers(1, 3)))


def apply_np(a, kind, args):
    if kind == "permute":
        return a.transpose(args)
    if kind == "transpose":
        return np.swapaxes(a, *args)
    if kind == "slice":
        return a[args]
    if kind == "expand":
        return np.broadcast_to(a, args)
    if kind == "squeeze":
        return a.squeeze(args)
    if kind == "unsqueeze":
        return np.expand_dims(a, args)
    return a.reshape(args)


def apply_sc(t, kind, args):
    if kind == "permute":
        return t.permute(args)
    if kind == "transpose":
        return t.transpose(*args)
    if kind == "slice":
        return t[args]
    if kind == "expand":
        return t.expand(args)
    if kind == "squeeze":
        return t.squeeze(args)
    if kind == "unsqueeze":
        return t.unsqueeze(args)
    return t.reshape(args)


@st.composite
def view_chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    steps, cur = [], shape
    for _ in range(draw(st.integers(1, 5))):
        step = draw(view_step(cur))
        steps.append(step)
        cur = apply_np(np.empty(cur), *step).shape
    return shape, steps


@settings(max_examples=150, deadline=None)
@given(view_chains())
def test_view_chain_matches_numpy(chain):
    shape, steps = chain
    a = np.random.default_rng(len(steps)).standard_normal(shape)
    t = sc.tensor(a)
    for kind, args in steps:
        before = t
        a, t = apply_np(a, kind, args), apply_sc(t, kind, args)
        assert t.shape == a.shape, (kind, args)
        np.testing.assert_array_equal(np.array(t.tolist()).reshape(a.shape), a)
        if kind in ("permute", "transpose", "slice", "expand") and a.size:
            # pure views: the input's buffer, numpy's strides (where a dim has extent)
            assert t._buf is before._buf
            want = [s // a.itemsize if d > 1 else None for d, s in zip(a.shape, a.strides)]
            got = [s if d > 1 else None for d, s in zip(t.shape, t.strides)]
            assert got == want, (kind, args)
        if kind == "reshape":
            shared = view_strides(before.shape, before.strides, t.shape) is not None
            assert (t._buf is before._buf) == (shared or t.shape == before.shape)


@settings(max_examples=60, deadline=None)
@given(view_chains())
def test_view_chain_gradient_is_a_scatter_of_ones(chain):
    # d(sum(view))/dx counts how often each element appears in the view
    shape, steps = chain
    x = sc.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    t = x
    for kind, args in steps:
        idx, t = apply_np(idx, kind, args), apply_sc(t, kind, args)
    if t is x:
        return
    (t * 1.0).sum().backward()
    want = np.bincount(idx.reshape(-1), minlength=x.numel)
    np.testing.assert_array_equal(np.array(x.grad.tolist()).reshape(-1), want)


def test_an_empty_view_past_its_buffer_end_reads_nothing():
    # a slice of nothing at an offset lies past the end of a one-element buffer
    x = sc.tensor(np.random.default_rng(2).standard_normal(1), requires_grad=True)
    t = x[0:0].reshape(0, 3)[0:0, 2:2]
    assert t.shape == (0, 0) and t.offset >= x.numel
    (t * 1.0).sum().backward()
    assert x.grad.tolist() == [0.0]
