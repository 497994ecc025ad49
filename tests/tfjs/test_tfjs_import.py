"""``scellis import model.json`` of TF.js Layers models: records whose outputs equal
TF.js' own predictions (float32 and quantised weights, several shards), a Keras GRU with
``reset_after`` equal to torch's GRU, an imported model that trains, and refusals that
name the layer or file at fault."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tfjsmodels import CASES, QUANTISED, io_of

import scellis as sc
from scellis import optim
from scellis.cli.main import main
from scellis.codecs import find, read
from scellis.codecs.convert import header_weights, import_file
from scellis.codecs.pretrained import pretrained_model
from scellis.sml import parse

TOL = {"rtol": 1e-5, "atol": 1e-6}  # measured: at most 6e-8 apart on outputs below ~1


def ours(record, tensors, x, ids, device="reference"):
    m = pretrained_model(record, tensors, device=device).eval()
    return np.asarray(m(sc.tensor(x.tolist(), dtype="i32" if ids else "f32", device=device))
                      .tolist(), dtype=np.float32)  # fmt: skip


@pytest.mark.parametrize("case", CASES + QUANTISED)
def test_imported_outputs_equal_tfjs(tmp_path, tfjs_models, case):
    folder = tfjs_models / case
    assert find(folder / "model.json") == "codec/tfjs"
    res = import_file(folder / "model.json", store=tmp_path / "s", to=tmp_path / "m.sml")
    x, want, ids = io_of(folder)
    got = ours(res.record, res.tensors, x, ids)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, **TOL)
    assert find(folder) == "codec/tfjs"  # the folder model.save wrote reads the same
    text = (tmp_path / "m.sml").read_text()  # the record file alone gives the same model
    again = ours(parse(text).data, header_weights(text, tmp_path / "s"), x, ids)
    np.testing.assert_array_equal(again, got)


def test_open_length_and_python_converter_weight_names(tmp_path, tfjs_models):
    """batch_input_shape [null, null, F] runs any length; weights named as Python's
    converter writes them (scoped, with ":0") find their layers."""
    folder, doc = _copy(tfjs_models, tmp_path, "gru")
    doc["modelTopology"]["config"]["layers"][0]["config"]["batch_input_shape"] = [None, None, 4]
    for w in doc["weightsManifest"][0]["weights"]:
        w["name"] = f"model/{w['name']}:0"
    (folder / "model.json").write_text(json.dumps(doc))
    res = import_file(folder / "model.json", store=tmp_path / "s")
    assert res.record["inputs"]["series"]["shape"] == ["batch", "time", 4]
    x, want, _ = io_of(folder)
    np.testing.assert_allclose(ours(res.record, res.tensors, x, False), want, **TOL)
    longer = np.random.default_rng(2).standard_normal((2, 11, 4)).astype(np.float32)
    assert ours(res.record, res.tensors, longer, False).shape == (2, 2)


def test_keras_layouts_become_the_catalogs(tfjs_models, tmp_path):
    rec = import_file(tfjs_models / "embed_lstm" / "model.json", store=tmp_path / "s").record
    lstm = [s for s in rec["blocks"].values() if s["block_id"] == "nn/lstm"]
    assert [s.get("recurrent_activation") for s in lstm] == ["hard_sigmoid", None]
    assert [s.get("output") for s in lstm] == [None, "last"]
    assert rec["inputs"]["input"] == {"shape": ["batch", 7], "dtype": "i32"}
    gru = import_file(tfjs_models / "gru", store=tmp_path / "s").record  # the folder
    assert all(s.get("reset_after") is False for s in gru["blocks"].values()
               if s["block_id"] == "nn/gru")  # fmt: skip


def _keras_gru_json(folder, gru, T, F):
    """A Keras GRU(reset_after=True, sigmoid gates) model.json from a torch GRU's weights:
    gates z, r, h; kernels [in, 3u]; bias [2, 3u] (input row, recurrent row)."""
    H = gru.hidden_size
    keras = lambda t: np.concatenate([t[H : 2 * H], t[:H], t[2 * H :]])  # r, z, n -> z, r, h
    sd = {k: v.detach().numpy() for k, v in gru.state_dict().items()}
    weights = [
        ("gru/kernel", keras(sd["weight_ih_l0"]).T),
        ("gru/recurrent_kernel", keras(sd["weight_hh_l0"]).T),
        ("gru/bias", np.stack([keras(sd["bias_ih_l0"]), keras(sd["bias_hh_l0"])])),
    ]
    (folder / "w.bin").write_bytes(b"".join(np.ascontiguousarray(w, "<f4").tobytes()
                                            for _, w in weights))  # fmt: skip
    layer = {"class_name": "GRU", "config": {
        "name": "gru", "units": H, "activation": "tanh", "recurrent_activation": "sigmoid",
        "use_bias": True, "reset_after": True, "return_sequences": True,
        "batch_input_shape": [None, T, F]}}  # fmt: skip
    specs = [{"name": n, "shape": list(w.shape), "dtype": "float32"} for n, w in weights]
    doc = {"format": "layers-model", "modelTopology": {"keras_version": "2.15.0",
           "model_config": {"class_name": "Sequential", "config": {"layers": [layer]}}},
           "weightsManifest": [{"paths": ["w.bin"], "weights": specs}]}  # fmt: skip
    (folder / "model.json").write_text(json.dumps(doc))
    return folder / "model.json"


def test_keras_gru_reset_after_equals_torch(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    gru = torch.nn.GRU(3, 4, batch_first=True)
    res = import_file(_keras_gru_json(tmp_path, gru, 6, 3), store=tmp_path / "s")
    assert "reset_after" not in res.record["blocks"]["gru"]  # torch's maths, the fused kernel
    x = np.random.default_rng(0).standard_normal((2, 6, 3)).astype(np.float32)
    with torch.no_grad():
        want = gru(torch.from_numpy(x))[0].numpy()
    np.testing.assert_allclose(ours(res.record, res.tensors, x, False), want, **TOL)


@pytest.mark.parametrize("case", ["gru", "conv"])
def test_imported_model_trains(tmp_path, tfjs_models, case):
    res = import_file(tfjs_models / case / "model.json", store=tmp_path / "s")
    x, want, _ = io_of(tfjs_models / case)
    m = pretrained_model(res.record, res.tensors, device="reference").train()
    target = sc.tensor((np.random.default_rng(1).standard_normal(want.shape)).tolist())
    opt = optim.Adam(m.parameters(), lr=0.02)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = sc.nn.functional.mse_loss(m(sc.tensor(x.tolist())), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


PIPELINE = """
optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss: { block_id: training/loss/mse }
epochs: 1
batch_size: 16
data: { source: bundled:sunspots_yearly.csv, format: csv, column: sunspots, window: 20,
        horizon: 1, val_fraction: 0.2, normalise: standard }
"""


def test_imported_record_trains_from_the_command_line(tmp_path, tfjs_models, capsys):
    """import, add a pipeline and data, then scellis train: the loss is finite and falls."""
    store, rec = tmp_path / "s", tmp_path / "m.sml"
    assert main(["import", str(tfjs_models / "forecaster" / "model.json"), "--store",
                 str(store), "--to", str(rec)]) == 0  # fmt: skip
    rec.write_text(rec.read_text() + PIPELINE)
    capsys.readouterr()
    assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                 "--max-steps", "6", "--json"]) == 0  # fmt: skip
    steps = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    losses = [e["loss"] for e in steps if e.get("kind") == "log"]
    assert len(losses) == 6 and all(np.isfinite(losses))
    assert np.mean(losses[3:]) < np.mean(losses[:3])  # minibatch losses: compare halves


def _copy(tfjs_models, tmp_path, case="mlp"):
    folder = tmp_path / case
    shutil.copytree(tfjs_models / case, folder)
    return folder, json.loads((folder / "model.json").read_text())


def _refused(folder, doc, capsys) -> str:
    (folder / "model.json").write_text(json.dumps(doc))
    assert main(["import", str(folder / "model.json"), "--store", str(folder / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    return err


def test_missing_shard_is_named(tmp_path, tfjs_models, capsys):
    folder, doc = _copy(tfjs_models, tmp_path)
    (folder / "group1-shard2").unlink()
    assert "weight shard 'group1-shard2' is missing" in _refused(folder, doc, capsys)


def test_unknown_layer_class_is_named(tmp_path, tfjs_models, capsys):
    folder, doc = _copy(tfjs_models, tmp_path)
    layer = doc["modelTopology"]["config"]["layers"][1]
    layer["class_name"] = "Conv2D"
    err = _refused(folder, doc, capsys)
    assert f"layer {layer['config']['name']!r} is a Conv2D, which is not supported" in err


def test_weight_shape_that_does_not_fit_is_named(tmp_path, tfjs_models, capsys):
    folder, doc = _copy(tfjs_models, tmp_path)
    first = doc["modelTopology"]["config"]["layers"][0]["config"]
    first["batch_input_shape"] = [None, 5]  # the kernel takes 6 features
    err = _refused(folder, doc, capsys)
    assert f"layer {first['name']!r} (Dense): its kernel takes 6 features, its input has 5" in err


def test_shards_outside_the_folder_and_short_shards_are_refused(tmp_path, tfjs_models, capsys):
    folder, doc = _copy(tfjs_models, tmp_path)
    doc["weightsManifest"][0]["paths"][0] = "../mlp_uint8/group1-shard1"
    assert "lies outside the model's folder" in _refused(folder, doc, capsys)
    folder, doc = _copy(tfjs_models, tmp_path, "conv")
    doc["weightsManifest"][0]["paths"].pop()
    assert "its shards hold" in _refused(folder, doc, capsys)


CHILD = """
import hashlib, json, sys
for name in ("numpy", "wgpu", "torch", "onnx", "safetensors"):
    sys.modules[name] = None
from scellis.codecs import read
im = read(sys.argv[1])
print(json.dumps({k: hashlib.sha256(t.data).hexdigest() for k, t in im.tensors.items()}))
"""


@pytest.mark.parametrize("case", ["embed_lstm", "conv_uint8", "mlp_float16"])
def test_import_needs_no_native_library(tfjs_models, case):
    """As in the browser: the same weights with NumPy and friends blocked."""
    src = str(Path(sc.__file__).resolve().parent.parent)
    path = str(tfjs_models / case / "model.json")
    out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    want = {k: hashlib.sha256(t.data).hexdigest() for k, t in read(path).tensors.items()}
    assert json.loads(out.stdout) == want


@pytest.mark.parametrize("target", ["onnx", "torch"])
def test_keras_gates_are_not_exported_as_torchs(tmp_path, tfjs_models, capsys, target):
    """ONNX and torch modules hold torch's cell: a hard-sigmoid GRU is refused, by name."""
    store, rec = tmp_path / "s", tmp_path / "m.sml"
    import_file(tfjs_models / "gru" / "model.json", store=store, to=rec)
    out = tmp_path / "out"
    assert main(["export", str(rec), "--to", target, "--out", str(out), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "recurrent_activation hard_sigmoid has no" in err and "Traceback" not in err
    assert not out.exists()
