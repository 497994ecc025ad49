"""torch.testing's ``assert_close``: values compared within torch's default tolerances.

``assert_close(actual, expected)`` takes tensors, numbers or (nested) lists of them and
raises ``AssertionError`` naming the worst element, as torch's does. The defaults are
torch's per dtype (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; float16:
1e-3, 1e-5; integers and bool: exact).
"""

from __future__ import annotations

import math

_TOLERANCES = {"f16": (1e-3, 1e-5), "f32": (1.3e-6, 1e-5), "f64": (1e-7, 1e-7)}


def _values(x):
    """(flat float values, shape, dtype name) of a tensor, number or nested list."""
    if hasattr(x, "_buf"):
        vals = x.detach().tolist()
        shape, dt = tuple(x.shape), x.dtype.name
    else:
        vals, shape, dt = x, None, "f32" if isinstance(x, float) else "i32"
    flat = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for u in v:
                walk(u)
        else:
            flat.append(float(v))

    walk(vals)
    return flat, shape, dt


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False,
                 check_dtype=True, check_device=False, msg=None, **_ignored) -> None:  # fmt: skip
    a, a_shape, a_dt = _values(actual)
    e, e_shape, e_dt = _values(expected)
    if (rtol is None) != (atol is None):
        raise ValueError("give both rtol and atol, or neither")
    if a_shape is not None and e_shape is not None:
        if a_shape != e_shape:
            raise AssertionError(msg or f"shapes differ: {a_shape} and {e_shape}")
        if check_dtype and a_dt != e_dt:
            raise AssertionError(msg or f"dtypes differ: {a_dt} and {e_dt}")
    if len(a) != len(e):
        raise AssertionError(msg or f"sizes differ: {len(a)} and {len(e)} elements")
    if rtol is None:
        rtol, atol = _TOLERANCES.get(a_dt, (0.0, 0.0))
    bad, worst = 0, (0.0, -1)
    for i, (x, y) in enumerate(zip(a, e)):
        if math.isnan(x) or math.isnan(y):
            ok = equal_nan and math.isnan(x) and math.isnan(y)
        else:
            ok = x == y or abs(x - y) <= atol + rtol * abs(y)
        if not ok:
            bad += 1
            diff = abs(x - y) if not (math.isnan(x) or math.isnan(y)) else math.inf
            worst = max(worst, (diff, i))
    if bad:
        raise AssertionError(
            msg
            or f"Tensor-likes are not close! Mismatched elements: {bad} / {len(a)}; "
            f"greatest absolute difference {worst[0]} at flat index {worst[1]} "
            f"(rtol={rtol}, atol={atol})"
        )


assert_allclose = assert_close
