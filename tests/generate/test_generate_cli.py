"""``scellis generate RUN``: a trained char LM continues a prompt; bad prompts and
runs that are no language model are one clear message, exit 2."""

from __future__ import annotations

import asyncio
import json

import pytest
from genutil import write_lm

import scellis
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.run.generate import generate, lm_context
from scellis.run.reference import open_run
from scellis.store.records import Records
from scellis.webapp import api
from storeutil import write_record


def _train(record, store) -> str:
    argv = ["train", str(record), "--device", "reference", "--store", str(store), "--json",
            "--max-steps", "3"]  # fmt: skip
    assert main(argv) == 0
    records = Records(store)
    try:
        (run,) = records.runs()
    finally:
        records.close()
    return run["id"]


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    store = folder / "s"
    return store, _train(write_lm(folder, position="rotary", context=8), store)


def gen(capsys, store, rid, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["generate", rid, "--store", str(store), "--device", "reference", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_generate_prints_the_continuation(lm, capsys):
    store, rid = lm
    rc, out, _ = gen(capsys, store, rid, "--prompt", "abc", "--max-new", "12",
                     "--temperature", "0")  # fmt: skip
    assert rc == 0 and out.endswith("\n") and len(out) == 13
    run = open_run(store, rid)
    ds = run.dataset()
    assert set(out[:-1]) <= set(ds.vocab.chars)
    # the same generator as Python's
    ids = asyncio.run(generate(run.model("reference"), ds.vocab.encode("abc"), max_new=12,
                               temperature=0, context=lm_context(run.record)))  # fmt: skip
    assert out[:-1] == ds.vocab.decode(ids)
    rc, js, _ = gen(capsys, store, rid, "--prompt", "abc", "--max-new", "12",
                    "--temperature", "0", "--json")  # fmt: skip
    row = json.loads(js)
    assert rc == 0 and row["generated"] == out[:-1] and row["ids"] == ids
    assert row["run"] == run.ref and row["prompt"] == "abc"
    # and scellis.load's
    loaded = scellis.load(rid, store=str(store))
    assert loaded.generate("abc", max_new=12, temperature=0) == out[:-1]


def test_the_tab_continues_with_the_same_generator(lm, capsys):
    store, rid = lm
    args = {"run": rid, "prompt": "hag", "store": str(store), "device": "reference",
            "max_new": 10, "temperature": 0.7, "top_k": 4, "seed": 6}  # fmt: skip

    async def go():
        return [e async for e in api.dispatch("generate", json.dumps(args))]

    evs = asyncio.run(go())
    assert [e["kind"] for e in evs] == ["token"] * 10 + ["generated"]
    rc, out, _ = gen(capsys, store, rid, "--prompt", "hag", "--max-new", "10",
                     "--temperature", "0.7", "--top-k", "4", "--seed", "6")  # fmt: skip
    assert rc == 0 and evs[-1]["generated"] == out[:-1] == "".join(e["text"] for e in evs[:-1])
    bad = api.dispatch("generate", json.dumps({**args, "prompt": "q"}))
    with pytest.raises(ScellisError, match="not in the vocabulary"):
        asyncio.run(_first(bad))
    assert "vocabulary" in api.last_error()["message"]


async def _first(agen):
    async for e in agen:
        return e


def test_a_seed_names_one_sampled_continuation(lm, capsys):
    store, rid = lm
    args = ["--prompt", "ab ", "--max-new", "20", "--top-k", "5", "--top-p", "0.95"]
    one = gen(capsys, store, rid, *args, "--seed", "1")
    assert one == gen(capsys, store, rid, *args, "--seed", "1")
    assert one[0] == 0 and one != gen(capsys, store, rid, *args, "--seed", "2")


def test_a_character_outside_the_vocabulary_is_one_clear_message(lm, capsys):
    store, rid = lm
    rc, out, err = gen(capsys, store, rid, "--prompt", "abz")
    assert rc == 2 and out == ""
    assert "'z' (at 3) is not in the vocabulary" in err and "Traceback" not in err
    assert gen(capsys, store, rid, "--prompt", "a", "--top-p", "0")[0] == 2


def test_a_run_that_is_no_language_model_is_one_clear_message(tmp_path, capsys):
    store = tmp_path / "s"
    rid = _train(write_record(tmp_path), store)
    rc, out, err = gen(capsys, store, rid, "--prompt", "abc")
    assert rc == 2 and out == ""
    assert f"run {rid} is not a language model" in err and "Traceback" not in err
