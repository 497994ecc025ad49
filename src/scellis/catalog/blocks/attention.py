"""Multi-head attention (catalog layer): q/k/v/o projections, causal and padding masks, RoPE.

Grouped-query attention (``num_kv_heads`` below ``num_heads``, as Llama-family models
use) projects k and v to fewer heads and shares each among ``num_heads / num_kv_heads``
consecutive query heads. ``head_dim`` sets the features per head apart from the width
(q projects E to num_heads * head_dim, o back to E), as Mistral-Nemo's config does.
RoPE's ``rotary_scaling`` is linear position interpolation (positions divided by the
factor, Hugging Face's ``rope_scaling: {type: linear}``), or with
``rotary_scaling_type: llama3`` Llama 3.1's: long wavelengths divided, short ones
kept, the band between smoothed. A causal ``window`` limits each query to its latest
keys (Mistral's sliding window); the naive path masks the rest.

Children ``q``, ``k``, ``v``, ``o`` are Linear blocks; torch's MultiheadAttention packs
the first three as ``in_proj_weight`` = cat(q, k, v). Init follows torch's
MultiheadAttention: q/k/v weights Xavier-uniform over the packed [3E, E] matrix, their
biases and o's bias zero, o's weight Linear's default. Scores and softmax run in at
least f32 whatever the parameter dtype.

Two paths compute the same maths: ``naive`` forms the [B, H, T, S] scores, masks them
and takes the softmax with ordinary ops; ``flash`` is one ``flash_attention``
primitive that never holds the scores (O(T) memory per head, not O(T^2)). ``auto``
(the default) takes flash on WebGPU when it applies — no padding mask, no attention
dropout in training — and the scores are large enough for it to pay
(``auto_takes_flash``), and naive otherwise; on the reference device, whose flash
kernel is the naive maths in one NumPy call, ``auto`` self-attention without a padding
mask or window runs that kernel inside the one-node path below.

Self-attention in f32 (no RoPE, grouped heads or dropout on the weights, q, k and v
plain Linear blocks) is one tape node (``attention_node``): q, k, v from one matmul
against the packed weights, the core (the flash kernel or the naive path's ops), and a
written-out VJP. On a GPU the one product of width 3E fills the chip better than three
of width E, and the backward's input gradient is one product over 3E, not three and
their sum.

During cached decoding (``decoding.KVCache.run``) causal self-attention projects the
new positions only, appends their keys and values to the cache's and attends over all
of them; query i of the new ones sits at position ``offset + i``. Flash serves that
when its top-left causal mask means the same (no earlier positions, or one new query,
which sees every key); otherwise the naive path masks key j for query i unless
j <= offset + i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...autograd.mode import is_grad_enabled
from ...base.errors import ScellisError, ShapeError
from ...ops.attention import flash_attention
from ...ops.composites import softmax
from ...runtime.creation import arange
from ...runtime.functional import dropout
from ..module_precision import autocast_applies
from ..registry import field, register
from .attention_node import packed_self_attention
from .common import MASKED, Block
from .decoding import active_cache
from .linear import Linear, LinearConfig
from .position import rotary

ATTENTION_PATHS = ("auto", "naive", "flash")
ROPE_SCALINGS = ("linear", "llama3")

# What ``auto`` takes on WebGPU, from bench/attention.py's forward + backward timings on
# an H200 (bench/RESULTS.md, flash kernels that read the next tile while they multiply
# this one): flash beat the naive path at every length measured, T = 128..2048, causal
# (0.32-0.49 of its time: it skips the masked half) and unmasked (0.50-0.87). A causal
# call takes flash once one head's T x S block has CAUSAL_FLASH_MIN_SCORES entries, a
# non-causal one inside [FLASH_MIN_SCORES, FLASH_MAX_SCORES]. Either way flash is taken
# once the naive score matrix (B x H x T x S, f32) would reach NAIVE_SCORES_MAX_BYTES
# (memory, not speed).
CAUSAL_FLASH_MIN_SCORES = 0
FLASH_MIN_SCORES = 0
FLASH_MAX_SCORES = math.inf
NAIVE_SCORES_MAX_BYTES = 256 << 20


def auto_takes_flash(device, heads: int, t: int, s: int, causal: bool) -> bool:
    """Whether ``auto`` takes flash for ``heads`` (B x H) of T queries over S keys."""
    if device.name != "webgpu":
        return False
    if heads * t * s * 4 >= NAIVE_SCORES_MAX_BYTES:
        return True
    if causal:
        return t * s >= CAUSAL_FLASH_MIN_SCORES
    return FLASH_MIN_SCORES <= t * s <= FLASH_MAX_SCORES


def attend(q, k, v, keep, p: float, training: bool):
    """The naive path over heads [B, H, T, D] and [B, H, S, D]: softmax(q k^T / sqrt(D))
    where ``keep()`` (bool flags broadcastable to [B, H, T, S], or None) keeps, dropout
    ``p`` on the weights in training, times v; the heads merged back, [B, T, H * D]."""
    B, H, T, D = q.shape
    scores = (q @ k.mT) * (1.0 / math.sqrt(D))
    flags = keep()  # called here: the mask's ops follow the scores' matmul in the op graph
    if flags is not None:
        scores = scores.where(flags, MASKED)
    w = softmax(scores, -1).cast(v.dtype)
    w = dropout(w, p, training)
    return (w @ v).permute(0, 2, 1, 3).reshape(B, T, H * D)


@dataclass(frozen=True)
class AttentionConfig:
    """Multi-head scaled dot-product attention over [B, T, E]."""

    embed_dim: int = field(doc="model width E (input and output features)", min=1)
    num_heads: int = field(doc="heads; E must be a multiple of it", min=1)
    bias: bool = field(True, doc="learned biases in the four projections")
    causal: bool = field(False, doc="each position attends only to itself and earlier ones")
    dropout: float = field(0.0, doc="dropout on the attention weights, in training", min=0, max=1)
    rotary: bool = field(False, doc="rotary position embedding (RoPE) on q and k")
    rotary_base: float = field(10000.0, doc="RoPE wavelength base", min=1)
    attention: str = field(
        "auto",
        doc="naive (scores materialised), flash (tiled, O(T) memory), auto (flash on webgpu)",
        choices=ATTENTION_PATHS,
    )
    num_kv_heads: int | None = field(
        None, doc="key/value heads (grouped-query attention); empty: num_heads", min=1
    )
    rotary_scaling: float = field(1.0, doc="RoPE scaling factor (see rotary_scaling_type)", min=1)
    rotary_scaling_type: str = field(
        "linear",
        doc="linear (every frequency / factor) or llama3 (low frequencies only)",
        choices=ROPE_SCALINGS,
    )
    rotary_low_freq_factor: float = field(1.0, doc="llama3 RoPE scaling: low_freq_factor", min=0)
    rotary_high_freq_factor: float = field(4.0, doc="llama3 RoPE scaling: high_freq_factor", min=0)
    rotary_original_context: int = field(
        8192, doc="llama3 RoPE scaling: original_max_position_embeddings", min=1
    )
    qkv_bias: bool | None = field(None, doc="biases in q, k and v; empty: as bias")
    head_dim: int | None = field(None, doc="features per head; empty: embed_dim / num_heads", min=1)
    window: int | None = field(
        None,
        doc="causal sliding window: each query sees at most this many latest keys, "
        "itself included; empty: all earlier keys",
        min=1,
    )


def head_size(cfg) -> int:
    """Features per head: ``head_dim``, else the width shared out among the heads."""
    return cfg.head_dim or cfg.embed_dim // cfg.num_heads


class MultiHeadAttention(Block):
    """forward(x, mask=None, kv=None): self-attention, or cross-attention to ``kv``.

    ``mask`` is [B, S] of bool keep-flags over the keys (True: attend, False: padding).
    """

    # (weight, bias or None) packed as torch's ``in_proj_*`` where an owner holds the
    # q, k and v projections that way (``nn.MultiheadAttention``, which hands q, k and v
    # row slices of them too): the one-node path then takes the packed tensors whole
    packed_qkv = None

    @property
    def incremental(self) -> bool:  # a bidirectional block reads positions to come
        return self.config.causal

    def __init__(self, cfg: AttentionConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        E, H, D = cfg.embed_dim, cfg.num_heads, head_size(cfg)
        if E % H and cfg.head_dim is None:
            raise ScellisError(f"embed_dim {E} is not a multiple of num_heads {H}")
        if cfg.rotary and D % 2:
            raise ScellisError(f"rotary needs an even head size, got {D}")
        if cfg.window is not None and not cfg.causal:
            raise ScellisError("a sliding window needs causal attention")
        kv = cfg.num_kv_heads or H
        if H % kv:
            raise ScellisError(f"num_heads {H} is not a multiple of num_kv_heads {kv}")
        qkv_bias = cfg.bias if cfg.qkv_bias is None else cfg.qkv_bias
        Eq, Ekv = D * H, D * kv  # Eq is E unless head_dim sets another head size
        packed = math.sqrt(6.0 / (E + 2 * Ekv + Eq))  # xavier_uniform_ of the packed [3E, E]
        for name, out in (("q", Eq), ("k", Ekv), ("v", Ekv)):
            lin = LinearConfig(E, out, qkv_bias)
            setattr(self, name, Linear(lin, **self.ctx, weight_bound=packed, bias_value=0.0))
        self.o = Linear(LinearConfig(Eq, E, cfg.bias), **self.ctx, bias_value=0.0)

    def _heads(self, y, B: int, n: int):
        D = head_size(self.config)
        return y.reshape(B, n, y.shape[-1] // D, D).permute(0, 2, 1, 3)  # [B, heads, n, D]

    def project(self, x, src, start: int = 0):
        """q [B, H, T, D] and k, v [B, kv heads, S, D], RoPE applied at positions
        ``start`` ..; ``share`` gives k and v the query heads' count."""
        c = self.config
        B, T, S = x.shape[0], x.shape[1], src.shape[1]
        q = self._heads(self.q(x), B, T)
        k = self._heads(self.k(src), B, S)
        v = self._heads(self.v(src), B, S)
        if c.rotary:
            llama3 = None
            if c.rotary_scaling_type == "llama3":
                llama3 = (c.rotary_low_freq_factor, c.rotary_high_freq_factor,
                          c.rotary_original_context)  # fmt: skip
            q = rotary(q, c.rotary_base, start, c.rotary_scaling, llama3)
            k = rotary(k, c.rotary_base, start, c.rotary_scaling, llama3)
        return q, k, v

    def share(self, k, v):
        """k, v [B, kv heads, S, D] -> [B, H, S, D]: each kv head serves H / kv
        consecutive query heads (grouped-query attention); unchanged without groups."""
        H, (B, kv, S, D) = self.config.num_heads, k.shape
        if kv == H:
            return k, v
        k = k.unsqueeze(2).expand(B, kv, H // kv, S, D).reshape(B, H, S, D)
        v = v.unsqueeze(2).expand(B, kv, H // kv, S, D).reshape(B, H, S, D)
        return k, v

    def _keep(self, mask, T: int, S: int, device, offset: int = 0):
        """Bool keep-flags broadcastable to the scores [B, H, T, S], or None; query i
        sits at position ``offset + i``."""
        keep = None
        if self.config.causal:
            j = arange(S, device=device)
            i = (j if T == S else arange(T, device=device)).unsqueeze(-1)
            j = j.unsqueeze(0)
            at = i + offset if offset else i
            keep = j <= at
            if self.config.window is not None:  # Mistral's: key j is seen while at - j < window
                keep = keep & (j > at - self.config.window)
        if mask is not None:
            if mask.ndim != 2 or mask.shape[1] != S:
                raise ShapeError(f"attention mask must be [B, {S}] keep-flags, got {mask.shape}")
            pad = mask.cast("bool").reshape(mask.shape[0], 1, 1, S)
            keep = pad if keep is None else keep & pad
        return keep

    def _flash(self, mask, device, heads: int, t: int, s: int) -> bool:
        """Whether this call takes the flash path (an explicit 'flash' that cannot is an
        error); ``heads`` (B x H), ``t`` and ``s`` size the scores for ``auto``."""
        c = self.config
        blocker = ""
        if mask is not None:
            blocker = "a padding mask"
        elif c.dropout > 0 and self.training:
            blocker = "attention dropout in training"
        elif c.window is not None:
            blocker = "a sliding window"
        if c.attention == "flash" and blocker:
            raise ScellisError(f"attention: flash does not support {blocker}; use naive")
        if c.attention == "auto":
            return not blocker and auto_takes_flash(device, heads, t, s, c.causal)
        return c.attention == "flash"

    def _packs(self, x, mask) -> bool:
        """Whether self-attention takes the one-node path (attention_node): f32
        without RoPE, grouped heads or dropout on the weights, with q, k and v plain
        Linear blocks (no adapters, no hooks) outside autocast; on the flash path only
        where the forward is recorded (``_records``)."""
        c = self.config
        return (
            _plain(self.q)
            and _plain(self.k)
            and _plain(self.v)
            and not autocast_applies()
            and not c.rotary
            and c.num_kv_heads in (None, c.num_heads)
            and not (c.dropout > 0 and self.training)
            and x.dtype.name == self.q.weight.dtype.name == "f32"
            and (self._records(x) or not self._flash(mask, x.device, *_scores(x, c)))
        )

    def _records(self, x) -> bool:
        """Whether this call's forward is recorded for a backward. On the flash path the
        packing pays in training (one product of width 3E, one input-gradient product);
        a forward with nothing to record keeps the three projections, which the
        compiled forward fuses with their biases, where packing would copy the
        weights on every call."""
        if not is_grad_enabled():
            return False
        layers = (self.q, self.k, self.v)
        return x.requires_grad or any(p.requires_grad for m in layers for p in m.parameters())

    def forward(self, x, mask=None, kv=None):
        c = self.config
        if x.ndim != 3 or x.shape[2] != c.embed_dim:
            raise ShapeError(f"attention takes [B, T, {c.embed_dim}], got {x.shape}")
        cache = active_cache() if kv is None else None
        if cache is not None:
            return self._decode(x, mask, cache)
        src = x if kv is None else kv
        B, T, _ = x.shape
        S = src.shape[1]
        if kv is None and self._packs(x, mask):
            scale = 1.0 / math.sqrt(head_size(c))
            weights = (self.q.weight, self.k.weight, self.v.weight)
            biases = None if self.q.bias is None else (self.q.bias, self.k.bias, self.v.bias)
            if self.packed_qkv is not None:
                w, bias = self.packed_qkv
                weights, biases = (w,), None if bias is None else (bias,)
            flash = self._flash(mask, x.device, B * c.num_heads, T, S)
            if flash or _one_kernel_core(x.device, mask, c):  # no mask: the kernel's causal
                y = packed_self_attention(x, weights, biases, c.num_heads, scale, None, False,
                                          c.causal)  # fmt: skip
            else:
                keep = self._keep(mask, T, S, x.device)
                y = packed_self_attention(
                    x, weights, biases, c.num_heads, scale, keep, mask is not None
                )
            return self.o(y)
        q, k, v = self.project(x, src)
        k, v = self.share(k, v)
        if self._flash(mask, x.device, B * c.num_heads, T, S):
            scale = 1.0 / math.sqrt(head_size(c))
            # cast after the permute: the cast's output is the [B, T, H, D] layout the
            # reshape reads, so an f16 step makes no copy of it
            y = flash_attention(q, k, v, c.causal, scale).permute(0, 2, 1, 3).cast(v.dtype)
            return self.o(y.reshape(B, T, head_size(c) * c.num_heads))
        q, k = _wide_scores(q, k)
        y = attend(q, k, v, lambda: self._keep(mask, T, S, x.device), c.dropout, self.training)
        return self.o(y)

    def _decode(self, x, mask, cache):
        """The new positions' outputs, their keys and values kept in ``cache``."""
        c = self.config
        if not c.causal:
            raise ScellisError("cached decoding needs causal attention")
        if mask is not None:
            raise ScellisError("cached decoding takes no padding mask")
        B, T, _ = x.shape
        at = cache.offset
        q, k, v = self.project(x, x, at)
        past = cache.past(self)
        if past is not None:
            k, v = past[0].cat([k], 2), past[1].cat([v], 2)
        cache.keep(self, k, v)  # the kv heads only: grouped-query attention's smaller cache
        k, v = self.share(k, v)
        S = k.shape[2]
        if self._flash(None, x.device, B * c.num_heads, T, S) and (at == 0 or T == 1):
            scale = 1.0 / math.sqrt(head_size(c))
            y = flash_attention(q, k, v, T > 1, scale).permute(0, 2, 1, 3).cast(v.dtype)
            return self.o(y.reshape(B, T, head_size(c) * c.num_heads))
        q, k = _wide_scores(q, k)
        y = attend(q, k, v, lambda: self._keep(None, T, S, x.device, at), 0.0, False)
        return self.o(y)


def _one_kernel_core(device, mask, cfg) -> bool:
    """Whether the one-node path's core is the ``flash_attention`` primitive rather than
    the naive path's ops: under ``auto`` on the reference device, whose flash kernel is
    the naive maths in one NumPy call (it holds the scores too), without a padding mask
    or a sliding window (which it does not take). The values agree within f32 rounding."""
    return (
        cfg.attention == "auto"
        and device.name == "reference"
        and mask is None
        and cfg.window is None
    )


def _scores(x, cfg) -> tuple[int, int, int]:
    """(B x H, T, T): the heads and score block of self-attention over ``x``."""
    return x.shape[0] * cfg.num_heads, x.shape[1], x.shape[1]


def _plain(layer) -> bool:
    """A Linear block whose forward is ``dense(x, weight, bias)`` and nothing else."""
    hooks = layer.__dict__.get("_hooks")
    return type(layer) is Linear and not (hooks and (hooks["pre"] or hooks["post"]))


def _wide_scores(q, k):
    """q and k for the naive path's materialised scores: f32 under f16, whose scores and
    softmax would overflow and lose the small probabilities (the flash kernels keep
    their scores in f32 inside)."""
    if q.dtype.itemsize < 4:
        return q.cast("f32"), k.cast("f32")
    return q, k


register("nn/attention", "block", AttentionConfig, MultiHeadAttention, builtin=True)
