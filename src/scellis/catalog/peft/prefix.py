"""Prefix and prompt tuning (catalog layer): learned virtual tokens, on the eager path.

Prompt tuning (Lester et al. 2021) prepends ``num_virtual_tokens`` learned vectors to
an embedding block's output and drops those positions again before a later block
(the head), so the model's outputs keep their length. Prefix tuning (Li & Liang 2021)
gives every adapted attention block learned key and value vectors [n, E] that are
prepended to its keys and values after the projections: every query may attend to
them (the causal mask keeps them visible), real keys keep their positions (RoPE, if
on, rotates only them).

Both run on the eager path (``lowering = "eager"``): the adapter's forward is Python
that concatenates per call, not a block the op-graph compiler lowers; ``describe``
and the compile output say so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.errors import ScellisError, ShapeError
from ...runtime.creation import arange
from ..blocks.attention import MultiHeadAttention, attend
from ..blocks.common import Block
from ..module import Module
from ..registry import field
from .select import replace_child, resolve, select
from .wrap import Delegate


@dataclass(frozen=True)
class PrefixConfig:
    """Prefix tuning: learned key/value vectors prepended in each adapted attention block."""

    target_modules: tuple | str = field(
        ("*",), doc="name patterns of the attention blocks to adapt (default: every one)"
    )
    num_virtual_tokens: int = field(8, doc="prefix length n", min=1)
    init_std: float = field(
        0.02, doc="the prefix starts as N(0, init_std^2)", min=0.0, exclusive_min=True
    )


@dataclass(frozen=True)
class PromptConfig:
    """Prompt tuning: learned input vectors prepended to an embedding's output."""

    embedding: str = field("tok", doc="the embedding block whose output gets the prompt")
    strip_before: str = field("head", doc="the block whose input drops the prompt positions")
    num_virtual_tokens: int = field(8, doc="prompt length n", min=1)
    init_std: float = field(
        1.0, doc="the prompt starts as N(0, init_std^2)", min=0.0, exclusive_min=True
    )


class PrefixAttention(Block):
    """Multi-head attention with ``prefix_key`` and ``prefix_value`` [n, E]; the
    projections ``q``, ``k``, ``v``, ``o`` are the wrapped block's, under its names."""

    kind = "peft/prefix"
    lowering = "eager"

    def __init__(self, cfg: PrefixConfig, base: MultiHeadAttention, *, gen=None):
        c = base.ctx
        super().__init__(cfg, c["device"], c["dtype"], gen)
        object.__setattr__(self, "base", base)
        for name in ("q", "k", "v", "o"):
            setattr(self, name, getattr(base, name))
        shape = (cfg.num_virtual_tokens, base.config.embed_dim)
        self.prefix_key = self.normal(shape, cfg.init_std)
        self.prefix_value = self.normal(shape, cfg.init_std)

    def _keep(self, mask, T: int, S: int, device):
        """Keep-flags over [T, n + S]: the prefix is always visible."""
        n, causal = self.config.num_virtual_tokens, self.base.config.causal
        keep = None
        if causal:
            i = arange(T, device=device).unsqueeze(-1)
            j = arange(n + S, device=device).unsqueeze(0)
            keep = j <= i + n  # j < n: prefix; else the key at j - n is not after i
        if mask is not None:
            if mask.ndim != 2 or mask.shape[1] != S:
                raise ShapeError(f"attention mask must be [B, {S}] keep-flags, got {mask.shape}")
            flags = mask.cast("f32").pad([0, n], [0, 0], value=1.0) > 0.5
            pad = flags.reshape(mask.shape[0], 1, 1, n + S)
            keep = pad if keep is None else keep & pad
        return keep

    def forward(self, x, mask=None, kv=None):
        c, b = self.base.config, self.base
        if x.ndim != 3 or x.shape[2] != c.embed_dim:
            raise ShapeError(f"attention takes [B, T, {c.embed_dim}], got {x.shape}")
        src = x if kv is None else kv
        B, T, E = x.shape
        S, n = src.shape[1], self.config.num_virtual_tokens
        q, k, v = b.project(x, src)
        k, v = b.share(k, v)
        pk = b._heads(self.prefix_key.unsqueeze(0).expand(B, n, E), B, n)
        pv = b._heads(self.prefix_value.unsqueeze(0).expand(B, n, E), B, n)
        k, v = pk.cast(k.dtype).cat([k], 2), pv.cast(v.dtype).cat([v], 2)
        if q.dtype.itemsize < 4:
            q, k = q.cast("f32"), k.cast("f32")
        y = attend(q, k, v, lambda: self._keep(mask, T, S, x.device), c.dropout, self.training)
        return self.o(y)

    def unwrap(self) -> Module:
        return self.base

    def describe(self) -> str:
        return f"tokens={self.config.num_virtual_tokens}"


class PromptEmbedding(Delegate):
    """An embedding block whose output [B, T, d] gets ``prompt`` [n, d] in front."""

    kind = "peft/prompt"
    lowering = "eager"

    def __init__(self, cfg: PromptConfig, base: Module, dim: int, *, gen=None):
        super().__init__(cfg, base, gen=gen)
        self.prompt = self.normal((cfg.num_virtual_tokens, dim), cfg.init_std)

    def forward(self, ids):
        x = self.call_base(ids)
        if x.ndim != 3:
            raise ShapeError(f"prompt tuning needs an embedding output [B, T, d], got {x.shape}")
        B, n = x.shape[0], self.config.num_virtual_tokens
        p = self.prompt.unsqueeze(0).expand(B, n, x.shape[2]).cast(x.dtype)
        return p.cat([x], 1)

    def describe(self) -> str:
        return f"tokens={self.config.num_virtual_tokens} (prepended)"


class StripPrompt(Delegate):
    """A block that first drops the prompt's n leading positions of its input."""

    kind = "peft/prompt"
    lowering = "eager"

    def forward(self, x, *rest):
        return self.call_base(x[:, self.config.num_virtual_tokens :], *rest)

    def describe(self) -> str:
        return f"drops {self.config.num_virtual_tokens} leading positions"


def _embed_dim(mod: Module) -> int:
    w = getattr(mod, "weight", None)
    if w is None or w.ndim != 2:
        raise ScellisError(
            f"prompt tuning needs an embedding block with a 2-d weight, got {type(mod).__name__}"
        )
    return w.shape[1]


def apply_prompt(model: Module, cfg: PromptConfig, gen=None) -> list[str]:
    """Prepend a learned prompt at ``cfg.embedding``, strip it before ``cfg.strip_before``."""
    emb, head = resolve(model, cfg.embedding), resolve(model, cfg.strip_before)
    if isinstance(emb, Delegate) or isinstance(head, Delegate):
        raise ScellisError("the model already has a prompt adapter there")
    replace_child(model, cfg.embedding, PromptEmbedding(cfg, emb, _embed_dim(emb), gen=gen))
    replace_child(model, cfg.strip_before, StripPrompt(cfg, head, gen=gen))
    return [cfg.embedding, cfg.strip_before]


def apply_prefix(model: Module, cfg: PrefixConfig, gen=None) -> list[str]:
    """Give each attention block that ``cfg.target_modules`` names a learned prefix."""
    blocks = {p: m for p, m in model.named_modules() if isinstance(m, MultiHeadAttention)}
    pats = (cfg.target_modules,) if isinstance(cfg.target_modules, str) else cfg.target_modules
    paths = select(blocks, pats, "attention block")
    for path in paths:
        new = PrefixAttention(cfg, blocks[path], gen=gen)
        new.train(blocks[path].training)
        replace_child(model, path, new)
    return paths
