"""``scellis import`` / ``scellis export`` end to end, and a user's codec as an extension."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from onnx_models import Forecaster, Unsupported, export  # noqa: E402
from ptfiles import archive  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.catalog import entries  # noqa: E402
from scellis.catalog.extensions import load_extensions  # noqa: E402
from scellis.cli.main import main  # noqa: E402
from scellis.codecs import find, read  # noqa: E402
from scellis.store.objects import ObjectStore  # noqa: E402

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
USER = HERE / "user_codec"


def _torch_module(folder: Path):
    spec = importlib.util.spec_from_file_location(f"m_{folder.name}", folder / "model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = mod.Model()
    m.load_state_dict(torch.load(folder / "state_dict.pt", weights_only=True))
    return m.eval()


def test_onnx_in_torch_module_out(tmp_path, capsys):
    torch.manual_seed(11)
    original = Forecaster(torch.nn.LSTM, layers=2, hidden=6, features=3).eval()
    export(original, torch.randn(2, 7, 3), tmp_path / "f.onnx")
    store, rec = tmp_path / "store", tmp_path / "f.sml"
    assert main(["import", str(tmp_path / "f.onnx"), "--to", str(rec), "--store", str(store)]) == 0
    assert "codec/onnx, 10 tensors" in capsys.readouterr().out
    assert main(["validate", str(rec)]) == 0
    sha = rec.read_text().split("weights: sha256:")[1][:64]
    assert ObjectStore(store).has(sha)
    out = tmp_path / "torch_out"
    assert (
        main(["export", str(rec), "--to", "torch", "--out", str(out), "--store", str(store)]) == 0
    )
    back = _torch_module(out)
    x = torch.randn(5, 7, 3)
    with torch.no_grad():
        np.testing.assert_allclose(back(x).numpy(), original(x).numpy(), rtol=1e-5, atol=1e-6)


def test_state_dict_onto_a_record_then_safetensors(tmp_path, capsys):
    st = pytest.importorskip("safetensors.torch")
    torch.manual_seed(12)
    tm = torch.nn.ModuleDict({"lstm": torch.nn.LSTM(1, 32), "head": torch.nn.Linear(32, 1)})
    pt = tmp_path / "ckpt.pt"
    torch.save({"state_dict": tm.state_dict(), "step": 100}, pt)
    rec, store = tmp_path / "mapped.sml", tmp_path / "store"
    args = ["import", str(pt), "--record", str(EXAMPLES / "lstm_forecaster.sml"), "--to", str(rec)]
    assert main([*args, "--store", str(store), "--json"]) == 0
    assert '"codec": "codec/torch"' in capsys.readouterr().out
    out = tmp_path / "w.safetensors"
    assert main(["export", str(rec), "--to", "safetensors", "--out", str(out),
                 "--store", str(store)]) == 0  # fmt: skip
    back = st.load_file(out)
    assert set(back) == set(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert torch.equal(back[k], v), k
    # the exported file carries its record: it opens back as the same model
    assert read(out).record["blocks"] == sc.sml.parse(rec.read_text()).data["blocks"]


def test_refused_files_exit_2_with_the_reason(tmp_path, capsys):
    canary = tmp_path / "canary"

    class Boom:
        def __reduce__(self):
            import os

            return os.system, (f"touch {canary}",)

    evil = tmp_path / "evil.pt"
    evil.write_bytes(archive(pickle.dumps(Boom(), protocol=2)))
    store = tmp_path / "store"
    assert main(["import", str(evil), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "refused global" in err and "system" in err and "Traceback" not in err
    assert not canary.exists() and not (store / "objects").exists()
    export(Unsupported(), torch.randn(2, 3, 4), tmp_path / "attn.onnx")
    assert main(["import", str(tmp_path / "attn.onnx"), "--store", str(store)]) == 2
    assert "unsupported ONNX ops: " in capsys.readouterr().err
    (tmp_path / "x.bin2").write_bytes(b"nothing known")
    assert main(["import", str(tmp_path / "x.bin2"), "--store", str(store)]) == 2
    assert "no codec can read" in capsys.readouterr().err
    pt = tmp_path / "w.pt"
    torch.save({"other.weight": torch.ones(2)}, pt)
    rec = EXAMPLES / "lstm_forecaster.sml"
    assert main(["import", str(pt), "--record", str(rec), "--store", str(store)]) == 2
    assert "nothing for 6 parameter" in capsys.readouterr().err


def test_user_codec_registers_like_a_builtin(tmp_path, capsys):
    load_extensions([USER])
    ids = [e.id for e in entries("codec")]
    assert {"codec/onnx", "codec/safetensors", "codec/torch", "user/codec/text_weights"} <= set(ids)
    torch.manual_seed(13)
    tm = torch.nn.ModuleDict({"lstm": torch.nn.LSTM(1, 32), "head": torch.nn.Linear(32, 1)})
    lines = ["#text-weights 1"]
    for k, v in tm.state_dict().items():
        lines.append(
            f"{k} F32 {'x'.join(map(str, v.shape))} " + " ".join(map(repr, v.flatten().tolist()))
        )
    f = tmp_path / "weights.data"  # no known suffix: found by its magic line
    f.write_text("\n".join(lines) + "\n")
    assert find(f) == "user/codec/text_weights"
    rec, store = tmp_path / "u.sml", tmp_path / "store"
    args = ["import", str(f), "--record", str(EXAMPLES / "lstm_forecaster.sml"), "--to", str(rec)]
    assert main([*args, "--store", str(store), "--extensions", str(USER)]) == 0
    capsys.readouterr()
    out = tmp_path / "back.wtxt"  # and the user's writer, chosen by codec id
    assert main(["export", str(rec), "--to", "user/codec/text_weights", "--out", str(out),
                 "--store", str(store)]) == 0  # fmt: skip
    again = read(out).tensors
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(np.array(again[k].values(), np.float32), v.flatten().numpy())
