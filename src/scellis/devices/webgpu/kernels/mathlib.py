"""WGSL helper functions (devices layer) for math WGSL lacks: erf, log1p, safe tanh.

The erf and tanh coefficients come from ``tools/fit_erf.py`` (least squares in f64).
"""

from __future__ import annotations

_P = [
    -9.728408634084523e-06,
    0.00011288174834106665,
    -0.0008487267742170686,
    0.005221261496585986,
    -0.026865517444888774,
    0.1128378411184925,
    -0.3761263859043182,
    1.128379167082285,
]
_Q = [
    0.0001818445279710671,
    -2.3845070071524446e-05,
    -0.0008843561245767687,
    0.0005022340751464317,
    0.0010449470208141911,
    -0.0006265972915612501,
    -0.0003806449224572658,
    -0.0006535031505200062,
    0.002151512098537764,
    -0.002859419402099465,
    0.002991622860077366,
    -0.0008014146015362153,
    -0.008662597873058961,
    0.035669201373012084,
    -0.10147913428031294,
    0.24856802233926176,
    0.44095247602726595,
]


def _horner(coeffs: list[float], var: str) -> str:
    expr = f"{coeffs[0]:.17g}"
    for c in coeffs[1:]:
        expr = f"fma({expr}, {var}, {c:.17g})"
    return expr


# erfc(a) for a >= 1 keeps its relative accuracy (1 - erf would cancel). No fma or
# compensated tricks anywhere in this file: drivers may neither fuse fma nor keep
# (1 + y) - 1 from being folded to y (lavapipe does both), so only plain formulas.
ERF = f"""
fn sc_erfc_big(a: f32) -> f32 {{  // a >= 0.5
  if (a >= 10.0) {{ return 0.0; }}
  let z = (2.0 / a - 2.1) / 1.9;
  return sc_exp(-a * a) * ({_horner(_Q, "z")});
}}
fn sc_erf(x: f32) -> f32 {{
  let a = abs(x);
  if (a < 1.0) {{
    let s = x * x;
    return x * ({_horner(_P, "s")});
  }}
  if (a >= 4.0) {{ return sign(x); }}
  return sign(x) * (1.0 - sc_erfc_big(a));
}}
fn sc_gelu_erf(x: f32) -> f32 {{
  let v = x * 0.7071067811865476;
  if (v < -0.5) {{ return 0.5 * x * sc_erfc_big(-v); }}
  return 0.5 * x * (1.0 + sc_erf(v));
}}
"""

_EXP = [
    2.7557319223985893e-06,
    2.48015873015873e-05,
    0.0001984126984126984,
    0.001388888888888889,
    0.008333333333333333,
    0.041666666666666664,
    0.16666666666666666,
    0.5,
    1.0,
    1.0,
]
_ATANH = [
    0.06666666666666667,
    0.07692307692307693,
    0.09090909090909091,
    0.1111111111111111,
    0.14285714285714285,
    0.2,
    0.3333333333333333,
    1.0,
]

# exp by Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, a degree-9 Taylor
# polynomial on r (error < 3e-10) and ldexp; device builtins vary too much in ulps
EXP = f"""
fn sc_exp(x: f32) -> f32 {{
  if (x > 88.72) {{ return bitcast<f32>(0x7f800000u | (bitcast<u32>(x) & 0u)); }}
  if (x < -103.9) {{ return 0.0; }}
  let n = round(x * 1.4426950408889634);
  // n * ln2_hi is exact (ln2_hi has 16 significant bits), so x - n ln2_hi is too
  let r = (x - n * 0.693145751953125) - n * 1.4286068203094173e-06;
  let p = {_horner(_EXP, "r")};
  // 2^n from its exponent bits while p 2^n stays a normal float: the same bits as
  // ldexp, in two instructions where ldexp's range checks take several
  if (n >= -125.0 && n <= 127.0) {{ return p * bitcast<f32>(u32(i32(n) + 127) << 23u); }}
  return ldexp(p, i32(n));
}}
"""

# the adapter's own exp (``native``: the fast tier). WGSL leaves the builtin's result
# for huge or infinite arguments to the driver, so the ends keep the polynomial's
# answers: 0 below the smallest subnormal's log, infinity above the largest float's
NATIVE_EXP = """
fn sc_exp(x: f32) -> f32 {
  if (x > 88.72) { return bitcast<f32>(0x7f800000u | (bitcast<u32>(x) & 0u)); }
  if (x < -103.9) { return 0.0; }
  return exp(x);
}
"""

# log by frexp: x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(f / (2 + f))
LOG = f"""
fn sc_log(x: f32) -> f32 {{
  if (!(x > 0.0) || x > 3.0e38) {{ return log(x); }}
  let fr = frexp(x);
  var m = fr.fract;
  var e = f32(fr.exp);
  if (m < 0.7071067811865476) {{ m = m * 2.0; e = e - 1.0; }}
  let f = m - 1.0;
  let s = f / (2.0 + f);
  let s2 = s * s;
  let p = 2.0 * s * ({_horner(_ATANH, "s2")});
  return e * 0.693145751953125 + (p + e * 1.4286068203094173e-06);
}}
"""

NATIVE_LOG = """
fn sc_log(x: f32) -> f32 { return log(x); }
"""

# log(1 + y): near 0 the atanh series on y itself (never forming 1 + y, whose
# rounding would be the whole answer); elsewhere log of the sum
LOG1P = f"""
fn sc_log1p(y: f32) -> f32 {{
  if (y > -0.2928932 && y < 0.4142135) {{
    let s = y / (2.0 + y);
    let s2 = s * s;
    return 2.0 * s * ({_horner(_ATANH, "s2")});
  }}
  return sc_log(1.0 + y);
}}
"""

_R = [
    0.0021469228225692648,
    -0.008181583218404521,
    0.021702233604910397,
    -0.05394696743641255,
    0.13333205987654864,
    -0.3333333063907556,
    0.999999999941602,
]

# tanh: a polynomial near 0 (no cancellation), 1 - 2/(e^2a + 1) beyond, +-1 past 15
TANH = f"""
fn sc_tanh(x: f32) -> f32 {{
  let a = abs(x);
  if (a < 0.625) {{
    let s = x * x;
    return x * ({_horner(_R, "s")});
  }}
  if (a > 15.0) {{ return sign(x); }}
  return sign(x) * (1.0 - 2.0 / (sc_exp(2.0 * a) + 1.0));
}}
"""

# a^b for a >= 0 through the accurate exp and log (the builtin loses ~8 ulp)
POW = """
fn sc_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (a == 0.0) { return select(0.0, bitcast<f32>(0x7f800000u | (bitcast<u32>(a) & 0u)), b < 0.0); }
  return sc_exp(b * sc_log(a));
}
"""

# derivatives of the activations, for their one-pass VJPs (the reference's formulas)
GELU_ERF_D = """
fn sc_gelu_erf_d(x: f32) -> f32 {
  let v = x * 0.7071067811865476;
  // the CDF through erfc in the left tail, as sc_gelu_erf takes it (no cancellation)
  let cdf = select(0.5 * (1.0 + sc_erf(v)), 0.5 * sc_erfc_big(-v), v < -0.5);
  return cdf + x * sc_exp(-0.5 * x * x) * 0.3989422804014327;
}
"""
GELU_TANH_D = """
fn sc_gelu_tanh_d(x: f32) -> f32 {
  let t = sc_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
  let dz = 0.7978845608028654 * (1.0 + 0.134145 * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dz;
}
"""
SILU_D = """
fn sc_silu_d(x: f32) -> f32 {
  let s = 1.0 / (1.0 + sc_exp(-x));
  return s * (1.0 + x * (1.0 - s));
}
"""

# name -> (code, helpers it calls); kernels pull in what their expression names
HELPERS = {
    "sc_exp": (EXP, ()),
    "sc_log": (LOG, ()),
    "sc_log1p": (LOG1P, ("sc_log",)),
    "sc_tanh": (TANH, ("sc_exp",)),
    "sc_erf": (ERF, ("sc_exp",)),
    "sc_gelu_erf": (ERF, ("sc_exp",)),
    "sc_pow": (POW, ("sc_exp", "sc_log")),
    "sc_gelu_erf_d": (GELU_ERF_D, ("sc_erf",)),
    "sc_gelu_tanh_d": (GELU_TANH_D, ("sc_tanh",)),
    "sc_silu_d": (SILU_D, ("sc_exp",)),
}


# the helpers whose body is the adapter's builtin under ``native``; those that call
# them (tanh, erf, log1p, pow, the activations' derivatives) follow along
NATIVE = {"sc_exp": NATIVE_EXP, "sc_log": NATIVE_LOG}


def helpers_for(expr: str, native: bool = False) -> list[str]:
    """WGSL helper functions ``expr`` needs, dependencies first, each once; ``native``:
    exp and log are the adapter's own (``NATIVE``)."""
    out: list[str] = []

    def add(name: str) -> None:
        code, deps = HELPERS[name]
        if native:
            code = NATIVE.get(name, code)
        for d in deps:
            add(d)
        if code not in out:
            out.append(code)

    for name in HELPERS:
        if name + "(" in expr:
            add(name)
    return out
