"""ONNX graphs as real exporters write them (TorchScript and dynamo), imported op by op.

nn.TransformerEncoder, a bare nn.MultiheadAttention and a tiny GPT-2 from transformers
carry the exporters' own shape arithmetic (Mod, Shape/Gather/Concat, Split, Pow, IsNaN,
Where, ...). Each import is checked against onnxruntime on the exported file, and its
gradients against torch's on the module that was exported.
"""

from __future__ import annotations

import inspect
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")  # the dynamo exporter writes through it
transformers = pytest.importorskip("transformers")

from torch.export import Dim  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.cli.main import main  # noqa: E402
from scellis.codecs import read  # noqa: E402
from scellis.codecs.weights import load_into  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

VOCAB = 50


class _Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class _Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class _GPT2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        cfg = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB,
                                      n_positions=16)  # fmt: skip
        self.m = transformers.GPT2LMHeadModel(cfg)

    def forward(self, ids):
        # an explicit all-ones mask: transformers' packed-sequence probe uses aten::diff,
        # which the TorchScript exporter cannot write
        return self.m(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits


MODELS = {"encoder": (_Encoder, (2, 5, 16)), "mha": (_Attention, (2, 5, 16)),
          "gpt2": (_GPT2, (2, 6))}  # fmt: skip


def _model(kind: str, seed: int):
    """The module with every parameter redrawn (no two alike, no norm at exactly 1)."""
    torch.manual_seed(seed)
    cls, shape = MODELS[kind]
    m = cls().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return m, shape


def _input(shape, rng):
    if len(shape) == 2:  # token ids
        return torch.from_numpy(rng.integers(0, VOCAB, shape).astype(np.int64))
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def _export(model, x, path, dynamo: bool, free: bool = False) -> None:
    kw = {}
    if free and dynamo:
        arg = next(iter(inspect.signature(model.forward).parameters))
        dims = {0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=12)}
        kw = {"dynamic_shapes": {arg: dims}}
    elif free:
        kw = {"dynamic_axes": {"x": {0: "batch", 1: "seq"}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=dynamo, input_names=["x"],
                          output_names=["y"], verbose=False, **kw)  # fmt: skip


def _ort(path, x) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x.numpy()})[0]


def _scellis_input(x, device: str, grad: bool = False):
    if x.dtype == torch.int64:
        return sc.tensor(x.numpy().astype(np.int32), device=device, dtype="i32")
    return sc.tensor(x.numpy(), device=device, requires_grad=grad)


def _ours(got, device: str):
    m = RecordModel(got.record, device=device)
    load_into(m, got.tensors)
    return m


def _ops(got) -> list[str]:
    return [b.get("op", b["block_id"]) for b in got.record["blocks"].values()]


LAYERS = {"encoder": 2, "mha": 1, "gpt2": 2}
CATALOG = {"encoder": {"nn/linear", "nn/layer_norm", "nn/activation"}, "mha": {"nn/linear"},
           "gpt2": {"nn/embedding", "nn/linear", "nn/layer_norm", "nn/activation"}}  # fmt: skip


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("kind", list(MODELS))
def test_exported_graph_matches_onnxruntime(tmp_path, kind, dynamo):
    model, shape = _model(kind, seed=len(kind))
    rng = np.random.default_rng(3)
    path = tmp_path / f"{kind}.onnx"
    _export(model, _input(shape, rng), path, dynamo)
    got = read(path)
    ops = _ops(got)
    assert CATALOG[kind] <= set(ops) and "onnx/op" in {b["block_id"] for b in
                                                     got.record["blocks"].values()}  # fmt: skip
    # every dim is static, so the exporters' shape arithmetic folded at import (a Shape
    # left reads the length a reshape follows, see test_onnx_fixed_batch)
    assert not {"Concat", "Cast", "Sqrt", "Mod"} & set(ops)
    # q kᵀ, scale, mask, Softmax, v: one attention block per layer, none left as nodes
    assert ops.count("nn/scaled_dot_product_attention") == LAYERS[kind]
    assert "Softmax" not in ops
    x = _input(shape, rng)
    y = _ours(got, "reference").eval()(_scellis_input(x, "reference"))
    np.testing.assert_allclose(np.asarray(y.tolist()), _ort(path, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_free_batch_and_length_run_shape_arithmetic_on_the_host(tmp_path, dynamo):
    model, shape = _model("gpt2", seed=4)
    rng = np.random.default_rng(4)
    path = tmp_path / "free.onnx"
    _export(model, _input(shape, rng), path, dynamo=dynamo, free=True)
    got = read(path)
    assert got.record["inputs"]["x"]["shape"] == ["batch", "seq"]
    assert "Shape" in _ops(got)  # kept: it reads the batch and length of each call
    m = _ours(got, "reference").eval()
    for b, t in ((3, 4), (1, 7)):
        x = _input((b, t), rng)
        y = np.asarray(m(_scellis_input(x, "reference")).tolist())
        np.testing.assert_allclose(y, _ort(path, x), rtol=1e-4, atol=1e-5)


def _torch_twin_of(value: np.ndarray, named: dict):
    """The torch parameter an imported one was copied from: the same, transposed, or its
    first rows (dynamo folds a position table's lookup of 0..T-1 into those rows)."""
    n = value.shape[-2] if value.ndim >= 2 else 0
    for name, p in named.items():
        v = p.detach().numpy()
        for f in (lambda a: a, lambda a: a.T, lambda a: a[:n].reshape(-1, *a.shape[1:])):
            got = f(v)
            if got.size == value.size and np.array_equal(got.reshape(value.shape), value):
                return name, f
    raise AssertionError(f"no torch parameter holds an imported tensor of shape {value.shape}")


@pytest.mark.parametrize(
    "kind,dynamo", [("mha", False), ("mha", True), ("encoder", False), ("gpt2", True)]
)
def test_gradients_match_torch(tmp_path, kind, dynamo):
    model, shape = _model(kind, seed=7)
    rng = np.random.default_rng(7)
    path = tmp_path / f"{kind}.onnx"
    _export(model, _input(shape, rng), path, dynamo)
    x = _input(shape, rng)
    xt = x.clone().requires_grad_(x.dtype != torch.int64)
    y = model(xt)
    r = torch.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32))
    (y * r).sum().backward()
    ours = _ours(read(path), "reference")
    xs = _scellis_input(x, "reference", grad=x.dtype != torch.int64)
    (ours(xs) * sc.tensor(r.numpy(), device="reference")).sum().backward()
    if xt.requires_grad:
        np.testing.assert_allclose(np.asarray(xs.grad.tolist()), xt.grad.numpy(), atol=2e-5)
    named = dict(model.named_parameters())
    twins: dict = {}  # one imported parameter per torch one (a tied table is one)
    for _, p in ours.named_parameters():
        name, f = _torch_twin_of(np.asarray(p.tolist(), dtype=np.float32), named)
        assert name not in twins, f"{name} imported twice"
        twins[name] = (np.asarray(p.grad.tolist(), dtype=np.float32), f)
    assert set(twins) == set(named)
    for name, (g, f) in twins.items():
        want = f(named[name].grad.numpy()).reshape(g.shape)
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=3e-5, err_msg=name)


def test_imported_gpt2_trains(tmp_path):
    model, shape = _model("gpt2", seed=9)
    rng = np.random.default_rng(9)
    path = tmp_path / "gpt2.onnx"
    _export(model, _input(shape, rng), path, dynamo=True)
    ours = _ours(read(path), "reference").train()
    x = _scellis_input(_input(shape, rng), "reference")
    target = sc.tensor(rng.integers(0, VOCAB, shape[0] * shape[1]).astype(np.int32),
                       device="reference", dtype="i32")  # fmt: skip
    opt = sc.optim.Adam(ours.parameters(), lr=1e-2)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = sc.nn.functional.cross_entropy(ours(x).reshape(-1, VOCAB), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses


def test_scellis_train_runs_an_imported_gpt2(tmp_path, capsys):
    model, shape = _model("gpt2", seed=5)
    rng = np.random.default_rng(5)
    _export(model, _input(shape, rng), tmp_path / "g.onnx", dynamo=False, free=True)
    rec, store = tmp_path / "g.sml", str(tmp_path / "store")
    assert main(["import", str(tmp_path / "g.onnx"), "--to", str(rec), "--store", store]) == 0
    (tmp_path / "text.txt").write_text("".join(rng.choice(list("abcdefgh "), 600)))
    rec.write_text(rec.read_text() + TRAINING)
    capsys.readouterr()
    argv = ["train", str(rec), "--store", store, "--device", "reference", "--max-steps", "6"]
    assert main([*argv, "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    losses = [e["loss"] for e in events if e.get("kind") == "log"]
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert any(e.get("kind") == "eval" and e["val_loss"] > 0 for e in events)


TRAINING = """
optimizer: { block_id: training/optimizer/adam, lr: 1.0e-2 }
loss: { block_id: training/loss/cross_entropy }
epochs: 1
batch_size: 4
data:
  source: text.txt
  format: text
  tokenizer: char
  context: 8
  stride: 8
  val_fraction: 0.1
"""


@pytest.mark.webgpu
@pytest.mark.parametrize("kind", ["mha", "gpt2"])
def test_attention_graph_matches_onnxruntime_on_webgpu(tmp_path, kind):
    from scellis.base.errors import DeviceError
    from scellis.devices import get_device

    try:
        get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")
    model, shape = _model(kind, seed=2)
    rng = np.random.default_rng(2)
    path = tmp_path / f"{kind}.onnx"
    shape = (1, 3, 16) if kind == "mha" else (1, 5)
    _export(model, _input(shape, rng), path, dynamo=True)
    x = _input(shape, rng)
    # the attention block takes the flash kernel on WebGPU (causal for GPT-2)
    y = _ours(read(path), "webgpu").eval()(_scellis_input(x, "webgpu"))
    np.testing.assert_allclose(np.asarray(y.tolist()), _ort(path, x), rtol=1e-4, atol=1e-5)
