"""The codecs run with NumPy, torch, onnx and safetensors blocked (as in the browser)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")

from onnx_models import Forecaster, export  # noqa: E402

import scellis  # noqa: E402

SRC = str(Path(scellis.__file__).resolve().parent.parent)

CHILD = """
import hashlib, json, sys
for name in ("numpy", "wgpu", "torch", "onnx", "onnxruntime", "safetensors"):
    sys.modules[name] = None
from scellis.codecs import read
out = {}
for path in sys.argv[1:]:
    im = read(path)
    out[path] = {k: [t.dtype, list(t.shape), hashlib.sha256(t.data).hexdigest()]
                 for k, t in im.tensors.items()}
    out[path + ":blocks"] = list((im.record or {}).get("blocks") or {})
print(json.dumps(out))
"""


def _digest(t):
    t = t.detach().contiguous()
    raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
    return hashlib.sha256(raw).hexdigest()


def test_reading_needs_none_of_the_native_libraries(tmp_path):
    torch.manual_seed(21)
    model = Forecaster(torch.nn.GRU, layers=1).eval()
    export(model, torch.randn(2, 4, 2), tmp_path / "m.onnx")
    sd = {k: v.to(torch.bfloat16) if "weight" in k else v for k, v in model.state_dict().items()}
    torch.save(sd, tmp_path / "m.pt")
    st.save_file({k: v.contiguous() for k, v in sd.items()}, tmp_path / "m.safetensors")
    files = [str(tmp_path / n) for n in ("m.onnx", "m.pt", "m.safetensors")]
    res = subprocess.run(
        [sys.executable, "-c", CHILD, *files], capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert got[files[0] + ":blocks"] == ["rnn", "head"]
    for f, source in ((files[0], model.state_dict()), (files[1], sd), (files[2], sd)):
        assert {k: v[2] for k, v in got[f].items()} == {k: _digest(v) for k, v in source.items()}
