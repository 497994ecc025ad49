"""Transformer blocks (catalog layer): the pre-norm block and a stack of them.

One block is ``x + drop(attn(ln1(x)))`` then ``x + drop(mlp(ln2(x)))``, as torch's
TransformerEncoderLayer(norm_first=True) computes it (``norm_first: false`` gives
torch's default post-norm order, ``ln1(x + drop(attn(x)))`` then ``ln2(...)``);
``kind: decoder`` makes the attention causal (a GPT-style decoder-only block),
``encoder`` leaves it bidirectional.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...runtime.functional import dropout
from ..checkpoint import checkpoint
from ..registry import field, register
from .attention import ATTENTION_PATHS, AttentionConfig, MultiHeadAttention
from .common import ACTIVATIONS, Block
from .linear import MLP, MLPConfig
from .norm import LayerNorm, LayerNormConfig

KINDS = ("encoder", "decoder")


@dataclass(frozen=True)
class TransformerBlockConfig:
    """A pre-norm transformer block over [B, T, d_model]: attention then MLP, each residual."""

    d_model: int = field(doc="model width", min=1)
    num_heads: int = field(doc="attention heads; d_model must be a multiple of it", min=1)
    d_ff: int | None = field(None, doc="MLP hidden width; empty: 4 * d_model", min=1)
    kind: str = field("encoder", doc="'encoder': bidirectional; 'decoder': causal", choices=KINDS)
    dropout: float = field(0.0, doc="dropout (attention weights, MLP, residuals)", min=0, max=1)
    activation: str = field("gelu", doc="the MLP nonlinearity", choices=tuple(ACTIVATIONS))
    eps: float = field(1e-5, doc="layer-norm eps", min=0)
    bias: bool = field(True, doc="learned biases in projections and norms")
    rotary: bool = field(False, doc="rotary position embedding on q and k")
    attention: str = field(
        "auto", doc="attention path: auto, naive or flash", choices=ATTENTION_PATHS
    )
    norm_first: bool = field(
        True,
        doc="pre-norm (norm inside each residual branch); False: post-norm, "
        "x = norm(x + branch(x)), torch's TransformerEncoderLayer default",
    )


class TransformerBlock(Block):
    """Children ``ln1``, ``attn`` (q, k, v, o), ``ln2``, ``mlp`` (fc1, fc2)."""

    incremental = True  # a container: its children are checked on their own

    def __init__(self, cfg: TransformerBlockConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        d = cfg.d_model
        norm = LayerNormConfig(d, cfg.eps, True, cfg.bias)
        self.ln1 = LayerNorm(norm, **self.ctx)
        attn = AttentionConfig(
            d,
            cfg.num_heads,
            cfg.bias,
            cfg.kind == "decoder",
            cfg.dropout,
            cfg.rotary,
            attention=cfg.attention,
        )
        self.attn = MultiHeadAttention(attn, **self.ctx)
        self.ln2 = LayerNorm(norm, **self.ctx)
        mlp = MLPConfig(d, cfg.d_ff or 4 * d, d, cfg.activation, cfg.dropout, cfg.bias)
        self.mlp = MLP(mlp, **self.ctx)

    def forward(self, x, mask=None):
        p, train = self.config.dropout, self.training
        if not self.config.norm_first:
            x = self.ln1(x + dropout(self.attn(x, mask), p, train))
            return self.ln2(x + dropout(self.mlp(x), p, train))
        x = x + dropout(self.attn(self.ln1(x), mask), p, train)
        return x + dropout(self.mlp(self.ln2(x)), p, train)


@dataclass(frozen=True)
class TransformerConfig:
    """A stack of pre-norm transformer blocks, then an optional final layer norm."""

    d_model: int = field(doc="model width", min=1)
    num_heads: int = field(doc="attention heads per block", min=1)
    num_layers: int = field(doc="blocks in the stack", min=1)
    d_ff: int | None = field(None, doc="MLP hidden width; empty: 4 * d_model", min=1)
    kind: str = field("decoder", doc="'encoder': bidirectional; 'decoder': causal", choices=KINDS)
    dropout: float = field(0.0, doc="dropout inside every block", min=0, max=1)
    activation: str = field("gelu", doc="the MLP nonlinearity", choices=tuple(ACTIVATIONS))
    eps: float = field(1e-5, doc="layer-norm eps", min=0)
    bias: bool = field(True, doc="learned biases in projections and norms")
    rotary: bool = field(False, doc="rotary position embedding on q and k")
    attention: str = field(
        "auto", doc="attention path: auto, naive or flash", choices=ATTENTION_PATHS
    )
    final_norm: bool = field(True, doc="a layer norm (ln_f) after the last block")
    activation_checkpointing: bool = field(
        False, doc="recompute each block's forward in backward instead of keeping its activations"
    )


class Transformer(Block):
    """Children ``blocks.0`` .. ``blocks.{L-1}`` and ``ln_f``."""

    incremental = True  # a container: its children are checked on their own

    def __init__(self, cfg: TransformerConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        one = TransformerBlockConfig(
            cfg.d_model,
            cfg.num_heads,
            cfg.d_ff,
            cfg.kind,
            cfg.dropout,
            cfg.activation,
            cfg.eps,
            cfg.bias,
            cfg.rotary,
            attention=cfg.attention,
        )
        self.blocks = [TransformerBlock(one, **self.ctx) for _ in range(cfg.num_layers)]
        norm = LayerNormConfig(cfg.d_model, cfg.eps, True, cfg.bias)
        self.ln_f = LayerNorm(norm, **self.ctx) if cfg.final_norm else None

    def forward(self, x, mask=None):
        remat = self.config.activation_checkpointing and self.training
        for b in self.blocks:
            x = checkpoint(b, x, mask) if remat else b(x, mask)
        return self.ln_f(x) if self.ln_f is not None else x


register("nn/transformer_block", "block", TransformerBlockConfig, TransformerBlock, builtin=True)
register("nn/transformer", "block", TransformerConfig, Transformer, builtin=True)
