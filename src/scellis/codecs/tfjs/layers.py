"""Keras layers onto catalog blocks (codecs layer): one rule per layer class.

Each rule reads its layer's config and weights (Keras layouts) and adds blocks with
torch-laid-out weights: a Dense kernel [in, out] is a Linear's weight transposed; an LSTM
keeps Keras' gate order (i, f, c, o is torch's i, f, g, o) with kernels transposed and
the one bias as ``bias_ih`` (``bias_hh`` zero); a GRU's z, r, h become torch's r, z, n,
and a ``reset_after`` GRU's bias [2, 3u] is (input, recurrent); a Conv1D kernel
[k, in, out] becomes [out, in, k]. Shapes are followed (after the batch axis) so a weight
that does not fit its input is named with its layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...base.errors import ScellisError, shown
from ..onnx.values import reorder_gates, take_rows, transpose2
from ..raw import RawTensor
from .topology import Layer, named

# Keras activation names (as TF.js serialises them) -> nn/activation functions
ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "softmax": "softmax",
               "swish": "silu", "silu": "silu", "gelu": "gelu",
               "gelu_new": "gelu_tanh"}  # fmt: skip
GATES = ("sigmoid", "hard_sigmoid")
_ID = re.compile(r"[^A-Za-z0-9_]")


@dataclass
class Sym:
    src: str  # the block or input that makes the value
    shape: list  # dims after the batch axis: ints, or a name where unknown


def ident(name: str) -> str:
    s = _ID.sub("_", name).strip("_") or "layer"
    return s if s[0].isalpha() or s[0] == "_" else f"l_{s}"


class Builder:
    """The record's blocks and weights, built layer by layer."""

    def __init__(self, tensors: dict[str, RawTensor], where: str, layer_names=()):
        self.where = where
        self.blocks: dict[str, dict] = {}
        self.weights: dict[str, RawTensor] = {}
        self.inputs: dict[str, dict] = {}
        self.by_layer: dict[str, dict[str, RawTensor]] = {}
        self.used: set[str] = set()
        for full, t in tensors.items():
            # "dense_1/kernel", Keras' "lstm/lstm_cell/kernel" or "model/dense/kernel:0":
            # the first component that names a layer, and the weight's kind last
            parts = full.split(":")[0].split("/")
            owner = next((p for p in parts[:-1] if p in layer_names), parts[0])
            self.by_layer.setdefault(owner, {})[parts[-1]] = (full, t)

    def weight(self, lay: Layer, kind: str, dims: int) -> RawTensor:
        full, t = self.by_layer.get(lay.name, {}).get(kind, (None, None))
        if t is None:
            raise ScellisError(f"{self.where}: {named(lay)} has no {kind} weight")
        if len(t.shape) != dims:
            raise ScellisError(
                f"{self.where}: {named(lay)}: {kind} has shape "
                f"{list(t.shape)}, expected {dims} axes"
            )
        self.used.add(full)
        return t

    def unused(self) -> list[str]:
        return sorted(
            f for d in self.by_layer.values() for f, _ in d.values() if f not in self.used
        )

    def name(self, base: str) -> str:
        name, k = ident(base), 2
        while name in self.blocks or name in self.inputs:
            name, k = f"{ident(base)}_{k}", k + 1
        return name

    def block(self, lay: Layer, x: Sym, block_id: str, fields: dict, weights: dict,
              suffix: str = "") -> str:  # fmt: skip
        name = self.name(lay.name + suffix)
        self.blocks[name] = {"block_id": block_id, "in": x.src, **fields}
        for k, t in weights.items():
            self.weights[f"{name}.{k}"] = t
        return name

    def features(self, lay: Layer, x: Sym, want: int, what: str) -> None:
        have = x.shape[-1] if x.shape else None
        if isinstance(have, int) and have != want:
            raise ScellisError(
                f"{self.where}: {named(lay)}: its {what} takes {want} "
                f"features, its input has {have}"
            )

    def activation(self, lay: Layer, x: Sym, key: str = "activation") -> Sym:
        fn = lay.config.get(key) or "linear"
        if fn == "linear":
            return x
        if fn not in ACTIVATIONS:
            raise ScellisError(
                f"{self.where}: {named(lay)}: activation {shown(repr(fn), 60)} is not "
                f"supported; supported: linear, {', '.join(sorted(ACTIVATIONS))}"
            )
        suffix = "" if lay.kind == "Activation" else "_act"
        fields = {"function": ACTIVATIONS[fn]}
        return Sym(self.block(lay, x, "nn/activation", fields, {}, suffix), list(x.shape))

    def refuse(self, lay: Layer, why: str):
        raise ScellisError(f"{self.where}: {named(lay)}: {why}")


def _one(v, key: str) -> int:
    """A Keras size that may be written as a list of one: ``kernel_size: [3]``."""
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    if type(v) is not int or v < 1:
        raise ValueError(f"{key} must be a positive integer, got {shown(repr(v), 60)}")
    return v


def _flag(cfg: dict, key: str, default: bool) -> bool:
    v = cfg.get(key)
    return default if v is None else bool(v)


def dense(b: Builder, lay: Layer, x: Sym) -> Sym:
    k = b.weight(lay, "kernel", 2)
    n_in, n_out = k.shape
    b.features(lay, x, n_in, "kernel")
    bias = _flag(lay.config, "use_bias", True)
    w = {"weight": transpose2(k)}
    if bias:
        w["bias"] = b.weight(lay, "bias", 1)
    fields = {"in_features": n_in, "out_features": n_out, **({} if bias else {"bias": False})}
    y = Sym(b.block(lay, x, "nn/linear", fields, w), [*x.shape[:-1], n_out])
    return b.activation(lay, y)


def embedding(b: Builder, lay: Layer, x: Sym) -> Sym:
    if lay.config.get("mask_zero"):
        b.refuse(lay, "mask_zero (masking later layers' steps) is not supported")
    if x.src not in b.inputs:
        b.refuse(lay, "an Embedding reads token ids, a model input")
    b.inputs[x.src]["dtype"] = "i32"
    t = b.weight(lay, "embeddings", 2)
    fields = {"num_embeddings": t.shape[0], "embedding_dim": t.shape[1]}
    return Sym(b.block(lay, x, "nn/embedding", fields, {"weight": t}), [*x.shape, t.shape[1]])


def _recurrent_checks(b: Builder, lay: Layer, x: Sym) -> str:
    c = lay.config
    if len(x.shape) != 2:
        b.refuse(lay, f"takes [batch, time, features], got {len(x.shape) + 1} axes")
    for key in ("return_state", "go_backwards", "stateful"):
        if c.get(key):
            b.refuse(lay, f"{key} is not supported")
    if c.get("dropout") or c.get("recurrent_dropout"):
        b.refuse(lay, "dropout inside the layer is not supported (a Dropout layer is)")
    if (c.get("activation") or "tanh") != "tanh":
        b.refuse(lay, f"activation {shown(repr(c.get('activation')), 60)}; supported: tanh")
    gate = c.get("recurrent_activation") or "hard_sigmoid"
    if gate not in GATES:
        b.refuse(
            lay, f"recurrent_activation {shown(repr(gate), 60)}; supported: {', '.join(GATES)}"
        )
    return gate


def recurrent(b: Builder, lay: Layer, x: Sym) -> Sym:
    gate, gru = _recurrent_checks(b, lay, x), lay.kind == "GRU"
    G = 3 if gru else 4
    k, rk = b.weight(lay, "kernel", 2), b.weight(lay, "recurrent_kernel", 2)
    n_in, H = k.shape[0], rk.shape[0]
    if k.shape[1] != G * H or rk.shape[1] != G * H:
        b.refuse(lay, f"kernel {list(k.shape)} and recurrent_kernel {list(rk.shape)} do not "
                      f"hold {G} gates of {H} units")  # fmt: skip
    b.features(lay, x, n_in, "kernel")
    order = [1, 0, 2] if gru else [0, 1, 2, 3]  # Keras z, r, h -> torch r, z, n
    rows = lambda t: reorder_gates(t, order, H)  # noqa: E731
    w = {"weight_ih_l0": rows(transpose2(k)), "weight_hh_l0": rows(transpose2(rk))}
    reset_after = gru and _flag(lay.config, "reset_after", False)
    bias = _flag(lay.config, "use_bias", True)
    if bias:
        t = b.weight(lay, "bias", 2 if reset_after else 1)
        if t.shape[-1] != G * H or (reset_after and t.shape[0] != 2):
            b.refuse(lay, f"bias of shape {list(t.shape)} for {G} gates of {H} units")
        ih, hh = (take_rows(t, 0, 1), take_rows(t, 1, 2)) if reset_after else (t, None)
        zero = RawTensor("F32", (G * H,), bytes(4 * G * H))
        w["bias_ih_l0"] = rows(RawTensor("F32", (G * H,), ih.data))
        w["bias_hh_l0"] = zero if hh is None else rows(RawTensor("F32", (G * H,), hh.data))
    fields = {"input_size": n_in, "hidden_size": H, "num_layers": 1}
    if not bias:
        fields["bias"] = False
    last = not _flag(lay.config, "return_sequences", False)
    if last:
        fields["output"] = "last"
    if gate != "sigmoid":
        fields["recurrent_activation"] = gate
    if gru and not reset_after:
        fields["reset_after"] = False
    name = b.block(lay, x, "nn/gru" if gru else "nn/lstm", fields, w)
    return Sym(name, [H] if last else [x.shape[0], H])


def _conv_length(T, k: int, s: int, d: int, padding: str):
    if not isinstance(T, int):
        return T
    span = d * (k - 1)
    n = T - span if padding == "valid" else T
    return (n - 1) // s + 1 if n >= 1 else n


def conv1d(b: Builder, lay: Layer, x: Sym) -> Sym:
    c = lay.config
    if (c.get("data_format") or "channels_last") != "channels_last":
        b.refuse(lay, "data_format channels_first is not supported")
    if (c.get("groups") or 1) != 1:
        b.refuse(lay, "grouped convolutions are not supported")
    if len(x.shape) != 2:
        b.refuse(lay, f"takes [batch, time, channels], got {len(x.shape) + 1} axes")
    t = b.weight(lay, "kernel", 3)
    k, c_in, c_out = t.shape
    b.features(lay, x, c_in, "kernel")
    s, d = _one(c.get("strides", 1), "strides"), _one(c.get("dilation_rate", 1), "dilation_rate")
    padding = c.get("padding") or "valid"
    if padding not in ("valid", "same", "causal"):
        b.refuse(lay, f"padding {shown(repr(padding), 60)}; supported: valid, same, causal")
    if padding == "same" and s != 1:
        b.refuse(lay, "padding 'same' with strides > 1 is not supported")
    T = _conv_length(x.shape[0], k, s, d, padding)
    if isinstance(T, int) and T < 1:
        b.refuse(lay, f"its window ({d * (k - 1) + 1} steps) is longer than the input")
    # [k, in, out] -> [out, in, k]: [k*in, out]^T is [out, k, in]; each out's [k, in]^T
    rows = transpose2(RawTensor("F32", (k * c_in, c_out), t.data))
    per = [transpose2(RawTensor("F32", (k, c_in), take_rows(rows, o, o + 1).data))
           for o in range(c_out)]  # fmt: skip
    w = {"weight": RawTensor("F32", (c_out, c_in, k), b"".join(p.data for p in per))}
    bias = _flag(c, "use_bias", True)
    if bias:
        w["bias"] = b.weight(lay, "bias", 1)
    fields = {"in_channels": c_in, "out_channels": c_out, "kernel_size": k, "stride": s,
              "padding": padding, "dilation": d, **({} if bias else {"bias": False})}  # fmt: skip
    y = Sym(b.block(lay, x, "nn/conv1d", fields, w), [T, c_out])
    return b.activation(lay, y)


def layer_norm(b: Builder, lay: Layer, x: Sym) -> Sym:
    c = lay.config
    axis = c.get("axis", -1)
    axis = axis[0] if isinstance(axis, list) and len(axis) == 1 else axis
    if axis not in (-1, len(x.shape)):
        b.refuse(lay, f"normalises axis {shown(repr(c.get('axis')), 60)}; supported: the last")
    center, scale = _flag(c, "center", True), _flag(c, "scale", True)
    if center and not scale:
        b.refuse(lay, "center without scale is not supported")
    eps = c.get("epsilon", 1e-3)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps < 0:
        b.refuse(lay, f"epsilon {shown(repr(eps), 60)}")
    n = x.shape[-1] if x.shape else None
    w = {}
    if scale:
        w["weight"] = b.weight(lay, "gamma", 1)
        n = w["weight"].shape[0]
        if center:
            w["bias"] = b.weight(lay, "beta", 1)
    if not isinstance(n, int):
        b.refuse(lay, "its input's feature count is unknown")
    b.features(lay, x, n, "gamma")
    fields = {"normalized_shape": n, "eps": float(eps)}
    if not scale:
        fields["elementwise_affine"] = False
    elif not center:
        fields["bias"] = False
    return Sym(b.block(lay, x, "nn/layer_norm", fields, w), list(x.shape))


def dropout(b: Builder, lay: Layer, x: Sym) -> Sym:
    p = lay.config.get("rate", 0.0)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        b.refuse(lay, f"rate {shown(repr(p), 60)} is not in [0, 1)")
    return Sym(b.block(lay, x, "nn/dropout", {"p": float(p)}, {}), list(x.shape))


def activation(b: Builder, lay: Layer, x: Sym) -> Sym:
    return b.activation(lay, x)


RULES = {"Dense": dense, "Embedding": embedding, "LSTM": recurrent, "GRU": recurrent,
         "Conv1D": conv1d, "LayerNormalization": layer_norm, "Dropout": dropout,
         "Activation": activation}  # fmt: skip
