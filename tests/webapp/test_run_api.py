"""The run panel's worker API on the reference device: validation every N steps on a
slice of the validation rows, and the char LM's batch of greedy text samples."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.data.record import load_data
from scellis.sml import parse
from scellis.webapp import api

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
CHAR = (ROOT / "examples" / "char_transformer.sml").read_text()
BASE = dict(device="reference", log_every=1, tier="prod", samples=False)


def events(record: str, **opts) -> list[dict]:
    args = json.dumps({"record_text": record, **BASE, **opts})

    async def go():
        return [e async for e in api.dispatch("train", args)]

    return asyncio.run(go())


def of(evs: list[dict], kind: str, key: str) -> list:
    return [(e["step"], e[key]) for e in evs if e["kind"] == kind]


def test_eval_every_on_a_slice_of_the_validation_rows():
    n_val = len(load_data(parse(LSTM).data["data"]).x_val)
    assert n_val > 40
    whole = events(LSTM, max_steps=4, eval_every=2)
    every = events(LSTM, max_steps=4, eval_every=2, val_rows=n_val)
    part = events(LSTM, max_steps=4, eval_every=2, val_rows=10)
    assert [s for s, _ in of(whole, "eval", "val_loss")] == [2, 4]
    # the slicing changes only what is evaluated: the same steps, and all rows is the
    # default's validation
    assert of(part, "log", "loss") == of(whole, "log", "loss") == of(every, "log", "loss")
    assert of(every, "eval", "val_loss") == of(whole, "eval", "val_loss")
    for (_, a), (_, b) in zip(of(part, "eval", "val_loss"), of(whole, "eval", "val_loss")):
        assert abs(a - b) > 1e-6 * abs(b)
    # without eval_every the run validates at an epoch's end, which 4 steps miss, and at
    # its last step
    assert [s for s, _ in of(events(LSTM, max_steps=4), "eval", "val_loss")] == [4]


def test_text_sample_is_a_greedy_continuation_of_each_validation_prompt():
    ds = load_data(parse(CHAR).data["data"])
    short, long = (
        [e for e in events(CHAR, max_steps=1, validate=False, samples=True, sample_chars=n)
         if e["kind"] == "sample"]
        for n in (2, 4)
    )  # fmt: skip
    assert len(short) == len(long) == 1 and long[0]["type"] == "text"
    rows = long[0]["rows"]
    assert len(rows) == 16  # one per prompt of a training batch
    assert [r["prompt"] for r in rows] == [ds.vocab.decode(x) for x in ds.x_val[:16]]
    assert (long[0]["prompt"], long[0]["generated"]) == (rows[0]["prompt"], rows[0]["generated"])
    # greedy decoding is deterministic: the 2-character sample starts the 4-character one
    for a, b in zip(short[0]["rows"], rows):
        assert len(a["generated"]) == 2 and len(b["generated"]) == 4
        assert b["generated"].startswith(a["generated"])
    assert all(set(r["generated"]) <= set(ds.vocab.chars) for r in rows)


@pytest.mark.parametrize(
    "opts, word",
    [
        ({"eval_every": 0}, "eval_every"),
        ({"val_rows": "ten"}, "val_rows"),
        ({"sample_chars": -1}, "sample_chars"),
    ],
)
def test_bad_run_options_are_one_clear_message(opts, word):
    with pytest.raises(ScellisError, match=f"{word} must be a whole number >= 1"):
        events(LSTM, max_steps=1, **opts)
    assert "Traceback" not in api.last_error()["message"]
