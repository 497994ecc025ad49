"""Fuzzing parse + validate: random text and mutated valid documents raise only our errors."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scellis.base.errors import ScellisError
from scellis.catalog.sml_registry import catalog_registry
from scellis.sml import parse, render, to_form, to_graph, validate

REG = catalog_registry()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = [(EXAMPLES / n).read_text() for n in ("lstm_forecaster.sml", "char_transformer.sml")]
YAMLISH = st.sampled_from(list(":-[]{},&*!|>'\"#%@`?\n\t ") + ["  ", "\n  ", "~", "<<", "---"])


def _check(text) -> None:
    try:
        doc = parse(text, "f.sml")
        for d in validate(doc, REG):
            assert d.line >= 1 and d.col >= 1 and d.file == "f.sml"
        to_graph(doc, REG)
        to_form(doc, REG)
    except ScellisError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(YAMLISH, st.characters()), max_size=120).map("".join))
def test_random_text(text):
    _check(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(raw):
    _check(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEEDS),
    st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 8), st.lists(YAMLISH, max_size=4).map("".join)),
        min_size=1,
        max_size=6,
    ),
)
def test_mutated_documents(seed, edits):
    text = seed
    for where, cut, new in edits:
        i = int(where * len(text))
        text = text[:i] + new + text[i + cut :]
    _check(text)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(SEEDS),
    st.sampled_from(["in_features", "hidden_size", "lr", "in", "block_id", "shape", "dtype"]),
    st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.none(), st.booleans()),
)
def test_wrong_values(seed, key, value):
    lines = seed.splitlines(keepends=True)
    text = "".join(
        line.split(":")[0] + f": {render(value)}\n" if line.strip().startswith(key + ":") else line
        for line in lines
    )
    _check(text)


KEYS = ["model", "inputs", "blocks", "outputs", "optimizer", "scheduler", "loss", "epochs",
        "grad_clip", "precision", "determinism_tier", "data", "eval", "block_id", "in",
        "shape", "dtype", "lr", "x", "head"]  # fmt: skip
VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 5),
        st.floats(allow_nan=True),
        st.sampled_from(KEYS + ["nn/linear", "nn/lstm", "training/optimizer/adam", "batch"]),
    ),  # fmt: skip
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.sampled_from(KEYS), c)),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, min_size=1))
def test_record_shaped_values(record):
    _check("".join(f"{k}: {render(v)}\n" for k, v in record.items()))


NEW_KEYS = ["groups", "params", "schedulers", "milestones", "block_id", "lr", "eps",
            "format", "block_size", "double_quant", "t_max"]  # fmt: skip
NEW_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True),
        st.sampled_from(
            [
                "",
                "|||",
                "*.bias|*",
                "^head\\.(w|b)$[",
                "nf4",
                "int8",
                "training/scheduler/sequential",
                "training/scheduler/chained",
                "training/scheduler/cosine",
                "training/scheduler/plateau",
            ]
        ),
    ),  # fmt: skip
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.sampled_from(NEW_KEYS), c)),
    max_leaves=12,
)
OPTIMIZERS = st.sampled_from(["adam", "nadam", "radam", "adagrad"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPTIMIZERS, NEW_VALUES, NEW_VALUES, NEW_VALUES, NEW_VALUES, NEW_VALUES)
def test_groups_composite_schedules_and_quantize_base(name, lr, groups, parts, ms, quant):
    """optimizer.groups, scheduler sections inside a scheduler and finetune.quantize_base,
    filled with anything: validation and the record check name a problem or pass."""
    from scellis.run.prepare import check_record  # noqa: PLC0415

    optimizer = {"block_id": f"training/optimizer/{name}", "lr": lr, "groups": groups}
    scheduler = {"block_id": "training/scheduler/sequential", "schedulers": parts,
                 "milestones": ms}  # fmt: skip
    finetune = {"adapters": [{"block_id": "peft/lora", "target_modules": ["q", "v"]}],
                "quantize_base": quant}  # fmt: skip
    text = SEEDS[1].replace(
        "optimizer: { block_id: training/optimizer/adamw, lr: 3.0e-3, weight_decay: 0.01 }",
        f"optimizer: {render(optimizer)}\nscheduler: {render(scheduler)}\n"
        f"finetune: {render(finetune)}",
    )
    _check(text)
    try:
        check_record(text, "f.sml")
    except ScellisError:
        pass
