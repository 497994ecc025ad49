"""Metrics in a real run (reference device): honoured from the record, recorded per
validation, in the data's units (checked against the checkpointed model's own
predictions and NumPy), a final validation after --max-steps, early stopping on a
metric, and the baselines beside them."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from scellis.autograd import no_grad
from scellis.cli.main import main
from scellis.run.reference import open_run
from scellis.runtime.creation import tensor
from scellis.store.records import Records
from storeutil import write_record

EVAL = "eval: { every: 1, batch_size: 16 }"


def _record(tmp_path, section: str):
    rec = write_record(tmp_path)
    rec.write_text(rec.read_text().replace(EVAL, section))
    return rec


def _train(capsys, rec, store, *extra):
    argv = ["train", str(rec), "--device", "reference", "--store", str(store), "--json", *extra]
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return [json.loads(x) for x in out.out.splitlines() if x.startswith("{")]


def test_metrics_are_the_models_errors_in_the_datas_units(tmp_path, capsys):
    rec = _record(tmp_path, "eval: { every: 4, metrics: [mae, rmse, r2] }")
    evs = _train(capsys, rec, tmp_path / "s", "--max-steps", "10", "--checkpoint-every", "10")
    evals = [e for e in evs if e["kind"] == "eval"]
    # every 4 steps, and the run's last step validated although 10 is no multiple of 4
    assert [e["step"] for e in evals] == [4, 8, 10]
    last = evals[-1]
    run = open_run(tmp_path / "s", f"{evs[-1]['run']}@10")
    ds = run.dataset()
    model = run.model("reference")
    with no_grad():
        pred = np.array(asyncio.run(model(tensor(ds.x_val, device="reference")).read()))
    ((shift, scale),) = ds.stats.values()
    p, t = pred * scale + shift, np.array(ds.y_val) * scale + shift
    assert last["metrics"]["mae"] == pytest.approx(np.abs(p - t).mean(), rel=1e-6)
    assert last["metrics"]["rmse"] == pytest.approx(np.sqrt(((p - t) ** 2).mean()), rel=1e-6)
    # persistence: each window's last value, in the same units, on the same windows
    last_in = np.array([w[-1][0] for w in ds.x_val]) * scale + shift
    want = np.abs(last_in[:, None] - t).mean()
    assert last["baselines"]["persistence"]["mae"] == pytest.approx(want, rel=1e-9)
    records = Records(tmp_path / "s")
    try:
        stored = records.metrics(evs[-1]["run"], "val_mae")
    finally:
        records.close()
    assert stored == [(e["step"], e["metrics"]["mae"]) for e in evals]


def test_early_stopping_watches_a_metric(tmp_path, capsys):
    rec = _record(
        tmp_path,
        "eval: { every: 1, metrics: [mae],"
        " early_stopping: { metric: val_mae, patience: 1, min_delta: 1000 } }",
    )
    evs = _train(capsys, rec, tmp_path / "s")
    stop = [e for e in evs if e["kind"] == "early_stop"]
    assert len(stop) == 1 and "val_mae" in stop[0]["reason"]
    assert evs[-1]["kind"] == "end" and evs[-1]["stopped_early"] and evs[-1]["steps"] == 2


def test_a_metric_of_the_wrong_kind_is_refused(tmp_path, capsys):
    rec = _record(tmp_path, "eval: { metrics: [accuracy] }")
    code = main(["train", str(rec), "--device", "reference", "--store", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 2 and "accuracy is a classification metric" in err and "Traceback" not in err
