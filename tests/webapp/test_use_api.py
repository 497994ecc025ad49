"""The tab's use of a stored run: ``predict`` gives ``scellis predict``'s own CSV bytes and
rows, the chart's points are the validation range and the forecast, yearly dates step by
calendar years; ``generate`` stops at the next token when asked and refuses a length over
its cap, one clear message."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest

from generate.genutil import record_text, write_text
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.run.options import RunOptions
from scellis.run.reference import open_run
from scellis.run.session import RunControl, start_run
from scellis.store.records import Records
from scellis.webapp import api

BUNDLED = Path(__file__).resolve().parents[2] / "src/scellis/data/bundled/sunspots_yearly.csv"
SERIES = """\
model: test/yearly@1
inputs:
  window: { shape: [batch, 6, 1], dtype: f32 }
blocks:
  lstm: { block_id: nn/lstm, in: window, input_size: 1, hidden_size: 4, output: last }
  head: { block_id: nn/regression_head, in: lstm, in_features: 4, n_outputs: 1 }
outputs: [head]
optimizer: { block_id: training/optimizer/adam, lr: 0.02 }
loss: { block_id: training/loss/mse }
epochs: 1
batch_size: 16
determinism_tier: debug
seed: 4
data:
  source: bundled:sunspots_yearly.csv
  column: sunspots
  datetime: year
  datetime_format: year
  window: 6
  val_fraction: 0.2
"""


def train(folder, text: str, steps: int = 3) -> tuple[str, str]:
    """(store, run id) of ``text`` trained a few steps on the reference device."""
    (folder / "r.sml").write_text(text)
    store = folder / "s"
    argv = ["train", str(folder / "r.sml"), "--device", "reference", "--store", str(store),
            "--json", "--max-steps", str(steps)]  # fmt: skip
    assert main(argv) == 0
    records = Records(store)
    try:
        (run,) = records.runs()
    finally:
        records.close()
    return str(store), run["id"]


@pytest.fixture(scope="module")
def yearly(tmp_path_factory):
    return train(tmp_path_factory.mktemp("yearly"), SERIES)


def call(cmd: str, **args):
    out = api.dispatch(cmd, json.dumps(args))
    return asyncio.run(out) if asyncio.iscoroutine(out) else out


def test_predict_is_the_clis_csv_and_its_chart_the_validation_and_forecast(
    yearly, tmp_path, capsys
):
    store, rid = yearly
    got = call("predict", run=rid, store=store, horizon=5, device="reference")
    out = tmp_path / "p.csv"
    assert main(["predict", rid, "--store", store, "--horizon", "5", "--out", str(out),
                 "--device", "reference"]) == 0  # fmt: skip
    capsys.readouterr()
    assert got["csv"] == out.read_text()
    rows = list(csv.DictReader(out.open()))
    assert [r["date"] for r in got["rows"]] == [r["date"] for r in rows]
    # the validation range: the last 20% of the years (sunspots, 1700 on), one step ahead
    ds = open_run(store, rid).dataset()
    past, future = got["plot"]["past"], got["plot"]["future"]
    assert past[0][0] == ds.times[ds.cut].date().isoformat() and len(past) == ds.rows - ds.cut
    # the actual values as the file spells them (not back from the normalised column)
    raw = {f"{r['year']}-01-01": r["sunspots"] for r in csv.DictReader(BUNDLED.open())}
    assert all(r["actual"] == raw[r["date"]] or float(r["actual"]) == float(raw[r["date"]])
               for r in rows if r["actual"])  # fmt: skip
    by_date = {r["date"]: r for r in rows}
    for date, actual, predicted in past:
        assert float(by_date[date]["actual"]) == actual
        assert float(by_date[date]["predicted"]) == predicted
    # the forecast steps whole calendar years past the last one
    last = ds.times[-1].year
    assert [d for d, _ in future] == [f"{last + k}-01-01" for k in range(1, 6)]
    assert [v for _, v in future] == [float(r["predicted"]) for r in rows[-5:]]
    info = call("use_info", run=rid, store=store)
    assert (info["kind"], info["target"], info["datetime"]) == ("series", "sunspots", "year")


def test_the_chart_alone_predicts_from_the_validation_range_on(yearly):
    """Show forecast's span: the full answer's chart, from the windows that reach the
    validation range only (their rows and values as the full answer has them), no CSV."""
    store, rid = yearly
    full = call("predict", run=rid, store=store, horizon=3, device="reference")
    chart = call("predict", run=rid, store=store, horizon=3, device="reference", span="chart")
    ds = open_run(store, rid).dataset()
    before = ds.times[ds.cut - 1].date().isoformat()  # the last row before the range
    keep = [r for r in full["rows"] if r["actual"] is None or r["date"] > before]
    assert [(r["date"], r["horizon"]) for r in chart["rows"]] == [
        (r["date"], r["horizon"]) for r in keep]  # fmt: skip
    assert [r["predicted"] for r in chart["rows"]] == pytest.approx(
        [r["predicted"] for r in keep], rel=1e-9)  # fmt: skip
    assert chart["csv"] is None and chart["span"] == "chart"
    for part in ("past", "future"):
        got, want = chart["plot"][part], full["plot"][part]
        assert [p[:-1] for p in got] == [p[:-1] for p in want]  # dates (and actual values)
        assert [p[-1] for p in got] == pytest.approx([p[-1] for p in want], rel=1e-9)
    with pytest.raises(ScellisError, match="span must be all or chart"):
        call("predict", run=rid, store=store, horizon=3, device="reference", span="some")


def test_a_horizon_past_the_cap_or_below_zero_is_one_clear_message(yearly):
    store, rid = yearly
    for bad in (-1, 10**6):
        with pytest.raises(ScellisError, match="horizon"):
            call("predict", run=rid, store=store, horizon=bad, device="reference")
        assert "Traceback" not in api.last_error()["message"]


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    write_text(folder)
    return train(folder, record_text(context=8))


def test_generate_stops_at_the_next_token_when_asked(lm):
    store, rid = lm
    args = dict(run=rid, store=store, prompt="abc", max_new=50, temperature=0.9, top_k=4,
                seed=11, device="reference")  # fmt: skip

    async def collect(stop_after: int | None):
        evs = []
        async for ev in api.dispatch("generate", json.dumps(args)):
            evs.append(ev)
            if len(evs) == stop_after:
                api.control({"stop_generation": True})
        return evs

    whole = asyncio.run(collect(None))
    assert len(whole) == 51 and whole[-1]["stopped"] is False
    cut = asyncio.run(collect(7))
    # the stop lands after the seventh token: the same seven tokens, then the end
    assert [e["kind"] for e in cut] == ["token"] * 7 + ["generated"]
    assert cut[-1]["stopped"] is True and cut[-1]["ids"] == whole[-1]["ids"][:7]
    # a stop asked between generations does not stop the next one
    assert len(asyncio.run(collect(None))) == 51


def test_generate_refuses_a_length_over_its_cap(lm):
    store, rid = lm
    from scellis.webapp.run_api import MAX_NEW_CAP

    with pytest.raises(ScellisError, match="cap"):
        call_gen = api.dispatch("generate", json.dumps(
            dict(run=rid, store=store, prompt="abc", max_new=MAX_NEW_CAP + 1,
                 device="reference")))  # fmt: skip
        asyncio.run(call_gen.__anext__())


def test_a_stopped_text_run_ends_without_generating_its_sample(tmp_path):
    """A generated text costs a forward pass per character: Stop does not wait for one
    (the same run left alone ends with its sample)."""
    write_text(tmp_path)
    raw = record_text(context=8).encode()

    async def kinds(stop_at: int | None) -> list[str]:
        control = RunControl()
        options = RunOptions(max_steps=6, samples=True, sample_chars=30)
        session = start_run(raw, options=options, base_dir=tmp_path, control=control)
        out = []
        async for ev in session.events():
            out.append(ev.kind)
            if ev.kind == "log" and ev.step == stop_at:
                control.stop("stop")
        return out

    stopped = asyncio.run(kinds(2))
    assert "stopped" in stopped and "sample" not in stopped and stopped[-1] == "end"
    assert "sample" in asyncio.run(kinds(None))


def test_a_stop_at_a_validation_skips_its_text_sample(tmp_path):
    write_text(tmp_path)
    raw = record_text(context=8).encode()

    async def kinds() -> list[str]:
        control = RunControl()
        options = RunOptions(max_steps=6, eval_every=2, samples=True, text_samples=True,
                             sample_chars=30)  # fmt: skip
        session = start_run(raw, options=options, base_dir=tmp_path, control=control)
        out = []
        async for ev in session.events():
            out.append(ev.kind)
            if ev.kind == "eval" and ev.step == 4:
                control.stop("stop")
        return out

    got = asyncio.run(kinds())
    # the validation at step 2 has its sample; the one at step 4, where Stop came, not
    assert got.count("eval") == 2 and got.count("sample") == 1, got
    assert got.index("sample") < got.index("eval", got.index("eval") + 1)
