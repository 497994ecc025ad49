"""Scaled dot-product attention in an ONNX graph, as both torch exporters write it (codecs
layer).

torch's ``scaled_dot_product_attention`` reaches ONNX as a chain: q and kᵀ each times
a scalar (dynamo splits the scale as sqrt on both sides; TorchScript's MHA scales q),
MatMul, optionally the scores times or over a scalar, plus a mask, Softmax on the last
axis, optionally the NaN guard (IsNaN, Where to 0), MatMul by v. Every value inside the
chain must be read by the chain alone; then the op-level importer makes it one
``nn/scaled_dot_product_attention`` block (the fused kernels' path) and otherwise keeps
its nodes. ``find`` reads structure only; the scalars and the mask are values the
importer checks when it reaches the chain's last MatMul.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...catalog.blocks.onnx_op import host as H
from .values import Run


@dataclass
class Chain:
    q: str
    kt: str
    v: str
    mask: str | None
    # (node, which input is the model tensor) of each scalar factor: Mul or Div
    factors: list = field(default_factory=list)
    inner: list = field(default_factory=list)  # the chain's nodes before the last MatMul


class _Graph:
    def __init__(self, nodes, outputs: set):
        self.outputs = outputs
        self.producer = {o: n for n in nodes for o in n.outputs if o}
        self.readers: dict[str, list] = {}
        for n in nodes:
            for i in n.inputs:
                self.readers.setdefault(i, []).append(n)

    def only(self, value: str, op: str):
        """The node making ``value`` if it is ``op`` and the chain is its sole reader."""
        n = self.producer.get(value)
        if n is None or n.op != op or value in self.outputs:
            return None
        return n if len(self.readers.get(value, [])) == 1 else None

    def sole_reader(self, value: str):
        readers = self.readers.get(value, [])
        return readers[0] if len(readers) == 1 and value not in self.outputs else None


def _scaled(g: _Graph, value: str, chain: Chain) -> str:
    """Peel scalar Mul/Div factors off ``value``: the tensor under them."""
    while True:
        n = g.only(value, "Mul") or g.only(value, "Div")
        if n is None or len(n.inputs) != 2:
            return value
        chain.factors.append(n)
        chain.inner.append(n)
        value = n.inputs[0]


def _guarded(g: _Graph, sm, chain: Chain) -> str | None:
    """The softmax's weights past an optional NaN guard (IsNaN, Where(nan, 0, w))."""
    out = sm.outputs[0]
    readers = g.readers.get(out, [])
    if len(readers) == 1:
        return out
    isnan = [n for n in readers if n.op == "IsNaN"]
    where = [n for n in readers if n.op == "Where" and n.inputs[2:] == [out]]
    if len(readers) != 2 or len(isnan) != 1 or len(where) != 1:
        return None
    if where[0].inputs[0] != isnan[0].outputs[0] or len(g.readers[isnan[0].outputs[0]]) != 1:
        return None
    chain.inner += [isnan[0], where[0]]
    return where[0].outputs[0]


def _chain(g: _Graph, sm) -> tuple | None:
    if sm.attrs.get("axis", -1) not in (-1, 3) or not sm.inputs:
        return None
    chain = Chain("", "", "", None)
    weights = _guarded(g, sm, chain)
    last = g.sole_reader(weights) if weights else None
    if last is None or last.op != "MatMul" or last.inputs[0] != weights:
        return None
    scores, add = sm.inputs[0], g.only(sm.inputs[0], "Add")
    if add is not None:
        if g.producer.get(add.inputs[0]) is None or g.producer[add.inputs[0]].op not in (
            "MatMul", "Mul", "Div"
        ):  # fmt: skip
            return None
        scores, chain.mask = add.inputs[0], add.inputs[1]
        chain.inner.append(add)
    mm = g.only(_scaled(g, scores, chain), "MatMul")
    if mm is None:
        return None
    chain.inner.append(mm)
    chain.q = _scaled(g, mm.inputs[0], chain)
    chain.kt = _scaled(g, mm.inputs[1], chain)
    chain.v = last.inputs[1]
    chain.inner.append(sm)
    return last, chain


def find(nodes, outputs: set) -> dict[int, Chain]:
    """id of each chain's last MatMul -> the chain."""
    g = _Graph(nodes, outputs)
    found = {}
    for n in nodes:
        if n.op == "Softmax":
            got = _chain(g, n)
            if got is not None:
                found[id(got[0])] = got[1]
    return found


def mask_kind(values: list, shape: tuple) -> str | None:
    """A constant additive mask as ``none`` (zeros), ``causal`` (0 on and below the
    diagonal of a square [T, T], very negative above it), or None (anything else),
    alike for every leading index (batch, head)."""
    if len(shape) < 2:
        return "none" if all(v == 0 for v in values) else None
    t, s = shape[-2], shape[-1]
    first = values[: t * s]
    if any(values[k : k + t * s] != first for k in range(0, len(values), t * s)):
        return None
    if all(v == 0 for v in first):
        return "none"
    causal = t == s and all(
        (first[i * s + j] == 0) if j <= i else (first[i * s + j] <= -1e9)
        for i in range(t)
        for j in range(s)
    )
    return "causal" if causal else None


class AttentionChains:
    """The op-level importer's side of this (``GraphImporter`` mixes it in): a chain found
    by ``find`` becomes one block when its values allow it."""

    def _attention(self, node, chain) -> bool:
        """The chain as one ``nn/scaled_dot_product_attention`` block, if its scalars are
        constants and its mask is none, causal, or a model tensor."""
        ins = [self.env.get(v) for v in (chain.q, chain.kt, chain.v)]
        if not all(isinstance(v, Run) and not v.on_host for v in ins):
            return False
        scale = 1.0
        for f in chain.factors:
            s = self.env.get(f.inputs[1])
            if not isinstance(s, H.Host) or s.numel != 1 or s.dtype != "f32":
                return False
            scale = scale * s.values[0] if f.op == "Mul" else scale / s.values[0]
        srcs, causal = [v.src for v in ins], False
        mask = self.env.get(chain.mask) if chain.mask else None
        if isinstance(mask, H.Host):
            kind = mask_kind(list(mask.values), mask.shape)
            if kind is None:
                return False
            causal = kind == "causal"
        elif isinstance(mask, Run) and not mask.on_host:
            srcs.append(mask.src)
        elif mask is not None:
            return False
        fields = {"scale": float(f"{scale:.9g}"), "causal": causal}
        name = self.add(node.name or node.outputs[0], "nn/scaled_dot_product_attention", srcs,
                        fields, {})  # fmt: skip
        self.env[node.outputs[0]] = Run(name)
        return True
