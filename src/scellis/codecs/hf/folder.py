"""A Hugging Face model folder (codecs layer): ``config.json`` and its safetensors weights.

The weights are ``model.safetensors``, or shards named by ``model.safetensors.index.json``
(``weight_map``: tensor name -> shard file), or any ``*.safetensors`` in the folder.
Each shard is read with the store's pure-Python reader; names must not repeat across
shards. PyTorch ``.bin`` folders are refused with the reason (save them as safetensors).

A folder comes from someone else, so every file of it is found through
``base.files.inside`` (a link, or an index entry, that leads out of the folder is
refused) and read through ``read_file`` (regular files only, capped before reading):
a FIFO cannot block the import, ``/dev/zero`` cannot fill memory, and a link cannot
make the import read, or a message show, a file outside the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...base.errors import ScellisError, shown
from ...base.files import file_size, inside, read_file
from ...base.jsontext import load_json
from ..raw import RawTensor
from ..safetensors.codec import file_tensors

INDEX = "model.safetensors.index.json"
MAX_JSON = 16 << 20  # a 400-shard index of a 70B model is ~100 KB; configs are a few KB
MAX_SHARDS = 4096  # the largest hub checkpoints have a few hundred shards


def _present(folder: Path, name: str) -> bool:
    """Whether the folder has an entry ``name`` (a dangling link counts: it is refused
    when read, not mistaken for an absent file)."""
    return os.path.lexists(folder / name)


def read_json(folder: Path, name: str) -> object:
    """The JSON value of the folder's file ``name``, bounded in size and nesting."""
    where = f"{folder}/{name}"
    path = inside(folder, name, where)
    return load_json(read_file(path, limit=MAX_JSON), where)


def read_config(folder: Path) -> dict:
    cfg = read_json(folder, "config.json")
    if not isinstance(cfg, dict):
        raise ScellisError(f"{folder}/config.json: expected a JSON object")
    return cfg


def _index_shards(folder: Path) -> list[str]:
    """The shard file names ``model.safetensors.index.json`` lists, checked."""
    where = f"{folder}/{INDEX}"
    doc = read_json(folder, INDEX)
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict) or not wmap:
        raise ScellisError(f"{where}: not a safetensors index (no weight_map object)")
    bad = next((k for k, v in wmap.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise ScellisError(
            f"{where}: weight_map[{shown(bad, 60)!r}] is {type(wmap[bad]).__name__}; expected "
            "a shard file name (a string)"
        )
    names = sorted(set(wmap.values()))
    if len(names) > MAX_SHARDS:
        raise ScellisError(f"{where}: names {len(names)} shards; at most {MAX_SHARDS} are read")
    for n in names:
        if not n or Path(n).name != n or n in (".", ".."):
            raise ScellisError(f"{where}: shard {shown(n)} is not a file in the folder")
    missing = [n for n in names if not _present(folder, n)]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise ScellisError(
            f"{where}: names the shard {shown(missing[0])}{more}, missing from the folder "
            f"(a sharded model needs all {len(names)} shards)"
        )
    return names


def shard_files(folder: Path) -> list[Path]:
    """The safetensors files holding the folder's weights, in a fixed order, each
    resolved inside the folder."""
    if _present(folder, INDEX):
        names = _index_shards(folder)
    elif _present(folder, "model.safetensors"):
        names = ["model.safetensors"]
    else:
        names = sorted(p.name for p in folder.glob("*.safetensors"))
        if not names and list(folder.glob("*.bin")):
            raise ScellisError(
                f"{folder}: holds PyTorch .bin weights only; Scellis reads safetensors folders "
                "(save the model with save_pretrained(..., safe_serialization=True))"
            )
        if not names:
            raise ScellisError(f"{folder}: no *.safetensors weights beside config.json")
        if len(names) > MAX_SHARDS:
            raise ScellisError(f"{folder}: {len(names)} safetensors files; at most {MAX_SHARDS}")
    return [inside(folder, n, f"{folder}/{n}") for n in names]


def read_weights(folder: Path, max_bytes: int) -> dict[str, RawTensor]:
    """Every tensor of the folder's shards by name, its bytes left in its file until read
    (``codecs.raw.FileTensor``); all shards together at most ``max_bytes`` (each is
    refused before it is read when it would cross that)."""
    out: dict[str, RawTensor] = {}
    left = max_bytes
    for path in shard_files(folder):
        size = file_size(path)  # a FIFO or a device is refused, not opened
        if size > left:
            raise ScellisError(f"{folder}: weights over the {max_bytes}-byte cap")
        left -= size
        try:
            tensors, _ = file_tensors(path, size)
        except ScellisError as e:
            raise ScellisError(f"{folder}/{path.name}: {e}") from None
        for k, t in tensors.items():
            if k in out:
                raise ScellisError(
                    f"{folder}/{path.name}: tensor {shown(k)!r} is also in another shard"
                )
            out[k] = t
    return out


def tokenizer_file(folder: Path) -> Path | None:
    """The folder's ``tokenizer.json`` (resolved inside it), or None without one."""
    if not _present(folder, "tokenizer.json"):
        return None
    path = inside(folder, "tokenizer.json", f"{folder}/tokenizer.json")
    return path if path.is_file() else None
