"""``scellis share RUN`` and ``scellis reproduce LINK``: a link carries what reproduces the
run, reproducing it on ``debug`` gives the same losses bit for bit (and says so when they
are not), and a damaged or hostile link is one line and exit 2."""

from __future__ import annotations

import base64
import json
import math
import random
import urllib.parse
import zlib
from pathlib import Path

import pytest

import scellis
from scellis.cli.main import main
from scellis.run.share import MAX_FRAGMENT, Shared, encode, link_of, read_link, shared_of
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from storeutil import write_record


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A short debug run with a non-default option that changes its steps."""
    root = tmp_path_factory.mktemp("share")
    rec = write_record(root, seed=7, lr=0.03)
    store = root / "s"
    assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                 "--max-steps", "6", "--drop-last", "--seed", "9"]) == 0  # fmt: skip
    r = Records(store)
    (run,) = r.runs()
    losses = r.metrics(run["id"], "loss")
    r.close()
    return {"root": root, "store": store, "run": run, "losses": losses,
            "data": root / "series.csv"}  # fmt: skip


def _payload(link: str) -> dict:
    data = urllib.parse.urlsplit(link).fragment.split("=", 1)[1]
    raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    return json.loads(zlib.decompress(raw, -15))


def _link(payload: dict) -> str:
    text = json.dumps(payload).encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(text) + packer.flush()
    return "http://h/#repro=" + base64.urlsafe_b64encode(packed).decode().rstrip("=")


def test_link_carries_the_run(trained, capsys):
    store, run = trained["store"], trained["run"]
    code, out, err = _cli(capsys, "share", run["id"][:10], "--store", str(store), "--steps", "4",
                          "--site", "https://example.org/tab/")  # fmt: skip
    assert code == 0, err
    link = out.strip()
    assert link.startswith("https://example.org/tab/#repro=") and len(link) < 2000
    p = _payload(link)  # decoded independently of scellis: deflate-raw, base64url
    text = ObjectStore(store).get(run["record_hash"]).decode()
    assert p["record"] == text and "seed: 9" in text  # the record as trained, --seed applied
    assert p["dataset"] == run["dataset_hash"] and p["seed"] == 9 and p["tier"] == "debug"
    assert [tuple(x) for x in p["losses"]] == trained["losses"][:4]
    assert p["options"]["drop_last"] is True and "extensions" not in p["options"]
    assert p["run"] == run["id"] and p["device"] == "reference"
    back = read_link(link)
    assert back.losses == trained["losses"][:4] and back.record == text
    assert scellis.share(run["id"], store=store, steps=4, site="https://example.org/tab/") == link


def test_reproduce_matches_bit_for_bit(trained, capsys, tmp_path):
    link = scellis.share(trained["run"]["id"], store=trained["store"])
    out = scellis.reproduce(link, str(trained["data"]), store=tmp_path / "s2")
    assert out["bitwise"] and out["steps"] == 6 and out["first_difference"] is None
    r = Records(tmp_path / "s2")
    (new,) = r.runs()
    assert r.metrics(new["id"], "loss") == trained["losses"]
    assert new["dataset_hash"] == trained["run"]["dataset_hash"] and new["seed"] == 9
    r.close()
    code, text, err = _cli(capsys, "reproduce", link, "--data", str(trained["data"]),
                           "--store", str(tmp_path / "s3"))  # fmt: skip
    assert code == 0 and "all 6 losses match bit for bit" in text, err


def test_a_changed_loss_is_told(trained, capsys, tmp_path):
    shared = shared_of(trained["store"], trained["run"]["id"])
    step, v = shared.losses[2]
    shared.losses[2] = (step, math.nextafter(v, math.inf))  # one ulp off
    link = link_of(shared)
    code, out, err = _cli(capsys, "reproduce", link, "--data", str(trained["data"]), "--store",
                          str(tmp_path / "s"), "--json")  # fmt: skip
    got = json.loads(out)
    assert code == 0 and not got["bitwise"] and got["first_difference"] == step
    assert 0 < got["max_relative_difference"] < 1e-12


def test_data_must_be_the_runs(trained, capsys, tmp_path):
    link = scellis.share(trained["run"]["id"], store=trained["store"])
    bad = tmp_path / "other.csv"
    bad.write_text(trained["data"].read_text() + "0.25\n")
    store = tmp_path / "s"
    for extra in ([], ["--data", str(bad)], ["--data", str(tmp_path / "missing.csv")]):
        code, out, err = _cli(capsys, "reproduce", link, "--store", str(store), *extra)
        assert code == 2 and err.startswith("scellis: error: ") and err.count("\n") == 1, err
    assert "--data" in _cli(capsys, "reproduce", link, "--store", str(store))[2]
    assert (
        trained["run"]["dataset_hash"]
        in _cli(capsys, "reproduce", link, "--store", str(store), "--data", str(bad))[2]
    )


def _base(trained) -> dict:
    return _payload(scellis.share(trained["run"]["id"], store=trained["store"]))


def _hostile(trained) -> list[str]:
    good = scellis.share(trained["run"]["id"], store=trained["store"])
    base = _base(trained)
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = bomb.compress(b"[" + b" " * 4_000_000 + b"]") + bomb.flush()
    changed = [
        {**base, "v": 2}, {**base, "record": 3}, {**base, "record": ""},
        {**base, "dataset": "../../etc"}, {**base, "seed": -1}, {**base, "seed": 1.5},
        {**base, "tier": "turbo"}, {**base, "losses": []}, {**base, "losses": [[1, "x"]]},
        {**base, "losses": [[2, 1.0], [1, 1.0]]}, {**base, "losses": [[1, 1.0]] * 2},
        {**base, "losses": [[i + 1, 1.0] for i in range(65)]},
        {**base, "options": {"extensions": ["/tmp/evil.py"]}},
        {**base, "run": "a/../b"}, {**base, "device": "x" * 80}, [base],
        {**base, "record": base["record"].replace("data:", "data:\n  extra_key: 1\n  x:")},
        {**base, "record": base["record"].replace("source: series.csv", "source: ../x.csv")},
        {**base, "record": "extensions: [evil.py]\n" + base["record"]},  # code never runs
        {**base, "options": {"log_every": "x"}},
    ]  # fmt: skip
    return [
        *(_link(p) for p in changed),
        good[:-20],
        good + "!!",
        good.split("#")[0],
        "http://h/#repro=",
        "http://h/#repro=" + base64.urlsafe_b64encode(bomb).decode().rstrip("="),
        "http://h/#repro=" + "A" * (MAX_FRAGMENT + 10),
    ]


def test_hostile_links_are_one_line(trained, capsys, tmp_path):
    for i, link in enumerate(_hostile(trained)):
        code, out, err = _cli(capsys, "reproduce", link, "--data", str(trained["data"]),
                              "--store", str(tmp_path / "s"))  # fmt: skip
        assert code == 2 and err.startswith("scellis: error: "), (i, err)
        assert err.count("\n") <= 2 and "Traceback" not in err, (i, err)
    # nothing trained from any of them
    assert not (tmp_path / "s").exists() or not Records(tmp_path / "s").runs()


def test_share_refuses_what_a_link_cannot_hold(trained, capsys, tmp_path):
    store = trained["store"]
    rid = trained["run"]["id"]
    for args in (["--site", "javascript:alert(1)"], ["--site", "http://h/#x"],
                 ["--steps", "0"], ["--steps", "65"]):  # fmt: skip
        code, _, err = _cli(capsys, "share", rid, "--store", str(store), *args)
        assert code == 2 and err.startswith("scellis: error: ") and err.count("\n") == 1, args
    code, _, err = _cli(capsys, "share", "nope", "--store", str(store))
    assert code == 2 and "no run" in err
    huge = shared_of(store, rid)
    # a record whose text does not compress: a link this long is refused, not made
    noise = base64.b64encode(random.Random(3).randbytes(16_000)).decode()
    huge.record += "\n# " + "\n# ".join(noise[i : i + 60] for i in range(0, len(noise), 60))
    with pytest.raises(scellis.ScellisError, match="too long for a link"):
        link_of(huge)
    small = Shared("model: x\n", None, 1, "debug", [(1, 0.5)])
    assert len(encode(small)) < 200 and read_link(link_of(small)).losses == [(1, 0.5)]


def test_bundled_data_needs_no_file_but_its_version_is_checked(tmp_path, capsys):
    rec = tmp_path / "lstm.sml"
    rec.write_text((Path(scellis.__file__).parents[2] / "examples" / "lstm_forecaster.sml")
                   .read_text())  # fmt: skip
    store = tmp_path / "s"
    assert main(["train", str(rec), "--store", str(store), "--device", "reference",
                 "--max-steps", "2", "--no-validate"]) == 0  # fmt: skip
    capsys.readouterr()
    link = scellis.share("last", store=store)
    code, out, err = _cli(capsys, "reproduce", link, "--store", str(tmp_path / "s2"), "--json")
    assert code == 0 and json.loads(out)["bitwise"], err
    p = _payload(link)
    p["dataset"] = "0" * 64  # another version of the bundled file
    code, out, err = _cli(capsys, "reproduce", _link(p), "--store", str(tmp_path / "s3"))
    assert code == 2 and "0" * 64 in err and err.count("\n") == 1
