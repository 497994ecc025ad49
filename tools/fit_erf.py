"""Fit the polynomial coefficients of the WGSL erf (f32) and print them.

Run once by hand; the printed table is pasted into
src/scellis/devices/webgpu/kernels/mathlib.py. Least squares on Chebyshev nodes in f64:
  |x| < 1:   erf(x) = x * P(x^2)
  1 <= |x| < 4: erf(x) = 1 - exp(-x^2) * Q(1/|x|)
  |x| >= 4:  erf(x) = +-1 (erfc(4) < half an f32 ulp of 1)
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
x2 = cheb(1.0, 4.0)
u = 1 / x2
q = np.polyfit(u, erfc(x2) * np.exp(x2 * x2), 10)
print("P =", [float(c) for c in p])
print("Q =", [float(c) for c in q])
xs = np.linspace(1e-4, 1, 10000)
print("max rel err P:", np.max(np.abs(xs * np.polyval(p, xs * xs) / erf(xs) - 1)))
xs = np.linspace(1, 4, 10000)
print("max abs err Q:", np.max(np.abs(1 - np.exp(-xs * xs) * np.polyval(q, 1 / xs) - erf(xs))))

# tanh(x) = x * R(x^2) for |x| < 0.625 (above it 1 - 2/(exp(2|x|)+1) has no cancellation)
xt = cheb(1e-6, 0.625)
r = np.polyfit(xt * xt, np.tanh(xt) / xt, 6)
print("R =", [float(c) for c in r])
xs = np.linspace(1e-4, 0.625, 10000)
print("max rel err R:", np.max(np.abs(xs * np.polyval(r, xs * xs) / np.tanh(xs) - 1)))
