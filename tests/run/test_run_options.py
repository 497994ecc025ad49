"""Run options are declared once: every field of RunOptions reaches each surface it
names (the train and resume commands, the tab's controls, the stored run config), with
its doc, default and bounds; bad values are one clear message."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from scellis.base.errors import ScellisError
from scellis.cli.main import cli
from scellis.cli.run_options import flag_of
from scellis.run.options import CLI, RESUME, TAB, RunOptions, kind_of, parse_set, schema

ROOT = Path(__file__).resolve().parents[2]
FIELDS = RunOptions.specs()


def _help(command: str) -> str:
    out = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.parametrize("surface", [CLI, RESUME])
def test_every_command_line_option_is_on_its_command(surface):
    text = _help(surface)
    for f in RunOptions.on(surface):
        assert flag_of(f) in text, (surface, f.name)
        assert f.metadata["doc"].split()[0] in text, (surface, f.name)


def test_every_tab_option_is_a_panel_control():
    committed = json.loads((ROOT / "web" / "src" / "run" / "options.schema.json").read_text())
    names = [o["name"] for o in committed]
    assert names == [f.name for f in RunOptions.on(TAB)]
    assert committed == schema(TAB)
    tab = RunOptions.defaults(TAB)
    assert (tab.log_every, tab.checkpoint_every, tab.samples) == (5, 10, True)


def _random_value(f, rng: random.Random):
    kind, low = kind_of(f), f.metadata["low"] or 0
    if kind == "bool":
        return not getattr(RunOptions(), f.name)
    if kind == "int":
        return low + rng.randrange(1, 50)
    if kind == "float":
        return round(rng.uniform(0.5, 9.0), 3)
    return [f"x{rng.randrange(100)}"]


def test_the_stored_config_keeps_every_run_option():
    rng = random.Random(7)
    chosen = {f.name: _random_value(f, rng) for f in FIELDS if f.metadata["record"] is None
              and f.name != "set"}  # fmt: skip
    o = RunOptions.from_mapping(chosen)
    config = json.loads(json.dumps({"options": o.to_config()}))  # as the runs row keeps it
    assert set(config["options"]) == set(chosen)
    back = RunOptions.from_config(config)
    assert {k: getattr(back, k) for k in chosen} == chosen


def test_record_shorthands_are_edits_not_stored_options():
    o = RunOptions.from_mapping({"lr": 3e-4, "epochs": 2, "seed": 5, "batch_size": 16,
                                 "set": ["data.window=52"]})  # fmt: skip
    assert not {"lr", "epochs", "seed", "batch_size", "set"} & set(o.to_config())
    edits = {path: value for path, value, _ in o.record_edits()}
    assert edits == {("optimizer", "lr"): 3e-4, ("epochs",): 2, ("seed",): 5,
                     ("batch_size",): 16, ("data", "window"): 52}  # fmt: skip


def test_every_field_says_what_it_is():
    for f in FIELDS:
        assert f.metadata["doc"] and f.metadata["surfaces"], f.name
        default = getattr(RunOptions(), f.name)
        if default is not None and kind_of(f) in ("int", "float"):
            low, above = f.metadata["low"], f.metadata["above"]
            assert low is None or default >= low
            assert above is None or default > above


def test_a_config_from_before_options_were_kept_together_reads_the_same():
    old = {"plan": {"epochs": 4, "max_steps": 9, "log_every": 2, "checkpoint_every": 3,
                    "keep_last": 2, "keep_best": False},
           "tab": {"drop_last": True, "samples": True, "val_rows": 5}}  # fmt: skip
    o = RunOptions.from_config(old)
    assert (o.max_steps, o.log_every, o.checkpoint_every, o.keep_last, o.keep_best) == (
        9, 2, 3, 2, False)  # fmt: skip
    assert (o.drop_last, o.samples, o.val_rows, o.epochs) == (True, True, 5, None)


@pytest.mark.parametrize(
    "values, words",
    [
        ({"eval_every": 0}, "eval_every must be a whole number >= 1"),
        ({"log_every": 2.5}, "log_every must be a whole number"),
        ({"checkpoint_minutes": 0}, "checkpoint_minutes must be a number > 0"),
        ({"replay": "yes"}, "replay must be true or false"),
        ({"val_rows": "ten"}, "val_rows must be a whole number"),
        ({"warmup": 3}, "unknown run option 'warmup'"),
        ({"lr": float("nan")}, "lr must be a number > 0"),
    ],
)
def test_bad_values_are_one_clear_message(values, words):
    with pytest.raises(ScellisError) as e:
        RunOptions.from_mapping(values)
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "item, want",
    [
        ("optimizer.lr=3e-4", (("optimizer", "lr"), 3e-4)),
        ("data.window=52", (("data", "window"), 52)),
        ("precision=mixed_f16", (("precision",), "mixed_f16")),
        ("blocks.lstm.output=last", (("blocks", "lstm", "output"), "last")),
        ("data.columns=[a, b]", (("data", "columns"), ["a", "b"])),
        ("grad_clip=null", (("grad_clip",), None)),
    ],
)
def test_set_values_read_as_yaml(item, want):
    assert parse_set(item) == want


@pytest.mark.parametrize("item", ["lr", "=3", "optimizer..lr=1", "a=[1,"])
def test_bad_set_items_are_refused(item):
    with pytest.raises(ScellisError, match="--set"):
        parse_set(item)
