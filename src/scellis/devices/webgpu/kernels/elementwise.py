"""Elementwise WGSL kernels (devices layer): unary, binary, compare, where, cast, fill.

One invocation per output element. Inputs are strided views laid over the output
shape (broadcast inputs arrive as stride-0 views); f16 loads widen to f32, compute
in f32 and round once on store, as the reference does.
"""

from __future__ import annotations

from ....base.shapes import numel
from .common import Source, f32_bits, grid_1d, main_1d, strided_index

_FLOAT = {
    "exp": "sc_exp(a)",
    "log": "sc_log(a)",
    "sqrt": "sqrt(a)",
    "rsqrt": "inverseSqrt(a)",
    "tanh": "sc_tanh(a)",
    "sigmoid": "1.0 / (1.0 + sc_exp(-a))",
    # 0.5 (1 + tanh z) = sigmoid(2z): no cancellation for negative z
    "gelu_tanh": "a / (1.0 + sc_exp(-1.5957691216057308 * (a + 0.044715 * a * a * a)))",
    "gelu_erf": "sc_gelu_erf(a)",
    "silu": "a / (1.0 + sc_exp(-a))",
    "softplus": "select(sc_log1p(sc_exp(a)), a, a > 20.0)",
    "erf": "sc_erf(a)",
    "sin": "sin(a)",
    "cos": "cos(a)",
}
_ANY = {
    "neg": "-a",
    "abs": "abs(a)",
    "relu": "max(a, CT(0))",
    "copy": "a",
    "sign": "select(select(CT(0), CT(1), a > CT(0)), CT(-1), a < CT(0))",
    "logical_not": "1u - a",
}
_BINARY = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "maximum": "max(a, b)",
    "minimum": "min(a, b)",
    "logical_and": "a & b",
    "logical_or": "a | b",
    # activation VJPs: a = x, b = the cotangent (mathlib's derivative helpers)
    "gelu_erf_grad": "b * sc_gelu_erf_d(a)",
    "gelu_tanh_grad": "b * sc_gelu_tanh_d(a)",
    "silu_grad": "b * sc_silu_d(a)",
    "relu_grad": "select(0.0, b, a > 0.0)",  # where(x > 0, g, 0): the same +0.0 elsewhere
}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

# real powers of negative bases exist for integer exponents (numpy/torch semantics)
_POW_F = (
    "select(select(select(sc_pow(abs(a), b), -sc_pow(abs(a), b), abs(fract(b * 0.5)) == 0.5), "
    "bitcast<f32>(0x7fc00000u | (mt[0] & 0u)), fract(b) != 0.0), sc_pow(a, b), a >= 0.0)"
)


def _compute_type(dtype) -> str:
    if dtype.is_float:
        return "f32"
    return {"i32": "i32", "u32": "u32", "bool": "u32"}[dtype.name]


def _value_bits(value, dtype) -> int:
    if dtype.is_float:
        return f32_bits(value)
    if dtype.name == "bool":
        return 1 if value else 0
    return int(value) & 0xFFFFFFFF


def _bits_to(ct: str, word: str) -> str:
    return f"bitcast<f32>({word})" if ct == "f32" else f"bitcast<{ct}>({word})"


def _expr(src: Source, op: str, ins, out, attrs) -> str:
    ct = _compute_type(ins[0].dtype) if ins else _compute_type(out.dtype)
    if op in _FLOAT:
        return _FLOAT[op]
    if op in _ANY:
        return _ANY[op].replace("CT", ct)
    if op in _BINARY:
        return _BINARY[op]
    if op in _COMPARE:
        return f"select(0u, 1u, a {_COMPARE[op]} b)"
    if op == "div":
        if ct == "f32":
            return "a / b"
        # floor division, as numpy/torch do for integers
        floor = "select(CT(0), CT(1), (a % b != CT(0)) && ((a < CT(0)) != (b < CT(0))))"
        return f"a / b - {floor}".replace("CT", ct)
    if op == "pow":
        return _POW_F if ct == "f32" else f"{ct}(round(pow(f32(a), f32(b))))"
    if op == "where":
        return "select(c, b, a != 0u)"
    if op == "masked_scale":  # the products in the unfused dropout's order (see the op)
        scale = _bits_to("f32", f"mt[{src.add_meta(f32_bits(attrs['scale']))}u]")
        # the first product rounds to the stored dtype, as the unfused multiply's store did
        first = (f"(a * {scale})", "f32(b)") if attrs.get("grad_order") else ("(a * f32(b))", scale)
        rounded = f"f32(f16{first[0]})" if out.dtype.name == "f16" else first[0]
        return f"{rounded} * {first[1]}"
    if op == "clamp":
        e = "a"
        for key, fn in (("lo", "max"), ("hi", "min")):
            if attrs.get(key) is not None:
                at = src.add_meta(_value_bits(attrs[key], ins[0].dtype))
                e = f"{fn}({e}, {_bits_to(ct, f'mt[{at}u]')})"
        return e
    if op == "cast":
        oct_ = _compute_type(out.dtype)
        if out.dtype.name == "bool":
            return f"select(0u, 1u, a != {ct}(0))"
        if ins[0].dtype.name == "bool":
            return f"{oct_}(a)"
        return f"{oct_}(a)"
    raise KeyError(op)


def _store(out, expr: str) -> str:
    ty = {"f16": "f16", "f32": "f32"}.get(out.dtype.name)
    if ty == "f16":
        return f"f16({expr})"
    return expr


def elementwise(src: Source, op: str, ins, outs, attrs):
    out = outs[0]
    n = numel(out.shape)
    src.add_meta(n)
    names = "abc"
    lines = []
    for k, v in enumerate(ins):
        name = names[k]
        src.operand(name, v)
        lines.append(strided_index(src, v, out.shape, f"e{k}"))
        widen = "f32" if v.dtype.name == "f16" else ""
        lines.append(f"  let {name} = {widen}(ld_{name}(e{k}));")
    src.operand("o", out, write=True)
    expr = _expr(src, op, ins, out, attrs)
    src.helpers(expr)
    lines.append(f"  st_o(i, {_store(out, expr)});")
    src.body = main_1d("\n".join(lines))
    return grid_1d(n, src.limits)


def fill(src: Source, op: str, ins, outs, attrs):
    out = outs[0]
    n = numel(out.shape)
    src.add_meta(n)
    ty = src.operand("o", out, write=True)
    if op == "full":
        at = src.add_meta(_value_bits(attrs["value"], out.dtype))
        word = f"mt[{at}u]"
        value = (
            f"f16({_bits_to('f32', word)})"
            if ty == "f16"
            else _bits_to(_compute_type(out.dtype), word)
            if ty != "u32"
            else word
        )
    else:  # arange
        value = f"{ty}(i)"
    src.body = main_1d(f"  st_o(i, {value});")
    return grid_1d(n, src.limits)


KERNELS = {
    op: elementwise
    for op in (*_FLOAT, *_ANY, *_BINARY, *_COMPARE, "div", "pow", "where", "clamp", "cast")
}
KERNELS.update({"full": fill, "arange": fill, "masked_scale": elementwise})

# the IR's fusion pass composes these same expressions into one kernel
ELEMENTWISE = frozenset(op for op, builder in KERNELS.items() if builder is elementwise)


def expression(src: Source, op: str, ins, out, attrs) -> str:
    """The WGSL expression of ``op`` over inputs ``a``, ``b``, ``c`` (compute types)."""
    return _expr(src, op, ins, out, attrs)


def compute_type(dtype) -> str:
    """The WGSL type a value of ``dtype`` is computed in (f16 widens to f32)."""
    return _compute_type(dtype)


def store_cast(out, expr: str) -> str:
    """``expr`` converted for a store into ``out`` (f16 outputs round once, here)."""
    return _store(out, expr)
