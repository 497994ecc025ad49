"""The attention block's flash path against its naive path, on both devices.

Same weights (one Philox seed), same inputs and cotangent: the flash path must give
the naive path's output and every parameter and input gradient. On the reference
device both run in f64 (agreement to 1e-12 relative); on WebGPU the flash path runs
as WGSL in f32 and is held to the f64 naive result within 2e-5 of the largest value.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import scellis as sc
import scellis.catalog.blocks.attention as attention_block
from scellis.base.errors import ScellisError
from scellis.base.rng import Generator
from scellis.catalog.blocks import (
    AttentionConfig,
    MultiHeadAttention,
    TransformerBlock,
    TransformerBlockConfig,
)

B, T, E, H = 2, 9, 12, 3


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _run(block, x_host, g_host, device, dtype):
    x = sc.tensor(x_host, device=device, dtype=dtype, requires_grad=True)
    y = block(x)
    y.backward(sc.tensor(g_host, device=device, dtype=dtype))
    grads = {n: np.asarray(p.grad.tolist()) for n, p in block.named_parameters()}
    return np.asarray(y.tolist()), np.asarray(x.grad.tolist()), grads


def _block(path, device, dtype, causal=True, rotary=False):
    cfg = AttentionConfig(E, H, causal=causal, rotary=rotary, attention=path)
    return MultiHeadAttention(cfg, device=device, dtype=dtype, gen=Generator(3, "init"))


def _close(got, want, rtol):
    # k's bias has an exactly-zero gradient (it shifts a row's scores alike): round-off
    # there is measured against 1, not against itself
    scale = max(float(np.abs(want).max()), 1.0)
    err = float(np.abs(np.asarray(got) - want).max()) / scale
    assert err <= rtol, f"relative error {err:.2e} > {rtol:.0e}"


def _inputs(name):
    rng = _rng(name)
    return rng.standard_normal((B, T, E)), rng.standard_normal((B, T, E))


@pytest.mark.parametrize("causal,rotary", [(True, False), (False, True)])
def test_flash_equals_naive_on_reference_f64(causal, rotary):
    x, g = _inputs(f"ref{causal}{rotary}")
    naive = _run(_block("naive", "reference", "f64", causal, rotary), x, g, "reference", "f64")
    flash = _run(_block("flash", "reference", "f64", causal, rotary), x, g, "reference", "f64")
    _close(flash[0], naive[0], 1e-12)
    _close(flash[1], naive[1], 1e-12)
    assert flash[2].keys() == naive[2].keys()
    for name in naive[2]:
        _close(flash[2][name], naive[2][name], 1e-12)


@pytest.mark.webgpu
def test_flash_on_webgpu_matches_naive_f64(gpu):
    x, g = _inputs("gpu")
    x32, g32 = x.astype(np.float32), g.astype(np.float32)
    want = _run(_block("naive", "reference", "f64"), x32, g32, "reference", "f64")
    block = _block("flash", gpu, "f32")
    got = _run(block, x32, g32, gpu, "f32")
    for a, b in zip(got[:2], want[:2]):
        _close(a, b, 2e-5)
    for name in want[2]:
        _close(got[2][name], want[2][name], 2e-5)


@pytest.mark.webgpu
def test_flash_self_attention_projects_q_k_v_in_one_matmul_and_matches_the_layer_path(gpu):
    """On WebGPU, f32 self-attention on the flash path is one tape node whose q, k and
    v come from one matmul against the packed weights (two matmuls with the output's);
    a hook on q sends it down the layer-by-layer path (four), and so does a forward
    with nothing to record. Both paths give the f64 naive result."""
    x, g = _inputs("packed")
    x32, g32 = x.astype(np.float32), g.astype(np.float32)
    want = _run(_block("naive", "reference", "f64"), x32, g32, "reference", "f64")
    for hooked, matmuls in ((False, 2), (True, 4)):
        block = _block("flash", gpu, "f32")
        if hooked:
            block.q.register_forward_hook(lambda m, a, out: out)
        ops, inner = [], gpu.run
        gpu.run = lambda op, *a, _ops=ops, _inner=inner: (_ops.append(op), _inner(op, *a))[1]
        try:
            block(sc.tensor(x32, device=gpu))
        finally:
            del gpu.run
        assert ops.count("matmul") == matmuls and "flash_attention" in ops
        ops.clear()
        gpu.run = lambda op, *a, _ops=ops, _inner=inner: (_ops.append(op), _inner(op, *a))[1]
        try:
            with sc.no_grad():  # nothing to record: the three projections, no packing copy
                block(sc.tensor(x32, device=gpu))
        finally:
            del gpu.run
        assert ops.count("matmul") == 4 and "concat" not in ops
        got = _run(block, x32, g32, gpu, "f32")
        for a, b in zip(got[:2], want[:2]):
            _close(a, b, 2e-5)
        for name in want[2]:
            _close(got[2][name], want[2][name], 2e-5)


@pytest.mark.webgpu
def test_auto_takes_flash_on_webgpu_and_reference_and_naive_stays_naive(gpu):
    ref = sc.devices.get_device("reference")
    seen = {}
    for dev, path in ((gpu, "auto"), (ref, "auto"), (ref, "naive")):
        ops, inner = [], dev.run
        dev.run = lambda op, *a, _ops=ops, _inner=inner: (_ops.append(op), _inner(op, *a))[1]
        try:
            _block(path, dev, "f32")(sc.tensor(_inputs("auto")[0], device=dev, dtype="f32"))
        finally:
            del dev.run
        seen[dev.name, path] = ops
    assert "flash_attention" in seen["webgpu", "auto"]
    # the reference's auto: self-attention's one tape node around the flash kernel,
    # the naive maths in one NumPy call; an explicit naive keeps the scores' own ops
    assert "flash_attention" in seen["reference", "auto"]
    assert "flash_attention" not in seen["reference", "naive"]
    assert "flash_attention" in _transformer_ops(gpu)


def _auto_ops(dev, causal=True):
    ops, inner = [], dev.run
    dev.run = lambda op, *a: (ops.append(op), inner(op, *a))[1]
    try:
        block = _block("auto", dev, "f32", causal=causal)
        block(sc.tensor(_inputs("auto")[0], device=dev, dtype="f32"))
    finally:
        del dev.run
    return ops


@pytest.mark.webgpu
def test_auto_rule_takes_naive_below_its_thresholds_and_flash_above(gpu, monkeypatch):
    heads_bytes = B * H * T * T * 4  # this block's naive score matrix, f32
    monkeypatch.setattr(attention_block, "CAUSAL_FLASH_MIN_SCORES", T * T + 1)
    monkeypatch.setattr(attention_block, "NAIVE_SCORES_MAX_BYTES", heads_bytes + 1)
    small = _auto_ops(gpu)
    assert "flash_attention" not in small and "matmul" in small
    monkeypatch.setattr(attention_block, "NAIVE_SCORES_MAX_BYTES", heads_bytes)
    assert "flash_attention" in _auto_ops(gpu)  # the scores are too big to hold
    monkeypatch.setattr(attention_block, "NAIVE_SCORES_MAX_BYTES", heads_bytes + 1)
    monkeypatch.setattr(attention_block, "CAUSAL_FLASH_MIN_SCORES", T * T)
    assert "flash_attention" in _auto_ops(gpu)  # long enough for flash to pay


@pytest.mark.webgpu
def test_auto_rule_without_a_mask_takes_flash_only_inside_its_window(gpu, monkeypatch):
    # the defaults: a 9 x 9 score block is inside the window (flash from the smallest)
    assert "flash_attention" in _auto_ops(gpu, causal=False)
    monkeypatch.setattr(attention_block, "FLASH_MIN_SCORES", T * T + 1)  # below it
    assert "flash_attention" not in _auto_ops(gpu, causal=False)
    monkeypatch.setattr(attention_block, "FLASH_MIN_SCORES", T * T)
    monkeypatch.setattr(attention_block, "FLASH_MAX_SCORES", T * T)
    assert "flash_attention" in _auto_ops(gpu, causal=False)
    monkeypatch.setattr(attention_block, "FLASH_MAX_SCORES", T * T - 1)  # past the window
    assert "flash_attention" not in _auto_ops(gpu, causal=False)


def _transformer_ops(dev):
    cfg = TransformerBlockConfig(E, H, kind="decoder", attention="flash")
    blk = TransformerBlock(cfg, device=dev, gen=Generator(0, "init"))
    ops, inner = [], dev.run
    dev.run = lambda op, *a: (ops.append(op), inner(op, *a))[1]
    try:
        blk(sc.tensor(_inputs("tb")[0], device=dev, dtype="f32"))
    finally:
        del dev.run
    return ops


def test_explicit_flash_refuses_a_padding_mask():
    block = _block("flash", "reference", "f64", causal=False)
    x = sc.tensor(_inputs("mask")[0], dtype="f64")
    mask = sc.tensor(np.ones((B, T), bool))
    with pytest.raises(ScellisError, match="padding mask"):
        block(x, mask)
