"""``export --to onnx``: onnx.checker accepts the file, onnxruntime reproduces Scellis."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import scellis as sc  # noqa: E402
from scellis.base.errors import ScellisError  # noqa: E402
from scellis.cli.main import main  # noqa: E402
from scellis.codecs import make, read  # noqa: E402
from scellis.codecs.weights import load_into, state_of  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MIXED = """
model: test/mixed@1
inputs:
  x: {shape: [batch, 5, 3], dtype: f32}
blocks:
  fc: {block_id: nn/linear, in: x, in_features: 3, out_features: 6}
  act: {block_id: nn/activation, in: fc, function: gelu}
  ln: {block_id: nn/layer_norm, in: act, normalized_shape: 6, eps: 1.0e-4, bias: false}
  gru: {block_id: nn/gru, in: ln, input_size: 6, hidden_size: 4, num_layers: 2}
  swish: {block_id: nn/activation, in: gru, function: silu}
  drop: {block_id: nn/dropout, in: swish, p: 0.3}
  cls: {block_id: nn/classification_head, in: drop, in_features: 4, n_classes: 3, pool: mean}
  prob: {block_id: nn/activation, in: cls, function: sigmoid}
outputs: [prob]
determinism_tier: debug
seed: 0
"""


def _randomised(record: dict, seed: int) -> RecordModel:
    m = RecordModel(record, device="reference").eval()
    rng = np.random.default_rng(seed)
    for path, p in list(m.named_parameters()):
        m.set_parameter(path, sc.tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.5))
    return m


RECORDS = {
    "forecaster": lambda: sc.sml.parse((EXAMPLES / "lstm_forecaster.sml").read_text()).data,
    "mixed": lambda: sc.sml.parse(MIXED).data,
}


@pytest.mark.parametrize("name", list(RECORDS))
def test_onnxruntime_reproduces_scellis(tmp_path, name):
    record = RECORDS[name]()
    m = _randomised(record, len(name))
    path = tmp_path / f"{name}.onnx"
    make("codec/onnx_export").write(path, state_of(m), record)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    shape = [4 if d == "batch" else d for d in next(iter(record["inputs"].values()))["shape"]]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {next(iter(record["inputs"])): x})[0]
    want = np.asarray(m(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    # and it imports back as the same blocks with the same weights
    # it imports back: the same weights under the same names, the same outputs
    back = read(path)
    assert {k: t.data for k, t in back.tensors.items()} == {
        k: t.data for k, t in state_of(m).items()
    }
    again = RecordModel(back.record, device="reference").eval()
    load_into(again, back.tensors)
    y = np.asarray(again(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    np.testing.assert_array_equal(y, want)


def test_cli_export_onnx_and_refusals(tmp_path, capsys):
    rec = tmp_path / "f.sml"
    rec.write_text((EXAMPLES / "lstm_forecaster.sml").read_text())
    out = tmp_path / "f.onnx"
    assert main(["export", str(rec), "--to", "onnx", "--out", str(out)]) == 0
    onnx.checker.check_model(onnx.load(str(out)))
    capsys.readouterr()
    lm = tmp_path / "lm.sml"
    text = (EXAMPLES / "char_transformer.sml").read_text()
    lm.write_text(text.replace("kind: decoder ", "rotary: true\n    kind: decoder "))
    assert main(["export", str(lm), "--to", "onnx", "--out", str(tmp_path / "lm.onnx")]) == 2
    assert "block 'body': a transformer with rotary has no ONNX export" in capsys.readouterr().err
    with pytest.raises(ScellisError, match="needs the model's record"):
        make("codec/onnx_export").write(tmp_path / "x.onnx", {}, None)


def test_bidirectional_and_convolution_blocks_are_refused_by_name(tmp_path):
    bi = sc.sml.parse(MIXED.replace("num_layers: 2}", "num_layers: 2, bidirectional: true}")).data
    bi["blocks"]["cls"]["in_features"] = 8
    with pytest.raises(ScellisError, match="block 'gru': a bidirectional GRU has no ONNX export"):
        make("codec/onnx_export").write(tmp_path / "bi.onnx", state_of(_randomised(bi, 1)), bi)
    conv = sc.sml.parse(MIXED.replace(
        "fc: {block_id: nn/linear, in: x, in_features: 3, out_features: 6}",
        "fc: {block_id: nn/conv1d, in: x, in_channels: 3, out_channels: 6, kernel_size: 1}",
    )).data  # fmt: skip
    with pytest.raises(ScellisError, match="block 'fc': nn/conv1d has no ONNX export"):
        make("codec/onnx_export").write(tmp_path / "c.onnx", state_of(_randomised(conv, 2)), conv)
