"""nn/lstm and nn/gru: the fused path equals the per-step path; dispatch counts."""

import dataclasses
import os
import tempfile

import numpy as np
import pytest

import scellis as sc
from scellis.catalog import lookup

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())


def _block(kind, fused, device, dtype, **kw):
    entry = lookup(f"nn/{kind}")
    cfg = entry.config(input_size=3, hidden_size=5, num_layers=2, fused=fused, **kw)
    return entry.impl(cfg, device=device, dtype=dtype, gen=sc.rng.Generator(3, "init"))


def _step(block, x):
    out = block(x)
    (out * out).sum().backward()
    return np.array(out.tolist()), {
        n: np.array(p.grad.tolist()) for n, p in block.named_parameters()
    }


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("output", ["sequence", "last"])
def test_fused_equals_per_step_ops(kind, output):
    x = np.random.default_rng(5).standard_normal((4, 7, 3))
    res = []
    for fused in (True, False):
        b = _block(kind, fused, "reference", "f64", output=output)
        res.append(_step(b, sc.tensor(x, device="reference", dtype="f64")))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12, atol=1e-13)
    for name in res[0][1]:
        np.testing.assert_allclose(res[0][1][name], res[1][1][name], rtol=1e-10, atol=1e-12)


@pytest.mark.webgpu
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_cuts_dispatches_per_training_step(kind):
    from scellis.devices import get_device

    gpu = get_device("webgpu")
    x = sc.tensor(
        np.random.default_rng(6).standard_normal((4, 16, 3)).astype(np.float32), device=gpu
    )
    counts = {}
    for fused in (False, True):
        block = _block(kind, fused, gpu, "f32")
        _step(block, x)  # warm: pipelines, pool
        before = gpu.stats["dispatches"]
        out = block(x)
        (out * out).sum().backward()
        counts[fused] = gpu.stats["dispatches"] - before
    # a 16-step, 2-layer recurrence: per step and layer, one kernel forward and one
    # backward (two for the tiled variants: gate gradients, then their product), plus
    # the matmuls
    from scellis.devices.webgpu.kernels.recurrent import variant

    gates = 4 if kind == "lstm" else 3
    per_step = 2 if variant(gpu.limits, gates, gpu.info.software) == "step" else 3
    assert counts[True] < counts[False] / 3, counts
    assert counts[True] <= per_step * 2 * 16 + 50, counts
    print(
        f"{kind}: dispatches per forward+backward, per-step ops {counts[False]}, "
        f"fused {counts[True]}"
    )


def test_config_field_is_in_the_schema():
    from scellis.catalog import schema

    for kind in ("lstm", "gru"):
        names = {f.name: f for f in schema(lookup(f"nn/{kind}"))}
        assert names["fused"].default is True and names["fused"].doc
        assert dataclasses.is_dataclass(lookup(f"nn/{kind}").config)
