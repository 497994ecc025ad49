"""ONNX models into records (codecs layer): a graph run abstractly, matched onto blocks.

The importer walks the nodes in order (ONNX graphs are topologically sorted), keeping
one value per graph name (see ``values``) and handing each node to its rule in
``ops``. Blocks are named after the torch module that exported them (the first
component of the node name: ``/head/Gemm`` -> ``head``), so the weights' names are the
torch state dict's. Every op type without a rule is listed, by node, before anything
is matched; a node whose rule does not fit says why. After the last node, consecutive
transformer blocks are stacked into ``nn/transformer`` (see ``attn``).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...catalog.registry import field, register
from ..base import Codec, Imported
from ..raw import RawTensor
from ..record import check, record_text
from . import attn, proto
from .graph import import_graph
from .ops import HANDLERS
from .values import Const, Opaque, Partial, Sym

_MALFORMED = (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError, OverflowError,
              AttributeError, struct.error)  # fmt: skip
_ID = re.compile(r"[^A-Za-z0-9_]")
_DTYPE = {"F32": "f32", "F16": "f16", "I32": "i32", "I64": "i32", "BOOL": "bool", "F64": "f32"}


def _ident(s: str, fallback: str) -> str:
    s = _ID.sub("_", s).strip("_")
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = f"{fallback}_{s}" if s else fallback
    return s


class Importer:
    def __init__(self, model: proto.Model, where: str):
        self.where = where
        self.g = model.graph
        self.env: dict[str, object] = {k: Const(v) for k, v in self.g.initializers.items()}
        self.blocks: dict[str, dict] = {}
        self.weights: dict[str, RawTensor] = {}
        self.inputs: dict[str, dict] = {}
        self.uses: dict[str, int] = {}
        self.fed: dict[str, int] = {}  # block -> how many blocks read its output
        self.prefix: dict[str, str] = {}  # block -> its exporting module (before dedup)
        self.renamed: dict[str, str] = {}  # block folded into a stack -> the stack
        self.outputs_of: set[str] = set()  # blocks read as graph outputs
        self.stacked: set[str] = set()  # transformer blocks exported from inside a ModuleList
        for n in self.g.nodes:
            for i in n.inputs:
                if i:
                    self.uses[i] = self.uses.get(i, 0) + 1
        for o in self.g.outputs:
            self.uses[o.name] = self.uses.get(o.name, 0) + 1

    # -- values ---------------------------------------------------------------------------
    def get(self, name: str):
        if name not in self.env:
            raise ScellisError(f"{self.where}: value {name!r} is used before it is made")
        v = self.env[name]
        if isinstance(v, Opaque):
            raise ScellisError(f"{self.where}: {v.why} is used, which no block can express")
        return v

    def sym(self, node, name: str, allow_perm: bool = False) -> Sym:
        v = self.get(name)
        if isinstance(v, Partial) and v.kind == "matmul":
            v = self.linear(v.data["node"], v.base, v.data["w"], None, v.data.get("pool"))
            self.env[name] = v
        if not isinstance(v, Sym):
            raise ScellisError(f"{node.label()}: expected a model tensor, got {type(v).__name__}")
        if v.perm is not None and not allow_perm:
            raise ScellisError(f"{node.label()}: reads a transposed tensor; no block takes one")
        return v

    def const(self, node, name: str) -> Const:
        v = self.get(name)
        if not isinstance(v, Const):
            raise ScellisError(f"{node.label()}: input {name!r} must be a constant (a weight)")
        return v

    # -- blocks ---------------------------------------------------------------------------
    def _name(self, node, fallback: str) -> tuple[str, str]:
        parts = [p for p in node.name.split("/") if p]
        base = _ident(parts[0] if len(parts) > 1 else fallback, fallback)
        name, k = base, 2
        while name in self.blocks or name in self.inputs:
            name, k = f"{base}_{k}", k + 1
        return name, base

    def block(self, node, block_id: str, x: Sym, fields: dict, weights: dict) -> str:
        name, base = self._name(node, block_id.split("/")[-1])
        self.prefix[name] = base
        self.blocks[name] = {"block_id": block_id, "in": x.src, **fields}
        self.fed[x.src] = self.fed.get(x.src, 0) + 1
        for k, t in weights.items():
            if t is not None:
                self.weights[f"{name}.{k}"] = t
        return name

    def linear(self, node, x, w: RawTensor, b: RawTensor | None, pool: str | None = None) -> Sym:
        """A dense block; after a pooling of the time axis, a regression head that pools."""
        if isinstance(x, Partial) and x.kind == "merged":  # attention heads' output projection
            return attn.attention(self, node, x, w, b)
        if isinstance(x, Partial):  # pooled (Gather of one step, ReduceMean)
            x, pool = x.base, x.data["how"]
        out_f, in_f = w.shape
        if x.shape and isinstance(x.shape[-1], int) and x.shape[-1] != in_f:
            raise ScellisError(
                f"{node.label()}: weight of {in_f} inputs for {x.shape[-1]} features"
            )
        if pool:
            fields = {"in_features": in_f, "n_outputs": out_f, "pool": pool}
            lead = list(x.shape[:-2])
        else:
            fields = {"in_features": in_f, "out_features": out_f}
            lead = list(x.shape[:-1])
        if b is None:
            fields["bias"] = False
        block_id = "nn/regression_head" if pool else "nn/linear"
        name = self.block(node, block_id, x, fields, {"weight": w, "bias": b})
        return Sym(name, lead + [out_f])

    def retag_silu(self, x: Sym, s: Sym, value: str) -> bool:
        """``x * s`` where ``s`` is a sigmoid block of ``x`` read nowhere else: SiLU."""
        spec = self.blocks.get(s.src)
        ok = (
            spec is not None
            and spec["block_id"] == "nn/activation"
            and spec["function"] == "sigmoid"
            and spec["in"] == x.src
            and x.perm is None
            and self.uses.get(value, 0) == 1
            and self.fed.get(s.src, 0) == 0
        )
        if ok:
            spec["function"] = "silu"
        return ok

    def embedding(self, node, ids: Sym, w: RawTensor) -> Sym:
        if ids.perm is not None or ids.src not in self.inputs:
            raise ScellisError(f"{node.label()}: an embedding lookup of computed ids")
        n, d = w.shape
        name = self.block(node, "nn/embedding", ids, {"num_embeddings": n, "embedding_dim": d},
                          {"weight": w})  # fmt: skip
        return Sym(name, list(ids.shape) + [d])

    def activation(self, node, x: Sym, fn: str) -> Sym:
        name = self.block(node, "nn/activation", x, {"function": fn}, {})
        return Sym(name, list(x.shape))

    def recurrent(self, node, block_id, x: Sym, in_f: int, H: int, w: dict, has_bias) -> str:
        prev = self.blocks.get(x.src)
        stack = (
            x.tag == "seq"
            and prev is not None
            and prev["block_id"] == block_id
            and prev["hidden_size"] == H
            and prev.get("bias", True) == has_bias
            and self.uses.get(node.inputs[0], 0) == 1
            and self.fed.get(x.src, 0) == 0
            and prev.get("output", "sequence") == "sequence"
        )
        if stack:  # the next layer of the same torch module: one stacked block
            k = prev["num_layers"]
            prev["num_layers"] = k + 1
            for key, t in w.items():
                self.weights[f"{x.src}.{key}_l{k}"] = t
            return x.src
        fields = {"input_size": in_f, "hidden_size": H, "num_layers": 1}
        if not has_bias:
            fields["bias"] = False
        src = Sym(x.src, x.shape)
        return self.block(node, block_id, src, fields, {f"{k}_l0": t for k, t in w.items()})

    def last_step(self, node, x: Sym, axis: int, idx: Const):
        """``y[:, -1]`` after a recurrent block: that block's ``output: last``."""
        spec = self.blocks.get(x.src)
        time_axis = 1 if x.perm is None else 0
        T = x.shape[time_axis]
        ok = (
            spec is not None
            and spec["block_id"] in ("nn/lstm", "nn/gru")
            and x.tag == "seq"
            and axis == time_axis
            and not idx.t.shape
            and int(idx.scalar()) in (-1, T - 1 if isinstance(T, int) else -1)
            and self.fed.get(x.src, 0) == 0
            and self.uses.get(node.inputs[0], 0) == 1
        )
        if not ok:
            step = int(idx.scalar()) if not idx.t.shape else None
            if x.perm is None and not x.tag and len(x.shape) == 3 and axis == 1 and step in (0, -1):
                return Partial("pool", x, {"how": "last" if step == -1 else "first"})
            raise ScellisError(f"{node.label()}: Gather other than one step of a sequence")
        spec["output"] = "last"
        B = x.shape[1 - time_axis]
        return Sym(x.src, [B, spec["hidden_size"]])

    # -- the whole graph ------------------------------------------------------------------
    def run(self, model_id: str) -> dict:
        bad = [
            n.label()
            for n in self.g.nodes
            if n.op not in HANDLERS or n.domain not in ("", "ai.onnx")
        ]
        if bad:
            raise ScellisError(f"{self.where}: unsupported ONNX ops: {', '.join(bad)}")
        for vi in self.g.inputs:
            if vi.name in self.g.initializers:
                continue
            name = _ident(vi.name, "input")
            dims = [("batch" if i == 0 else _ident(d, "dim")) if isinstance(d, str) else d
                    for i, d in enumerate(vi.dims)]  # fmt: skip
            if dims and isinstance(dims[0], int):
                dims[0] = "batch"  # a model exported for one batch size runs on any
            self.inputs[name] = {"shape": dims, "dtype": _DTYPE.get(vi.dtype or "F32", "f32")}
            self.env[vi.name] = Sym(name, dims)
        for node in self.g.nodes:
            try:
                outs = HANDLERS[node.op](self, node)
            except _MALFORMED as e:  # a node whose inputs or attributes do not make sense
                what = f"{type(e).__name__}: {e}"
                raise ScellisError(f"{self.where}: {node.label()} is malformed ({what})") from None
            for name, v in zip(node.outputs, outs):
                if name:
                    self.env[name] = v
        outputs = []
        for vi in self.g.outputs:
            v = self.get(vi.name)
            if isinstance(v, Partial) and v.kind == "matmul":
                v = self.linear(v.data["node"], v.base, v.data["w"], None, v.data.get("pool"))
            if not isinstance(v, Sym) or v.perm is not None or v.tag or v.src in self.inputs:
                raise ScellisError(
                    f"{self.where}: graph output {vi.name!r} is not a block's output"
                )
            outputs.append(v.src)
        self.outputs_of = set(outputs)
        attn.stack(self)
        outputs = [self.renamed.get(o, o) for o in outputs]
        if not self.blocks:
            raise ScellisError(f"{self.where}: the graph has no block the catalog knows")
        return {
            "model": model_id, "inputs": self.inputs, "blocks": self.blocks, "outputs": outputs,
            "determinism_tier": "debug", "seed": 0,
        }  # fmt: skip


def model_id(path: Path) -> str:
    stem = re.sub(r"[^a-z0-9_.-]", "_", path.stem.lower()).strip("_.-") or "model"
    if not stem[0].isalnum():
        stem = "m" + stem
    return f"imported/{stem}@1"


@dataclass(frozen=True)
class OnnxConfig:
    """ONNX models (.onnx) as exported by torch.onnx.export: a record plus its weights."""

    max_bytes: int = field(2 << 30, doc="refuse files larger than this", min=1)


class OnnxCodec(Codec):
    suffixes = (".onnx",)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        # ModelProto starts with field 1 (ir_version, a small varint) in every exporter
        return len(head) > 2 and head[0] == 0x08 and 3 <= head[1] <= 20

    def read(self, path: Path) -> Imported:
        data = self.read_bytes(path)
        try:
            m = proto.model(data, path.parent, str(path))
        except _MALFORMED as e:
            raise ScellisError(
                f"{path}: not a readable ONNX model ({type(e).__name__}: {e})"
            ) from None
        imp = Importer(m, str(path))
        try:
            rec = imp.run(model_id(path))
        except ScellisError:  # no catalog form for the whole graph: keep its nodes
            try:
                imp, rec = import_graph(m, str(path), model_id(path))
            except _MALFORMED as e:  # a node whose inputs or attributes do not make sense
                what = f"{type(e).__name__}: {e}"
                raise ScellisError(f"{path}: a node is malformed ({what})") from None
        text = record_text(rec, f"imported from {path.name} ({m.producer or 'unknown producer'})")
        check(text, str(path))
        return Imported(imp.weights, rec, {"producer": m.producer, "sml": text})


register("codec/onnx", "codec", OnnxConfig, OnnxCodec, builtin=True)
