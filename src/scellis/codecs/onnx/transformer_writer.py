"""Transformer blocks as ONNX nodes (codecs layer): positions, attention, layers, heads.

Written as torch.onnx.export writes a hand-made pre-norm layer (opset 17): q, k and v
projections (MatMul + Add), Reshape to [B, T, H, D] with 0 for the dims kept (so any
batch and length run), Transpose to heads, q k^T scaled by 1/sqrt(D), a causal
additive mask built from the length (ConstantOfShape of the most negative f32, Trilu
above the diagonal), Softmax, the product with v, heads merged back and the output
projection. Rotary positions, grouped key/value heads, RMS norms and gated MLPs have
no form here and are refused by name.
"""

from __future__ import annotations

import math
import struct

from ...base.errors import ScellisError
from ..raw import RawTensor
from .writer import Graph, activation, dense

MASKED = -3.4028234663852886e38  # the catalog's masked score: exp gives 0, never NaN
TRANSFORMER_BLOCKS = ("nn/learned_position", "nn/attention", "nn/transformer_block",
                      "nn/transformer", "nn/lm_head")  # fmt: skip


def _length(g: Graph, x: str, scope: str) -> str:
    """The sequence length of [B, T, E] ``x`` as a 1-vector."""
    shape = g.node("Shape", [x], scope)[0]
    t = g.node("Gather", [shape, g.const(scope, "I64", (), [1])], scope, axis=0)[0]
    return g.node("Unsqueeze", [t, g.const(scope, "I64", (1,), [0])], scope)[0]


def position(g: Graph, x: str, name: str, w: RawTensor) -> str:
    """x + weight[:T]."""
    table = g.init(f"{name}.weight", w)
    zero, axis = g.const(name, "I64", (1,), [0]), g.const(name, "I64", (1,), [0])
    rows = g.node("Slice", [table, zero, _length(g, x, name), axis], name)[0]
    return g.node("Add", [x, rows], name)[0]


def _refuse(name: str, spec: dict, block: str) -> None:
    kv = spec.get("num_kv_heads")
    bad = [k for k, ok in (("rotary", not spec.get("rotary")),
                           ("num_kv_heads", kv in (None, spec.get("num_heads"))),
                           ("norm", spec.get("norm", "layer") == "layer"),
                           ("mlp", spec.get("mlp", "plain") == "plain"),
                           ("head_dim", spec.get("head_dim") is None),
                           ("window", spec.get("window") is None)) if not ok]  # fmt: skip
    if bad:
        raise ScellisError(f"block {name!r}: {block} with {', '.join(bad)} has no ONNX export here")


def attention(g: Graph, x: str, name: str, w: dict, E: int, H: int, causal: bool) -> str:
    D = E // H
    heads = g.const(name, "I64", (4,), [0, 0, H, D])

    def proj(part: str, perm) -> str:
        y = _linear(g, x, f"{name}.{part}", w)
        y = g.node("Reshape", [y, heads], name)[0]
        return g.node("Transpose", [y], name, perm=perm)[0]

    q, k, v = proj("q", [0, 2, 1, 3]), proj("k", [0, 2, 3, 1]), proj("v", [0, 2, 1, 3])
    s = g.node("MatMul", [q, k], name)[0]
    s = g.node("Mul", [s, g.const(name, "F32", (), [1.0 / math.sqrt(D)])], name)[0]
    if causal:
        t = _length(g, x, name)
        square = g.node("Concat", [t, t], name, axis=0)[0]
        fill = RawTensor("F32", (1,), struct.pack("<f", MASKED))
        full = g.node("ConstantOfShape", [square], name, value=fill)[0]
        mask = g.node("Trilu", [full, g.const(name, "I64", (), [1])], name, upper=1)[0]
        s = g.node("Add", [s, mask], name)[0]
    p = g.node("Softmax", [s], name, axis=-1)[0]
    y = g.node("MatMul", [p, v], name)[0]
    y = g.node("Transpose", [y], name, perm=[0, 2, 1, 3])[0]
    y = g.node("Reshape", [y, g.const(name, "I64", (3,), [0, 0, E])], name)[0]
    return _linear(g, y, f"{name}.o", w)


def _linear(g: Graph, x: str, path: str, w: dict) -> str:
    return dense(g, x, path, w[f"{path}.weight"], w.get(f"{path}.bias"))


def _layer_norm(g: Graph, x: str, name: str, w: dict, d: int, eps: float) -> str:
    ins = [x, g.init(f"{name}.weight", w[f"{name}.weight"])]
    if f"{name}.bias" in w:
        ins.append(g.init(f"{name}.bias", w[f"{name}.bias"]))
    return g.node("LayerNormalization", ins, name, axis=-1, epsilon=float(eps))[0]


def layer(g: Graph, x: str, name: str, spec: dict, w: dict) -> str:
    """One transformer block (pre- or post-norm), its parameters under ``name``."""
    _refuse(name, spec, "a transformer")
    d, eps = spec["d_model"], spec.get("eps", 1e-5) or 1e-5
    causal = spec.get("kind", "encoder") == "decoder"

    def attn(h):
        return attention(g, h, f"{name}.attn", w, d, spec["num_heads"], causal)

    def mlp(h):
        h = dense(
            g, h, f"{name}.mlp.fc1", w[f"{name}.mlp.fc1.weight"], w.get(f"{name}.mlp.fc1.bias")
        )
        h = activation(g, h, f"{name}.mlp", spec.get("activation", "gelu"))
        return dense(
            g, h, f"{name}.mlp.fc2", w[f"{name}.mlp.fc2.weight"], w.get(f"{name}.mlp.fc2.bias")
        )

    def ln(h, k):
        return _layer_norm(g, h, f"{name}.{k}", w, d, eps)

    if spec.get("norm_first", True):
        x = g.node("Add", [x, attn(ln(x, "ln1"))], name)[0]
        return g.node("Add", [x, mlp(ln(x, "ln2"))], name)[0]
    x = ln(g.node("Add", [x, attn(x)], name)[0], "ln1")
    return ln(g.node("Add", [x, mlp(x)], name)[0], "ln2")


def transformer_block(g: Graph, x: str, name: str, spec: dict, w: dict) -> str:
    b = spec["block_id"]
    if b == "nn/learned_position":
        return position(g, x, name, w[f"{name}.weight"])
    if b == "nn/attention":
        _refuse(name, spec, "an attention")
        E, H = spec["embed_dim"], spec["num_heads"]
        return attention(g, x, name, w, E, H, bool(spec.get("causal")))
    if b == "nn/transformer_block":
        return layer(g, x, name, {"kind": "encoder", **spec}, w)
    if b == "nn/transformer":
        _refuse(name, spec, "a transformer")
        for i in range(spec["num_layers"]):
            x = layer(g, x, f"{name}.blocks.{i}", {"kind": "decoder", **spec}, w)
        if spec.get("final_norm", True):
            x = _layer_norm(g, x, f"{name}.ln_f", w, spec["d_model"], spec.get("eps", 1e-5))
        return x
    # nn/lm_head: logits over the vocabulary, with the embedding's weight when tied
    owner = spec.get("tie_to") or name
    return dense(g, x, name, w[f"{owner}.weight"], w.get(f"{name}.bias"))
