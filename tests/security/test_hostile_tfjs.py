"""Hostile TF.js Layers models through ``scellis import``: manifest paths and links
that leave the folder, shards that are FIFOs or devices or listed again and again,
deep JSON, and topologies whose ordering used to grow with the square of the layers.
Each ends in one line and exit 2, within the bounds; valid models still import."""

from __future__ import annotations

import json
import os
import time

import pytest
from folders import tfjs_folder
from hostile import Sentinel, refuse

from scellis.cli.main import main
from scellis.codecs.tfjs.topology import MAX_LAYERS


@pytest.fixture
def sentinel(tmp_path):
    s = Sentinel(tmp_path / "outside")
    yield s
    s.unchanged()


def _edit(folder, edit):
    doc = json.loads((folder / "model.json").read_text())
    edit(doc)
    (folder / "model.json").write_text(json.dumps(doc))


def _paths(folder, paths):
    def edit(doc):
        doc["weightsManifest"][0]["paths"] = paths

    _edit(folder, edit)


def _import(capsys, path, store, match=None, sentinel=None, seconds=5.0):
    line = refuse(capsys, ["import", path, "--store", store], match, seconds=seconds)
    if sentinel is not None:
        assert not sentinel.secret_leaked(line), line
    return line


@pytest.mark.parametrize("backwards", [False, True])
def test_valid_models_import(tmp_path, capsys, backwards):
    folder = tfjs_folder(tmp_path / "m", chain=3, backwards=backwards)
    (folder / "shards").mkdir()
    os.replace(folder / "w.bin", folder / "shards" / "w.bin")
    os.symlink("shards/w.bin", folder / "w.bin")  # a link that stays inside is followed
    for path in (folder, folder / "model.json"):
        assert main(["import", str(path), "--store", str(tmp_path / "s")]) == 0
        assert "2 tensors" in capsys.readouterr().out


# -- paths and links out of the folder -----------------------------------------------------


@pytest.mark.parametrize(
    "shard",
    [
        "../outside/secret.txt",
        "/etc/passwd",
        "sub/../../x",
        "..\\outside\\secret.txt",
        "",
        7,
        None,
        ["w.bin"],
    ],
)
def test_manifest_paths_that_leave_the_folder_are_refused(tmp_path, capsys, sentinel, shard):
    folder = tfjs_folder(tmp_path / "m")
    _paths(folder, [shard])
    _import(capsys, folder, tmp_path / "s", "weight shard", sentinel)


def test_links_out_of_the_folder_are_not_followed(tmp_path, capsys, sentinel):
    folder = tfjs_folder(tmp_path / "m")
    os.symlink(sentinel.root / "model.safetensors", folder / "evil.bin")
    _paths(folder, ["evil.bin"])
    _import(capsys, folder, tmp_path / "s", "outside the model's folder", sentinel)
    os.symlink(sentinel.root, folder / "sub")  # a folder link: its files are outside too
    _paths(folder, ["sub/model.safetensors"])
    _import(capsys, folder, tmp_path / "s", "outside the model's folder", sentinel)
    os.symlink("/dev/zero", folder / "zero.bin")
    _paths(folder, ["zero.bin"])
    _import(capsys, folder, tmp_path / "s", "outside the model's folder", sentinel)


def test_a_model_json_linked_out_of_a_given_folder_is_refused(tmp_path, capsys, sentinel):
    folder = tfjs_folder(tmp_path / "m")
    (folder / "model.json").unlink()
    os.symlink(sentinel.root / "config.json", folder / "model.json")
    _import(capsys, folder, tmp_path / "s", "outside the model's folder", sentinel)


# -- FIFOs, devices, repeats ---------------------------------------------------------------


def test_fifo_shards_and_device_files_are_refused_at_once(tmp_path, capsys):
    folder = tfjs_folder(tmp_path / "m")
    os.mkfifo(folder / "pipe.bin")
    _paths(folder, ["pipe.bin"])
    _import(capsys, folder, tmp_path / "s", "FIFO")
    os.mkfifo(tmp_path / "model.json")
    _import(capsys, tmp_path / "model.json", tmp_path / "s", "FIFO")
    folder = tfjs_folder(tmp_path / "m2")
    (folder / "model.json").unlink()
    os.mkfifo(folder / "model.json")
    _import(capsys, folder, tmp_path / "s", "FIFO")


def test_a_shard_listed_thousands_of_times_is_refused(tmp_path, capsys):
    folder = tfjs_folder(tmp_path / "m")
    _paths(folder, ["w.bin"] * 2000)
    _import(capsys, folder, tmp_path / "s", "listed twice", seconds=2)
    _paths(folder, ["w.bin", "./w.bin"])  # the same file by two spellings
    _import(capsys, folder, tmp_path / "s", "listed twice")

    def two_groups(doc):
        doc["weightsManifest"].append(dict(doc["weightsManifest"][0]))

    _paths(folder, ["w.bin"])
    _edit(folder, two_groups)
    _import(capsys, folder, tmp_path / "s", "listed twice")


# -- JSON and topology ---------------------------------------------------------------------


def test_deep_json_is_one_message(tmp_path, capsys):
    folder = tfjs_folder(tmp_path / "m")
    deep = "[" * 100_000 + "]" * 100_000
    (folder / "model.json").write_text('{"modelTopology": ' + deep + "}")
    _import(capsys, folder, tmp_path / "s", "nests deeper")
    (folder / "model.json").write_text('{"modelTopology": {}, "n": ' + "7" * 5000 + "}")
    _import(capsys, folder, tmp_path / "s", "5000-digit")


def test_many_layers_are_bounded_and_ordered_in_linear_time(tmp_path, capsys):
    big = tfjs_folder(tmp_path / "big", chain=10_000, backwards=True)
    _import(capsys, big, tmp_path / "s", f"at most {MAX_LAYERS}")
    # listed last-first, a long chain used to take a pass over the list per layer
    folder = tfjs_folder(tmp_path / "m", chain=300, backwards=True)
    t0 = time.perf_counter()
    assert main(["import", str(folder), "--store", str(tmp_path / "s")]) == 0
    assert time.perf_counter() - t0 < 5
    capsys.readouterr()


def test_cycles_repeats_and_dangling_inputs_are_one_message(tmp_path, capsys):
    folder = tfjs_folder(tmp_path / "m", chain=3)

    def cycle(doc):
        layers = doc["modelTopology"]["config"]["layers"]
        layers[2]["inbound_nodes"] = [[["a2", 0, 0, {}]]]  # a0 reads a2, which reads a0

    _edit(folder, cycle)
    _import(capsys, folder, tmp_path / "s", "which no layer makes")
    folder = tfjs_folder(tmp_path / "m2", chain=3)

    def twice(doc):
        layers = doc["modelTopology"]["config"]["layers"]
        layers[3]["name"] = layers[3]["config"]["name"] = "a0"

    _edit(folder, twice)
    _import(capsys, folder, tmp_path / "s", "two layers are named 'a0'")


def test_long_names_are_not_echoed(tmp_path, capsys):
    folder = tfjs_folder(tmp_path / "m")

    def long_kind(doc):
        doc["modelTopology"]["config"]["layers"][1]["class_name"] = "K" * 100_000

    _edit(folder, long_kind)
    line = _import(capsys, folder, tmp_path / "s", "not supported")
    assert "K" * 200 not in line
    _paths(folder, ["x" * 100_000])
    line = _import(capsys, folder, tmp_path / "s", "weight shard")
    assert "x" * 200 not in line
