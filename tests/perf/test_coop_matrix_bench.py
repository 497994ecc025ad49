"""bench/coop_matrix.py's own parts, where this machine can run them: the product check
catches wrong results, the kernel plumbing (buffers, dispatch, readback, timestamp
queries) gives NumPy's product on a real adapter, the Vulkan probe reads the driver, and
the report names the missing link from a driver's listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:  # after everything else: bench/ holds generic names (matmul.py)
    sys.path.append(str(BENCH))

import coop_matrix as cm  # noqa: E402

PLAIN_MATMUL = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  var s = 0.0;
  for (var k = 0u; k < KK; k++) { s += a[g.y * KK + k] * b[k * NN + g.x]; }
  c[g.y * NN + g.x] = s;
}
"""


@pytest.mark.parametrize("acc", ["f32", "f16"])
def test_check_accepts_a_rounded_product_and_catches_wrong_ones(acc):
    rng = np.random.default_rng(3)
    a, b = cm.operands(rng, 48, 80, 32, np.float16)
    good = (a.astype(np.float32) @ b.astype(np.float32)).astype(cm.NP[acc])
    assert cm.err_over_bound(good, a, b, acc) <= 1.0
    off = good.astype(np.float64)
    # half the sum of |a_ik b_kj|: beyond any rounding of a K-long f16 or f32 accumulation
    off[7, 5] += 0.5 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))[7, 5]
    assert cm.err_over_bound(off, a, b, acc) > 1.0
    # a tile read in the other layout: the transpose of a square block
    swapped = good.astype(np.float64).copy()
    swapped[:16, :16] = swapped[:16, :16].T
    assert cm.err_over_bound(swapped, a, b, acc) > 1.0


@pytest.mark.webgpu
def test_kernel_plumbing_gives_numpys_product_and_gpu_times():
    adapter = cm.choose_adapter(None)
    if "timestamp-query" not in adapter.features:
        pytest.skip("the adapter has no timestamp queries")
    device = adapter.request_device_sync(required_features=["timestamp-query"])
    rng = np.random.default_rng(4)
    a, b = cm.operands(rng, 24, 40, 16, np.float32)
    code = PLAIN_MATMUL.replace("KK", "40u").replace("NN", "16u")
    run = cm.CoopRun(device, code, a, b, np.float32, (2, 3, 1))
    run.run(2)
    assert cm.err_over_bound(run.result(), a, b, "f32") <= 1.0
    secs = run.gpu_seconds(3)
    assert len(secs) == 3 and all(0 < s < 1 for s in secs)


def test_vulkan_probe_reads_the_driver():
    r = subprocess.run([sys.executable, str(BENCH / "vk_coopmat.py")], capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    report = json.loads(r.stdout)
    if "error" in report:
        pytest.skip(report["error"])
    assert report["devices"], "a Vulkan loader with no device"
    for d in report["devices"]:
        assert d["name"] and d["api_version"].startswith("1.")
        assert isinstance(d["has_extension"], bool)
        assert d["has_extension"] or d["configs"] == []


def _vk(configs: list[dict], has_extension: bool = True) -> dict:
    device = {"name": "GPU X", "driver_version": "1.2.3", "has_extension": has_extension,
              "vulkan_memory_model_device_scope": True, "configs": configs}  # fmt: skip
    return {"devices": [device]}


def _config(size: int, ab: str, acc: str) -> dict:
    return {"M": size, "N": size, "K": size, "A": ab, "B": ab, "C": acc, "result": acc,
            "saturating": False, "scope": "subgroup"}  # fmt: skip


def test_listing_decides_which_kernels_run_and_what_is_missing():
    vk = _vk([_config(16, "f16", "f32"), _config(16, "f16", "f16")])
    assert cm.listed(vk, 16, "f16", "f32") and cm.listed(vk, 16, "f16", "f16")
    assert not cm.listed(vk, 8, "f32", "f32")
    line = cm.why_not({"name": "GPU X"}, vk)
    assert "2 configurations" in line and "16x16x16 f16->f32" in line
    assert "VK_KHR_cooperative_matrix" in cm.why_not({"name": "GPU X"}, _vk([], False))


def test_kernel_text_walks_k_once_per_tile_for_every_fragment():
    code = cm.coop_wgsl(16, "f16", "f32", (2, 3), (64, 96, 96), "coopLoadT, C loaded", 32)
    assert code.startswith("enable f16;\nenable wgpu_cooperative_matrix;")
    assert code.count("coopMultiplyAdd(") == 6 and code.count("coopStoreT(") == 6
    assert code.count("coopLoadT<TA>") == 2 and code.count("coopLoadT<TB>") == 3
    assert code.count("coopLoadT<TC>(&c[") == 6 and "TC()" not in code
    assert "kk < 96u; kk += 16u" in code and "let col0 = wid.x * 48u;" in code
