"""Positional encodings (catalog layer): learned and sinusoidal blocks, rotary (RoPE), and
the token-type (segment) embedding BERT-style encoders add beside positions.

The position axis is the second to last ([B, T, D]). Rotary is no block of its own: the
attention block applies it to q and k when its config asks (``rotary: true``).

Positions count from 0, or from ``start`` (during cached decoding, the number of
positions already decoded: ``decoding.position_offset()``); a row of a table built from
``start`` is the same row of the table built from 0, bit for bit.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from ...base.errors import ShapeError
from ...ops.composites import stack, take
from ...runtime.creation import arange, tensor
from ..registry import field, register
from .common import Block
from .decoding import position_offset

_TABLES: OrderedDict = OrderedDict()  # (what, T, D, base, device, dtype) -> (cos, sin)
_TABLES_SIZE = 32


def _inv_freqs(dim: int, base: float, scaling: float, llama3) -> list[float]:
    """base^(-2i/dim) for i < dim/2, divided by ``scaling`` (linear), or with ``llama3`` =
    (low_freq_factor, high_freq_factor, original_context) only the long wavelengths
    divided and the band between them smoothed (Llama 3.1's RoPE scaling)."""
    inv = [base ** (-2.0 * i / dim) for i in range(dim // 2)]
    if llama3 is None:
        return [f / scaling for f in inv]
    low, high, ctx = llama3
    out = []
    for f in inv:
        wavelen = 2 * math.pi / f
        if wavelen < ctx / high:
            out.append(f)
        elif wavelen > ctx / low:
            out.append(f / scaling)
        else:
            smooth = (ctx / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / scaling + smooth * f)
    return out


def _angles(n: int, dim: int, base: float, like, start: int = 0, scaling=1.0, llama3=None):
    """pos * inv_freq[i] for start <= pos < start + n, i < dim/2: [n, dim/2] on
    ``like``'s device."""
    inv = _inv_freqs(dim, base, scaling, llama3)
    freqs = tensor(inv, device=like.device, dtype=like.dtype)
    pos = arange(start + n, device=like.device)
    pos = (pos[start:] if start else pos).cast(like.dtype)
    return pos.unsqueeze(-1) * freqs.unsqueeze(0)


def _cached(key, make):
    t = _TABLES.get(key)
    if t is None:
        t = _TABLES[key] = make()
        if len(_TABLES) > _TABLES_SIZE:
            _TABLES.popitem(last=False)
    else:
        _TABLES.move_to_end(key)
    return t


def sinusoid_table(n: int, dim: int, base: float, like, start: int = 0):
    """Vaswani et al.'s table [n, dim] of positions ``start`` ..: sin at even features,
    cos at odd ones."""

    def make():
        a = _angles(n, dim, base, like, start)
        return stack([a.sin(), a.cos()], -1).reshape(n, dim)

    if start:  # a decoding step: one short table each, not worth keeping
        return make()
    return _cached(("sinusoid", n, dim, base, id(like.device), like.dtype.name), make)


def rotary(x, base: float = 10000.0, start: int = 0, scaling: float = 1.0, llama3=None):
    """RoPE on [..., T, D] at positions ``start`` .. ``start + T - 1``, half-split pairing
    (feature i rotates with i + D/2, as in GPT-NeoX and LLaMA): x * cos + rotate_half(x) *
    sin; ``scaling`` divides the frequencies (linear position interpolation), or only the
    low ones with ``llama3`` = (low_freq_factor, high_freq_factor, original_context)."""
    T, D = x.shape[-2], x.shape[-1]
    if D % 2:
        raise ShapeError(f"rotary needs an even head size, got {D}")

    def make():
        a = _angles(T, D, base, x, start, scaling, llama3)
        a = a.cat([a], -1)
        return a.cos(), a.sin()

    if start:
        cos, sin = make()
    else:
        key = ("rotary", T, D, base, scaling, llama3, id(x.device), x.dtype.name)
        cos, sin = _cached(key, make)
    h = D // 2
    rot = (-x[..., h:]).cat([x[..., :h]], -1)
    return x * cos + rot * sin


@dataclass(frozen=True)
class LearnedPositionConfig:
    """A learned position embedding added to the input: x + weight[:T]."""

    max_len: int = field(doc="the longest sequence it can encode", min=1)
    dim: int = field(doc="size of the feature (last) axis", min=1)
    std: float = field(1.0, doc="init: weight ~ N(0, std^2); 1 is torch's Embedding", min=0)


class LearnedPosition(Block):
    """``weight`` [max_len, dim]; added to [..., T, dim] by position."""

    incremental = True  # numbers the positions from decoding.position_offset()

    def __init__(self, cfg: LearnedPositionConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.weight = self.normal((cfg.max_len, cfg.dim), cfg.std)

    def forward(self, x):
        T, at = x.shape[-2], position_offset()
        if at + T > self.config.max_len:
            raise ShapeError(f"a sequence of {at + T} is longer than max_len {self.config.max_len}")
        return x + self.weight[at : at + T]


@dataclass(frozen=True)
class SinusoidalPositionConfig:
    """The fixed sinusoidal encoding added to the input: x + PE[:T] (no parameters)."""

    dim: int = field(doc="size of the feature (last) axis; even", min=2)
    base: float = field(10000.0, doc="wavelength base", min=1)


class SinusoidalPosition(Block):
    """PE[pos, 2i] = sin(pos / base^(2i/dim)), PE[pos, 2i+1] = cos(the same)."""

    incremental = True  # numbers the positions from decoding.position_offset()

    def __init__(self, cfg: SinusoidalPositionConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        if cfg.dim % 2:
            raise ShapeError(f"sinusoidal positions need an even dim, got {cfg.dim}")

    def forward(self, x):
        c = self.config
        return x + sinusoid_table(x.shape[-2], c.dim, c.base, x, position_offset())


@dataclass(frozen=True)
class TokenTypeConfig:
    """A learned segment embedding added to the input: x + weight[types] (type 0 without ids)."""

    dim: int = field(doc="size of the feature (last) axis", min=1)
    num_types: int = field(2, doc="number of token types (segments)", min=1)
    std: float = field(1.0, doc="init: weight ~ N(0, std^2)", min=0)


class TokenType(Block):
    """``weight`` [num_types, dim]; forward(x, types=None) with types [..., T] int ids."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: TokenTypeConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.weight = self.normal((cfg.num_types, cfg.dim), cfg.std)

    def forward(self, x, types=None):
        if types is None:
            return x + self.weight[0]
        return x + take(self.weight, types, 0)


register("nn/token_type", "block", TokenTypeConfig, TokenType, builtin=True)
register("nn/learned_position", "block", LearnedPositionConfig, LearnedPosition, builtin=True)
register(
    "nn/sinusoidal_position", "block", SinusoidalPositionConfig, SinusoidalPosition, builtin=True
)
