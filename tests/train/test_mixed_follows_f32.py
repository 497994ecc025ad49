"""A mixed_f16 run on WebGPU (lavapipe has shader-f16) follows the same run in f32: the
LSTM forecaster (fused LSTM step kernels) and the char Transformer (flash attention, row
norms, f16 matmuls) log losses within the declared ``MIXED_F16_LOSS_TOLERANCE`` of f32's,
step by step, and the mixed run really ran its matmuls on f16 operands."""

from __future__ import annotations

from pathlib import Path

import pytest

from runspy import spied_run
from scellis.devices import get_device
from scellis.run.options import RunOptions
from scellis.train.precision import MIXED_F16_LOSS_TOLERANCE, losses_follow_f32

pytestmark = [pytest.mark.webgpu, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEPS = 8
# a scale whose scaled f16 gradients stay finite here: a step skipped for overflow (the
# default 2^16 skips the first) would leave the two runs a different number of updates
MIXED = "{policy: mixed_f16, init_scale: 256}"


def _losses(name: str, precision: str, edits: list[str]):
    """Per-step losses of a run of ``name`` on WebGPU, and the (op, dtype of its first
    input) pairs the device ran."""
    raw = (EXAMPLES / name).read_bytes()
    opts = RunOptions(max_steps=STEPS, validate=False, set=[f"precision={precision}", *edits])
    return spied_run(raw, name, opts, "webgpu", EXAMPLES)


@pytest.mark.parametrize(
    "name,edits",
    [
        ("lstm_forecaster.sml", ["batch_size=8"]),
        ("char_transformer.sml", ["batch_size=2", "data.max_chars=4000"]),
    ],
    ids=["lstm", "transformer"],
)
def test_mixed_f16_losses_follow_f32(name, edits):
    assert get_device("webgpu").info.has_f16, "mixed_f16 needs shader-f16"
    want, _ = _losses(name, "f32", edits)
    got, seen = _losses(name, MIXED, edits)
    assert ("matmul", "f16") in seen, sorted(seen)
    assert None not in got  # no step skipped, so both runs made the same updates
    assert losses_follow_f32(got, want) == [], (got, want, MIXED_F16_LOSS_TOLERANCE)
    # the losses move: a run that ignored its data would pass the comparison trivially
    assert max(want) - min(want) > 10 * MIXED_F16_LOSS_TOLERANCE["atol"]


def test_a_loss_off_the_tolerance_is_named():
    f32 = [2.0, 1.5, None, 1.0]
    assert losses_follow_f32([2.0005, 1.501, None, 1.0], f32) == []
    bad = losses_follow_f32([2.0, 1.52, None, 1.0], f32)
    assert len(bad) == 1 and bad[0].startswith("step 1:")
    assert losses_follow_f32([2.0, 1.5, 1.2, 1.0], f32)[0].startswith("step 2: skipped")
    assert losses_follow_f32([2.0], f32) == ["1 mixed_f16 losses against 4 f32 ones"]
