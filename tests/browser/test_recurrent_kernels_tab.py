"""The recurrent kernels a GPU picks compile under the browser's WGSL compiler.

On a GPU adapter the tab trains LSTM layers with the whole-sequence kernels (``seq``
under fast, ``stream1`` in every tier up to 128 units) and the tiled step kernels
(``split4``) past that; the headless Chromium of these tests emulates its GPU on the CPU,
where the engine picks the plain step kernels, so those never compile here unless
generated natively (for the WebGPU spec's default limits, as a tab's device gets them)
and handed to the worker's compiler, whose checks (uniform control flow around every
barrier, among others) naga does not all make.
"""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels.recurrent import VARIANT_ENV

from .test_device_tab import CALL
from .test_subgroups_tab import SPEC_LIMITS

pytestmark = pytest.mark.browser

# the GPU variants: fast's small-layer kernels, every tier's narrow-layer ones with one
# and several rows a workgroup, and the wide layers' tiled step kernels
GPU_VARIANTS = ("seq", "stream1", "stream4", "split4")


def _lstm_kernels(gpu, variant: str, monkeypatch) -> list[str]:
    """The WGSL of an LSTM layer's forward and backward under ``variant``, generated
    natively for the spec's default limits (ragged units and rows, two units an
    invocation past 256 for the stream kernels)."""
    monkeypatch.setenv(VARIANT_ENV, variant)
    dev = WebGPUBackend(gpu=gpu.gpu, limits=SPEC_LIMITS)
    rng = np.random.default_rng(4)
    hidden = 300 if variant.startswith("stream") else 37
    b, t = 3, 2
    arrays = [
        rng.standard_normal((b, t, 4 * hidden)),
        rng.standard_normal((b, hidden)),
        rng.standard_normal((b, hidden)),
        rng.standard_normal((4 * hidden, hidden)) / np.sqrt(hidden),
    ]
    before = set(dev._pipelines)
    ts = [sc.tensor(a.astype(np.float32), device=dev, requires_grad=True) for a in arrays]
    ts[0].prim("lstm_seq", *ts[1:]).sum().backward()
    return [code for code in dev._pipelines if code not in before]


@pytest.mark.parametrize("variant", GPU_VARIANTS)
def test_gpu_recurrent_kernels_compile_in_the_browser(engine_page, gpu, monkeypatch, variant):
    kernels = _lstm_kernels(gpu, variant, monkeypatch)
    assert any("workgroupBarrier" in code for code in kernels), "no recurrent kernel generated"
    for code in kernels:
        got = engine_page.evaluate(CALL, ["check_kernel", {"code": code}])
        assert got == {"ok": {"ok": True}}, got.get("err", got)[:3000]


def test_fast_tier_conv_and_dropout_kernels_compile_in_the_browser(engine_page, gpu):
    """The fast tier's unfold and fold of a conv's taps, its fused dense layer with a
    ReLU, and dropout's one-pass apply, generated natively as above."""
    from scellis.catalog.blocks.conv import conv1d_columns  # noqa: PLC0415
    from scellis.devices.kernel_choice import choosing  # noqa: PLC0415
    from scellis.runtime import functional as F  # noqa: PLC0415
    from scellis.train.determinism import KERNELS  # noqa: PLC0415

    dev = WebGPUBackend(gpu=gpu.gpu, limits=SPEC_LIMITS)
    rng = np.random.default_rng(6)
    before = set(dev._pipelines)
    x, w, bias = (
        sc.tensor(rng.standard_normal(s).astype(np.float32), device=dev, requires_grad=True)
        for s in ((2, 9, 3), (5, 3, 3), (5,))
    )
    with choosing(KERNELS["fast"]):
        y = conv1d_columns(x, w, bias, 1, 4, 0, 2, "relu")
        F.dropout(y, 0.25, True).sum().backward()
    kernels = [code for code in dev._pipelines if code not in before]
    text = "\n".join(kernels)
    # the fold's tap walk, the fused dense layer, dropout's apply (mask times x, then
    # the scale) and ReLU's gradient select
    for mark in ("let tap = j *", "sc_act", "(a * f32(b))", "select(0.0, b, a > 0.0)"):
        assert mark in text, mark
    for code in kernels:
        got = engine_page.evaluate(CALL, ["check_kernel", {"code": code}])
        assert got == {"ok": {"ok": True}}, got.get("err", got)[:3000]
