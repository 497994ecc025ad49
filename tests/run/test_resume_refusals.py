"""What ``scellis resume`` says about a run that is done: how far it can continue, and
that a run whose record's epochs are all done has nothing left to resume."""

from __future__ import annotations

from scellis.cli.main import main
from scellis.store.records import Records
from storeutil import STEPS_PER_EPOCH, write_record


def _cli(capsys, *argv):
    code = main([*map(str, argv)])
    return code, capsys.readouterr().err


def _only_run(store):
    r = Records(store)
    try:
        (run,) = r.runs()
        return run
    finally:
        r.close()


def test_a_run_done_at_its_last_epoch_names_the_way_to_train_longer(tmp_path, capsys):
    store = tmp_path / "s"
    rec = write_record(tmp_path)
    assert _cli(capsys, "train", rec, "--device", "reference", "--store", store)[0] == 0
    run = _only_run(store)
    assert run["status"] == "done" and run["step"] == 3 * STEPS_PER_EPOCH
    code, err = _cli(capsys, "resume", run["id"], "--store", store)
    assert code == 2 and "while its record's epochs last" in err and "Traceback" not in err
    code, err = _cli(capsys, "resume", run["id"], "--store", store, "--to-step", run["step"] + 5)
    assert code == 2 and err.count("\n") == 1
    assert "has finished its 3 epochs: nothing is left to resume" in err and "--epochs N" in err
    assert _only_run(store)["step"] == run["step"]  # nothing changed


def test_a_run_done_at_max_steps_continues_with_to_step(tmp_path, capsys):
    store = tmp_path / "s"
    rec = write_record(tmp_path)
    assert _cli(capsys, "train", rec, "--device", "reference", "--store", store,
                "--max-steps", 5)[0] == 0  # fmt: skip
    run = _only_run(store)
    code, err = _cli(capsys, "resume", run["id"], "--store", store, "--to-step", 9)
    assert code == 0, err
    assert _only_run(store)["step"] == 9
