"""Elementwise primitives (ops layer): unary, binary, comparisons, where, cast.

Broadcasting happens before these ops (inputs arrive expanded to one shape as
stride-0 views), so each shape rule only checks that the shapes agree.
"""

from __future__ import annotations

from ..base.dtypes import as_dtype, bool_, promote
from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register

UNARY_FLOAT = (
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "gelu_tanh",
    "gelu_erf",
    "silu",
    "softplus",
    "erf",
    "sin",
    "cos",
)
UNARY_ANY = ("neg", "abs", "relu", "sign")
# an activation's VJP in one op: (x, g) -> g * f'(x), one pass over two tensors where the
# derivative spelled out in ops takes eight to eleven (relu's: a compare and a select)
ACTIVATION_GRAD = ("gelu_erf_grad", "gelu_tanh_grad", "silu_grad", "relu_grad")
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL = ("logical_and", "logical_or")


def _same(specs: list[Spec]) -> tuple[int, ...]:
    shape = specs[0].shape
    for s in specs[1:]:
        if s.shape != shape:
            raise ShapeError(f"elementwise inputs differ in shape: {shape} vs {s.shape}")
    return shape


def _unary_float(specs, attrs):
    if not specs[0].dtype.is_float:
        raise DTypeError(f"this op needs a float tensor, got {specs[0].dtype}")
    return [specs[0]]


def _unary_any(specs, attrs):
    if specs[0].dtype == bool_:
        raise DTypeError("this op does not take bool tensors")
    return [specs[0]]


def _binary(specs, attrs):
    a, b = specs
    if a.dtype != b.dtype:
        raise DTypeError(f"binary op inputs differ in dtype: {a.dtype} vs {b.dtype}")
    return [Spec(_same(specs), a.dtype)]


def _activation_grad(specs, attrs):
    if not specs[0].dtype.is_float:
        raise DTypeError(f"this op needs float tensors, got {specs[0].dtype}")
    return _binary(specs, attrs)


def _compare(specs, attrs):
    _binary(specs, attrs)
    return [Spec(_same(specs), bool_)]


def _logical(specs, attrs):
    if specs[0].dtype != bool_ or specs[1].dtype != bool_:
        raise DTypeError("logical ops take bool tensors")
    return [Spec(_same(specs), bool_)]


def _where(specs, attrs):
    c, a, b = specs
    if c.dtype != bool_:
        raise DTypeError(f"where's condition must be bool, got {c.dtype}")
    if a.dtype != b.dtype:
        raise DTypeError(f"where's branches differ in dtype: {a.dtype} vs {b.dtype}")
    return [Spec(_same(specs), a.dtype)]


def _cast(specs, attrs):
    return [Spec(specs[0].shape, as_dtype(attrs["dtype"]))]


def _masked_scale(specs, attrs):
    x, mask = specs
    if not x.dtype.is_float or mask.dtype != bool_:
        raise DTypeError(f"masked_scale takes a float tensor and a bool mask, got {x.dtype}, "
                         f"{mask.dtype}")  # fmt: skip
    return [Spec(_same(specs), x.dtype)]


def _clamp(specs, attrs):
    if specs[0].dtype == bool_:
        raise DTypeError("clamp does not take bool tensors")
    return [specs[0]]


for _n in UNARY_FLOAT:
    register(OpDef(_n, "unary", 1, _unary_float, diff_inputs=(0,)))
for _n in UNARY_ANY:
    register(OpDef(_n, "unary", 1, _unary_any, diff_inputs=(0,) if _n != "sign" else ()))
for _n in BINARY:
    register(OpDef(_n, "binary", 2, _binary, diff_inputs=(0, 1)))
for _n in ACTIVATION_GRAD:
    register(OpDef(_n, "binary", 2, _activation_grad, doc="(x, g) -> g * f'(x), f's VJP"))
for _n in COMPARE:
    register(OpDef(_n, "compare", 2, _compare))
for _n in LOGICAL:
    register(OpDef(_n, "compare", 2, _logical))
register(OpDef("logical_not", "unary", 1, lambda s, a: [Spec(s[0].shape, bool_)]))
register(OpDef("where", "where", 3, _where, diff_inputs=(1, 2)))
register(
    OpDef(
        "masked_scale",
        "where",
        2,
        _masked_scale,
        attrs=("scale", "grad_order"),
        diff_inputs=(0,),
        doc="x * mask * scale (inverted dropout's apply in one pass); with grad_order the "
        "product is (x * scale) * mask, the order the unfused dropout's VJP takes",
    )
)
register(OpDef("cast", "unary", 1, _cast, attrs=("dtype",), diff_inputs=(0,)))
register(
    OpDef(
        "clamp",
        "unary",
        1,
        _clamp,
        attrs=("lo", "hi"),
        diff_inputs=(0,),
        doc="clamp to [lo, hi]; either bound may be None",
    )
)
register(
    OpDef(
        "copy",
        "unary",
        1,
        lambda s, a: [s[0]],
        diff_inputs=(0,),
        doc="materialise a (strided) view as a contiguous tensor",
    )
)

# dtype rule for mixed-dtype user calls; the runtime casts before dispatch
result_dtype = promote
