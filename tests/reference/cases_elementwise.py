"""Op cases, elementwise family: unary, binary (with broadcasting), where, clamp, cast."""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from helpers import Case
from inputs import Away, Dyadic, Grid, Levels, Mask, N, U
from scellis import functional as F

SHAPES = [(1,), (7, 3), (129,)]

# name, scellis fn, torch fn, input spec factory (shape -> spec)
UNARY = [
    ("neg", lambda x: -x, lambda x: -x, N),
    ("exp", lambda x: x.exp(), torch.exp, N),
    ("log", lambda x: x.log(), torch.log, U),
    ("sqrt", lambda x: x.sqrt(), torch.sqrt, U),
    ("rsqrt", lambda x: x.rsqrt(), torch.rsqrt, U),
    ("abs", lambda x: x.abs(), torch.abs, lambda s: Away(s, mixed=True)),
    ("relu", lambda x: x.relu(), torch.relu, lambda s: Away(s, mixed=True)),
    ("tanh", lambda x: x.tanh(), torch.tanh, N),
    ("sigmoid", lambda x: x.sigmoid(), torch.sigmoid, N),
    ("gelu_tanh", lambda x: x.gelu("tanh"), lambda x: TF.gelu(x, approximate="tanh"), N),
    ("gelu_erf", lambda x: x.gelu(), TF.gelu, N),
    ("silu", lambda x: x.silu(), TF.silu, N),
    ("softplus", lambda x: x.softplus(), TF.softplus, N),
    ("sin", lambda x: x.sin(), torch.sin, N),
    ("cos", lambda x: x.cos(), torch.cos, N),
    ("erf", lambda x: x.erf(), torch.erf, N),
    ("square", lambda x: x.square(), torch.square, N),
]

CASES = [
    Case(f"{name}{shape}", fn, tfn, [spec(shape)])
    for name, fn, tfn, spec in UNARY
    for shape in SHAPES
]

CASES += [
    # softplus is linear above 20 in both engines (and must not overflow past 88 in f32);
    # draw on both sides of that threshold
    Case(
        "softplus_wide",
        lambda x: x.softplus(),
        TF.softplus,
        [Away((41,), points=(-20.0, 20.0), margin=0.5, scale=60.0)],
    ),
    Case(
        "clamp_both",
        lambda x: x.clamp(-0.5, 0.5),
        lambda x: x.clamp(-0.5, 0.5),
        [Away((7, 3), points=(-0.5, 0.5))],
    ),
    Case(
        "clamp_lo",
        lambda x: x.clamp(min=0.2),
        lambda x: x.clamp(min=0.2),
        [Away((129,), points=(0.2,))],
    ),
    Case(
        "clamp_hi",
        lambda x: x.clamp(max=-0.1),
        lambda x: x.clamp(max=-0.1),
        [Away((3, 7), points=(-0.1,))],
    ),
    # the cast round trip is exact on multiples of 1/64, so is the 1/64 step; through f16
    # the cotangent itself is rounded to f16 (as in torch), so this row is torch-only
    Case(
        "cast_f16",
        lambda x: (x.cast("f16") * 3.0).cast(x.dtype),
        lambda x: (x.half() * 3.0).to(x.dtype),
        [Dyadic((7, 3))],
        h=1 / 64,
        tags=frozenset({"no_fd"}),
    ),
    Case(
        "cast_f32",
        lambda x: (x.cast("f32") * 3.0).cast(x.dtype),
        lambda x: (x.float() * 3.0).to(x.dtype),
        [Dyadic((129,))],
        h=1 / 64,
    ),
]

BINARY = [
    ("add", lambda a, b: a + b, N, N),
    ("sub", lambda a, b: a - b, N, N),
    ("mul", lambda a, b: a * b, N, N),
    ("div", lambda a, b: a / b, N, lambda s: Away(s, margin=0.3)),
    ("pow", lambda a, b: a**b, U, N),
    ("maximum", lambda a, b: a.maximum(b), Grid, lambda s: Grid(s, 0.05)),
    ("minimum", lambda a, b: a.minimum(b), Grid, lambda s: Grid(s, 0.05)),
]
TORCH_BINARY = {"maximum": torch.maximum, "minimum": torch.minimum}
# shape pairs: equal, row broadcast, outer broadcast, rank-3 broadcast, scalar-like
PAIRS = [((3, 7), (3, 7)), ((3, 7), (7,)), ((3, 1), (1, 7)), ((7, 1, 3), (5, 1)), ((129,), (1,))]

for name, fn, sa, sb in BINARY:
    tfn = TORCH_BINARY.get(name, fn)
    for a, b in PAIRS:
        CASES.append(Case(f"{name}{a}{b}", fn, tfn, [sa(a), sb(b)]))

CASES += [
    Case("radd_scalar", lambda x: 2.5 + x, lambda x: 2.5 + x, [N((3, 7))]),
    Case("rsub_scalar", lambda x: 1.5 - x, lambda x: 1.5 - x, [N((7,))]),
    Case("rdiv_scalar", lambda x: 2.0 / x, lambda x: 2.0 / x, [Away((7, 3), margin=0.3)]),
    Case("div_scalar", lambda x: x / 3.0, lambda x: x / 3.0, [N((129,))]),
    Case("pow_scalar2", lambda x: x**2.0, lambda x: x**2.0, [N((3, 7))]),
    Case("pow_scalar3", lambda x: x**3, lambda x: x**3, [N((7,))]),
    Case("pow_half", lambda x: x**0.5, lambda x: x**0.5, [U((129,))]),
    Case("rpow_scalar", lambda x: 2.0**x, lambda x: 2.0**x, [N((3, 7))]),
    Case(
        "where", lambda c, a, b: F.where(c, a, b), torch.where, [Mask((3, 7)), N((3, 7)), N((3, 7))]
    ),
    Case(
        "where_broadcast",
        lambda c, a, b: F.where(c, a, b),
        torch.where,
        [Mask((3, 1)), N((3, 7)), N((7,))],
    ),
    # inverted dropout's apply in one pass (the fast tier's form), both orders of products
    Case(
        "masked_scale",
        lambda x, m: x.prim("masked_scale", m, scale=1.25),
        lambda x, m: x * m * 1.25,
        [N((3, 7)), Mask((3, 7))],
    ),
    Case(
        "masked_scale_grad_order",
        lambda x, m: x.prim("masked_scale", m, scale=0.75, grad_order=True),
        lambda x, m: x * 0.75 * m,
        [N((5, 4)), Mask((5, 4))],
    ),
    Case(
        "where_scalar",
        lambda c, a: a.where(c, 0.5),
        lambda c, a: torch.where(c, a, torch.tensor(0.5)),
        [Mask((1, 7)), N((3, 7))],
    ),
]

# at kinks and ties the gradient is a convention (torch's): torch-only rows, since finite
# differences do not define it
AT_KINKS = [
    ("relu_at_0", lambda x: x.relu(), torch.relu, [Levels((7, 3))]),
    ("abs_at_0", lambda x: x.abs(), torch.abs, [Levels((7, 3))]),
    (
        "clamp_at_bounds",
        lambda x: x.clamp(-0.5, 0.5),
        lambda x: x.clamp(-0.5, 0.5),
        [Levels((3, 7))],
    ),
    # d(a**b)/db is 0 where a == 0 (b >= 1 keeps d/da finite there)
    ("pow_zero_base", lambda a, b: a**b, torch.pow, [Levels((3, 7), 3, lo=0), U((7,), 1, 3)]),
    ("maximum_ties", lambda a, b: a.maximum(b), torch.maximum, [Levels((3, 7)), Levels((7,))]),
    ("minimum_ties", lambda a, b: a.minimum(b), torch.minimum, [Levels((3, 7)), Levels((3, 1))]),
]
CASES += [Case(n, f, t, i, tags=frozenset({"no_fd"})) for n, f, t, i in AT_KINKS]
