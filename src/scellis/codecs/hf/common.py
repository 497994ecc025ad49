"""What the Hugging Face families share (codecs layer): config reading and name tables.

A family module turns a ``config.json`` into a record (blocks ``tok`` [``pos``,
``types``, ``ln``] ``body`` ``head``) and a checkpoint's names into the record's
parameter paths, and goes back for export. ``Names`` collects the mapping with the
checkpoint's wrapper prefix (``transformer.``, ``model.``, ``bert.``) found once.
"""

from __future__ import annotations

import math
import re

from ...base.errors import ScellisError, shown
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


MAX_SIZE = 2**31 - 1  # no model's width, layer count or vocabulary is larger


def _whole(v, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= MAX_SIZE


# what a config value must be, by the use it is put to: (check, words for the message)
KINDS = {
    "count": (lambda v: _whole(v, 1), f"a whole number from 1 to {MAX_SIZE}"),
    "index": (lambda v: _whole(v, 0), f"a whole number from 0 to {MAX_SIZE}"),
    "number": (lambda v: isinstance(v, int | float) and not isinstance(v, bool)
               and 0 <= v < math.inf, "a finite number >= 0"),
    "positive": (lambda v: isinstance(v, int | float) and not isinstance(v, bool)
                 and 0 < v < math.inf, "a finite number > 0"),
    "name": (lambda v: isinstance(v, str), "a string"),
    "flag": (lambda v: isinstance(v, bool), "true or false"),
    "names": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
              "a list of strings"),
    "window": (lambda v: v is False or _whole(v, 0), "a whole number >= 0 (or false)"),
    "table": (lambda v: isinstance(v, dict), "an object"),
}  # fmt: skip

# every config.json field a family reads, with its kind: checked all at once when the
# folder is read (``check_config``), so a wrong type is one message naming the field
# before any of it is used; ``need`` then reads a field with its default
_ROPE = {"rope_type": "name", "type": "name", "rope_theta": "positive", "factor": "positive",
         "low_freq_factor": "positive", "high_freq_factor": "positive",
         "original_max_position_embeddings": "count"}  # fmt: skip
FIELDS = {
    "model_type": "name", "architectures": "names", "torch_dtype": "name",
    # widths, depths, vocabularies: each is the size of some tensor of the weights
    "hidden_size": "count", "n_embd": "count", "dim": "count", "intermediate_size": "count",
    "n_inner": "count", "hidden_dim": "count", "vocab_size": "count",
    "num_attention_heads": "count", "n_head": "count", "n_heads": "count",
    "num_key_value_heads": "count", "head_dim": "count", "n_positions": "count",
    "type_vocab_size": "index", "num_hidden_layers": "count", "n_layer": "count",
    "n_layers": "count",
    # sizes no tensor needs to have (a rotary model has no position table)
    "max_position_embeddings": "count", "sliding_window": "window",
    "max_window_layers": "index", "pad_token_id": "index",
    "layer_norm_eps": "number", "layer_norm_epsilon": "number", "rms_norm_eps": "number",
    "rope_theta": "positive", "rope_scaling": "table", "rope_parameters": "table",
    "hidden_act": "name", "activation_function": "name", "activation": "name",
    "position_embedding_type": "name", "layer_types": "names",
    "tie_word_embeddings": "flag", "use_sliding_window": "flag", "attention_bias": "flag",
    "mlp_bias": "flag", "is_decoder": "flag", "add_cross_attention": "flag",
    "sinusoidal_pos_embds": "flag", "scale_attn_weights": "flag",
    "scale_attn_by_inverse_layer_idx": "flag",
}  # fmt: skip
TABLES = {"rope_scaling": _ROPE, "rope_parameters": _ROPE}
# fields that are a dimension of some tensor of any model that has them; LAYERS: each
# layer holds at least one tensor of its own
DIMENSIONS = ("hidden_size", "n_embd", "dim", "intermediate_size", "n_inner", "hidden_dim",
              "vocab_size", "num_attention_heads", "n_head", "n_heads",
              "num_key_value_heads", "head_dim", "n_positions")  # fmt: skip
LAYERS = ("num_hidden_layers", "n_layer", "n_layers")


def _check_fields(cfg: dict, fields: dict, where: str) -> None:
    for key, kind in fields.items():
        v = cfg.get(key)
        if v is None:
            continue
        ok, words = KINDS[kind]
        if not ok(v):
            raise ScellisError(f"{where}: {key} is {_value(v)}; expected {words}")
        if key in TABLES:
            _check_fields(v, TABLES[key], f"{where} {key}")


def _value(v) -> str:
    """A config value as a message shows it: short, one line, its type when long."""
    text = repr(v)
    return text if len(text) <= 40 and text.isprintable() else f"a {type(v).__name__}"


def check_config(cfg: dict, where: str = "config.json") -> None:
    """Every field a family reads has its kind (FIELDS); one message naming the first
    that does not."""
    _check_fields(cfg, FIELDS, where)


def check_sizes(cfg: dict, tensors: dict[str, RawTensor], where: str = "config.json") -> None:
    """The config's sizes against the weights actually there, before a record is built:
    a width is the size of some tensor, so it cannot pass the number of values the
    weights hold, and each layer has a tensor of its own. A config claiming a billion
    layers over a small file is refused here, before anything grows with the claim."""
    values = sum(t.numel for t in tensors.values())
    for key in DIMENSIONS:
        v = cfg.get(key)
        if v is not None and v > values:
            raise ScellisError(
                f"{where}: {key} is {v} but the weights hold {values} values in all; the "
                "config does not describe these weights"
            )
    for key in LAYERS:
        v = cfg.get(key)
        if v is not None and v > len(tensors):
            raise ScellisError(
                f"{where}: {key} is {v} but the weights hold {len(tensors)} tensors; the "
                "config does not describe these weights"
            )


def need(cfg: dict, *keys, default=None, where="config.json", kind="count"):
    """The first of ``keys`` the config has (not null), else ``default`` (None: an error).
    The value must be of ``kind`` (see KINDS): a config that says ``"hidden_size": "32"``
    is refused here, by name, rather than failing later in arithmetic."""
    for k in keys:
        if cfg.get(k) is not None:
            ok, words = KINDS[kind]
            if not ok(cfg[k]):
                raise ScellisError(f"{where}: {k} is {_value(cfg[k])}; expected {words}")
            return cfg[k]
    if default is None:
        raise ScellisError(f"{where}: has no {keys[0]!r}")
    return default


def activation(cfg: dict, *keys) -> str:
    name = need(cfg, *keys, kind="name")
    if name not in ACTIVATION_IN:
        key = next(k for k in keys if cfg.get(k) is not None)
        raise ScellisError(
            f"config.json: {key} {shown(name, 40)!r} is not supported "
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
