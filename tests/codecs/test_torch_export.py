"""``export --to torch``: the written plain-torch module reproduces Scellis' outputs."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import scellis as sc  # noqa: E402
from scellis.base.errors import ScellisError  # noqa: E402
from scellis.codecs import make  # noqa: E402
from scellis.codecs.weights import state_of  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _record(name: str) -> dict:
    if name == "tied_lm":  # the char model with its head tied to the embedding, plus a bias
        rec = _record("char_transformer")
        rec["blocks"]["head"].update(tie_to="tok", bias=True)
        return rec
    if name == "bi_lstm":  # two bidirectional layers, the head on both directions' ends
        rec = _record("lstm_forecaster")
        rec["blocks"]["lstm"].update(bidirectional=True, num_layers=2)
        rec["blocks"]["head"].update(in_features=64)
        return rec
    return sc.sml.parse((EXAMPLES / f"{name}.sml").read_text()).data


def _randomised(record: dict, seed: int) -> RecordModel:
    """The record's model with every parameter redrawn (norm scales too, never all ones)."""
    m = RecordModel(record, device="reference").eval()
    rng = np.random.default_rng(seed)
    for path, p in list(m.named_parameters()):
        v = rng.standard_normal(p.shape).astype(np.float32) * 0.3
        m.set_parameter(path, sc.tensor(v, device="reference"))
    return m


def _load(folder: Path):
    spec = importlib.util.spec_from_file_location(f"exported_{folder.name}", folder / "model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tm = mod.Model()
    tm.load_state_dict(torch.load(folder / "state_dict.pt", weights_only=True), strict=True)
    return tm.eval()


def _inputs(name: str, rng):
    if name in ("char_transformer", "tied_lm"):
        ids = rng.integers(0, 88, (2, 32))
        return sc.tensor(ids.astype(np.int32), device="reference"), torch.from_numpy(ids)
    x = rng.standard_normal((3, 20, 1)).astype(np.float32)
    return sc.tensor(x, device="reference"), torch.from_numpy(x)


@pytest.mark.parametrize("name", ["lstm_forecaster", "char_transformer", "tied_lm", "bi_lstm"])
def test_exported_module_reproduces_scellis(tmp_path, name):
    record = _record(name)
    m = _randomised(record, seed=len(name))
    out = tmp_path / name
    files = make("codec/torch_module").write(out, state_of(m), record)
    assert [f.name for f in files] == ["model.py", "state_dict.pt"]
    src = (out / "model.py").read_text()
    assert "scellis" not in src.split('"""', 2)[2]  # only the docstring names it
    tm = _load(out)
    assert [k for k, _ in tm.named_parameters()] == [k for k, _ in m.named_parameters()]
    ours, theirs = _inputs(name, np.random.default_rng(1))
    want = np.asarray(m(ours).tolist(), dtype=np.float32)
    with torch.no_grad():
        got = tm(theirs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_exported_module_imports_only_torch(tmp_path):
    record = _record("char_transformer")
    make("codec/torch_module").write(tmp_path, state_of(_randomised(record, 3)), record)
    tree = ast.parse((tmp_path / "model.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module)
    assert names == {"torch", "torch.nn.functional"}


def test_blocks_without_a_torch_form_are_refused(tmp_path):
    record = _record("char_transformer")
    record["blocks"]["body"]["rotary"] = True
    m = RecordModel(record, device="reference")
    with pytest.raises(ScellisError, match="rotary"):
        make("codec/torch_module").write(tmp_path, state_of(m), record)
