"""Whole-sequence LSTM kernels (devices layer): the ``seq`` recurrent variant.

The step kernels (``recurrent.py``, ``recurrent_tiled.py``) launch once per time step
each way, so a small layer's step is a chain of short dependent launches: on an H100
the 2x64 LSTM's sequence kernels took 1.46 of its 1.97 GPU ms in 192 launches
(bench/RESULTS.md), where the arithmetic is a few microseconds. A batch row's
recurrence depends on no other row, so here one workgroup walks one row through every
step in one launch, and the batch spreads over the GPU as workgroups (B of them). (An
earlier form that walked the whole batch in one workgroup left all but one
multiprocessor idle.)

The workgroup is 4H invocations, one per gate row m = g*H + k. Each holds its row of
W_hh (forward) or its column block W_hh[g*H : g*H + H, k] (backward) in registers,
read once per launch, and meets the others through two small workgroup arrays per
step. Only layers with 4H <= the adapter's invocations per workgroup and H <=
``SEQ_MAX_H`` take it: past that the registers would spill.

Forward step t: invocation m sums gx[b, t, m] + h_{t-1} . W_hh[m, :] (j in order, as
the ``step`` kernel does), then the first H invocations run the cell maths for unit k
and keep c in a register. Backward step t, from the last: unit k's gate gradients from
the packed forward result, the cotangent and its carries (dh from the step after, dc
in a register); then invocation (g, k) forms sum_j dA[g*H + j] W_hh[g*H + j, k] and
unit k adds the four gate blocks: dh_{t-1}[k]. Both write the same packed layouts as
the step kernels; the backward's carries end in slot (T-1) % 2 as the ops say (the
other slot is not written).

f16: operands are read widened, the maths runs in f32, and every carried value (h and
c forward, dh and dc backward) is rounded to f16 before the next step uses it, as the
step kernels' round trip through the stored result rounds it; the gate gradients feed
the product unrounded, as the tiled kernels' f32 copy does. Results match the other
variants to rounding (tests/recurrent/test_recurrent_variants.py).
"""

from __future__ import annotations

from .matmul import fold_grid
from .recurrent_common import step_source

# the largest hidden size that keeps its W_hh row (forward) or column block (backward)
# of H words in registers
SEQ_MAX_H = 64


def fits(limits: dict, gates: int, hidden: int | None) -> bool:
    """Whether an LSTM layer of ``hidden`` units can take the whole-sequence kernels."""
    if gates != 4 or hidden is None:
        return False
    return hidden <= SEQ_MAX_H and 4 * hidden <= limits["max_compute_invocations_per_workgroup"]


def _m(k: int) -> str:
    return f"mt[{k}u]"


def _carry(name: str, half: bool) -> str:
    """``name`` as the next step would read it back from the stored result."""
    return f"f32(f16({name}))" if half else name


def _head(h: int, arrays: dict) -> str:
    decls = "".join(f"var<workgroup> {n}: array<f32, {size}>;\n" for n, size in arrays.items())
    return f"""{decls}@compute @workgroup_size({4 * h})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
  let B = mt[1]; let H = {h}u; let T = mt[3];
  // one workgroup per batch row; a folded grid's extra workgroups read row 0, store nothing
  let row = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let live = row < B; let b = select(0u, row, live);
  let g = li / H; let k = li - g * H;"""


def lstm_forward(base, ins, out):
    """One launch: every step of an LSTM layer, Y [T, B, 6H] packed as lstm_seq's."""
    gx, h0, c0, w = ins
    b, steps, h4 = gx.shape
    h = h4 // 4
    src, (g_at, h0_at, c0_at, w_at) = step_source(
        base, (0, b, h, steps), {"gx": gx, "h0": h0, "c0": c0, "w": w},
        ("gx", "h0", "c0", "w"), "y", out,
    )  # fmt: skip
    src.helpers("sc_exp( sc_tanh(")
    half = out.dtype.name == "f16"
    m = _m
    w_regs = "\n".join(
        f"  let w{j} = ld_w(wr + {j}u * {m(w_at + 2)});" for j in range(h)
    )  # row li of W_hh
    dot = "\n".join(f"    a = a + sh_h[{j}u] * w{j};" for j in range(h))
    src.body = f"""{_head(h, {"sh_h": h, "sh_a": 4 * h})}
  let wr = {m(w_at)} + li * {m(w_at + 1)};
{w_regs}
  var c = 0.0;
  if (li < H) {{
    sh_h[li] = ld_h0({m(h0_at)} + b * {m(h0_at + 1)} + li * {m(h0_at + 2)});
    c = ld_c0({m(c0_at)} + b * {m(c0_at + 1)} + li * {m(c0_at + 2)});
  }}
  workgroupBarrier();
  let gb = {m(g_at)} + b * {m(g_at + 1)} + li * {m(g_at + 3)};
  for (var t = 0u; t < T; t++) {{
    var a = ld_gx(gb + t * {m(g_at + 2)});
{dot}
    sh_a[li] = a;
    workgroupBarrier();
    if (li < H) {{
      let ig = 1.0 / (1.0 + sc_exp(-sh_a[k])); let fg = 1.0 / (1.0 + sc_exp(-sh_a[H + k]));
      let gg = sc_tanh(sh_a[2u * H + k]); let og = 1.0 / (1.0 + sc_exp(-sh_a[3u * H + k]));
      c = fg * c + ig * gg;
      let hh = og * sc_tanh(c);
      if (live) {{
        let yo = (t * B + b) * 6u * H;
        st_y(yo + k, hh); st_y(yo + H + k, c); st_y(yo + 2u * H + k, ig);
        st_y(yo + 3u * H + k, fg); st_y(yo + 4u * H + k, gg); st_y(yo + 5u * H + k, og);
      }}
      c = {_carry("c", half)};
      sh_h[k] = {_carry("hh", half)};
    }}
    workgroupBarrier();
  }}
}}
"""
    return src, fold_grid(b, src.limits)


def lstm_backward(base, ins, out):
    """One launch: lstm_seq_backward's [dA | slot 0 | slot 1] for every step."""
    gy, y, c0, w = ins
    steps, b, h6 = y.shape
    h = h6 // 6
    n = steps * b * 4 * h
    last_slot = n + ((steps - 1) % 2) * 2 * b * h
    src, (gy_at, c0_at, w_at) = step_source(
        base, (0, b, h, steps, last_slot), {"gy": gy, "y": y, "c0": c0, "w": w},
        ("gy", "c0", "w"), "o", out,
    )  # fmt: skip
    src.helpers("sc_tanh(")
    half = out.dtype.name == "f16"
    m = _m
    # column k of gate block g: W_hh[g*H + j, k] for j < H
    w_regs = "\n".join(f"  let w{j} = ld_w(wc + {j}u * {m(w_at + 1)});" for j in range(h))
    dot = "\n".join(f"    p = p + sh_d[g * H + {j}u] * w{j};" for j in range(h))
    src.body = f"""{_head(h, {"sh_d": 4 * h, "sh_p": 4 * h})}
  let wc = {m(w_at)} + (g * H) * {m(w_at + 1)} + k * {m(w_at + 2)};
{w_regs}
  let gs = {m(gy_at + 3)};
  var dh_next = 0.0; var dc_next = 0.0;
  for (var s = 0u; s < T; s++) {{
    let t = T - 1u - s;
    if (li < H) {{
      if (s > 0u) {{
        dh_next = {_carry("sh_p[k] + sh_p[H + k] + sh_p[2u * H + k] + sh_p[3u * H + k]", half)};
      }}
      let yo = (t * B + b) * 6u * H;
      let gyo = {m(gy_at)} + t * {m(gy_at + 1)} + b * {m(gy_at + 2)};
      let cc = ld_y(yo + H + k); let ig = ld_y(yo + 2u * H + k); let fg = ld_y(yo + 3u * H + k);
      let gg = ld_y(yo + 4u * H + k); let og = ld_y(yo + 5u * H + k);
      let dh = ld_gy(gyo + k * gs) + dh_next;
      var dc = ld_gy(gyo + (H + k) * gs) + dc_next;
      var cp: f32;
      if (t == 0u) {{ cp = ld_c0({m(c0_at)} + b * {m(c0_at + 1)} + k * {m(c0_at + 2)}); }}
      else {{ cp = ld_y(yo - B * 6u * H + H + k); }}
      let tc = sc_tanh(cc);
      dc += dh * og * (1.0 - tc * tc);
      let d0 = (dc * gg + ld_gy(gyo + (2u * H + k) * gs)) * ig * (1.0 - ig);
      let d1 = (dc * cp + ld_gy(gyo + (3u * H + k) * gs)) * fg * (1.0 - fg);
      let d2 = (dc * ig + ld_gy(gyo + (4u * H + k) * gs)) * (1.0 - gg * gg);
      let d3 = (dh * tc + ld_gy(gyo + (5u * H + k) * gs)) * og * (1.0 - og);
      if (live) {{
        let ao = (t * B + b) * 4u * H;
        st_o(ao + k, d0); st_o(ao + H + k, d1); st_o(ao + 2u * H + k, d2);
        st_o(ao + 3u * H + k, d3);
      }}
      sh_d[k] = d0; sh_d[H + k] = d1; sh_d[2u * H + k] = d2; sh_d[3u * H + k] = d3;
      dc_next = {_carry("dc * fg", half)};
    }}
    workgroupBarrier();
    var p = 0.0;
{dot}
    sh_p[li] = p;
    workgroupBarrier();
  }}
  if (li < H && live) {{
    let dh0 = sh_p[k] + sh_p[H + k] + sh_p[2u * H + k] + sh_p[3u * H + k];
    st_o(mt[4] + b * H + k, dh0);
    st_o(mt[4] + B * H + b * H + k, dc_next);
  }}
}}
"""
    return src, fold_grid(b, src.limits)
