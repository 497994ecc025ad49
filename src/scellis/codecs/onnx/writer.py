"""ONNX graph writing (codecs layer): tensors, attributes, nodes as protobuf bytes.

``Graph`` collects nodes and initializers; ``dense`` and ``activation`` write the
nodes torch.onnx.export writes for a linear layer and the catalog's nonlinearities.
"""

from __future__ import annotations

import math

from ...base.errors import ScellisError
from ..protobuf.writer import bytes_field, float_field, packed_ints, varint_field
from ..raw import RawTensor, from_values
from .values import transpose2

_ELEM = {"F32": 1, "U8": 2, "I8": 3, "I16": 5, "I32": 6, "I64": 7, "BOOL": 9, "F16": 10,
         "F64": 11, "U32": 12}  # fmt: skip
IN_TYPE = {"f32": 1, "f16": 10, "i32": 6, "bool": 9}


def _tensor(name: str, t: RawTensor) -> bytes:
    if t.dtype == "BF16":
        raise ScellisError(f"{name}: bf16 weights have no ONNX export here; widen them first")
    return (
        packed_ints(1, t.shape)
        + varint_field(2, _ELEM[t.dtype])
        + bytes_field(8, name)
        + (bytes_field(9, t.data))
    )


def _attr(name: str, v) -> bytes:
    head = bytes_field(1, name)
    if isinstance(v, float):
        return head + float_field(2, v) + varint_field(20, 1)
    if isinstance(v, int):
        return head + varint_field(3, v) + varint_field(20, 2)
    if isinstance(v, str):
        return head + bytes_field(4, v) + varint_field(20, 3)
    if isinstance(v, RawTensor):
        return head + bytes_field(5, _tensor("", v)) + varint_field(20, 4)
    return head + packed_ints(8, list(v)) + varint_field(20, 7)  # ints


def value_info(name: str, elem: int, dims) -> bytes:
    """A graph input/output; ``dims`` None leaves the shape unstated (inferred by readers)."""
    ttype = varint_field(1, elem)
    if dims is not None:
        shape = b"".join(
            bytes_field(1, bytes_field(2, d) if isinstance(d, str) else varint_field(1, d))
            for d in dims
        )
        ttype += bytes_field(2, shape)
    return bytes_field(1, name) + bytes_field(2, bytes_field(1, ttype))


class Graph:
    def __init__(self):
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"/{hint}/{self.count}"

    def init(self, name: str, t: RawTensor) -> str:
        self.inits.append(_tensor(name, t))
        return name

    def const(self, hint: str, code: str, shape, values) -> str:
        return self.init(self.fresh(hint), from_values(code, shape, values))

    def node(self, op: str, ins: list[str], scope: str, n_out: int = 1, out=None, **attrs):
        outs = [out] if out else [self.fresh(f"{scope}/{op}") for _ in range(n_out)]
        body = b"".join(bytes_field(1, i) for i in ins) + b"".join(bytes_field(2, o) for o in outs)
        body += bytes_field(3, f"/{scope}/{op}_{self.count}") + bytes_field(4, op)
        body += b"".join(bytes_field(5, _attr(k, v)) for k, v in attrs.items())
        self.nodes.append(body)
        return outs


def dense(g: Graph, x: str, name: str, w: RawTensor, b: RawTensor | None) -> str:
    y = g.node("MatMul", [x, g.init(f"{name}.weight_t", transpose2(w))], name)[0]
    if b is not None:
        y = g.node("Add", [g.init(f"{name}.bias", b), y], name)[0]
    return y


def activation(g: Graph, x: str, name: str, fn: str) -> str:
    simple = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid"}
    if fn in simple:
        return g.node(simple[fn], [x], name)[0]
    if fn == "softmax":
        return g.node("Softmax", [x], name, axis=-1)[0]
    if fn == "silu":
        return g.node("Mul", [x, g.node("Sigmoid", [x], name)[0]], name)[0]
    if fn == "gelu":  # x * 0.5 * (1 + erf(x / sqrt 2)), as torch writes it for opset < 20
        d = g.node("Div", [x, g.const(name, "F32", (), [math.sqrt(2.0)])], name)[0]
        e = g.node("Erf", [d], name)[0]
        a = g.node("Add", [e, g.const(name, "F32", (), [1.0])], name)[0]
        m = g.node("Mul", [x, a], name)[0]
        return g.node("Mul", [m, g.const(name, "F32", (), [0.5])], name)[0]
    if fn == "gelu_tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.node("Pow", [x, g.const(name, "F32", (), [3.0])], name)[0]
        inner = g.node("Mul", [cube, g.const(name, "F32", (), [0.044715])], name)[0]
        inner = g.node("Add", [x, inner], name)[0]
        inner = g.node("Mul", [inner, g.const(name, "F32", (), [math.sqrt(2 / math.pi)])], name)[0]
        t = g.node("Tanh", [inner], name)[0]
        t = g.node("Add", [t, g.const(name, "F32", (), [1.0])], name)[0]
        half = g.node("Mul", [x, g.const(name, "F32", (), [0.5])], name)[0]
        return g.node("Mul", [half, t], name)[0]
    raise ScellisError(f"block {name!r}: activation {fn!r} has no ONNX export here")
