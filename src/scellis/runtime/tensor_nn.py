"""Tensor's compute methods (runtime layer): reductions, matmul, composites, autograd.

``TensorNN`` is a mixin of ``Tensor``. Reductions and matmul dispatch primitives;
softmax, var, gelu and the like call the composites of ``ops.composites``, written
once over primitives; ``backward`` runs the tape with the VJP rules.
"""

from __future__ import annotations

from ..autograd.rules import VJP
from ..autograd.tape import backward as _run_backward
from ..base.dtypes import as_dtype, bool_
from ..base.errors import AutogradError, ShapeError
from ..base.shapes import broadcast_shapes, norm_axes, reduction_axes
from ..ops import composites as C
from .primitive import apply_op, apply_with_vjp, run_primitive
from .tensor_math import pair


def _reduce(op: str, x, axis, keepdim):
    return apply_op(op, (x,), axes=reduction_axes(axis, x.ndim), keepdim=keepdim)


def _matmul(a, b):
    if not isinstance(b, TensorNN) or not isinstance(a, TensorNN):
        raise ShapeError("matmul needs two tensors")
    an, bn = len(a.shape), len(b.shape)
    if an == 0 or bn == 0:
        raise ShapeError("matmul does not take 0-d tensors; use *")
    a2 = a.unsqueeze(0) if an == 1 else a
    b2 = b.unsqueeze(-1) if bn == 1 else b
    if a2.dtype != b2.dtype:
        a2, b2 = pair(a2, b2)
    if a2.shape[:-2] != b2.shape[:-2]:  # else the batch dims agree already
        batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a2 = a2.expand(batch + a2.shape[-2:])
        b2 = b2.expand(batch + b2.shape[-2:])
    if a2.shape[-1] != b2.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {a.shape} and {b.shape} do not align ({a.shape[-1]} != {b2.shape[-2]})"
        )
    y = apply_op("matmul", (a2, b2))
    if an == 1:
        y = y.squeeze(-2)
    if bn == 1:
        y = y.squeeze(-1)
    return y


class TensorNN:
    """Reduction, matmul, composite, constructor and autograd methods."""

    __slots__ = ()

    # -- reductions --
    def sum(self, axis=None, keepdim=False):
        return _reduce("sum", self, axis, keepdim)

    def max(self, axis=None, keepdim=False):
        return _reduce("max", self, axis, keepdim)

    def min(self, axis=None, keepdim=False):
        return _reduce("min", self, axis, keepdim)

    def amax(self, axis=None, keepdim=False):
        return _reduce("max", self, axis, keepdim)

    def amin(self, axis=None, keepdim=False):
        return _reduce("min", self, axis, keepdim)

    def argmax(self, axis=None, keepdim=False):
        if axis is None:
            return apply_op("argmax", (self.reshape((-1,)),), axes=(0,), keepdim=False)
        return apply_op("argmax", (self,), axes=norm_axes(axis, self.ndim), keepdim=keepdim)

    def mean(self, axis=None, keepdim=False):
        return C.mean(self, axis, keepdim)

    def var(self, axis=None, keepdim=False, correction=1):
        return C.var(self, axis, keepdim, correction)

    def std(self, axis=None, keepdim=False, correction=1):
        return C.var(self, axis, keepdim, correction).sqrt()

    # -- matmul --
    def matmul(self, other):
        return _matmul(self, other)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def qmatmul(self, codes, scales, *, fmt, rows, cols, block, trans=False):
        """``self @ W^T`` (``trans``: ``self @ W``) with W [rows, cols] stored quantised
        as ``codes`` and ``scales`` (``base.quant``'s layout), decoded inside the kernel;
        ``scales`` a pair (int8 codes, row scales) for double-quantised block scales."""
        scales = tuple(scales) if isinstance(scales, (tuple, list)) else (scales,)
        return apply_op(
            "qmatmul", (self, codes, *scales),
            fmt=fmt, rows=rows, cols=cols, block=block, trans=bool(trans),
        )  # fmt: skip

    def quantized(self, *, fmt, rows, cols, block):
        """(u32 codes, f32 scales) of this f32 weight [rows, cols] in ``base.quant``'s
        layout, computed on its device: two primitives enqueued, nothing read back."""
        spec = dict(fmt=fmt, rows=rows, cols=cols, block=block)
        tops = apply_op("quant_absmax", (self,), **spec, div=1)
        codes = apply_op("quant_codes", (self, tops), **spec)
        return codes, (
            apply_op("quant_absmax", (self,), **spec, div=127) if fmt == "int8" else tops
        )

    def dequantized(self, scales, *, fmt, rows, cols, block):
        """The f32 weight [rows, cols] these u32 codes and ``scales`` stand for."""
        spec = dict(fmt=fmt, rows=rows, cols=cols, block=block)
        return apply_op("dequantize", (self, scales), **spec)

    # -- composites --
    def softmax(self, axis=-1):
        return C.softmax(self, axis)

    def log_softmax(self, axis=-1):
        return C.log_softmax(self, axis)

    def logsumexp(self, axis=-1, keepdim=False):
        return C.logsumexp(self, axis, keepdim)

    def gelu(self, approximate="none"):
        return C.gelu(self, approximate)

    # -- new tensors on this one's device --
    def full_like(self, value, dtype=None):
        dt = as_dtype(dtype, self.dtype)
        attrs = {"shape": self.shape, "value": value, "dtype": dt.name}
        return run_primitive(type(self), "full", (), self.device, attrs)

    def zeros_like(self, dtype=None):
        return self.full_like(0, dtype)

    def ones_like(self, dtype=None):
        return self.full_like(1, dtype)

    def arange_like(self, n):
        attrs = {"n": int(n), "dtype": self.dtype.name if self.dtype != bool_ else "i32"}
        return run_primitive(type(self), "arange", (), self.device, attrs)

    # -- autograd and raw primitives --
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if create_graph or inputs is not None:
            raise AutogradError(
                "backward(create_graph=, inputs=) are not supported (no higher-order "
                "gradients here): use autograd.grad(outputs, inputs) for chosen inputs"
            )
        _run_backward(self, gradient, retain_graph=bool(retain_graph), rules=VJP)

    def with_vjp(self, name, forward, rule, saves=False, **attrs):
        """``forward(self, **attrs)`` recorded as one tape node with VJP ``rule``, for
        composites whose gradient has a shorter form than their ops' (``primitive.
        apply_with_vjp``; ``saves``: the forward returns its result and the
        intermediates the rule reads, which then reads neither the input nor the
        result, so neither is kept)."""
        reads = (False,) if saves else None
        return apply_with_vjp(name, (self,), forward, rule, attrs, reads, saves)

    def prim(self, op, *others, **attrs):
        """Any primitive by name, for rules and blocks that use fused ops."""
        return run_primitive(type(self), op, (self, *others), None, attrs)
