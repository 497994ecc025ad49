"""Shared pieces of the flash-attention kernels (devices layer): meta, bindings, addressing.

Every flash kernel takes the same meta head (B, H, T, S, causal, scale bits), then each
operand's (offset, 4 strides): q, k and v arrive as strided 4-D views (b, h, row, d),
the permuted projections, without a copy. The grid is (row blocks, B*H) with B*H
folded into y and z past the per-dimension limit.
"""

from __future__ import annotations

from ....base.errors import DTypeError
from ....ops.attention import attention_scale
from .common import Source, f32_bits


def grid(src: Source, blocks: int, bh: int) -> tuple[int, int, int]:
    cap = src.limits["max_compute_workgroups_per_dimension"]
    return blocks, min(bh, cap), -(-bh // cap)


def new_source(
    base: Source, views: dict, out, b, h, t, s, d, attrs, vec4=frozenset()
) -> tuple[Source, dict]:
    """A Source with the common meta (B, H, T, S, causal, scale bits), every view's
    (offset, strides) and its bindings (the views named in ``vec4`` as vec4 arrays, their
    accessors taking and returning whole vectors); returns the meta positions per view
    name."""
    check(base, views["q"].dtype.name, [*views.values(), out])
    src = base.sibling(subgroups=base.subgroups)
    scale = attention_scale(attrs, d)
    src.add_meta(b, h, t, s, 1 if attrs.get("causal") else 0, f32_bits(scale))
    at = {}
    for name, v in views.items():
        at[name] = src.add_meta(v.offset, *v.strides)
        src.operand(name, v, widen=True, lanes=4 if name in vec4 else 1)
    src.operand("o", out, write=True, widen=True)
    src.helpers("sc_exp( sc_log(")
    return src, at


def check(base: Source, dtype: str, views) -> None:
    if dtype not in ("f32", "f16") or any(v.dtype.name not in ("f32", "f16") for v in views):
        raise DTypeError("the flash attention kernels run in f32 or f16 on WebGPU")
    if dtype == "f16" and not base.has_f16:
        raise DTypeError(
            "the flash attention kernels in f16 need the adapter feature 'shader-f16', "
            "which this adapter lacks"
        )


def addr(at: int, row: str, col: str) -> str:
    """WGSL element index of (b, h, row, col) in the view whose meta starts at ``at``."""
    m = lambda k: f"mt[{at + k}u]"  # noqa: E731
    return f"({m(0)} + b * {m(1)} + h * {m(2)} + ({row}) * {m(3)} + ({col}) * {m(4)})"


def head(wg: int, r: int, own_row: bool = False) -> str:
    """The entry point: ``wg`` invocations, the workgroup's block of ``r`` rows starting
    at r0, and b, h; a workgroup past B*H leaves at once (uniformly, before any barrier).
    ``own_row``: each invocation's row, r0 + lid (one invocation per row)."""
    row = " let row = r0 + lid;" if own_row else ""
    return f"""@compute @workgroup_size({wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let B = mt[0]; let H = mt[1]; let T = mt[2]; let S = mt[3];
  let causal = mt[4] == 1u; let scale = bitcast<f32>(mt[5]);
  let bh = wid.y + wid.z * nwg.y;
  if (bh >= B * H) {{ return; }}
  let b = bh / H; let h = bh - b * H;
  let r0 = wid.x * {r}u;{row}
"""
