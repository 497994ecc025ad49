"""ONNX node rules (codecs layer): each op type's handler over the importer's values.

A handler takes the importer and a node and returns the node's output values. Glue
ops (Shape, Gather, Concat, Unsqueeze, ConstantOfShape, Slice, Squeeze, Transpose,
Cast) fold constants and track layouts; compute ops become catalog blocks: Gemm and
MatMul(+Add) -> ``nn/linear``, Relu/Tanh/Sigmoid/Gelu and the exact-GELU chain (Div by
sqrt 2, Erf, Add 1, Mul x, Mul 0.5) -> ``nn/activation``, LayerNormalization ->
``nn/layer_norm``, LSTM/GRU (+ the transposes and squeezes around them, the last-step
Gather after) -> ``nn/lstm``/``nn/gru`` with torch's gate order, Gather of weight rows by
token ids -> ``nn/embedding``, ``x + weight[:T]`` -> ``nn/learned_position``. Attention
stages (Reshape to heads, MatMul of two activations, scale, mask, Softmax) and residual
Adds are ``attn``'s; constant arithmetic (Sqrt, Expand, Trilu, Equal, Where,
integer Div) is ``fold``'s.
"""

from __future__ import annotations

import math

from ...base.errors import ScellisError
from ..raw import from_values
from . import attn, fold
from .fold import known
from .values import (
    Const,
    Opaque,
    Partial,
    ShapeVec,
    Sym,
    Zeros,
    as_f32,
    const_int,
    reorder_gates,
    squeeze0,
    take_rows,
    transpose2,
)


def _attr_const(node) -> Const:
    a = node.attrs
    if a.get("value") is not None:
        return Const(a["value"])
    for k, code in (("value_float", "F32"), ("value_int", "I64")):
        if a.get(k) is not None:
            return Const(from_values(code, (), [a[k]]))
    for k, code in (("value_floats", "F32"), ("value_ints", "I64")):
        if a.get(k) is not None:
            return Const(from_values(code, (len(a[k]),), list(a[k])))
    raise ScellisError(f"{node.label()}: a Constant of an unsupported kind")


def constant(imp, node):
    return [_attr_const(node)]


def identity(imp, node):
    return [imp.get(node.inputs[0])] + [Opaque("a dropout mask")] * (len(node.outputs) - 1)


def shape(imp, node):
    x = imp.get(node.inputs[0])
    if isinstance(x, Sym):
        return [ShapeVec(list(x.shape))]
    if isinstance(x, Const):
        return [const_int((len(x.t.shape),), x.t.shape)]
    if isinstance(x, Partial) and "shape" in x.data:
        return [ShapeVec(attn.shape_of(x))]
    raise ScellisError(f"{node.label()}: Shape of an unsupported value")


def _index(c: Const, n: int) -> int:
    i = int(c.scalar())
    return i + n if i < 0 else i


def gather(imp, node):
    x, idx = imp.get(node.inputs[0]), imp.get(node.inputs[1])
    axis = node.attrs.get("axis", 0) or 0
    if isinstance(x, Const) and isinstance(idx, Sym) and len(x.t.shape) == 2 and axis == 0:
        return [imp.embedding(node, idx, x.t)]  # rows of a weight picked by token ids
    if not isinstance(idx, Const):
        raise ScellisError(f"{node.label()}: Gather with computed indices")
    if isinstance(x, ShapeVec):
        if idx.t.shape:
            return [known(ShapeVec([x.dims[_index(Const(from_values("I64", (), [i])), len(x.dims))]
                                    for i in idx.values]))]  # fmt: skip
        d = x.dims[_index(idx, len(x.dims))]
        return [const_int((), [d]) if isinstance(d, int) else ShapeVec([d])]
    if isinstance(x, Const) and len(x.t.shape) == 1 and axis == 0:
        vals = x.values
        picked = [vals[_index(Const(from_values("I64", (), [i])), len(vals))] for i in idx.values]
        return [Const(from_values(x.t.dtype, idx.t.shape, picked))]
    if isinstance(x, Sym):
        return [imp.last_step(node, x, axis, idx)]
    raise ScellisError(f"{node.label()}: Gather of an unsupported value")


def _axes(imp, node, key="axes") -> list[int] | None:
    if len(node.inputs) > 1 and node.inputs[1]:
        c = imp.get(node.inputs[1])
        if not isinstance(c, Const):
            raise ScellisError(f"{node.label()}: computed axes")
        return [int(v) for v in c.values]
    got = node.attrs.get(key)
    return list(got) if got is not None else None


def unsqueeze(imp, node):
    x = imp.get(node.inputs[0])
    axes = _axes(imp, node) or []
    if isinstance(x, ShapeVec) and axes == [0]:
        return [x]  # a gathered scalar dim made a 1-vector again
    if isinstance(x, Const):
        shape = list(x.t.shape)
        for a in sorted(a % (len(shape) + len(axes)) for a in axes):
            shape.insert(a, 1)
        return [Const(from_values(x.t.dtype, shape, x.values))]
    raise ScellisError(f"{node.label()}: Unsqueeze of an unsupported value")


def squeeze(imp, node):
    x = imp.get(node.inputs[0])
    axes = _axes(imp, node)
    if isinstance(x, Sym) and x.tag == "rnn_y" and axes == [1]:
        T, _, B, H = x.shape
        return [Sym(x.src, [T, B, H], (1, 0, 2), "seq")]
    if isinstance(x, Const):
        shape = [s for i, s in enumerate(x.t.shape) if not (s == 1 and (axes is None or i in axes))]
        return [Const(from_values(x.t.dtype, shape, x.values))]
    if isinstance(x, Zeros):
        return [x]
    raise ScellisError(f"{node.label()}: Squeeze of an unsupported value")


def concat(imp, node):
    parts = [imp.get(n) for n in node.inputs]
    dims: list = []
    for p in parts:
        if isinstance(p, ShapeVec):
            dims.extend(p.dims)
        elif isinstance(p, Const) and len(p.t.shape) == 1:
            dims.extend(int(v) for v in p.values)
        else:
            raise ScellisError(f"{node.label()}: Concat of tensors (only shape vectors fold)")
    if all(isinstance(d, int) for d in dims):
        return [const_int((len(dims),), dims)]
    return [ShapeVec(dims)]


def constant_of_shape(imp, node):
    v = node.attrs.get("value")
    if v is not None and any(x != 0 for x in v.values()):
        raise ScellisError(f"{node.label()}: ConstantOfShape with a non-zero fill")
    return [Zeros()]


def _bounds(imp, node) -> list:
    """starts, ends, axes, steps: each a list of ints (a symbolic end stays a str)."""
    out = []
    for i in range(1, 5):
        if len(node.inputs) <= i or not node.inputs[i]:
            out.append(None)
            continue
        v = known(imp.get(node.inputs[i]))
        if isinstance(v, Const):
            out.append([int(d) for d in v.values])
        elif isinstance(v, ShapeVec):
            out.append(list(v.dims))
        else:
            raise ScellisError(f"{node.label()}: Slice with computed bounds")
    return out


def slice_(imp, node):
    x = imp.get(node.inputs[0])
    if isinstance(x, Zeros):
        return [x]
    bounds = _bounds(imp, node)
    if isinstance(x, ShapeVec):
        return [known(ShapeVec(fold.slice_vec(node, x.dims, *bounds)))]
    if isinstance(x, Const) and len(x.t.shape) == 1:
        vals = fold.slice_vec(node, x.values, *bounds)
        return [Const(from_values(x.t.dtype, (len(vals),), vals))]
    if isinstance(x, Partial) and x.kind == "rows":  # a slice of a slice: constants only
        if x.data["const"] is None:
            return [fold.table_grid(node, x, *bounds)]
        x = x.data["const"]
    if isinstance(x, Const) and len(x.t.shape) == 2:
        return [fold.rows(node, x, *bounds)]
    if isinstance(x, Const):
        return [fold.slice_const(node, x, *bounds)]
    raise ScellisError(f"{node.label()}: Slice of a model tensor is not supported")


def cast(imp, node):
    x = imp.get(node.inputs[0])
    if isinstance(x, (Sym, Zeros, ShapeVec)):
        return [x]
    if isinstance(x, Partial) and x.kind == "grid" and node.attrs.get("to") in (1, 9):
        f, to = x.data["f"], bool if node.attrs.get("to") == 9 else float
        return [fold.grid(x.data["dims"], lambda i, j: to(f(i, j)), x.data["limit"])]
    if isinstance(x, Const):
        to = {1: "F32", 6: "I32", 7: "I64", 11: "F64", 9: "BOOL"}.get(node.attrs.get("to"))
        if to is None:
            raise ScellisError(f"{node.label()}: Cast to ONNX type {node.attrs.get('to')}")
        vals = x.values
        if to.startswith("I"):
            vals = [int(v) for v in vals]
        elif to == "BOOL":
            vals = [bool(v) for v in vals]
        else:
            vals = [float(v) for v in vals]
        return [Const(from_values(to, x.t.shape, vals))]
    raise ScellisError(f"{node.label()}: Cast of an unsupported value")


def transpose(imp, node):
    p = imp.get(node.inputs[0])
    if isinstance(p, Partial) and p.kind in ("heads", "ctx"):
        return [attn.transpose(node, p, tuple(node.attrs.get("perm") or (3, 2, 1, 0)))]
    x = imp.sym(node, node.inputs[0], allow_perm=True)
    perm = tuple(node.attrs.get("perm") or reversed(range(len(x.shape))))
    total = tuple((x.perm or tuple(range(len(perm))))[p] for p in perm)
    shape = [x.shape[p] for p in perm]
    return [Sym(x.src, shape, None if total == tuple(range(len(total))) else total, x.tag)]


# -- dense -------------------------------------------------------------------------------


def gemm(imp, node):
    a = node.attrs
    if (
        a.get("transA", 0)
        or (a.get("alpha", 1.0) or 1.0) != 1.0
        or (a.get("beta", 1.0) or 1.0) != 1.0
    ):
        raise ScellisError(f"{node.label()}: Gemm with transA or alpha/beta other than 1")
    x = imp.get(node.inputs[0])
    x = x if isinstance(x, Partial) and x.kind == "pool" else imp.sym(node, node.inputs[0])
    w = imp.const(node, node.inputs[1]).t
    w = w if a.get("transB", 0) else transpose2(w)
    b = imp.const(node, node.inputs[2]).t if len(node.inputs) > 2 and node.inputs[2] else None
    if b is not None and len(b.shape) == 2 and b.shape[0] == 1:
        b = squeeze0(b)
    return [imp.linear(node, x, w, b)]


def matmul(imp, node):
    right = imp.get(node.inputs[1])
    if isinstance(right, Const) and len(right.t.shape) == 2:
        x = imp.get(node.inputs[0])
        pool = x.data["how"] if isinstance(x, Partial) and x.kind == "pool" else None
        if isinstance(x, Partial) and x.kind == "merged":
            return [Partial("matmul", x, {"w": transpose2(right.t), "node": node})]
        x = x.base if pool else imp.sym(node, node.inputs[0])
        return [Partial("matmul", x, {"w": transpose2(right.t), "node": node, "pool": pool})]
    left = imp.get(node.inputs[0])
    if isinstance(left, Partial) and isinstance(right, Partial):
        return [attn.matmul(node, left, right)]
    raise ScellisError(f"{node.label()}: MatMul of two model tensors (attention) is not supported")


def _is(c, value: float, tol: float = 1e-6) -> bool:
    if not isinstance(c, Const) or c.t.numel != 1:
        return False
    return abs(float(c.scalar()) - value) <= tol * max(1.0, abs(value))


def _fold2(node, a, b):
    a, b = known(a), known(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return fold.binary(node, a, b)
    return None


def add(imp, node):
    a, b = imp.get(node.inputs[0]), imp.get(node.inputs[1])
    if (c := _fold2(node, a, b)) is not None:
        return [c]
    for x, y in ((a, b), (b, a)):
        if (
            isinstance(x, Partial)
            and x.kind == "scores"
            and (isinstance(y, Const) or (isinstance(y, Partial) and y.kind == "grid"))
        ):
            return [attn.additive_mask(node, x, y)]
        if isinstance(x, Sym) and isinstance(y, Partial) and y.kind == "rows":
            return [attn.position(imp, node, imp.sym(node, node.inputs[a is not x]), y)]
    if all(isinstance(v, Sym) or (isinstance(v, Partial) and v.kind == "matmul") for v in (a, b)):
        # a residual connection (an unbiased projection on either side is a linear now)
        return attn.residual(imp, node, imp.sym(node, node.inputs[0]),
                                  imp.sym(node, node.inputs[1]))  # fmt: skip
    if isinstance(b, Partial) or (isinstance(a, Const) and not isinstance(b, Const)):
        a, b = b, a
    if isinstance(a, Partial) and a.kind == "matmul" and isinstance(b, Const):
        bias = b.t if len(b.t.shape) == 1 else None
        if bias is None or bias.shape[0] != a.data["w"].shape[0]:
            raise ScellisError(f"{node.label()}: an Add after MatMul that is not a bias")
        return [imp.linear(a.data["node"], a.base, a.data["w"], bias, a.data.get("pool"))]
    if isinstance(a, Partial) and a.kind == "gelu_erf" and _is(b, 1.0):
        return [Partial("gelu_add", a.base)]
    raise ScellisError(f"{node.label()}: Add of these values has no catalog block")


def div(imp, node):
    x, c = imp.get(node.inputs[0]), imp.get(node.inputs[1])
    if (f := _fold2(node, x, c)) is not None:
        return [f]
    if isinstance(x, Partial) and x.kind in ("heads", "scores") and isinstance(c, Const):
        return [attn.scale(node, x, c, divide=True)]
    if isinstance(x, Partial) and x.kind == "matmul":  # an unbiased linear before exact GELU
        x = imp.sym(node, node.inputs[0])
    if isinstance(x, Sym) and _is(c, math.sqrt(2.0), 1e-5):
        return [Partial("gelu_div", imp.sym(node, node.inputs[0]))]
    raise ScellisError(f"{node.label()}: Div of these values has no catalog block")


def erf(imp, node):
    x = imp.get(node.inputs[0])
    if isinstance(x, Partial) and x.kind == "gelu_div":
        return [Partial("gelu_erf", x.base)]
    raise ScellisError(f"{node.label()}: Erf outside the exact-GELU pattern")


def mul(imp, node):
    a, b = imp.get(node.inputs[0]), imp.get(node.inputs[1])
    if (c := _fold2(node, a, b)) is not None:
        return [c]
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Partial) and x.kind in ("heads", "scores") and isinstance(y, Const):
            return [attn.scale(node, x, y, divide=False)]
    if isinstance(a, Partial) or isinstance(b, Const):
        a, b = b, a
    # a: the plain side, b: the partial / constant side
    if isinstance(b, Partial) and b.kind == "gelu_add" and isinstance(a, Sym) and a == b.base:
        return [Partial("gelu_mul", b.base)]
    if isinstance(b, Partial) and b.kind == "gelu_mul" and _is(a, 0.5):
        return [imp.activation(node, b.base, "gelu")]
    if isinstance(a, Partial) and a.kind == "gelu_mul" and _is(b, 0.5):
        return [imp.activation(node, a.base, "gelu")]
    if isinstance(a, Partial) and a.kind == "gelu_add" and isinstance(b, Sym) and b == a.base:
        return [Partial("gelu_mul", a.base)]
    if isinstance(a, Sym) and isinstance(b, Sym):  # x * sigmoid(x): SiLU
        for x, s, name in ((a, b, node.inputs[1]), (b, a, node.inputs[0])):
            if imp.retag_silu(x, s, name):
                return [s]
    raise ScellisError(f"{node.label()}: Mul of these values has no catalog block")


def const_only(imp, node):
    """Sub and Equal: only ever folded (mask and shape arithmetic)."""
    a, b = imp.get(node.inputs[0]), imp.get(node.inputs[1])
    if node.op == "Equal" and any(isinstance(v, Partial) and v.kind == "grid" for v in (a, b)):
        if all(isinstance(v, Const) and v.t.numel == 1 or isinstance(v, Partial) for v in (a, b)):
            return [fold.equal_grid(node, a, b)]
    c = _fold2(node, a, b)
    if c is None:
        raise ScellisError(f"{node.label()}: {node.op} of model tensors has no catalog block")
    return [c]


def _act(fn: str):
    def handler(imp, node):
        return [imp.activation(node, imp.sym(node, node.inputs[0]), fn)]

    return handler


def gelu(imp, node):
    fn = "gelu_tanh" if node.attrs.get("approximate") == "tanh" else "gelu"
    return [imp.activation(node, imp.sym(node, node.inputs[0]), fn)]


def reduce_mean(imp, node):
    x = imp.sym(node, node.inputs[0])
    axes = _axes(imp, node)
    if len(x.shape) == 3 and axes in ([1], [-2]) and node.attrs.get("keepdims", 1) == 0:
        return [Partial("pool", x, {"how": "mean"})]
    raise ScellisError(f"{node.label()}: ReduceMean other than over the time axis of [B, T, F]")


def layer_norm(imp, node):
    x = imp.sym(node, node.inputs[0])
    axis = node.attrs.get("axis", -1)
    if axis not in (-1, len(x.shape) - 1):
        raise ScellisError(f"{node.label()}: LayerNormalization over axis {axis}, not the last")
    scale = imp.const(node, node.inputs[1]).t
    bias = imp.const(node, node.inputs[2]).t if len(node.inputs) > 2 and node.inputs[2] else None
    made = [n.op for n in imp.g.nodes if bias is not None and node.inputs[2] in n.outputs]
    if made == ["Constant"] and not any(bias.values()):
        bias = None  # torch's LayerNorm(bias=False) exports a zero Constant, not a parameter
    eps = as_f32(node.attrs.get("epsilon", 1e-5))
    fields = {"normalized_shape": scale.shape[0], "eps": eps}
    if bias is None:
        fields["bias"] = False
    name = imp.block(node, "nn/layer_norm", x, fields, {"weight": scale, "bias": bias})
    return [Sym(name, list(x.shape))] + [Opaque("layer-norm statistics")] * (len(node.outputs) - 1)


# -- recurrent ---------------------------------------------------------------------------

# ONNX gate order -> torch's: LSTM i,o,f,c -> i,f,g,o; GRU z,r,h -> r,z,n
_GATES = {"LSTM": ([0, 2, 3, 1], 4, "nn/lstm"), "GRU": ([1, 0, 2], 3, "nn/gru")}


def recurrent(imp, node):
    order, G, block_id = _GATES[node.op]
    a = node.attrs
    H = a.get("hidden_size")
    if (a.get("direction") or "forward") != "forward":
        raise ScellisError(f"{node.label()}: {a.get('direction')!r} {node.op} is not supported")
    if a.get("layout", 0) or a.get("clip") is not None or a.get("input_forget", 0):
        raise ScellisError(f"{node.label()}: {node.op} with layout/clip/input_forget set")
    if a.get("activations") and [s.lower() for s in a["activations"]] not in (
        ["sigmoid", "tanh", "tanh"],
        ["sigmoid", "tanh"],
    ):
        raise ScellisError(f"{node.label()}: {node.op} with activations {a['activations']}")
    if node.op == "GRU" and a.get("linear_before_reset", 0) != 1:
        raise ScellisError(f"{node.label()}: GRU without linear_before_reset (torch's form)")
    ins = node.inputs + [""] * (8 - len(node.inputs))
    if ins[4] or (node.op == "LSTM" and ins[7]):
        raise ScellisError(f"{node.label()}: {node.op} with sequence lengths or peepholes")
    for name in ins[5 : 7 if node.op == "LSTM" else 6]:
        if name and not isinstance(imp.get(name), Zeros):
            raise ScellisError(f"{node.label()}: {node.op} with a non-zero initial state")
    x = imp.get(ins[0])
    if not (isinstance(x, Sym) and x.perm == (1, 0, 2)):
        raise ScellisError(f"{node.label()}: {node.op} input is not a batch-first sequence")
    W = squeeze0(imp.const(node, ins[1]).t)
    R = squeeze0(imp.const(node, ins[2]).t)
    w = {"weight_ih": reorder_gates(W, order, H), "weight_hh": reorder_gates(R, order, H)}
    if ins[3]:
        B = squeeze0(imp.const(node, ins[3]).t)
        w["bias_ih"] = reorder_gates(take_rows(B, 0, G * H), order, H)
        w["bias_hh"] = reorder_gates(take_rows(B, G * H, 2 * G * H), order, H)
    name = imp.recurrent(node, block_id, x, W.shape[1], H, w, has_bias=bool(ins[3]))
    T, B_ = x.shape[0], x.shape[1]
    outs = [Sym(name, [T, 1, B_, H], None, "rnn_y")]
    outs += [Opaque(f"the final state of {node.op} {name!r}")] * (len(node.outputs) - 1)
    return outs


HANDLERS = {
    "Constant": constant,
    "Identity": identity,
    "Dropout": identity,
    "Shape": shape,
    "Gather": gather,
    "Unsqueeze": unsqueeze,
    "Squeeze": squeeze,
    "Concat": concat,
    "ConstantOfShape": constant_of_shape,
    "Slice": slice_,
    "Cast": cast,
    "Transpose": transpose,
    "Gemm": gemm,
    "MatMul": matmul,
    "Add": add,
    "Div": div,
    "Erf": erf,
    "Mul": mul,
    "Relu": _act("relu"),
    "Tanh": _act("tanh"),
    "Sigmoid": _act("sigmoid"),
    "Gelu": gelu,
    "LayerNormalization": layer_norm,
    "ReduceMean": reduce_mean,
    "Sub": const_only,
    "Equal": const_only,
    "Sqrt": fold.sqrt,
    "Expand": fold.expand,
    "Trilu": fold.trilu,
    "Where": attn.where,
    "Reshape": attn.reshape,
    "Softmax": attn.softmax,
    "LSTM": recurrent,
    "GRU": recurrent,
}
