"""Using a trained run from the command line: ``scellis evaluate`` and ``scellis predict``
against the run's own validation, the raw CSV and the checkpointed model's forward."""

from __future__ import annotations

import asyncio
import csv
import json
import os
from datetime import date, timedelta

import numpy as np
import pytest

from scellis.autograd import no_grad
from scellis.cli.main import main
from scellis.run.reference import open_run
from scellis.runtime.creation import tensor

RECORD = """\
model: test/daily@1
inputs:
  window: { shape: [batch, 5, 1], dtype: f32 }
blocks:
  lstm: { block_id: nn/lstm, in: window, input_size: 1, hidden_size: 4, output: last }
  head: { block_id: nn/regression_head, in: lstm, in_features: 4, n_outputs: 1 }
outputs: [head]
optimizer: { block_id: training/optimizer/adam, lr: 0.02 }
loss: { block_id: training/loss/mse }
epochs: 2
batch_size: 8
determinism_tier: debug
seed: 3
data: { source: flow.csv, column: flow, datetime: day, window: 5, val_fraction: 0.25 }
eval: { metrics: [mae, rmse] }
"""


def _csv(path, n, start=date(2024, 1, 1), seed=0):
    rng = np.random.default_rng(seed)
    values = 50 + 10 * np.sin(np.arange(n) / 3.0) + rng.normal(0, 2, n)
    rows = ["day,flow"] + [f"{start + timedelta(days=i)},{v:.4f}" for i, v in enumerate(values)]
    path.write_text("\n".join(rows) + "\n")
    return values


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("use")
    _csv(folder / "flow.csv", 80)
    (folder / "daily.sml").write_text(RECORD)
    store = folder / "s"
    code = main(["train", str(folder / "daily.sml"), "--device", "reference", "--store",
                 str(store), "--json"])  # fmt: skip
    assert code == 0
    return folder, store


def _cli(capsys, *argv):
    code = main([*map(str, argv)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_evaluate_is_the_runs_own_last_validation(run, capsys):
    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    code, out, err = _cli(capsys, "evaluate", rid, "--store", store, "--device", "reference",
                          "--json")  # fmt: skip
    assert code == 0, err
    got = json.loads(out)
    # the oracle: the training run's own metrics rows at its last step
    code, out, _ = _cli(capsys, "runs", "show", rid, "--store", store, "--json")
    shown = json.loads(out)
    assert got["step"] == shown["step"]
    assert got["val_loss"] == pytest.approx(shown["val_loss"], rel=1e-12)
    assert set(got["metrics"]) == {"mae", "rmse"} and got["baselines"]["persistence"]["mae"] > 0


def test_predict_rows_are_the_models_forward_in_the_csvs_units(run, capsys, tmp_path):
    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    out_csv = tmp_path / "p.csv"
    code, _, err = _cli(capsys, "predict", rid, "--store", store, "--device", "reference",
                        "--horizon", "3", "--out", out_csv)  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(out_csv.open()))
    raw = {r["day"]: float(r["flow"]) for r in csv.DictReader((folder / "flow.csv").open())}
    past = [r for r in rows if r["actual"]]
    assert len(past) == 80 - 5 and past[0]["date"].startswith("2024-01-06")
    for r in past:  # dates as the file writes them: no "T00:00:00" added to a date
        assert float(r["actual"]) == pytest.approx(raw[r["date"]], abs=1e-9)
    # the model itself on the same windows, denormalised by hand
    trained = open_run(store, rid)
    ds = trained.dataset()
    model = trained.model("reference")
    with no_grad():
        pred = np.array(asyncio.run(model(tensor(ds.x_val, device="reference")).read()))
    ((shift, scale),) = ds.stats.values()
    by_date = {r["date"]: float(r["predicted"]) for r in past}
    for s, p in zip(ds.val_starts, pred[:, 0]):
        day = (date(2024, 1, 1) + timedelta(days=s + 5)).isoformat()
        assert by_date[day] == pytest.approx(p * scale + shift, rel=1e-9)
    future = [r for r in rows if not r["actual"]]
    assert [r["date"] for r in future] == ["2024-03-21", "2024-03-22", "2024-03-23"]


def test_evaluate_on_another_file_uses_the_runs_normalisation(run, capsys, tmp_path):
    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    other = tmp_path / "other.csv"
    values = _csv(other, 30, seed=9)
    code, out, err = _cli(capsys, "evaluate", rid, "--store", store, "--data", other,
                          "--device", "reference", "--json")  # fmt: skip
    assert code == 0, err
    got = json.loads(out)
    trained = open_run(store, rid)
    ((shift, scale),) = trained.dataset().stats.values()
    z = (np.round(values, 4) - shift) / scale
    windows = np.array([z[s : s + 5] for s in range(25)])[..., None]
    with no_grad():
        p = np.array(asyncio.run(trained.model("reference")(
            tensor(windows.tolist(), device="reference")).read()))[:, 0]  # fmt: skip
    want = np.abs(p * scale + shift - np.round(values, 4)[5:]).mean()
    assert got["windows"] == 25 and got["metrics"]["mae"] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(
    "text, words",
    [
        ("day,other\n2024-01-01,1\n", "no column 'flow'"),
        ("day,flow\n2024-01-01,1\n2024-01-02,2\n", "too few for one window"),
        ("day,flow\n2024-01-01,abc\n", "not a number"),
    ],
)
def test_bad_data_files_are_one_clear_line(run, capsys, tmp_path, text, words):
    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    code, _, err = _cli(capsys, "predict", rid, "--store", store, "--data", bad, "--device",
                        "reference")  # fmt: skip
    assert code == 2 and words in err and "Traceback" not in err and err.count("\n") == 1


def test_scellis_load_and_export_of_a_run_give_the_trained_models_outputs(run, capsys, tmp_path):
    import importlib.util  # noqa: PLC0415  (the exported module is a file of its own)

    import torch  # noqa: PLC0415  (the oracle: the exported module under PyTorch)

    import scellis as sc  # noqa: PLC0415

    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    trained = sc.load(f"{rid}:best", store=str(store))
    ds = trained.run.dataset()
    x = ds.x_val[:7]
    with no_grad():
        ours = np.array(asyncio.run(trained(tensor(x, device="reference")).read()))
    code, _, err = _cli(capsys, "export", f"{rid}:best", "--store", store, "--to", "torch",
                        "--out", tmp_path / "tm")  # fmt: skip
    assert code == 0, err
    spec = importlib.util.spec_from_file_location("exported_run", tmp_path / "tm" / "model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = mod.Model()
    m.load_state_dict(torch.load(tmp_path / "tm" / "state_dict.pt", weights_only=True))
    m.eval()
    theirs = m(torch.tensor(x, dtype=torch.float32)).detach().numpy()
    assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    future = trained.forecast(2)
    assert [r["horizon"] for r in future] == [1, 2] and all(r["actual"] is None for r in future)
    # a file saved with sc.save still loads as a file
    sc.save({"w": tensor([1.0, 2.0])}, tmp_path / "w.safetensors")
    assert sc.load(tmp_path / "w.safetensors")["w"].tolist() == [1.0, 2.0]


def test_import_record_takes_a_run(run, capsys, tmp_path):
    from safetensors.numpy import load_file  # noqa: PLC0415  (the oracle reader)

    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    assert _cli(capsys, "export", rid, "--store", store, "--to", "safetensors", "--out",
                tmp_path / "a.safetensors")[0] == 0  # fmt: skip
    code, _, err = _cli(capsys, "import", tmp_path / "a.safetensors", "--record", rid,
                        "--store", store, "--to", tmp_path / "back.sml")  # fmt: skip
    assert code == 0, err
    assert f"from run {rid}" in (tmp_path / "back.sml").read_text()
    assert _cli(capsys, "export", tmp_path / "back.sml", "--store", store, "--to",
                "safetensors", "--out", tmp_path / "b.safetensors")[0] == 0  # fmt: skip
    a, b = load_file(tmp_path / "a.safetensors"), load_file(tmp_path / "b.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_metrics_gives_every_recorded_value(run, capsys, tmp_path, fmt):
    from scellis.store.records import Records  # noqa: PLC0415

    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    path = tmp_path / f"m.{fmt}"
    code, _, err = _cli(capsys, "runs", "export-metrics", rid, "--store", store, "--format",
                        fmt, "-o", path)  # fmt: skip
    assert code == 0, err
    got: dict = {}
    if fmt == "csv":
        for row in csv.DictReader(path.open()):
            for name, value in row.items():
                if name != "step" and value != "":
                    got.setdefault(name, []).append((int(row["step"]), float(value)))
    else:
        for line in path.read_text().splitlines():
            d = json.loads(line)
            got.setdefault(d["name"], []).append((d["step"], d["value"]))
    r = Records(store)
    try:
        want = {n: r.metrics(rid, n) for n in r.metric_names(rid)}
    finally:
        r.close()
    assert {"loss", "lr", "val_loss", "val_mae", "val_rmse"} <= set(want)
    assert {n: sorted(v) for n, v in got.items()} == {n: sorted(v) for n, v in want.items()}


def test_export_metrics_as_tensorboard_events(run, capsys, tmp_path):
    """Read back with TensorBoard's own EventAccumulator: every recorded value, at its
    step, as an f32 scalar (what TensorBoard stores)."""
    from tensorboard.backend.event_processing.event_accumulator import (  # noqa: PLC0415
        EventAccumulator,
    )

    from scellis.store.records import Records  # noqa: PLC0415

    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    logdir = tmp_path / "tb"
    code, out, err = _cli(capsys, "runs", "export-metrics", rid, "--store", store,
                          "--format", "tensorboard", "--out", logdir)  # fmt: skip
    assert code == 0, err
    assert f"tensorboard --logdir {logdir}" in out
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    r = Records(store)
    try:
        want = {n: r.metrics(rid, n) for n in r.metric_names(rid)}
    finally:
        r.close()
    assert set(acc.Tags()["scalars"]) == {n for n, pts in want.items() if pts}
    for name, pts in want.items():
        got = [(e.step, e.value) for e in acc.Scalars(name)]
        expected = [(s, float(np.float32(v))) for s, v in sorted(pts) if v is not None]
        assert sorted(got) == expected, name


def test_tensorboard_export_without_the_package_names_the_extra(run, capsys, tmp_path,
                                                               monkeypatch):  # fmt: skip
    import sys  # noqa: PLC0415

    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    for name in [m for m in sys.modules if m.split(".")[0] == "tensorboard"] + ["tensorboard"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    code, _, err = _cli(capsys, "runs", "export-metrics", rid, "--store", store,
                        "--format", "tensorboard", "--out", tmp_path / "tb")  # fmt: skip
    assert code == 2
    assert "pip install 'scellis[tensorboard]'" in err and "Traceback" not in err
    code, _, err = _cli(capsys, "runs", "export-metrics", rid, "--store", store,
                        "--format", "tensorboard")  # fmt: skip
    assert code == 2 and "add --out DIR" in err


def test_export_metrics_to_what_is_not_a_file_is_one_line_and_writes_nothing(run, capsys, tmp_path):
    folder, store = run
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    os.mkfifo(tmp_path / "pipe")  # writing into it would wait for a reader forever
    (tmp_path / "afile").write_text("kept")
    cases = [
        ("csv", tmp_path / "pipe", "it is a FIFO (named pipe), not a regular file"),
        ("jsonl", tmp_path, "it is a folder, not a regular file"),
        ("csv", "", "--out is empty"),
        ("tensorboard", "", "--out is empty"),
        ("tensorboard", tmp_path / "afile", "not a folder"),
        ("csv", tmp_path / "no" / "m.csv", "cannot write"),
    ]
    for fmt, out, words in cases:
        code, _, err = _cli(capsys, "runs", "export-metrics", rid, "--store", store,
                            "--format", fmt, "--out", out)  # fmt: skip
        assert code == 2 and words in err and "Traceback" not in err, (fmt, out, err)
        assert len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "pipe"]
    assert (tmp_path / "afile").read_text() == "kept"
    code, _, err = _cli(capsys, "runs", "export", rid, "--store", store, "-o", tmp_path / "pipe")
    assert code == 2 and "not a regular file" in err


def test_a_month_end_series_forecasts_month_ends(tmp_path, capsys):
    """Months have no fixed length: a series of month ends goes on at month ends (the
    median gap, 31 days, would drift: 2025-03-03 after 2025-01-31)."""
    import calendar  # noqa: PLC0415

    days = [date(2022 + m // 12, m % 12 + 1, 1) for m in range(36)]
    ends = [d.replace(day=calendar.monthrange(d.year, d.month)[1]) for d in days]
    rng = np.random.default_rng(2)
    rows = ["day,flow"] + [f"{d},{50 + rng.normal(0, 5):.3f}" for d in ends]
    (tmp_path / "flow.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "m.sml").write_text(RECORD.replace("epochs: 2", "epochs: 1"))
    store = tmp_path / "s"
    assert main(["train", str(tmp_path / "m.sml"), "--device", "reference", "--store",
                 str(store), "--json"]) == 0  # fmt: skip
    capsys.readouterr()
    code, out, _ = _cli(capsys, "runs", "--store", store, "--json")
    rid = json.loads(out)[0]["id"]
    code, out, err = _cli(capsys, "predict", rid, "--store", store, "--horizon", "4",
                          "--device", "reference", "--json")  # fmt: skip
    assert code == 0, err
    future = [json.loads(x)["date"][:10] for x in out.splitlines()][-4:]
    assert future == ["2025-01-31", "2025-02-28", "2025-03-31", "2025-04-30"]
