"""Freezing by name and head swaps (catalog layer).

A frozen parameter stays a parameter (it is in ``named_parameters`` and the state
dict, so checkpoints and exports keep it) with ``requires_grad`` off: the tape records
no gradient for it and an optimizer built from the module gives it no flat span and
no state. A head swap puts a freshly initialised block of the same kind, with some
fields changed (another output size), where a named block was.
"""

from __future__ import annotations

import dataclasses

from ...base.errors import ScellisError
from ...base.rng import Generator
from ..module import Module
from .select import replace_child, resolve, select


def set_trainable(model: Module, patterns, flag: bool) -> list[str]:
    """Set ``requires_grad`` of the parameters whose dotted names match; their names."""
    params = dict(model.named_parameters())
    names = select(params, patterns, "parameter")
    for n in names:
        params[n].requires_grad = flag
    return names


def freeze(model: Module, patterns) -> list[str]:
    """Freeze every parameter matching ``patterns`` (e.g. ``"encoder.*"``)."""
    return set_trainable(model, patterns, False)


def unfreeze(model: Module, patterns) -> list[str]:
    return set_trainable(model, patterns, True)


def trainable(model: Module) -> list[str]:
    """Names of the parameters that will receive gradients."""
    return [n for n, p in model.named_parameters() if p.requires_grad]


def frozen(model: Module) -> list[str]:
    return [n for n, p in model.named_parameters() if not p.requires_grad]


def swap_head(model: Module, path: str, gen: Generator | None = None, **fields) -> Module:
    """Replace the block at ``path`` by a new one of its kind with ``fields`` changed
    (``out_features``, ``n_classes``, ``n_outputs``, ``vocab_size``...); returns it.

    The new block's parameters are drawn from ``gen`` (default: the ``head`` stream of
    seed 0) on the old block's device and dtype, with its kind's own initialiser.
    """
    old = resolve(model, path)
    cfg = getattr(old, "config", None)
    if cfg is None or not dataclasses.is_dataclass(cfg):
        raise ScellisError(f"block {path!r} ({type(old).__name__}) has no config to rebuild from")
    known = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ScellisError(
            f"block {path!r} ({type(old).__name__}) has no field {unknown[0]!r}; "
            f"its fields are {', '.join(sorted(known))}"
        )
    if not fields:
        raise ScellisError(f"swap of {path!r} changes no field (give e.g. out_features)")
    try:
        new_cfg = dataclasses.replace(cfg, **fields)
    except TypeError as e:
        raise ScellisError(f"swap of {path!r}: {e}") from None
    ctx = getattr(old, "ctx", {})
    new = type(old)(
        new_cfg,
        device=ctx.get("device"),
        dtype=ctx.get("dtype"),
        gen=gen or Generator(0, "head"),
    )
    new.train(old.training)
    replace_child(model, path, new)
    return new
