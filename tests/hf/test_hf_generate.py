"""Greedy generation from imported Hugging Face models equals ``transformers``'
``generate(do_sample=False)``, with the key/value cache (grouped-query keys and values,
RoPE at each decoding offset, llama3 scaling, a sliding window shorter than the text)
as without it."""

from __future__ import annotations

import asyncio
import os
import tempfile

import numpy as np
import pytest
from hfmodels import gpt2, ids, llama, mistral, qwen2
from test_hf_import import LLAMA3_ROPE

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.base.errors import DeviceError  # noqa: E402
from scellis.codecs.convert import import_file  # noqa: E402
from scellis.codecs.pretrained import pretrained_model  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.run.generate import stream  # noqa: E402

torch = pytest.importorskip("torch")

MODELS = {"gpt2": gpt2, "llama3_gqa": lambda: llama(scaling=LLAMA3_ROPE), "qwen2": qwen2,
          "mistral_window_head_dim": lambda: mistral(window=6, head_dim=12)}  # fmt: skip
NEW = 10


def _theirs(model, prompt):
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=NEW, do_sample=False,
                             min_new_tokens=NEW, pad_token_id=0)  # fmt: skip
    return out[0, len(prompt) :].tolist()


def _ours(model, prompt, cache, device="reference"):
    async def go():
        got, logits = [], []
        async for s in stream(model, prompt, max_new=NEW, temperature=0.0, context=24,
                              cache=cache, keep_logits=True, device=device):  # fmt: skip
            got.append(s.ids[0])
            logits.append(s.logits[0])
        return got, np.asarray(logits)

    return asyncio.run(go())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_greedy_generation_equals_transformers(tmp_path, name):
    hf = MODELS[name]()
    hf.generation_config.eos_token_id = None  # never stop early
    hf.save_pretrained(tmp_path / name)
    res = import_file(tmp_path / name, store=tmp_path / "s")
    model = pretrained_model(res.record, res.tensors, device="reference")
    prompt = ids((1, 5), seed=7)[0].tolist()
    cached, lc = _ours(model, prompt, cache=True)
    whole, lw = _ours(model, prompt, cache=False)
    np.testing.assert_allclose(lc, lw, rtol=1e-5, atol=3e-5)
    assert cached == whole == _theirs(hf, prompt)


@pytest.mark.webgpu
def test_cached_generation_on_webgpu(tmp_path):
    try:
        gpu = get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")
    hf = llama(scaling=LLAMA3_ROPE)
    hf.generation_config.eos_token_id = None
    hf.save_pretrained(tmp_path / "m")
    res = import_file(tmp_path / "m", store=tmp_path / "s")
    prompt = ids((1, 5), seed=8)[0].tolist()
    model = pretrained_model(res.record, res.tensors, device=gpu)
    got, _ = _ours(model, prompt, cache=True, device=gpu)
    assert got == _theirs(hf, prompt)
