"""A Hugging Face folder is imported tensor by tensor: its weights stay in the user's
files until the store's object is written, one tensor at a time, so the import's host
memory is far below the weights' size (a 1B-parameter folder is gigabytes; a tab's
worker has a 4 GiB address space). What lands in the store is what torch saved, read
back with the ``safetensors`` library."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hfmodels import save, torch, transformers

from scellis.base.errors import ScellisError
from scellis.codecs.convert import header_weights, import_file
from scellis.store.objects import CHUNK, ObjectStore

safetensors_numpy = pytest.importorskip("safetensors.numpy")

# torch's name -> the record's parameter path
SAME = {
    "model.embed_tokens.weight": "tok.weight",
    "lm_head.weight": "head.weight",
    "model.layers.1.mlp.down_proj.weight": "body.blocks.1.mlp.down.weight",
    "model.layers.0.self_attn.k_proj.weight": "body.blocks.0.attn.k.weight",
}


def _model():
    cfg = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=2048, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=1000, max_position_embeddings=64,
        tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(5)
    return transformers.LlamaForCausalLM(cfg)


@pytest.mark.parametrize("shards", [False, True])
def test_an_import_holds_far_less_than_the_weights(tmp_path, shards):
    model = _model()
    kw = {"max_shard_size": "1MB"} if shards else {}
    folder = save(model, tmp_path / "hf", **kw)
    if shards:
        assert len(list(folder.glob("*.safetensors"))) > 1
    weights = sum(p.numel() * 4 for p in model.parameters())
    largest = max(p.numel() * 4 for p in model.parameters())
    tracemalloc.start()
    try:
        res = import_file(folder, store=tmp_path / "store", to=tmp_path / "base.sml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a tensor or two in flight (the one written, the next one read) and the record's
    # text, never the model: the old import held the folder's bytes and the stored
    # object's together, twice the weights
    assert peak < 2 * largest + weights / 8 < weights / 2
    stored = ObjectStore(tmp_path / "store").path(res.weights)
    got = safetensors_numpy.load_file(str(stored))
    state = model.state_dict()
    for theirs, ours in SAME.items():
        np.testing.assert_array_equal(got[ours], state[theirs].numpy())
    assert len(got) == len(res.tensors) == sum(1 for _ in model.parameters())


def test_a_run_reads_the_stored_weights_tensor_by_tensor(tmp_path):
    model = _model()
    folder = save(model, tmp_path / "hf")
    res = import_file(folder, store=tmp_path / "store")
    weights = sum(p.numel() * 4 for p in model.parameters())
    tracemalloc.start()
    try:
        got = header_weights(res.text, tmp_path / "store")  # verified against its hash
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < CHUNK + weights / 8 < weights / 2  # the index and a read buffer

    state = model.state_dict()
    for theirs, ours in SAME.items():
        values = np.frombuffer(got[ours].data, np.float32).reshape(got[ours].shape)
        np.testing.assert_array_equal(values, state[theirs].numpy())
    # a stored object changed on disk is caught before any tensor is read from it
    stored = ObjectStore(tmp_path / "store").path(res.weights)
    stored.chmod(0o644)
    body = bytearray(stored.read_bytes())
    body[-1] ^= 1
    stored.write_bytes(bytes(body))
    with pytest.raises(ScellisError, match="corrupt"):
        header_weights(res.text, tmp_path / "store")
