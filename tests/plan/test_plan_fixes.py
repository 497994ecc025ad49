"""Plan fixes that fix: every remediation's edit, applied as ``--set`` applies it, gives
the verdict and the peak it promised.

A set of red and yellow plans (two example models, the reference device and the browser
profile's WebGPU limits, several budgets). Each fix's edit goes through the run's own
machinery: ``RunOptions(set=...)`` parses the ``--set`` arguments, the record's text is
edited and validated as ``scellis train`` does, and the run options (``--no-replay``,
``--no-validate``) are applied; the edited record is planned again as a run plans it.
"""

from __future__ import annotations

import pytest
from planutil import ROOT

from scellis.cli.main import main
from scellis.ir.limits import resolve
from scellis.run.effective import effective_record
from scellis.run.options import RunOptions
from scellis.run.planning import plan_steps
from scellis.run.prepare import check_record

LSTM = ROOT / "examples" / "lstm_forecaster.sml"


def small_lm() -> bytes:
    """The char Transformer at a context of 16 and width 16 (kept small: fast to plan)."""
    text = (ROOT / "examples" / "char_transformer.sml").read_text()
    for a, b in (("[batch, 32]", "[batch, 16]"), ("max_len: 32", "max_len: 16"),
                 ("context: 32", "context: 16"), (": 64", ": 16"),
                 ("num_heads: 4", "num_heads: 2")):  # fmt: skip
        text = text.replace(a, b)
    return text.encode()


# (record, device, budget): red plans, with the fixes each must offer
CASES = [
    ("lm", "reference", "250KiB"),  # no single fix: a combination
    ("lm", "browser", "1MiB"),  # replayed steps and the evaluation forward over the budget
    ("lstm", "browser", "1MiB"),  # the evaluation batch is what does not fit
]


def _raw(name: str) -> bytes:
    return small_lm() if name == "lm" else LSTM.read_bytes()


def _plan(name: str, raw: bytes, target, options: RunOptions):
    edits = options.record_edits()
    record = check_record(effective_record(raw, f"{name}.sml", edits), f"{name}.sml")
    return plan_steps(record, target, replay=options.replay, validate=options.validate)[0]


@pytest.mark.parametrize("path,device,budget", CASES, ids=["-".join(c) for c in CASES])
def test_every_fix_gives_the_verdict_it_promises(path, device, budget):
    raw = _raw(path)
    target = resolve(device, budget)
    plan = _plan(path, raw, target, RunOptions())
    assert plan.verdict == "red"
    applicable = [r for r in plan.remediations if r.applicable]
    assert applicable and all(r.kind and r.set or r.option for r in applicable)
    # at least one fix clears what is wrong
    assert any(r.verdict != "red" for r in applicable), [r.record() for r in applicable]
    for r in applicable:
        options = RunOptions(set=r.set_args(), **r.option)
        after = _plan(path, raw, target, options)
        assert (after.verdict, after.peak) == (r.verdict, r.peak), r.record()
        assert r.saving == max(0, plan.peak - after.peak)
    if path == "lstm":  # the evaluation forward sets the peak: training without it is a fix
        (off,) = [r for r in applicable if r.kind == "no_validation"]
        assert off.option == {"validate": False} and not off.set and off.saving > 0
    for r in plan.remediations:  # JSON as the plan event and ``plan --json`` carry it
        d = r.record()
        assert {"kind", "fix", "saving", "set", "option", "verdict", "peak"} <= set(d)


def test_the_largest_batch_is_the_largest_that_fits():
    # found with the planner: one more sample is red
    raw = LSTM.read_bytes()
    target = resolve("browser", "1MiB")
    plan = _plan("lstm", raw, target, RunOptions())
    fix = next(r for r in plan.remediations if r.kind == "batch_size")
    n = fix.set["batch_size"]
    assert 1 <= n < plan.batch and fix.verdict != "red"
    over = dict(fix.set, batch_size=n + 1)
    over["eval.batch_size"] = min(over.get("eval.batch_size", 64), n + 1)
    sets = [f"{k}={v}" for k, v in over.items()]
    assert _plan("lstm", raw, target, RunOptions(set=sets)).verdict == "red"


def test_the_refusal_names_the_edit_and_train_takes_it(capsys, tmp_path):
    args = ["--device", "reference", "--budget", "700KiB", "--max-steps", "1"]
    assert main(["train", str(LSTM), *args, "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scellis: error: the memory plan is red") and "to fit:" in err
    line = next(x for x in err.splitlines() if "to fit: smaller batch" in x)
    sets = line.split(": ", 2)[2].split(" (saves")[0].split()
    assert sets[0] == "--set"
    edits = [s.strip("'") for s in sets[1::2]]
    rc = main(["train", str(LSTM), *args, "--store", str(tmp_path),
               *[a for e in edits for a in ("--set", e)]])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
