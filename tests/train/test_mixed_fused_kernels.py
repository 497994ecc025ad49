"""mixed_f16 records whose steps take the fused kernels: the LSTM forecaster (the fused
LSTM step kernels) and the char Transformer (flash attention, auto on WebGPU, and the
fused row norm) train on WebGPU in f16 and agree with the reference device's mixed run
within the prod tier's mixed tolerance, step by step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runspy import spied_run
from scellis.devices import get_device
from scellis.run.options import RunOptions
from scellis.train import PROD_TOLERANCE

pytestmark = [pytest.mark.webgpu, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _train(name: str, device: str, edits: list[str], steps: int):
    """Per-step losses of ``steps`` mixed_f16 steps (None where the step overflowed), and
    the (op, first input's dtype) pairs the device ran."""
    raw = (EXAMPLES / name).read_bytes()
    opts = RunOptions(max_steps=steps, validate=False, set=["precision=mixed_f16", *edits])
    return spied_run(raw, name, opts, device, EXAMPLES, tier="prod")


@pytest.mark.parametrize(
    "name,edits,kernels",
    [
        ("lstm_forecaster.sml", ["batch_size=8"], {"lstm_seq", "lstm_seq_backward"}),
        (
            "char_transformer.sml",
            ["batch_size=2", "data.max_chars=4000"],
            {"flash_attention", "flash_attention_backward", "row_norm", "row_norm_backward"},
        ),
    ],
    ids=["lstm", "transformer"],
)
def test_mixed_f16_webgpu_agrees_with_reference(name, edits, kernels):
    gpu = get_device("webgpu")
    assert gpu.info.has_f16, "these kernels' f16 variants need shader-f16"
    want, _ = _train(name, "reference", edits, 5)
    got, seen = _train(name, "webgpu", edits, 5)
    assert {(k, "f16") for k in kernels} <= seen, sorted(seen)
    # a step skipped for an overflowing scaled f16 gradient logs no loss: the same on both
    assert [g is None for g in got] == [w is None for w in want]
    tol = PROD_TOLERANCE["mixed_f16"]["dense"]
    kept = [(g, w) for g, w in zip(got, want) if w is not None]
    assert len(kept) >= 3
    np.testing.assert_allclose(*zip(*kept), rtol=tol["rtol"], atol=tol["atol"])
