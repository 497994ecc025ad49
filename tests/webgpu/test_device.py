"""WebGPU device behaviour: Philox bit-exactness, limits, the buffer pool, pipeline cache."""

import json
import subprocess
import sys

import numpy as np
import pytest

import scellis as sc
from scellis.base.errors import LimitError
from scellis.base.rng import raw_u32, stream_key
from scellis.devices.webgpu import WebGPUBackend

pytestmark = pytest.mark.webgpu


def _raw(gpu, shape, key, draw, step, op="rand_uniform", **extra):
    from scellis.runtime.dispatch import apply

    return apply(op, (), device=gpu, shape=shape, key=key, draw=draw, step=step, **extra)


@pytest.mark.parametrize("wg", [1, 7, 64, 256])
@pytest.mark.parametrize("n", [1, 5, 130, 1003])
def test_philox_uniform_bitwise_equals_python(gpu, wg, n):
    key = stream_key(42, "dropout")
    step = (3 << 32) + 17  # both step words in play
    got = _raw(gpu, (n,), key, 5, step, _wg=wg).tolist()
    want = [(u >> 8) * 2.0**-24 for u in raw_u32(key, n, 5, step)]
    assert got == want


def test_philox_independent_of_grid_shape(gpu):
    # 500 blocks in workgroups of 8 = 63 workgroups: an 8 x 8 grid under this cap
    small = WebGPUBackend(gpu=gpu.gpu, limits={"max_compute_workgroups_per_dimension": 8})
    key = stream_key(7, "augment")
    a = _raw(gpu, (40, 50), key, 1, 9, _wg=8).tolist()
    b = _raw(small, (40, 50), key, 1, 9, _wg=8).tolist()
    assert a == b


def test_bernoulli_mask_matches_python(gpu):
    key = stream_key(1, "dropout")
    for keep in (0.0, 0.1, 0.5, 0.9, 1.0):
        got = _raw(gpu, (333,), key, 2, 4, op="bernoulli", keep=keep).tolist()
        assert got == sc.rng.bernoulli(key, 333, keep, 2, 4)


def test_dropout_same_mask_on_both_devices(gpu):
    x = np.random.default_rng(0).standard_normal((17, 9)).astype(np.float32) + 3.0
    outs = []
    for dev in ("reference", gpu):
        gen = sc.rng.Generator(11, "dropout")
        t = sc.tensor(x, device=dev)
        outs.append(np.array(sc.functional.dropout(t, 0.3, gen=gen).tolist()))
    np.testing.assert_array_equal(outs[0] == 0, outs[1] == 0)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)


def test_low_binding_limit_gives_same_results(gpu):
    """Tensors over 64 KiB bind as several windows; results equal the default device's."""
    low = WebGPUBackend(
        gpu=gpu.gpu,
        limits={
            "max_storage_buffer_binding_size": 65536,
            "max_compute_workgroups_per_dimension": 16,
        },
    )
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 130)).astype(np.float32)  # 156 KB: 3 windows
    b = rng.standard_normal((130,)).astype(np.float32)
    results = []
    for dev in (gpu, low):
        ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
        y = ((ta * tb).tanh() + ta.mT.mT).exp()[5:290:3]
        results.append(np.array(y.tolist()))
    np.testing.assert_array_equal(results[0], results[1])
    assert low.stats["dispatches"] > 0


def test_low_buffer_size_splits_into_chunks(gpu):
    low = WebGPUBackend(
        gpu=gpu.gpu, limits={"max_storage_buffer_binding_size": 65536, "max_buffer_size": 131072}
    )
    x = np.random.default_rng(4).standard_normal(100_000).astype(np.float32)  # 400 KB
    t = sc.tensor(x, device=low)
    assert len(t._buf.handle.chunks) == 4
    np.testing.assert_array_equal(np.array((t * 2.0 + 1.0).tolist()), x * np.float32(2) + 1)


def test_over_limit_is_refused_before_allocating(gpu):
    tiny = WebGPUBackend(
        gpu=gpu.gpu,
        limits={"max_storage_buffer_binding_size": 1024, "max_storage_buffers_per_shader_stage": 4},
    )
    before = tiny.stats["allocs"]
    with pytest.raises(LimitError, match="maxStorageBuffersPerShaderStage"):
        sc.zeros((10_000,), device=tiny)
    assert tiny.stats["allocs"] == before


def test_limits_can_only_be_lowered(gpu):
    with pytest.raises(sc.ScellisError, match="lowered"):
        WebGPUBackend(gpu=gpu.gpu, limits={"max_buffer_size": 1 << 60})


def test_pool_reuses_buffers_and_live_bytes_stay_flat(gpu):
    rng = np.random.default_rng(5)
    w = sc.tensor(rng.standard_normal((8, 8)).astype(np.float32), device=gpu, requires_grad=True)
    x = sc.tensor(rng.standard_normal((8, 8)).astype(np.float32), device=gpu)
    live = []
    for i in range(1000):
        y = ((x * w).tanh() * w + x).sigmoid()
        y.backward(y.ones_like())
        w.grad = None
        if i in (10, 999):
            gpu.sync()
            live.append(gpu.memory()["live_bytes"])
    assert live[1] <= live[0]
    assert gpu.stats["reuses"] > gpu.stats["allocs"]


def test_pipelines_compile_once_per_variant(gpu):
    rng = np.random.default_rng(6)
    for n in (5, 50, 500):  # shapes differ, the kernel variant does not
        t = sc.tensor(rng.standard_normal(n).astype(np.float32), device=gpu)
        (t.cos() * 3.0).tolist()
        if n == 5:
            compiled = gpu.stats["pipelines"]
    assert gpu.stats["pipelines"] == compiled
    assert gpu.stats["compile_s"] > 0


def test_devices_cli_lists_adapters():
    out = subprocess.run(
        [sys.executable, "-m", "scellis.cli.main", "devices", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    adapters = json.loads(out)
    assert adapters and all("max_storage_buffer_binding_size" in a["limits"] for a in adapters)
    assert all(isinstance(a["shader_f16"], bool) for a in adapters)


def test_adapter_override_by_name(monkeypatch):
    from scellis.devices.native_wgpu import NativeGPU

    with pytest.raises(sc.ScellisError, match="no WebGPU adapter matches"):
        NativeGPU(adapter="no-such-adapter-xyz")
    name = sc.list_adapters()[0]["name"]
    assert NativeGPU(adapter=name.split()[0]).info.name.startswith(name.split()[0])


def test_tiny_workgroup_cap_strides_over_every_element(gpu):
    # 2 x 2 workgroups of 256 cover 1024 invocations; 5000 elements need the stride loop
    tiny = WebGPUBackend(gpu=gpu.gpu, limits={"max_compute_workgroups_per_dimension": 2})
    x = np.random.default_rng(8).standard_normal(5000).astype(np.float32)
    got = np.array((sc.tensor(x, device=tiny) * 3.0 + 1.0).tolist())
    np.testing.assert_array_equal(got, x * np.float32(3) + np.float32(1))
    key = stream_key(3, "dropout")
    assert _raw(tiny, (5000,), key, 0, 0).tolist() == _raw(gpu, (5000,), key, 0, 0).tolist()


def test_time_to_first_result_and_pipeline_count_are_reported(gpu):
    fresh = WebGPUBackend(gpu=gpu.gpu)
    assert "first_result_s" not in fresh.stats
    t = sc.tensor([1.0, 2.0, 3.0], device=fresh)
    assert (t * 2.0).tolist() == [2.0, 4.0, 6.0]
    assert fresh.stats["first_result_s"] > 0
    assert fresh.stats["pipelines"] >= 1 and fresh.stats["compile_s"] > 0


def _matmul_and_attention(backend) -> tuple[list, list]:
    """A large-tile matmul and a flash attention call on ``backend``, as Python lists."""
    from scellis.ops.attention import flash_attention  # noqa: PLC0415

    rng = np.random.default_rng(5)
    a = sc.tensor(rng.standard_normal((256, 512)).astype(np.float32), device=backend)
    b = sc.tensor(rng.standard_normal((512, 1030)).astype(np.float32), device=backend)
    q = sc.tensor(rng.standard_normal((2, 3, 40, 16)).astype(np.float32), device=backend)
    return (a @ b).tolist(), flash_attention(q, q, q, causal=True).tolist()


def test_kernels_without_runtime_checks_give_the_same_bits(gpu, monkeypatch):
    # natively on Vulkan, kernels compile without naga's index clamps; turning the clamps
    # back on (SCELLIS_SHADER_CHECKS=1) must change no result, only the speed
    from scellis.devices.native_wgpu import DAWN, NativeGPU  # noqa: PLC0415

    assert gpu.gpu.trusted_shaders == (DAWN or "vulkan" in gpu.gpu.info.backend.lower())
    monkeypatch.setenv("SCELLIS_SHADER_CHECKS", "1")
    checked = WebGPUBackend(gpu=NativeGPU())
    assert not checked.gpu.trusted_shaders
    assert _matmul_and_attention(checked) == _matmul_and_attention(gpu)


def test_an_over_limit_size_is_refused_every_time(gpu):
    # alloc keeps the sizes it has checked: a refused one must not be among them
    tiny = WebGPUBackend(
        gpu=gpu.gpu,
        limits={"max_storage_buffer_binding_size": 1024, "max_storage_buffers_per_shader_stage": 4},
    )
    for _ in range(2):
        with pytest.raises(LimitError, match="maxStorageBuffersPerShaderStage"):
            tiny.alloc(10_000, sc.f32)
    assert tiny.live_bytes == 0


def test_pool_accounting_follows_the_size_classes(gpu):
    from scellis.devices.webgpu.backend import size_class, storage_bytes

    dev = WebGPUBackend(gpu=gpu.gpu)
    rng = np.random.default_rng()
    kinds = [(int(n), dt) for n in rng.integers(1, 5000, 6) for dt in (sc.f32, sc.bool_, sc.i32)]
    live, peak = [], 0
    for step in range(60):
        n, dt = kinds[int(rng.integers(len(kinds)))]
        if live and rng.random() < 0.4:
            live.pop(int(rng.integers(len(live))))  # its buffer goes back to the pool
        else:
            live.append(dev.alloc(n, dt))
        want = sum(size_class(storage_bytes(b.numel, b.dtype)) for b in live)
        peak = max(peak, want)
        assert (dev.live_bytes, dev.peak_bytes) == (want, peak), step
        assert dev.pooled_bytes == sum(k * len(v) for k, v in dev._pool.items())
        assert all(b.handle.nbytes == storage_bytes(b.numel, b.dtype) for b in live)
