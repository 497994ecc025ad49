"""Fused row norms (ops layer): layer norm and RMS norm over the last axis, and their VJP.

``row_norm(x, [weight], [bias]; eps, rms, weight, bias)`` normalises every row of the
last axis (D features; the rows are all the other axes together) in one primitive:

- layer norm (``rms`` false): y = (x - mean) * rstd * weight + bias with
  rstd = 1 / sqrt(mean((x - mean)^2) + eps), the biased variance as torch takes it;
- RMS norm (``rms`` true): y = x * rstd * weight + bias with rstd = 1 / sqrt(mean(x^2) + eps).

``weight`` and ``bias`` are [D] and optional; the attrs of the same names say which of
them follow x among the inputs. The result has x's shape and dtype.

``row_norm_backward(x, g, [weight]; eps, rms, weight, weight_grad)`` recomputes each
row's statistics from x rather than reading saved ones: an op has one result, and the
statistics packed beside y would cost a padding pass over the whole gradient (the
slice's VJP) where a recomputation costs O(D) arithmetic on a row the kernel reads
anyway. With xhat = (x - mean) * rstd (RMS: x * rstd) and gw = g * weight, it returns
one flat buffer ``[dx | g * xhat]``:

- dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) (RMS: no mean(gw) term);
- g * xhat, only with ``weight_grad``: summed over the rows it is the weight's gradient
  (the bias's is the sum of g over the rows), left to the deterministic column sum.
"""

from __future__ import annotations

from ..base.errors import DTypeError, ShapeError
from ..base.shapes import numel
from .table import OpDef, Spec, register


def _row_width(x: Spec, op: str) -> int:
    if not x.shape or x.shape[-1] < 1:
        raise ShapeError(f"{op} needs a non-empty last axis, got {x.shape}")
    if not x.dtype.is_float:
        raise DTypeError(f"{op} needs a float input, got {x.dtype}")
    return x.shape[-1]


def _check_params(op: str, x: Spec, params: list[Spec], expected: int) -> None:
    if len(params) != expected:
        raise ShapeError(f"{op}: the attrs name {expected} parameters, got {len(params)}")
    d = x.shape[-1]
    for p in params:
        if p.shape != (d,) or p.dtype != x.dtype:
            raise ShapeError(f"{op}: weight and bias must be [{d}] {x.dtype}, got {p}")


def _forward(specs, attrs):
    x, *params = specs
    _row_width(x, "row_norm")
    _check_params("row_norm", x, params, bool(attrs.get("weight")) + bool(attrs.get("bias")))
    return [Spec(x.shape, x.dtype)]


def _backward(specs, attrs):
    x, g, *params = specs
    _row_width(x, "row_norm_backward")
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ShapeError(f"row_norm_backward: g must be {x.shape} {x.dtype}, got {g}")
    _check_params("row_norm_backward", x, params, int(bool(attrs.get("weight"))))
    parts = 2 if attrs.get("weight_grad") else 1
    return [Spec((parts * numel(x.shape),), x.dtype)]


def fused_norm_fits(x, *params) -> bool:
    """Whether ``row_norm`` serves x with these parameters (None: absent): a float x with
    rows, and every parameter a [D] tensor of x's dtype (the composites take the rest)."""
    if not x.dtype.is_float or x.ndim < 1 or x.numel == 0:
        return False
    return all(p is None or (p.shape == (x.shape[-1],) and p.dtype == x.dtype) for p in params)


def row_norm(x, weight=None, bias=None, eps: float = 1e-5, rms: bool = False):
    """Layer norm (or RMS norm) of x over its last axis, one primitive."""
    params = [p for p in (weight, bias) if p is not None]
    return x.prim(
        "row_norm",
        *params,
        eps=float(eps),
        rms=bool(rms),
        weight=weight is not None,
        bias=bias is not None,
    )


register(
    OpDef(
        "row_norm",
        "norm",
        -1,
        _forward,
        attrs=("eps", "rms", "weight", "bias"),
        diff_inputs=(-1,),
        doc="layer or RMS norm over the last axis, one workgroup per row",
    )
)
register(
    OpDef(
        "row_norm_backward",
        "norm",
        -1,
        _backward,
        attrs=("eps", "rms", "weight", "weight_grad"),
        doc="row_norm's VJP: dx, and g * xhat for the weight's gradient, per row",
    )
)
