"""An empty tuple of dims reduces every dim, as in torch: ``x.sum(())`` is ``x.sum()``.

Checked against torch for the reducer methods (sum, max, min, amax, amin) and the
composites over them (mean, var, std), with and without keepdim, forward and backward.
The primitives keep their own reading (``axes=()`` reduces nothing); only the user-facing
methods map an empty tuple to all dims.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc

pytestmark = pytest.mark.torch

X = np.random.default_rng(7).standard_normal((3, 4, 5)).astype(np.float32)

METHODS = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda x, d, k: x.sum(d, keepdim=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda x, d, k: x.mean(d, keepdim=k)),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda x, d, k: x.var(d, keepdim=k)),
    "std": (lambda x, d, k: x.std(d, keepdim=k), lambda x, d, k: x.std(d, keepdim=k)),
    "max": (lambda x, d, k: x.max(d, keepdim=k), lambda x, d, k: x.amax(d, keepdim=k)),
    "min": (lambda x, d, k: x.min(d, keepdim=k), lambda x, d, k: x.amin(d, keepdim=k)),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), lambda x, d, k: x.amax(d, keepdim=k)),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), lambda x, d, k: x.amin(d, keepdim=k)),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", [(), []], ids=["tuple", "list"])
@pytest.mark.parametrize("name", sorted(METHODS))
def test_empty_dims_reduce_everything_like_torch(name, dims, keepdim):
    ours, theirs = METHODS[name]
    x = sc.tensor(X, dtype="f32", requires_grad=True)
    out, tout = ours(x, dims, keepdim), theirs(torch.from_numpy(X.copy()), dims, keepdim)
    assert tuple(out.shape) == tuple(tout.shape)
    torch.testing.assert_close(torch.tensor(out.tolist(), dtype=torch.float32), tout)
    assert out.tolist() == ours(sc.tensor(X, dtype="f32"), None, keepdim).tolist()
    # the gradient is that of the reduction over every dim written out: torch 2.13's
    # var(()) backward divides by (1 - correction) = 0, as if () held one element
    tall = torch.from_numpy(X.copy()).requires_grad_()
    theirs(tall, tuple(range(X.ndim)), keepdim).sum().backward()
    out.sum().backward()
    torch.testing.assert_close(torch.tensor(x.grad.tolist(), dtype=torch.float32), tall.grad)


def test_a_0d_tensor_reduces_to_itself():
    x = sc.tensor(2.5)
    assert x.sum(()).tolist() == 2.5 and x.mean(()).tolist() == 2.5
    assert x.sum(()).shape == ()
