"""What the Hugging Face families share (codecs layer): config reading and name tables.

A family module turns a ``config.json`` into a record (blocks ``tok`` [``pos``,
``types``, ``ln``] ``body`` ``head``) and a checkpoint's names into the record's
parameter paths, and goes back for export. ``Names`` collects the mapping with the
checkpoint's wrapper prefix (``transformer.``, ``model.``, ``bert.``) found once.
"""

from __future__ import annotations

import math
import re

from ...base.errors import ScellisError
from ..raw import RawTensor

# the activations a config may name -> the catalog's
ACTIVATION_IN = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}
ACTIVATION_OUT = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu", "silu": "silu",
                  "tanh": "tanh"}  # fmt: skip


# what a config value must be, by the use it is put to: (check, words for the message)
KINDS = {
    "count": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
              "a whole number >= 1"),
    "index": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
              "a whole number >= 0"),
    "number": (lambda v: isinstance(v, int | float) and not isinstance(v, bool)
               and 0 <= v < math.inf, "a finite number >= 0"),
    "name": (lambda v: isinstance(v, str), "a string"),
}  # fmt: skip


def need(cfg: dict, *keys, default=None, where="config.json", kind="count"):
    """The first of ``keys`` the config has (not null), else ``default`` (None: an error).
    The value must be of ``kind`` (see KINDS): a config that says ``"hidden_size": "32"``
    is refused here, by name, rather than failing later in arithmetic."""
    for k in keys:
        if cfg.get(k) is not None:
            ok, words = KINDS[kind]
            if not ok(cfg[k]):
                raise ScellisError(f"{where}: {k} is {cfg[k]!r}; expected {words}")
            return cfg[k]
    if default is None:
        raise ScellisError(f"{where}: has no {keys[0]!r}")
    return default


def activation(cfg: dict, *keys) -> str:
    name = need(cfg, *keys, kind="name")
    if name not in ACTIVATION_IN:
        key = next(k for k in keys if cfg.get(k) is not None)
        raise ScellisError(
            f"config.json: {key} {name!r} is not supported "
            f"(supported: {', '.join(sorted(ACTIVATION_IN))})"
        )
    return ACTIVATION_IN[name]


def model_name(folder_name: str, model_type: str) -> str:
    """A record id ``hf/<name>@1`` from the folder's name."""
    slug = re.sub(r"[^a-z0-9_]+", "_", folder_name.lower()).strip("_") or model_type
    return f"hf/{slug}@1"


def ids_input(context: int) -> dict:
    return {"ids": {"shape": ["batch", context], "dtype": "i32"}}


class Names:
    """Checkpoint names under one wrapper prefix, taken one by one; what is left over."""

    def __init__(self, tensors: dict[str, RawTensor], anchor: str, prefixes=("",)):
        self.tensors = tensors
        self.prefix = None
        for p in prefixes:
            if p + anchor in tensors:
                self.prefix = p
                break
        if self.prefix is None:
            raise ScellisError(
                f"the weights have no {anchor!r} (looked under prefixes {list(prefixes)})"
            )
        self.used: set[str] = set()

    def has(self, name: str, bare: bool = False) -> bool:
        return (name if bare else self.prefix + name) in self.tensors

    def take(self, name: str, bare: bool = False) -> RawTensor:
        key = name if bare else self.prefix + name
        if key not in self.tensors:
            raise ScellisError(f"the weights have no {key!r}")
        self.used.add(key)
        return self.tensors[key]

    def unused(self) -> list[str]:
        return [n for n in self.tensors if n not in self.used]


def blocks_of(record: dict) -> dict[str, tuple[str, dict]]:
    """{block_id: (block name, spec)} of a record whose block ids do not repeat."""
    out: dict[str, tuple[str, dict]] = {}
    for name, spec in (record.get("blocks") or {}).items():
        bid = spec.get("block_id", "")
        if bid in out:
            raise ScellisError(f"the record has two {bid} blocks; no Hugging Face layout fits")
        out[bid] = (name, spec)
    return out


def chain(record: dict) -> tuple[str, ...]:
    """The block ids of a record that is one chain (each block reads the one before,
    the first the single input, the last the single output); () when it is not."""
    blocks = record.get("blocks") or {}
    inputs = list(record.get("inputs") or {})
    outs = record.get("outputs") or []
    if len(inputs) != 1 or len(outs) != 1:
        return ()
    readers: dict[str, list[str]] = {}
    for name, spec in blocks.items():
        src = spec.get("in")
        if not isinstance(src, str):
            return ()
        readers.setdefault(src, []).append(name)
    ids, at = [], inputs[0]
    while readers.get(at):
        if len(readers[at]) != 1:
            return ()
        at = readers[at][0]
        ids.append(blocks[at].get("block_id", ""))
    if len(ids) != len(blocks) or at != outs[0]:
        return ()
    return tuple(ids)


def seq_len(record: dict, default: int) -> int:
    for spec in (record.get("inputs") or {}).values():
        shape = spec.get("shape") or []
        if len(shape) == 2 and isinstance(shape[1], int):
            return shape[1]
    return default
