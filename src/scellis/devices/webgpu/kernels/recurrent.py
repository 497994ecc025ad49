"""Fused LSTM and GRU kernels (devices layer): the recurrent kernel variants, and the choice.

The variants, picked by ``SCELLIS_RECURRENT_VARIANT`` when the kernels are built, or
by ``variant`` when it is unset:

- ``step`` (below), one launch per time step each way;
- the tiled step kernels of ``recurrent_tiled.py`` (``tiled``, ``tiled256``,
  ``tiled2x2`` and ``split4``, whose workgroups split each step's contraction among
  four groups of invocations; ``split4`` is the default for wide layers on a GPU, the
  fastest on an H200, bench/RESULTS.md), the backward in two launches per step;
- ``stream1`` / ``stream2`` / ``stream4`` (``recurrent_stream.py``), every step of an
  LSTM layer in one launch each way, W_hh read from L2 at each step: on a GPU the
  default for LSTM layers of up to ``NARROW_MAX_H`` units;
- ``seq`` (``recurrent_seq.py``), the same for layers of up to 64 units with W_hh in
  registers: the fast tier's.

On a software adapter ``step`` is the default: its plain loops suit a CPU better than
workgroup barriers (lavapipe: predictions over 8,918 windows 3.0 s against split4's
9.1 s, a training step of the seed LSTM 4.1 ms against 6.9). All compute the same
results to rounding and share the ops' layouts, so a recorded run may use any of them.

The ``step`` kernels, one dispatch per step each way. Forward step t, one invocation
per (b, k): the four gate pre-activations at k are gx[b, t, gate*H + k] plus the dot
products of h_{t-1}[b, :] with rows gate*H + k of W_hh; then the activations, c_t and
h_t, all stored packed in Y[t, b].

Backward step t, one invocation per (b, k): it needs dA[b, m] for every gate row m
to form dh_{t-1}[b, k] = sum_m dA[b, m] W_hh[m, k], so it recomputes them from Y,
the incoming gradient and the carried (dh, dc) of step t+1 — elementwise work of
the same order as the dot product, and no second dispatch. Carries ping-pong
between two slots of the output so no invocation reads what another writes.

f16 (mixed precision): every operand is stored in f16 and read widened to f32; the
dot products and the gate maths run in f32, and each stored value (the packed step
result, the gate gradients, the carries) rounds to f16 once, at its store. The next
step reads the rounded carry, as the reference device's f16 emulation does.
"""

from __future__ import annotations

import os

from ....base.errors import DeviceError
from ...kernel_choice import current as kernel_choice
from . import recurrent_seq as seq
from . import recurrent_stream as stream
from . import recurrent_tiled as tiled
from .common import Source, grid_1d, main_1d
from .recurrent_common import check_dtypes, gru_gate_grads, lstm_gate_grads, step_source

VARIANT_ENV = "SCELLIS_RECURRENT_VARIANT"
# "step": one invocation per (b, k), dot products from global memory (below);
# "seq": every step in one launch each way, a workgroup per batch row, small LSTM
# layers only (recurrent_seq.py); "stream1/2/4": every step in one launch each way,
# W_hh read from memory each step, 1/2/4 batch rows a workgroup, LSTM layers of any
# width (recurrent_stream.py); the others: tiled products, two dispatches per backward
# step (recurrent_tiled.py)
VARIANTS = ("step", "seq", *stream.ROWS, *tiled.TILES)
DEFAULT_VARIANT = "split4"
# narrow LSTM layers on a GPU: one launch each way beats a launch per step there (an
# H100, one layer of batch 128 over 64 steps, forward + backward replayed: 0.18 / 0.48
# / 1.93 ms at hidden 32 / 64 / 128 against split4's 2.17 / 2.38 / 3.60); past 128 units
# every step's read of W_hh from L2 costs more than the launches save (256: 3.84 against
# 3.27), bench/RESULTS.md
NARROW_VARIANT, NARROW_MAX_H = "stream1", 128
# ...at the batch sizes of training (measured at 128 rows): each row's workgroup rereads
# W_hh from L2 at every step, so a large batch (a forecast over thousands of windows)
# keeps the tiled kernels, which read it once per tile of rows
NARROW_MAX_ROWS = 256
SOFTWARE_VARIANT = "step"  # a GPU emulated on the CPU (see the module note)
FALLBACK_VARIANT = "tiled"  # 64 invocations: where the default does not fit


def _forward_step(base: Source, ins, out, t: int) -> tuple[Source, tuple]:
    gx, h0, c0, w = ins
    b, steps, h4 = gx.shape
    h = h4 // 4
    src, (g_at, h0_at, c0_at, w_at) = step_source(
        base,
        (b * h, b, h, t),
        {"gx": gx, "h0": h0, "c0": c0, "w": w},
        ("gx", "h0", "c0", "w"),
        "y",
        out,
    )
    src.helpers("sc_exp( sc_tanh(")
    m = lambda k: f"mt[{k}u]"  # noqa: E731
    body = f"""
    let B = mt[1]; let H = mt[2]; let t = mt[3];
    let b = i / H; let k = i - b * H;
    let gb = {m(g_at)} + b * {m(g_at + 1)} + t * {m(g_at + 2)};
    let gs = {m(g_at + 3)};
    var a0 = ld_gx(gb + k * gs); var a1 = ld_gx(gb + (H + k) * gs);
    var a2 = ld_gx(gb + (2u * H + k) * gs); var a3 = ld_gx(gb + (3u * H + k) * gs);
    let ws = {m(w_at + 1)}; let wk = {m(w_at + 2)};
    let w0 = {m(w_at)} + k * ws; let w1 = w0 + H * ws; let w2 = w1 + H * ws; let w3 = w2 + H * ws;
    let prev = (t - 1u) * B * 6u * H + b * 6u * H;
    for (var j = 0u; j < H; j++) {{
      var hj: f32;
      if (t == 0u) {{ hj = ld_h0({m(h0_at)} + b * {m(h0_at + 1)} + j * {m(h0_at + 2)}); }}
      else {{ hj = ld_y(prev + j); }}
      a0 += hj * ld_w(w0 + j * wk); a1 += hj * ld_w(w1 + j * wk);
      a2 += hj * ld_w(w2 + j * wk); a3 += hj * ld_w(w3 + j * wk);
    }}
    var cp: f32;
    if (t == 0u) {{ cp = ld_c0({m(c0_at)} + b * {m(c0_at + 1)} + k * {m(c0_at + 2)}); }}
    else {{ cp = ld_y(prev + H + k); }}
    let ig = 1.0 / (1.0 + sc_exp(-a0)); let fg = 1.0 / (1.0 + sc_exp(-a1));
    let gg = sc_tanh(a2); let og = 1.0 / (1.0 + sc_exp(-a3));
    let c = fg * cp + ig * gg;
    let hh = og * sc_tanh(c);
    let yo = (t * B + b) * 6u * H;
    st_y(yo + k, hh); st_y(yo + H + k, c); st_y(yo + 2u * H + k, ig);
    st_y(yo + 3u * H + k, fg); st_y(yo + 4u * H + k, gg); st_y(yo + 5u * H + k, og);"""
    src.body = main_1d(body)
    return src, grid_1d(b * h, src.limits)


def _backward_step(base: Source, ins, out, t: int) -> tuple[Source, tuple]:
    gy, y, c0, w = ins
    steps, b, h6 = y.shape
    h = h6 // 6
    n = steps * b * 4 * h
    slot_in, slot_out = (steps - t) % 2, (steps - 1 - t) % 2
    src, (gy_at, c0_at, w_at) = step_source(
        base,
        (b * h, b, h, t, steps, n + slot_in * 2 * b * h, n + slot_out * 2 * b * h),
        {"gy": gy, "y": y, "c0": c0, "w": w},
        ("gy", "c0", "w"),
        "o",
        out,
    )
    src.helpers("sc_tanh(")
    m = lambda k: f"mt[{k}u]"  # noqa: E731
    src.fns.append(lstm_gate_grads(gy_at, c0_at))
    body = f"""
    let B = mt[1]; let H = mt[2]; let t = mt[3];
    let b = i / H; let k = i - b * H;
    let ws = {m(w_at + 1)}; let wk = {m(w_at + 2)}; let wo = {m(w_at)} + k * wk;
    var acc = 0.0;
    for (var j = 0u; j < H; j++) {{
      let d = gate_grads(b, j).da;
      acc += d.x * ld_w(wo + j * ws) + d.y * ld_w(wo + (H + j) * ws)
           + d.z * ld_w(wo + (2u * H + j) * ws) + d.w * ld_w(wo + (3u * H + j) * ws);
    }}
    let own = gate_grads(b, k);
    let ao = (t * B + b) * 4u * H;
    st_o(ao + k, own.da.x); st_o(ao + H + k, own.da.y);
    st_o(ao + 2u * H + k, own.da.z); st_o(ao + 3u * H + k, own.da.w);
    st_o(mt[6] + b * H + k, acc);
    st_o(mt[6] + B * H + b * H + k, own.dc * own.f);"""
    src.body = main_1d(body)
    return src, grid_1d(b * h, src.limits)


def _gru_forward_step(base: Source, ins, out, t: int) -> tuple[Source, tuple]:
    gx, h0, w, bh = ins
    b, steps, h3 = gx.shape
    h = h3 // 3
    src, (g_at, h0_at, w_at, b_at) = step_source(
        base,
        (b * h, b, h, t),
        {"gx": gx, "h0": h0, "w": w, "bh": bh},
        ("gx", "h0", "w", "bh"),
        "y",
        out,
    )
    src.helpers("sc_exp( sc_tanh(")
    m = lambda k: f"mt[{k}u]"  # noqa: E731
    body = f"""
    let B = mt[1]; let H = mt[2]; let t = mt[3];
    let b = i / H; let k = i - b * H;
    let gb = {m(g_at)} + b * {m(g_at + 1)} + t * {m(g_at + 2)};
    let gs = {m(g_at + 3)};
    let bs = {m(b_at + 1)};
    var hr = ld_bh({m(b_at)} + k * bs); var hz = ld_bh({m(b_at)} + (H + k) * bs);
    var hn = ld_bh({m(b_at)} + (2u * H + k) * bs);
    let ws = {m(w_at + 1)}; let wk = {m(w_at + 2)};
    let w0 = {m(w_at)} + k * ws; let w1 = w0 + H * ws; let w2 = w1 + H * ws;
    let prev = (t - 1u) * B * 5u * H + b * 5u * H;
    for (var j = 0u; j < H; j++) {{
      var hj: f32;
      if (t == 0u) {{ hj = ld_h0({m(h0_at)} + b * {m(h0_at + 1)} + j * {m(h0_at + 2)}); }}
      else {{ hj = ld_y(prev + j); }}
      hr += hj * ld_w(w0 + j * wk); hz += hj * ld_w(w1 + j * wk); hn += hj * ld_w(w2 + j * wk);
    }}
    var hp: f32;
    if (t == 0u) {{ hp = ld_h0({m(h0_at)} + b * {m(h0_at + 1)} + k * {m(h0_at + 2)}); }}
    else {{ hp = ld_y(prev + k); }}
    let r = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + k * gs) + hr)));
    let z = 1.0 / (1.0 + sc_exp(-(ld_gx(gb + (H + k) * gs) + hz)));
    let n = sc_tanh(ld_gx(gb + (2u * H + k) * gs) + r * hn);
    let yo = (t * B + b) * 5u * H;
    st_y(yo + k, (1.0 - z) * n + z * hp); st_y(yo + H + k, r); st_y(yo + 2u * H + k, z);
    st_y(yo + 3u * H + k, n); st_y(yo + 4u * H + k, hn);"""
    src.body = main_1d(body)
    return src, grid_1d(b * h, src.limits)


def _gru_backward_step(base: Source, ins, out, t: int) -> tuple[Source, tuple]:
    gy, y, h0, w = ins
    steps, b, h5 = y.shape
    h = h5 // 5
    n = steps * b * 4 * h
    slot_in, slot_out = (steps - t) % 2, (steps - 1 - t) % 2
    src, (gy_at, h0_at, w_at) = step_source(
        base,
        (b * h, b, h, t, steps, n + slot_in * b * h, n + slot_out * b * h),
        {"gy": gy, "y": y, "h0": h0, "w": w},
        ("gy", "h0", "w"),
        "o",
        out,
    )
    m = lambda k: f"mt[{k}u]"  # noqa: E731
    src.fns.append(gru_gate_grads(gy_at, h0_at))
    body = f"""
    let B = mt[1]; let H = mt[2]; let t = mt[3];
    let b = i / H; let k = i - b * H;
    let ws = {m(w_at + 1)}; let wk = {m(w_at + 2)}; let wo = {m(w_at)} + k * wk;
    var acc = 0.0;
    for (var j = 0u; j < H; j++) {{
      let d = gate_grads(b, j).da;
      acc += d.x * ld_w(wo + j * ws) + d.y * ld_w(wo + (H + j) * ws)
           + d.w * ld_w(wo + (2u * H + j) * ws);
    }}
    let own = gate_grads(b, k);
    let ao = (t * B + b) * 4u * H;
    st_o(ao + k, own.da.x); st_o(ao + H + k, own.da.y);
    st_o(ao + 2u * H + k, own.da.z); st_o(ao + 3u * H + k, own.da.w);
    st_o(mt[6] + b * H + k, own.dh * own.z + acc);"""
    src.body = main_1d(body)
    return src, grid_1d(b * h, src.limits)


def variant(
    limits: dict,
    gates: int,
    software: bool = False,
    hidden: int | None = None,
    batch: int | None = None,
) -> str:
    """The recurrent kernels to build: ``SCELLIS_RECURRENT_VARIANT`` (read at each build,
    so a benchmark can compare them in one process); when unset, ``seq`` where the
    kernel choice fuses whole sequences (``devices.kernel_choice``: the fast tier) and the
    layer fits it, else on a GPU ``NARROW_VARIANT`` for an LSTM layer of up to
    ``NARROW_MAX_H`` units over up to ``NARROW_MAX_ROWS`` rows, else ``DEFAULT_VARIANT``
    (on a software adapter ``SOFTWARE_VARIANT``: see the module note). A variant the
    layer or the device's workgroup limits do not fit falls back to FALLBACK_VARIANT,
    then to ``step``."""
    name = os.environ.get(VARIANT_ENV, "")
    if not name and kernel_choice().fuses("recurrent") and seq.fits(limits, gates, hidden):
        return "seq"
    if not name and not software and _narrow(limits, gates, hidden, batch):
        return NARROW_VARIANT
    name = name or (SOFTWARE_VARIANT if software else DEFAULT_VARIANT)
    if name not in VARIANTS:
        raise DeviceError(
            f"{VARIANT_ENV}={name!r} is not a recurrent kernel variant; "
            f"choose one of {', '.join(VARIANTS)}"
        )
    if name == "seq" and seq.fits(limits, gates, hidden):
        return name
    if name in stream.ROWS and stream.fits(name, limits, gates, hidden):
        return name
    for candidate in (name, FALLBACK_VARIANT):
        if candidate == "step" or (
            candidate in tiled.TILES and tiled.fits(candidate, limits, gates)
        ):
            return candidate
    return "step"


def _narrow(limits: dict, gates: int, hidden: int | None, batch: int | None) -> bool:
    return (
        hidden is not None
        and hidden <= NARROW_MAX_H
        and (batch is None or batch <= NARROW_MAX_ROWS)
        and stream.fits(NARROW_VARIANT, limits, gates, hidden)
    )


def _with_scratch(src: Source, name: str) -> str:
    """``name``, or the fallback where it needs scratch storage the build lacks (the
    ``stream`` forward copies W_hh^T there; kernels built outside the backend's encode
    have none). The backward, which needs none, falls back too, so a layer's two
    directions stay one family of kernels."""
    if name in stream.ROWS and src.scratch is None:
        return DEFAULT_VARIANT if tiled.fits(DEFAULT_VARIANT, src.limits, 4) else FALLBACK_VARIANT
    return name


def _steps_forward(src: Source, ins, out, steps: int, gates: int, per_step, tiled_step):
    b, _, width = ins[0].shape
    name = _with_scratch(src, variant(src.limits, gates, src.software, width // gates, b))
    if name == "seq":
        return [seq.lstm_forward(src, ins, out)]
    if name in stream.ROWS:
        return stream.lstm_forward(src, ins, out, name)
    if name == "step":
        return [per_step(src, ins, out, t) for t in range(steps)]
    tile = tiled.TILES[name][0]
    return [tiled_step(src, ins, out, t, tile) for t in range(steps)]


def _steps_backward(src: Source, ins, out, gates: int, per_step, tiled_step):
    steps = ins[1].shape[0]
    packed = 6 if gates == 4 else 5  # the forward result's values per unit
    _, b, width = ins[1].shape
    name = _with_scratch(src, variant(src.limits, gates, src.software, width // packed, b))
    if name == "seq":
        return [seq.lstm_backward(src, ins, out)]
    if name in stream.ROWS:
        return stream.lstm_backward(src, ins, out, name)
    if name == "step":
        return [per_step(src, ins, out, t) for t in range(steps - 1, -1, -1)]
    tile = tiled.TILES[name][1]
    return [la for t in range(steps - 1, -1, -1) for la in tiled_step(src, ins, out, t, tile)]


def lstm_seq(src: Source, op: str, ins, outs, attrs):
    check_dtypes(src, ins, "LSTM")
    steps = ins[0].shape[1]
    return _steps_forward(src, ins, outs[0], steps, 4, _forward_step, tiled.lstm_forward)


def lstm_seq_backward(src: Source, op: str, ins, outs, attrs):
    check_dtypes(src, ins, "LSTM")
    return _steps_backward(src, ins, outs[0], 4, _backward_step, tiled.lstm_backward)


def gru_seq(src: Source, op: str, ins, outs, attrs):
    check_dtypes(src, ins, "GRU")
    steps = ins[0].shape[1]
    return _steps_forward(src, ins, outs[0], steps, 3, _gru_forward_step, tiled.gru_forward)


def gru_seq_backward(src: Source, op: str, ins, outs, attrs):
    check_dtypes(src, ins, "GRU")
    return _steps_backward(src, ins, outs[0], 3, _gru_backward_step, tiled.gru_backward)


KERNELS = {
    "lstm_seq": lstm_seq,
    "lstm_seq_backward": lstm_seq_backward,
    "gru_seq": gru_seq,
    "gru_seq_backward": gru_seq_backward,
}
