"""``export --to onnx`` of Transformer records: onnxruntime reproduces Scellis' forward on
random tokens (any batch), and the file imports back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import scellis as sc  # noqa: E402
from scellis.cli.main import main  # noqa: E402
from scellis.codecs import make, read  # noqa: E402
from scellis.codecs.weights import load_into, state_of  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VOCAB, D, CTX = 11, 8, 6

SMALL = f"""
model: test/tf@1
inputs:
  ids: {{shape: [batch, {CTX}], dtype: i32}}
blocks:
  tok: {{block_id: nn/embedding, in: ids, num_embeddings: {VOCAB}, embedding_dim: {D}}}
  pos: {{block_id: nn/learned_position, in: tok, max_len: {CTX}, dim: {D}}}
  BODY
  head: {{block_id: nn/lm_head, in: body, d_model: {D}, vocab_size: {VOCAB}HEAD}}
outputs: [head]
determinism_tier: debug
seed: 0
"""

BODIES = {
    "decoder_gelu": "body: {block_id: nn/transformer, in: pos, d_model: 8, num_heads: 2, "
    "num_layers: 2}",
    "encoder_relu_post_norm_unbiased": "body: {block_id: nn/transformer, in: pos, d_model: 8, "
    "num_heads: 2, num_layers: 1, kind: encoder, activation: relu, norm_first: false, "
    "bias: false, final_norm: false, d_ff: 12}",
    "one_block_gelu_tanh": "body: {block_id: nn/transformer_block, in: pos, d_model: 8, "
    "num_heads: 4, kind: decoder, activation: gelu_tanh}",
    "attention_alone": "body: {block_id: nn/attention, in: pos, embed_dim: 8, num_heads: 2, "
    "causal: true}",
}


def _record(case: str) -> dict:
    tied = ", tie_to: tok" if case == "attention_alone" else ""
    text = SMALL.replace("BODY", BODIES[case]).replace("HEAD", tied)
    return sc.sml.parse(text).data


def _randomised(record: dict, seed: int) -> RecordModel:
    m = RecordModel(record, device="reference").eval()
    rng = np.random.default_rng(seed)
    for path, p in list(m.named_parameters()):  # norm scales and biases too, never 1 / 0
        m.set_parameter(path, sc.tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.5))
    return m


def _forward(m, ids: np.ndarray) -> np.ndarray:
    y = m(sc.tensor(ids.astype(np.int32), device="reference", dtype="i32"))
    return np.asarray(y.tolist(), dtype=np.float32)


def _check(record: dict, seed: int, path: Path, vocab: int, ctx: int) -> None:
    m = _randomised(record, seed)
    make("codec/onnx_export").write(path, state_of(m), record)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    back = read(path)
    again = RecordModel(back.record, device="reference").eval()
    load_into(again, back.tensors)
    rng = np.random.default_rng(seed)
    for batch in (3, 1):
        ids = rng.integers(0, vocab, (batch, ctx))
        want = _forward(m, ids)
        got = sess.run(None, {"ids": ids.astype(np.int32)})[0]
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(_forward(again, ids), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", list(BODIES))
def test_transformer_records_export_to_what_onnxruntime_reproduces(tmp_path, case):
    _check(_record(case), len(case), tmp_path / f"{case}.onnx", VOCAB, CTX)


def test_char_transformer_example_exports_and_imports_back(tmp_path):
    record = sc.sml.parse((EXAMPLES / "char_transformer.sml").read_text()).data
    _check(record, 1, tmp_path / "char.onnx", 88, 32)


def test_cli_exports_the_char_transformer(tmp_path, capsys):
    out = tmp_path / "lm.onnx"
    rec = tmp_path / "lm.sml"
    rec.write_text((EXAMPLES / "char_transformer.sml").read_text())
    assert main(["export", str(rec), "--to", "onnx", "--out", str(out)]) == 0
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    ids = np.random.default_rng(0).integers(0, 88, (2, 32)).astype(np.int32)
    m = RecordModel(sc.sml.parse(rec.read_text()).data, device="reference").eval()
    np.testing.assert_allclose(sess.run(None, {"ids": ids})[0], _forward(m, ids),
                               rtol=2e-5, atol=2e-5)  # fmt: skip
