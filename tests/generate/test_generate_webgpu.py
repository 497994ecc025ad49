"""Cached decoding on WebGPU (lavapipe; tiny): the flash and cache paths of the WGSL
kernels give the logits of whole-window recomputation and of the reference device."""

from __future__ import annotations

import asyncio
import os
import tempfile

import numpy as np
import pytest

from generate.genutil import tiny_lm

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.autograd import no_grad  # noqa: E402
from scellis.base.rng import Generator  # noqa: E402
from scellis.catalog import blocks as B  # noqa: E402
from scellis.catalog.blocks.decoding import KVCache  # noqa: E402
from scellis.run.generate import stream  # noqa: E402
from scellis.runtime.creation import tensor  # noqa: E402

pytestmark = pytest.mark.webgpu


def steps(model, device, **kw):
    prompt = [[1, 2, 3], [4, 0, 9]]
    kw = dict(max_new=8, context=8, device=device, keep_logits=True, **kw)

    async def go():
        return [s async for s in stream(model, prompt, **kw)]

    got = asyncio.run(go())
    return [s.ids for s in got], np.array([s.logits for s in got], dtype=np.float64)


@pytest.mark.parametrize("position", ["learned", "rotary"])
def test_cached_decoding_on_webgpu_equals_recomputation_and_the_reference(gpu, position):
    model = tiny_lm(gpu, position=position, context=8)
    ids, cached = steps(model, gpu, temperature=0)
    ids_full, full = steps(model, gpu, temperature=0, cache=False)
    assert ids == ids_full
    np.testing.assert_allclose(cached, full, rtol=1e-5, atol=1e-5)
    ref_ids, ref = steps(tiny_lm("reference", position=position, context=8), "reference",
                         temperature=0)  # fmt: skip
    assert ids == ref_ids
    np.testing.assert_allclose(cached, ref, rtol=1e-4, atol=1e-4)
    sampled = steps(model, gpu, temperature=1.0, top_p=0.9, seed=2)[0]
    assert sampled == steps(model, gpu, temperature=1.0, top_p=0.9, seed=2, cache=False)[0]


def test_cached_chunks_on_webgpu_take_flash_then_the_offset_mask(gpu):
    cfg = B.TransformerConfig(16, 2, 2, kind="decoder", rotary=True)  # auto: flash on webgpu
    stack = B.Transformer(cfg, device=gpu, gen=Generator(1, "init")).eval()
    x = tensor(np.random.default_rng(0).standard_normal((2, 9, 16)).tolist(), device=gpu)
    kv, parts, start = KVCache(), [], 0
    with no_grad():
        for end in (4, 5, 9):  # flash (no past), flash (one query), naive (offset mask)
            parts.append(np.asarray(kv.run(stack, x[:, start:end]).tolist()))
            start = end
        whole = np.asarray(stack(x).tolist())
    np.testing.assert_allclose(np.concatenate(parts, axis=1), whole, rtol=1e-5, atol=1e-5)
