"""A tiny record and series for store, CLI and resume tests: trains in well under a second."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

RECORD = """\
model: test/tiny_lstm@1
inputs:
  window: { shape: [batch, 4, 1], dtype: f32 }
blocks:
  lstm: { block_id: nn/lstm, in: window, input_size: 1, hidden_size: 3, output: last }
  head: { block_id: nn/regression_head, in: lstm, in_features: 3, n_outputs: 1 }
outputs: [head]
optimizer: { block_id: training/optimizer/adam, lr: @LR@ }
loss: { block_id: training/loss/mse }
epochs: 3
batch_size: 8
determinism_tier: debug
seed: @SEED@
data:
  source: series.csv
  format: csv
  column: value
  window: 4
  horizon: 1
  stride: 1
  val_fraction: 0.2
  normalise: standard
eval: { every: 1, batch_size: 16 }
"""
STEPS_PER_EPOCH = 7  # 52 training windows (10 for validation), batches of 8


def write_record(folder: Path, seed: int = 11, lr: float = 0.02) -> Path:
    rng = random.Random(1234)
    v, rows = 0.0, ["value"]
    for _ in range(70):
        v += rng.gauss(0, 1)
        rows.append(repr(round(v, 6)))
    (folder / "series.csv").write_text("\n".join(rows) + "\n")
    path = folder / "tiny.sml"
    path.write_text(RECORD.replace("@SEED@", str(seed)).replace("@LR@", repr(lr)))
    return path


def train_steps(prep, steps: int) -> list:
    """Train a prepared run ``steps`` steps (a loss logged at each, no validation); its
    events."""

    async def events():
        return [ev async for ev in prep.fit(max_steps=steps, log_every=1, validate=False)]

    return asyncio.run(events())
