"""``scellis runs --dataset --record --model --where``: the runs a query selects are the
ones the stored metrics say, and a hostile condition is one line and exit 2."""

from __future__ import annotations

import json
import math
import re

import pytest

from scellis.cli.main import main
from scellis.store.query import MAX_TERMS, RunQuery, parse_where
from scellis.store.records import Records
from storeutil import write_record


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Four short runs: two seeds and two rates of one model, one of another model on
    other data (a longer series)."""
    root = tmp_path_factory.mktemp("q")
    store = root / "s"
    for i, (seed, lr) in enumerate([(11, 0.02), (12, 0.02), (11, 0.05)]):
        folder = root / f"r{i}"
        folder.mkdir()
        rec = write_record(folder, seed=seed, lr=lr)
        text = rec.read_text().replace("batch_size: 16 }", "batch_size: 16, metrics: [mae] }")
        rec.write_text(text)
        assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                     "--max-steps", str(3 + i)]) == 0  # fmt: skip
    other = root / "other"
    other.mkdir()
    rec = write_record(other, seed=5)
    rec.write_text(rec.read_text().replace("test/tiny_lstm@1", "test/other@2"))
    with open(other / "series.csv", "a") as f:
        f.write("1.5\n2.5\n")
    assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                 "--max-steps", "2"]) == 0  # fmt: skip
    return store


def _truth(store) -> list[dict]:
    """Each run's row and every metric series, read straight from the records."""
    rec = Records(store)
    try:
        out = []
        for r in rec.runs():
            series = {n: [v for _, v in rec.metrics(r["id"], n)] for n in rec.metric_names(r["id"])}
            out.append({**r, "series": series})
        return out
    finally:
        rec.close()


def _value(run: dict, how: str, name: str):
    vals = [v for v in run["series"].get(name, []) if v is not None]
    if not vals:
        return None
    return {"last": vals[-1], "min": min(vals), "max": max(vals)}[how]


def _holds(run: dict, cond: str) -> bool:
    """The condition evaluated in Python over the run's series (the oracle)."""
    env = {}

    def sub(m):
        how, name = (m.group(1), m.group(2)) if m.group(2) else ("last", m.group(3))
        key = f"v{len(env)}"
        env[key] = _value(run, how, name)
        return key

    py = re.sub(r"\b(min|max)\((\w+)\)|\b(?!and\b|or\b)([A-Za-z_]\w*)\b", sub, cond)
    # a comparison with a missing value is false, whatever its operator
    py = re.sub(r"(v\d+)\s*(<=|>=|==|!=|<|>)\s*([-+.\deE]+)",
                lambda m: f"({m.group(1)} is not None and {m.group(1)} {m.group(2)} {m.group(3)})",
                py)  # fmt: skip
    py = re.sub(r"([-+.\deE]+)\s*(<=|>=|==|!=|<|>)\s*(v\d+)",
                lambda m: f"({m.group(3)} is not None and {m.group(1)} {m.group(2)} {m.group(3)})",
                py)  # fmt: skip
    return bool(eval(py, {}, env))  # the test's own constants only


def _listed(capsys, store, *args) -> list[str]:
    code, out, err = _cli(capsys, "runs", "--store", str(store), "--json", *args)
    assert code == 0, err
    return [r["id"] for r in json.loads(out)]


def _thresholds(truth, how, name):
    vals = sorted({_value(r, how, name) for r in truth} - {None})
    # between each pair of neighbours: every split of the runs is exercised
    return [(a + b) / 2 for a, b in zip(vals, vals[1:])]


def test_where_selects_what_the_metrics_say(store, capsys):
    truth = _truth(store)
    assert len(truth) == 4
    conds = []
    for how, name in (("last", "loss"), ("min", "loss"), ("max", "loss"), ("last", "val_mae")):
        ref = name if how == "last" else f"{how}({name})"
        for t in _thresholds(truth, how, name):
            conds += [f"{ref} < {t!r}", f"{t!r} <= {ref}"]
    ts = _thresholds(truth, "last", "loss")
    conds += [f"loss < {ts[0]!r} or (val_mae > 0 and loss > {ts[-1]!r})",
              f"val_mae >= 0 and min(loss) != {_value(truth[0], 'min', 'loss')!r}",
              f"lr == {_value(truth[0], 'last', 'lr')!r}", "no_such_metric < 1e9"]  # fmt: skip
    sizes = set()
    for cond in conds:
        want = [r["id"] for r in truth if _holds(r, cond)]
        assert _listed(capsys, store, "--where", cond) == want, cond
        sizes.add(len(want))
    assert len(sizes) >= 3  # the conditions split the runs in several ways


def test_matched_values_and_table(store, capsys):
    truth = {r["id"]: r for r in _truth(store)}
    code, out, _ = _cli(capsys, "runs", "--store", str(store), "--json", "--where",
                        "min(loss) > -1 and val_mae > -1")  # fmt: skip
    rows = json.loads(out)
    assert rows
    for row in rows:
        run = truth[row["id"]]
        assert row["matched"] == {"min(loss)": _value(run, "min", "loss"),
                                  "val_mae": _value(run, "last", "val_mae")}  # fmt: skip
    code, out, _ = _cli(capsys, "runs", "--store", str(store), "--where", "val_mae > -1")
    assert code == 0 and "val_mae" in out.splitlines()[0]
    code, out, _ = _cli(capsys, "runs", "--store", str(store), "--where", "loss < -1e30")
    assert code == 0 and out.strip() == f"no runs in {store} match"


def test_dataset_record_and_model_filters(store, capsys):
    truth = _truth(store)
    for key, flag in (("dataset_hash", "--dataset"), ("record_hash", "--record")):
        for r in truth:
            for n in (6, 64):
                want = [x["id"] for x in truth if x[key].startswith(r[key][:n])]
                assert _listed(capsys, store, flag, r[key][:n].upper() if n == 6 else r[key][:n]) \
                    == want  # fmt: skip
    assert len({r["dataset_hash"] for r in truth}) == 2
    lstm = [r["id"] for r in truth if r["model_id"] == "test/tiny_lstm@1"]
    assert _listed(capsys, store, "--model", "test/tiny_lstm") == lstm and len(lstm) == 3
    assert _listed(capsys, store, "--model", "test/tiny_lstm@1") == lstm
    assert _listed(capsys, store, "--model", "test/tiny_lstm@2") == []
    assert _listed(capsys, store, "--model", "test/tiny") == []  # a name, not a prefix
    both = [
        r["id"]
        for r in truth
        if r["model_id"] == "test/tiny_lstm@1"
        and r["dataset_hash"] == truth[0]["dataset_hash"]
        and _holds(r, "loss < 1e9")
    ]
    assert _listed(capsys, store, "--model", "test/tiny_lstm", "--dataset",
                   truth[0]["dataset_hash"][:8], "--where", "loss < 1e9") == both  # fmt: skip


HOSTILE = [
    "loss < 1; DROP TABLE runs",
    "loss < 1) OR 1=1 --",
    "loss < 1 OR '1'='1'",
    "name = 'x' or 1 = 1",
    "loss < 1 /* x */",
    "loss < 0x10",
    "loss < nan",
    "loss < inf",
    "loss < 1e999",
    "loss <",
    "< 1",
    "1 < 2",
    "loss 1",
    "loss < 1 and",
    "and loss < 1",
    "min(loss < 1",
    "min() < 1",
    "(loss < 1",
    "loss < 1)",
    "",
    "   ",
    "loss\x00 < 1",
    "lo$s < 1",
    "val_mäe < 1",
    "(" * 9 + "loss < 1" + ")" * 9,
    " or ".join(["loss < 1"] * (MAX_TERMS + 1)),
    "loss < " + "1" * 500,
    "x" * 70 + " < 1",
]


@pytest.mark.parametrize("cond", HOSTILE)
def test_hostile_where_is_one_line_and_exit_2(store, capsys, cond):
    before = _truth(store)
    code, out, err = _cli(capsys, "runs", "--store", str(store), "--where", cond)
    assert code == 2 and out == ""
    assert err.startswith("scellis: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and _truth(store) == before


def test_bad_filters_are_refused(store, capsys):
    for args in (["--dataset", "zz"], ["--record", "a'b"], ["--dataset", "a" * 65],
                 ["--model", "x' or '1"], ["--where", "loss < 1", "show", "last"]):  # fmt: skip
        code, out, err = _cli(capsys, "runs", "--store", str(store), *args)
        assert code == 2 and err.startswith("scellis: error: ") and err.count("\n") == 1, args


def test_parsed_condition_binds_every_user_value():
    cond = "min(val_mae) < 0.5 or (loss >= -2 and 3 > max(lr))"
    q = RunQuery(where=cond, model="ns/m", dataset="ABC")
    cols, col_params, clause, params = q.sql()
    text = cols + clause
    # nothing the user typed reaches the SQL text itself
    for word in ("val_mae", "loss", "lr", "0.5", "-2", "3", "ns/m", "abc", "ABC"):
        assert word not in text.replace("runs.id", "")
    assert params[-6:] == ["val_mae", 0.5, "loss", -2.0, "lr", 3.0]
    assert [v.label for v in q.values] == ["min(val_mae)", "loss", "max(lr)"]
    tree = parse_where("3 > max(lr)")
    assert tree.op == "<" and tree.number == 3.0 and math.isfinite(tree.number)
