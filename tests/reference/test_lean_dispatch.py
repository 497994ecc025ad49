"""The reference device's shorter paths give what the general ones give, bit for bit.

``run_new`` (one-output ops straight into a new buffer) against ``alloc`` + ``run``
(forced by a spy on the instance, which the short path defers to); softmax's one-node
backward against torch's.
"""

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.devices import get_device

rng = np.random.default_rng(23)


def _ops(a, b, m):
    """Ops whose results take each branch of the short path: a fresh array kept as the
    buffer, a broadcast constant (full), a cast, a view-shaped reduction, a select."""
    return [
        a + b,
        a * 0.5,
        (a @ b.mT).exp(),
        a.sum(-1, keepdim=True),
        a.cast("i32"),
        a.amax(0),
        a.masked_fill(m, -1.0),
        a.full_like(3.0),
    ]


def _values(ts):
    return [np.asarray(t.numpy()) for t in ts]


def test_run_new_is_bitwise_run():
    dev = get_device("reference")
    a = sc.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    b = sc.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    m = sc.tensor(rng.standard_normal((5, 7)) > 0)
    allocs = []
    alloc = dev.alloc
    dev.alloc = lambda *args: (allocs.append(args), alloc(*args))[1]
    try:
        short = _values(_ops(a, b, m))
    finally:
        del dev.alloc
    assert allocs == []  # every op took the short path, which makes its own buffer
    seen = []
    inner = dev.run
    dev.run = lambda op, *args: (seen.append(op), inner(op, *args))[1]
    try:
        general = _values(_ops(a, b, m))
    finally:
        del dev.run
    assert len(seen) >= len(general)  # the spy saw every op: the general path ran them
    for s, g in zip(short, general):
        assert s.dtype == g.dtype and s.shape == g.shape
        assert s.tobytes() == g.tobytes()


def test_softmax_gradient_matches_torch():
    x = rng.standard_normal((3, 4, 9)).astype(np.float32) * 3
    r = rng.standard_normal((3, 4, 9)).astype(np.float32)
    ours = sc.tensor(x, requires_grad=True)
    (ours.softmax(-1) * sc.tensor(r)).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    (theirs.softmax(-1) * torch.tensor(r)).sum().backward()
    torch.testing.assert_close(torch.tensor(ours.grad.numpy()), theirs.grad, rtol=1e-5, atol=1e-6)


def test_softmax_result_changed_in_place_is_refused():
    x = sc.tensor(rng.standard_normal((2, 5)).astype(np.float32), requires_grad=True)
    y = x.softmax(-1)
    y.add_(1.0)
    with pytest.raises(sc.ScellisError, match="in-place"):
        y.sum().backward()
