"""Optimizer updates over flat buffers larger than a binding window allows at once.

Under small binding limits (64 KiB windows, 8 storage bindings), AdamW's update binds a
gradient, the parameters and two moment buffers of several windows each: more than 8.
The kernel then runs window by window; the parameters must come out bit for bit equal
to the same steps on the unrestricted device, and the planner must not refuse the run.
"""

import numpy as np
import pytest

import scellis as sc
from scellis.catalog.optim import AdamW, flat_view
from scellis.devices.webgpu import WebGPUBackend

pytestmark = pytest.mark.webgpu
LOW = {"max_storage_buffer_binding_size": 65536, "max_storage_buffers_per_shader_stage": 8}
# 32,207 f32: two 64 KiB windows per flat buffer, each tensor inside one window
SHAPES = [(1000,), (120, 130), (130, 120), (7,)]


def _train(dev, ws, grads, skip_first: bool):
    ps = [sc.tensor(w, device=dev, requires_grad=True) for w in ws]
    opt = AdamW(ps, lr=1e-2, weight_decay=0.1)
    for step in grads:
        for k, (p, g) in enumerate(zip(ps, step)):
            # no gradient for the first tensor: the update's run starts 1,000 elements
            # into the flat buffers, off every window boundary
            p.grad = None if skip_first and k == 0 else sc.tensor(g, device=dev)
        opt.step()
    return np.array(flat_view(ps).tolist(), dtype=np.float32)


@pytest.mark.parametrize("skip_first", [False, True])
def test_adamw_past_the_binding_limit_gives_the_same_bits(gpu, skip_first):
    low = WebGPUBackend(gpu=gpu.gpu, limits=LOW)
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(3)]
    want = _train(gpu, ws, grads, skip_first)
    before = low.stats["dispatches"]
    got = _train(low, ws, grads, skip_first)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(want, np.concatenate([w.ravel() for w in ws]))  # it moved
    # three steps, each a gather plus an update split into at least 2 launches
    assert low.stats["dispatches"] - before >= 3 * (1 + 2)
