"""ONNX graphs as op-level records (codecs layer): every node kept, catalog blocks where
a single node is one.

When the pattern importer (``importer``) finds no catalog form for a whole graph,
this one keeps the graph's own structure: a node whose inputs are all constants is
folded here (the ``onnx/op`` block's host arithmetic, so import and run agree); a
dense product with a weight (MatMul or Gemm, and the bias Add after it), a layer norm,
an embedding lookup and an activation become ``nn/linear``, ``nn/layer_norm``,
``nn/embedding`` and ``nn/activation``; every other node becomes an ``onnx/op``
block (one per output read). A float initializer is a learned parameter unless it is
a scalar or a mask (only zeros and very negative values); blocks are named after the
node, or after the torch parameter a catalog block takes. Shape arithmetic that
depends on a free dim (``Shape`` of an activation) stays in the record and runs on the
host at run time.

Three graph-wide readings refine that: attention chains become one
``nn/scaled_dot_product_attention`` block (``attention_match``); a graph exported at a
fixed batch follows any batch (``batch``); an embedding table the LM head reuses stays
one parameter (``ties``).
"""

from __future__ import annotations

import re

from ...base.errors import ScellisError
from ...catalog.blocks.onnx_op import host as H
from ...catalog.blocks.onnx_op.block import record_form
from ...catalog.blocks.onnx_op.ops import OPS
from ...catalog.registry import lookup
from ...model.build import config_of
from ...runtime.creation import zeros
from ..raw import RawTensor, from_values
from . import attention_match as AM
from . import proto
from .attention_match import AttentionChains
from .batch import RESHAPES, FixedBatch, FreeDims
from .ops import constant
from .ties import tied_heads
from .values import Run, transpose2

_ID = re.compile(r"[^A-Za-z0-9_]")
_HOST_DTYPE = {"F32": "f32", "F64": "f32", "F16": "f32", "BOOL": "bool"}
_RECORD_DTYPE = {"F32": "f32", "F16": "f16", "BOOL": "bool"}
_ACTIVATIONS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}
# ops whose result is on the host when their inputs are (see onnx_op.ops)
_HOST_OPS = set(H.BINARY) | set(H.UNARY) | {"Cast", "Where", "Transpose", "Reshape",
    "Unsqueeze", "Squeeze", "Flatten", "Concat", "Split", "Slice", "Gather", "Expand",
    "Trilu", "Range", "ConstantOfShape", "GatherND", "Identity", "Dropout"}  # fmt: skip
_ALWAYS_HOST = {"Shape", "Size"}
# a copy, a view or rows of a weight (a position table looked up at 0..T-1, as a fixed
# length folds it) is still learned: the rows it holds train
_KEEPS_LEARNED = {"Identity", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Split", "Slice",
                  "Gather", "Cast"}  # fmt: skip


def _ident(s: str, fallback: str) -> str:
    s = _ID.sub("_", s).strip("_")
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = f"{fallback}_{s}" if s else fallback
    return s


def host_of_raw(t: RawTensor) -> H.Host:
    dtype = _HOST_DTYPE.get(t.dtype, "i64")
    vals = t.values()
    if dtype == "i64":
        vals = [int(v) for v in vals]
    elif dtype == "bool":
        vals = [bool(v) for v in vals]
    return H.make(dtype, t.shape, vals)


def _is_mask(h: H.Host) -> bool:
    """Zeros and very negative values (at least one): an additive attention mask."""
    return any(v <= -1e9 for v in h.values) and all(v == 0.0 or v <= -1e9 for v in h.values)


class GraphImporter(FreeDims, AttentionChains):
    def __init__(self, model: proto.Model, where: str, free: tuple = ("batch", "seq")):
        self.where, self.g = where, model.graph
        self.blocks: dict[str, dict] = {}
        self.weights: dict[str, RawTensor] = {}
        self.inputs: dict[str, dict] = {}
        self.env: dict[str, object] = {}
        self.params: dict[str, RawTensor] = {}  # learned initializers
        self.readers: dict[str, list] = {}
        self.absorbed: set[int] = set()  # nodes a catalog block took in (a bias Add)
        # every input dim a number: shapes are known here, and Shape nodes fold
        self.static = all(isinstance(d, int) for vi in self._real_inputs() for d in vi.dims)
        self.probe: dict[str, object] = {}  # block -> its output on the null device
        # a static graph is probed with each dim it may follow one larger (see ``batch``)
        self.free = self._free_dims(free) if self.static else {}
        self.alt: dict[str, dict] = {s: {} for s in self.free}
        self.at: dict[str, dict] = {s: {} for s in self.free}
        for n in self.g.nodes:
            for i in n.inputs:
                self.readers.setdefault(i, []).append(n)
        for name, t in self.g.initializers.items():
            self.constant(name, t)
        self.ties = tied_heads(self.g.nodes, self.params)  # head weight -> its table
        self.tables: dict[str, str] = {}  # table initializer -> its embedding block
        self.mods: dict[str, object] = {}  # block -> its module on the null device
        # attention chains (see attention_match): their inner nodes wait for the last one
        self.chains = AM.find(self.g.nodes, self._graph_outs())
        self.waiting = {id(n) for c in self.chains.values() for n in c.inner}
        self.position = {id(n): k for k, n in enumerate(self.g.nodes)}

    def constant(self, name: str, t: RawTensor) -> None:
        """An initializer or a Constant node's value: learned unless a scalar or a mask."""
        h = host_of_raw(t)
        if h.dtype == "f32" and h.numel > 1 and not _is_mask(h):
            self.params[name] = t
        self.env[name] = h

    # -- names -----------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = _ident(base, "node")
        name, k = base, 2
        while name in self.blocks or name in self.inputs:
            name, k = f"{base}_{k}", k + 1
        return name

    def _value(self, node, name: str):
        if not name:
            return None
        if name not in self.env:
            raise ScellisError(f"reads {name!r} before it is made")
        return self.env[name]

    # -- blocks ----------------------------------------------------------------------------
    def add(self, base: str, block_id: str, ins: list[str], fields: dict, w: dict,
            at=None) -> str:  # fmt: skip
        name = self.fresh(base)
        spec = {"block_id": block_id, "in": ins[0] if len(ins) == 1 else ins, **fields}
        self.blocks[name] = spec
        for k, t in w.items():
            if t is not None:
                self.weights[f"{name}.{k}"] = t
        if self.static:  # run it on the shapes-only device: its output's shape is known
            entry = lookup(block_id, "block")
            mod = entry.impl(config_of(entry, spec, name), device="null")
            if fields.get("tie_to"):
                mod.tie(self.mods[fields["tie_to"]])
            self.mods[name] = mod
            self.probe[name] = mod(*[self.probe[i] for i in ins])
            if self.free:
                self._probe_free(name, mod, ins, at)
        return name

    def op_block(self, node, out: int) -> Run:
        ins, args, w, used, at = [], [], {}, set(), None
        first = next((v.src for i in node.inputs if isinstance(v := self.env.get(i), Run)), None)
        if node.op in RESHAPES and any(first in places for places in self.at.values()):
            at = "flat"
        for k, name in enumerate(node.inputs):
            v = self._value(node, name)
            if v is None:
                args.append(None)
            elif isinstance(v, Run):
                ins.append(v.src)
                args.append("in")
            elif name in self.params:
                p = _ident(name.split(".")[-1] if "." in name else f"arg{k}", f"arg{k}")
                while p in used:
                    p = f"{p}_{k}"
                used.add(p)
                w[p] = self.params[name]
                args.append({"param": p, "shape": list(v.shape)})
            else:
                if self.free:
                    v = self._follow(node, k, v, first)
                if isinstance(v, Run):  # a target computed at each call (see ``batch``)
                    ins.append(v.src)
                    args.append("in")
                    continue
                args.append(record_form(v))
        attrs = {k: record_form(host_of_raw(a)) if isinstance(a, RawTensor) else a
                 for k, a in node.attrs.items() if a is not None}  # fmt: skip
        if not ins:
            raise ScellisError(f"{self.where}: {node.label()} reads no model tensor")
        fields = {"op": node.op, "attrs": attrs, "args": args}
        if out:
            fields["output"] = out
        base = node.name or node.outputs[out]
        name = self.add(base + (f"_{out}" if len(node.outputs) > 1 else ""), "onnx/op", ins,
                        fields, w, at)  # fmt: skip
        ins_host = all(not isinstance(self.env.get(i), Run) or self.env[i].on_host
                       for i in node.inputs if i)  # fmt: skip
        return Run(name, node.op in _ALWAYS_HOST or (ins_host and node.op in _HOST_OPS))

    # -- catalog blocks for single nodes ---------------------------------------------------
    def _param(self, name: str) -> RawTensor | None:
        return self.params.get(name) if name else None

    def _sole_reader(self, value: str):
        readers = self.readers.get(value, [])
        outs = {o.name for o in self.g.outputs}
        return readers[0] if len(readers) == 1 and value not in outs else None

    def _base(self, node, weight: str) -> str:
        """A catalog block's name: the torch module its weight names, unless several
        nodes read that weight (the exporter merged equal values under one module's
        name, see ``ties``): then the node's own."""
        if "." in weight and len(self.readers.get(weight, [])) == 1:
            return weight.rsplit(".", 1)[0]
        return node.name or node.outputs[0]

    def _linear(self, node, x: Run):
        """MatMul/Gemm by a learned 2-d weight (+ a learned bias) -> nn/linear."""
        a = node.attrs
        w = self._param(node.inputs[1])
        if w is None or len(w.shape) != 2 or x.on_host:
            return None
        if node.op == "Gemm":
            if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                return None
            w = w if a.get("transB", 0) else transpose2(w)
            b = self._param(node.inputs[2]) if len(node.inputs) > 2 else None
            if len(node.inputs) > 2 and node.inputs[2] and b is None:
                return None
            out = node.outputs[0]
        else:
            w, b, out = transpose2(w), None, node.outputs[0]
            nxt = self._sole_reader(out)
            if nxt is not None and nxt.op == "Add":
                other = [i for i in nxt.inputs if i != out]
                cand = self._param(other[0]) if len(other) == 1 else None
                if cand is not None and list(cand.shape) == [w.shape[0]]:
                    b, out = cand, nxt.outputs[0]
                    self.absorbed.add(id(nxt))
        if b is not None and list(b.shape) != [w.shape[0]]:
            return None
        base = self._base(node, node.inputs[1])
        table = self.tables.get(self.ties.get(node.inputs[1], ""))
        if table is not None:  # the embedding's own table (see ties): one parameter
            fields = {"d_model": w.shape[1], "vocab_size": w.shape[0], "bias": b is not None,
                      "tie_to": table}  # fmt: skip
            name = self.add(base, "nn/lm_head", [x.src], fields, {"bias": b})
            return out, Run(name)
        fields = {"in_features": w.shape[1], "out_features": w.shape[0]}
        if b is None:
            fields["bias"] = False
        name = self.add(base, "nn/linear", [x.src], fields, {"weight": w, "bias": b})
        return out, Run(name)

    def _layer_norm(self, node, x: Run):
        w = self._param(node.inputs[1])
        b = self._param(node.inputs[2]) if len(node.inputs) > 2 else None
        n = w.shape[0] if w is not None and len(w.shape) == 1 else None
        last = node.attrs.get("axis", -1) == -1
        if n is None or not last or b is None or len(node.outputs) > 1 or x.on_host:
            return None
        eps = node.attrs.get("epsilon", 1e-5)
        base = self._base(node, node.inputs[1])
        fields = {"normalized_shape": n, "eps": float(f"{eps:.7g}")}
        name = self.add(base, "nn/layer_norm", [x.src], fields, {"weight": w, "bias": b})
        return node.outputs[0], Run(name)

    def _embedding(self, node, ids):
        w = self._param(node.inputs[0])
        if w is None or len(w.shape) != 2 or node.attrs.get("axis", 0) != 0:
            return None
        if not isinstance(ids, Run) or ids.on_host:
            return None
        base = self._base(node, node.inputs[0])
        fields = {"num_embeddings": w.shape[0], "embedding_dim": w.shape[1]}
        name = self.add(base, "nn/embedding", [ids.src], fields, {"weight": w})
        self.tables.setdefault(node.inputs[0], name)
        return node.outputs[0], Run(name)

    def _activation(self, node, x: Run):
        fn = _ACTIVATIONS.get(node.op)
        if node.op == "Gelu":
            fn = "gelu_tanh" if node.attrs.get("approximate") == "tanh" else "gelu"
        if fn is None or x.on_host:
            return None
        name = self.add(node.name or node.outputs[0], "nn/activation", [x.src],
                        {"function": fn}, {})  # fmt: skip
        return node.outputs[0], Run(name)

    def catalog(self, node, vals):
        first = vals[0] if vals else None
        if node.op in ("MatMul", "Gemm") and isinstance(first, Run):
            return self._linear(node, first)
        if node.op == "LayerNormalization" and isinstance(first, Run):
            return self._layer_norm(node, first)
        if node.op == "Gather" and len(vals) == 2:
            return self._embedding(node, vals[1])
        if node.op in (*_ACTIVATIONS, "Gelu") and isinstance(first, Run):
            return self._activation(node, first)
        return None

    # -- the graph -------------------------------------------------------------------------
    def check_ops(self) -> None:
        known = {*OPS, "Constant"}
        bad = [n.label() for n in self.g.nodes
               if n.op not in known or n.domain not in ("", "ai.onnx")]  # fmt: skip
        if bad:
            raise ScellisError(f"{self.where}: unsupported ONNX ops: {', '.join(bad)}")

    def node(self, node) -> None:
        if id(node) in self.waiting:
            return
        chain = self.chains.get(id(node))
        if chain is not None and not self._attention(node, chain):
            # no catalog form after all: the chain's nodes as they are, in graph order
            for n in sorted(chain.inner, key=lambda n: self.position[id(n)]):
                self._node(n)
        if chain is None or node.outputs[0] not in self.env:
            self._node(node)

    def _node(self, node) -> None:
        if id(node) in self.absorbed:
            return
        if node.op == "Constant":
            self.constant(node.outputs[0], constant(self, node)[0].t)
            return
        vals = [self._value(node, i) for i in node.inputs]
        if node.op in _ALWAYS_HOST and self.static and isinstance(vals[0], Run):
            vals[0] = self.probe[vals[0].src]  # a static shape: Shape and Size fold
        if not any(isinstance(v, Run) for v in vals):  # constants only: fold now
            learned = node.op in _KEEPS_LEARNED and node.inputs[0] in self.params
            for k, out in enumerate(node.outputs):
                if out and (out in self.readers or out in self._graph_outs()):
                    h = OPS[node.op](None, vals, self._attrs(node), k)
                    self.env[out] = h
                    if learned and h.dtype == "f32":
                        self.params[out] = from_values("F32", h.shape, h.values)
            return
        got = self.catalog(node, vals)
        if got is not None:
            self.env[got[0]] = got[1]
            return
        for k, out in enumerate(node.outputs):
            if out and (out in self.readers or out in self._graph_outs()):
                self.env[out] = self.op_block(node, k)

    def _graph_outs(self) -> set:
        return {o.name for o in self.g.outputs}

    def _attrs(self, node) -> dict:
        return {k: host_of_raw(a) if isinstance(a, RawTensor) else a
                for k, a in node.attrs.items() if a is not None}  # fmt: skip

    def _free_dims(self, wanted: tuple) -> dict:
        """Each dim in ``wanted`` every input shares at its axis (batch 0, seq 1) with one
        exported size of 2 or more: sym -> (axis, size). With a size of 1 any axis of
        size 1 could hold it, and the graph keeps its sizes."""
        out = {}
        for sym, axis in (("batch", 0), ("seq", 1)):
            sizes = {vi.dims[axis] if len(vi.dims) > axis else 0 for vi in self._real_inputs()}
            size = sizes.pop() if len(sizes) == 1 else 0
            if sym in wanted and size >= 2 and (axis == 0 or "batch" in out):
                out[sym] = (axis, size)
        return out

    def _real_inputs(self) -> list:
        return [vi for vi in self.g.inputs if vi.name not in self.g.initializers]

    def run(self, model_id: str) -> dict:
        self.check_ops()
        for vi in self._real_inputs():
            name = _ident(vi.name, "input")
            # a free leading dim is the record's batch; a static graph names the dims it
            # follows (``free``) and keeps the others
            dims = [_ident(d, "dim") if isinstance(d, str) else d for d in vi.dims]
            if dims and isinstance(dims[0], str):
                dims[0] = "batch"
            for sym, (axis, _) in self.free.items():
                dims[axis] = sym
            dtype = _RECORD_DTYPE.get(vi.dtype or "F32", "i32")
            self.inputs[name] = {"shape": dims, "dtype": dtype}
            self.env[vi.name] = Run(name)
            if self.static:
                fixed = list(vi.dims)  # static: every dim a number
                self.probe[name] = zeros(fixed, dtype, "null")
                for sym, (axis, value) in self.free.items():
                    alt = list(fixed)
                    alt[axis] = value + 1
                    self.alt[sym][name] = zeros(alt, dtype, "null")
                    self.at[sym][name] = (axis, 1)
        for node in self.g.nodes:
            try:
                self.node(node)
            except ScellisError as e:
                raise ScellisError(f"{self.where}: {node.label()}: {e}") from None
        outputs = []
        for vi in self.g.outputs:
            v = self.env.get(vi.name)
            if not isinstance(v, Run) or v.src in self.inputs or v.on_host:
                raise ScellisError(f"{self.where}: graph output {vi.name!r} is not a model tensor")
            outputs.append(v.src)
            for sym, (axis, _) in self.free.items():
                if self.at[sym].get(v.src, (None,))[0] != axis:
                    raise FixedBatch(f"graph output {vi.name!r} does not follow {sym}")
        return {"model": model_id, "inputs": self.inputs, "blocks": self.blocks,
                "outputs": outputs, "determinism_tier": "debug", "seed": 0}  # fmt: skip


def import_graph(model: proto.Model, where: str, model_id: str) -> tuple[GraphImporter, dict]:
    """The op-level record of ``model``: a fixed-shape graph follows any batch and length
    where it allows it (``batch``), else any batch, else keeps the sizes it was exported
    with."""
    for free in (("batch", "seq"), ("batch",)):
        imp = GraphImporter(model, where, free)
        try:
            return imp, imp.run(model_id)
        except FixedBatch:
            pass
    imp = GraphImporter(model, where, ())
    return imp, imp.run(model_id)
