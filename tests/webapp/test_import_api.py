"""The tab's Import model (webapp.import_api): picked files become a record + weights
whose forward equals the framework that saved them; with NumPy blocked (as in the
browser) the import gives the same record and weights; refusals are one line."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import scellis
from scellis.base.errors import ScellisError
from scellis.webapp import import_api
from tinymodels import Forecaster, gpt2_folder, llama_folder, mlp, onnx_file, torch

SRC = str(Path(scellis.__file__).resolve().parent.parent)
WEIGHTS = re.compile(r"^# weights: (sha256:[0-9a-f]{64})$", re.M)


def _picked(tmp_path, *sources, under: str = "") -> Path:
    """The worker's scratch folder: the files (or a folder's files) as the page sent them."""
    folder = tmp_path / "picked"
    for src in sources:
        dest = folder / under / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest)
    return folder


def _forward(record: str, store: Path, inputs: dict | None = None) -> dict:
    run = import_api.forward(record, inputs, device="reference", store=str(store), full=True)
    return asyncio.run(run)


def test_onnx_mlp_forward_equals_torch(tmp_path):
    torch.manual_seed(3)
    model = mlp()
    path = onnx_file(model, torch.randn(2, 4), tmp_path / "mlp.onnx")
    got = import_api.import_model(str(_picked(tmp_path, path)), store=str(tmp_path / "s"))
    assert got["name"] == "mlp.onnx" and got["codec"] == "codec/onnx"
    assert got["parameters"] == sum(p.numel() for p in model.parameters())
    # the file names no training: the record gets a default optimizer and loss to train with
    assert got["added"] and "training/loss/mse" in got["record"] and got["needs_data"]
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    out = _forward(got["record"], tmp_path / "s", {"x": x.tolist()})
    want = model(torch.from_numpy(x)).detach().numpy()
    assert out["shape"] == [3, 3]
    assert out["head"] == np.array(out["outputs"]).ravel()[: import_api.HEAD].tolist()
    np.testing.assert_allclose(np.array(out["outputs"]), want, rtol=1e-5, atol=1e-5)


def test_hf_folder_picked_whole_forward_equals_transformers(tmp_path):
    model = gpt2_folder(tmp_path / "gpt2", shard="8KB")  # sharded: an index and its shards
    folder = _picked(tmp_path, tmp_path / "gpt2", under="")
    got = import_api.import_model(str(folder), store=str(tmp_path / "s"))
    assert got["codec"] == "codec/hf" and not got["added"]  # it names its optimizer and loss
    out = _forward(got["record"], tmp_path / "s", None)  # sample ids from the record's inputs
    ids = torch.tensor(out["inputs"]["ids"])
    assert ids.shape == (import_api.SAMPLE_BATCH, 12)
    assert 0 <= int(ids.min()) and int(ids.max()) < 40
    want = model(ids).logits.detach().numpy()
    np.testing.assert_allclose(np.array(out["outputs"]), want, rtol=1e-4, atol=1e-4)


def test_state_dict_maps_onto_the_record_shown(tmp_path):
    torch.manual_seed(5)
    model = mlp()
    onnx = onnx_file(model, torch.randn(2, 4), tmp_path / "mlp.onnx")
    shown = import_api.import_model(str(_picked(tmp_path, onnx)), store=str(tmp_path / "s"))
    other = mlp()  # the same architecture, other weights, saved as a bare state dict
    names = {"0.weight": "linear_0.weight", "0.bias": "linear_0.bias",
             "2.weight": "linear_2.weight", "2.bias": "linear_2.bias"}  # fmt: skip
    torch.save({names[k]: v for k, v in other.state_dict().items()}, tmp_path / "sd.pt")
    folder = tmp_path / "sd"
    folder.mkdir()
    shutil.copy(tmp_path / "sd.pt", folder)
    got = import_api.import_model(str(folder), shown["record"], store=str(tmp_path / "s"))
    x = np.random.default_rng(6).standard_normal((2, 4)).astype(np.float32)
    out = _forward(got["record"], tmp_path / "s", {"x": x.tolist()})
    want = other(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(np.array(out["outputs"]), want, rtol=1e-5, atol=1e-5)


def _refusal(folder: Path, record_text=None) -> str:
    with pytest.raises(ScellisError) as e:
        import_api.import_model(str(folder), record_text, store=str(folder.parent / "s"))
    msg = str(e.value)
    assert str(folder) not in msg and "Traceback" not in msg and "\n" not in msg
    return msg


def test_refusals_name_what_is_wrong(tmp_path):
    gpt2_folder(tmp_path / "g", shard="8KB")
    shards = sorted((tmp_path / "g").glob("model-0*.safetensors"))
    shards[1].unlink()
    msg = _refusal(_picked(tmp_path / "a", tmp_path / "g"))
    assert f"names the shard {shards[1].name}, missing" in msg
    no_config = _picked(tmp_path / "b", shards[0], shards[2])
    assert "no config.json (a Hugging Face folder) or model.json" in _refusal(no_config)

    class Det(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.det(x)

    det = onnx_file(Det(), torch.randn(2, 3, 3), tmp_path / "det.onnx")
    assert "unsupported ONNX ops: Det" in _refusal(_picked(tmp_path / "c", det))
    torch.save(mlp().state_dict(), tmp_path / "bare.pt")
    assert "holds weights only" in _refusal(_picked(tmp_path / "d", tmp_path / "bare.pt"))
    csv = tmp_path / "series.csv"
    csv.write_text("t,v\n1,2.5\n")
    assert "series.csv is data, not a model" in _refusal(_picked(tmp_path / "f", csv))
    (tmp_path / "e").mkdir()
    assert "no files were picked" in _refusal(tmp_path / "e")


CHILD = """
import json, sys
for name in ("numpy", "wgpu", "torch", "onnx", "onnxruntime", "safetensors", "transformers"):
    sys.modules[name] = None
from scellis.webapp import import_api
print(json.dumps([import_api.import_model(f, store=sys.argv[1]) for f in sys.argv[2:]]))
"""


def test_import_needs_no_native_library(tmp_path):
    """As in the browser: the same records and weights with NumPy and friends blocked."""
    torch.manual_seed(7)
    onnx_file(Forecaster(), torch.randn(2, 5, 3), tmp_path / "lstm.onnx")
    llama_folder(tmp_path / "llama")
    gpt2_folder(tmp_path / "gpt2", shard="8KB")
    names = ("lstm.onnx", "llama", "gpt2")
    folders = [str(_picked(tmp_path / f"p{i}", tmp_path / n)) for i, n in enumerate(names)]
    res = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "blocked"), *folders],
                         capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    blocked = json.loads(res.stdout)
    native = [import_api.import_model(f, store=str(tmp_path / "native")) for f in folders]
    assert [b["blocks"] for b in blocked] == [["rnn", "head"], *[n["blocks"] for n in native[1:]]]
    for b, n in zip(blocked, native):
        assert WEIGHTS.search(b["record"]).group(1) == WEIGHTS.search(n["record"]).group(1)
        assert b == n
