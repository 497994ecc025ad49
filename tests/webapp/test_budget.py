"""The tab's GPU memory budget: typed text read as the CLI's ``--budget`` is, named in
the plan as set in the tab, and held to by every command that plans or trains (plan,
train, resume), on the reference device."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.webapp import api

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
RUN = dict(device="reference", log_every=1, tier="prod", samples=False, validate=False)


def _events(cmd: str, **args) -> list[dict]:
    async def go():
        out = []
        try:
            async for ev in api.dispatch(cmd, json.dumps(args)):
                out.append(ev)
        except ScellisError as e:
            out.append({"kind": "error", "message": str(e)})
        return out

    return asyncio.run(go())


def _plan_of(evs: list[dict]) -> dict:
    return next(e for e in evs if e["kind"] == "plan")


def test_typed_budget_is_read_as_the_cli_reads_it():
    got = api.dispatch("parse_budget", json.dumps({"text": " 8 GiB "}))
    assert got == {"bytes": 8 << 30, "text": "8 GiB", "source": "budget 8 GiB, set in this tab"}
    assert api.dispatch("parse_budget", json.dumps({"text": "1.5GB"}))["bytes"] == 1_500_000_000
    assert api.dispatch("parse_budget", json.dumps({"text": ""}))["bytes"] is None
    for bad, says in (("lots", "cannot read 'lots' as a size"), ("-2GiB", "must be positive")):
        with pytest.raises(ScellisError, match=says):
            api.dispatch("parse_budget", json.dumps({"text": bad}))
        err = api.last_error()
        assert says in err["message"] and "Traceback" not in err["message"]


def test_plan_names_the_tab_budget_and_a_blank_one_is_the_default():
    ask = dict(record_text=LSTM, device="reference")
    mine = api.dispatch("plan", json.dumps({**ask, "budget": "64 GiB"}))
    assert mine["budget"] == 64 << 30 and mine["budget_source"] == "budget 64 GiB, set in this tab"
    assert mine["verdict"] == "green"
    default = api.dispatch("plan", json.dumps({**ask, "budget": ""}))
    assert "set in this tab" not in default["budget_source"]
    tight = api.dispatch("plan", json.dumps({**ask, "budget": "4 KiB"}))
    assert tight["verdict"] == "red" and tight["budget"] == 4096
    with pytest.raises(ScellisError, match="cannot read"):
        api.dispatch("plan", json.dumps({**ask, "budget": "a lot"}))


def test_train_and_resume_are_held_to_the_tab_budget(tmp_path):
    store = str(tmp_path / "store")
    refused = _events("train", record_text=LSTM, store=store, budget="4 KiB", **RUN)
    assert _plan_of(refused)["verdict"] == "red" and refused[-1]["kind"] == "error"
    assert _plan_of(refused)["budget_source"] == "budget 4 KiB, set in this tab"
    ran = _events("train", record_text=LSTM, store=store, budget="64 GiB", max_steps=2,
                  checkpoint_every=1, **RUN)  # fmt: skip
    assert ran[-1]["kind"] == "end" and _plan_of(ran)["budget"] == 64 << 30
    rid = next(e["run"] for e in ran if e["kind"] == "progress" and e.get("run"))
    args = dict(run=rid, store=store, device="reference", max_steps=3)
    held = _events("resume", budget="4 KiB", **args)
    assert _plan_of(held)["verdict"] == "red" and held[-1]["kind"] == "error"
    went = _events("resume", budget="64 GiB", **args)
    assert went[-1]["kind"] == "end"
    assert _plan_of(went)["budget_source"] == "budget 64 GiB, set in this tab"
