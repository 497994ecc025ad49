"""Fixtures for the WebGPU tests: the real adapter (lavapipe in CI), never a mock."""

import os
import tempfile

import numpy as np
import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

import scellis as sc  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def to_pair(arr: np.ndarray, gpu, requires_grad=False):
    """The same values on the reference device in f64 and on WebGPU in f32."""
    a32 = arr.astype(np.float32)
    ref = sc.tensor(a32.astype(np.float64), device="reference", requires_grad=requires_grad)
    dev = sc.tensor(a32, device=gpu, requires_grad=requires_grad)
    return ref, dev


def ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the f32 spacing at ``want`` (floored at the min normal)."""
    want = np.asarray(want, dtype=np.float64)
    spacing = np.spacing(np.maximum(np.abs(want), np.finfo(np.float32).tiny).astype(np.float32))
    return np.abs(np.asarray(got, dtype=np.float64) - want) / spacing.astype(np.float64)


def spacing32(v: np.ndarray) -> np.ndarray:
    v = np.maximum(np.abs(np.asarray(v, dtype=np.float64)), np.finfo(np.float32).tiny)
    return np.spacing(v.astype(np.float32)).astype(np.float64)


def ulp_equivalent_error(got, want, x, dfdx) -> np.ndarray:
    """Error in "ulp-equivalents": one unit is one f32 ulp of the result plus the change
    that one f32 ulp of the input makes (|f'(x)| ulp(x)). Well-conditioned functions
    get plain ulps; near a cancellation the input's own rounding is allowed for."""
    unit = spacing32(want) + spacing32(x) * np.abs(np.asarray(dfdx, dtype=np.float64))
    return np.abs(np.asarray(got, dtype=np.float64) - np.asarray(want, dtype=np.float64)) / unit
