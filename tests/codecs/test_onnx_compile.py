"""An imported GPT-2 (op by op) compiles, plans and replays its training steps.

The graph's data constants (the causal mask the exporter baked) are buffers made with
the model, so the tracer sees every tensor a forward reads: the op graph verifies,
the plan is worked out, and on WebGPU replayed steps give the eager run's losses.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")
pytest.importorskip("transformers")

from test_onnx_graphs import TRAINING, _export, _input, _model  # noqa: E402

from scellis.cli.main import main  # noqa: E402


@pytest.fixture(scope="module")
def gpt2_record(tmp_path_factory):
    """A fixed-shape dynamo export of a tiny GPT-2, imported with a text data section."""
    tmp = tmp_path_factory.mktemp("gpt2")
    model, shape = _model("gpt2", seed=12)
    rng = np.random.default_rng(12)
    _export(model, _input((2, 8), rng), tmp / "g.onnx", dynamo=True)
    rec, store = tmp / "g.sml", tmp / "store"
    assert main(["import", str(tmp / "g.onnx"), "--to", str(rec), "--store", str(store)]) == 0
    (tmp / "text.txt").write_text("".join(rng.choice(list("abcdefgh "), 400)))
    rec.write_text(rec.read_text() + TRAINING)
    return rec, store


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_compile_emit_ops_verifies(gpt2_record, capsys, mode):
    rec, _ = gpt2_record
    capsys.readouterr()
    assert main(["compile", str(rec), "--emit", "ops", "--mode", mode, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["problems"] == []
    # the causal mask is a buffer of the block that adds it, listed with the parameters
    assert " buffer node_Add_" in got["text"]


def test_plan_of_an_imported_gpt2(gpt2_record, capsys):
    rec, _ = gpt2_record
    capsys.readouterr()
    assert main(["plan", str(rec), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["verdict"] == "green", got


@pytest.mark.webgpu
def test_replayed_steps_equal_eager(gpt2_record, capsys):
    rec, store = gpt2_record

    def losses(*extra):
        argv = ["train", str(rec), "--store", str(store), "--device", "webgpu", "--json",
                "--max-steps", "5", *extra]  # fmt: skip
        assert main(argv) == 0
        events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        end = next(e for e in events if e.get("kind") == "end")
        return [e["loss"] for e in events if e.get("kind") == "log"], end

    capsys.readouterr()
    eager, _ = losses()
    replayed, end = losses("--replay")
    assert len(eager) == 5 and replayed == eager
    assert end["replay"]["replayed_steps"] > 0, end["replay"]
