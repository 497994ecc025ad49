"""Fit the polynomial coefficients of the WGSL erf (f32) and print them.

Run once by hand; the printed table is pasted into
src/scellis/devices/webgpu/kernels/mathlib.py. Least squares on Chebyshev nodes in f64:
  |x| < 1:   erf(x) = x * P(x^2)
  0.5 <= |x| < 10: erfc(x) = exp(-x^2) * Q(z), z = (2/|x| - 2.1) / 1.9
    (fitted with relative accuracy: gelu needs erfc itself, not 1 - erf)
  erf(x) = +-1 for |x| >= 4 (erfc(4) < half an f32 ulp of 1)
"""

import math

import numpy as np


def cheb(a, b, n=400):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)
x = cheb(1e-6, 1.0)
p = np.polyfit(x * x, erf(x) / x, 7)
x2 = cheb(0.5, 10.0)
z = (2 / x2 - 2.1) / 1.9  # 1/|x| in [0.1, 2] mapped onto [-1, 1]: well conditioned
q = np.polyfit(z, erfc(x2) * np.exp(x2 * x2), 16)
print("P =", [float(c) for c in p])
print("Q =", [float(c) for c in q])
xs = np.linspace(1e-4, 1, 10000)
print("max rel err P:", np.max(np.abs(xs * np.polyval(p, xs * xs) / erf(xs) - 1)))
xs = np.linspace(0.5, 10, 10000)
zs = (2 / xs - 2.1) / 1.9
print("max rel err Q:", np.max(np.abs(np.exp(-xs * xs) * np.polyval(q, zs) / erfc(xs) - 1)))
print("Q conditioning sum|c|/min Q:", np.sum(np.abs(q)) / np.min(np.polyval(q, zs)))

# tanh(x) = x * R(x^2) for |x| < 0.625 (above it 1 - 2/(exp(2|x|)+1) has no cancellation)
xt = cheb(1e-6, 0.625)
r = np.polyfit(xt * xt, np.tanh(xt) / xt, 6)
print("R =", [float(c) for c in r])
xs = np.linspace(1e-4, 0.625, 10000)
print("max rel err R:", np.max(np.abs(xs * np.polyval(r, xs * xs) / np.tanh(xs) - 1)))
