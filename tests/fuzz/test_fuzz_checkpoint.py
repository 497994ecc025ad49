"""train.py checkpoint import, fuzzed: a real checkpoint's state JSON with hostile values
put anywhere (type swaps, huge and negative numbers, NaN, deep nesting, entries removed)
and random mutations of its text. Success (a run that resumes) or one ScellisError."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from harness import budget, checked, inputs
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
from ckptutil import make_package, parts, rewrite  # noqa: E402

from scellis.run.torchtrain import import_checkpoint  # noqa: E402

DEEP = json.loads("[" * 60 + "]" * 60)  # under the parser's bound; deeper is its own case
HOSTILE = [None, True, False, -1, 0, 1, 2**53 + 1, 2**64, 1e30, -1e30, 1e-320, "", "4",
           "NaN", "../x", [], [None], [1.5, "x"], {}, {"a": 1}, {"": 2}, DEEP]  # fmt: skip
REMOVE = object()


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz-ckpt")
    path = make_package(folder)
    return path, *parts(path)


def _places(doc, at=()):
    yield at
    if isinstance(doc, dict):
        items = doc.items()
    else:
        items = enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from _places(v, (*at, k))


def _edited(doc, path, value):
    if not path:
        return value if value is not REMOVE else {}
    out = json.loads(json.dumps(doc))
    node = out
    for k in path[:-1]:
        node = node[k]
    if value is REMOVE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _import(path, store):
    return import_checkpoint(path, store, device="reference")


def test_checkpoint_state_values(seed, tmp_path):
    path, tensors, state = seed
    places = [p for p in _places(state) if p[:1] != ("record",) or len(p) == 1]
    store = tmp_path / "store"

    @budget(60)
    @given(st.lists(st.tuples(st.sampled_from(places), st.sampled_from([*HOSTILE, REMOVE])),
                    min_size=1, max_size=3))  # fmt: skip
    def run(edits):
        doc = state
        for at, value in edits:
            try:
                doc = _edited(doc, at, value)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier edit took this place away
        rewrite(path, tensors, doc)
        checked("ckpt-state", _import, path, store)

    try:
        run()
    finally:
        rewrite(path, tensors, state)


def test_checkpoint_state_text(seed, tmp_path):
    path, tensors, state = seed
    text = json.dumps(state).encode()
    store = tmp_path / "store"

    @budget(40)
    @given(inputs(text, random_size=256))
    def run(data):
        rewrite(path, tensors, state_text=data.decode("utf-8", "replace"))
        checked("ckpt-state", _import, path, store)

    try:
        run()
    finally:
        rewrite(path, tensors, state)


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_state_is_refused(seed, tmp_path, depth):
    path, tensors, state = seed
    nested = json.dumps({**state, "early_stopping": "@"})
    rewrite(path, tensors, state_text=nested.replace('"@"', "[" * depth + "]" * depth))
    try:
        assert checked("ckpt-state", _import, path, tmp_path / "store") is None
    finally:
        rewrite(path, tensors, state)
    shutil.rmtree(tmp_path / "store", ignore_errors=True)
