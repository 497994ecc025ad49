"""ONNX import of Transformers exported by torch.onnx.export, checked with onnxruntime.

The char Transformer is the module ``export --to torch`` writes for a Scellis record
(so its maths is the catalog's by construction), with every parameter redrawn; the
hand-written layer is an independent torch twin of one pre-norm block (masked_fill
and Div by sqrt(D) instead of scaled_dot_product_attention's graph).
"""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

import scellis as sc  # noqa: E402
from scellis.cli.main import main  # noqa: E402
from scellis.codecs import make, read  # noqa: E402
from scellis.codecs.weights import load_into, state_of  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

VOCAB, D, HEADS, CTX = 20, 16, 2, 8


def _record(layers: int, kind: str, final_norm: bool, activation: str, d_ff: int, bias=True):
    body = {"block_id": "nn/transformer", "in": "pos", "d_model": D, "num_heads": HEADS,
            "num_layers": layers, "kind": kind, "final_norm": final_norm,
            "activation": activation, "d_ff": d_ff, "bias": bias}  # fmt: skip
    return {
        "model": "tests/char_tf@1",
        "inputs": {"ids": {"shape": ["batch", CTX], "dtype": "i32"}},
        "blocks": {
            "tok": {
                "block_id": "nn/embedding",
                "in": "ids",
                "num_embeddings": VOCAB,
                "embedding_dim": D,
            },
            "pos": {"block_id": "nn/learned_position", "in": "tok", "max_len": CTX, "dim": D},
            "body": body,
            "head": {"block_id": "nn/lm_head", "in": "body", "d_model": D, "vocab_size": VOCAB},
        },
        "outputs": ["head"],
    }


def _load_module(folder, tag: str):
    spec = importlib.util.spec_from_file_location(f"twin_{tag}", folder / "model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tm = mod.Model()
    tm.load_state_dict(torch.load(folder / "state_dict.pt", weights_only=True), strict=True)
    return tm.eval()


def _torch_twin(tmp_path, record: dict, seed: int):
    """Scellis' model with random parameters, written as plain torch and loaded back."""
    m = RecordModel(record, device="reference").eval()
    rng = np.random.default_rng(seed)
    for path, p in list(m.named_parameters()):  # norm scales and biases too, never 1 / 0
        v = rng.standard_normal(p.shape).astype(np.float32) * 0.4
        m.set_parameter(path, sc.tensor(v, device="reference"))
    out = tmp_path / "torch_module"
    make("codec/torch_module").write(out, state_of(m), record)
    return _load_module(out, str(seed))


def _export(model, x, path, free_length: bool = False) -> None:
    axes = {0: "batch", 1: "seq"} if free_length else {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), str(path), dynamo=False, input_names=["x"], output_names=["y"],
            dynamic_axes={"x": axes}, opset_version=17,
        )  # fmt: skip


def _ort(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _ours(imported, x, device: str):
    m = RecordModel(imported.record, device=device).eval()
    load_into(m, imported.tensors)
    y = m(sc.tensor(x.astype(np.int32), device=device, dtype="i32"))
    return np.asarray(y.tolist(), dtype=np.float32)


def _ids(rng, batch: int, length: int = CTX):
    return rng.integers(0, VOCAB, (batch, length)).astype(np.int64)


CASES = {  # layers, kind, final_norm, activation, d_ff, bias
    "decoder2": (2, "decoder", True, "gelu", 4 * D, True),
    "encoder1_relu": (1, "encoder", False, "relu", 24, True),
    "decoder2_unbiased": (2, "decoder", True, "gelu", 4 * D, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_char_transformer_matches_onnxruntime(tmp_path, case):
    layers, kind, final_norm, act, d_ff, bias = CASES[case]
    tm = _torch_twin(tmp_path, _record(*CASES[case]), seed=len(case))
    path = tmp_path / f"{case}.onnx"
    rng = np.random.default_rng(5)
    _export(tm, torch.from_numpy(_ids(rng, 2)), path)
    got = read(path)
    blocks = got.record["blocks"]
    kinds = ["nn/embedding", "nn/learned_position", "nn/transformer", "nn/linear"]
    assert [b["block_id"] for b in blocks.values()] == kinds
    body = blocks["body"]
    assert body["num_layers"] == layers and body.get("final_norm", True) == final_norm
    assert body.get("bias", True) == bias
    assert (body["kind"], body["activation"], body["d_ff"], body["num_heads"]) == (
        kind, act, d_ff, HEADS,
    )  # fmt: skip
    # every weight lands under the torch state dict's own name, with its values
    sd = tm.state_dict()
    assert set(got.tensors) == set(sd)
    for k, t in got.tensors.items():
        np.testing.assert_array_equal(np.frombuffer(t.data, "<f4").reshape(t.shape), sd[k].numpy())
    for batch in (2, 5):  # the batch axis stays free
        x = _ids(rng, batch)
        np.testing.assert_allclose(_ours(got, x, "reference"), _ort(path, x), rtol=1e-4, atol=2e-5)


class _Layer(torch.nn.Module):
    """One pre-norm causal layer written by hand: masked_fill, Div by sqrt(D), SiLU."""

    def __init__(self, offset: int = 1, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.attn = torch.nn.Module()
        for n in "qkvo":
            setattr(self.attn, n, torch.nn.Linear(D, D))
        self.mlp = torch.nn.Module()
        self.mlp.fc1, self.mlp.fc2 = torch.nn.Linear(D, 3 * D), torch.nn.Linear(3 * D, D)
        self.register_buffer("drop", torch.triu(torch.ones(CTX, CTX, dtype=torch.bool), offset))

    def forward(self, x):
        B, T, E = x.shape
        h = self.ln1(x)
        q, k, v = (getattr(self.attn, n)(h).view(B, T, HEADS, -1).transpose(1, 2) for n in "qkv")
        s = q @ k.transpose(-2, -1) / (math.sqrt(E // HEADS) * self.temperature)
        s = s.masked_fill(self.drop[:T, :T], float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, E)
        x = x + self.attn.o(y)
        f = self.mlp.fc2(torch.nn.functional.silu(self.mlp.fc1(self.ln2(x))))
        return x + f


class _HandWritten(torch.nn.Module):
    def __init__(self, offset: int = 1, temperature: float = 1.0):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D)
        self.body = _Layer(offset, temperature)
        self.out = torch.nn.Linear(D, VOCAB)

    def forward(self, ids):
        return self.out(self.body(self.tok(ids)))


def test_hand_written_causal_layer_matches_onnxruntime(tmp_path):
    torch.manual_seed(3)
    model = _HandWritten().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.4)
    path = tmp_path / "hand.onnx"
    rng = np.random.default_rng(9)
    _export(model, torch.from_numpy(_ids(rng, 3)), path)
    got = read(path)
    body = got.record["blocks"]["body"]
    assert body["block_id"] == "nn/transformer_block"
    assert (body["kind"], body["activation"], body["d_ff"]) == ("decoder", "silu", 3 * D)
    assert set(got.tensors) == set(model.state_dict()) - {"body.drop"}
    x = _ids(rng, 4)
    np.testing.assert_allclose(_ours(got, x, "reference"), _ort(path, x), rtol=1e-4, atol=2e-5)


def _op_level(got) -> list[str]:
    return [b["block_id"] for b in got.record["blocks"].values()]


def _ours_f32(got, x: np.ndarray) -> np.ndarray:
    m = RecordModel(got.record, device="reference").eval()
    load_into(m, got.tensors)
    return np.asarray(m(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)


@pytest.mark.parametrize("free_length", [False, True])
def test_a_mask_other_than_causal_keeps_the_graphs_nodes(tmp_path, free_length):
    path = tmp_path / "band.onnx"  # each position also sees the next one: no catalog block
    rng = np.random.default_rng(1)
    _export(_HandWritten(offset=2).eval(), torch.from_numpy(_ids(rng, 2)), path, free_length)
    got = read(path)
    kinds = _op_level(got)
    assert "onnx/op" in kinds and "nn/transformer_block" not in kinds
    assert {"nn/embedding", "nn/layer_norm", "nn/linear"} <= set(kinds)
    x = _ids(rng, 3)
    np.testing.assert_allclose(_ours(got, x, "reference"), _ort(path, x), rtol=1e-4, atol=2e-5)


def test_a_scale_other_than_one_over_sqrt_d_keeps_the_graphs_nodes(tmp_path):
    path = tmp_path / "temp.onnx"  # the catalog's attention always scales by 1/sqrt(D)
    rng = np.random.default_rng(1)
    _export(_HandWritten(temperature=2.0).eval(), torch.from_numpy(_ids(rng, 2)), path)
    got = read(path)
    assert "onnx/op" in _op_level(got)
    x = _ids(rng, 2)
    np.testing.assert_allclose(_ours(got, x, "reference"), _ort(path, x), rtol=1e-4, atol=2e-5)


class _LoneResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return x + self.lin(x)


def test_residual_outside_a_transformer_layer_is_an_op_level_add(tmp_path):
    path = tmp_path / "res.onnx"
    _export(_LoneResidual().eval(), torch.randn(2, 3, 4), path)
    got = read(path)
    assert _op_level(got) == ["nn/linear", "onnx/op"]
    x = np.random.default_rng(2).standard_normal((5, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(_ours_f32(got, x), _ort(path, x), rtol=1e-5, atol=1e-6)


@pytest.mark.webgpu
def test_char_transformer_matches_onnxruntime_on_webgpu(tmp_path):
    from scellis.base.errors import DeviceError
    from scellis.devices import get_device

    try:
        get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")
    tm = _torch_twin(tmp_path, _record(*CASES["decoder2"]), seed=11)
    path = tmp_path / "wg.onnx"
    rng = np.random.default_rng(2)
    _export(tm, torch.from_numpy(_ids(rng, 2)), path)
    x = _ids(rng, 2)
    np.testing.assert_allclose(_ours(read(path), x, "webgpu"), _ort(path, x), rtol=1e-3, atol=1e-4)


def test_scellis_import_then_export_to_torch_round_trips(tmp_path, capsys):
    """ONNX -> `scellis import` -> record + store -> `scellis export --to torch` -> same logits."""
    tm = _torch_twin(tmp_path, _record(*CASES["decoder2"]), seed=21)
    onnx_path, rec, store = tmp_path / "lm.onnx", tmp_path / "lm.sml", tmp_path / "store"
    rng = np.random.default_rng(4)
    _export(tm, torch.from_numpy(_ids(rng, 2)), onnx_path)
    assert main(["import", str(onnx_path), "--to", str(rec), "--store", str(store)]) == 0
    assert f"codec/onnx, {len(tm.state_dict())} tensors" in capsys.readouterr().out
    assert main(["validate", str(rec)]) == 0
    out = tmp_path / "back"
    assert (
        main(["export", str(rec), "--to", "torch", "--out", str(out), "--store", str(store)]) == 0
    )
    back = _load_module(out, "back")
    x = torch.from_numpy(_ids(rng, 3))
    with torch.no_grad():
        np.testing.assert_allclose(back(x).numpy(), tm(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("which", ["char", "hand"])
def test_a_free_sequence_length_imports_and_runs_shorter_contexts(tmp_path, which):
    """Exported with a symbolic T: the causal mask is built from Shape, checked symbolically."""
    if which == "char":
        model = _torch_twin(tmp_path, _record(*CASES["decoder2"]), seed=31)
    else:
        torch.manual_seed(4)
        model = _HandWritten().eval()
    path = tmp_path / f"{which}_free.onnx"
    rng = np.random.default_rng(8)
    _export(model, torch.from_numpy(_ids(rng, 2)), path, free_length=True)
    got = read(path)
    assert got.record["inputs"]["x"]["shape"] == ["batch", "seq"]
    for length in (CTX, 5):
        x = _ids(rng, 3, length)
        np.testing.assert_allclose(_ours(got, x, "reference"), _ort(path, x), rtol=1e-4, atol=2e-5)
