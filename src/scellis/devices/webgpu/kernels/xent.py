"""Softmax cross-entropy in WGSL (devices layer): ``softmax_xent`` in two launches.

Rows: one workgroup of ``ROW_WG`` invocations per row (a 2-D grid past the
per-dimension limit). The invocations stride over the row's classes for its maximum,
then for the sum of exp(x - max) and of x, each folded by a fixed tree in workgroup
memory; then each writes its classes' gradient basis, and the first the row's loss
and valid flag (ops/xent.py's layout). A vocabulary of any size keeps a workgroup
busy; a row never waits on another.

Mean: one workgroup sums the row losses and the valid flags (each invocation strides
over the rows, then a tree) and writes the mean loss and 1 / count.
"""

from __future__ import annotations

from ....base.errors import ShapeError
from ....base.shapes import numel
from .common import WG, Source, _contiguous, f32_bits, grid_1d

ROW_WG = 64  # invocations per row


def _tree(n: int, update: str) -> str:
    """A fixed-order tree over ``n`` workgroup slots; ``update`` folds slot lid + h."""
    return (
        "  workgroupBarrier();\n"
        f"  for (var h = {n // 2}u; h > 0u; h = h >> 1u) {{\n"
        f"    if (lid < h) {{ {update} }}\n    workgroupBarrier();\n  }}"
    )


def _rows(src: Source, x, t, out, attrs) -> tuple:
    r, c = x.shape
    if not (_contiguous(x) and _contiguous(t)):
        raise ShapeError("softmax_xent reads contiguous logits and targets")
    src.helpers("sc_exp( sc_log(")
    src.add_meta(0)
    src.operand("x", x)
    src.operand("t", t)
    src.operand("o", out, write=True)
    e = float(attrs.get("label_smoothing", 0.0))
    at = src.add_meta(r, c, x.offset, t.offset, out.offset, f32_bits(e),
                      int(attrs.get("ignore_index", -100)))  # fmt: skip
    src.decls += [f"var<workgroup> wm: array<f32, {ROW_WG}>;",
                  f"var<workgroup> ws: array<vec2<f32>, {ROW_WG}>;"]  # fmt: skip
    tree_max = _tree(ROW_WG, "wm[lid] = max(wm[lid], wm[lid + h]);")
    tree_sum = _tree(ROW_WG, "ws[lid] = ws[lid] + ws[lid + h];")
    src.body = f"""@compute @workgroup_size({ROW_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let R = mt[{at}u]; let C = mt[{at + 1}u];
  let row = wid.x + wid.y * nwg.x;
  let live = row < R;  // a 2-D grid's spare workgroups still meet every barrier
  let r = min(row, R - 1u);
  let xo = mt[{at + 2}u] + r * C; let oo = mt[{at + 4}u];
  let e = bitcast<f32>(mt[{at + 5}u]);
  let tv = ld_t(mt[{at + 3}u] + r);
  let valid = tv != bitcast<i32>(mt[{at + 6}u]);
  let tc = u32(clamp(tv, 0, i32(C) - 1));
  var m = -3.402823e38;
  for (var c = lid; c < C; c += {ROW_WG}u) {{ m = max(m, ld_x(xo + c)); }}
  wm[lid] = m;
{tree_max}
  m = wm[0];
  var acc = vec2<f32>(0.0, 0.0);
  for (var c = lid; c < C; c += {ROW_WG}u) {{
    let v = ld_x(xo + c); acc += vec2<f32>(sc_exp(v - m), v);
  }}
  ws[lid] = acc;
{tree_sum}
  let lse = m + sc_log(ws[0].x);
  let keep = select(0.0, 1.0, valid);
  if (live) {{
    for (var c = lid; c < C; c += {ROW_WG}u) {{
      let hot = select(0.0, 1.0 - e, c == tc) + e / f32(C);
      st_o(oo + r * C + c, keep * (sc_exp(ld_x(xo + c) - lse) - hot));
    }}
    if (lid == 0u) {{
      let nll = lse - ld_x(xo + tc);
      let spread = lse - ws[0].y / f32(C);
      st_o(oo + R * C + r, keep * ((1.0 - e) * nll + e * spread));
      st_o(oo + R * C + R + r, keep);
    }}
  }}
}}
"""
    return grid_1d(r, src.limits, 1)


def _mean(src: Source, rows: int, out) -> Source:
    s = src.sibling()
    s.add_meta(0)
    s.operand("o", out, write=True)
    at = s.add_meta(rows, out.offset, numel(out.shape))
    s.decls.append(f"var<workgroup> ws: array<vec2<f32>, {WG}>;")
    tree = _tree(WG, "ws[lid] = ws[lid] + ws[lid + h];")
    s.body = f"""@compute @workgroup_size({WG})
fn main(@builtin(local_invocation_index) lid: u32) {{
  let R = mt[{at}u]; let oo = mt[{at + 1}u]; let n = mt[{at + 2}u];
  let base = oo + n - 2u - 2u * R;  // the row losses, then the valid flags
  var acc = vec2<f32>(0.0, 0.0);
  for (var r = lid; r < R; r += {WG}u) {{ acc += vec2<f32>(ld_o(base + r), ld_o(base + R + r)); }}
  ws[lid] = acc;
{tree}
  if (lid == 0u) {{
    st_o(oo + n - 2u, ws[0].x / ws[0].y);
    st_o(oo + n - 1u, 1.0 / ws[0].y);
  }}
}}
"""
    return s


def softmax_xent(src: Source, op: str, ins, outs, attrs):
    x, t = ins
    out = outs[0]
    grid = _rows(src, x, t, out, attrs)
    return [(src, grid), (_mean(src, x.shape[0], out), (1, 1, 1))]


KERNELS = {"softmax_xent": softmax_xent}
