"""The TF.js model.json reader, fuzzed: random bytes, mutated bytes of real model.json
files (TF.js' own, from tests/tfjs/oracle.mjs) and hostile values put anywhere in their
JSON (wrong types, negative or huge sizes, nesting). Success or one ScellisError."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from harness import budget, checked, inputs
from hypothesis import given
from hypothesis import strategies as st
from tfjsmodels import make_models

from scellis.codecs import make

CAP = 16 << 20
HOSTILE = [None, True, -1, 0, 2**62, 1e308, float("nan"), "", "x", "../x", [], [None], {},
           {"dtype": "uint8"}, [[1, 2]], "Conv2D", "causal", [-3], [2**40, 2**40]]  # fmt: skip
SEEDS = ("mlp", "conv_uint8", "gru")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return make_models(tmp_path_factory.mktemp("tfjs-seeds"))


def _paths(doc, at=()):
    """Every place in a JSON document (the paths of its values)."""
    yield at
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for k, v in items:
        yield from _paths(v, (*at, k))


def _replaced(doc, path, value):
    if not path:
        return value
    out = json.loads(json.dumps(doc))
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _case_folder(seeds, tmp_path_factory, case):
    folder = tmp_path_factory.mktemp(f"fuzz-tfjs-{case}")
    shutil.copytree(seeds / case, folder, dirs_exist_ok=True)
    return folder


@pytest.mark.parametrize("case", SEEDS)
def test_tfjs_bytes(seeds, tmp_path_factory, case):
    codec = make("codec/tfjs", max_bytes=CAP)
    folder = _case_folder(seeds, tmp_path_factory, case)
    seed = (seeds / case / "model.json").read_bytes()

    @budget(40)
    @given(inputs(seed, random_size=512))
    def run(data):
        (folder / "model.json").write_bytes(data)
        checked("tfjs", codec.read, folder / "model.json")

    run()


@pytest.mark.parametrize("case", SEEDS)
def test_tfjs_values(seeds, tmp_path_factory, case):
    codec = make("codec/tfjs", max_bytes=CAP)
    folder = _case_folder(seeds, tmp_path_factory, case)
    doc = json.loads((seeds / case / "model.json").read_text())
    places = list(_paths(doc))

    @budget(100)
    @given(st.lists(st.tuples(st.sampled_from(places), st.sampled_from(HOSTILE)), max_size=3))
    def run(edits):
        d = doc
        for path, value in edits:
            try:
                d = _replaced(d, path, value)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier edit removed this place
        (folder / "model.json").write_text(json.dumps(d))
        checked("tfjs", codec.read, folder / "model.json")

    run()


def test_deep_nesting_is_refused(seeds, tmp_path_factory):
    codec = make("codec/tfjs", max_bytes=CAP)
    folder = _case_folder(seeds, tmp_path_factory, "mlp")
    depth = sys.getrecursionlimit() * 2
    (folder / "model.json").write_text('{"modelTopology": ' + "[" * depth + "]" * depth + "}")
    checked("tfjs", codec.read, folder / "model.json")
