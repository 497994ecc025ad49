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
from scellis.webapp import api, commands, model_api  # noqa: F401 (api: every command)
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

    got = _losses(text, "reference")
    assert len(got) == 12 and sum(got[-3:]) < sum(got[:3]), got


def _losses(text: str, device: str, replay: bool = True) -> list[float]:
    async def drive():
        opts = RunOptions(max_steps=12, validate=False, replay=replay)
        s = start_run(text.encode(), "tab.sml", options=opts, base_dir=EXAMPLES, device=device)
        events = [e async for e in s.events()]
        end = next(e for e in events if e.kind == "end")
        return [e.loss for e in events if e.kind == "log"], end.replay

    losses, replay_info = asyncio.run(drive())
    assert not replay or device != "webgpu" or replay_info["replayed_steps"] > 0, replay_info
    return losses


@pytest.mark.webgpu
def test_a_users_optimizer_replays_as_it_ran_eagerly(loaded):
    # its update is ordinary ops recorded with the step: nothing of it to patch
    text = _record("[sign_sgd.py]")
    assert _losses(text, "webgpu") == _losses(text, "webgpu", replay=False)


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
    assert commands.lookup("load_extension").fn is load_extension  # the worker can call it
