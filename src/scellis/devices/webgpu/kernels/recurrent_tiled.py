"""Tiled LSTM and GRU step kernels (devices layer): the ``tiled*`` recurrent variants.

Same ops, packed layouts, carry slots and f16 rule as ``recurrent.py`` (stored values
round once, at their store); what changes is how a step's work is laid out.

Forward step t: one dispatch, the product h_{t-1} [B, H] x W_hh^T [H, G*H] on
``gate_tile`` workgroup tiles, each invocation owning every gate of its (b, k) outputs,
so the cell maths runs on its registers straight after the product.

Backward step t: two dispatches. The first, elementwise over (b, k), computes the gate
gradients dA[b, :] once each, stores them (and, for the LSTM, the carried dc); the
second is the tiled product dh_{t-1} = dA [B, G*H] x W_hh [G*H, H] with the carry
update as its epilogue. The product reads dA as the first stored it, except in f16
where it reads an f32 copy in scratch storage (when the backend gives one), so the
carried dh sums unrounded gate gradients, as the reference does.
"""

from __future__ import annotations

from .common import Source, grid_1d, main_1d
from .gate_tile import GateTile, tiled_main
from .recurrent_common import check_dtypes, gru_gate_grads, lstm_gate_grads, step_source

# variant name -> (forward tile, backward product tile)
TILES = {
    # 64 invocations, 4 rows b x 1 column k each (x G gates): few, busy invocations
    "tiled": (GateTile(2, 32, 4, 1, 16), GateTile(2, 32, 4, 1, 16)),
    # 256 invocations, one (b, k) each: more warps per workgroup to hide latency
    "tiled256": (GateTile(8, 32, 1, 1, 16), GateTile(8, 32, 1, 1, 32)),
    # 128 invocations, 2 x 2 outputs each: more reuse per staged word
    "tiled2x2": (GateTile(4, 32, 2, 2, 8), GateTile(4, 32, 2, 2, 16)),
    # 256 invocations as 4 groups splitting the contraction: 4x the workgroups of
    # tiled256 over the same outputs, a quarter of the chunks each (2 or 8 groups, and 16
    # columns per workgroup, measured slower on an H200: bench/RESULTS.md)
    "split4": (GateTile(8, 8, 1, 1, 16, ks=4), GateTile(8, 8, 1, 1, 32, ks=4)),
}


def fits(variant: str, limits: dict, gates: int) -> bool:
    fwd, bwd = TILES[variant]
    return fwd.fits(limits, gates) and bwd.fits(limits, 1)


def _m(k: int) -> str:
    return f"mt[{k}u]"


def _prev_h(packed: int, h0_at: int) -> str:
    """WGSL ``tile_a(b, j)`` = h_{t-1}[b, j] (h0 at t = 0), 0 outside [B, H]."""
    h0 = f"{_m(h0_at)} + b * {_m(h0_at + 1)} + j * {_m(h0_at + 2)}"
    return f"""
fn tile_a(b: u32, j: u32) -> f32 {{
  let B = mt[1]; let H = mt[2]; let t = mt[3];
  if ((b >= B) | (j >= H)) {{ return 0.0; }}
  if (t == 0u) {{ return ld_h0({h0}); }}
  return ld_y(((t - 1u) * B + b) * {packed}u * H + j);
}}"""


def _w_rows(w_at: int) -> str:
    """WGSL ``tile_w(g, j, k)`` = W_hh[g*H + k, j]: the forward's W_hh^T, gate by gate."""
    return f"""
fn tile_w(g: u32, j: u32, k: u32) -> f32 {{
  let H = mt[2];
  if ((j >= H) | (k >= H)) {{ return 0.0; }}
  return ld_w({_m(w_at)} + (g * H + k) * {_m(w_at + 1)} + j * {_m(w_at + 2)});
}}"""


def _w_cols(w_at: int, rows: str) -> str:
    """WGSL ``tile_w(0, m, k)`` = W_hh[m, k] for m < ``rows``: the backward's W_hh."""
    return f"""
fn tile_w(g: u32, m: u32, k: u32) -> f32 {{
  let H = mt[2];
  if ((m >= {rows}) | (k >= H)) {{ return 0.0; }}
  return ld_w({_m(w_at)} + m * {_m(w_at + 1)} + k * {_m(w_at + 2)});
}}"""


def lstm_forward(base: Source, ins, out, t: int, tile: GateTile):
    gx, h0, c0, w = ins
    b, _, h4 = gx.shape
    h = h4 // 4
    src, (g_at, h0_at, c0_at, w_at) = step_source(
        base, (b * h, b, h, t), {"gx": gx, "h0": h0, "c0": c0, "w": w},
        ("gx", "h0", "c0", "w"), "y", out,
    )  # fmt: skip
    src.helpers("sc_exp( sc_tanh(")
    src.fns += [_prev_h(6, h0_at), _w_rows(w_at)]
    m = _m
    epilogue = f"""
      let gb = {m(g_at)} + b * {m(g_at + 1)} + t * {m(g_at + 2)}; let gs = {m(g_at + 3)};
      let ig = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + k * gs) + a0)));
      let fg = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + (H + k) * gs) + a1)));
      let gg = sc_tanh(ld_gx(gb + (2u * H + k) * gs) + a2);
      let og = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + (3u * H + k) * gs) + a3)));
      var cp: f32;
      if (t == 0u) {{ cp = ld_c0({m(c0_at)} + b * {m(c0_at + 1)} + k * {m(c0_at + 2)}); }}
      else {{ cp = ld_y(((t - 1u) * B + b) * 6u * H + H + k); }}
      let c = fg * cp + ig * gg;
      let hh = og * sc_tanh(c);
      let yo = (t * B + b) * 6u * H;
      st_y(yo + k, hh); st_y(yo + H + k, c); st_y(yo + 2u * H + k, ig);
      st_y(yo + 3u * H + k, fg); st_y(yo + 4u * H + k, gg); st_y(yo + 5u * H + k, og);"""
    src.body = tiled_main(tile, 4, "H", "j", epilogue)
    return src, tile.grid(b, h, src.limits)


def gru_forward(base: Source, ins, out, t: int, tile: GateTile):
    gx, h0, w, bh = ins
    b, _, h3 = gx.shape
    h = h3 // 3
    src, (g_at, h0_at, w_at, b_at) = step_source(
        base, (b * h, b, h, t), {"gx": gx, "h0": h0, "w": w, "bh": bh},
        ("gx", "h0", "w", "bh"), "y", out,
    )  # fmt: skip
    src.helpers("sc_exp( sc_tanh(")
    src.fns += [_prev_h(5, h0_at), _w_rows(w_at)]
    m = _m
    epilogue = f"""
      let gb = {m(g_at)} + b * {m(g_at + 1)} + t * {m(g_at + 2)}; let gs = {m(g_at + 3)};
      let bo = {m(b_at)}; let bs = {m(b_at + 1)};
      let hr = a0 + ld_bh(bo + k * bs); let hz = a1 + ld_bh(bo + (H + k) * bs);
      let hn = a2 + ld_bh(bo + (2u * H + k) * bs);
      var hp: f32;
      if (t == 0u) {{ hp = ld_h0({m(h0_at)} + b * {m(h0_at + 1)} + k * {m(h0_at + 2)}); }}
      else {{ hp = ld_y(((t - 1u) * B + b) * 5u * H + k); }}
      let r = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + k * gs) + hr)));
      let z = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + (H + k) * gs) + hz)));
      let n = sc_tanh(ld_gx(gb + (2u * H + k) * gs) + r * hn);
      let yo = (t * B + b) * 5u * H;
      st_y(yo + k, (1.0 - z) * n + z * hp); st_y(yo + H + k, r); st_y(yo + 2u * H + k, z);
      st_y(yo + 3u * H + k, n); st_y(yo + 4u * H + k, hn);"""
    src.body = tiled_main(tile, 3, "H", "j", epilogue)
    return src, tile.grid(b, h, src.limits)


def _f32_copy(base: Source, out, b: int, h: int):
    """The f32 scratch view the product reads dA from in f16, or None (read ``out``)."""
    if out.dtype.name != "f16" or base.scratch is None:
        return None
    return base.scratch(b * 4 * h)


def _store_da(copy) -> str:
    lines = [
        "    let ao = (t * B + b) * 4u * H;",
        "    st_o(ao + k, own.da.x); st_o(ao + H + k, own.da.y);",
        "    st_o(ao + 2u * H + k, own.da.z); st_o(ao + 3u * H + k, own.da.w);",
    ]
    if copy is not None:
        lines += [
            "    let so = b * 4u * H;",
            "    st_s(so + k, own.da.x); st_s(so + H + k, own.da.y);",
            "    st_s(so + 2u * H + k, own.da.z); st_s(so + 3u * H + k, own.da.w);",
        ]
    return "\n".join(lines)


def _gate_source(base, meta, ins: dict, strided, out, copy):
    src, ats = step_source(base, meta, ins, strided, "o", out)
    if copy is not None:
        src.operand("s", copy, write=True)
    return src, ats


def _da_reader(copy, rows: str, col: str) -> str:
    """WGSL ``tile_a(b, m)``: the gate gradient feeding contraction row m < ``rows``,
    which sits at column ``col`` of dA[t, b] (or of its f32 copy)."""
    at = "b * 4u * H + c" if copy is not None else "(t * B + b) * 4u * H + c"
    load = "ld_s" if copy is not None else "ld_o"
    return f"""
fn tile_a(b: u32, m: u32) -> f32 {{
  let B = mt[1]; let H = mt[2]; let t = mt[3];
  if ((b >= B) | (m >= {rows})) {{ return 0.0; }}
  let c = {col};
  return {load}({at});
}}"""


def _grads_step(base, ins: dict, strided, fn, carry: str, meta, out, copy):
    """The elementwise dispatch of backward step t: gate gradients once per (b, k)."""
    src, ats = _gate_source(base, meta, ins, strided, out, copy)
    src.helpers("sc_tanh(")
    src.fns.append(fn(*ats))
    body = f"""
    let B = mt[1]; let H = mt[2]; let t = mt[3];
    let b = i / H; let k = i - b * H;
    let own = gate_grads(b, k);
{_store_da(copy)}{carry}"""
    src.body = main_1d(body)
    b, h = meta[1], meta[2]
    return src, grid_1d(b * h, src.limits)


def lstm_backward(base: Source, ins, out, t: int, tile: GateTile) -> list:
    gy, y, c0, w = ins
    steps, b, h6 = y.shape
    h = h6 // 6
    n = steps * b * 4 * h
    slot_in, slot_out = (steps - t) % 2, (steps - 1 - t) % 2
    meta = (b * h, b, h, t, steps, n + slot_in * 2 * b * h, n + slot_out * 2 * b * h)
    copy = _f32_copy(base, out, b, h)
    carry = "\n    st_o(mt[6] + B * H + b * H + k, own.dc * own.f);"
    grads = _grads_step(
        base, {"gy": gy, "y": y, "c0": c0}, ("gy", "c0"), lstm_gate_grads, carry, meta, out, copy
    )
    src, (w_at,) = _gate_source(base, meta, {"w": w}, ("w",), out, copy)
    src.fns += [_da_reader(copy, "4u * H", "m"), _w_cols(w_at, "4u * H")]
    src.body = tiled_main(tile, 1, "4u * H", "k", "      st_o(mt[6] + b * H + k, a0);")
    return [grads, (src, tile.grid(b, h, src.limits))]


def gru_backward(base: Source, ins, out, t: int, tile: GateTile) -> list:
    gy, y, h0, w = ins
    steps, b, h5 = y.shape
    h = h5 // 5
    n = steps * b * 4 * h
    slot_in, slot_out = (steps - t) % 2, (steps - 1 - t) % 2
    meta = (b * h, b, h, t, steps, n + slot_in * b * h, n + slot_out * b * h)
    copy = _f32_copy(base, out, b, h)
    grads = _grads_step(
        base, {"gy": gy, "y": y, "h0": h0}, ("gy", "h0"), gru_gate_grads, "", meta, out, copy
    )
    src, (gy_at, w_at) = _gate_source(
        base, meta, {"gy": gy, "y": y, "w": w}, ("gy", "w"), out, copy
    )
    # contraction rows r, z, n of W_hh meet (da_r, da_z, dhn): dA columns 0..2H, 3H..4H
    src.fns += [
        _da_reader(copy, "3u * H", "select(m, m + H, m >= 2u * H)"),
        _w_cols(w_at, "3u * H"),
    ]
    m = _m
    epilogue = f"""
      let gyo = {m(gy_at)} + t * {m(gy_at + 1)} + b * {m(gy_at + 2)};
      var dh = ld_gy(gyo + k * {m(gy_at + 3)});
      if (t + 1u < mt[4]) {{ dh += ld_o(mt[5] + b * H + k); }}
      let z = ld_y((t * B + b) * 5u * H + 2u * H + k);
      st_o(mt[6] + b * H + k, dh * z + a0);"""
    src.body = tiled_main(tile, 1, "3u * H", "k", epilogue)
    return [grads, (src, tile.grid(b, h, src.limits))]


__all__ = ["TILES", "check_dtypes", "fits", "lstm_forward", "gru_forward"]
