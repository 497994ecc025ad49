"""``scellis generate RUN``: a trained char LM continues a prompt; bad prompts and
runs that are no language model are one clear message, exit 2."""

from __future__ import annotations

import asyncio
import json

import pytest

import scellis
from generate.genutil import ALPHABET, torch_choose, write_lm
from scellis.autograd import no_grad
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.run.generate import draws, generate, lm_context
from scellis.run.reference import open_run
from scellis.runtime.creation import tensor
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
    assert f"run {rid} is not a language model: it trained on a series, not text" in err
    assert "(predict and evaluate use it)" in err and "Traceback" not in err


def test_a_head_wider_than_the_texts_characters_writes_only_its_characters(tmp_path, capsys):
    """A record copied from the example keeps its 88-wide head on a text of fewer
    characters: the ids past the vocabulary are never chosen (the oracle: the sampling
    procedure in torch over the model's logits of the vocabulary's ids, recomputed on
    the whole text at every step)."""
    record = write_lm(tmp_path, position="learned", context=8)
    v = len(ALPHABET)
    text = record.read_text()
    wide = text.replace(f"num_embeddings: {v},", "num_embeddings: 88,")
    wide = wide.replace(f"vocab_size: {v} ", "vocab_size: 88 ")
    assert wide.count(": 88") == 2
    record.write_text(wide)
    store = tmp_path / "s"
    rid = _train(record, store)  # three steps: the head's extra logits are still large
    run = open_run(store, rid)
    ds, model = run.dataset(), run.model("reference")
    for seed in (1, 2, 3):
        rc, out, err = gen(capsys, store, rid, "--prompt", "ab", "--max-new", "6",
                           "--temperature", "3", "--seed", str(seed), "--json")  # fmt: skip
        assert rc == 0, err
        got = json.loads(out)["ids"]
        seq, us = ds.vocab.encode("ab"), draws(seed, 1)
        for i in got:
            with no_grad():
                logits = model(tensor([seq[-8:]], device="reference", dtype="i32"))
            row = logits[:, logits.shape[1] - 1].tolist()[0]
            assert len(row) == 88
            assert i == torch_choose(row[:v], next(us)[0], 3.0)
            seq.append(i)


def interrupted_after_first_output(argv, delay=0.0):
    """(stderr, seconds from Ctrl-C to exit, exit status) of ``argv`` sent SIGINT with its
    default action (a terminal's Ctrl-C, whatever this process inherited) ``delay``
    seconds after it first writes."""
    import signal  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import time  # noqa: PLC0415

    def default_ctrl_c():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_ctrl_c)  # fmt: skip
    assert p.stdout.read(1)  # the work has started
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()  # nothing left behind when it did not stop
    return err.decode(), time.monotonic() - sent, p.returncode


def test_one_ctrl_c_stops_a_long_generation_at_once(lm):
    import sys  # noqa: PLC0415

    store, rid = lm
    code = "import sys; from scellis.cli.main import main; sys.exit(main(sys.argv[1:]))"
    err, waited, status = interrupted_after_first_output(
        [sys.executable, "-u", "-c", code, "generate", rid, "--store", str(store),
         "--device", "reference", "--prompt", "ab", "--max-new", "1000000"])  # fmt: skip
    assert waited < 10 and status == 130 and err.strip() == "scellis: interrupted"
