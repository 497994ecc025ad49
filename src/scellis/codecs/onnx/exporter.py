"""Records to ONNX (codecs layer): ``export --to onnx`` for the dense and recurrent blocks.

Each block becomes the nodes torch.onnx.export would write for it (opset 17): MatMul
+ Add for dense layers and heads, Relu/Tanh/Sigmoid and the exact-GELU chain,
LayerNormalization, and LSTM/GRU between the transposes that turn batch-first
sequences time-major and back, gates reordered from torch's to ONNX's. The file reads
back through the ONNX importer as the same record. Blocks with no ONNX form here
(attention, transformers, positions) are refused by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...catalog.blocks.recurrent import keras_variant
from ...catalog.registry import register
from ...model.build import RecordModel
from ...runtime.creation import zeros
from ..base import Codec
from ..protobuf.writer import bytes_field, float_field, packed_ints, varint_field
from ..raw import RawTensor, from_values
from .values import reorder_gates, transpose2

_ELEM = {"F32": 1, "U8": 2, "I8": 3, "I16": 5, "I32": 6, "I64": 7, "BOOL": 9, "F16": 10,
         "F64": 11, "U32": 12}  # fmt: skip
_IN_TYPE = {"f32": 1, "f16": 10, "i32": 6, "bool": 9}
# torch gate order -> ONNX's: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h
_GATES = {"nn/lstm": ("LSTM", [0, 3, 1, 2], 4), "nn/gru": ("GRU", [1, 0, 2], 3)}


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
    return head + packed_ints(8, list(v)) + varint_field(20, 7)  # ints


def _value_info(name: str, elem: int, dims) -> bytes:
    """A graph input/output; ``dims`` None leaves the shape unstated (inferred by readers)."""
    ttype = varint_field(1, elem)
    if dims is not None:
        shape = b"".join(
            bytes_field(1, bytes_field(2, d) if isinstance(d, str) else varint_field(1, d))
            for d in dims
        )
        ttype += bytes_field(2, shape)
    return bytes_field(1, name) + bytes_field(2, bytes_field(1, ttype))


class _Graph:
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


def _dense(g: _Graph, x: str, name: str, w: RawTensor, b: RawTensor | None) -> str:
    y = g.node("MatMul", [x, g.init(f"{name}.weight_t", transpose2(w))], name)[0]
    if b is not None:
        y = g.node("Add", [g.init(f"{name}.bias", b), y], name)[0]
    return y


def _activation(g: _Graph, x: str, name: str, fn: str) -> str:
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
    raise ScellisError(f"block {name!r}: activation {fn!r} has no ONNX export here")


def _recurrent(g: _Graph, x: str, name: str, spec: dict, w: dict) -> str:
    op, order, G = _GATES[spec["block_id"]]
    H = spec["hidden_size"]
    if spec.get("bidirectional"):
        raise ScellisError(f"block {name!r}: a bidirectional {op} has no ONNX export here")
    if keras_variant(spec):
        raise ScellisError(f"block {name!r}: {keras_variant(spec)} has no ONNX export")
    seq = g.node("Transpose", [x], name, perm=[1, 0, 2])[0]
    for k in range(spec.get("num_layers", 1) or 1):
        W = reorder_gates(w[f"{name}.weight_ih_l{k}"], order, H)
        R = reorder_gates(w[f"{name}.weight_hh_l{k}"], order, H)
        ins = [
            g.init(f"{name}.W_l{k}", RawTensor(W.dtype, (1, *W.shape), W.data)),
            g.init(f"{name}.R_l{k}", RawTensor(R.dtype, (1, *R.shape), R.data)),
        ]
        if f"{name}.bias_ih_l{k}" in w:
            bi = reorder_gates(w[f"{name}.bias_ih_l{k}"], order, H)
            bh = reorder_gates(w[f"{name}.bias_hh_l{k}"], order, H)
            both = RawTensor(bi.dtype, (1, 2 * G * H), bi.data + bh.data)
            ins.append(g.init(f"{name}.B_l{k}", both))
        attrs = {"hidden_size": H}
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        y = g.node(op, [seq, *ins], name, n_out=1, **attrs)[0]
        seq = g.node("Squeeze", [y, g.const(name, "I64", (1,), [1])], name)[0]
    out = g.node("Transpose", [seq], name, perm=[1, 0, 2])[0]
    if spec.get("output") == "last":
        out = g.node("Gather", [out, g.const(name, "I64", (), [-1])], name, axis=1)[0]
    return out


def _pool(g: _Graph, x: str, name: str, how: str) -> str:
    if how in (None, "none"):
        return x
    if how in ("last", "first"):
        idx = g.const(name, "I64", (), [-1 if how == "last" else 0])
        return g.node("Gather", [x, idx], name, axis=1)[0]
    return g.node("ReduceMean", [x], name, axes=[1], keepdims=0)[0]


def _block(g: _Graph, x: list[str], name: str, spec: dict, w: dict) -> str:
    b = spec["block_id"]
    if len(x) != 1:
        raise ScellisError(f"block {name!r} reads {len(x)} inputs; ONNX export takes one")
    x0 = x[0]
    if b == "nn/linear":
        return _dense(g, x0, name, w[f"{name}.weight"], w.get(f"{name}.bias"))
    if b in ("nn/regression_head", "nn/classification_head"):
        y = _pool(g, x0, name, spec.get("pool", "none"))
        return _dense(g, y, name, w[f"{name}.weight"], w.get(f"{name}.bias"))
    if b == "nn/activation":
        return _activation(g, x0, name, spec.get("function", "relu"))
    if b == "nn/dropout":
        return g.node("Identity", [x0], name)[0]
    if b == "nn/layer_norm":
        n = spec["normalized_shape"]
        scale = w.get(f"{name}.weight") or from_values("F32", (n,), [1.0] * n)
        ins = [x0, g.init(f"{name}.weight", scale)]
        if f"{name}.bias" in w:
            ins.append(g.init(f"{name}.bias", w[f"{name}.bias"]))
        eps = float(spec.get("eps", 1e-5) or 1e-5)
        return g.node("LayerNormalization", ins, name, axis=-1, epsilon=eps)[0]
    if b in _GATES:
        return _recurrent(g, x0, name, spec, w)
    if b == "nn/embedding":
        return g.node("Gather", [g.init(f"{name}.weight", w[f"{name}.weight"]), x0], name)[0]
    raise ScellisError(f"block {name!r}: {b} has no ONNX export here")


def _output_shapes(record: dict, m) -> list:
    """Output shapes from two shape-only runs (batch 2 and 3): dims that follow it are 'batch'."""
    runs = []
    for batch in (2, 3):
        args = []
        for spec in (record.get("inputs") or {}).values():
            shape = [batch if not isinstance(d, int) else d for d in spec.get("shape", [])]
            args.append(zeros(shape, spec.get("dtype", "f32"), "null"))
        y = m(*args)
        runs.append([t.shape for t in (y if isinstance(y, tuple) else (y,))])
    return [[d if d == e else "batch" for d, e in zip(a, b)] for a, b in zip(runs[0], runs[1])]


def model_bytes(record: dict, tensors: dict[str, RawTensor]) -> bytes:
    """An ONNX ModelProto (opset 17) computing the record's model with ``tensors``."""
    m = RecordModel(record, device="null")  # block order and wiring only
    g = _Graph()
    values = {}
    inputs = []
    for name, spec in (record.get("inputs") or {}).items():
        values[name] = name
        dims = [d if isinstance(d, int) else str(d) for d in spec.get("shape", [])]
        inputs.append(_value_info(name, _IN_TYPE.get(spec.get("dtype", "f32"), 1), dims))
    for name in m.order:
        ins = [values[s] for s in m.wiring[name]]
        values[name] = _block(g, ins, name, record["blocks"][name], tensors)
    outs = []
    shapes = _output_shapes(record, m)
    for o, dims in zip(m.output_names, shapes):
        g.node("Identity", [values[o]], o, out=o)  # graph outputs carry the block's name
        outs.append(_value_info(o, 1, dims))
    graph = b"".join(bytes_field(1, n) for n in g.nodes) + bytes_field(2, "scellis")
    graph += b"".join(bytes_field(5, t) for t in g.inits)
    graph += b"".join(bytes_field(11, i) for i in inputs)
    graph += b"".join(bytes_field(12, o) for o in outs)
    opset = bytes_field(1, "") + varint_field(2, 17)
    return (
        varint_field(1, 8) + bytes_field(2, "scellis") + bytes_field(7, graph)
        + bytes_field(8, opset)
    )  # fmt: skip


@dataclass(frozen=True)
class OnnxExportConfig:
    """ONNX models (.onnx, opset 17) for records of dense and recurrent blocks."""


class OnnxExportCodec(Codec):
    suffixes = (".onnx",)
    can_read = False
    can_write = True

    def write(self, path: Path, tensors: dict[str, RawTensor], record: dict | None) -> list[Path]:
        if not record:
            raise ScellisError("an ONNX export needs the model's record")
        data = model_bytes(record, tensors)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return [path]


register("codec/onnx_export", "codec", OnnxExportConfig, OnnxExportCodec, builtin=True)
