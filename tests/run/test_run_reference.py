"""A run's weights one reference away: RUN, RUN@STEP and RUN:best name checkpoints, and
the model they build predicts exactly what the trained model did (reference device)."""

from __future__ import annotations

import asyncio

import pytest

from scellis.autograd import no_grad
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.run.options import RunOptions
from scellis.run.reference import looks_like_run, open_run, parse_ref
from scellis.run.session import start_run
from scellis.runtime.creation import tensor
from scellis.store.records import Records
from storeutil import write_record


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ref")
    rec = write_record(folder)
    store = folder / "s"
    argv = ["train", str(rec), "--device", "reference", "--store", str(store), "--json",
            "--checkpoint-every", "5", "--keep-last", "10", "--max-steps", "15"]  # fmt: skip
    assert main(argv) == 0
    records = Records(store)
    try:
        (run,) = records.runs()
        cks = records.checkpoints(run["id"])
    finally:
        records.close()
    return store, run["id"], cks


def test_references_pick_their_checkpoints(trained):
    store, rid, cks = trained
    assert [c["step"] for c in cks] == [5, 10, 15]
    assert open_run(store, rid).step == 15
    assert open_run(store, f"{rid}@10").step == 10
    best = min(cks, key=lambda c: c["loss"])
    assert open_run(store, f"{rid}:best").step == best["step"]
    assert open_run(store, rid[:12]).rid == rid  # a unique prefix names the run
    with pytest.raises(ScellisError, match="no checkpoint at step 7"):
        open_run(store, f"{rid}@7")
    assert parse_ref("abc@3") == ("abc", 3, "last")
    assert looks_like_run(store, rid) and not looks_like_run(store, "nothing-here")


def test_the_model_of_a_reference_is_the_trained_one(trained):
    store, rid, _ = trained
    run = open_run(store, f"{rid}@10")
    model = run.model("reference")
    ds = run.dataset()
    x = tensor(ds.x_val[:6], device="reference")
    with no_grad():
        got = asyncio.run(model(x).read())
    # the oracle: the same record trained 10 steps live, never written or read back
    live = start_run(run.record_text, run.label, base_dir=run.config["base_dir"],
                     options=RunOptions(max_steps=10, checkpoint_every=5))  # fmt: skip

    async def train_then_predict():
        async for _ in live.events():
            pass
        live.prep.model.eval()
        with no_grad():
            return await live.prep.model(x).read()

    want = asyncio.run(train_then_predict())
    assert got == want  # the debug tier: bitwise
    untrained = asyncio.run(
        _predict(
            start_run(run.record_text, run.label, base_dir=run.config["base_dir"]).prep.model, x
        )
    )
    assert untrained != got


async def _predict(model, x):
    model.eval()
    with no_grad():
        return await model(x).read()


@pytest.mark.parametrize("epochs, words", [(1, "1 epoch,"), (2, "2 epochs,")])
def test_the_opening_line_counts_epochs_in_words(tmp_path, capsys, epochs, words):
    rec = write_record(tmp_path)
    rec.write_text(rec.read_text().replace("epochs: 3", f"epochs: {epochs}"))
    args = ["train", str(rec), "--store", str(tmp_path / "s"), "--device", "reference",
            "--max-steps", "1"]  # fmt: skip
    assert main(args) == 0
    opening = capsys.readouterr().out.splitlines()[0]
    assert opening.startswith("scellis train ") and f", {words} " in opening, opening
