"""SML validation against the catalog: located messages with fixes, shapes, the seed snippet."""

from __future__ import annotations

from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.catalog.registry import lookup
from scellis.catalog.sml_registry import catalog_registry
from scellis.sml import parse, validate

REG = catalog_registry()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The training pipeline of the product page (quoted as-is), given model blocks.
SEED_PIPELINE = """\
model: user/ada/tiny_transformer@3
optimizer:  { block_id: training/optimizer/adamw, lr: 3.0e-4, weight_decay: 0.01 }
scheduler:  { block_id: training/scheduler/warmup_cosine, warmup_steps: 500 }
loss:       { block_id: training/loss/cross_entropy, label_smoothing: 0.1 }
epochs: 10
batch_size: 32
grad_clip:  { max_norm: 1.0 }
precision:  { policy: mixed_f16, master_weights: f32, loss_scaling: dynamic }
determinism_tier: prod   # debug | prod | fast — never silently defaulted
seed: 42                 # counter-based RNG, checkpointed with the run
"""

SEED_MODEL = """\
inputs:
  ids: { shape: [batch, seq], dtype: i32 }
blocks:
  tok: { block_id: nn/embedding, in: ids, num_embeddings: 256, embedding_dim: 64 }
  body: { block_id: nn/transformer, in: tok, d_model: 64, num_heads: 4, num_layers: 2 }
  head: { block_id: nn/lm_head, in: body, d_model: 64, vocab_size: 256 }
outputs: [head]
"""

FORECASTER = """\
model: me/f@1
inputs:
  x: {shape: [batch, 20, 1]}
blocks:
  lstm:
    block_id: nn/lstm
    in: x
    input_size: 1
    hidden_size: 32
  head:
    block_id: nn/regression_head
    in: lstm
    in_features: 32
    pool: last
optimizer: {block_id: training/optimizer/adam, lr: 0.01}
loss: {block_id: training/loss/mse}
determinism_tier: debug
"""


def problems(text: str) -> list[str]:
    return [str(d) for d in validate(parse(text, "m.sml"), REG)]


def one(text: str) -> str:
    out = problems(text)
    assert len(out) == 1, out
    return out[0]


def test_seed_pipeline_parses_and_validates_as_is():
    doc = parse(SEED_PIPELINE + SEED_MODEL, "seed.sml")
    assert doc.data["precision"]["policy"] == "mixed_f16"
    assert doc.data["optimizer"]["lr"] == 3.0e-4
    assert validate(doc, REG) == []


@pytest.mark.parametrize("name", ["lstm_forecaster.sml", "char_transformer.sml"])
def test_examples_validate(name):
    path = EXAMPLES / name
    assert validate(parse(path.read_bytes(), str(path)), REG) == []


def test_valid_forecaster():
    assert problems(FORECASTER) == []


def test_unknown_block_id_has_did_you_mean():
    msg = one(FORECASTER.replace("training/optimizer/adam", "training/optimizer/adamv"))
    assert msg == (
        "m.sml:15:23: unknown block_id 'training/optimizer/adamv'; "
        "did you mean 'training/optimizer/adamw'?"
    )
    seed = SEED_PIPELINE.replace("optimizer/adamw", "optimizer/adamv") + SEED_MODEL
    assert "did you mean 'training/optimizer/adamw'?" in one(seed)


def test_range_type_unknown_and_missing_fields():
    assert one(FORECASTER.replace("lr: 0.01", "lr: -0.01")).endswith("lr must be > 0, got -0.01")
    assert "m.sml:9:18: hidden_size must be int, got 'big'" == one(
        FORECASTER.replace("hidden_size: 32", "hidden_size: big")
    )
    msgs = problems(FORECASTER.replace("hidden_size: 32", "hiden_size: 32"))
    assert "m.sml:9:5: unknown field 'hiden_size' of nn/lstm; did you mean 'hidden_size'?" in msgs
    assert any("missing required field 'hidden_size'" in m for m in problems(
        FORECASTER.replace("    hidden_size: 32\n", "")))  # fmt: skip
    assert "pool must be one of none | last" in one(FORECASTER.replace("pool: last", "pool: max"))


def test_wiring_errors():
    msg = one(FORECASTER.replace("in: lstm", "in: lstm2"))
    assert (
        msg == "m.sml:12:9: block 'head' reads 'lstm2', which does not exist (did you mean 'lstm'?)"
    )
    assert "comes after it" in problems(FORECASTER.replace("in: x", "in: head"))[0]


def test_shape_mismatch_names_both_blocks():
    msg = one(FORECASTER.replace("in_features: 32", "in_features: 64"))
    assert msg == (
        "m.sml:12:9: shape mismatch: 'head' expects last dim 64, 'lstm' gives 32"
        " (set head.in_features: 32)"
    )
    assert "expects last dim 1, 'x' gives 3" in one(FORECASTER.replace("20, 1]", "20, 3]"))
    assert "expects rank 3" in one(FORECASTER.replace("[batch, 20, 1]", "[batch, 1]"))


def test_pipeline_checks():
    msg = one(FORECASTER.replace("determinism_tier: debug\n", ""))
    assert "missing determinism_tier (debug | prod | fast)" in msg
    assert "did you mean 'prod'" in one(FORECASTER.replace("tier: debug", "tier: prd"))
    assert "unknown section 'optimiser' (did you mean 'optimizer'?)" in one(
        FORECASTER.replace("optimizer:", "optimiser:")
    )
    assert "max_norm must be > 0" in one(FORECASTER + "grad_clip: {max_norm: 0}\n")
    assert "policy must be one of f32 | mixed_f16" in one(
        FORECASTER + "precision: {policy: bf16}\n"
    )
    assert "is a block, not a optimizer" in one(
        FORECASTER.replace("training/optimizer/adam", "nn/linear")
    )
    assert "not namespace/name@version" in one(FORECASTER.replace("me/f@1", "f"))
    assert "epochs must be a positive integer" in one(FORECASTER + "epochs: 0\n")


def test_scheduler_step_count_is_derived():
    text = FORECASTER + "scheduler: {block_id: training/scheduler/cosine}\n"
    assert problems(text) == []


def test_odd_shapes_of_record_are_reported_not_raised():
    old = "  head:\n    block_id: nn/regression_head\n"
    text = FORECASTER.replace(old, "  head: 3\n  h2:\n    block_id: nn/regression_head\n")
    out = problems(text)
    assert any("head must be a mapping" in m for m in out)
    assert problems("model: a/b@1\ninputs: 3\nblocks: []\noutputs: 4\ndeterminism_tier: x\n")


def test_positions_longer_than_the_table_are_refused():
    text = SEED_MODEL.replace(
        "  body:",
        "  pos: { block_id: nn/learned_position, in: tok, max_len: 16, dim: 64 }\n  body:",
    ).replace("[batch, seq]", "[batch, 32]")
    msg = one(SEED_PIPELINE + text.replace("in: tok, d_model", "in: pos, d_model"))
    assert "'pos' expects a sequence of at most 16, 'tok' gives 32" in msg


ADAM_LINE = "optimizer: {block_id: training/optimizer/adam, lr: 0.01}"


@pytest.mark.parametrize("name", ["adam", "adamw", "nadam", "radam"])
@pytest.mark.parametrize("betas", [(1.5, 0.5), (0.9, 1.0), (-0.1, 0.9), (0.0, 0.99)])
def test_betas_outside_unit_interval_are_located_as_torch_refuses_them(name, betas):
    import torch

    torch_cls = {"adam": "Adam", "adamw": "AdamW", "nadam": "NAdam", "radam": "RAdam"}[name]
    try:
        getattr(torch.optim, torch_cls)([torch.zeros(1, requires_grad=True)], betas=betas)
        torch_ok = True
    except ValueError:
        torch_ok = False
    line = f"optimizer: {{block_id: training/optimizer/{name}, lr: 0.01, betas: {list(betas)}}}"
    found = problems(FORECASTER.replace(ADAM_LINE, line))
    assert (found == []) == torch_ok, found
    if not torch_ok:
        assert found[0].startswith(f"m.sml:15:{line.index('betas') + 8}: betas must be")


def test_lion_betas_are_located():
    line = "optimizer: {block_id: training/optimizer/lion, lr: 0.001, betas: [0.9, 2]}"
    msg = one(FORECASTER.replace(ADAM_LINE, line))
    assert msg == f"m.sml:15:{line.index('[') + 1}: betas must be < 1, got 2"


def _chained(part: str) -> str:
    return FORECASTER + (
        "scheduler:\n  block_id: training/scheduler/chained\n  schedulers:\n"
        "    - {block_id: training/scheduler/exponential, gamma: 0.9}\n"
        f"    - {{block_id: training/scheduler/{part}}}\n"
    )


@pytest.mark.parametrize(
    "part",
    ["cosine, t_max: 9", "warmup_cosine, warmup_steps: 2, total_steps: 9", "one_cycle, "
     "total_steps: 9", "cosine_restarts, t_0: 3", "step, step_size: 2", "polynomial"],
)  # fmt: skip
def test_a_chained_part_that_does_not_multiply_the_rate_is_located(part):
    name, *fields = part.split(", ")
    section = {"block_id": f"training/scheduler/{name}"}
    section.update({k: int(v) for k, v in (f.split(": ") for f in fields)})
    # what a run refuses when it builds the schedule is the oracle for what chains
    try:
        lookup("training/scheduler/chained").impl(base_lr=0.1, schedulers=(section,))
        chains = True
    except ScellisError:
        chains = False
    found = problems(_chained(part))
    assert (found == []) == chains, found
    if not chains:
        line = _chained(part).count("\n")  # the part's id, on the record's last line
        assert len(found) == 1 and found[0].startswith(
            f"m.sml:{line}:{len('    - {block_id: ') + 1}: training/scheduler/{name} is not a "
            "multiplicative schedule, so training/scheduler/chained cannot chain it ("
        ), found
