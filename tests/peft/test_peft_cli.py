"""Fine-tuning from the command line: ``scellis import`` a weights file onto a record,
add a ``finetune:`` section, ``scellis train`` it (the imported weights are the start,
only the adapters train), ``scellis export`` the checkpoint merged into plain weights."""

from __future__ import annotations

import json

import numpy as np
from peftutil import arr

import scellis as sc
from scellis.base.rng import Generator
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import Adam
from scellis.cli.main import main
from scellis.codecs import make, read
from scellis.codecs.pretrained import pretrained_model
from scellis.codecs.safetensors.codec import SafetensorsCodec, SafetensorsConfig
from scellis.codecs.weights import load_into, state_of
from scellis.data.text import CharVocab
from scellis.model import RecordModel
from scellis.sml import parse
from scellis.store.manifest import read_manifest
from scellis.store.objects import ObjectStore
from scellis.store.records import Records

TEXT = "a quick brown fox jumps over the lazy dog; " * 12
VOCAB = len(CharVocab(TEXT))

BASE = f"""\
model: tests/tiny_char@1
inputs:
  ids: {{ shape: [batch, 8], dtype: i32 }}
blocks:
  tok: {{ block_id: nn/embedding, in: ids, num_embeddings: {VOCAB}, embedding_dim: 8 }}
  pos: {{ block_id: nn/learned_position, in: tok, max_len: 8, dim: 8 }}
  body: {{ block_id: nn/transformer, in: pos, d_model: 8, num_heads: 2, num_layers: 1 }}
  head: {{ block_id: nn/lm_head, in: body, d_model: 8, vocab_size: {VOCAB} }}
outputs: [head]
optimizer: {{ block_id: training/optimizer/adam, lr: 0.05 }}
loss: {{ block_id: training/loss/cross_entropy }}
epochs: 1
batch_size: 8
determinism_tier: debug
seed: 4
data: {{ source: text.txt, format: text, context: 8, stride: 8, val_fraction: 0.2 }}
"""
FINETUNE = """\
finetune:
  adapters:
    - { block_id: peft/lora, target_modules: [q, v, fc2], rank: 2, alpha: 4.0 }
"""


def _pretrained_file(tmp_path):
    """Weights a few steps away from the record's init, written as a safetensors file."""
    record = parse(BASE).data
    m = RecordModel(record, gen=Generator(99, "init"))
    opt = Adam(m, lr=0.05)
    ids = sc.tensor([[(i * 7 + j) % VOCAB for j in range(8)] for i in range(4)], dtype="i32")
    for _ in range(2):
        opt.zero_grad()
        CrossEntropyLoss()(m(ids), ids).backward()
        opt.step()
    path = tmp_path / "pre.safetensors"
    make("codec/safetensors").write(path, state_of(m), None)
    return path, {k: arr(v) for k, v in m.state_dict().items()}


def test_import_finetune_train_and_export_merged(tmp_path, capsys):
    (tmp_path / "text.txt").write_text(TEXT)
    (tmp_path / "base.sml").write_text(BASE)
    pre, pre_values = _pretrained_file(tmp_path)
    store = str(tmp_path / "store")
    ft = tmp_path / "ft.sml"
    rc = main(["import", str(pre), "--record", str(tmp_path / "base.sml"), "--to", str(ft),
               "--store", store, "--json"])  # fmt: skip
    assert rc == 0
    capsys.readouterr()
    ft.write_text(ft.read_text() + FINETUNE)
    assert main(["validate", str(ft)]) == 0
    rc = main(["train", str(ft), "--store", store, "--device", "reference", "--max-steps", "3",
               "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    rid = next(e["run"] for e in events if "run" in e)

    # the last checkpoint: the imported weights untouched, the adapters trained
    rec = Records(store)
    try:
        last = rec.checkpoints(rid)[-1]
    finally:
        rec.close()
    assert last["step"] == 3
    objects = ObjectStore(store)
    manifest = read_manifest(objects, last["manifest"])
    blob = objects.get(manifest["weights"])
    saved = SafetensorsCodec(SafetensorsConfig()).loads(blob, "ckpt").tensors
    lora = sorted(k for k in saved if ".lora_" in k)
    assert len(lora) == 2 * 3  # A and B of q, v and fc2
    for k, v in pre_values.items():
        got = np.frombuffer(saved[k].data, dtype=np.float32).reshape(v.shape)
        np.testing.assert_array_equal(got, v.astype(np.float32), err_msg=k)
    b = np.frombuffer(saved["body.blocks.0.attn.q.lora_B"].data, dtype=np.float32)
    assert np.abs(b).max() > 0  # B started at zero: it trained

    # export the checkpoint's weights: merged into plain dense weights, a plain record
    merged = tmp_path / "merged.safetensors"
    rc = main(["export", str(ft), "--to", "safetensors", "--out", str(merged), "--store", store,
               "--weights", f"sha256:{manifest['weights']}"])  # fmt: skip
    assert rc == 0, capsys.readouterr()
    back = read(merged)
    assert "finetune" not in back.record and set(back.tensors) == set(pre_values)
    plain = RecordModel(back.record).eval()
    load_into(plain, back.tensors)
    adapted = pretrained_model(parse(ft.read_text()).data).eval()
    load_into(adapted, saved)
    ids = sc.tensor([[(3 * j + 1) % VOCAB for j in range(8)]], dtype="i32")
    np.testing.assert_allclose(arr(plain(ids)), arr(adapted(ids)), rtol=1e-5, atol=1e-5)
