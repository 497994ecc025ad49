"""Imported Hugging Face models on WebGPU (lavapipe in CI): GPT-2, Llama and BERT outputs
equal ``transformers``' (on the attention path ``auto`` picks on webgpu: flash for the
causal decoders, naive for BERT's short unmasked sequences)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from hfmodels import bert, gpt2, ids, llama, outputs
from test_hf_import import TOL, ours

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.codecs.convert import import_file  # noqa: E402

pytestmark = pytest.mark.webgpu


@pytest.mark.parametrize("make", [gpt2, llama, bert], ids=["gpt2", "llama", "bert"])
def test_imported_logits_on_webgpu(tmp_path, gpu, make):
    model = make()
    model.save_pretrained(tmp_path / "m")
    res = import_file(tmp_path / "m", store=tmp_path / "s")
    x = ids()
    got = ours(res.record, res.tensors, x, device=gpu)
    np.testing.assert_allclose(got, outputs(model, x), **TOL)
