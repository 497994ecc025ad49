"""Row-norm WGSL kernels (devices layer): layer and RMS norm over the last axis, and the VJP.

One workgroup of L invocations per row (L the power of two from 32 to 256 nearest
above D; a grid-stride loop over the rows when there are more than the grid holds).
Invocation t owns the row's elements t, t + L, t + 2L, ... and keeps them in private
registers (up to CACHE elements each; past that it reads them again from memory, in
the same order). Every row sum is the same fixed order: each invocation adds its
elements sequentially, then a binary tree in workgroup memory folds slot t with slot
t + s for s = L/2, ..., 1. No atomics, no order that depends on timing: the ``debug``
tier's bitwise repeatability holds. (On prod and fast, where the device has subgroups,
the tree is ``subgroups.norm_folds``' instead: kernels/variants.py.)

Forward, per row: the mean (layer norm only), then the variance about it (two
passes, so no cancellation between E[x^2] and mean^2; RMS: the mean square of x), then
y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps).

Backward, per row: the same statistics again (see ``ops.norm``: recomputed, not
saved), then one tree folding both sum(gw) and sum(gw * xhat) (gw = g * weight,
xhat = (x - mean) * rstd), then dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))
(RMS: no mean(gw)) and, for the weight's gradient, g * xhat.

Every operand is a strided view: the rows are x's leading dims (coalesced where the
strides allow) walked by an offset function, the features a stride of their own, so a
permuted or broadcast g needs no copy. f16 operands are read widened to f32; every
sum, statistic and product is in f32 and each stored value rounds once.

Error bound: each row sum of D terms goes through k = ceil(D / L) - 1 + log2(L)
roundings, so |err| <= gamma_k sum|term| (u = 2^-24, gamma_k = k u / (1 - k u)).
To first order the mean, the variance and rstd then carry relative errors of a few
gamma_k (relative to the row's spread: the variance sums (x - mean)^2, whose terms'
sum is the variance itself), and y a normwise error of about (3 k + 8) u |xhat| |weight|
plus one rounding of the bias add; dx adds two more sums of D terms and a cancellation
no worse than the composite's.
"""

from __future__ import annotations

import math

from .common import Source, f32_bits, grid_1d
from .reduce import _tree, coalesce, offset_fn
from .subgroups import norm_folds

MAX_LANES = 256  # invocations per row at most (the default workgroup size limit)
MIN_LANES = 32  # at least one subgroup's worth, even for narrow rows
CACHE = 16  # elements per invocation kept in registers; past it they are read again


def lanes_for(d: int) -> int:
    """Invocations per row: the power of two at or above D, within [MIN_LANES, MAX_LANES]."""
    return min(MAX_LANES, max(MIN_LANES, 1 << max(0, d - 1).bit_length()))


def _row_operand(src: Source, name: str, view) -> tuple[int, int]:
    """Bind ``view`` (widened) with an offset function ``<name>_row(o)`` over its leading
    dims; returns the meta positions of its offset and of its feature stride."""
    src.operand(name, view, widen=True)
    offset_fn(src, f"{name}_row", coalesce(list(zip(view.shape[:-1], view.strides[:-1]))))
    at = src.add_meta(view.offset, view.strides[-1])
    return at, at + 1


def _vector_operand(src: Source, name: str, view) -> str:
    """Bind a [D] parameter; returns a WGSL expression loading its element ``c``."""
    src.operand(name, view, widen=True)
    at = src.add_meta(view.offset, view.strides[0])
    return f"ld_{name}(mt[{at}u] + c * mt[{at + 1}u])"


def _folds(lanes: int, pairs: bool) -> str:
    """``fold(lid, v)``: the workgroup's sum of v by the fixed tree; ``fold2`` the same for
    two sums at once. Callers are in uniform control flow (the barriers inside)."""
    one = _tree(lanes, "lid", lambda s: f"sa[lid] += sa[lid + {s}u];", "  ")
    text = (
        f"var<workgroup> sa: array<f32, {lanes}>;\n"
        "fn fold(lid: u32, v: f32) -> f32 {\n"
        f"  sa[lid] = v;\n  workgroupBarrier();\n{one}\n"
        "  let r = sa[0];\n  workgroupBarrier();\n  return r;\n}\n"
    )
    if not pairs:
        return text
    two = _tree(lanes, "lid", lambda s: (
        f"sa[lid] += sa[lid + {s}u]; sb[lid] += sb[lid + {s}u];"), "  ")  # fmt: skip
    return text + (
        f"var<workgroup> sb: array<f32, {lanes}>;\n"
        "fn fold2(lid: u32, a: f32, b: f32) -> vec2<f32> {\n"
        f"  sa[lid] = a; sb[lid] = b;\n  workgroupBarrier();\n{two}\n"
        "  let r = vec2<f32>(sa[0], sb[0]);\n  workgroupBarrier();\n  return r;\n}\n"
    )


def _row_folds(src: Source, lanes: int, pairs: bool) -> str:
    """The row sums: subgroup folds where ``src`` allows them (prod and fast), else the
    fixed trees."""
    return norm_folds(lanes, pairs) if src.subgroups else _folds(lanes, pairs)


class _Row:
    """WGSL text for walking one row: each invocation's elements c = lid + k * L."""

    def __init__(self, d: int, lanes: int):
        self.d, self.lanes = d, lanes
        self.per = -(-d // lanes)
        self.cached = self.per <= CACHE

    def loop(self, body: str) -> str:
        return (
            f"    for (var k = 0u; k < {self.per}u; k++) {{\n"
            f"      let c = lid + k * {self.lanes}u;\n"
            f"      if (c < {self.d}u) {{\n{body}\n      }}\n    }}\n"
        )

    def first(self, name: str, load: str) -> str:
        """A statement binding ``name`` to the element, loading (and caching) it."""
        if not self.cached:
            return f"        let {name} = {load};"
        return f"        let {name} = {load}; {name}_r[k] = {name};"

    def again(self, name: str, load: str) -> str:
        """A statement binding ``name`` to the element once more (cache or memory)."""
        value = f"{name}_r[k]" if self.cached else load
        return f"        let {name} = {value};"

    def cache_decl(self, *names: str) -> str:
        if not self.cached:
            return ""
        return "".join(f"    var {n}_r: array<f32, {self.per}>;\n" for n in names)


def _statistics(row: _Row, rms: bool, load_x: str) -> str:
    """WGSL binding ``mu`` and ``rstd`` of the row (``mu`` = 0 for RMS), loading x."""
    d = f"f32({row.d})"
    if rms:
        return (
            "    var acc = 0.0;\n"
            + row.loop(row.first("xv", load_x) + "\n        acc += xv * xv;")
            + "    let mu = 0.0;\n"
            + f"    let rstd = 1.0 / sqrt(fold(lid, acc) / {d} + eps);\n"
        )
    return (
        "    var acc = 0.0;\n"
        + row.loop(row.first("xv", load_x) + "\n        acc += xv;")
        + f"    let mu = fold(lid, acc) / {d};\n"
        + "    acc = 0.0;\n"
        + row.loop(row.again("xv", load_x) + "\n        let dv = xv - mu; acc += dv * dv;")
        + f"    let rstd = 1.0 / sqrt(fold(lid, acc) / {d} + eps);\n"
    )


def _main(lanes: int, body: str) -> str:
    return (
        f"@compute @workgroup_size({lanes})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
        "@builtin(num_workgroups) nwg: vec3<u32>, "
        "@builtin(local_invocation_index) lid: u32) {\n"
        "  let eps = bitcast<f32>(mt[1]);\n"
        "  let grid = nwg.x * nwg.y;\n"
        "  for (var o = wid.x + wid.y * nwg.x; o < mt[0]; o += grid) {\n"
        f"{body}  }}\n}}\n"
    )


def _grid(src: Source, rows: int):
    cap = src.limits["max_compute_workgroups_per_dimension"]
    return grid_1d(min(rows, cap * cap), src.limits, wg=1)


def _rows(src: Source, x, attrs: dict):
    """What both kernels start from: D, the row count, the lanes per row, the row walker,
    and x bound with its meta (the row count and eps come first: ``_main`` reads them)."""
    d = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    lanes = lanes_for(d)
    src.add_meta(rows, f32_bits(attrs["eps"]))
    return d, rows, lanes, _Row(d, lanes), _row_operand(src, "x", x)


def forward(src: Source, op: str, ins, outs, attrs):
    x, out = ins[0], outs[0]
    d, rows, lanes, row, (x_at, xs_at) = _rows(src, x, attrs)
    params = iter(ins[1:])
    scale = f" * {_vector_operand(src, 'w', next(params))}" if attrs.get("weight") else ""
    shift = f" + {_vector_operand(src, 'b', next(params))}" if attrs.get("bias") else ""
    src.operand("o", out, write=True, widen=True)
    out_at = src.add_meta(out.offset)
    src.fns.append(_row_folds(src, lanes, pairs=False))
    load_x = f"ld_x(xb + c * mt[{xs_at}u])"
    body = (
        f"    let xb = mt[{x_at}u] + x_row(o);\n"
        + row.cache_decl("xv")
        + _statistics(row, bool(attrs.get("rms")), load_x)
        + f"    let ob = mt[{out_at}u] + o * {d}u;\n"
        + row.loop(
            row.again("xv", load_x) + f"\n        st_o(ob + c, (xv - mu) * rstd{scale}{shift});"
        )
    )
    src.body = _main(lanes, body)
    return _grid(src, rows)


def backward(src: Source, op: str, ins, outs, attrs):
    x, g, out = ins[0], ins[1], outs[0]
    d, rows, lanes, row, (x_at, xs_at) = _rows(src, x, attrs)
    g_at, gs_at = _row_operand(src, "g", g)
    scale = f" * {_vector_operand(src, 'w', ins[2])}" if attrs.get("weight") else ""
    src.operand("o", out, write=True, widen=True)
    out_at = src.add_meta(out.offset, rows * d)
    src.fns.append(_row_folds(src, lanes, pairs=True))
    load_x = f"ld_x(xb + c * mt[{xs_at}u])"
    load_g = f"ld_g(gb + c * mt[{gs_at}u])"
    centred = "" if attrs.get("rms") else " - m.x"
    weight_grad = (
        f"\n        st_o(ob + mt[{out_at + 1}u] + c, gv * xh);" if attrs.get("weight_grad") else ""
    )
    body = (
        f"    let xb = mt[{x_at}u] + x_row(o);\n"
        f"    let gb = mt[{g_at}u] + g_row(o);\n"
        + row.cache_decl("xv", "gv")
        + _statistics(row, bool(attrs.get("rms")), load_x)
        + "    var sg = 0.0; var sgx = 0.0;\n"
        + row.loop(
            row.again("xv", load_x)
            + "\n"
            + row.first("gv", load_g)
            + f"\n        let gw = gv{scale}; let xh = (xv - mu) * rstd;"
            + "\n        sg += gw; sgx += gw * xh;"
        )
        + f"    let m = fold2(lid, sg, sgx) / f32({d});\n"
        + f"    let ob = mt[{out_at}u] + o * {d}u;\n"
        + row.loop(
            row.again("xv", load_x)
            + "\n"
            + row.again("gv", load_g)
            + f"\n        let gw = gv{scale}; let xh = (xv - mu) * rstd;"
            + f"\n        st_o(ob + c, rstd * (gw{centred} - xh * m.y));"
            + weight_grad
        )
    )
    src.body = _main(lanes, body)
    return _grid(src, rows)


KERNELS = {"row_norm": forward, "row_norm_backward": backward}
