"""Whole-sequence LSTM kernels for wide layers (devices layer): the ``stream`` variants.

The step kernels launch once per time step each way (a 2x256 LSTM step: 384 launches,
most of its GPU time spent between them), and ``seq`` (recurrent_seq.py) keeps W_hh in
registers, which only a layer of up to 64 units fits. Here, too, one launch walks every
step each way, but W_hh is read from memory at every step: 4H x H words, which stay in
the GPU's L2 cache between steps. A workgroup takes ``rows`` batch rows (the
``stream1``, ``stream2``, ``stream4`` variants) so each W_hh word read serves that many
rows; fewer rows spread the batch over more multiprocessors.

Invocation i of a workgroup of N owns the units k = i, i + N, ... (all four gates of
each), for every row of its workgroup, so the cell state c stays in its registers from
the first step to the last. Forward step t: h_{t-1} of the rows sits in workgroup memory
(two buffers, written and read in turn, so one barrier a step); the gate sums read
W_hh^T, a copy the op's first launch writes to scratch storage, so that neighbouring
invocations read neighbouring words. Each sum is gx + h_{t-1}[0] w[0] + h_{t-1}[1] w[1]
+ ..., in order, as the ``step`` kernel's. Backward step t, from the last: each
invocation forms its units' gate gradients (dh and dc carried in registers), writes
them to workgroup memory, and after a barrier sums dh_{t-1}[k] = sum_m dA[m] W_hh[m, k]
over the 4H gate rows in order, reading W_hh as stored (neighbouring k, neighbouring
words).

f16 follows ``seq``: operands read widened, maths in f32, every carried value rounded
to f16 before the next step reads it, the gate gradients fed to the product unrounded.
Only LSTM layers (GRU keeps the step kernels); results match the other variants to
rounding (tests/recurrent/test_recurrent_variants.py).
"""

from __future__ import annotations

from .common import Source, grid_1d, main_1d
from .matmul import fold_grid
from .recurrent_common import step_source

# variant name -> batch rows per workgroup
ROWS = {"stream1": 1, "stream2": 2, "stream4": 4}
INVOCATIONS = 256  # per workgroup, at most (fewer for a narrow layer)
MAX_UNITS = 8  # units per invocation: past that the accumulators spill
UNROLL = 16  # products per turn of the inner loops (see _unrolled)


def _invocations(hidden: int, limits: dict) -> int:
    cap = min(INVOCATIONS, limits["max_compute_invocations_per_workgroup"])
    return min(cap, -(-hidden // 32) * 32)


def fits(variant: str, limits: dict, gates: int, hidden: int | None) -> bool:
    """Whether an LSTM layer of ``hidden`` units can take ``variant``: its units spread
    over the workgroup's invocations, and the backward's gate gradients of ``rows`` rows
    (the larger of the two workgroup arrays) fit workgroup memory."""
    if gates != 4 or hidden is None:
        return False
    n = _invocations(hidden, limits)
    shared = 4 * ROWS[variant] * 4 * hidden
    return -(-hidden // n) <= MAX_UNITS and shared <= limits["max_compute_workgroup_storage_size"]


def _m(k: int) -> str:
    return f"mt[{k}u]"


def _carry(name: str, half: bool) -> str:
    return f"f32(f16({name}))" if half else name


def _names(prefix: str, rows: int, units: int) -> list[tuple[int, int, str]]:
    return [(r, u, f"{prefix}{r}_{u}") for r in range(rows) for u in range(units)]


def _head(n: int, rows: int, arrays: dict) -> str:
    decls = "".join(f"var<workgroup> {a}: array<f32, {size}>;\n" for a, size in arrays.items())
    return f"""{decls}@compute @workgroup_size({n})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
  let B = mt[1]; let T = mt[3];
  let row0 = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * {rows}u;"""


def _units(n: int, h: int, units: int) -> str:
    """Each owned unit's index k_u, and kc_u: k_u clamped into the layer, for loads (a
    ragged last unit computes on a neighbour's values and stores nothing)."""
    return "\n".join(
        f"  let k{u} = li + {n * u}u; let kc{u} = min(k{u}, {h - 1}u);" for u in range(units)
    )


def _rows(rows: int) -> str:
    """Each row's batch index b_r and bc_r (clamped into the batch, for loads)."""
    lines = [f"  let b{r} = row0 + {r}u; let bc{r} = min(b{r}, B - 1u);" for r in range(rows)]
    return "\n".join(lines)


def _unrolled(length: int, body) -> str:
    """``body(j)`` for j = 0 .. length-1: a loop of ``UNROLL`` bodies a turn, then the
    rest. Each body's loads are independent of the others' sums, so a long turn keeps
    many L2 reads in flight at once: the step's latency is theirs."""
    main, lines = length - length % UNROLL, []
    if main:
        lines.append(f"    for (var j0 = 0u; j0 < {main}u; j0 += {UNROLL}u) {{")
        lines += [body(f"j0 + {q}u") for q in range(UNROLL)]
        lines.append("    }")
    lines += [body(f"{j}u") for j in range(main, length)]
    return "\n".join(lines)


def _transpose(base: Source, w, scratch, h: int):
    """The first launch: W_hh^T [H, 4H] into scratch (f32)."""
    src = base.sibling()
    src.add_meta(4 * h * h)
    at = src.add_meta(w.offset, *w.strides)
    src.operand("w", w, widen=True)
    src.operand("s", scratch, write=True)
    body = f"""  let j = i / {4 * h}u; let m = i - j * {4 * h}u;
  st_s(i, f32(ld_w(mt[{at}u] + m * mt[{at + 1}u] + j * mt[{at + 2}u])));"""
    src.body = main_1d(body)
    return src, grid_1d(4 * h * h, src.limits)


def lstm_forward(base: Source, ins, out, variant: str) -> list:
    """Two launches: W_hh^T into scratch, then every step, Y [T, B, 6H] as lstm_seq's."""
    gx, h0, c0, w = ins
    b, steps, h4 = gx.shape
    h, rows = h4 // 4, ROWS[variant]
    n = _invocations(h, base.limits)
    units = -(-h // n)
    wt = base.scratch(4 * h * h)
    first = _transpose(base, w, wt, h)
    src, (g_at, h0_at, c0_at) = step_source(
        base, (0, b, h, steps), {"gx": gx, "h0": h0, "c0": c0}, ("gx", "h0", "c0"), "y", out
    )
    src.operand("s", wt)
    src.helpers("sc_exp( sc_tanh(")
    half, m = out.dtype.name == "f16", _m
    cells = _names("c", rows, units)
    accs = [(r, u, g, f"a{g}_{r}_{u}") for r, u, _ in cells for g in range(4)]

    def dot(j: str) -> str:
        hs = "".join(f" let h{r} = sh_h[cur + {r * h}u + {j}];" for r in range(rows))
        ws = "".join(
            f" let w{g}_{u} = ld_s(({j}) * {4 * h}u + {g * h}u + kc{u});"
            for u in range(units) for g in range(4)
        )  # fmt: skip
        fmas = "".join(f" {a} = {a} + h{r} * w{g}_{u};" for r, u, g, a in accs)
        return f"      {{{hs}{ws}{fmas} }}"

    init = "\n".join(
        f"  var {c} = 0.0; if (k{u} < {h}u && b{r} < B) {{ "
        f"{c} = ld_c0({m(c0_at)} + b{r} * {m(c0_at + 1)} + k{u} * {m(c0_at + 2)}); }}"
        for r, u, c in cells
    )
    gate_in = "\n".join(
        f"    var {a} = ld_gx({m(g_at)} + bc{r} * {m(g_at + 1)} + t * {m(g_at + 2)} "
        f"+ ({g * h}u + kc{u}) * {m(g_at + 3)});"
        for r, u, g, a in accs
    )
    cell = "\n".join(
        f"""    if (k{u} < {h}u) {{
      let ig = 1.0 / (1.0 + sc_exp(-a0_{r}_{u})); let fg = 1.0 / (1.0 + sc_exp(-a1_{r}_{u}));
      let gg = sc_tanh(a2_{r}_{u}); let og = 1.0 / (1.0 + sc_exp(-a3_{r}_{u}));
      let c = fg * {c} + ig * gg;
      let hh = og * sc_tanh(c);
      if (b{r} < B) {{
        let yo = (t * B + b{r}) * {6 * h}u + k{u};
        st_y(yo, hh); st_y(yo + {h}u, c); st_y(yo + {2 * h}u, ig);
        st_y(yo + {3 * h}u, fg); st_y(yo + {4 * h}u, gg); st_y(yo + {5 * h}u, og);
      }}
      {c} = {_carry("c", half)};
      sh_h[nxt + {r * h}u + k{u}] = {_carry("hh", half)};
    }}"""
        for r, u, c in cells
    )
    src.body = f"""{_head(n, rows, {"sh_h": 2 * rows * h})}
{_units(n, h, units)}
{_rows(rows)}
{init}
  for (var e = li; e < {rows * h}u; e += {n}u) {{
    let r = e / {h}u; let j = e - r * {h}u; let bb = min(row0 + r, B - 1u);
    sh_h[e] = ld_h0({m(h0_at)} + bb * {m(h0_at + 1)} + j * {m(h0_at + 2)});
  }}
  workgroupBarrier();
  for (var t = 0u; t < T; t++) {{
    let cur = (t % 2u) * {rows * h}u; let nxt = {rows * h}u - cur;
{gate_in}
{_unrolled(h, dot)}
{cell}
    workgroupBarrier();
  }}
}}
"""
    return [first, (src, fold_grid(-(-b // rows), src.limits))]


def lstm_backward(base: Source, ins, out, variant: str) -> list:
    """One launch: lstm_seq_backward's [dA | slot 0 | slot 1] for every step; the final
    carries land in slot (T-1) % 2, as the ops lay them out."""
    gy, y, c0, w = ins
    steps, b, h6 = y.shape
    h, rows = h6 // 6, ROWS[variant]
    n = _invocations(h, base.limits)
    units = -(-h // n)
    last_slot = steps * b * 4 * h + ((steps - 1) % 2) * 2 * b * h
    src, (gy_at, c0_at, w_at) = step_source(
        base, (0, b, h, steps, last_slot), {"gy": gy, "y": y, "c0": c0, "w": w},
        ("gy", "c0", "w"), "o", out,
    )  # fmt: skip
    src.helpers("sc_tanh(")
    half, m = out.dtype.name == "f16", _m
    cells = _names("p", rows, units)
    carries = "\n".join(f"  var dh{r}_{u} = 0.0; var dc{r}_{u} = 0.0;" for r, u, _ in cells)
    grads = "\n".join(
        f"""    if (k{u} < {h}u) {{
      let yo = (t * B + bc{r}) * {6 * h}u + k{u};
      let gyo = {m(gy_at)} + t * {m(gy_at + 1)} + bc{r} * {m(gy_at + 2)};
      let cc = ld_y(yo + {h}u); let ig = ld_y(yo + {2 * h}u); let fg = ld_y(yo + {3 * h}u);
      let gg = ld_y(yo + {4 * h}u); let og = ld_y(yo + {5 * h}u);
      let dh = ld_gy(gyo + k{u} * gs) + dh{r}_{u};
      var dc = ld_gy(gyo + ({h}u + k{u}) * gs) + dc{r}_{u};
      var cp: f32;
      if (t == 0u) {{ cp = ld_c0({m(c0_at)} + bc{r} * {m(c0_at + 1)} + k{u} * {m(c0_at + 2)}); }}
      else {{ cp = ld_y(yo - B * {6 * h}u + {h}u); }}
      let tc = sc_tanh(cc);
      dc += dh * og * (1.0 - tc * tc);
      let d0 = (dc * gg + ld_gy(gyo + ({2 * h}u + k{u}) * gs)) * ig * (1.0 - ig);
      let d1 = (dc * cp + ld_gy(gyo + ({3 * h}u + k{u}) * gs)) * fg * (1.0 - fg);
      let d2 = (dc * ig + ld_gy(gyo + ({4 * h}u + k{u}) * gs)) * (1.0 - gg * gg);
      let d3 = (dh * tc + ld_gy(gyo + ({5 * h}u + k{u}) * gs)) * og * (1.0 - og);
      if (b{r} < B) {{
        let ao = (t * B + b{r}) * {4 * h}u + k{u};
        st_o(ao, d0); st_o(ao + {h}u, d1); st_o(ao + {2 * h}u, d2); st_o(ao + {3 * h}u, d3);
      }}
      let so = {r * 4 * h}u + k{u};
      sh_d[so] = d0; sh_d[so + {h}u] = d1; sh_d[so + {2 * h}u] = d2; sh_d[so + {3 * h}u] = d3;
      dc{r}_{u} = {_carry("dc * fg", half)};
    }}"""
        for r, u, _ in cells
    )

    def dot(j: str) -> str:
        ws = "".join(
            f" let w{u} = ld_w({m(w_at)} + ({j}) * {m(w_at + 1)} + kc{u} * {m(w_at + 2)});"
            for u in range(units)
        )
        ds = "".join(f" let d{r} = sh_d[{r * 4 * h}u + {j}];" for r in range(rows))
        fmas = "".join(f" {p} = {p} + d{r} * w{u};" for r, u, p in cells)
        return f"      {{{ws}{ds}{fmas} }}"

    zero = " ".join(f"var {p} = 0.0;" for _, _, p in cells)
    keep = " ".join(f"dh{r}_{u} = {_carry(p, half)};" for r, u, p in cells)
    final = "\n".join(
        f"  if (k{u} < {h}u && b{r} < B) {{ st_o(mt[4] + b{r} * {h}u + k{u}, dh{r}_{u}); "
        f"st_o(mt[4] + B * {h}u + b{r} * {h}u + k{u}, dc{r}_{u}); }}"
        for r, u, _ in cells
    )
    src.body = f"""{_head(n, rows, {"sh_d": rows * 4 * h})}
{_units(n, h, units)}
{_rows(rows)}
  let gs = {m(gy_at + 3)};
{carries}
  for (var s = 0u; s < T; s++) {{
    let t = T - 1u - s;
{grads}
    workgroupBarrier();
    {zero}
{_unrolled(4 * h, dot)}
    {keep}
    workgroupBarrier();
  }}
{final}
}}
"""
    return [(src, fold_grid(-(-b // rows), src.limits))]
