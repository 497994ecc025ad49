"""Quantised matmul on WebGPU (lavapipe in CI): the WGSL kernel decodes the codes as the
reference device's NumPy does, on shapes that are no multiple of the NF4 block; the WGSL
quantiser writes the pure-Python code's bits; adapters over a quantised base train
alike on both devices."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from peftutil import rng_for
from qweights import hard_weight
from test_qlora import _train
from test_qlora_quantize import on_device, oracle

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

import scellis as sc  # noqa: E402
from scellis.base.errors import LimitError  # noqa: E402
from scellis.base.quant import QuantSpec, double_quantize, quantize  # noqa: E402
from scellis.catalog import peft  # noqa: E402
from scellis.catalog.blocks import Linear, LinearConfig, Sequential  # noqa: E402
from scellis.devices.reference.quant import dequantize  # noqa: E402
from scellis.devices.webgpu.kernels import qmatmul  # noqa: E402
from scellis.devices.webgpu.kernels.matmul import REGS, choose_reg  # noqa: E402
from scellis.runtime.dispatch import apply  # noqa: E402

pytestmark = pytest.mark.webgpu


def _product(device, x, words, scales, spec, trans, **tile):
    codes = sc.tensor(np.frombuffer(words.tobytes(), np.uint32), device=device)
    s = sc.tensor(np.frombuffer(scales.tobytes(), np.float32), device=device)
    xs = sc.tensor(x, device=device)
    return np.asarray(
        apply("qmatmul", (xs, codes, s), **spec.attrs(), trans=trans, **tile).tolist()
    )


# 5 x 13 = 65 and 9 x 31 = 279 elements: partial last blocks, words padded with zero codes
@pytest.mark.parametrize("fmt", ["nf4", "int8"])
@pytest.mark.parametrize("rows, cols, m", [(5, 13, 3), (9, 31, 7), (1, 8, 1)])
@pytest.mark.parametrize("trans", [False, True])
def test_the_wgsl_kernel_decodes_as_the_reference(gpu, fmt, rows, cols, m, trans):
    rng = rng_for(f"{fmt}{rows}{cols}{trans}")
    w = rng.standard_normal((rows, cols)).astype(np.float32)
    spec = QuantSpec(fmt, rows, cols, 16 if fmt == "nf4" and rows == 9 else 64)
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    x = rng.standard_normal((m, rows if trans else cols)).astype(np.float32)
    want = _product("reference", x, words, scales, spec, trans)
    got = _product(gpu, x, words, scales, spec, trans)
    # the matmul kernel's bound, with one more rounding per product (code times scale)
    deq = dequantize(np.frombuffer(words.tobytes(), np.uint32), scales, spec)
    mag = np.abs(x) @ (np.abs(deq) if trans else np.abs(deq).T)
    assert (np.abs(got - want) <= (x.shape[1] + 1) * 2**-23 * mag).all()
    assert np.abs(want).max() > 0


def test_adapters_on_a_quantised_base_train_on_webgpu_as_on_the_reference(gpu):
    _, ref = _train("reference", steps=4)
    _, dev = _train(gpu, steps=4)
    assert dev[-1] < dev[0]
    np.testing.assert_allclose(dev, ref, rtol=1e-5)


@pytest.mark.parametrize(
    "fmt, rows, cols, block",
    [("nf4", 9, 70, 64), ("nf4", 7, 31, 16), ("int8", 9, 70, 64), ("int8", 7, 33, 64)],
)
def test_the_wgsl_quantiser_writes_the_pure_python_words_and_scales(gpu, fmt, rows, cols, block):
    # exact integer decisions in WGSL: halfway points, subnormals and signed zeros included
    w = hard_weight(rng_for(f"wq{fmt}{rows}{cols}"), rows, cols)
    spec = QuantSpec(fmt, rows, cols, block)
    want = oracle(w, spec)
    got = on_device(w, spec, gpu)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


# rows of whole words (88 = 11 words of 8 codes), tiles of W cut at every edge (M, N, K
# no multiple of 64), every register tile of matmul.py
@pytest.mark.parametrize("tile", ["r128", "r128k8", "r128x64s2", "r64s4", "r64"])
@pytest.mark.parametrize("fmt", ["nf4", "int8"])
@pytest.mark.parametrize("trans", [False, True])
def test_the_register_tiled_kernel_decodes_whole_words_as_the_reference(gpu, tile, fmt, trans):
    rng = rng_for(f"reg{tile}{fmt}{trans}")
    rows, cols, m = 72, 88, 67
    spec = QuantSpec(fmt, rows, cols, 16)
    words, scales = quantize(rng.standard_normal(rows * cols).astype(np.float32).tolist(), spec)
    x = rng.standard_normal((m, rows if trans else cols)).astype(np.float32)
    if not REGS[tile].fits(qmatmul._limits_beside_table(gpu.limits, fmt)):
        # a tile past the adapter's workgroup memory (the level table counted) is refused
        with pytest.raises(LimitError, match=tile):
            _product(gpu, x, words, scales, spec, trans, _tile=tile)
        return
    want = _product("reference", x, words, scales, spec, trans)
    got = _product(gpu, x, words, scales, spec, trans, _tile=tile)
    deq = dequantize(np.frombuffer(words.tobytes(), np.uint32), scales, spec)
    mag = np.abs(x) @ (np.abs(deq) if trans else np.abs(deq).T)
    assert (np.abs(got - want) <= (x.shape[1] + 1) * 2**-23 * mag).all()
    assert np.abs(want).max() > 0


@pytest.mark.parametrize("fmt", ["nf4", "int8"])
def test_the_wgsl_dequantize_writes_the_reference_values(gpu, fmt):
    rng = rng_for(f"deq{fmt}")
    spec = QuantSpec(fmt, 9, 70, 16)
    words, scales = quantize(rng.standard_normal(9 * 70).astype(np.float32).tolist(), spec)

    def decoded(device):
        codes = sc.tensor(np.frombuffer(words.tobytes(), np.uint32), device=device)
        s = sc.tensor(np.frombuffer(scales.tobytes(), np.float32), device=device)
        return np.asarray(codes.dequantized(s, **spec.attrs()).tolist(), np.float32)

    want = decoded("reference")  # each value one f32 product, code times scale: bitwise
    np.testing.assert_array_equal(decoded(gpu), want)
    assert np.abs(want).max() > 0


def test_a_double_quantised_block_quantised_on_webgpu_computes_as_on_the_reference(gpu):
    def run(device):
        gen = sc.rng.Generator(4, "init")
        model = Sequential.of(Linear(LinearConfig(70, 300), device=device, gen=gen))
        for p in model.parameters():
            p.requires_grad = False
        peft.quantize_base(model, "nf4", double_quant=True)
        mod = model._children["0"]
        x = sc.tensor(rng_for("dqx").standard_normal((5, 70)).astype(np.float32), device=device)
        return np.asarray(mod.weight_scale_codes.tolist()), np.asarray(model(x).tolist())

    (ref_words, ref_y), (gpu_words, gpu_y) = run("reference"), run(gpu)
    np.testing.assert_array_equal(gpu_words, ref_words)
    np.testing.assert_allclose(gpu_y, ref_y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tile", ["r64", "t32"])
@pytest.mark.parametrize("trans", [False, True])
def test_double_quantised_scales_are_decoded_in_both_kernels(gpu, tile, trans):
    rng = rng_for(f"dqk{tile}{trans}")
    rows, cols, m = 72, 88, 67
    spec = QuantSpec("nf4", rows, cols, 16)  # 396 blocks: two rows of 256 scales
    words, scales = quantize(rng.standard_normal(rows * cols).astype(np.float32).tolist(), spec)
    scale_words, scale_rows = double_quantize(scales, spec)
    x = rng.standard_normal((m, rows if trans else cols)).astype(np.float32)

    def product(device, **tile_attr):
        sw = sc.tensor(np.frombuffer(scale_words.tobytes(), np.uint32), device=device)
        pair = (sw, sc.tensor(np.frombuffer(scale_rows.tobytes(), np.float32), device=device))
        codes = sc.tensor(np.frombuffer(words.tobytes(), np.uint32), device=device)
        xs = sc.tensor(x, device=device)
        y = apply("qmatmul", (xs, codes, *pair), **spec.attrs(), trans=trans, **tile_attr)
        return np.asarray(y.tolist())

    want, got = product("reference"), product(gpu, _tile=tile)
    inner = QuantSpec("nf4", rows, cols, 16, True).scale_spec
    block = dequantize(np.frombuffer(scale_words.tobytes(), np.uint32), scale_rows, inner)
    deq = dequantize(np.frombuffer(words.tobytes(), np.uint32), block.reshape(-1), spec)
    mag = np.abs(x) @ (np.abs(deq) if trans else np.abs(deq).T)
    assert np.abs(want).max() > 0
    assert (np.abs(got - want) <= (x.shape[1] + 1) * 2**-23 * mag).all()
    # the decoded scales differ from the f32 ones: the f32-scaled product is elsewhere
    plain = _product("reference", x, words, scales, spec, trans)
    assert np.abs(plain - want).max() > 1e3 * np.abs(got - want).max()


@pytest.mark.parametrize("storage", [16384, 32768, 49152])
def test_the_chosen_tile_leaves_room_for_the_nf4_level_table(storage):
    # a Llama MLP projection (1024 tokens, 768 -> 2048): on a 48 KiB GPU the first choice,
    # r128x64s2, fills workgroup memory exactly, so NF4 must take a smaller tile
    limits = {"max_compute_workgroup_storage_size": storage,
              "max_compute_invocations_per_workgroup": 1024,
              "max_compute_workgroup_size_x": 1024}  # fmt: skip
    for fmt, extra in (("nf4", qmatmul.NF4_TABLE_BYTES), ("int8", 0)):
        reg = choose_reg(1024, 2048, 768, 1, qmatmul._limits_beside_table(limits, fmt))
        # None: no register tile fits, and the smaller TILES kernel runs
        assert reg is None or REGS[reg].shared_bytes + extra <= storage, (fmt, reg)
    if storage == 49152:  # the tile plain matmuls take there fills it to the byte
        assert REGS[choose_reg(1024, 2048, 768, 1, limits)].shared_bytes == storage


def test_an_nf4_product_that_fills_a_tabs_workgroup_memory_runs_on_a_smaller_tile(gpu):
    # 1,024 tokens x 256 -> 512: the register tile a plain product takes here fills a
    # 32 KiB adapter's workgroup memory exactly, and the NF4 level table would pass it
    # (a browser refuses that pipeline; a native driver may fault). The kernel must pick a
    # tile that fits beside the table and still give the reference's values.
    rng = rng_for("tabfill")
    rows, cols, m = 512, 256, 1024
    limits = {**gpu.limits, "max_compute_workgroup_storage_size": 32768}
    assert REGS[choose_reg(m, rows, cols, 1, limits)].shared_bytes == 32768
    spec = QuantSpec("nf4", rows, cols, 64)
    words, scales = quantize(rng.standard_normal(rows * cols).astype(np.float32).tolist(), spec)
    x = rng.standard_normal((m, cols)).astype(np.float32)
    want = _product("reference", x, words, scales, spec, False)
    got = _product(gpu, x, words, scales, spec, False)
    deq = dequantize(np.frombuffer(words.tobytes(), np.uint32), scales, spec)
    mag = np.abs(x) @ np.abs(deq).T
    assert (np.abs(got - want) <= (cols + 1) * 2**-23 * mag).all()
