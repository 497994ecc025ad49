"""Transformer blocks (catalog layer): the pre-norm (or post-norm) block and a stack of them.

One block is ``x + drop(attn(ln1(x)))`` then ``x + drop(mlp(ln2(x)))``, as torch's
TransformerEncoderLayer(norm_first=True) computes it (``norm_first: false`` gives
torch's default post-norm order, ``ln1(x + drop(attn(x)))`` then ``ln2(...)``, as BERT
has it); ``kind: decoder`` makes the attention causal (a GPT-style decoder-only block),
``encoder`` leaves it bidirectional. ``norm: rms`` with ``mlp: gated`` and
``num_kv_heads`` is the Llama family's block.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...runtime.functional import dropout
from ..checkpoint import checkpoint
from ..registry import field, register
from .attention import ATTENTION_PATHS, ROPE_SCALINGS, AttentionConfig, MultiHeadAttention
from .common import ACTIVATIONS, Block
from .linear import MLP, GatedMLP, GatedMLPConfig, MLPConfig
from .norm import LayerNorm, LayerNormConfig, RMSNorm, RMSNormConfig

KINDS = ("encoder", "decoder")
NORMS = ("layer", "rms")
MLPS = ("plain", "gated")


def _norm(cfg, ctx):
    if cfg.norm == "rms":
        return RMSNorm(RMSNormConfig(cfg.d_model, cfg.eps), **ctx)
    return LayerNorm(LayerNormConfig(cfg.d_model, cfg.eps, True, cfg.bias), **ctx)


# the fields every block of a stack shares with the stack (same names, same meaning)
SHARED = (
    "d_model", "num_heads", "d_ff", "kind", "dropout", "activation", "eps", "bias", "rotary",
    "attention", "num_kv_heads", "rotary_base", "rotary_scaling", "qkv_bias", "norm",
    "norm_first", "mlp", "rotary_scaling_type", "rotary_low_freq_factor",
    "rotary_high_freq_factor", "rotary_original_context", "head_dim",
    "window",
)  # fmt: skip
ROPE = ("rotary_scaling_type", "rotary_low_freq_factor", "rotary_high_freq_factor",
        "rotary_original_context")  # fmt: skip


def _extra_fields():
    """The fields beyond the classic block's, declared once for the block and the stack."""
    return {
        "num_kv_heads": field(
            None, doc="key/value heads (grouped-query attention); empty: num_heads", min=1
        ),
        "rotary_base": field(10000.0, doc="RoPE wavelength base (rope_theta)", min=1),
        "rotary_scaling": field(1.0, doc="RoPE scaling factor (see rotary_scaling_type)", min=1),
        "rotary_scaling_type": field(
            "linear",
            doc="linear (every frequency / factor) or llama3 (low frequencies only)",
            choices=ROPE_SCALINGS,
        ),
        "rotary_low_freq_factor": field(1.0, doc="llama3 RoPE scaling: low_freq_factor", min=0),
        "rotary_high_freq_factor": field(4.0, doc="llama3 RoPE scaling: high_freq_factor", min=0),
        "rotary_original_context": field(
            8192, doc="llama3 RoPE scaling: original_max_position_embeddings", min=1
        ),
        "qkv_bias": field(None, doc="biases in q, k and v; empty: as bias"),
        "head_dim": field(
            None, doc="features per attention head; empty: d_model / num_heads", min=1
        ),
        "window": field(
            None,
            doc="decoder sliding window: each query sees at most this many latest keys; "
            "empty: all earlier keys",
            min=1,
        ),
        "norm": field("layer", doc="layer norm or RMS norm", choices=NORMS),
        "norm_first": field(
            True,
            doc="pre-norm (norm inside each residual branch); False: post-norm, "
            "x = norm(x + branch(x)), torch's TransformerEncoderLayer default",
        ),
        "mlp": field("plain", doc="plain two-layer MLP or gated (SwiGLU) MLP", choices=MLPS),
    }


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
    num_kv_heads: int | None = _extra_fields()["num_kv_heads"]
    rotary_base: float = _extra_fields()["rotary_base"]
    rotary_scaling: float = _extra_fields()["rotary_scaling"]
    qkv_bias: bool | None = _extra_fields()["qkv_bias"]
    norm: str = _extra_fields()["norm"]
    norm_first: bool = _extra_fields()["norm_first"]
    mlp: str = _extra_fields()["mlp"]
    rotary_scaling_type: str = _extra_fields()["rotary_scaling_type"]
    rotary_low_freq_factor: float = _extra_fields()["rotary_low_freq_factor"]
    rotary_high_freq_factor: float = _extra_fields()["rotary_high_freq_factor"]
    rotary_original_context: int = _extra_fields()["rotary_original_context"]
    head_dim: int | None = _extra_fields()["head_dim"]
    window: int | None = _extra_fields()["window"]


class TransformerBlock(Block):
    """Children ``ln1``, ``attn`` (q, k, v, o), ``ln2``, ``mlp`` (fc1, fc2)."""

    incremental = True  # a container: its children are checked on their own

    def __init__(self, cfg: TransformerBlockConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        d = cfg.d_model
        self.ln1 = _norm(cfg, self.ctx)
        attn = AttentionConfig(
            d,
            cfg.num_heads,
            cfg.bias,
            cfg.kind == "decoder",
            cfg.dropout,
            cfg.rotary,
            cfg.rotary_base,
            attention=cfg.attention,
            num_kv_heads=cfg.num_kv_heads,
            rotary_scaling=cfg.rotary_scaling,
            qkv_bias=cfg.qkv_bias,
            head_dim=cfg.head_dim,
            window=cfg.window,
            **{k: getattr(cfg, k) for k in ROPE},
        )
        self.attn = MultiHeadAttention(attn, **self.ctx)
        self.ln2 = _norm(cfg, self.ctx)
        hidden = cfg.d_ff or 4 * d
        if cfg.mlp == "gated":
            gated = GatedMLPConfig(d, hidden, d, cfg.activation, cfg.dropout, cfg.bias)
            self.mlp = GatedMLP(gated, **self.ctx)
        else:
            mlp = MLPConfig(d, hidden, d, cfg.activation, cfg.dropout, cfg.bias)
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
    num_kv_heads: int | None = _extra_fields()["num_kv_heads"]
    rotary_base: float = _extra_fields()["rotary_base"]
    rotary_scaling: float = _extra_fields()["rotary_scaling"]
    qkv_bias: bool | None = _extra_fields()["qkv_bias"]
    norm: str = _extra_fields()["norm"]
    norm_first: bool = _extra_fields()["norm_first"]
    mlp: str = _extra_fields()["mlp"]
    rotary_scaling_type: str = _extra_fields()["rotary_scaling_type"]
    rotary_low_freq_factor: float = _extra_fields()["rotary_low_freq_factor"]
    rotary_high_freq_factor: float = _extra_fields()["rotary_high_freq_factor"]
    rotary_original_context: int = _extra_fields()["rotary_original_context"]
    head_dim: int | None = _extra_fields()["head_dim"]
    window: int | None = _extra_fields()["window"]


class Transformer(Block):
    """Children ``blocks.0`` .. ``blocks.{L-1}`` and ``ln_f``."""

    incremental = True  # a container: its children are checked on their own

    def __init__(self, cfg: TransformerConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        one = TransformerBlockConfig(**{k: getattr(cfg, k) for k in SHARED})
        self.blocks = [TransformerBlock(one, **self.ctx) for _ in range(cfg.num_layers)]
        self.ln_f = _norm(cfg, self.ctx) if cfg.final_norm else None

    def forward(self, x, mask=None):
        remat = self.config.activation_checkpointing and self.training
        for b in self.blocks:
            x = checkpoint(b, x, mask) if remat else b(x, mask)
        return self.ln_f(x) if self.ln_f is not None else x


register("nn/transformer_block", "block", TransformerBlockConfig, TransformerBlock, builtin=True)
register("nn/transformer", "block", TransformerConfig, Transformer, builtin=True)
