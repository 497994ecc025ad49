"""The tab's past-run view and comparison read what ``scellis runs show`` and
``scellis compare`` print (their JSON is the oracle), curves included."""

from __future__ import annotations

import json

from scellis.cli.main import main
from scellis.store.records import Records
from scellis.webapp import api
from storeutil import write_record


def _cli(capsys, *argv) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _two_runs(tmp_path, capsys):
    store = tmp_path / "s"
    rids = []
    for seed, lr in ((3, 0.02), (4, 0.05)):
        folder = tmp_path / f"r{seed}"
        folder.mkdir()
        rec = write_record(folder, seed=seed, lr=lr)
        out = _cli(capsys, "train", str(rec), "--store", str(store), "--device", "reference",
                   "--json", "--max-steps", "6", "--eval-every", "3")  # fmt: skip
        rids.append(json.loads(out.splitlines()[-1])["run"])
    return store, rids


def _call(cmd, **args):
    return json.loads(json.dumps(api.dispatch(cmd, json.dumps(args))))


def test_a_past_run_and_two_compared_read_as_the_cli_has_them(tmp_path, capsys):
    store, (a, b) = _two_runs(tmp_path, capsys)
    shown = json.loads(_cli(capsys, "runs", "show", a, "--store", str(store), "--json"))
    view = _call("run_view", run=a, store=str(store))
    for key in ("id", "status", "step", "loss", "best_loss", "val_loss", "metrics",
                "checkpoints", "config", "parent"):  # fmt: skip
        assert view[key] == shown[key], key
    rec = Records(store)
    try:
        stored = {n: [list(p) for p in rec.metrics(a, n)] for n in ("loss", "val_loss", "lr")}
    finally:
        rec.close()
    assert view["curves"] == stored and [s for s, _ in stored["val_loss"]] == [3, 6]
    assert "lr: 0.02" in view["record"]

    cli = json.loads(_cli(capsys, "compare", a, b, "--store", str(store), "--json"))
    both = _call("compare_runs", a=a, b=b, store=str(store))
    assert [r["id"] for r in both["runs"]] == cli["runs"]
    assert both["differs"] == cli["differs"] and both["plan"] == cli["plan"]
    assert both["record_diff"] == cli["record_diff"] and any("lr: 0.05" in x for x in
                                                             both["record_diff"])  # fmt: skip
    final = [{k: r[k] for k in ("loss", "best_loss", "val_loss", "step", "metrics")}
             for r in both["runs"]]  # fmt: skip
    assert final == cli["final"]
    la, lb = (dict(m["loss"]) for m in both["metrics"])
    assert [[s, la.get(s), lb.get(s)] for s in sorted(set(la) | set(lb))] == cli["loss"]


def test_a_run_reopens_as_a_record_whose_weights_are_its_trained_ones(tmp_path, capsys):
    import random

    from scellis.codecs.convert import header_weights
    from scellis.codecs.pretrained import pretrained_model
    from scellis.codecs.weights import state_of
    from scellis.run.reference import open_run
    from scellis.sml import parse

    store, (a, _) = _two_runs(tmp_path, capsys)
    got = _call("run_record", run=a, store=str(store))
    assert got["step"] == 6 and got["record"].startswith(f"# reopened from run {a} at step 6")
    # the oracle: the run's own checkpoint, built as `scellis export RUN` builds it
    trained = state_of(open_run(store, a).model("reference"))
    text = got["record"]
    model = pretrained_model(parse(text, "m.sml").data, header_weights(text, store),
                             device="reference")  # fmt: skip
    mine = state_of(model)
    assert set(mine) == set(trained)
    assert all(mine[k].data == trained[k].data for k in trained)
    # the reopened record trains on (from those weights), and that run reopens with one
    # weights header: its own
    edited = tmp_path / "r3" / "edited.sml"  # beside the run's data file
    lr = f"{random.Random().uniform(0.001, 0.01):.5f}"
    edited.write_text(text.replace("lr: 0.02", f"lr: {lr}"))
    out = _cli(capsys, "train", str(edited), "--store", str(store), "--device", "reference",
               "--json", "--max-steps", "2")  # fmt: skip
    child = json.loads(out.splitlines()[-1])["run"]
    again = _call("run_record", run=child, store=str(store))["record"].split("\n")
    assert again[0] == f"# reopened from run {child} at step 2: its trained weights"
    assert again[2:] == edited.read_text().split("\n")[2:]
    assert sum(ln.startswith("# weights: sha256:") for ln in again) == 1


def test_a_run_that_trained_adapters_is_refused_with_the_way_out(tmp_path, capsys):
    import pytest

    from scellis.base.errors import ScellisError
    from scellis.webapp import runs_api

    rec = write_record(tmp_path)
    rec.write_text(
        rec.read_text().replace(
            "  head: { block_id: nn/regression_head, in: lstm,",
            "  mid: { block_id: nn/linear, in: lstm, in_features: 3, out_features: 3 }\n"
            "  head: { block_id: nn/regression_head, in: mid,",
        )
        + "finetune: {adapters: [{block_id: peft/lora, target_modules: [mid]}]}\n"
    )
    out = _cli(capsys, "train", str(rec), "--store", str(tmp_path / "s"), "--device",
               "reference", "--json", "--max-steps", "2")  # fmt: skip
    rid = json.loads(out.splitlines()[-1])["run"]
    with pytest.raises(ScellisError, match="adapters over a frozen base.*scellis export"):
        runs_api.run_record(rid, str(tmp_path / "s"))
