"""Dense blocks (catalog layer): linear, embedding, the two-layer MLP and the gated MLP.

Parameter names and layouts are torch's (``weight`` [out, in], ``bias`` [out]), so a
torch state dict maps onto these blocks key for key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError
from ...ops.composites import take
from ...runtime.creation import arange
from ...runtime.functional import dropout
from ..module_precision import autocast_applies
from ..registry import field, register
from .common import ACTIVATIONS, Block, dense, dense_act


@dataclass(frozen=True)
class LinearConfig:
    """A fully connected layer over the last axis: y = x W^T + b."""

    in_features: int = field(doc="size of the input's last axis", min=1)
    out_features: int = field(doc="size of the output's last axis", min=1)
    bias: bool = field(True, doc="add a learned bias")


class Linear(Block):
    """torch.nn.Linear: weight and bias U(-1/sqrt(in), 1/sqrt(in)).

    A parent block with another torch default (attention's projections) passes
    ``weight_bound`` (weight U(-bound, bound)) and ``bias_value`` (a constant bias).
    """

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(
        self,
        cfg: LinearConfig,
        *,
        device=None,
        dtype=None,
        gen=None,
        weight_bound=None,
        bias_value=None,
    ):
        super().__init__(cfg, device, dtype, gen)
        if weight_bound is None and bias_value is None:
            self.dense_params(cfg.in_features, cfg.out_features, cfg.bias)
            return
        bound = weight_bound if weight_bound is not None else 1.0 / math.sqrt(cfg.in_features)
        self.weight = self.uniform((cfg.out_features, cfg.in_features), bound)
        self.bias = None
        if cfg.bias:
            n = (cfg.out_features,)
            if bias_value is None:
                self.bias = self.uniform(n, 1.0 / math.sqrt(cfg.in_features))
            else:
                self.bias = self.constant(n, bias_value)

    def forward(self, x):
        return dense(x, self.weight, self.bias)


def activated(layer, x, activation: str):
    """``ACTIVATIONS[activation](layer(x))``; through ``common.dense_act`` (fused on the
    ``fast`` tier) where ``layer`` is a plain Linear: an adapter's subclass, a hook or
    autocast keeps the layer's own call."""
    hooks = layer.__dict__.get("_hooks") or {}
    # a subclass that keeps Linear's forward (torch's nn.Linear) computes the same
    plain = type(layer).forward is Linear.forward and not any(hooks.values())
    plain = plain and not autocast_applies()
    if plain:
        return dense_act(x, layer.weight, layer.bias, activation)
    return ACTIVATIONS[activation](layer(x))


@dataclass(frozen=True)
class EmbeddingConfig:
    """A lookup table: integer ids [...] to vectors [..., embedding_dim]."""

    num_embeddings: int = field(doc="number of rows (the vocabulary size)", min=1)
    embedding_dim: int = field(doc="size of each vector", min=1)
    padding_idx: int | None = field(
        None, doc="a row that starts at zero and gets no gradient (negative counts from the end)"
    )


class Embedding(Block):
    """torch.nn.Embedding: weight N(0, 1), the padding row zeroed and frozen."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: EmbeddingConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        n, pad = cfg.num_embeddings, cfg.padding_idx
        if pad is not None and not -n <= pad < n:
            raise ScellisError(f"padding_idx must lie in [-{n}, {n}), got {pad}")
        self.pad = None if pad is None else pad % n
        w = self.normal((n, cfg.embedding_dim))
        if self.pad is not None:
            rows = arange(n, device=self.ctx["device"]) != self.pad
            w = (w.detach() * rows.cast(w.dtype).unsqueeze(-1)).requires_grad_()
        self.weight = w

    def forward(self, idx):
        out = take(self.weight, idx, 0)
        if self.pad is None:
            return out
        # the padding row reads its value but passes no gradient back (torch's rule)
        keep = (idx != self.pad).unsqueeze(-1)
        return out.where(keep, take(self.weight.detach(), idx, 0))


@dataclass(frozen=True)
class MLPConfig:
    """Two dense layers with an activation between: fc2(dropout(act(fc1(x))))."""

    in_features: int = field(doc="size of the input's last axis", min=1)
    hidden_features: int = field(doc="size of the hidden layer", min=1)
    out_features: int | None = field(None, doc="size of the output; empty: in_features", min=1)
    activation: str = field("gelu", doc="the nonlinearity", choices=tuple(ACTIVATIONS))
    dropout: float = field(0.0, doc="dropout after the activation, in training", min=0, max=1)
    bias: bool = field(True, doc="learned biases in both layers")


class MLP(Block):
    """Children ``fc1`` and ``fc2`` (torch-default Linear init)."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: MLPConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        out = cfg.out_features or cfg.in_features
        self.fc1 = Linear(LinearConfig(cfg.in_features, cfg.hidden_features, cfg.bias), **self.ctx)
        self.fc2 = Linear(LinearConfig(cfg.hidden_features, out, cfg.bias), **self.ctx)

    def forward(self, x):
        h = activated(self.fc1, x, self.config.activation)
        h = dropout(h, self.config.dropout, self.training)
        return self.fc2(h)


@dataclass(frozen=True)
class GatedMLPConfig:
    """A gated MLP (SwiGLU with silu): down(dropout(act(gate(x)) * up(x)))."""

    in_features: int = field(doc="size of the input's last axis", min=1)
    hidden_features: int = field(doc="size of the hidden layer", min=1)
    out_features: int | None = field(None, doc="size of the output; empty: in_features", min=1)
    activation: str = field("silu", doc="the gate's nonlinearity", choices=tuple(ACTIVATIONS))
    dropout: float = field(0.0, doc="dropout on the gated hidden layer, in training", min=0, max=1)
    bias: bool = field(False, doc="learned biases in the three layers")


class GatedMLP(Block):
    """Children ``gate``, ``up`` (in -> hidden) and ``down`` (hidden -> out), as Llama's MLP."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: GatedMLPConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        out = cfg.out_features or cfg.in_features
        wide = LinearConfig(cfg.in_features, cfg.hidden_features, cfg.bias)
        self.gate = Linear(wide, **self.ctx)
        self.up = Linear(wide, **self.ctx)
        self.down = Linear(LinearConfig(cfg.hidden_features, out, cfg.bias), **self.ctx)

    def forward(self, x):
        h = activated(self.gate, x, self.config.activation) * self.up(x)
        return self.down(dropout(h, self.config.dropout, self.training))


register("nn/linear", "block", LinearConfig, Linear, builtin=True)
register("nn/embedding", "block", EmbeddingConfig, Embedding, builtin=True)
register("nn/mlp", "block", MLPConfig, MLP, builtin=True)
register("nn/gated_mlp", "block", GatedMLPConfig, GatedMLP, builtin=True)
