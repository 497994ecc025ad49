"""What the recurrent step kernels share (devices layer): their Source set-up, the
dtype check, and the WGSL gate-gradient functions of the backward steps."""

from __future__ import annotations

from ....base.errors import DTypeError
from .common import Source


def _strided(src: Source, view) -> int:
    return src.add_meta(view.offset, *view.strides)


def step_source(base: Source, meta, inputs: dict, strided: tuple, out_name: str, out):
    """One step kernel's Source: the ``meta`` words, then (offset, strides) of each view
    named in ``strided``; every input bound read-only, ``out`` read-write. Returns the
    Source and the meta positions of the strided views, in order."""
    src = base.sibling()
    src.add_meta(*meta)
    ats = [_strided(src, inputs[n]) for n in strided]
    for name, v in inputs.items():
        src.operand(name, v, widen=True)
    src.operand(out_name, out, write=True, widen=True)
    return src, ats


def check_dtypes(src: Source, views, kernel: str) -> None:
    dtype = views[0].dtype.name
    if len({v.dtype.name for v in views}) != 1 or dtype not in ("f32", "f16"):
        raise DTypeError(f"the fused {kernel} step kernel runs in f32 or f16 on WebGPU")
    if dtype == "f16" and not src.has_f16:
        raise DTypeError(
            f"the fused {kernel} step kernel in f16 needs the adapter feature 'shader-f16', "
            "which this adapter lacks"
        )


def lstm_gate_grads(gy_at: int, c0_at: int) -> str:
    """WGSL ``gate_grads(b, j)``: step t's gate gradients at (b, j) (meta as the step
    kernels lay it out), and what the carries need."""
    m = lambda k: f"mt[{k}u]"  # noqa: E731
    return f"""
struct Grad {{ da: vec4<f32>, dc: f32, f: f32 }}
fn gate_grads(b: u32, j: u32) -> Grad {{
  let B = mt[1]; let H = mt[2]; let t = mt[3]; let T = mt[4];
  let yo = (t * B + b) * 6u * H;
  let gyo = {m(gy_at)} + t * {m(gy_at + 1)} + b * {m(gy_at + 2)};
  let gs = {m(gy_at + 3)};
  let c = ld_y(yo + H + j); let ig = ld_y(yo + 2u * H + j); let fg = ld_y(yo + 3u * H + j);
  let gg = ld_y(yo + 4u * H + j); let og = ld_y(yo + 5u * H + j);
  var dh = ld_gy(gyo + j * gs);
  var dc = ld_gy(gyo + (H + j) * gs);
  if (t + 1u < T) {{ dh += ld_o(mt[5] + b * H + j); dc += ld_o(mt[5] + B * H + b * H + j); }}
  var cp: f32;
  if (t == 0u) {{ cp = ld_c0({m(c0_at)} + b * {m(c0_at + 1)} + j * {m(c0_at + 2)}); }}
  else {{ cp = ld_y(yo - B * 6u * H + H + j); }}
  let tc = sc_tanh(c);
  dc += dh * og * (1.0 - tc * tc);
  let da = vec4<f32>(
    (dc * gg + ld_gy(gyo + (2u * H + j) * gs)) * ig * (1.0 - ig),
    (dc * cp + ld_gy(gyo + (3u * H + j) * gs)) * fg * (1.0 - fg),
    (dc * ig + ld_gy(gyo + (4u * H + j) * gs)) * (1.0 - gg * gg),
    (dh * tc + ld_gy(gyo + (5u * H + j) * gs)) * og * (1.0 - og));
  return Grad(da, dc, fg);
}}"""


def gru_gate_grads(gy_at: int, h0_at: int) -> str:
    """WGSL ``gate_grads(b, j)``: step t's gate gradients at (b, j) (meta as the step
    kernels lay it out), and what the carries need."""
    m = lambda k: f"mt[{k}u]"  # noqa: E731
    return f"""
struct GGrad {{ da: vec4<f32>, dh: f32, z: f32 }}
fn gate_grads(b: u32, j: u32) -> GGrad {{
  let B = mt[1]; let H = mt[2]; let t = mt[3]; let T = mt[4];
  let yo = (t * B + b) * 5u * H;
  let gyo = {m(gy_at)} + t * {m(gy_at + 1)} + b * {m(gy_at + 2)};
  let gs = {m(gy_at + 3)};
  let r = ld_y(yo + H + j); let z = ld_y(yo + 2u * H + j);
  let n = ld_y(yo + 3u * H + j); let hn = ld_y(yo + 4u * H + j);
  var dh = ld_gy(gyo + j * gs);
  if (t + 1u < T) {{ dh += ld_o(mt[5] + b * H + j); }}
  var hp: f32;
  if (t == 0u) {{ hp = ld_h0({m(h0_at)} + b * {m(h0_at + 1)} + j * {m(h0_at + 2)}); }}
  else {{ hp = ld_y(yo - B * 5u * H + j); }}
  let dn = dh * (1.0 - z) + ld_gy(gyo + (3u * H + j) * gs);
  let dz = dh * (hp - n) + ld_gy(gyo + (2u * H + j) * gs);
  let dan = dn * (1.0 - n * n);
  let dr = dan * hn + ld_gy(gyo + (H + j) * gs);
  let dhn = dan * r + ld_gy(gyo + (4u * H + j) * gs);
  return GGrad(vec4<f32>(dr * r * (1.0 - r), dz * z * (1.0 - z), dan, dhn), dh, z);
}}"""
