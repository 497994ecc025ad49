"""Flash-attention kernels, one invocation per row (devices layer): variant ``row``.

The first, simplest kernels: portable, but each invocation keeps D-float private
arrays and reads the staged tiles one f32 at a time (``attention_tiles`` is faster).

Forward: a workgroup owns ``R`` consecutive query rows of one (b, h); it walks the
keys in tiles of ``BK`` rows that its invocations load together into workgroup
memory (k and v tiles), and each invocation keeps, for its query row, the running
max m, the running sum l and the output accumulator (D floats, private). A tile
first scores its keys (BK private floats), rescales (l, acc) once by exp(m_old -
m_new), then adds its keys. No T x S score matrix exists anywhere; what outlives
the dispatch is the output and one logsumexp (m + log l) per row.

Backward recomputes the probabilities from (q, k) and the saved logsumexp, without
float atomics (``debug`` tier: fixed order): one dispatch where an invocation owns a
query row (dq, walking key tiles), one where it owns a key row (dk, dv, walking
query tiles, with each tile's logsumexp and row shift delta = dO . O - g_lse staged
in workgroup memory). Causal masks skip whole tiles past the diagonal; the loop
bounds depend on the workgroup only, so every barrier is in uniform control flow.

Every operand is a strided 4-D view (b, h, row, d): (offset, 4 strides) in meta, so
q, k and v arrive as the permuted projections without a copy.

q, k and v are f32, or f16 (mixed precision: read widened to f32, every score, sum and
accumulator in f32). With f16 inputs the packed forward result stays f32 (see
``ops.attention``) and the backward stores dq, dk, dv in f16, rounding once each.
"""

from __future__ import annotations

from .attention_common import addr as _addr
from .attention_common import grid as _grid
from .attention_common import head
from .attention_common import new_source as _new
from .common import Source

ROWS = 64  # query (or key) rows per workgroup


def _tile(src: Source, d: int, arrays: int) -> int:
    """Rows per staged tile so that ``arrays`` f32 tiles of D columns fit workgroup memory."""
    room = src.limits["max_compute_workgroup_storage_size"] - 2 * 4 * 64
    return max(1, min(32, room // (arrays * 4 * d)))


def _rows(src: Source) -> int:
    return min(ROWS, src.limits["max_compute_invocations_per_workgroup"])


def _key_tiles(k_at: int, v_at: int, d: int, bk: int, r: int) -> str:
    """WGSL opening the walk over key tiles that the forward and the dq kernel share:
    keys up to ``kend`` (all, or the workgroup's last row when causal), tiles of ``bk``
    keys staged into ``kt``/``vt`` by the ``r`` invocations (zeros past S), then a
    barrier; the caller's loop body and closing brace follow."""
    return f"""  var kend = S;
  if (causal) {{ kend = min(S, min(T, r0 + {r}u)); }}
  for (var j0 = 0u; j0 < kend; j0 += {bk}u) {{
    for (var e = lid; e < {bk * d}u; e += {r}u) {{
      let jj = e / {d}u; let c = e - jj * {d}u; let j = j0 + jj;
      if (j < S) {{
        kt[e] = ld_k({_addr(k_at, "j", "c")}); vt[e] = ld_v({_addr(v_at, "j", "c")});
      }}
      else {{ kt[e] = 0.0; vt[e] = 0.0; }}
    }}
    workgroupBarrier();
"""


def forward(base: Source, op: str, ins, outs, attrs):
    q, k, v = ins
    b, h, t, d = q.shape
    s = k.shape[2]
    src, at = _new(base, {"q": q, "k": k, "v": v}, outs[0], b, h, t, s, d, attrs)
    r, bk = _rows(src), _tile(src, d, 2)
    src.decls.append(f"var<workgroup> kt: array<f32, {bk * d}>;")
    src.decls.append(f"var<workgroup> vt: array<f32, {bk * d}>;")
    o = outs[0]
    # the output is a fresh contiguous [B, H, T, D+1]: its offset is the only word needed
    out_at = src.add_meta(o.offset)
    src.body = (
        head(r, r, own_row=True)
        + f"""  let live = row < T;
  var qr: array<f32, {d}>; var acc: array<f32, {d}>; var st: array<f32, {bk}>;
  if (live) {{
    for (var c = 0u; c < {d}u; c++) {{ qr[c] = ld_q({_addr(at["q"], "row", "c")}); acc[c] = 0.0; }}
  }}
  var m = -3.0e38; var l = 0.0;
  // keys any row of this workgroup may see: all, or up to its last row when causal
{_key_tiles(at["k"], at["v"], d, bk, r)}    if (live) {{
      let nj = min({bk}u, kend - j0);
      var tm = m;
      for (var jj = 0u; jj < nj; jj++) {{
        if (causal && j0 + jj > row) {{ break; }}
        var dot = 0.0;
        for (var c = 0u; c < {d}u; c++) {{ dot += qr[c] * kt[jj * {d}u + c]; }}
        st[jj] = dot * scale;
        tm = max(tm, st[jj]);
      }}
      let corr = sc_exp(m - tm);
      l = l * corr;
      for (var c = 0u; c < {d}u; c++) {{ acc[c] = acc[c] * corr; }}
      for (var jj = 0u; jj < nj; jj++) {{
        if (causal && j0 + jj > row) {{ break; }}
        let p = sc_exp(st[jj] - tm);
        l += p;
        for (var c = 0u; c < {d}u; c++) {{ acc[c] += p * vt[jj * {d}u + c]; }}
      }}
      m = tm;
    }}
    workgroupBarrier();
  }}
  if (live) {{
    let ob = mt[{out_at}u] + ((b * H + h) * T + row) * {d + 1}u;
    for (var c = 0u; c < {d}u; c++) {{ st_o(ob + c, acc[c] / l); }}
    st_o(ob + {d}u, m + sc_log(l));
  }}
}}
"""
    )
    return [(src, _grid(src, -(-t // r), b * h))]


def _dq(base: Source, ins, out, attrs):
    q, k, v, y, gy = ins
    b, h, t, d = q.shape
    s = k.shape[2]
    views = {"q": q, "k": k, "v": v, "y": y, "gy": gy}
    src, at = _new(base, views, out, b, h, t, s, d, attrs)
    r, bk = _rows(src), _tile(src, d, 2)
    src.decls.append(f"var<workgroup> kt: array<f32, {bk * d}>;")
    src.decls.append(f"var<workgroup> vt: array<f32, {bk * d}>;")
    out_at = src.add_meta(out.offset)
    src.body = (
        head(r, r, own_row=True)
        + f"""  let live = row < T;
  var qr: array<f32, {d}>; var go: array<f32, {d}>; var dq: array<f32, {d}>;
  var lse = 0.0; var delta = 0.0;
  if (live) {{
    for (var c = 0u; c < {d}u; c++) {{
      qr[c] = ld_q({_addr(at["q"], "row", "c")});
      go[c] = ld_gy({_addr(at["gy"], "row", "c")});
      delta += go[c] * ld_y({_addr(at["y"], "row", "c")});
      dq[c] = 0.0;
    }}
    lse = ld_y({_addr(at["y"], "row", f"{d}u")});
    delta -= ld_gy({_addr(at["gy"], "row", f"{d}u")});
  }}
{_key_tiles(at["k"], at["v"], d, bk, r)}    if (live) {{
      let nj = min({bk}u, kend - j0);
      for (var jj = 0u; jj < nj; jj++) {{
        if (causal && j0 + jj > row) {{ break; }}
        var sd = 0.0; var dp = 0.0;
        for (var c = 0u; c < {d}u; c++) {{
          sd += qr[c] * kt[jj * {d}u + c]; dp += go[c] * vt[jj * {d}u + c];
        }}
        let ds = sc_exp(sd * scale - lse) * (dp - delta);
        for (var c = 0u; c < {d}u; c++) {{ dq[c] += ds * kt[jj * {d}u + c]; }}
      }}
    }}
    workgroupBarrier();
  }}
  if (live) {{
    let ob = mt[{out_at}u] + ((b * H + h) * T + row) * {d}u;
    for (var c = 0u; c < {d}u; c++) {{ st_o(ob + c, dq[c] * scale); }}
  }}
}}
"""
    )
    return src, _grid(src, -(-t // r), b * h)


def _dkv(base: Source, ins, out, attrs):
    q, k, v, y, gy = ins
    b, h, t, d = q.shape
    s = k.shape[2]
    views = {"q": q, "k": k, "v": v, "y": y, "gy": gy}
    src, at = _new(base, views, out, b, h, t, s, d, attrs)
    r, bq = _rows(src), _tile(src, d, 2)
    src.decls.append(f"var<workgroup> qt: array<f32, {bq * d}>;")
    src.decls.append(f"var<workgroup> gt: array<f32, {bq * d}>;")
    src.decls.append(f"var<workgroup> lt: array<f32, {bq}>;")
    src.decls.append(f"var<workgroup> dt: array<f32, {bq}>;")
    nq = b * h * t * d
    nk = b * h * s * d
    out_at = src.add_meta(out.offset + nq, out.offset + nq + nk)
    src.body = (
        head(r, r, own_row=True)
        + f"""  let live = row < S;
  var kr: array<f32, {d}>; var vr: array<f32, {d}>;
  var dk: array<f32, {d}>; var dv: array<f32, {d}>;
  if (live) {{
    for (var c = 0u; c < {d}u; c++) {{
      kr[c] = ld_k({_addr(at["k"], "row", "c")}); vr[c] = ld_v({_addr(at["v"], "row", "c")});
      dk[c] = 0.0; dv[c] = 0.0;
    }}
  }}
  // queries that may see a key of this workgroup: all, or from its first key on
  var i0 = 0u;
  if (causal) {{ i0 = r0; }}
  for (var q0 = i0; q0 < T; q0 += {bq}u) {{
    for (var e = lid; e < {bq * d}u; e += {r}u) {{
      let ii = e / {d}u; let c = e - ii * {d}u; let i = q0 + ii;
      if (i < T) {{
        qt[e] = ld_q({_addr(at["q"], "i", "c")}); gt[e] = ld_gy({_addr(at["gy"], "i", "c")});
      }}
      else {{ qt[e] = 0.0; gt[e] = 0.0; }}
    }}
    for (var ii = lid; ii < {bq}u; ii += {r}u) {{
      let i = q0 + ii;
      var dl = 0.0; var ls = 0.0;
      if (i < T) {{
        for (var c = 0u; c < {d}u; c++) {{
          dl += ld_gy({_addr(at["gy"], "i", "c")}) * ld_y({_addr(at["y"], "i", "c")});
        }}
        dl -= ld_gy({_addr(at["gy"], "i", f"{d}u")});
        ls = ld_y({_addr(at["y"], "i", f"{d}u")});
      }}
      lt[ii] = ls; dt[ii] = dl;
    }}
    workgroupBarrier();
    if (live) {{
      let ni = min({bq}u, T - q0);
      for (var ii = 0u; ii < ni; ii++) {{
        if (causal && q0 + ii < row) {{ continue; }}
        var sd = 0.0; var dp = 0.0;
        for (var c = 0u; c < {d}u; c++) {{
          sd += qt[ii * {d}u + c] * kr[c]; dp += gt[ii * {d}u + c] * vr[c];
        }}
        let p = sc_exp(sd * scale - lt[ii]);
        let ds = p * (dp - dt[ii]);
        for (var c = 0u; c < {d}u; c++) {{
          dv[c] += p * gt[ii * {d}u + c]; dk[c] += ds * qt[ii * {d}u + c];
        }}
      }}
    }}
    workgroupBarrier();
  }}
  if (live) {{
    let at_k = mt[{out_at}u] + ((b * H + h) * S + row) * {d}u;
    let at_v = mt[{out_at + 1}u] + ((b * H + h) * S + row) * {d}u;
    for (var c = 0u; c < {d}u; c++) {{ st_o(at_k + c, dk[c] * scale); st_o(at_v + c, dv[c]); }}
  }}
}}
"""
    )
    return src, _grid(src, -(-s // r), b * h)


def backward(base: Source, op: str, ins, outs, attrs):
    return [_dq(base, ins, outs[0], attrs), _dkv(base, ins, outs[0], attrs)]
