"""The time-series blocks from SML: the TCN example validates and trains, shapes are
checked at validation, and batch norm's running statistics travel in checkpoints."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from scellis.catalog.sml_registry import catalog_registry
from scellis.cli.main import main
from scellis.ir.blocks import block_graph
from scellis.ir.record import load_record
from scellis.run.session import start_run
from scellis.sml import parse, validate
from scellis.store.objects import ObjectStore
from scellis.store.safetensors import loads
from scellis.train import checkpoint as ckpt
from storeutil import train_steps

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tcn_forecaster.sml"

CONV_RECORD = """\
model: test/conv_pool_bn@1
inputs:
  window: { shape: [batch, 12, 1], dtype: f32 }
blocks:
  conv: { block_id: nn/conv1d, in: window, in_channels: 1, out_channels: 4, kernel_size: 3,
          padding: causal, dilation: 2 }
  bn: { block_id: nn/batch_norm1d, in: conv, num_features: 4 }
  pool: { block_id: nn/max_pool1d, in: bn, kernel_size: 2 }
  rnn: { block_id: nn/gru, in: pool, input_size: 4, hidden_size: 3, bidirectional: true }
  avg: { block_id: nn/avg_pool1d, in: rnn, kernel_size: 3, stride: 1, padding: 1 }
  glob: { block_id: nn/global_pool1d, in: avg, mode: max }
  head: { block_id: nn/regression_head, in: glob, in_features: 6, n_outputs: 1 }
outputs: [head]
optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss: { block_id: training/loss/mse }
epochs: 1
batch_size: 16
determinism_tier: debug
seed: 3
data:
  source: bundled:sunspots_yearly.csv
  format: csv
  column: sunspots
  window: 12
  horizon: 1
  stride: 1
  val_fraction: 0.2
  normalise: standard
"""


def _problems(text: str) -> list[str]:
    return [str(d) for d in validate(parse(text, "m.sml"), catalog_registry())]


def test_tcn_example_validates_and_trains_five_steps(tmp_path, capsys):
    assert main(["validate", str(EXAMPLE)]) == 0
    code = main(["train", str(EXAMPLE), "--device", "reference", "--max-steps", "5",
                 "--store", str(tmp_path / "s"), "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    losses = [e["loss"] for e in events if e["kind"] == "log"]
    end = [e for e in events if e["kind"] == "end"]
    assert end and end[-1]["steps"] == 5 and len(losses) == 5
    assert all(math.isfinite(v) for v in losses)
    assert any(e["kind"] == "checkpoint" for e in events)


def test_conv_pool_norm_record_validates():
    assert _problems(CONV_RECORD) == []


@pytest.mark.parametrize(
    "edit,message",
    [
        (("in_channels: 1, out_channels", "in_channels: 2, out_channels"), "last dim 2"),
        (("in_features: 6, n_outputs", "in_features: 3, n_outputs"), "last dim 3"),
        (("kernel_size: 2 }", "kernel_size: 20 }"), "a sequence of at least 20"),
        (("padding: causal", "padding: full"), "padding"),
    ],
)
def test_shape_rules_catch_mismatches(edit, message):
    problems = _problems(CONV_RECORD.replace(*edit))
    assert any(message in p for p in problems), problems


def test_batch_norm_running_stats_are_checkpointed(tmp_path):
    rec = tmp_path / "conv.sml"
    rec.write_text(CONV_RECORD)
    s = start_run(rec.read_bytes(), str(rec), base_dir=tmp_path, device="reference").prep
    train_steps(s, 3)
    live = s.ts.model.state_dict()
    assert {"bn.running_mean", "bn.running_var"} <= set(live)
    assert any(v != 0 for v in live["bn.running_mean"].tolist())  # three updates moved it
    objs = ObjectStore(tmp_path / "store")
    h, m = asyncio.run(ckpt.save(s.ts, objs, record=objs.put(rec.read_bytes()),
                                 dataset=s.digest, tier=s.tier))  # fmt: skip
    weights, _ = loads(objs.get(m["weights"]))
    assert "bn.running_var" in weights
    fresh = start_run(rec.read_bytes(), str(rec), base_dir=tmp_path, device="reference").prep
    assert fresh.ts.model.state_dict()["bn.running_mean"].tolist() == [0.0] * 4
    ckpt.load(fresh.ts, objs, h)
    for k in ("bn.running_mean", "bn.running_var"):
        assert fresh.ts.model.state_dict()[k].tolist() == live[k].tolist()


def test_block_rung_prints_bidirectional_only_when_set(tmp_path):
    def rung(text: str) -> str:
        (tmp_path / "m.sml").write_text(text)
        return block_graph(load_record(str(tmp_path / "m.sml"))).text()

    text = rung(CONV_RECORD)
    assert "bidirectional=True" in text and "rnn: nn/gru <- pool -> [batch,6,6]" in text
    assert "conv: nn/conv1d <- window -> [batch,12,4]" in text
    plain = CONV_RECORD.replace(", bidirectional: true", "")
    assert "bidirectional" not in rung(plain.replace("in_features: 6", "in_features: 3"))
