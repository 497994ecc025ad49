"""The attention backward through the matmul kernel (``attention_split``) on WebGPU.

The case table holds its results to the reference device (rows from 128 queries on);
here: what the scratch holds before a call never reaches a result (the causal bands
read only what the row pass wrote), chunking the heads changes no bit, the fused
kernels agree, and the scratch it holds is what the memory planner counts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import scellis as sc
from scellis.devices.null import TracingBackend
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.backend import size_class
from scellis.devices.webgpu.kernels import attention_split
from scellis.devices.webgpu.kernels.matmul import REGS
from scellis.ir.memory import scratch_bytes
from scellis.ir.trace import Trace
from scellis.ops.attention import flash_attention
from scellis.runtime.dispatch import apply

pytestmark = pytest.mark.webgpu

SHAPES = [  # (B, H, T, S, D, causal)
    (1, 2, 300, 300, 16, True),
    (2, 3, 136, 200, 8, True),
    (2, 3, 200, 136, 12, False),
]


def _grads(gpu, host, causal: bool, variant: str = "tile", poison: bool = False):
    q, k, v = (sc.tensor(x, device=gpu) for x in host[:3])
    d = host[0].shape[-1]
    attrs = {"causal": causal, "scale": 1.0 / math.sqrt(d), "_variant": variant}
    y = apply("flash_attention", (q, k, v), **attrs)
    gy = sc.tensor(host[3], device=gpu)
    if poison:  # every scratch word NaN: a word read before it is written shows
        sv = gpu._scratch(8 * int(np.prod(host[0].shape[:3])) * host[1].shape[2])
        gpu.upload(sv.buf, np.full(sv.buf.numel, np.nan, np.float32).tobytes())
    views = [t.device_view for t in (q, k, v, y, gy)]
    launches = gpu.encode("flash_attention_backward", views, [y.device_view], attrs)
    grads = apply("flash_attention_backward", (q, k, v, y, gy), **attrs)
    return np.asarray(grads.tolist()), launches


def _host(rng, b, h, t, s, d):
    shapes = [(b, h, t, d), (b, h, s, d), (b, h, s, d), (b, h, t, d + 1)]
    return [rng.standard_normal(sh).astype(np.float32) for sh in shapes]


@pytest.mark.parametrize("tile", [None, "r128", "r128x64", "r64s4"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_scratch_contents_never_reach_the_result(gpu, rng, monkeypatch, shape, tile):
    """Under each REGS tile (the largest, 128 rows, reads the whole band)."""
    b, h, t, s, d, causal = shape
    if tile is not None:
        if not REGS[tile].fits(gpu.limits):
            pytest.fail(f"{tile} does not fit this adapter: pick tiles that do")
        monkeypatch.setattr(attention_split, "_tile", lambda base, a, b: tile)
    host = _host(rng, b, h, t, s, d)
    clean, launches = _grads(gpu, host, causal)
    assert len(launches) == 6  # one chunk: five products and the row pass
    poisoned, _ = _grads(gpu, host, causal, poison=True)
    assert np.isfinite(poisoned).all()
    np.testing.assert_array_equal(poisoned, clean)
    _close_to_fused(gpu, host, causal, clean)


def _close_to_fused(gpu, host, causal, split):
    """``split`` within f32 round-off of the fused kernels' gradients: each element is a
    sum of S (or T) products of O(1) terms in both."""
    fused, launches = _grads(gpu, host, causal, variant="tile_fused")
    assert len(launches) == 2  # the dq pass, then the dk/dv pass
    t, s = host[0].shape[2], host[1].shape[2]
    assert np.abs(split - fused).max() <= 64 * max(t, s) * 2.0**-24 * np.abs(fused).max()


@pytest.mark.parametrize("heads_per_chunk", [1, 2, 3, 4])
def test_chunks_of_heads_change_no_bit(gpu, rng, monkeypatch, heads_per_chunk):
    b, h, t, s, d = 2, 3, 136, 150, 8
    host = _host(rng, b, h, t, s, d)
    whole, _ = _grads(gpu, host, True)
    monkeypatch.setattr(attention_split, "SCRATCH_BYTES", heads_per_chunk * 2 * t * s * 4)
    parts = attention_split.chunks(b, h, t, s)
    assert len(parts) > 1
    chunked, launches = _grads(gpu, host, True, poison=True)
    assert len(launches) == 6 * len(parts)
    np.testing.assert_array_equal(chunked, whole)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fused_kernels_agree(gpu, rng, shape):
    b, h, t, s, d, causal = shape
    host = _host(rng, b, h, t, s, d)
    _close_to_fused(gpu, host, causal, _grads(gpu, host, causal)[0])


def test_short_sequences_and_f16_keep_the_fused_kernels():
    assert not attention_split.suits(4, 4, 64, 512, ["f32"] * 6)  # under MIN_ROWS queries
    assert not attention_split.suits(4, 4, 256, 256, ["f16", "f16", "f16", "f32", "f32"])
    assert attention_split.suits(4, 4, 256, 256, ["f32"] * 6)
    one_head = attention_split.SCRATCH_BYTES // 8  # floats of 2 T S at the bound
    side = int(math.isqrt(one_head)) + 1
    assert attention_split.chunks(1, 1, side, side) is None  # one head passes the bound


def test_planner_counts_the_scratch_the_backend_holds(gpu, rng):
    """A forward + backward traced as on WebGPU: the planner counts the scratch storage
    the backend grows to for the same call (the backend's may be larger still, from an
    earlier call: it never shrinks)."""
    b, h, t, d = 2, 3, 160, 8
    host = _host(rng, b, h, t, t, d)
    _grads(gpu, host, True)
    want = size_class(2 * b * h * t * t * 4)
    assert gpu.memory()["scratch_bytes"] >= want

    dev = TracingBackend(name="webgpu")
    qkv = [sc.tensor(x, device=dev, requires_grad=True) for x in host[:3]]
    flash_attention(*qkv, causal=True).sum().backward()
    tr = Trace(record={}, batch=b, mode="training", precision="f32", events=dev.events)
    assert scratch_bytes(tr, "webgpu") == want
    assert scratch_bytes(tr, "reference") == 0


@pytest.mark.parametrize("window", [65536, 16384])
def test_small_binding_windows_match_default(gpu, rng, window):
    """Scores bound as many windows (64 KiB: the split backward still fits the binding
    limit; 16 KiB: it would not, and the fused kernels run): the same gradients."""
    small = WebGPUBackend(gpu=gpu.gpu, limits={"max_storage_buffer_binding_size": window})
    b, h, t, s, d = 1, 2, 136, 140, 8
    host = _host(rng, b, h, t, s, d)
    want, _ = _grads(gpu, host, True)
    got, launches = _grads(small, host, True)
    assert len(launches) == (6 if window == 65536 else 2)
    _close_to_fused(gpu, host, True, got)
    if window == 65536:
        np.testing.assert_array_equal(got, want)
