"""The run session: its default checkpoint cadence, record edits from the command line
(--set and the shorthands, checked against a run of the hand-edited file), and
--extensions on train and resume. Real CLI, real store, the reference device."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scellis.cli.main import main
from scellis.run.options import RunOptions
from scellis.run.session import RunControl, start_run
from scellis.store.records import Records
from storeutil import STEPS_PER_EPOCH, write_record

ROOT = Path(__file__).resolve().parents[2]
USER_BLOCK = ROOT / "tests" / "catalog" / "records"


def _train(capsys, *argv) -> tuple[int, list[dict], str]:
    code = main(["train", *map(str, argv), "--device", "reference", "--json"])
    cap = capsys.readouterr()
    return code, [json.loads(x) for x in cap.out.splitlines() if x.startswith("{")], cap.err


def _losses(events) -> list[float]:
    return [e["loss"] for e in events if e["kind"] == "log"]


def _config(store: Path, rid: str) -> dict:
    r = Records(store)
    try:
        return r.run(rid)
    finally:
        r.close()


def _validating_per_epoch(tmp_path):
    rec = write_record(tmp_path)  # 3 epochs of 7 steps
    rec.write_text(rec.read_text().replace("eval: { every: 1, ", "eval: { "))
    return rec


def test_without_checkpoint_every_a_run_checkpoints_at_each_epochs_end(tmp_path, capsys):
    rec = _validating_per_epoch(tmp_path)  # validation after each epoch
    code, evs, err = _train(capsys, rec, "--store", tmp_path / "s")
    assert code == 0, err
    cks = [(e["step"], e["reason"]) for e in evs if e["kind"] == "checkpoint"]
    assert cks == [(STEPS_PER_EPOCH * k, "epoch") for k in (1, 2, 3)]
    # each one after that epoch's validation, so a resume starts the next epoch cleanly
    order = [e["kind"] for e in evs if e["kind"] in ("epoch", "eval", "checkpoint")]
    assert order == ["epoch", "eval", "checkpoint"] * 3


def test_without_validation_the_epoch_checkpoint_comes_at_the_epoch_event(tmp_path, capsys):
    rec = write_record(tmp_path)
    code, evs, err = _train(capsys, rec, "--store", tmp_path / "s", "--no-validate")
    assert code == 0, err
    kinds = [e["kind"] for e in evs if e["kind"] in ("epoch", "eval", "checkpoint")]
    assert kinds == ["epoch", "checkpoint"] * 3


def test_wall_time_cadence_checkpoints_between_epochs(tmp_path, capsys):
    rec = _validating_per_epoch(tmp_path)
    # a cadence shorter than one step: a checkpoint at every point a resume can start from
    code, evs, err = _train(capsys, rec, "--store", tmp_path / "s", "--checkpoint-minutes",
                            "1e-9", "--keep-last", "50", "--max-steps", "10")  # fmt: skip
    assert code == 0, err
    reasons = {e["step"]: e["reason"] for e in evs if e["kind"] == "checkpoint"}
    # step 7 ends the epoch: its log point took the checkpoint, the epoch's is that one
    assert reasons == {s: "time" for s in range(1, 11)}


def test_checkpoint_every_keeps_its_steps(tmp_path, capsys):
    rec = write_record(tmp_path)
    code, evs, err = _train(capsys, rec, "--store", tmp_path / "s", "--checkpoint-every", "4",
                            "--max-steps", "10")  # fmt: skip
    assert code == 0, err
    cks = [(e["step"], e["reason"]) for e in evs if e["kind"] == "checkpoint"]
    assert cks == [(4, "every"), (8, "every"), (10, "end")]


def test_set_trains_the_hand_edited_record(tmp_path, capsys):
    rec = write_record(tmp_path)
    code, edited_evs, err = _train(
        capsys, rec, "--store", tmp_path / "a", "--set", "optimizer.lr=0.05",
        "--set", "data.window=6", "--set", "inputs.window.shape=[batch, 6, 1]",
        "--seed", "4", "--batch-size", "4", "--epochs", "1",
    )  # fmt: skip
    assert code == 0, err
    # the oracle: the same changes written into the file by hand
    text = rec.read_text()
    for a, b in [("lr: 0.02", "lr: 0.05"), ("window: 4", "window: 6"),
                 ("shape: [batch, 4, 1]", "shape: [batch, 6, 1]"), ("seed: 11", "seed: 4"),
                 ("batch_size: 8", "batch_size: 4"), ("epochs: 3", "epochs: 1")]:  # fmt: skip
        assert a in text
        text = text.replace(a, b)
    hand = tmp_path / "hand"
    hand.mkdir()
    shutil.copy(tmp_path / "series.csv", hand)
    (hand / "tiny.sml").write_text(text)
    code, hand_evs, err = _train(capsys, hand / "tiny.sml", "--store", tmp_path / "b")
    assert code == 0, err
    assert _losses(edited_evs) == _losses(hand_evs) and len(_losses(hand_evs)) > 10
    # the run records the record it trained, not the file's: another hash, and it says so
    rid = edited_evs[-1]["run"]
    run = _config(tmp_path / "a", rid)
    other = _config(tmp_path / "b", hand_evs[-1]["run"])
    original = hashlib.sha256(rec.read_bytes()).hexdigest()
    assert run["record_hash"] != original and run["config"]["source_hash"] == original
    # edited in place, comments and layout kept: the very bytes of the hand-edited file
    assert run["record_hash"] == other["record_hash"]
    edits = run["config"]["edits"]
    assert edits == ["epochs=1", "batch_size=4", "seed=4", "optimizer.lr=0.05",
                     "data.window=6", "inputs.window.shape=[batch, 6, 1]"]  # fmt: skip
    assert main(["runs", "show", rid, "--store", str(tmp_path / "a")]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"record\s+edited from the file's [0-9a-f]{12} by epochs=1", shown)


def test_an_edit_that_breaks_the_record_is_located(tmp_path, capsys):
    rec = write_record(tmp_path)
    code, _, err = _train(capsys, rec, "--store", tmp_path / "s", "--set", "batch_size=-3")
    assert code == 2 and "Traceback" not in err
    assert re.search(r"tiny\.sml:\d+:\d+: .*batch_size", err), err
    code, _, err = _train(capsys, rec, "--store", tmp_path / "s", "--set", "lr")
    assert code == 2 and "expected PATH=VALUE" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "edits", [["new_section.key=1"], ["grad_clip.max_norm=-1"], ["optimizer.lr=0.05", "x.y=2"]]
)
def test_a_problem_an_edit_adds_past_the_end_of_the_file_is_told_at_the_edit(
    tmp_path, capsys, edits
):
    rec = write_record(tmp_path)
    lines = len(rec.read_text().splitlines())
    sets = [a for e in edits for a in ("--set", e)]
    code, _, err = _train(capsys, rec, "--store", tmp_path / "s", *sets)
    assert code == 2 and "Traceback" not in err
    assert all(int(n) <= lines for n in re.findall(r"tiny\.sml:(\d+):", err)), err
    # the oracle: the same section written into the file by hand, located in it
    path, value = edits[-1].split("=")
    section, key = path.split(".")
    hand = tmp_path / "hand" / rec.name
    hand.parent.mkdir()
    hand.write_text(rec.read_text() + f"{section}: {{{key}: {value}}}\n")
    code, _, hand_err = _train(capsys, hand, "--store", tmp_path / "h", *sets[:-2])
    want = re.search(rf"tiny\.sml:{lines + 1}:\d+: (.*)", hand_err)
    assert code == 2 and want, hand_err
    assert f"--set {edits[-1]}: {want.group(1)}" in err, err


def _cli(*argv) -> subprocess.CompletedProcess:
    """A fresh process each time: nothing it registers survives into the next one."""
    code = "import sys; from scellis.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_extensions_train_and_resume_a_user_block(tmp_path):
    folder = tmp_path / "rec"
    shutil.copytree(USER_BLOCK, folder)
    shutil.copytree(USER_BLOCK.parent / "user_ext", tmp_path / "user_ext")
    text = (folder / "user_block.sml").read_text()
    bare = folder / "bare.sml"  # the same record without its own extensions section
    bare.write_text(text.replace("extensions: [../user_ext/scaled_tanh.py]\n", ""))
    store, ext = tmp_path / "s", tmp_path / "user_ext" / "scaled_tanh.py"
    p = _cli("train", bare, "--store", store, "--device", "reference")
    assert p.returncode == 2 and "user/block/scaled_tanh" in p.stderr
    p = _cli("train", bare, "--store", store, "--device", "reference", "--extensions", ext,
             "--epochs", "4", "--max-steps", "2", "--json")  # fmt: skip
    assert p.returncode == 0, p.stderr
    rid = json.loads(p.stdout.splitlines()[-1])["run"]
    # the resume, in another process, runs no code the stored run names by itself...
    p = _cli("resume", rid, "--store", store, "--to-step", "4")
    assert p.returncode == 2 and "--extensions" in p.stderr and "scaled_tanh.py" in p.stderr
    # ...only what the user names again
    p = _cli("resume", rid, "--store", store, "--to-step", "4", "--extensions", ext)
    assert p.returncode == 0, p.stderr
    assert "from step 2" in p.stdout


@pytest.mark.parametrize("flag", ["--lr", "--batch-size", "--seed", "--epochs"])
def test_shorthands_are_listed_with_their_record_fields(flag, capsys):
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert flag in out


def test_a_pause_takes_effect_between_steps_and_says_so(tmp_path):
    """A pause takes effect at the next step boundary: one ``paused`` event names the
    steps done, no step runs until resume, and the losses are those of an unpaused run
    (reference device: bitwise)."""
    raw = write_record(tmp_path).read_bytes()
    options = RunOptions(max_steps=6, log_every=1, validate=False)

    async def run(pause_after: int | None):
        control = RunControl()
        session = start_run(raw, options=options, base_dir=tmp_path, control=control)
        events = []
        async for ev in session.events():
            events.append(ev.to_dict())
            if ev.kind == "log" and ev.step == pause_after:
                control.pause()  # the next step has not started: it holds after this one
            if ev.kind == "paused":
                held = len(events)
                await asyncio.sleep(0.3)  # the run must stay where it is meanwhile
                assert len(events) == held
                control.pause(False)
        return events

    plain, paused = asyncio.run(run(None)), asyncio.run(run(3))
    assert [e for e in paused if e["kind"] == "paused"] == [{"kind": "paused", "step": 3}]
    logs = [e for e in paused if e["kind"] == "log"]
    assert [e["step"] for e in logs] == [1, 2, 3, 4, 5, 6]
    at = [e["kind"] for e in paused].index("paused")
    assert paused[at - 1]["kind"] == "log" and paused[at - 1]["step"] == 3
    losses = [(e["step"], e["loss"]) for e in logs]
    assert losses == [(e["step"], e["loss"]) for e in plain if e["kind"] == "log"]
    assert not [e for e in plain if e["kind"] == "paused"]
