"""Which initializers of an ONNX graph are one torch parameter read twice (codecs layer).

A language model whose LM head reuses its token embedding (GPT-2) reaches ONNX as an
embedding table read by a Gather and, for the head, either that same initializer read
by a Gemm with ``transB`` or (what both torch exporters write) a second initializer
holding its transpose: the exporter folded ``weight.T``. Imported as two parameters,
training would update two tables that torch updates as one.

Why roles and not names: both exporters merge initializers of equal VALUE (dynamo
through onnxscript's initializer deduplication, TorchScript through its own), keeping
one name. An untrained model's LayerNorm weights (all ones), zero biases and the layers
``nn.TransformerEncoder`` deep-copies all reach ONNX as one initializer read by every
layer, under the first layer's name; the reading nodes' scopes name each layer alike
whether or not torch shared the tensor. So one initializer read by several nodes of
the SAME role (norm by norm, dense by dense) is kept as separate copies, one per
reader: sharing them would train distinct layers as one. The tie kept is the one whose
roles say so: a table read as an embedding (Gather on axis 0) and as a dense weight
[vocab, width] (directly, or as its exact transpose). A uniform table (every element
equal: what deduplication merges without any tie) is never tied.
"""

from __future__ import annotations

from ..raw import RawTensor
from .values import transpose2


def _uniform(t: RawTensor) -> bool:
    vals = t.values()
    return all(v == vals[0] for v in vals)


def _tables(nodes, params: dict) -> list[str]:
    """Learned 2-d initializers read as embedding tables (Gather on axis 0)."""
    out = []
    for n in nodes:
        name = n.inputs[0] if n.inputs else ""
        if n.op == "Gather" and n.attrs.get("axis", 0) == 0 and name in params:
            t = params[name]
            if len(t.shape) == 2 and not _uniform(t) and name not in out:
                out.append(name)
    return out


def _dense_weights(nodes) -> dict[str, bool]:
    """Initializers read as a dense product's weight -> whether read as [out, in]."""
    out: dict[str, bool] = {}
    for n in nodes:
        if n.op == "MatMul" and len(n.inputs) > 1:
            out.setdefault(n.inputs[1], False)
        elif n.op == "Gemm" and len(n.inputs) > 1 and not n.attrs.get("transA", 0):
            out.setdefault(n.inputs[1], bool(n.attrs.get("transB", 0)))
    return out


def tied_heads(nodes, params: dict) -> dict[str, str]:
    """Dense weight initializer -> the embedding table initializer it is tied to."""
    dense = _dense_weights(nodes)
    ties: dict[str, str] = {}
    for table in _tables(nodes, params):
        t = params[table]
        if dense.get(table):  # the table itself, read as [vocab, width] by a Gemm
            ties[table] = table
        flipped = transpose2(t)
        for name, rows_out in dense.items():
            w = params.get(name)
            if w is None or rows_out or name == table or name in ties:
                continue
            if tuple(w.shape) == tuple(flipped.shape) and w.data == flipped.data:
                ties[name] = table
    return ties
