"""Subgroups in the tab, in headless Chromium (SwiftShader offers them, 4 wide).

The worker asks for the feature only where the adapter has it and the engine says which
features its device got; the subgroup kernels of the prod tier (reductions, the norms'
statistics and flash attention's row max and sums), generated here for the WebGPU
spec's default limits, compile under the browser's WGSL compiler, whose checks (the
``enable subgroups;`` directive, uniform control flow around every subgroup operation)
naga does not make. Their values in the tab are the prod Transformer run's
(test_train_tab.py), held to the native run.
"""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.kernel_choice import choosing
from scellis.devices.webgpu import WebGPUBackend
from scellis.ops.attention import flash_attention
from scellis.ops.composites import layer_norm, rms_norm, softmax
from scellis.train.determinism import KERNELS

from .test_device_tab import CALL

pytestmark = pytest.mark.browser

SPEC_LIMITS = {
    "max_compute_workgroup_storage_size": 16384,
    "max_compute_invocations_per_workgroup": 256,
}


def _subgroup_kernels(gpu) -> list[str]:
    """The WGSL of every kernel that prod's ops below compile natively with subgroups."""
    if not gpu.info.subgroups_on:
        pytest.skip(f"{gpu.info.name} has no subgroups to generate the kernels with")
    dev = WebGPUBackend(gpu=gpu.gpu, limits=SPEC_LIMITS)
    rng = np.random.default_rng(3)
    with choosing(KERNELS["prod"]):
        x = sc.tensor(rng.standard_normal((9, 300)).astype(np.float32), device=dev,
                      requires_grad=True)  # fmt: skip
        for y in (x.sum(-1), x.amax(-1), x.sum(), softmax(x, -1), layer_norm(x, 300), rms_norm(x)):
            y.backward(sc.tensor(rng.standard_normal(y.shape).astype(np.float32), device=dev))
        qkv = [
            sc.tensor(rng.standard_normal((1, 2, 40, 16)).astype(np.float32), device=dev,
                      requires_grad=True)
            for _ in range(3)
        ]  # fmt: skip
        flash_attention(*qkv, causal=True).sum().backward()
    return [code for code in dev._pipelines if "enable subgroups;" in code]


def _adapter(page) -> dict:
    """The adapter the engine says it runs on (its hello)."""
    return page.evaluate("async () => (await window.scellisClient.ready()).adapter")


def test_the_device_gets_subgroups_where_the_adapter_has_them(engine_page):
    adapter = _adapter(engine_page)
    has = "subgroups" in adapter["features"]
    assert ("subgroups" in adapter["device_features"]) == has
    assert ("shader-f16" in adapter["device_features"]) == ("shader-f16" in adapter["features"])


def test_subgroup_kernels_compile_in_the_browser(engine_page, gpu):
    adapter = _adapter(engine_page)
    if "subgroups" not in adapter["device_features"]:
        pytest.skip("this Chromium's adapter has no subgroups")
    kernels = _subgroup_kernels(gpu)
    names = " ".join(kernels)
    # the three families are all there: folds, norm pairs and attention's butterflies
    assert "wg_fold" in names and "fold_v2" in names and "subgroupShuffleXor" in names
    for code in kernels:
        got = engine_page.evaluate(CALL, ["check_kernel", {"code": code}])
        assert got == {"ok": {"ok": True}}, got.get("err", got)[:3000]
