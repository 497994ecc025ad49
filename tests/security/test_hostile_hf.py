"""Hostile Hugging Face folders through ``scellis import``: links out of the folder,
index entries that climb out, FIFOs and devices, deep JSON, configs of the wrong types
or of sizes no file backs. Each ends in one line and exit 2, nothing outside the folder
read or changed; the valid folder beside them still imports."""

from __future__ import annotations

import json
import os
import socket
import struct

import pytest
from folders import LLAMA, hf_folder, llama_tensors, safetensors_bytes
from hostile import Sentinel, refuse

from scellis.base.errors import ScellisError
from scellis.cli.main import main

INDEX = "model.safetensors.index.json"
SHARD = "model-00001-of-00002.safetensors"


@pytest.fixture
def sentinel(tmp_path):
    s = Sentinel(tmp_path / "outside")
    yield s
    s.unchanged()


def _import(capsys, folder, store, match=None, sentinel=None):
    line = refuse(capsys, ["import", folder, "--store", store], match)
    if sentinel is not None:
        assert not sentinel.secret_leaked(line), line
    return line


def test_valid_folders_import(tmp_path, capsys):
    for sharded in (False, True):
        folder = hf_folder(tmp_path / f"m{int(sharded)}", sharded=sharded)
        # a link that stays inside the folder is followed
        if not sharded:
            (folder / "weights").mkdir()
            os.replace(folder / "model.safetensors", folder / "weights" / "w.safetensors")
            os.symlink("weights/w.safetensors", folder / "model.safetensors")
        assert main(["import", str(folder), "--store", str(tmp_path / "s")]) == 0
        assert "tensors -> weights sha256:" in capsys.readouterr().out


# -- links and paths out of the folder -----------------------------------------------------

LINKS = {  # the entry in the folder -> the sentinel's file it leads to
    "config.json": "config.json",
    "model.safetensors": "model.safetensors",
    INDEX: "config.json",
    SHARD: "model.safetensors",
    "tokenizer.json": "secret.txt",
}


@pytest.mark.parametrize("entry", sorted(LINKS))
def test_links_out_of_the_folder_are_not_followed(tmp_path, capsys, sentinel, entry):
    folder = hf_folder(tmp_path / "m", sharded=entry in (INDEX, SHARD))
    (folder / entry).unlink(missing_ok=True)
    os.symlink(sentinel.root / LINKS[entry], folder / entry)
    _import(capsys, folder, tmp_path / "s", "outside the model's folder", sentinel)


def test_a_linked_subfolder_and_a_dangling_link_are_refused(tmp_path, capsys, sentinel):
    folder = hf_folder(tmp_path / "m")
    (folder / "model.safetensors").unlink()
    os.symlink(sentinel.root, folder / "sub")
    os.symlink("sub/model.safetensors", folder / "model.safetensors")
    _import(capsys, folder, tmp_path / "s", "outside the model's folder", sentinel)
    (folder / "model.safetensors").unlink()
    os.symlink(tmp_path / "nowhere", folder / "model.safetensors")
    _import(capsys, folder, tmp_path / "s", "outside|cannot read", sentinel)


@pytest.mark.parametrize(
    "shard",
    ["../outside/model.safetensors", "/etc/passwd", "sub/../x", "..", ".", "a\\..\\..\\x", ""],
)
def test_index_entries_that_leave_the_folder_are_refused(tmp_path, capsys, sentinel, shard):
    folder = hf_folder(tmp_path / "m", sharded=True)
    doc = json.loads((folder / INDEX).read_text())
    doc["weight_map"]["lm_head.weight"] = shard
    (folder / INDEX).write_text(json.dumps(doc))
    _import(capsys, folder, tmp_path / "s", "index.json", sentinel)


@pytest.mark.parametrize("value", [1, None, ["a"], {"a": 1}, True])
def test_weight_map_values_must_be_file_names(tmp_path, capsys, value):
    folder = hf_folder(tmp_path / "m", sharded=True)
    doc = json.loads((folder / INDEX).read_text())
    doc["weight_map"]["lm_head.weight"] = value
    (folder / INDEX).write_text(json.dumps(doc))
    _import(capsys, folder, tmp_path / "s", r"weight_map\['lm_head.weight'\]")


# -- FIFOs, devices, sockets ---------------------------------------------------------------


@pytest.mark.parametrize("entry", ["config.json", "model.safetensors", INDEX, SHARD])
def test_fifos_in_the_folder_are_refused_at_once(tmp_path, capsys, entry):
    folder = hf_folder(tmp_path / "m", sharded=entry in (INDEX, SHARD))
    (folder / entry).unlink()
    os.mkfifo(folder / entry)  # opening it for reading would wait for a writer forever
    _import(capsys, folder, tmp_path / "s", "FIFO")


def test_a_socket_as_the_weights_is_refused(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m")
    (folder / "model.safetensors").unlink()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(folder / "model.safetensors"))
        _import(capsys, folder, tmp_path / "s", "socket")
    finally:
        sock.close()


def test_devices_and_fifos_given_as_the_import_are_refused(tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe")
    for path in ("/dev/zero", "/dev/urandom", tmp_path / "pipe"):
        _import(capsys, path, tmp_path / "s", "not a regular file")


# -- JSON: nesting, numbers, types ---------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_json_anywhere_is_one_message(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m", sharded=True)
    (folder / INDEX).write_text('{"weight_map": ' + DEEP + "}")
    _import(capsys, folder, tmp_path / "s", "nests deeper")
    (folder / "config.json").write_text('{"model_type": "llama", "x": ' + DEEP + "}")
    _import(capsys, folder, tmp_path / "s", "config.json: nests deeper")
    folder = hf_folder(tmp_path / "m2")
    head = ('{"a": ' + DEEP + "}").encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(head)) + head)
    _import(capsys, folder, tmp_path / "s", "safetensors: the header: nests deeper")


def test_huge_numbers_and_nan_in_a_config_are_one_message(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m")
    text = json.dumps(LLAMA)
    for bad, match in (
        ('"hidden_size": ' + "9" * 5000, "5000-digit"),
        ('"rms_norm_eps": NaN', "NaN"),
        ('"rope_theta": Infinity', "Infinity"),
    ):
        (folder / "config.json").write_text(text[:-1] + ", " + bad + "}")
        _import(capsys, folder, tmp_path / "s", match)


WRONG = [  # field, value
    ("num_hidden_layers", "2"),
    ("num_hidden_layers", -1),
    ("num_hidden_layers", 2.0),
    ("num_hidden_layers", True),
    ("num_hidden_layers", 1e9),
    ("num_hidden_layers", 2**40),
    ("hidden_size", "8"),
    ("hidden_size", 0),
    ("hidden_size", [8]),
    ("hidden_size", 1e30),
    ("vocab_size", {"n": 32}),
    ("intermediate_size", -16),
    ("num_attention_heads", False),
    ("num_key_value_heads", 0.5),
    ("max_position_embeddings", "64"),
    ("head_dim", -4),
    ("rope_scaling", [1, 2]),
    ("rope_scaling", "linear"),
    ("rope_scaling", 2.0),
    ("rope_parameters", ["default"]),
    ("rope_theta", -1),
    ("rope_theta", "big"),
    ("architectures", "LlamaForCausalLM"),
    ("architectures", [1, 2]),
    ("architectures", {}),
    ("rms_norm_eps", "small"),
    ("rms_norm_eps", -1e-6),
    ("hidden_act", 3),
    ("hidden_act", ["silu"]),
    ("tie_word_embeddings", "yes"),
    ("sliding_window", "4"),
    ("sliding_window", -4),
    ("layer_types", "full"),
    ("layer_types", [1]),
    ("attention_bias", 1),
    ("model_type", ["llama"]),
    ("pad_token_id", -1),
    ("use_sliding_window", "true"),
    ("max_window_layers", 1.5),
]


@pytest.mark.parametrize(("field", "value"), WRONG, ids=[f"{f}={v!r}"[:40] for f, v in WRONG])
def test_config_fields_of_the_wrong_type_name_the_field(tmp_path, capsys, field, value):
    folder = hf_folder(tmp_path / "m", {**LLAMA, field: value})
    line = _import(capsys, folder, tmp_path / "s", field)
    assert "expected" in line or "not supported" in line, line


@pytest.mark.parametrize(
    "scaling",
    [
        {"rope_type": "linear", "factor": "2"},
        {"rope_type": "llama3", "factor": 8, "low_freq_factor": [1]},
        {"type": 7},
        {"rope_type": "linear", "factor": 0},
    ],
)
def test_rope_scaling_fields_are_checked(tmp_path, capsys, scaling):
    folder = hf_folder(tmp_path / "m", {**LLAMA, "rope_scaling": scaling})
    _import(capsys, folder, tmp_path / "s", "rope_scaling")


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"num_hidden_layers": 10**9, "sliding_window": 4}, "num_hidden_layers is 1000000000"),
        (
            {
                "num_hidden_layers": 10**9,
                "model_type": "qwen2",
                "use_sliding_window": True,
                "sliding_window": 4,
                "max_window_layers": 3,
            },
            "num_hidden_layers",
        ),
        ({"hidden_size": 2**31 - 1}, "hidden_size"),
        ({"vocab_size": 10**8}, "vocab_size"),
        ({"intermediate_size": 10**6, "num_hidden_layers": 200}, "weights hold"),
    ],
)
def test_sizes_no_weight_file_backs_are_refused_before_building(tmp_path, capsys, extra, match):
    folder = hf_folder(tmp_path / "m", {**LLAMA, **extra})
    _import(capsys, folder, tmp_path / "s", match)


def test_long_text_in_a_config_is_not_echoed(tmp_path, capsys):
    for field in ("model_type", "hidden_act", "rope_scaling"):
        value = {"rope_type": "x" * 100_000} if field == "rope_scaling" else "x" * 100_000
        folder = hf_folder(tmp_path / field, {**LLAMA, field: value})
        line = _import(capsys, folder, tmp_path / "s", "not supported")
        assert "x" * 200 not in line


def test_repeated_and_corrupt_shards_are_one_message(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m", sharded=True)
    (folder / SHARD).write_bytes(safetensors_bytes(llama_tensors(1)))  # every name, twice
    _import(capsys, folder, tmp_path / "s", "also in another shard")
    (folder / SHARD).write_bytes(struct.pack("<Q", 2**60) + os.urandom(64))
    _import(capsys, folder, tmp_path / "s", "header length")


def test_pytorch_bin_folders_are_refused_unread(tmp_path, capsys, sentinel):
    folder = hf_folder(tmp_path / "m")
    (folder / "model.safetensors").unlink()
    os.symlink(sentinel.root / "secret.txt", folder / "pytorch_model.bin")
    _import(capsys, folder, tmp_path / "s", r"PyTorch \.bin", sentinel)


def test_the_tabs_import_refuses_links_out(tmp_path, sentinel):
    from scellis.webapp.import_api import import_model

    folder = hf_folder(tmp_path / "picked" / "m")
    (folder / "model.safetensors").unlink()
    os.symlink(sentinel.root / "model.safetensors", folder / "model.safetensors")
    with pytest.raises(ScellisError) as e:
        import_model(str(tmp_path / "picked"), store=str(tmp_path / "s"))
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400 and not sentinel.secret_leaked(msg), msg
