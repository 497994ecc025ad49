"""WGSL helper functions (devices layer) for math WGSL lacks: erf, log1p, safe tanh.

The erf and tanh coefficients come from ``tools/fit_erf.py`` (least squares in f64).
"""

from __future__ import annotations

_P = [-9.728408634084523e-06, 0.00011288174834106665, -0.0008487267742170686,
      0.005221261496585986, -0.026865517444888774, 0.1128378411184925,
      -0.3761263859043182, 1.128379167082285]
_Q = [-0.03516774842615781, 0.2458236608315544, -0.7593179716039884, 1.3430751310503866,
      -1.4421790431069381, 0.844064274542855, -0.04387586329246727, -0.29295461052043936,
      0.004532995277841141, 0.5635483716459536, 3.4379045628171737e-05]


def _horner(coeffs: list[float], var: str) -> str:
    expr = f"{coeffs[0]:.17g}"
    for c in coeffs[1:]:
        expr = f"fma({expr}, {var}, {c:.17g})"
    return expr


ERF = f"""
fn sc_erf(x: f32) -> f32 {{
  let a = abs(x);
  if (a < 1.0) {{
    let s = x * x;
    return x * ({_horner(_P, "s")});
  }}
  if (a >= 4.0) {{ return sign(x); }}
  let u = 1.0 / a;
  return sign(x) * (1.0 - exp(-a * a) * ({_horner(_Q, "u")}));
}}
"""

# log(1 + y) without cancellation for small y (Kahan's trick)
LOG1P = """
fn sc_log1p(y: f32) -> f32 {
  let u = 1.0 + y;
  if (u == 1.0) { return y; }
  return log(u) * (y / (u - 1.0));
}
"""

_R = [0.0021469228225692648, -0.008181583218404521, 0.021702233604910397,
      -0.05394696743641255, 0.13333205987654864, -0.3333333063907556, 0.999999999941602]

# tanh: a polynomial near 0 (no cancellation), 1 - 2/(e^2a + 1) beyond, +-1 past 15
TANH = f"""
fn sc_tanh(x: f32) -> f32 {{
  let a = abs(x);
  if (a < 0.625) {{
    let s = x * x;
    return x * ({_horner(_R, "s")});
  }}
  if (a > 15.0) {{ return sign(x); }}
  return sign(x) * (1.0 - 2.0 / (exp(2.0 * a) + 1.0));
}}
"""

HELPERS = {"sc_erf": ERF, "sc_log1p": LOG1P, "sc_tanh": TANH}
