"""Composition blocks (catalog layer): sequential chains and residual wrappers.

Children are named ``0``, ``1``, ... as in torch.nn.Sequential, so a torch Sequential's
state dict maps key for key. A layer is given as a Module, a Config instance, or a
mapping ``{"block": "nn/linear", **fields}`` (the data form the model language writes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ...base.errors import ScellisError
from ..module import Module
from ..registry import entries, field, lookup, register
from .common import Block


def build(spec, *, device=None, dtype=None, gen=None) -> Module:
    """A block from a Module (kept as is), a Config instance or a ``{"block": id}`` mapping."""
    ctx = {"device": device, "dtype": dtype, "gen": gen}
    if isinstance(spec, Module):
        return spec
    if isinstance(spec, Mapping):
        fields = dict(spec)
        bid = fields.pop("block", None)
        if bid is None:
            raise ScellisError("a layer mapping needs a 'block' id, e.g. {'block': 'nn/linear'}")
        entry = lookup(bid, "block")
        return entry.impl(entry.config(**fields), **ctx)
    if dataclasses.is_dataclass(spec) and not isinstance(spec, type):
        for e in entries("block"):
            if e.config is type(spec):
                return e.impl(spec, **ctx)
        raise ScellisError(f"no block is registered with config {type(spec).__name__}")
    raise ScellisError(f"cannot build a block from {spec!r}")


@dataclass(frozen=True)
class SequentialConfig:
    """Blocks applied in order, each to the previous one's output."""

    layers: tuple = field(
        default_factory=tuple, doc="the blocks in order: {block: id, ...its fields} each"
    )


class Sequential(Block):
    """Children ``0`` .. ``n-1``; ``Sequential.of(m0, m1, ...)`` wraps built modules."""

    Config = SequentialConfig
    incremental = True  # a container: its children are checked on their own

    def __init__(self, cfg: SequentialConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        mods = [build(s, **self.ctx) for s in cfg.layers]
        for i, m in enumerate(mods):
            self._children[str(i)] = m
        object.__setattr__(self, "layers", mods)

    @classmethod
    def of(cls, *mods: Module, device=None, dtype=None, gen=None):
        return cls(cls.Config(tuple(mods)), device=device, dtype=dtype, gen=gen)

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def forward(self, x):
        for m in self.layers:
            x = m(x)
        return x


@dataclass(frozen=True)
class ResidualConfig:
    """A residual connection around a chain of blocks: x + f(x)."""

    layers: tuple = field(
        default_factory=tuple, doc="the blocks of f in order: {block: id, ...its fields} each"
    )


class Residual(Sequential):
    """x + layers(x): the chain's output must have the input's shape."""

    Config = ResidualConfig

    def forward(self, x):
        return x + super().forward(x)


register("nn/sequential", "block", SequentialConfig, Sequential, builtin=True)
register("nn/residual", "block", ResidualConfig, Residual, builtin=True)
