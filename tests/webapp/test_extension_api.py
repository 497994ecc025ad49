"""The tab's Load extension…: a user's file, loaded by name and text, registers its
optimizer as a built-in; a record naming only loaded files validates and trains, one
naming another file is refused, and bad names never reach the file system."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.run.options import RunOptions
from scellis.run.session import start_run
from scellis.webapp import api, model_api
from scellis.webapp.extension_api import load_extension

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
SIGN_SGD = (HERE / "user_ext" / "sign_sgd.py").read_text()
OPTIMIZER = "optimizer: { block_id: training/optimizer/adam, lr: 0.01 }"


def _record(extensions: str) -> str:
    text = (EXAMPLES / "lstm_forecaster.sml").read_text()
    edited = text.replace(OPTIMIZER, "optimizer: { block_id: user/optimizer/sign_sgd, lr: 0.005 }")
    assert edited != text
    return f"extensions: {extensions}\n" + edited.replace("batch_size: 32", "batch_size: 16")


@pytest.fixture(scope="module")
def loaded():
    return load_extension("sign_sgd.py", SIGN_SGD)


def test_a_loaded_optimizer_is_in_the_catalog_and_trains(loaded):
    assert {"id": "user/optimizer/sign_sgd", "kind": "optimizer"} in loaded["registered"]
    assert "user/optimizer/sign_sgd" in {e["id"] for e in model_api.catalog("optimizer")}
    assert load_extension("sign_sgd.py", SIGN_SGD)["registered"] == []  # not run twice
    text = _record("[sign_sgd.py]")
    assert model_api.project(text)["ok"]

    async def losses():
        opts = RunOptions(max_steps=12, validate=False)
        s = start_run(text.encode(), "tab.sml", options=opts, base_dir=EXAMPLES)
        return [e.loss for e in [e async for e in s.events()] if e.kind == "log"]

    got = asyncio.run(losses())
    assert len(got) == 12 and sum(got[-3:]) < sum(got[:3]), got


def test_a_record_naming_a_file_not_loaded_is_refused(loaded):
    out = model_api.project(_record("[sign_sgd.py, other.py]"))
    assert not out["ok"]
    (d,) = out["diagnostics"]
    assert "other.py" in d["message"] and "Load extension" in d["message"]


@pytest.mark.parametrize(
    "name", ["../x.py", "/tmp/x.py", "x.txt", "a/b.py", "", ".py", "x" * 100 + ".py"]
)
def test_a_bad_name_is_one_clear_error(name):
    with pytest.raises(ScellisError, match="plain name"):
        load_extension(name, "x = 1\n")


def test_a_failing_file_names_its_line():
    with pytest.raises(ScellisError, match=r"broken\.py:2: .*ZeroDivisionError"):
        load_extension("broken.py", "x = 1\ny = 1 / 0\n")
    assert "load_extension" in api._COMMANDS  # the worker can call it
