"""Flash-attention kernels (devices layer): the variant chosen, then its builders.

Two families compute the same maths (see ``ops.attention``): ``row``
(``attention_rows``: one invocation per query or key row, scalar reads of the staged
tiles) and ``tile`` (``attention_tiles``: register micro-tiles over vec4 tiles, as a
matmul kernel works). ``tile32`` and ``tile16`` cap the tiles at 32 and 16 rows (less
workgroup storage, more workgroups); ``tile_t128`` runs 128 invocations per workgroup
instead of 256, each with twice the work. A tiled variant whose tiles fit no tile size
under the adapter's limits falls back to ``row``.

The variant is ``VARIANT`` (from the environment variable ``SCELLIS_FLASH_VARIANT``
when set, else ``DEFAULT_VARIANT``), or an op's ``_variant`` attribute, which the
backward inherits from its forward (benchmarks compare variants in one process).
Variants change speed only: every one is held to the same case table.

The tiled variants' backward runs through the matmul kernel (``attention_split``) where
that applies (f32, at least 128 queries and keys), else the fused dq and dk/dv passes
(``attention_tiles``); ``tile_fused`` keeps the fused passes everywhere.
"""

from __future__ import annotations

import os

from ....base.errors import DeviceError
from ....ops.attention import attention_scale
from . import attention_rows, attention_split, attention_tiles
from .attention_tiles import Cap
from .common import Source

# The kernels alone (bench/attention.py's kernel[V], bench/RESULTS.md), on an H200 at
# B * T = 8192, H 6, D 64: the 64-row tiles were the fastest at every length from 128 to
# 2048, with and without a causal mask (0.547 against 0.587 ms for 16-row tiles at T = 128
# causal, 4.67 against 6.62 at T = 1024 unmasked). Timed through the eager op layer the
# smaller tiles had looked faster at T <= 256; that was the host's noise.
DEFAULT_VARIANT = "tile"
# variant -> its tiles' bounds (None: the row kernels)
VARIANTS = {
    "row": None,
    "tile": Cap(64, 256),
    "tile32": Cap(32, 256),
    "tile16": Cap(16, 256),
    "tile_t128": Cap(64, 128),  # fewer invocations, each with larger micro-tiles
    "tile_fused": Cap(64, 256),  # ``tile`` with the fused backward kernels throughout
}
# variants whose backward takes the matmul kernel where it applies (attention_split)
SPLIT_BACKWARD = {"tile", "tile32", "tile16", "tile_t128"}
VARIANT = os.environ.get("SCELLIS_FLASH_VARIANT") or DEFAULT_VARIANT


def variant_cap(src: Source, q_shape, attrs: dict) -> Cap | None:
    """Tile bounds of the variant a call takes (q is [B, H, T, D]); None for the row
    kernels."""
    name = attrs.get("_variant") or VARIANT
    d = q_shape[3]
    if name not in VARIANTS:
        raise DeviceError(
            f"unknown flash attention variant {name!r}; choose one of {', '.join(VARIANTS)}"
        )
    cap = VARIANTS[name]
    return cap if cap and attention_tiles.fits(src, d, cap) else None


def forward(base: Source, op: str, ins, outs, attrs):
    cap = variant_cap(base, ins[0].shape, attrs)
    if not cap:
        return attention_rows.forward(base, op, ins, outs, attrs)
    return attention_tiles.forward(base, ins, outs, attrs, cap)


def backward(base: Source, op: str, ins, outs, attrs):
    cap = variant_cap(base, ins[0].shape, attrs)
    if not cap:
        return attention_rows.backward(base, op, ins, outs, attrs)
    split = (attrs.get("_variant") or VARIANT) in SPLIT_BACKWARD
    if split and attention_split.applies(base, ins, outs):
        scale = attention_scale(attrs, ins[0].shape[3])
        launches = attention_split.backward(base, ins, outs, attrs, scale)
        # scratch bound as many small windows can pass the binding limit: fused then
        limit = base.limits["max_storage_buffers_per_shader_stage"]
        if all(len(src.bindings) + 1 <= limit for src, _ in launches):
            return launches
    return attention_tiles.backward(base, ins, outs, attrs, cap)


def scratch_floats(op: str, ins, attrs: dict) -> int:
    """The scratch storage (f32 words) a call of ``op`` on views ``ins`` holds, for the
    memory planner: the split backward's score chunk, else 0 (a row's delta, which the
    fused backward keeps there, is too small to count)."""
    if op != "flash_attention_backward" or (attrs.get("_variant") or VARIANT) not in SPLIT_BACKWARD:
        return 0
    (b, h, t, _), s = ins[0].shape, ins[1].shape[2]
    if not attention_split.suits(b, h, t, s, [v.dtype.name for v in ins]):
        return 0
    return attention_split.scratch_floats(b, h, t, s)


KERNELS = {"flash_attention": forward, "flash_attention_backward": backward}
