"""data.augment: jitter and row scaling from the Philox ``augment`` stream, on training
batches only, keyed by (seed, step, element) so a resumed run is bitwise a straight one."""

from __future__ import annotations

import asyncio
import math

import pytest

from scellis.base.rng import stream_key, uniform
from scellis.cli.main import main
from scellis.run.prepare import RecordProblems, check_record, prepare_run
from scellis.runtime.creation import tensor
from scellis.train.augment import Augment
from storeutil import write_record

SHAPE = (6, 5, 2)  # rows, window, features


def _x(device="reference"):
    vals = [[[math.sin(r * 7 + t * 3 + f) for f in range(2)] for t in range(5)] for r in range(6)]
    return tensor(vals, device=device)


def _flat(t) -> list[float]:
    out: list[float] = []

    def walk(v):
        if isinstance(v, list):
            for w in v:
                walk(w)
        else:
            out.append(v)

    walk(t.tolist())
    return out


def _philox_jitter(seed, step, n, sd):
    """The oracle: Box-Muller over the host Philox's draws 0 and 1 of (seed, step)."""
    key = stream_key(seed, "augment")
    u1, u2 = uniform(key, n, 0, step), uniform(key, n, 1, step)
    return [
        sd * math.sqrt(-2 * math.log(1 - a)) * math.cos(2 * math.pi * b) for a, b in zip(u1, u2)
    ]


def test_jitter_is_the_philox_normal_of_seed_and_step():
    x = _x()
    n = math.prod(SHAPE)
    got = [a - b for a, b in zip(_flat(Augment(noise=0.05).apply(x, 7, 3)), _flat(x))]
    want = _philox_jitter(7, 3, n, 0.05)
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-6
    # another step or seed: other draws; the same pair: the same bits
    assert _flat(Augment(noise=0.05).apply(x, 7, 4)) != _flat(Augment(noise=0.05).apply(x, 7, 3))
    assert _flat(Augment(noise=0.05).apply(x, 8, 3)) != _flat(Augment(noise=0.05).apply(x, 7, 3))
    assert _flat(Augment(noise=0.05).apply(x, 7, 3)) == _flat(Augment(noise=0.05).apply(x, 7, 3))


def test_jitter_statistics():
    x = tensor([[0.0] * 50] * 80, device="reference")
    d = _flat(Augment(noise=0.2).apply(x, 3, 11))
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (len(d) - 1))
    assert abs(mean) < 4 * 0.2 / math.sqrt(len(d))  # 4000 draws: a 4-sigma band
    assert abs(sd / 0.2 - 1) < 0.05
    assert sum(abs(v) < 0.2 for v in d) / len(d) == pytest.approx(0.6827, abs=0.03)


def test_scale_multiplies_each_row_by_its_own_philox_factor():
    x = _x()
    got = Augment(scale=0.25).apply(x, 5, 2).tolist()
    factors = [0.75 + 0.5 * u for u in uniform(stream_key(5, "augment"), SHAPE[0], 2, 2)]
    for row, plain, f in zip(got, x.tolist(), factors):
        for a, b in zip(row, plain):
            assert a == pytest.approx([v * f for v in b], rel=1e-6, abs=1e-7)
    assert len({round(f, 6) for f in factors}) == SHAPE[0]
    assert all(0.75 <= f < 1.25 for f in factors)


def test_webgpu_draws_what_the_reference_draws(gpu):
    aug = Augment(noise=0.1, scale=0.2)
    ref, web = _flat(aug.apply(_x(), 9, 6)), _flat(aug.apply(_x(gpu), 9, 6))
    assert max(abs(a - b) for a, b in zip(ref, web)) < 1e-5


def _with_augment(text: str, value: str) -> str:
    """The tiny record with ``augment: value`` in its data section."""
    line = "  normalise: standard\n"
    return text.replace(line, f"{line}  augment: {value}\n")


def _run(tmp_path, augment: str | None, *, resume_at: int | None = None):
    rec = write_record(tmp_path)
    text = rec.read_text()
    if augment is not None:
        text = _with_augment(text, augment)
    record = check_record(text, "aug.sml")

    def fit(run, **kw):
        async def go():
            return [e async for e in run.fit(log_every=1, **kw)]

        return asyncio.run(go())

    run = prepare_run(record, "reference", base_dir=tmp_path)
    if resume_at is not None:
        fit(run, max_steps=resume_at)
        sd = run.ts.state_dict()
        assert set(sd["rng"]) == {"shuffle", "dropout", "augment"}
        run = prepare_run(record, "reference", base_dir=tmp_path)
        run.ts.load_state_dict(sd)
    events = fit(run)
    weights = {k: v.tolist() for k, v in run.model.live_state().items()}
    return run, events, weights


def test_resume_with_augmentation_is_bitwise_and_validation_is_clean(tmp_path):
    run, events, straight = _run(tmp_path, "{noise: 0.3, scale: 0.2}")
    _, _, resumed = _run(tmp_path, "{noise: 0.3, scale: 0.2}", resume_at=9)  # mid epoch 1
    assert resumed == straight
    _, _, plain = _run(tmp_path, None)
    assert plain != straight  # the augmentation reached the steps
    # validation reads the windows as they are: the last val_loss is the clean loss
    last = [e for e in events if e["kind"] == "eval"][-1]["val_loss"]
    total = count = 0.0
    for x, y in run.val.batches(0, 0):
        d = [(a[0] - b[0]) ** 2 for a, b in zip(run.model(x).tolist(), y.tolist())]
        total, count = total + sum(d), count + len(d)
    assert last == pytest.approx(total / count, rel=1e-5)


def test_a_record_without_augment_trains_as_before(tmp_path):
    _, events, plain = _run(tmp_path, None)
    _, zero_events, zero = _run(tmp_path, "{noise: 0, scale: 0}")
    assert zero == plain
    assert [e.get("loss") for e in zero_events] == [e.get("loss") for e in events]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{noise: -0.1}", "noise must be >= 0"),
        ("{scale: 1.5}", "scale must be < 1"),
        ("{nosie: 0.1}", "unknown data.augment key 'nosie'"),
        ("{noise: .nan}", "noise must be a finite number"),
        ("0.1", "augment must be a dict"),
    ],
)
def test_bad_augment_values_are_located(tmp_path, value, message):
    text = write_record(tmp_path).read_text()
    text = _with_augment(text, value)
    line = text.splitlines().index(f"  augment: {value}") + 1
    with pytest.raises(RecordProblems) as err:
        check_record(text, "aug.sml")
    shown = str(err.value)
    assert message in shown and f"aug.sml:{line}:" in shown


def test_torch_train_export_refuses_augmentation(tmp_path, capsys):
    rec = write_record(tmp_path)
    rec.write_text(_with_augment(rec.read_text(), "{noise: 0.1}"))
    code = main(["export", str(rec), "--to", "torch-train", str(tmp_path / "pkg")])
    err = capsys.readouterr().err
    assert code == 2
    assert "scellis: error: data.augment has no torch-train export yet" in err
    assert "Traceback" not in err


def test_text_data_refuses_augmentation(tmp_path):
    text = _with_augment(write_record(tmp_path).read_text(), "{noise: 0.1}")
    with pytest.raises(RecordProblems, match="numeric windows, not to text data"):
        check_record(text.replace("format: csv", "format: text"), "aug.sml")
