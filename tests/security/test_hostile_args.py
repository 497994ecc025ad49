"""Hostile command-line values: ``--set PATH=VALUE`` (read as YAML) and run references
(``RUN``, ``RUN@STEP``, ``RUN:best``) in every command that takes one. Each ends in one
line and exit 2, fast and in bounded memory, before any work that grows with it."""

from __future__ import annotations

import json
import os
import random

import pytest
from hostile import Sentinel, refuse

from scellis.cli.main import main
from scellis.store.records import Records
from storeutil import write_record


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("args")
    rec = write_record(folder, seed=random.randrange(1, 1000))
    store = folder / "s"
    assert main(["train", str(rec), "--device", "reference", "--store", str(store),
                 "--max-steps", "3", "--json"]) == 0  # fmt: skip
    r = Records(store)
    rid = r.runs()[0]["id"]
    r.close()
    return folder, rec, store, rid


def _runs(store):
    r = Records(store)
    try:
        return [x["id"] for x in r.runs()]
    finally:
        r.close()


BOMB = (
    "[&a [x, x, x, x, x, x, x, x, x], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a], "
    "&c [*b, *b, *b, *b, *b, *b, *b, *b, *b], [*c, *c, *c, *c, *c, *c, *c, *c, *c]]"
)
SETS = {
    "alias bomb": ["--set", "optimizer.lr=" + BOMB],
    "block alias bomb": ["--set", "seed=" + "\n".join(
        ["a: &a [1, 2, 3, 4, 5, 6, 7, 8]"] + [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join(
            [f"*{chr(97 + i)}"] * 8) + "]" for i in range(8)])],
    "20,000-deep list": ["--set", "seed=" + "[" * 20_000 + "]" * 20_000],
    "20,000-deep map": ["--set", "seed=" + "{a: " * 20_000 + "1" + "}" * 20_000],
    "deep block map": ["--set", "seed=" + "".join(f"\n{' ' * i}k:" for i in range(400))],
    "5,000-digit number": ["--set", "seed=" + "9" * 5000],
    "5,000-digit float": ["--set", "optimizer.lr=0." + "1" * 5000],
    "5,000-digit in a list": ["--set", "optimizer.betas=[0.9, " + "7" * 5000 + "]"],
    "very long path": ["--set", ".".join(["k"] * 20_000) + "=1"],
    "very long key": ["--set", "a" * 100_000 + "=1"],
    "2,000 flags": [x for i in range(2000) for x in ("--set", f"seed={i}")],
    "a tag": ["--set", "seed=!!python/object:os.system x"],
    "no equals": ["--set", "seed"],
    "empty key": ["--set", "optimizer..lr=1"],
    "control characters": ["--set", "seed\x1b[2J\x00=1"],
    "huge value": ["--set", "data.source=" + "x" * 2_000_000],
    # under the length bound, each bound of its own
    "450-deep list": ["--set", "seed=" + "[" * 450 + "]" * 450],
    "150-deep map": ["--set", "seed=" + "{a: " * 150 + "1" + "}" * 150],
    "500-digit number": ["--set", "seed=" + "9" * 500],
    "60-digit float": ["--set", "optimizer.lr=0." + "1" * 60],
    "20-key path": ["--set", ".".join(["k"] * 20) + "=1"],
    "a python tag": ["--set", "seed=!!python/name:os.system"],
    "an alias bomb under 1,000 characters": ["--set", "seed=" + BOMB],
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SETS))
def test_hostile_set_values_are_refused(trained, tmp_path, capsys, case):
    folder, rec, store, _ = trained
    before = _runs(store)
    sentinel = Sentinel(tmp_path / "outside")
    line = refuse(capsys, ["train", rec, "--device", "reference", "--store", store,
                           "--max-steps", "1", *SETS[case]])  # fmt: skip
    assert "--set" in line or "edits" in line, line
    assert not sentinel.secret_leaked(line)
    sentinel.unchanged()
    assert _runs(store) == before


def test_a_set_value_that_breaks_the_record_is_told_at_its_place(trained, capsys):
    _, rec, store, _ = trained
    refuse(capsys, ["train", rec, "--device", "reference", "--store", store, "--set",
                    "optimizer.lr=[1, 2]"], "lr must be")  # fmt: skip


def test_valid_set_values_still_train(trained, tmp_path, capsys):
    _, rec, _, _ = trained
    store = tmp_path / "fresh"
    assert main(["train", str(rec), "--device", "reference", "--store", str(store),
                 "--max-steps", "2", "--set", "optimizer.lr=0.005", "--set",
                 "optimizer.betas=[0.8, 0.99]", "--set", "seed=7", "--json"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "optimizer.lr=0.005" in out and len(_runs(store)) == 1


REFS = {
    "5,000-digit step": "@" + "9" * 5000,
    "negative step": "@-1",
    "weird pick": ":weird",
    "empty pick": ":",
    "two steps": "@1@2",
    "spaces": " @1",
    "path": "/../../etc/passwd",
    "sql": "' OR 1=1 --",
    "percent prefix": "%",
    "huge id": "a" * 100_000,
    "control characters": "\x1b[2J\x00",
    "long step": "@" + "1" * 25,
}


def _commands(store, ref, tmp):
    """Every command that takes a RUN, with ``ref`` in its place."""
    out = str(tmp / "out")
    return {
        "evaluate": ["evaluate", ref, "--store", store, "--device", "reference"],
        "predict": ["predict", ref, "--store", store, "--device", "reference"],
        "generate": ["generate", ref, "--store", store, "--device", "reference"],
        "export": ["export", ref, "--to", "safetensors", "--out", out + ".st", "--store", store],
        "resume": ["resume", ref, "--store", store, "--device", "reference"],
        "runs show": ["runs", "show", ref, "--store", store],
        "runs export": ["runs", "export", ref, "--store", store, "-o", out + ".tar"],
        "export-metrics": ["runs", "export-metrics", ref, "--store", store],
        "compare": ["compare", ref, ref, "--store", store],
        "import --record": ["import", out + ".st", "--record", ref, "--store", store],
    }


@pytest.mark.parametrize("case", sorted(REFS))
def test_hostile_run_references_are_refused_by_every_command(trained, tmp_path, capsys, case):
    _, _, store, rid = trained
    ref = REFS[case] if case in ("path", "sql", "percent prefix", "huge id",
                                 "control characters") else rid + REFS[case]  # fmt: skip
    # import --record needs a weights file to read first
    with open(tmp_path / "out.st", "wb") as f:
        head = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
        f.write(len(head).to_bytes(8, "little") + head + os.urandom(4))
    before = _runs(store)
    for name, argv in _commands(store, ref, tmp_path).items():
        line = refuse(capsys, argv)
        assert len(line) <= 400, (name, line)
    assert _runs(store) == before


def test_valid_references_still_work(trained, capsys):
    _, _, store, rid = trained
    for ref in (rid, rid[:10], f"{rid}@3", f"{rid}:best", f"{rid}:last"):
        assert main(["runs", "show", ref.split("@")[0].split(":")[0], "--store",
                     str(store)]) == 0  # fmt: skip
        assert main(["evaluate", ref, "--store", str(store), "--device", "reference"]) == 0
