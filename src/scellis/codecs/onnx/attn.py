"""Attention and pre-norm transformer layers in ONNX graphs (codecs layer).

torch.onnx.export writes self-attention as: three MatMul(+Add) projections of one
tensor, each Reshape'd to [B, T, H, D] and Transpose'd to heads (k to [B, H, D, S]),
Mul/Div by a scale, MatMul of q and k, an optional causal mask (Add of a constant
0/-inf matrix, or Where), Softmax over the last axis, MatMul with v, Transpose and
Reshape back to [B, T, E], and the output projection. Those stages are ``Partial``
values here (kinds ``heads``, ``scores``, ``probs``, ``ctx``, ``merged``); the output
projection turns them into one ``nn/attention`` block that absorbs the q/k/v linears.

Residual adds exist in the catalog only inside ``nn/transformer_block``: ``x +
attn(ln1(x))`` becomes a pending half (a ``onnx/half`` entry no record may keep), and
``h + fc2(act(fc1(ln2(h))))`` over that half folds the seven blocks into one
transformer block. A final pass stacks consecutive equal blocks (and a layer norm
read only by the last) into ``nn/transformer``, named after the exporting module.
"""

from __future__ import annotations

import math
import re

from ...base.errors import ScellisError
from .fold import grid_values, known, where_const, where_grid
from .values import Const, Partial, ShapeVec, Sym

HALF = "onnx/half"
_STACKED = re.compile(r"(blocks|layers|h)\.\d+")  # torch's ModuleList children
LAYOUT = "bthd"  # the axes a heads value starts with, right after its Reshape


def _dims(imp, node, name: str) -> list:
    v = known(imp.get(name))
    if isinstance(v, Const):
        return [int(d) for d in v.values]
    if isinstance(v, ShapeVec):
        return list(v.dims)
    raise ScellisError(f"{node.label()}: Reshape to a computed shape")


def reshape(imp, node):
    x = imp.get(node.inputs[0])
    target = _dims(imp, node, node.inputs[1])
    if isinstance(x, Partial) and x.kind == "ctx" and x.data["layout"] == LAYOUT:
        B, T, H, D = x.data["shape"]
        if len(target) == 3 and target[:2] == [B, T] and target[2] in (H * D, -1):
            return [Partial("merged", x.base, {**x.data, "shape": [B, T, H * D]})]
        raise ScellisError(f"{node.label()}: attention heads merged into {target}")
    if isinstance(x, Const):
        raise ScellisError(f"{node.label()}: Reshape of a constant is not supported")
    x = imp.sym(node, node.inputs[0])
    if len(x.shape) == 3 and len(target) == 4 and target[:2] == x.shape[:2]:
        E, H, D = x.shape[2], target[2], target[3]
        if D == -1 and isinstance(H, int) and H > 0:
            D = E // H
        if isinstance(H, int) and isinstance(D, int) and H * D == E:
            data = {"shape": [x.shape[0], x.shape[1], H, D], "layout": LAYOUT, "scale": 1.0}
            return [Partial("heads", x, data)]
    raise ScellisError(f"{node.label()}: Reshape of {x.shape} to {target} has no catalog block")


def _shape_now(p: Partial) -> list:
    full = dict(zip(LAYOUT, p.data["shape"]))
    return [full[a] for a in p.data["layout"]]


def shape_of(p: Partial) -> list:
    """The current dims of an attention stage (for the Shape nodes exporters add)."""
    if p.kind in ("heads", "ctx"):
        return _shape_now(p)
    return list(p.data["shape"])


def transpose(node, p: Partial, perm) -> Partial:
    if p.kind not in ("heads", "ctx") or len(perm) != 4:
        raise ScellisError(f"{node.label()}: Transpose of an attention {p.kind}")
    layout = "".join(p.data["layout"][i] for i in perm)
    return Partial(p.kind, p.base, {**p.data, "layout": layout})


def scale(node, p: Partial, c: Const, divide: bool) -> Partial:
    if p.kind not in ("heads", "scores") or c.t.numel != 1:
        raise ScellisError(f"{node.label()}: scaling of an attention {p.kind}")
    f = float(c.scalar())
    return Partial(p.kind, p.base, {**p.data, "scale": p.data["scale"] * (1 / f if divide else f)})


def matmul(node, a, b) -> Partial:
    """q @ k^T -> scores; softmax(scores) @ v -> ctx (both batched over heads)."""
    if not (isinstance(a, Partial) and isinstance(b, Partial)):
        raise ScellisError(f"{node.label()}: MatMul of two model tensors outside attention")
    if a.kind == "heads" and b.kind == "heads":
        if a.data["layout"] != "bhtd" or b.data["layout"] != "bhdt":
            raise ScellisError(f"{node.label()}: q @ k with heads laid out other than torch's")
        B, T, H, D = a.data["shape"]
        S = b.data["shape"][1]
        data = {"q": a.base, "k": b.base, "H": H, "D": D, "causal": False,
                "scale": a.data["scale"] * b.data["scale"], "shape": [B, H, T, S]}  # fmt: skip
        return Partial("scores", a.base, data)
    if a.kind == "probs" and b.kind == "heads" and b.data["layout"] == "bhtd":
        if b.data["scale"] != 1.0:
            raise ScellisError(f"{node.label()}: scaled values in attention")
        B, T, H, D = b.data["shape"]
        data = {**a.data, "v": b.base, "shape": [B, a.data["shape"][2], H, D], "layout": "bhtd"}
        return Partial("ctx", a.base, data)
    raise ScellisError(f"{node.label()}: MatMul of an attention {a.kind} and {b.kind}")


def _causal(node, keep: list[bool], T: int, S: int) -> None:
    if T != S or any(keep[i * S + j] != (j <= i) for i in range(T) for j in range(S)):
        raise ScellisError(f"{node.label()}: an attention mask other than the causal one")


def _mask(node, p: Partial, m) -> tuple[list, int, int]:
    """A mask's values with the square they cover: all of a constant, a grid's probe."""
    if p.kind != "scores" or p.data["causal"]:
        raise ScellisError(f"{node.label()}: a mask outside attention scores")
    T, S = p.data["shape"][2:]
    if isinstance(m, Partial):  # symbolic [T, S]
        if m.data["dims"] != [T, S]:
            raise ScellisError(f"{node.label()}: an attention mask of shape {m.data['dims']}")
        vals, n = grid_values(m)
        return vals, n, n
    shape = list(m.t.shape)
    if shape[-2:] != [T, S] or any(d != 1 for d in shape[:-2]):
        raise ScellisError(f"{node.label()}: an attention mask of shape {shape}")
    return m.values, T, S


def masked(node, p: Partial, keep: list[bool], T: int, S: int) -> Partial:
    _causal(node, keep, T, S)
    return Partial("scores", p.base, {**p.data, "causal": True})


def additive_mask(node, p: Partial, m) -> Partial:
    """scores + M where M is 0 where attended and very negative elsewhere."""
    vals, T, S = _mask(node, p, m)
    vals = [float(v) for v in vals]
    if any(not (v == 0.0 or v <= -1e9) for v in vals):
        raise ScellisError(f"{node.label()}: an additive attention mask other than 0 / -inf")
    return masked(node, p, [v == 0.0 for v in vals], T, S)


def where(imp, node):
    cond, a, b = (imp.get(n) for n in node.inputs)
    if isinstance(cond, Const) and isinstance(a, Const) and isinstance(b, Const):
        return [where_const(node, cond, a, b)]
    is_grid = isinstance(cond, Partial) and cond.kind == "grid"
    if is_grid and all(isinstance(v, Const) and v.t.numel == 1 for v in (a, b)):
        return [where_grid(node, cond, a, b)]
    # masked_fill: where(drop, -inf, scores) or where(keep, scores, -inf)
    if isinstance(cond, Const) or is_grid:
        for fill, sc, flip in ((a, b, True), (b, a, False)):
            ok = isinstance(fill, Const) and fill.t.numel == 1 and float(fill.scalar()) <= -1e9
            if ok and isinstance(sc, Partial):
                vals, T, S = _mask(node, sc, cond)
                return [masked(node, sc, [bool(v) != flip for v in vals], T, S)]
    raise ScellisError(f"{node.label()}: Where of these values has no catalog block")


def softmax(imp, node):
    p = imp.get(node.inputs[0])
    if isinstance(p, Partial) and p.kind == "scores" and node.attrs.get("axis", -1) in (-1, 3):
        return [Partial("probs", p.base, dict(p.data))]
    raise ScellisError(f"{node.label()}: Softmax outside attention scores")


# -- blocks -------------------------------------------------------------------------------


def absorb(imp, name: str) -> tuple[dict, dict]:
    """Take a block out of the record: its spec and its weights (keys without the name)."""
    spec = imp.blocks.pop(name)
    src = spec["in"]
    imp.fed[src] = imp.fed.get(src, 0) - 1
    pre = f"{name}."
    w = {k[len(pre) :]: imp.weights.pop(k) for k in [k for k in imp.weights if k.startswith(pre)]}
    return spec, w


def _spec(imp, name: str, block_id: str) -> dict | None:
    s = imp.blocks.get(name)
    return s if s is not None and s["block_id"] == block_id else None


def attention(imp, node, p: Partial, w, b) -> Sym:
    """The output projection of merged heads: one nn/attention block over q, k, v, o."""
    d = p.data
    names = [d["q"].src, d["k"].src, d["v"].src]
    specs = [_spec(imp, n, "nn/linear") for n in names]
    if any(s is None for s in specs) or len(set(names)) != 3:
        raise ScellisError(f"{node.label()}: attention whose q, k, v are not three projections")
    E = d["H"] * d["D"]
    src = specs[0]["in"]
    bias = b is not None
    for n, s in zip(names, specs):
        if s["in"] != src or s["in_features"] != E or s["out_features"] != E:
            raise ScellisError(f"{node.label()}: projection {n!r} does not fit {E}-wide attention")
        if s.get("bias", True) != bias or imp.fed.get(n, 0):
            raise ScellisError(f"{node.label()}: projection {n!r} is biased differently or reused")
    if tuple(w.shape) != (E, E):
        raise ScellisError(f"{node.label()}: output projection {list(w.shape)} for width {E}")
    if abs(d["scale"] * math.sqrt(d["D"]) - 1.0) > 1e-5:
        raise ScellisError(f"{node.label()}: attention scale {d['scale']} is not 1/sqrt({d['D']})")
    weights = {"o.weight": w, "o.bias": b}
    for key, n in zip("qkv", names):
        _, got = absorb(imp, n)
        weights.update({f"{key}.{k}": t for k, t in got.items()})
    fields = {"embed_dim": E, "num_heads": d["H"], "causal": d["causal"]}
    if not bias:
        fields["bias"] = False
    x = Sym(src, [*p.data["shape"][:2], E])
    name = imp.block(node, "nn/attention", x, fields, weights)
    return Sym(name, list(x.shape))


def position(imp, node, x: Sym, r: Partial) -> Sym:
    """x + weight[:T] -> nn/learned_position."""
    w, end = r.data["w"], r.data["end"]
    T = x.shape[-2] if len(x.shape) >= 2 else None
    if T is None or end != T or len(w.shape) != 2 or w.shape[1] != x.shape[-1]:
        raise ScellisError(f"{node.label()}: a position table that does not fit {x.shape}")
    fields = {"max_len": w.shape[0], "dim": w.shape[1]}
    name = imp.block(r.data["node"], "nn/learned_position", x, fields, {"weight": w})
    return Sym(name, list(x.shape))


def _chain(imp, top: str, kinds: list[str]) -> list[str] | None:
    """Block names from ``top`` down its ``in`` links, if their kinds are ``kinds``."""
    out, name = [], top
    for k in kinds:
        s = _spec(imp, name, k)
        if s is None or (out and imp.fed.get(name, 0) != 1):
            return None
        out.append(name)
        name = s["in"]
    return out


def residual(imp, node, a: Sym, b: Sym) -> Sym:
    for x, f in ((a, b), (b, a)):
        if x.perm is not None or f.perm is not None or x.shape != f.shape:
            continue
        half = _chain(imp, f.src, ["nn/attention", "nn/layer_norm"])
        if half and imp.blocks[half[1]]["in"] == x.src and not imp.fed.get(f.src, 0):
            return [_half(imp, node, x, half)]
        mlp = _chain(imp, f.src, ["nn/linear", "nn/activation", "nn/linear", "nn/layer_norm"])
        if mlp and imp.blocks[mlp[3]]["in"] == x.src and _spec(imp, x.src, HALF):
            if not imp.fed.get(f.src, 0) and imp.fed.get(x.src, 0) == 1:
                return [_layer(imp, node, x, mlp)]
    raise ScellisError(
        f"{node.label()}: a residual Add outside a pre-norm transformer layer "
        "(x + attn(ln(x)), then + mlp(ln(x)))"
    )


def _half(imp, node, x: Sym, half: list[str]) -> Sym:
    name = imp.block(node, HALF, x, {"parts": half}, {})
    return Sym(name, list(x.shape))


def _layer(imp, node, h: Sym, mlp: list[str]) -> Sym:
    fc2, act, fc1, ln2 = mlp
    got = {}
    for key, n in (("mlp.fc2", fc2), ("act", act), ("mlp.fc1", fc1), ("ln2", ln2)):
        got[key] = absorb(imp, n)
    half, _ = absorb(imp, h.src)
    attn, ln1 = half["parts"]
    got["attn"], got["ln1"] = absorb(imp, attn), absorb(imp, ln1)
    sp = {k: s for k, (s, _) in got.items()}
    d = sp["attn"]["embed_dim"]
    bias = {sp["attn"].get("bias", True)} | {sp[k].get("bias", True) for k in ("ln1", "ln2")}
    bias |= {sp[k].get("bias", True) for k in ("mlp.fc1", "mlp.fc2")}
    ok = (
        len(bias) == 1
        and sp["ln1"]["eps"] == sp["ln2"]["eps"]
        and sp["ln1"]["normalized_shape"] == sp["ln2"]["normalized_shape"] == d
        and sp["mlp.fc1"]["in_features"] == sp["mlp.fc2"]["out_features"] == d
    )
    if not ok:
        raise ScellisError(f"{node.label()}: a transformer layer whose parts do not agree")
    fields = {
        "d_model": d, "num_heads": sp["attn"]["num_heads"],
        "d_ff": sp["mlp.fc1"]["out_features"],
        "kind": "decoder" if sp["attn"]["causal"] else "encoder",
        "activation": sp["act"]["function"], "eps": sp["ln1"]["eps"],
    }  # fmt: skip
    if not bias.pop():
        fields["bias"] = False
    weights = {f"{k}.{p}": t for k, (_, w) in got.items() for p, t in w.items()}
    x = Sym(sp["ln1"]["in"], h.shape)
    name = imp.block(node, "nn/transformer_block", x, fields, weights)
    parts = [p for p in node.name.split("/") if p]
    if len(parts) > 2 and _STACKED.fullmatch(parts[1]):
        imp.stacked.add(name)
    return Sym(name, list(h.shape))


def stack(imp) -> None:
    """Consecutive equal transformer blocks (+ a final layer norm) into nn/transformer."""
    if any(s["block_id"] == HALF for s in imp.blocks.values()):
        raise ScellisError(f"{imp.where}: an attention residual without the MLP half after it")
    order = list(imp.blocks)
    done: set[str] = set()
    for first in order:
        if first in done or _spec(imp, first, "nn/transformer_block") is None:
            continue
        run = [first]
        while True:
            readers = [n for n, s in imp.blocks.items() if s["in"] == run[-1]]
            nxt = readers[0] if len(readers) == 1 else None
            if nxt is None or imp.fed.get(run[-1], 0) != 1 or run[-1] in imp.outputs_of:
                break
            s = imp.blocks[nxt]
            if s["block_id"] == "nn/transformer_block" and _same(s, imp.blocks[first]):
                run.append(nxt)
                continue
            if s["block_id"] == "nn/layer_norm" and s["eps"] == imp.blocks[first]["eps"]:
                if s.get("bias", True) == imp.blocks[first].get("bias", True):
                    run.append(nxt)
            break
        done.update(run)
        # one layer alone stays a block unless torch nested it in a stack (``body.blocks.0``)
        if len(run) > 1 or first in imp.stacked:
            _fold(imp, run)


def _same(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "in"} == {k: v for k, v in b.items() if k != "in"}


def _fold(imp, run: list[str]) -> None:
    last = run[-1]
    final = imp.blocks[last]["block_id"] == "nn/layer_norm"
    layers = run[:-1] if final else run
    spec0 = dict(imp.blocks[layers[0]])
    keys = list(imp.blocks)
    at = keys.index(layers[0])
    weights = {}
    for i, n in enumerate(layers):
        _, w = absorb(imp, n)
        weights.update({f"blocks.{i}.{k}": t for k, t in w.items()})
    if final:
        _, w = absorb(imp, last)
        weights.update({f"ln_f.{k}": t for k, t in w.items()})
    fields = {k: v for k, v in spec0.items() if k not in ("in", "block_id")}
    fields["num_layers"] = len(layers)
    if not final:
        fields["final_norm"] = False
    name = imp.prefix.get(layers[0], layers[0])
    if name in imp.blocks or name in imp.inputs:
        name = layers[0]
    for s in imp.blocks.values():
        if s["in"] == last:
            s["in"] = name
    imp.renamed[last] = name
    spec = {"block_id": "nn/transformer", "in": spec0["in"], **fields}
    # the stack takes the first layer's place, so the record lists blocks in data order
    before = [k for k in keys[:at] if k in imp.blocks]
    items = [(k, imp.blocks[k]) for k in before] + [(name, spec)]
    items += [(k, v) for k, v in imp.blocks.items() if k not in before]
    imp.blocks = dict(items)
    imp.fed[spec0["in"]] = imp.fed.get(spec0["in"], 0) + 1
    for k, t in weights.items():
        if t is not None:
            imp.weights[f"{name}.{k}"] = t
