"""Subgroup folds in the reduce and norm kernels: asked for only where the adapter has
them, taken on prod and fast, held to prod's tolerance against the tree kernels and the
reference device, and the trees kept bit for bit where subgroups are off.

Rows of 1 (no fold at all), 3 and 63 (the short path), and 65 to 2000 (the workgroup
paths, most not a multiple of any subgroup size) on lavapipe, whose subgroups are 8 wide.
"""

import dataclasses

import numpy as np
import pytest

import scellis as sc
from scellis.catalog.losses import MSELoss
from scellis.catalog.optim import Adam
from scellis.devices.kernel_choice import FIXED, KernelChoice, choosing, current
from scellis.devices.native_wgpu import device_features
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.gpu import AdapterInfo
from scellis.devices.webgpu.kernels import attention_subgroups
from scellis.devices.webgpu.kernels.variants import subgroup_reductions
from scellis.ops.attention import flash_attention
from scellis.ops.composites import layer_norm, log_softmax, rms_norm, softmax
from scellis.train import Batches, run
from scellis.train.determinism import KERNELS, PROD_TOLERANCE

pytestmark = pytest.mark.webgpu

ROWS = [1, 3, 63, 65, 129, 300, 1000, 2000]
# op name -> (family whose prod tolerance holds it, the function of a tensor)
OPS = {
    "sum": ("dense", lambda t: t.sum(-1)),
    "max": ("dense", lambda t: t.amax(-1)),
    "min": ("dense", lambda t: t.amin(-1)),
    "total": ("dense", lambda t: t.sum()),  # few outputs, many terms: the split path
    "softmax": ("dense", lambda t: softmax(t, -1)),
    "log_softmax": ("dense", lambda t: log_softmax(t, -1)),
    "layer_norm": ("norm", lambda t: layer_norm(t, t.shape[-1])),
    "rms_norm": ("norm", lambda t: rms_norm(t)),
}


# each backend made by ``_backend`` stands for a tier: its ops run under that tier's
# kernel choice (``_on``); any other device runs outside a run's step (FIXED)
_TIER_OF: dict[int, str] = {}


def _backend(gpu, tier, subgroups=True) -> WebGPUBackend:
    """A backend on the test device's GPU for ``tier``, its subgroups turned off
    (as on an adapter without them) unless ``subgroups``."""
    dev = WebGPUBackend(gpu=gpu.gpu)
    if not subgroups:
        dev.info = dataclasses.replace(gpu.info, device_features=[])
    _TIER_OF[id(dev)] = tier
    return dev


def _on(dev):
    """The kernel choice ``dev``'s tier runs under."""
    tier = _TIER_OF.get(id(dev))
    return choosing(KERNELS[tier] if tier else FIXED)


@pytest.fixture(scope="module")
def backends(gpu):
    if not gpu.info.subgroups_on:
        pytest.skip(f"{gpu.info.name} has no subgroup operations")
    return {
        "tree": _backend(gpu, "debug"),
        "prod": _backend(gpu, "prod"),
        "fast": _backend(gpu, "fast"),
        "off": _backend(gpu, "prod", subgroups=False),
    }


def _run(f, x, device):
    with _on(device):
        return f(sc.tensor(x, device=device)).numpy().astype(np.float64)


def _close(got, want, tol) -> None:
    bound = tol["atol"] + tol["rtol"] * np.abs(want).max()
    assert np.abs(got - want).max() <= bound


def _wgsl(dev) -> str:
    return "\n".join(dev._pipelines)


def test_features_are_asked_for_only_where_the_adapter_has_them(gpu):
    base = AdapterInfo("a", "v", "vulkan", "gpu", {}, ["shader-f16", "timestamp-query"])
    assert "subgroup" not in device_features(base)
    with_them = dataclasses.replace(base, features=[*base.features, "subgroup"])
    assert "subgroup" in device_features(with_them)
    assert gpu.info.subgroups_on == gpu.info.has_subgroups  # the real device, as asked


def test_the_tier_picks_the_variant():
    chosen = [KERNELS[t].subgroups for t in ("debug", "prod", "fast")] + [FIXED.subgroups]
    assert [subgroup_reductions(True, c) for c in chosen] == [False, True, True, False]
    assert not subgroup_reductions(False, KERNELS["prod"].subgroups)
    assert KERNELS["prod"].for_inference() == KernelChoice(subgroups=True)


@pytest.mark.parametrize("op", OPS)
def test_subgroup_kernels_match_the_trees_and_the_reference(backends, rng, op):
    family, f = OPS[op]
    tol = PROD_TOLERANCE["f32"][family]
    for d in ROWS:
        x = (rng.standard_normal((7, d)) * 3 + 0.5).astype(np.float32)
        want = _run(f, x.astype(np.float64), "reference")
        tree = _run(f, x, backends["tree"])
        for tier in ("prod", "fast"):
            got = _run(f, x, backends[tier])
            _close(got, tree, tol)
            _close(got, want, tol)
    assert "enable subgroups;" in _wgsl(backends["prod"])
    assert "subgroup" not in _wgsl(backends["tree"])


@pytest.mark.parametrize("rms", [False, True])
def test_norm_gradients_with_subgroups(backends, rng, rms):
    """The backward's paired fold (sum of g w and of g w xhat) against the reference."""
    tol = PROD_TOLERANCE["f32"]["norm"]
    x = rng.standard_normal((5, 300)) * 2 + 1
    w, g = rng.standard_normal(300), rng.standard_normal((5, 300))

    def grads(dev, dtype):
        with _on(dev):
            xt = sc.tensor(x.astype(dtype), device=dev, requires_grad=True)
            wt = sc.tensor(w.astype(dtype), device=dev, requires_grad=True)
            y = rms_norm(xt, wt) if rms else layer_norm(xt, 300, wt)
            y.backward(sc.tensor(g.astype(dtype), device=dev))
            return [t.grad.numpy().astype(np.float64) for t in (xt, wt)]

    for got, want in zip(grads(backends["prod"], np.float32), grads("reference", np.float64)):
        _close(got, want, tol)
    assert "fold_v2" in _wgsl(backends["prod"])


@pytest.mark.parametrize("op", ["max", "min"])
def test_a_nan_survives_the_subgroup_fold(backends, rng, op):
    x = rng.standard_normal((4, 500)).astype(np.float32)
    x[1, 333] = np.nan
    got = _run(OPS[op][1], x, backends["prod"])
    assert np.isnan(got[1]) and np.isfinite(np.delete(got, 1)).all()


@pytest.mark.parametrize("op", ["sum", "softmax", "layer_norm", "total"])
def test_without_subgroups_the_trees_run_bit_for_bit(backends, rng, op):
    """prod on a device without the feature (and a device no run named a tier to) runs
    the debug kernels: the same bits, and no subgroup operation in any kernel."""
    f = OPS[op][1]
    x = rng.standard_normal((6, 1000)).astype(np.float32)
    tree = _run(f, x, backends["tree"])
    untold = WebGPUBackend(gpu=backends["tree"].gpu)
    for dev in (backends["off"], untold):
        assert np.array_equal(_run(f, x, dev).view(np.uint64), tree.view(np.uint64))
        assert "subgroup" not in _wgsl(dev)


def _attention(dev, arrays, causal, dtype=np.float32):
    """The flash attention output and the gradients of q, k and v on ``dev``."""
    q, k, v, gy = (a.astype(dtype) for a in arrays)
    with _on(dev):
        ts = [sc.tensor(a, device=dev, requires_grad=True) for a in (q, k, v)]
        y = flash_attention(*ts, causal=causal)
        y.backward(sc.tensor(gy, device=dev))
        return [y.detach().numpy()] + [t.grad.numpy().astype(np.float64) for t in ts]


# (B, H, T, S, D): rows whose lanes split the keys of a tile, a partial last tile, T != S
ATTENTION_SHAPES = [(1, 2, 37, 37, 16), (2, 1, 70, 70, 8), (1, 1, 5, 9, 4)]


@pytest.mark.parametrize("shape", ATTENTION_SHAPES, ids=str)
def test_flash_attention_with_subgroups(backends, rng, shape):
    b, h, t, s, d = shape
    tol = PROD_TOLERANCE["f32"]["attention"]
    arrays = [rng.standard_normal((b, h, n, d)) for n in (t, s, s, t)]
    for causal in (False, True) if t == s else (False,):
        want = _attention("reference", arrays, causal, np.float64)
        tree = _attention(backends["tree"], arrays, causal)
        for got, w, tr in zip(_attention(backends["prod"], arrays, causal), want, tree):
            _close(got, w, tol)
            _close(got, tr, tol)
    assert "subgroupShuffleXor" in _wgsl(backends["prod"])


def test_flash_kernels_own_fallback_is_the_tree_bit_for_bit(gpu, backends, rng, monkeypatch):
    """Where a workgroup finds its rows' lanes are not subgroup runs it takes the barrier
    path inside the same kernel: forced here, it gives the tree kernels' bits."""
    real = attention_subgroups.check
    monkeypatch.setattr(
        attention_subgroups, "check", lambda tpr: real(tpr).replace("== 0u;", "== 2u;")
    )
    arrays = [rng.standard_normal((1, 2, 37, 16)) for _ in range(4)]
    dev = _backend(gpu, "prod")
    forced = _attention(dev, arrays, True)
    assert "workgroupUniformLoad(&sg_rows_bad) == 2u" in _wgsl(dev)
    for got, want in zip(forced, _attention(backends["tree"], arrays, True)):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("tier", ["debug", "prod"])
def test_a_run_picks_its_tiers_kernels_and_gives_the_device_back(gpu, tier):
    """A run's steps and validation passes take its tier's kernels (a layer norm's
    statistics here); outside the run the device is as it was."""
    if not gpu.info.subgroups_on:
        pytest.skip(f"{gpu.info.name} has no subgroup operations")
    sc.manual_seed(0)
    model = sc.nn.Sequential(sc.nn.Linear(2, 70), sc.nn.LayerNorm(70), sc.nn.Linear(70, 1))
    model = model.to(gpu)
    rng = np.random.default_rng(5)
    xs, ys = rng.standard_normal((16, 2)).tolist(), rng.standard_normal((16, 1)).tolist()
    data = Batches(xs, ys, 8, device=gpu)
    before = set(gpu._pipelines)
    run(model, MSELoss(), Adam(model, lr=0.01), data, epochs=1, determinism_tier=tier,
        val_data=data)  # fmt: skip
    new = [code for code in gpu._pipelines if code not in before]
    assert any("fn fold(" in code for code in new)  # the norm's kernels were compiled
    assert any("enable subgroups;" in code for code in new) == (tier == "prod")
    assert current() == FIXED  # outside the run, the kernels are debug's again
