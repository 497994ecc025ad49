"""Flash attention's backward through the matmul kernel (devices layer).

The fused backward (``attention_tiles``) recomputes every score block twice, once in
the dq pass and once in the dk/dv pass, and runs all seven of its block products on
micro-tiles that workgroup storage keeps small. Here the backward is five products of
the matmul kernel, which runs at matmul speed (its 128-row tiles), around one light
pass over the scores:

1. S = q kᵀ and dP = dO vᵀ, each a batched product into scratch storage;
2. a row pass turns them, in place, into P = exp(scale S - lse) (0 where masked) and
   dS = scale P (dP - delta), delta = dO . O - g_lse being summed by the same workgroup;
3. dv = Pᵀ dO, dk = dSᵀ q and dq = dS k, each a batched product into the result.

The scores of a chunk of heads live in scratch at once (2 T S floats a head), so the
heads are taken in chunks that keep it under ``SCRATCH_BYTES``: the memory a call
needs stays bounded whatever the batch, and ``scratch_floats`` tells the memory planner
how much. A head whose scores alone pass the bound, or a shape the matmul kernel would
split along K, is left to the fused kernels (``plan`` returns None).

Accuracy: every output is still one ordered f32 sum over d (S, dP) followed by one over
the keys or queries (dq, dk, dv), as in the fused kernels; the products' K orders are
fixed by the shape, so results are bitwise reproducible on one adapter.
"""

from __future__ import annotations

from ...base import View
from .attention_common import addr, check, grid
from .common import Source, f32_bits
from .matmul import REGS, choose_reg, matmul_kernel

SCRATCH_BYTES = 256 << 20  # scores and their gradients of one chunk of heads
ROW_WG = 256  # invocations per row of the row pass
BAND = 128  # with a causal mask, the row pass zeroes a row's masked scores up to the end
# of its block of BAND rows: the banded products (matmul.BANDS, tiles of 64 or 128 rows)
# read no further, and the products skip what lies beyond
SMALL_TILES = ("r64", "r128k8")  # REGS tiles for products too small for ``choose_reg``
# below this many queries or keys the fused kernels are faster (one launch, not six, on
# tiles sized for the shape; bench/RESULTS.md)
MIN_ROWS = 128


def chunks(b: int, h: int, t: int, s: int) -> list[tuple[int, int, int, int]] | None:
    """(b0, nb, h0, nh) per chunk: nb batch rows of all heads, or nh heads of one batch
    row, each chunk's 2 T S scores under SCRATCH_BYTES; None if one head's do not fit."""
    fit = SCRATCH_BYTES // (4 * 2 * t * s)
    if fit == 0:
        return None
    if fit >= h:
        nb = min(b, fit // h)
        return [(b0, min(nb, b - b0), 0, h) for b0 in range(0, b, nb)]
    return [(b0, 1, h0, min(fit, h - h0)) for b0 in range(b) for h0 in range(0, h, fit)]


def suits(b: int, h: int, t: int, s: int, dtypes) -> bool:
    """Whether the split backward is the one for this shape: f32 throughout (an f16 call
    keeps the fused kernels, which widen as they read), at least MIN_ROWS queries and
    keys, and chunks that fit."""
    return (
        all(dt == "f32" for dt in dtypes)
        and min(t, s) >= MIN_ROWS
        and chunks(b, h, t, s) is not None
    )


def scratch_floats(b: int, h: int, t: int, s: int) -> int:
    """Scratch floats the split backward of q [b, h, t, .], k [b, h, s, .] holds."""
    return max(2 * nb * nh * t * s for _, nb, _, nh in chunks(b, h, t, s))


def applies(base: Source, ins, outs) -> bool:
    """Whether the split backward serves this call (``suits``, scratch storage lent)."""
    b, h, t, _ = ins[0].shape
    s = ins[1].shape[2]
    return (
        base.scratch is not None
        and t <= base.limits["max_compute_workgroups_per_dimension"]
        and suits(b, h, t, s, [v.dtype.name for v in [*ins, *outs]])
    )


def _part(v: View, b0: int, nb: int, h0: int, nh: int, rows: int, cols: int) -> View:
    """Batch rows b0.. and heads h0.. of a [B, H, rows, >= cols] view, its first cols."""
    off = v.offset + b0 * v.strides[0] + h0 * v.strides[1]
    return View(v.buf, (nb, nh, rows, cols), v.strides, off, v.dtype)


def _t(v: View) -> View:
    """The view with its last two dims swapped (no copy)."""
    (*lead, r, c), (*st, sr, sc) = v.shape, v.strides
    return View(v.buf, (*lead, c, r), (*st, sc, sr), v.offset, v.dtype)


def _dense(buf, offset: int, shape: tuple, heads: int | None = None) -> View:
    """A contiguous [nb, nh, r, c] view at ``offset`` of a buffer whose batch rows hold
    ``heads`` heads (default nh: the view is the whole of its rows)."""
    nb, nh, r, c = shape
    heads = nh if heads is None else heads
    return View(buf, shape, (heads * r * c, r * c, c, 1), offset, buf.dtype)


def _tile(base: Source, a: View, b: View) -> str | None:
    """A REGS tile for a @ b (the banded products need one), or None."""
    m, k, n = a.shape[2], a.shape[3], b.shape[3]
    tile = choose_reg(m, n, k, a.shape[0] * a.shape[1], base.limits)
    return tile or next((t for t in SMALL_TILES if REGS[t].fits(base.limits)), None)


def _matmul(base: Source, a: View, b: View, out: View, band: str | None):
    src = base.sibling()
    attrs = {"_tile": _tile(base, a, b), "_band": band} if band else {}
    return src, matmul_kernel(src, "matmul", [a, b], [out], attrs)


def _banded(base: Source, views) -> bool:
    """Whether every product of a causal call can take a REGS tile, and so a band."""
    return all(_tile(base, a, b) is not None for a, b in views)


def _rows(base: Source, scores: View, y: View, gy: View, dims, band: int, scale: float):
    """The row pass over one chunk: P and dS in place of S and dP (module docstring).
    ``band``: 0 without a causal mask; else masked scores are zeroed up to the end of
    the row's block of ``band`` rows."""
    nb, nh, t, s, d, b0, h0 = dims
    src = base.sibling()
    heads = nb * nh
    src.add_meta(t, s, d, 1 if band else 0, f32_bits(scale), nh, b0, h0, heads, band)
    at_y = src.add_meta(y.offset, *y.strides)
    at_gy = src.add_meta(gy.offset, *gy.strides)
    src.operand("sc", scores, write=True)
    src.operand("y", y)
    src.operand("gy", gy)
    src.helpers("sc_exp(")
    src.decls.append(f"var<workgroup> red: array<f32, {ROW_WG}>;")
    src.body = f"""@compute @workgroup_size({ROW_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let T = mt[0]; let S = mt[1]; let D = mt[2];
  let causal = mt[3] == 1u; let scale = bitcast<f32>(mt[4]);
  let NH = mt[5]; let HEADS = mt[8];
  let c = wid.y + wid.z * nwg.y;
  if (c >= HEADS) {{ return; }}
  let b = mt[6] + c / NH; let h = mt[7] + c % NH; let i = wid.x;
  // delta = dO . O - g_lse for row i: strided partial sums, then a halving tree
  var pd = 0.0;
  for (var x = lid; x < D; x += {ROW_WG}u) {{
    pd += ld_gy({addr(at_gy, "i", "x")}) * ld_y({addr(at_y, "i", "x")});
  }}
  red[lid] = pd;
  for (var w = {ROW_WG // 2}u; w > 0u; w = w / 2u) {{
    workgroupBarrier();
    if (lid < w) {{ red[lid] += red[lid + w]; }}
  }}
  workgroupBarrier();
  let dl = red[0] - ld_gy({addr(at_gy, "i", "D")});
  let lse = ld_y({addr(at_y, "i", "D")});
  let ps = (c * T + i) * S;  // the row's scores; their gradients HEADS * T * S further
  let gs = ps + HEADS * T * S;
  var jend = S;
  if (causal) {{ jend = min(S, (i / mt[9u] + 1u) * mt[9u]); }}
  for (var j = lid; j < jend; j += {ROW_WG}u) {{
    var p = 0.0; var ds = 0.0;  // masked: both 0, whatever the scratch held
    if (!causal || j <= i) {{
      p = sc_exp(ld_sc(ps + j) * scale - lse);
      ds = p * (ld_sc(gs + j) - dl) * scale;
    }}
    st_sc(ps + j, p);
    st_sc(gs + j, ds);
  }}
}}
"""
    return src, grid(src, t, heads)


def backward(base: Source, ins, outs, attrs, scale: float) -> list:
    """The launches of the split backward (``applies`` must hold)."""
    q, k, v, y, gy = ins
    out = outs[0]
    check(base, q.dtype.name, [*ins, out])
    b, h, t, d = q.shape
    s = k.shape[2]
    parts = chunks(b, h, t, s)
    causal = bool(attrs.get("causal"))
    scratch = base.scratch(scratch_floats(b, h, t, s))
    nq, nk = b * h * t * d, b * h * s * d
    launches = []
    for b0, nb, h0, nh in parts:
        at = (b0 * h + h0) * d  # the chunk's first row of dq / dk / dv, times d
        sv = _dense(scratch.buf, 0, (nb, nh, t, s))
        gv = _dense(scratch.buf, nb * nh * t * s, (nb, nh, t, s))
        qp, kp, vp = (_part(x, b0, nb, h0, nh, x.shape[2], d) for x in (q, k, v))
        dop = _part(gy, b0, nb, h0, nh, t, d)
        dq = _dense(out.buf, out.offset + at * t, (nb, nh, t, d), h)
        dk = _dense(out.buf, out.offset + nq + at * s, (nb, nh, s, d), h)
        dv = _dense(out.buf, dk.offset + nk, (nb, nh, s, d), h)
        products = [  # (a, b, out, band): S, dP, then dv, dk, dq
            (qp, _t(kp), sv, "lower"),
            (dop, _t(vp), gv, "lower"),
            (_t(sv), dop, dv, "from_row"),
            (_t(gv), qp, dk, "from_row"),
            (gv, kp, dq, "to_row"),
        ]
        banded = causal and _banded(base, [(a, b) for a, b, _, _ in products])
        band = (BAND if banded else max(t, s)) if causal else 0
        mm = [_matmul(base, a, b, o, bd if banded else None) for a, b, o, bd in products]
        rows = _rows(base, scratch, y, gy, (nb, nh, t, s, d, b0, h0), band, scale)
        launches += [*mm[:2], rows, *mm[2:]]
    return launches
