"""Philox4x32-10 in WGSL (devices layer): uniform and Bernoulli draws, bit-exact.

WGSL has no 64-bit integers, so the 32x32->64 multiply's high word is built from
16-bit limbs. Invocation ``j`` computes block ``j`` = counter (j, draw, step_lo,
step_hi) and writes elements 4j..4j+3, so results depend on the element index only,
never on the workgroup size or grid shape.
"""

from __future__ import annotations

from ....base.rng import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, keep_threshold
from ....base.shapes import numel
from .common import Source, grid_1d, main_1d

PHILOX = f"""
fn mulhi(a: u32, b: u32) -> u32 {{
  let a0 = a & 0xffffu; let a1 = a >> 16u;
  let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}}
fn philox(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {{
  var c = ctr; var k = key;
  for (var r = 0u; r < 10u; r++) {{
    if (r > 0u) {{ k = k + vec2<u32>({PHILOX_W0:#x}u, {PHILOX_W1:#x}u); }}
    let hi0 = mulhi({PHILOX_M0:#x}u, c.x); let lo0 = {PHILOX_M0:#x}u * c.x;
    let hi1 = mulhi({PHILOX_M1:#x}u, c.z); let lo1 = {PHILOX_M1:#x}u * c.z;
    c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }}
  return c;
}}
"""


# the meta words of a Philox launch that hold its counter: key (2), draw, step (lo, hi)
COUNTER_WORDS = slice(2, 7)


def with_counter(meta: list, key, draw: int, step: int) -> list:
    """A Philox launch's meta words (``philox_kernel``'s layout) with another counter:
    what a replayed step writes for each of its random launches."""
    out = list(meta)
    out[COUNTER_WORDS] = [key[0], key[1], draw, step & 0xFFFFFFFF, step >> 32]
    return out


def philox_kernel(src: Source, op: str, ins, outs, attrs):
    out = outs[0]
    n = numel(out.shape)
    blocks = (n + 3) // 4
    wg = int(attrs.get("_wg", 64))
    key, draw, step = attrs["key"], attrs["draw"], attrs["step"]
    src.add_meta(blocks, n, key[0], key[1], draw, step & 0xFFFFFFFF, step >> 32)
    src.operand("o", out, write=True)
    src.fns.append(PHILOX)
    if op == "rand_uniform":
        value = "f32(r[k] >> 8u) * 5.9604644775390625e-8"
    else:
        at = src.add_meta(keep_threshold(attrs["keep"]))
        value = f"select(0u, 1u, (r[k] >> 8u) < mt[{at}u])"
    body = (
        "  let r = philox(vec4<u32>(i, mt[4], mt[5], mt[6]), vec2<u32>(mt[2], mt[3]));\n"
        "  for (var k = 0u; k < 4u; k++) {\n"
        "    let e = i * 4u + k;\n"
        f"    if (e < mt[1]) {{ st_o(e, {value}); }}\n"
        "  }"
    )
    src.body = main_1d(body, wg)
    return grid_1d(blocks, src.limits, wg)


KERNELS = {"rand_uniform": philox_kernel, "bernoulli": philox_kernel}
