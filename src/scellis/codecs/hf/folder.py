"""A Hugging Face model folder (codecs layer): ``config.json`` and its safetensors weights.

The weights are ``model.safetensors``, or shards named by ``model.safetensors.index.json``
(``weight_map``: tensor name -> shard file), or any ``*.safetensors`` in the folder.
Each shard is read with the store's pure-Python reader; names must not repeat across
shards. PyTorch ``.bin`` folders are refused with the reason (save them as safetensors).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...base.errors import ScellisError
from ...store.safetensors import loads
from ..raw import RawTensor

INDEX = "model.safetensors.index.json"


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    try:
        cfg = json.loads(path.read_text())
    except OSError as e:
        raise ScellisError(f"{path}: cannot read: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ScellisError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    if not isinstance(cfg, dict):
        raise ScellisError(f"{path}: expected a JSON object")
    return cfg


def shard_files(folder: Path) -> list[Path]:
    """The safetensors files holding the folder's weights, in a fixed order."""
    index = folder / INDEX
    if index.exists():
        try:
            wmap = json.loads(index.read_text()).get("weight_map") or {}
        except (OSError, json.JSONDecodeError, AttributeError) as e:
            raise ScellisError(f"{index}: not a safetensors index: {e}") from None
        names = sorted(set(wmap.values()))
        for n in names:
            if Path(n).name != n:
                raise ScellisError(f"{index}: shard {n!r} is not a file in the folder")
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise ScellisError(
                f"{index}: names the shard {missing[0]}{more}, missing from the folder "
                f"(a sharded model needs all {len(names)} shards)"
            )
        return [folder / n for n in names]
    if (folder / "model.safetensors").exists():
        return [folder / "model.safetensors"]
    found = sorted(folder.glob("*.safetensors"))
    if found:
        return found
    if list(folder.glob("*.bin")):
        raise ScellisError(
            f"{folder}: holds PyTorch .bin weights only; Scellis reads safetensors folders "
            "(save the model with save_pretrained(..., safe_serialization=True))"
        )
    raise ScellisError(f"{folder}: no *.safetensors weights beside config.json")


def read_weights(folder: Path, max_bytes: int) -> dict[str, RawTensor]:
    """Every tensor of the folder's shards by name."""
    out: dict[str, RawTensor] = {}
    total = 0
    for path in shard_files(folder):
        try:
            total += path.stat().st_size
            if total > max_bytes:
                raise ScellisError(f"{folder}: weights over the {max_bytes}-byte cap")
            data = path.read_bytes()
        except OSError as e:
            raise ScellisError(f"{path}: cannot read: {e.strerror or e}") from None
        try:
            views, _ = loads(data)
        except ScellisError as e:
            raise ScellisError(f"{path}: {e}") from None
        for k, (d, s, v) in views.items():
            if k in out:
                raise ScellisError(f"{path}: tensor {k!r} is also in another shard")
            out[k] = RawTensor(d, tuple(s), bytes(v))
    return out
