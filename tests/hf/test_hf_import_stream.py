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


def test_a_file_cut_short_after_its_header_was_read_is_refused(tmp_path):
    """A weights file that shrinks between the header's reading and a tensor's (another
    process writing it, a hostile swap) gives one clear error, never a short tensor."""
    from scellis.codecs.safetensors.codec import file_tensors

    rng = np.random.default_rng(9)
    path = tmp_path / "w.safetensors"
    arrays = {n: rng.standard_normal((4, 6)).astype(np.float32) for n in ("a", "b")}
    safetensors_numpy.save_file(arrays, str(path))
    tensors, _ = file_tensors(path)
    assert np.frombuffer(tensors["a"].data, np.float32).tolist() == arrays["a"].ravel().tolist()
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 8)
    last = max(tensors, key=lambda k: tensors[k]._span[1])
    with pytest.raises(ScellisError, match="cut short"):
        _ = tensors[last].data
    with pytest.raises(ScellisError, match="bytes after the last tensor|past the"):
        file_tensors(path)  # and read afresh, the header no longer tiles the file
