"""The tab's side of run links and run filters (``webapp.share_api``, ``run_api.runs``):
the same links and queries as the command line, checked against the store's own rows."""

from __future__ import annotations

import base64
import math

import pytest

from scellis import ScellisError
from scellis.cli.main import main
from scellis.run.share import read_link
from scellis.sml import parse
from scellis.store.records import Records
from scellis.webapp import run_api, share_api
from storeutil import write_record


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("tabshare")
    store = root / "s"
    for seed in (3, 4):
        rec = write_record(root, seed=seed)
        assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                     "--max-steps", str(seed)]) == 0  # fmt: skip
    r = Records(store)
    runs = r.runs()
    losses = {x["id"]: r.metrics(x["id"], "loss") for x in runs}
    r.close()
    return {"store": str(store), "runs": runs, "losses": losses, "data": root / "series.csv"}


def test_open_link_and_data_check(trained, tmp_path):
    run = trained["runs"][1]
    link = share_api.share_link(run["id"], "http://127.0.0.1:8000/", store=trained["store"])
    info = share_api.open_link(link)
    assert info["file"] == "series.csv" and info["tier"] == "debug" and info["seed"] == 4
    assert info["losses"] == [list(x) for x in trained["losses"][run["id"]]]
    assert info["options"]["max_steps"] == 4
    data = parse(info["record_text"]).data
    assert data["seed"] == 4 and data["data"]["sha256"] == run["dataset_hash"]
    good = base64.b64encode(trained["data"].read_bytes()).decode()
    out = share_api.link_data(link, good, folder=str(tmp_path))
    assert (tmp_path / "series.csv").read_bytes() == trained["data"].read_bytes()
    assert out["dataset"] == run["dataset_hash"]
    other = base64.b64encode(trained["data"].read_bytes() + b"1.0\n").decode()
    with pytest.raises(ScellisError, match=run["dataset_hash"]):
        share_api.link_data(link, other, folder=str(tmp_path / "x"))
    with pytest.raises(ScellisError, match="base64"):
        share_api.link_data(link, "not base64!", folder=str(tmp_path / "y"))


def test_link_match_is_bitwise(trained):
    run = trained["runs"][0]
    link = share_api.share_link(run["id"], "https://e.org/", store=trained["store"])
    losses = [list(x) for x in trained["losses"][run["id"]]]
    assert share_api.link_match(link, losses)["bitwise"]
    step, v = losses[-1]
    losses[-1] = [step, math.nextafter(v, 0.0)]
    got = share_api.link_match(link, losses)
    assert not got["bitwise"] and got["first_difference"] == step
    assert share_api.link_match(link, losses[:-1])["first_difference"] == step  # missing
    assert read_link(link).run == run["id"]


def test_tab_runs_filter_like_the_cli(trained):
    store = trained["store"]
    everyone = run_api.runs(store)
    assert len(everyone) == 2 and all(r["matched"] is None for r in everyone)
    last = {rid: pts[-1][1] for rid, pts in trained["losses"].items()}
    cut = sum(last.values()) / 2
    want = [r["id"] for r in reversed(trained["runs"]) if last[r["id"]] < cut]
    got = run_api.runs(store, where=f"loss < {cut!r}", model=" ", dataset="")
    assert [r["id"] for r in got] == want and len(want) == 1
    assert got[0]["matched"] == {"loss": last[want[0]]}
    prefix = trained["runs"][0]["dataset_hash"][:7]
    assert len(run_api.runs(store, dataset=prefix, model="test/tiny_lstm")) == 2
    with pytest.raises(ScellisError, match="--where"):
        run_api.runs(store, where="loss < 1; DROP TABLE runs")
    assert len(run_api.runs(store)) == 2
