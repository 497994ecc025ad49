"""``scellis predict`` on series shaped as users keep them: several feature columns with
the target not last, and month-end dates. Checked against the checkpointed model's
forward on windows cut and normalised by hand with NumPy, and NumPy's calendar."""

from __future__ import annotations

import asyncio
import calendar
import csv
import json
from datetime import datetime

import numpy as np

from scellis.autograd import no_grad
from scellis.cli.main import main
from scellis.run.reference import open_run
from scellis.runtime.creation import tensor

RECORD = """\
model: test/shapes@1
inputs:
  window: {{ shape: [batch, 6, {width}], dtype: f32 }}
blocks:
  lstm: {{ block_id: nn/lstm, in: window, input_size: {width}, hidden_size: 4, output: last }}
  head: {{ block_id: nn/regression_head, in: lstm, in_features: 4, n_outputs: {outputs} }}
outputs: [head]
optimizer: {{ block_id: training/optimizer/adam, lr: 0.02 }}
loss: {{ block_id: training/loss/mse }}
epochs: 1
batch_size: 8
determinism_tier: debug
seed: 1
data: {{ source: series.csv, datetime: month, window: 6, val_fraction: 0.25, {columns} }}
"""


def _month_ends(n: int) -> list[str]:
    firsts = np.datetime64("2016-02", "M") + np.arange(n)
    return [str(d - np.timedelta64(1, "D")) for d in firsts.astype("datetime64[D]")]


def _train(tmp_path, capsys, header, rows, width, columns, outputs=1):
    (tmp_path / "series.csv").write_text("\n".join([header, *rows]) + "\n")
    (tmp_path / "r.sml").write_text(RECORD.format(width=width, columns=columns, outputs=outputs))
    store = tmp_path / "s"
    assert main(["train", str(tmp_path / "r.sml"), "--device", "reference", "--store",
                 str(store), "--json"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    return store, json.loads(capsys.readouterr().out)[0]["id"]


def _predict(capsys, store, rid, *extra):
    code = main(["predict", rid, "--store", str(store), "--device", "reference", *extra])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_several_features_with_the_target_first_predict_every_row(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n = 48
    table = np.column_stack([100 + rng.normal(0, 5, n).cumsum(), rng.normal(20, 3, n),
                             rng.integers(0, 2, n)])  # fmt: skip
    dates = _month_ends(n)
    rows = [f"{d},{a:.3f},{b:.3f},{c:.0f}" for d, (a, b, c) in zip(dates, table)]
    store, rid = _train(tmp_path, capsys, "month,sales,temp,promo", rows, 3,
                        "features: [temp, promo, sales], target: sales")  # fmt: skip
    code, out, err = _predict(capsys, store, rid, "--json")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    values = np.round(table, 3)[:, [1, 2, 0]]  # the file's numbers, in the record's order
    cut = round(n * 0.75)
    mean, std = values[:cut].mean(0), values[:cut].std(0)
    std[std == 0] = 1.0
    z = (values - mean) / std
    windows = np.stack([z[s : s + 6] for s in range(n - 6 + 1)])
    model = open_run(store, rid).model("reference")
    with no_grad():
        pred = np.array(asyncio.run(model(tensor(windows.tolist(), device="reference")).read()))
    want = pred[:-1, 0] * std[2] + mean[2]  # the last window predicts past the file
    assert [r["date"][:10] for r in got] == dates[6:]
    assert np.allclose([r["predicted"] for r in got], want, rtol=1e-6)
    assert np.allclose([r["actual"] for r in got], values[6:, 2], rtol=1e-12)
    code, _, err = _predict(capsys, store, rid, "--horizon", "2")
    assert code == 2 and "needs the future of every input" in err and "Traceback" not in err


def test_a_month_end_series_is_forecast_at_the_next_month_ends(tmp_path, capsys):
    rng = np.random.default_rng(8)
    dates = _month_ends(40)
    rows = [f"{d},{v:.3f}" for d, v in zip(dates, 50 + rng.normal(0, 4, 40).cumsum())]
    store, rid = _train(tmp_path, capsys, "month,flow", rows, 1, "column: flow")
    code, _, err = _predict(capsys, store, rid, "--horizon", "14", "--out", tmp_path / "p.csv")
    assert code == 0, err
    future = [r["date"][:10] for r in csv.DictReader((tmp_path / "p.csv").open())
              if not r["actual"]]  # fmt: skip
    assert future == _month_ends(54)[40:]
    assert all(
        datetime.fromisoformat(d).day == calendar.monthrange(int(d[:4]), int(d[5:7]))[1]
        for d in future
    )


def test_a_model_of_several_steps_forecasts_them_at_once_then_moves_on(tmp_path, capsys):
    rng = np.random.default_rng(12)
    dates = _month_ends(40)
    values = np.round(50 + rng.normal(0, 4, 40).cumsum(), 3)
    rows = [f"{d},{v:.3f}" for d, v in zip(dates, values)]
    store, rid = _train(tmp_path, capsys, "month,flow", rows, 1,
                        "column: flow, horizon: 3", outputs=3)  # fmt: skip
    code, out, err = _predict(capsys, store, rid, "--horizon", "5", "--json")
    assert code == 0, err
    future = [json.loads(line) for line in out.splitlines()][-5:]
    assert [r["actual"] for r in future] == [None] * 5
    # by hand: the last window's three outputs, then the window moved on by them
    cut = round(40 * 0.75)
    mean, std = values[:cut].mean(), values[:cut].std()
    model = open_run(store, rid).model("reference")
    window = list((values[-6:] - mean) / std)
    want = []
    for _ in range(2):
        with no_grad():
            (step,) = asyncio.run(model(tensor([[[v] for v in window]], device="reference"))
                                  .read())  # fmt: skip
        want += step
        window = window[3:] + step
    assert np.allclose([r["predicted"] for r in future], np.array(want[:5]) * std + mean,
                       rtol=1e-9)  # fmt: skip
    assert [r["horizon"] for r in future] == [1, 2, 3, 4, 5]
    assert [r["date"][:10] for r in future] == _month_ends(45)[40:]
