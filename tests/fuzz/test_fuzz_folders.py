"""Model folders, fuzzed: a Hugging Face folder's config.json and sharded index, and a
TF.js model's weights manifest, as mutated bytes and as hostile values put anywhere in
their JSON. Every case ends in success or one ScellisError, within the harness' time
and memory bounds, and reads nothing outside its folder."""

from __future__ import annotations

import json

import pytest
from folders import hf_folder, tfjs_folder
from harness import budget, checked, inputs
from hypothesis import given
from hypothesis import strategies as st

from scellis.codecs import make

CAP = 16 << 20
INDEX = "model.safetensors.index.json"
HOSTILE = [
    None,
    True,
    False,
    -1,
    0,
    1,
    2.5,
    10**9,
    2**31,
    1e30,
    "",
    "x",
    "32",
    "../x",
    "/etc/passwd",
    "a\\..\\b",
    [],
    [None],
    [1, "a"],
    {},
    {"rope_type": "yarn"},
    {"factor": -1},
    "model-00001-of-00002.safetensors",
]


def _places(doc, at=()):
    """Every place in a JSON document (the paths of its values), keys included as new."""
    yield at
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for k, v in items:
        yield from _places(v, (*at, k))


def _put(doc, path, value):
    out = json.loads(json.dumps(doc))
    if not path:
        return value
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _edited(doc, edits):
    for path, value in edits:
        try:
            doc = _put(doc, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed this place
    return doc


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    return hf_folder(tmp_path_factory.mktemp("fuzz-hf"), sharded=True)


@pytest.mark.parametrize("name", ["config.json", INDEX])
def test_hf_bytes(hf, name):
    codec = make("codec/hf", max_bytes=CAP)
    seed = (hf / name).read_bytes()

    @budget(50)
    @given(inputs(seed, random_size=512))
    def run(data):
        (hf / name).write_bytes(data)
        checked("hf", codec.read, hf)

    try:
        run()
    finally:
        (hf / name).write_bytes(seed)


@pytest.mark.parametrize("name", ["config.json", INDEX])
def test_hf_values(hf, name):
    codec = make("codec/hf", max_bytes=CAP)
    seed = (hf / name).read_bytes()
    doc = json.loads(seed)
    # in the index, the weight_map entries and their values; in config.json, every field
    places = dict.fromkeys(
        [
            *_places(doc),
            *((k,) for k in ("rope_scaling", "sliding_window", "layer_types", "head_dim")),
        ]
    )

    @budget(80)
    @given(
        st.lists(
            st.tuples(st.sampled_from(list(places)), st.sampled_from(HOSTILE)),
            min_size=1,
            max_size=3,
        )
    )
    def run(edits):
        (hf / name).write_text(json.dumps(_edited(doc, edits)))
        checked("hf", codec.read, hf)

    try:
        run()
    finally:
        (hf / name).write_bytes(seed)


def test_tfjs_manifest_values(tmp_path_factory):
    folder = tfjs_folder(tmp_path_factory.mktemp("fuzz-tfjs-manifest"), chain=2)
    codec = make("codec/tfjs", max_bytes=CAP)
    doc = json.loads((folder / "model.json").read_text())
    manifest = [p for p in _places(doc) if p[:1] == ("weightsManifest",)]
    topology = [p for p in _places(doc) if "inbound_nodes" in p or "name" in p]

    @budget(80)
    @given(
        st.lists(
            st.tuples(st.sampled_from(manifest + topology), st.sampled_from(HOSTILE)),
            min_size=1,
            max_size=3,
        )
    )
    def run(edits):
        (folder / "model.json").write_text(json.dumps(_edited(doc, edits)))
        checked("tfjs-manifest", codec.read, folder)

    run()
