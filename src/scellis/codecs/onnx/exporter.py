"""Records to ONNX (codecs layer): ``export --to onnx`` for the dense and recurrent blocks.

Each block becomes the nodes torch.onnx.export would write for it (opset 17): MatMul
+ Add for dense layers and heads, Relu/Tanh/Sigmoid and the exact-GELU chain,
LayerNormalization, Conv and the 2-d pools (``image_writer``), LSTM/GRU between the
transposes that turn batch-first sequences time-major and back (gates reordered from
torch's to ONNX's), and the Transformer blocks (``transformer_writer``). The file reads
back through the ONNX importer (the image blocks' nodes excepted: it has no Conv yet). Blocks
with no ONNX form here are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import write_file
from ...catalog.blocks.recurrent import keras_variant
from ...catalog.registry import register
from ...model.build import RecordModel
from ...runtime.creation import zeros
from ..base import Codec
from ..protobuf.writer import bytes_field, varint_field
from ..raw import RawTensor, from_values
from .image_writer import IMAGE_BLOCKS, image_block
from .transformer_writer import TRANSFORMER_BLOCKS, transformer_block
from .values import reorder_gates
from .writer import IN_TYPE, Graph, activation, dense, value_info

# torch gate order -> ONNX's: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h
_GATES = {"nn/lstm": ("LSTM", [0, 3, 1, 2], 4), "nn/gru": ("GRU", [1, 0, 2], 3)}


def _recurrent(g: Graph, x: str, name: str, spec: dict, w: dict) -> str:
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


def _pool(g: Graph, x: str, name: str, how: str) -> str:
    if how in (None, "none"):
        return x
    if how in ("last", "first"):
        idx = g.const(name, "I64", (), [-1 if how == "last" else 0])
        return g.node("Gather", [x, idx], name, axis=1)[0]
    return g.node("ReduceMean", [x], name, axes=[1], keepdims=0)[0]


def _block(g: Graph, x: list[str], name: str, spec: dict, w: dict) -> str:
    b = spec["block_id"]
    if len(x) != 1:
        raise ScellisError(f"block {name!r} reads {len(x)} inputs; ONNX export takes one")
    x0 = x[0]
    if b == "nn/linear":
        return dense(g, x0, name, w[f"{name}.weight"], w.get(f"{name}.bias"))
    if b in ("nn/regression_head", "nn/classification_head"):
        y = _pool(g, x0, name, spec.get("pool", "none"))
        return dense(g, y, name, w[f"{name}.weight"], w.get(f"{name}.bias"))
    if b == "nn/activation":
        return activation(g, x0, name, spec.get("function", "relu"))
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
    if b in TRANSFORMER_BLOCKS:
        return transformer_block(g, x0, name, spec, w)
    if b in IMAGE_BLOCKS:
        return image_block(g, x0, name, spec, w)
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
    g = Graph()
    values = {}
    inputs = []
    for name, spec in (record.get("inputs") or {}).items():
        values[name] = name
        dims = [d if isinstance(d, int) else str(d) for d in spec.get("shape", [])]
        inputs.append(value_info(name, IN_TYPE.get(spec.get("dtype", "f32"), 1), dims))
    for name in m.order:
        ins = [values[s] for s in m.wiring[name]]
        values[name] = _block(g, ins, name, record["blocks"][name], tensors)
    outs = []
    shapes = _output_shapes(record, m)
    for o, dims in zip(m.output_names, shapes):
        g.node("Identity", [values[o]], o, out=o)  # graph outputs carry the block's name
        outs.append(value_info(o, 1, dims))
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
        write_file(path, data)
        return [path]


register("codec/onnx_export", "codec", OnnxExportConfig, OnnxExportCodec, builtin=True)
