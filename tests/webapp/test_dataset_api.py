"""The data panel's worker API: a CSV or text file to a record pinned by its sha256."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import random
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.data import load_data
from scellis.run.prepare import check_record, prepare_run
from scellis.sml import parse
from scellis.webapp import dataset_api, model_api

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()


def make_csv(rng: random.Random, n: int = 120, spell=repr) -> tuple[str, list[float]]:
    vals = [round(rng.gauss(50, 20), 3) for _ in range(n)]
    rows = ["date,level,label"] + [
        f"{1800 + i}-01-01,{spell(v)},x{rng.randint(0, 9)}" for i, v in enumerate(vals)
    ]
    return "\n".join(rows) + "\n", vals


def test_load_table_columns_kinds_and_series():
    text, vals = make_csv(random.Random(1))
    r = dataset_api.load_table("levels.csv", text)
    assert json.loads(json.dumps(r)) == r
    assert r["columns"] == ["date", "level", "label"] and r["rows"] == len(vals)
    assert r["numeric"] == ["level"] and r["datetime"] == {"date": "iso"}
    assert r["series"]["column"] == "level" and r["series"]["y"] == vals
    oracle = list(csv.reader(io.StringIO(text)))[1:9]
    assert r["preview"] == oracle
    with pytest.raises(ScellisError, match="not numeric"):
        dataset_api.load_table("levels.csv", text, column="label")


def test_dataset_from_pins_the_native_digest(tmp_path):
    text, vals = make_csv(random.Random(2))
    out = model_api.dataset_from(LSTM, "my levels.csv", text, column="level",
                                 datetime="date", folder=str(tmp_path))  # fmt: skip
    rec = out["record"]
    data = parse(rec).data["data"]
    assert data["column"] == "level" and data["datetime"] == "date"
    assert Path(data["source"]).read_text() == text and Path(data["source"]).name == "my_levels.csv"
    ds = load_data(data)  # the native connector re-reads the file and checks the pin
    assert ds.digest == data["sha256"] == out["dataset"]["hash"]
    assert ds.rows == len(vals) and out["dataset"]["train_windows"] == len(ds.x_train)
    # the record still validates, and the comments of the data section survive
    assert model_api.project(rec)["ok"], model_api.project(rec)["diagnostics"]
    assert "# input length in years" in rec and "# fitted on the training split only" in rec


def test_digest_depends_on_content_not_spelling(tmp_path):
    a, _ = make_csv(random.Random(5), spell=repr)
    b, _ = make_csv(random.Random(5), spell=lambda v: f"{v:.6f}")  # same numbers, new text
    assert a != b
    ha = dataset_api.dataset_from(LSTM, "a.csv", a, "level", folder=str(tmp_path))
    hb = dataset_api.dataset_from(LSTM, "b.csv", b, "level", folder=str(tmp_path))
    assert ha["dataset"]["hash"] == hb["dataset"]["hash"]
    c = a.replace(a.splitlines()[5].split(",")[1], "1234.5", 1)
    hc = dataset_api.dataset_from(LSTM, "c.csv", c, "level", folder=str(tmp_path))
    assert hc["dataset"]["hash"] != ha["dataset"]["hash"]


def test_changed_file_is_refused_and_option_edit_rehashes(tmp_path):
    text, _ = make_csv(random.Random(9))
    rec = dataset_api.dataset_from(LSTM, "s.csv", text, "level", folder=str(tmp_path))["record"]
    src = Path(parse(rec).data["data"]["source"])
    r = model_api.edit(rec, {"kind": "set_field", "block": "data", "field": "window", "value": 8})
    new = parse(r["text"]).data["data"]
    assert new["sha256"] != parse(rec).data["data"]["sha256"]
    assert load_data(new).digest == new["sha256"]
    src.write_text(text.replace(text.splitlines()[3].split(",")[1], "7.0", 1))
    with pytest.raises(ScellisError, match="data.sha256"):
        load_data(new)


def test_text_file(tmp_path):
    rng = random.Random(4)
    text = "".join(rng.choice("abcde fgh\n") for _ in range(3000))
    info = dataset_api.load_text("story.txt", text)
    assert info["chars"] == 3000 and info["vocab"] == len(set(text))
    char = (ROOT / "examples" / "char_transformer.sml").read_text()
    out = dataset_api.dataset_from(char, "story.txt", text, folder=str(tmp_path))
    data = parse(out["record"]).data["data"]
    assert data["format"] == "text"
    ds = load_data(data)
    assert ds.digest == data["sha256"]
    # the documented canonical form, computed here independently
    head = {"context": 32, "format": "scellis.text/1", "stride": 16, "val_fraction": 0.1}
    h = hashlib.sha256(json.dumps(head, separators=(",", ":")).encode() + b"\n" + text.encode())
    assert h.hexdigest() == data["sha256"]


def test_bad_files_are_clear_errors(tmp_path):
    with pytest.raises(ScellisError, match="empty"):
        dataset_api.load_table("e.csv", "")
    text, _ = make_csv(random.Random(3))
    with pytest.raises(ScellisError, match="choose the value column"):
        dataset_api.dataset_from(LSTM, "a.csv", text, folder=str(tmp_path))
    with pytest.raises(ScellisError, match="increasing times"):
        dataset_api.dataset_from(LSTM, "a.csv", text, "level", "label", folder=str(tmp_path))


def test_a_file_of_the_other_kind_is_refused(tmp_path):
    char = (ROOT / "examples" / "char_transformer.sml").read_text()
    text, _ = make_csv(random.Random(8))
    with pytest.raises(ScellisError, match="is for a text corpus .*context"):
        dataset_api.dataset_from(char, "s.csv", text, "level", folder=str(tmp_path))
    with pytest.raises(ScellisError, match="is for a CSV series .*column"):
        dataset_api.dataset_from(LSTM, "notes.txt", "abc " * 500, folder=str(tmp_path))
    assert not list(tmp_path.iterdir())  # nothing saved for a refused file


def test_the_run_trains_on_the_pinned_file(tmp_path, monkeypatch):
    # the run reads the record's data relative to the worker's folder, as in the tab
    monkeypatch.chdir(tmp_path)
    text, vals = make_csv(random.Random(12), n=120)
    rec = dataset_api.dataset_from(LSTM, "levels.csv", text, "level", "date")["record"]
    record = check_record(rec)
    pipe = prepare_run(record, "reference", epochs=1)
    assert pipe.dataset.digest == record["data"]["sha256"] and pipe.dataset.rows == len(vals)
    # the same windows the native connector cuts from the values (window 20, horizon 1)
    cut = round(len(vals) * 0.8)
    assert len(pipe.dataset.x_train) == cut - 20 and len(pipe.dataset.x_val) == len(vals) - cut - 20


def test_missing_cells_are_listed_and_the_policy_is_pinned(tmp_path):
    text, vals = make_csv(random.Random(4))
    lines = text.splitlines()
    for row in (3, 50):  # data rows, 1-based (line 0 is the header)
        cells = lines[row].split(",")
        lines[row] = ",".join([cells[0], "n/a", cells[2]])
    gappy = "\n".join(lines) + "\n"
    r = dataset_api.load_table("gappy.csv", gappy)
    assert r["missing"] == {"level": [3, 50]} and r["numeric"] == ["level"]
    assert r["series"]["y"][2] is None and r["series"]["y"][0] == vals[0]
    out = model_api.dataset_from(LSTM, "gappy.csv", gappy, "level", "date",
                                 folder=str(tmp_path), missing="mean")  # fmt: skip
    data = parse(out["record"]).data["data"]
    assert data["missing"] == "mean" and "warning" not in out["dataset"]
    assert load_data(data).digest == data["sha256"]


def test_a_header_only_csv_is_refused_plainly():
    with pytest.raises(ScellisError, match="header row .* but no data rows"):
        dataset_api.load_table("h.csv", "date,level\n")


def test_data_options_set_after_pinning_repin_and_follow_the_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text, vals = make_csv(random.Random(21), n=150)
    first = dataset_api.dataset_from(LSTM, "levels.csv", text, "level", "date")
    window, frac = random.Random().randrange(5, 30), 0.3
    opts = {"window": window, "val_fraction": frac, "normalise": "minmax"}
    out = dataset_api.dataset_from(first["record"], "levels.csv", text, "level", "date",
                                   options=opts)  # fmt: skip
    record = check_record(out["record"])
    assert {k: record["data"][k] for k in opts} == opts
    assert record["inputs"]["window"]["shape"][1] == window  # the model reads that length
    pipe = prepare_run(record, "reference", epochs=1)
    assert pipe.dataset.digest == record["data"]["sha256"] == out["dataset"]["hash"]
    assert out["dataset"]["hash"] != first["dataset"]["hash"]
    # the native connector's windows on those options
    cut = round(len(vals) * (1 - frac))
    assert len(pipe.dataset.x_train) == cut - window == out["dataset"]["train_windows"]
    assert out["dataset"]["data"]["column"] == "level"
    with pytest.raises(ScellisError, match="window must be a whole number of rows"):
        dataset_api.dataset_from(LSTM, "levels.csv", text, "level", options={"window": 0})
    with pytest.raises(
        ScellisError, match="normalise must be standard, minmax, none, window, change or season"
    ):
        dataset_api.dataset_from(LSTM, "levels.csv", text, "level", options={"normalise": "l2"})


def test_record_data_previews_the_records_own_file(tmp_path, monkeypatch):
    """An example's bundled series and text, and a file pinned before, preview as the
    same file picked by hand would; a record naming no readable file previews nothing."""
    from scellis.data.record import BUNDLED

    got = model_api.record_data(LSTM)
    bundled = (BUNDLED / "sunspots_yearly.csv").read_text()
    assert got == dataset_api.load_table("sunspots_yearly.csv", bundled, "sunspots")
    char = (ROOT / "examples" / "char_transformer.sml").read_text()
    text = (BUNDLED / "python_help_topics.txt").read_text()
    assert model_api.record_data(char) == dataset_api.load_text("python_help_topics.txt", text)
    monkeypatch.chdir(tmp_path)
    csv_text, vals = make_csv(random.Random(4))
    pinned = dataset_api.dataset_from(LSTM, "levels.csv", csv_text, column="level")["record"]
    assert model_api.record_data(pinned)["series"]["y"] == vals
    (tmp_path / "datasets" / "levels.csv").unlink()
    assert model_api.record_data(pinned) is None
    assert model_api.record_data("not: [a record") is None


def test_leaving_the_season_mode_drops_its_season(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = random.Random()
    period = rng.choice([4, 6, 12])
    rows = ["date,level"] + [
        f"{1800 + i}-01-01,{50 + 10 * math.sin(2 * math.pi * i / period) + rng.gauss(0, 1):.3f}"
        for i in range(160)
    ]
    text = "\n".join(rows) + "\n"
    opts = {"window": 2 * period + 1, "normalise": "season"}
    seasonal = dataset_api.dataset_from(LSTM, "s.csv", text, "level", "date", options=opts)
    assert check_record(seasonal["record"])["data"]["season"] >= 2
    other = rng.choice(["window", "change", "minmax"])
    out = dataset_api.dataset_from(seasonal["record"], "s.csv", text, "level", "date",
                                   options={"normalise": other})  # fmt: skip
    record = check_record(out["record"])
    assert "season" not in record["data"] and record["data"]["normalise"] == other
    assert record["data"]["window"] == opts["window"]  # the rest of the section is kept
    pipe = prepare_run(record, "reference", epochs=1)
    assert pipe.dataset.digest == record["data"]["sha256"] == out["dataset"]["hash"]
