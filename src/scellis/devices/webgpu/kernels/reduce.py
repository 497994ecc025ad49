"""Reduction WGSL kernels (devices layer): sum, max, min, argmax over any axes, deterministic.

The input view is split into kept dims (the output's, in order) and reduced dims
(row-major, as NumPy flattens them); each group has its unit dims dropped and
adjacent dims merged where the strides allow, so a contiguous last-axis reduction
is one strided walk. Two shapes of kernel, picked from R (the reduced count) alone:

- R <= 64: one invocation per output sums its R elements sequentially in order.
- R > 64: one workgroup of 256 threads per output (a grid-stride loop over outputs
  when there are more than the grid holds). Thread t folds elements t, t+256,
  t+512, ... sequentially, then a fixed binary tree in workgroup memory folds
  slot t with slot t+s for s = 128, 64, ..., 1.

- a float sum whose outputs are contiguous and whose reduced axis is not (a bias or
  norm gradient: [tokens, features] summed over tokens): the long path would read
  one column per workgroup, 4 useful bytes a cache line. Instead a workgroup owns
  COL_X consecutive outputs and COL_Y lanes; the R rows are cut into C chunks of
  CH rows (C from R alone: about COL_CHUNK rows each, at most SHORT_R chunks), lane
  y of chunk c sums rows c*CH + y, + COL_Y, ... sequentially, a 3-level tree folds
  the lanes, and the C partial sums of each output go to scratch; a short-path
  launch then sums them in chunk order. Reads of a row segment are coalesced.

Every sequential fold above reads READ_AHEAD elements before it folds them, in the
same order (``_in_order``): the loads overlap, the sums keep their bits.

The one-pass order (``attrs["_order"] == "one_pass"``: the prod and fast tiers' training
steps, ``devices.kernel_choice``), for a float sum of at most ONE_PASS_MAX_R terms per
output: the column path in a single chunk (each lane folds every COL_Y-th row, then the
lane tree: no partials, no second launch), and the long path where the split path would
take two launches. One dispatch instead of two, in another order than debug's. A column
sum of more than ONE_PASS_COLUMN_TERMS terms in all keeps its chunks unless its outputs
alone give ONE_PASS_BUSY workgroups: one chunk is m / COL_X workgroups, and a bias
gradient over 8192 tokens (12 to 48 workgroups of 1,024-row folds) took 60 us a sum
on an H100 where the chunked path's two launches are far shorter.

All orders depend only on R and the shape, never on timing: no atomics, so the
``debug`` tier's bitwise repeatability holds. Floats accumulate in f32 (f16 widens
and rounds once on store), integers in i32/u32 with wrap-around (as the reference's
cast back to 32 bits gives).

On the prod and fast tiers, where the device has subgroups (kernels/variants.py), the
long and split paths fold their 256 lanes' float sums, maxima and minima through
``subgroups.fold_fn`` instead of the tree: one barrier, then each subgroup of n
invocations sums 256/n slots per invocation and folds those by one subgroup operation,
whose order is the hardware's. A sum then takes at most ceil(R/256) - 1 + 256/n - 1 +
n - 1 roundings (``sum_error_bound`` is the trees'); prod's tolerance bounds it.

Error bound of an f32 sum of R terms (u = 2^-24, gamma_k = k u / (1 - k u)): every
term passes through at most k roundings, so |sum_gpu - sum_exact| <= gamma_k * sum|x|
with k = R - 1 on the short path, k = ceil(R / 256) + 7 on the long path
(ceil(R/256) - 1 sequential adds, then 8 tree levels) and k = ceil(CH / COL_Y) - 1 + 3
+ C - 1 on the column path. ``sum_error_bound`` returns the largest k the paths
open to R can give, so it holds whichever path a layout takes.

max/min propagate NaN as NumPy does; argmax takes one axis and returns the first
maximum as i32, with NaN counted as the largest value (np.argmax). Over an empty
axis sum gives 0, max/min give -inf/+inf (the integer extremes for ints) and argmax
gives 0 where the reference raises.
"""

from __future__ import annotations

import math

from ....base.errors import ShapeError
from ....base.shapes import numel
from ...base import View
from .common import Source, grid_1d, main_1d
from .subgroups import fold_fn

SHORT_R = 64  # at most this many reduced elements: one invocation per output
READ_AHEAD = 8  # elements an invocation reads before it folds them (see _in_order)
WG_R = 256  # threads per output on the long path (a power of two: the tree halves it)

_ISNAN = "fn sc_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }"


COL_X = 32  # consecutive outputs per workgroup on the column path (128-byte rows)
COL_Y = 8  # lanes per output, folded by a tree
COL_CHUNK = 256  # rows a chunk aims at: enough workgroups, short sequential sums


def column_chunks(r: int) -> tuple[int, int]:
    """(C, CH): the column path's chunk count and rows per chunk for R rows."""
    c = max(1, min(SHORT_R, math.ceil(r / COL_CHUNK)))
    return c, math.ceil(r / c)


ONE_PASS_MAX_R = 1 << 16  # past this, one pass leaves too few workgroups busy
ONE_PASS_COLUMN_TERMS = 1 << 20  # a column sum past this many terms keeps its chunks...
ONE_PASS_BUSY = 128  # ...unless one chunk alone has this many workgroups


def column_one_pass(m: int, r: int) -> bool:
    """Whether the one-pass order's column sum of ``m`` outputs over ``r`` rows runs as a
    single chunk: small sums (one launch saved where a step is mostly launches), or
    outputs enough to fill the GPU by themselves."""
    return m * r <= ONE_PASS_COLUMN_TERMS or -(-m // COL_X) >= ONE_PASS_BUSY


SPLIT_OUTPUTS = 128  # at most this many outputs: one workgroup each would idle the GPU
SPLIT_PER_THREAD = 16  # elements each thread of a chunk folds, at least
SPLIT_MAX_CHUNKS = 1024  # a 10M-term sum (a gradient norm) spread over 1024 workgroups


def split_chunks(r: int) -> tuple[int, int]:
    """(C, CH): the split path's chunks per output and elements per chunk for R terms."""
    c = max(1, min(SPLIT_MAX_CHUNKS, r // (WG_R * SPLIT_PER_THREAD)))
    return c, math.ceil(r / c)


def _fold_k(r: int) -> int:
    """Roundings of the plain short or long path over R terms."""
    return r - 1 if r <= SHORT_R else math.ceil(r / WG_R) + int(math.log2(WG_R)) - 1


def sum_error_bound(r: int) -> float:
    """gamma_k of the summation orders open to R terms: |err| <= this * sum|x|."""
    k = _fold_k(r)
    if r > SHORT_R:
        c, ch = column_chunks(r)
        k = max(k, math.ceil(ch / COL_Y) - 1 + int(math.log2(COL_Y)) + _fold_k(c))
        c, ch = split_chunks(r)  # each chunk as the long path, then the chunks folded
        k = max(k, _fold_k(ch) + 1 + _fold_k(c))
    u = 2.0**-24
    return max(k, 0) * u / (1 - max(k, 0) * u)


def coalesce(dims: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(size, stride) pairs with unit dims dropped and mergeable neighbours merged."""
    out: list[tuple[int, int]] = []
    for n, s in dims:
        if n == 1:
            continue
        if out and out[-1][1] == n * s:
            out[-1] = (out[-1][0] * n, s)
        else:
            out.append((n, s))
    return out


def offset_fn(src: Source, name: str, dims: list[tuple[int, int]]) -> None:
    """WGSL ``fn name(f: u32) -> u32``: element offset of row-major flat index ``f``."""
    if not dims:
        src.fns.append(f"fn {name}(f: u32) -> u32 {{ return 0u; }}")
        return
    k = len(dims)
    at = src.add_meta(*(n for n, _ in dims), *(s for _, s in dims))
    lines = [f"fn {name}(f: u32) -> u32 {{", "  var q = f;", "  var e = 0u;"]
    for d in range(k - 1, 0, -1):
        n, s = f"mt[{at + d}u]", f"mt[{at + k + d}u]"
        lines.append(f"  e += (q % {n}) * {s}; q = q / {n};")
    lines.append(f"  e += q * mt[{at + k}u];")
    lines.append("  return e;\n}")
    src.fns.append("\n".join(lines))


def _acc_type(dtype) -> str:
    return "f32" if dtype.is_float else {"i32": "i32", "u32": "u32"}[dtype.name]


def _init_bits(op: str, acc: str) -> int:
    """The fold's identity, as a u32 word (kept in meta: WGSL rejects inf constants)."""
    if op == "sum":
        return 0
    low = op in ("max", "argmax")
    if acc == "f32":
        return 0xFF800000 if low else 0x7F800000
    if acc == "i32":
        return 0x80000000 if low else 0x7FFFFFFF
    return 0 if low else 0xFFFFFFFF


def _fold_fns(op: str, acc: str) -> list[str]:
    """``cmb(a, b)`` folding b into a (value ops) or ``better(vb, ib, va, ia)`` (argmax)."""
    fl = acc == "f32"
    if op == "sum":
        return [f"fn cmb(a: {acc}, b: {acc}) -> {acc} {{ return a + b; }}"]
    if op in ("max", "min"):
        cmp = ">" if op == "max" else "<"
        if not fl:
            return [f"fn cmb(a: {acc}, b: {acc}) -> {acc} {{ return {op}(a, b); }}"]
        # a NaN b replaces a; a NaN a is never replaced (b cmp NaN is false)
        return [
            _ISNAN,
            f"fn cmb(a: f32, b: f32) -> f32 {{ return select(select(a, b, b {cmp} a),"
            " b, sc_isnan(b)); }",
        ]
    tie = "vb > va || (vb == va && ib < ia)"
    if not fl:
        return [f"fn better(vb: {acc}, ib: u32, va: {acc}, ia: u32) -> bool {{ return {tie}; }}"]
    return [
        _ISNAN,
        "fn better(vb: f32, ib: u32, va: f32, ia: u32) -> bool {\n"
        "  let nb = sc_isnan(vb); let na = sc_isnan(va);\n"
        "  if (nb != na) { return nb; }\n"
        "  if (nb) { return ib < ia; }\n"
        f"  return {tie};\n}}",
    ]


def _step(op: str, v: str, r: str) -> str:
    if op == "argmax":
        return f"if (better({v}, {r}, acc, ai)) {{ acc = {v}; ai = {r}; }}"
    return f"acc = cmb(acc, {v});"


def _store(op: str, out) -> str:
    if op == "argmax":
        return "i32(ai)"
    return "f16(acc)" if out.dtype.name == "f16" else "acc"


def _in_order(first: str, end: str, stride: int, read, fold, indent: str) -> str:
    """WGSL folding the elements r = first, first + stride, ... below ``end`` in that
    order: ``fold(v, r)`` is the statement folding value ``v`` of element ``r``,
    ``read(r)`` the expression reading it. READ_AHEAD elements are read before the first
    of them is folded, so their loads are in flight together instead of each waiting for
    the fold before it; the order of the folds, hence every bit of the result, is the
    same as one element at a time."""
    u, ind = READ_AHEAD, indent + "  "
    reads = "".join(f"{ind}let v{j} = {read(f'r + {j * stride}u')};\n" for j in range(u))
    folds = "".join(f"{ind}{fold(f'v{j}', f'(r + {j * stride}u)')}\n" for j in range(u))
    return (
        f"{indent}var r = {first};\n"
        f"{indent}for (; r + {(u - 1) * stride}u < {end}; r += {u * stride}u) {{\n"
        f"{reads}{folds}{indent}}}\n"
        f"{indent}for (; r < {end}; r += {stride}u) {{\n"
        f"{ind}let v = {read('r')};\n{ind}{fold('v', 'r')}\n{indent}}}\n"
    )


def _reader(load: str):
    """``read(r)`` for _in_order: element r of the output whose first element is at b."""
    return lambda r: load.format(f"b + red_of({r})")


def _add(v: str, r: str) -> str:
    """The fold of the float sums' own paths (split and column)."""
    return f"acc += {v};"


def _short_body(op: str, acc: str, load: str, out) -> str:
    """One invocation folds its output's R elements in order."""
    fold = _in_order("0u", "mt[1]", 1, _reader(load), lambda v, r: _step(op, v, r), "  ")
    return (
        f"  let b = mt[2] + base_of(i);\n  var acc = bitcast<{acc}>(mt[3]);\n"
        f"  var ai = 0u;\n{fold}"
        f"  st_o(i, {_store(op, out)});"
    )


def _tree(lanes: int, lane: str, fold, indent: str) -> str:
    """WGSL folding ``lanes`` workgroup slots into slot 0: for s = lanes/2, ..., 1, lanes
    below s take ``fold(s)`` (the statement folding slot lane + s into slot lane), each
    level closed by a barrier. A fixed order: the result never depends on timing."""
    levels, s = [], lanes // 2
    while s:
        levels.append(f"{indent}if ({lane} < {s}u) {{ {fold(s)} }}\n{indent}workgroupBarrier();")
        s //= 2
    return "\n".join(levels)


def _subgroup_fold(src: Source, op: str, acc: str) -> bool:
    """Whether the long and split paths fold their lanes through subgroups (the variant
    of prod and fast, kernels/variants.py: float sum, max and min; argmax and integers
    keep the tree); when they do, ``wg_fold`` is declared."""
    if not (src.subgroups and op in ("sum", "max", "min") and acc == "f32"):
        return False
    src.fns.append(fold_fn("wg_fold", WG_R, op))
    return True


def _long_main(op: str, acc: str, load: str, out, sub: bool = False) -> str:
    arg = op == "argmax"  # argmax carries the index of each slot's value alongside it
    if arg:
        tree_s = _tree(WG_R, "lid", lambda s: (
            f"if (better(sv[lid + {s}u], si[lid + {s}u], sv[lid], si[lid])) "
            f"{{ sv[lid] = sv[lid + {s}u]; si[lid] = si[lid + {s}u]; }}"), "    ")  # fmt: skip
    else:
        tree_s = _tree(WG_R, "lid", lambda s: f"sv[lid] = cmb(sv[lid], sv[lid + {s}u]);", "    ")
    final = "acc = sv[0]; ai = si[0];" if arg else "acc = sv[0];"
    si_decl = f"var<workgroup> si: array<u32, {WG_R}>;\n" if arg else ""
    lanes = (
        f"    sv[lid] = acc;{' si[lid] = ai;' if arg else ''}\n    workgroupBarrier();\n"
        f"{tree_s}\n"
        f"    if (lid == 0u) {{ {final} st_o(o, {_store(op, out)}); }}\n"
        "    workgroupBarrier();\n"
    )
    if sub:
        lanes = (
            f"    acc = wg_fold(lid, acc);\n    if (lid == 0u) {{ st_o(o, {_store(op, out)}); }}\n"
        )
    return (
        ("" if sub else f"var<workgroup> sv: array<{acc}, {WG_R}>;\n") + f"{si_decl}"
        f"@compute @workgroup_size({WG_R})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
        "@builtin(num_workgroups) nwg: vec3<u32>, "
        "@builtin(local_invocation_index) lid: u32) {\n"
        "  let g = nwg.x * nwg.y;\n"
        "  for (var o = wid.x + wid.y * nwg.x; o < mt[0]; o += g) {\n"
        "    let b = mt[2] + base_of(o);\n"
        f"    var acc = bitcast<{acc}>(mt[3]);\n    var ai = 0u;\n"
        + _in_order("lid", "mt[1]", WG_R, _reader(load), lambda v, r: _step(op, v, r), "    ")
        + lanes
        + "  }\n}\n"
    )


def reduce_kernel(src: Source, op: str, ins, outs, attrs):
    x, out = ins[0], outs[0]
    axes = set(attrs["axes"])
    if op == "argmax" and len(axes) != 1:
        raise ShapeError(f"argmax takes one axis, got {sorted(axes)}")
    geom = list(zip(x.shape, x.strides))
    kept = coalesce([g for d, g in enumerate(geom) if d not in axes])
    red = coalesce([g for d, g in enumerate(geom) if d in axes])
    m = numel(out.shape)
    r = numel([x.shape[d] for d in axes])
    acc = _acc_type(x.dtype)
    src.add_meta(m, r, x.offset, _init_bits(op, acc))
    src.operand("x", x)
    one_pass = attrs.get("_order") == "one_pass" and r <= ONE_PASS_MAX_R
    column = r > SHORT_R and _column_fits(src, op, x, kept, m, r)
    one_pass = one_pass and (not column or column_one_pass(m, r))
    split = r > SHORT_R and not column and not one_pass and _split_fits(src, op, x, m, r)
    part = out
    if column:
        c = 1 if one_pass else column_chunks(r)[0]
        part = _partials(src, out, c, (c, m))
    elif split:
        c = split_chunks(r)[0]
        part = _partials(src, out, c, (m, c))
    src.operand("o", part, write=True)
    offset_fn(src, "base_of", kept)
    offset_fn(src, "red_of", red)
    src.fns.extend(_fold_fns(op, acc))
    load = "f32(ld_x({}))" if x.dtype.name == "f16" else "ld_x({})"
    if r <= SHORT_R:
        src.body = main_1d(_short_body(op, acc, load, out))
        return grid_1d(m, src.limits)
    if column:
        return _column(src, part, out, m, r, load, one_pass)
    if split:
        return _split(src, part, out, m, r, load)
    src.body = _long_main(op, acc, load, out, _subgroup_fold(src, op, acc))
    cap = src.limits["max_compute_workgroups_per_dimension"]
    return grid_1d(min(m, cap * cap), src.limits, wg=1)


def _column_fits(src: Source, op: str, x, kept, m: int, r: int) -> bool:
    """Whether the column path serves: a float sum, outputs contiguous in memory (so a
    workgroup's loads of one row are one segment), scratch for the partial sums."""
    if op != "sum" or not x.dtype.is_float or not kept or kept[-1][1] != 1:
        return False
    c, _ = column_chunks(r)
    cap = src.limits["max_compute_workgroups_per_dimension"]
    return (c == 1 or src.scratch is not None) and -(-m // COL_X) <= cap


def _partials(src: Source, out, chunks: int, shape: tuple[int, int]):
    """Where a two-launch path's first launch writes: ``out`` itself for one chunk, else
    an f32 scratch view of ``shape`` holding the per-chunk partial sums."""
    if chunks == 1:
        return out
    flat = src.scratch(shape[0] * shape[1])
    return View(flat.buf, shape, (shape[1], 1), 0, flat.dtype)


def _split_fits(src: Source, op: str, x, m: int, r: int) -> bool:
    """Whether the split path serves: a float sum with few outputs (a whole-tensor sum,
    a gradient norm's sum of squares) and enough terms for several chunks each."""
    if op != "sum" or not x.dtype.is_float or m > SPLIT_OUTPUTS:
        return False
    return split_chunks(r)[0] > 1 and src.scratch is not None


def _split(src: Source, part, out, m: int, r: int, load: str) -> list:
    """The split path: workgroup (c, o) folds chunk c of output o's terms as the long
    path folds a whole output (strided lanes, then the tree) into part[o, c]; a
    second launch then sums each output's C partials in chunk order (the short path, or
    the long one past SHORT_R chunks)."""
    c, ch = split_chunks(r)
    at = src.add_meta(ch, c)
    lanes = (
        "  sv[lid] = acc;\n  workgroupBarrier();\n"
        + _tree(WG_R, "lid", lambda s: f"sv[lid] += sv[lid + {s}u];", "  ")
        + "\n  if (lid == 0u) { st_o(o * C + wid.x, sv[0]); }\n"
    )
    sub = _subgroup_fold(src, "sum", "f32")
    if sub:
        lanes = "  acc = wg_fold(lid, acc);\n  if (lid == 0u) { st_o(o * C + wid.x, acc); }\n"
    src.body = (
        ("" if sub else f"var<workgroup> sv: array<f32, {WG_R}>;\n")
        + f"@compute @workgroup_size({WG_R})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
        "@builtin(local_invocation_index) lid: u32) {\n"
        f"  let o = wid.y; let CH = mt[{at}u]; let C = mt[{at + 1}u];\n"
        "  let r0 = wid.x * CH; let r1 = min(mt[1], r0 + CH);\n"
        "  let b = mt[2] + base_of(o);\n"
        "  var acc = 0.0;\n"
        + _in_order("r0 + lid", "r1", WG_R, _reader(load), _add, "  ")
        + lanes
        + "}\n"
    )
    return [(src, (c, m, 1)), _fold_chunks(src, part, out, axis=1)]


def _fold_chunks(src: Source, part, out, axis: int) -> tuple:
    """The launch summing ``part``'s per-chunk partials along ``axis`` (chunk order)
    into ``out``: the short path, or the long one past SHORT_R chunks."""
    fold = src.sibling()
    return fold, reduce_kernel(fold, "sum", [part], [out], {"axes": (axis,)})


def _column(src: Source, part, out, m: int, r: int, load: str, one_pass=False) -> list:
    """The column path's launches: chunk partials, then (C > 1) their sum in chunk
    order, the short path over axis 0 of [C, m]; ``one_pass``: one chunk of all R rows."""
    c, ch = (1, r) if one_pass else column_chunks(r)
    at = src.add_meta(ch)
    src.body = _column_main(load, "f16(acc)" if part.dtype.name == "f16" else "acc", at)
    launches = [(src, (-(-m // COL_X), c, 1))]
    if c > 1:
        launches.append(_fold_chunks(src, part, out, axis=0))
    return launches


def _column_main(load: str, store: str, ch_at: int) -> str:
    tree_s = _tree(COL_Y, "ly", lambda s: (
        f"sv[ly * {COL_X}u + lx] += sv[(ly + {s}u) * {COL_X}u + lx];"), "  ")  # fmt: skip
    return (
        f"var<workgroup> sv: array<f32, {COL_X * COL_Y}>;\n"
        f"@compute @workgroup_size({COL_X}, {COL_Y})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
        "@builtin(local_invocation_id) l3: vec3<u32>) {\n"
        "  let lx = l3.x; let ly = l3.y; let o = wid.x * "
        f"{COL_X}u + lx;\n"
        f"  let M = mt[0]; let R = mt[1]; let CH = mt[{ch_at}u];\n"
        "  let r0 = wid.y * CH; let r1 = min(R, r0 + CH);\n"
        "  var acc = 0.0;\n"
        "  if (o < M) {\n"
        "    let b = mt[2] + base_of(o);\n"
        + _in_order("r0 + ly", "r1", COL_Y, _reader(load), _add, "    ")
        + "  }\n"
        f"  sv[ly * {COL_X}u + lx] = acc;\n  workgroupBarrier();\n"
        f"{tree_s}\n"
        f"  if (ly == 0u && o < M) {{ acc = sv[lx]; st_o(wid.y * M + o, {store}); }}\n"
        "}\n"
    )


KERNELS = {op: reduce_kernel for op in ("sum", "max", "min", "argmax")}
