"""Matmul on the GPU's matrix units (devices layer): WGSL subgroup matrices.

Where the device was opened with ``chromium-experimental-subgroup-matrix`` (Dawn: the
tab, or the native host with ``SCELLIS_NATIVE=dawn``) and the adapter lists an f16 x f16
-> f32 configuration (``MatrixUnit``), a product of two f16 operands that may take
another summation order (the prod and fast tiers, as ``HALF_MATH``) runs here.

A workgroup is one subgroup: the builtins want offsets that are uniform across the
workgroup, which an offset derived from a subgroup's index within it is not. It computes
``fm`` x ``fn`` result fragments of the unit's M x N (a ``bm`` x ``bn`` tile), each A
fragment reused for ``fn`` products and each B fragment for ``fm``. Where the tile
divides the output, K is a multiple of the fragment's and both operands are contiguous
along one dim and aligned (``direct``), the fragments load straight from the operands'
buffers (a transposed view through the builtins' column-major form); otherwise every
K-block of ``bk`` is first staged in workgroup memory through the operands' strides
(four f16 at a time along a contiguous dim), with zeros past the edges, so any shape and
any strides run. An f32 result of a direct product is stored by the builtin; otherwise
each f32 fragment is parked in workgroup memory and the lanes store it, the edges
guarded, rounded to f16 where that is the result's type.

Accuracy: the f16 products are exact in f32 and each output sums its K products in f32
on the unit, so the bound of the f32 kernels holds, ``|C - A@B| <= K eps_f32 |A|@|B|``
(plus ``eps_f16 / 2 |C|`` for an f16 result); the unit's order within a fragment is the
hardware's, which is why ``debug`` never takes this path.
"""

from __future__ import annotations

from dataclasses import dataclass

FEATURE = "chromium-experimental-subgroup-matrix"
MIN_DIM = 32  # products with a smaller M, N or K keep the f32 kernels
TILE_NAME = "units"  # ``attrs["_tile"]`` that forces this path (benchmarks, tests)
ALIGN = 8  # direct loads: offsets and strides a multiple of this many elements (16 bytes)


@dataclass(frozen=True)
class MatrixUnit:
    """One f16 x f16 -> f32 configuration the adapter lists (fragment M x N x K) and the
    device's fixed subgroup size."""

    m: int
    n: int
    k: int
    subgroup: int
    # the fragments and their builtins written out in plain WGSL, every invocation holding
    # whole fragments (``_EMULATED``): the same staging, tiling and stores on an adapter
    # without matrix units, which is how the suite checks them against NumPy
    emulated: bool = False
    # the tile: fm x fn fragments; K staged bk at a time where the loads are not direct
    fm: int = 4
    fn: int = 2
    bk: int = 32

    @property
    def bm(self) -> int:
        return self.fm * self.m

    @property
    def bn(self) -> int:
        return self.fn * self.n

    @property
    def threads(self) -> int:
        return self.subgroup

    def shared_bytes(self) -> int:
        # the staged f16 blocks, and one f32 fragment for the store
        return 2 * self.bk * (self.bm + self.bn) + 4 * self.m * self.n

    def fits(self, limits: dict) -> bool:
        return (
            self.threads <= limits["max_compute_invocations_per_workgroup"]
            and self.subgroup <= limits.get("max_compute_workgroup_size_x", 256)
            and self.shared_bytes() <= limits["max_compute_workgroup_storage_size"]
            and self.bk % self.k == 0
        )


def choose_unit(configs: list[dict]) -> MatrixUnit | None:
    """The configuration used, from the adapter's list (dicts with ``m``, ``n``, ``k``,
    ``component_type``, ``result_component_type``, ``min_subgroup_size``,
    ``max_subgroup_size``): f16 operands, an f32 result, fragments that divide the staged
    block, the largest such. Only at a fixed subgroup size: a workgroup of that many
    invocations must be exactly one subgroup."""
    for c in sorted(configs, key=lambda c: -(c["m"] * c["n"] * c["k"])):
        sizes = c.get("min_subgroup_size"), c.get("max_subgroup_size")
        if (c["component_type"], c["result_component_type"]) != ("f16", "f32"):
            continue
        if sizes[0] and sizes[0] == sizes[1] and 32 % c["k"] == 0 and max(c["m"], c["n"]) <= 32:
            return MatrixUnit(c["m"], c["n"], c["k"], sizes[1])
    return None


def takes_units(m: int, n: int, k: int) -> bool:
    """Whether a product is large enough for the units to pay."""
    return min(m, n, k) >= MIN_DIM


def _stage(arr: str, name: str, block: tuple[int, int], origin: tuple[str, str],
           sizes: tuple[str, str], strides: tuple[str, str], base: str, row_fast: bool,
           vec: bool, threads: int) -> str:  # fmt: skip
    """Copy a rows x cols ``block`` (at ``origin``) of operand ``name`` into ``arr``
    (row-major), zeros past ``sizes``; consecutive invocations walk the operand's stride-1
    dim (``row_fast``: its rows), four elements at a time where it is bound as vec4."""
    (rows, cols), (row0, col0), (rows_n, cols_n), (s_row, s_col) = block, origin, sizes, strides
    if vec:  # the stride-1 dim has stride 1 and a size that is a multiple of 4
        fast = rows if row_fast else cols
        if row_fast:
            r, c, at = f"(e % {fast // 4}u) * 4u", f"e / {fast // 4}u", f"gr + gc * {s_col}"
            put = [f"{arr}[(r + {q}u) * {cols}u + c] = v[{q}];" for q in range(4)]
        else:
            r, c, at = f"e / {fast // 4}u", f"(e % {fast // 4}u) * 4u", f"gr * {s_row} + gc"
            put = [f"{arr}[r * {cols}u + c + {q}u] = v[{q}];" for q in range(4)]
        return f"""    for (var e = li; e < {rows * cols // 4}u; e += {threads}u) {{
      let r = {r}; let c = {c}; let gr = {row0} + r; let gc = {col0} + c;
      var v = vec4<f16>(0.0);
      if (gr < {rows_n} && gc < {cols_n}) {{ v = ld_{name}(({base} + {at}) / 4u); }}
      {" ".join(put)}
    }}"""
    if row_fast:
        r, c = f"e % {rows}u", f"e / {rows}u"
    else:
        r, c = f"e / {cols}u", f"e % {cols}u"
    return f"""    for (var e = li; e < {rows * cols}u; e += {threads}u) {{
      let r = {r}; let c = {c}; let gr = {row0} + r; let gc = {col0} + c;
      var v = f16(0.0);
      if (gr < {rows_n} && gc < {cols_n}) {{ v = ld_{name}({base} + gr * {s_row} + gc * {s_col}); }}
      {arr}[r * {cols}u + c] = v;
    }}"""  # noqa: E501


def units_main(unit: MatrixUnit, header: str, meta: dict, sides, half_out: bool,
               direct: bool) -> str:  # fmt: skip
    """The kernel body. ``header`` sets m0, n0, oa, ob, oc, M, N, K, K0 (matmul's
    ``_header``); ``meta`` names the stride words: sa_m, sa_k, sb_k, sb_n. ``sides``: how
    A and B are read (matmul's ``Side``: the stride-1 dim, "t" for M / N or "k", and
    whether that is read as vec4, the operand then bound so). ``direct``: fragments load
    from the operands' buffers (see the module docstring for when)."""
    u = unit
    bm, bn, frag = u.bm, u.bn, u.m * u.n
    ops = _EMULATED_OPS if u.emulated else _BUILTIN_OPS
    pairs = [(i, j) for i in range(u.fm) for j in range(u.fn)]
    side_a, side_b = sides
    if direct:
        step, staging = u.k, ""
        loads = _direct_loads(u, ops, meta, side_a, side_b)
    else:
        step = u.bk
        stage_a = _stage("sa", "a", (bm, step), ("m0", "k0"), ("M", "K"),
                         (meta["sa_m"], meta["sa_k"]), "oa", side_a.along == "t", side_a.vec,
                         u.threads)  # fmt: skip
        stage_b = _stage("sb", "b", (step, bn), ("k0", "n0"), ("K", "N"),
                         (meta["sb_k"], meta["sb_n"]), "ob", side_b.along == "k", side_b.vec,
                         u.threads)  # fmt: skip
        staging = f"{stage_a}\n{stage_b}\n    workgroupBarrier();"
        loads = _staged_loads(u, ops, step)
    mma = [f"      c{i}_{j} = {ops['mma']}(l{i}, r{j}, c{i}_{j});" for i, j in pairs]
    store = _store(u, ops, pairs, half_out, direct)
    accs = "\n".join(f"  var c{i}_{j} = UC();" for i, j in pairs)
    shared = ""
    if not direct:
        shared = (f"var<workgroup> sa: array<f16, {bm * step}>;\n"
                  f"var<workgroup> sb: array<f16, {step * bn}>;\n")  # fmt: skip
    if not (direct and not half_out):
        shared += f"var<workgroup> so: array<f32, {frag}>;\n"
    nl = "\n"
    return f"""{_emulated(u, direct, half_out) if u.emulated else _types(u)}
{shared}@compute @workgroup_size({u.subgroup}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) l3: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
{header}
{accs}
  for (var k0 = K0; k0 < K; k0 += {step}u) {{
{staging}
    for (var kk = 0u; kk < {step}u; kk += {u.k}u) {{
{nl.join(loads)}
{nl.join(mma)}
    }}
{"" if direct else "    workgroupBarrier();"}
  }}
{nl.join(store)}
}}
"""


def _staged_loads(u: MatrixUnit, ops: dict, bk: int) -> list[str]:
    sa, sb = ops["arg"].format("sa"), ops["arg"].format("sb")
    return [
        f"      let l{i} = {ops['ld_l']}({sa}, {i * u.m * bk}u + kk, false, {bk}u);"
        for i in range(u.fm)
    ] + [
        f"      let r{j} = {ops['ld_r']}({sb}, kk * {u.bn}u + {j * u.n}u, false, {u.bn}u);"
        for j in range(u.fn)
    ]


def _direct_loads(u: MatrixUnit, ops: dict, meta: dict, side_a, side_b) -> list[str]:
    """Fragments straight from the buffers: A's rows m0 + i*m.., B's columns n0 + j*n..,
    at k = k0 (+ kk, 0 here: one fragment's K per step). A read along K is row-major with
    its row stride; along M, column-major with its K stride (and B alike)."""
    a, b = ops["arg"].format("a_w0"), ops["arg"].format("b_w0")
    a_cm, a_stride = (False, meta["sa_m"]) if side_a.along == "k" else (True, meta["sa_k"])
    b_cm, b_stride = (False, meta["sb_k"]) if side_b.along == "t" else (True, meta["sb_n"])
    cm = lambda x: "true" if x else "false"  # noqa: E731
    return [
        f"      let l{i} = {ops['ld_la']}({a}, oa + (m0 + {i * u.m}u) * {meta['sa_m']} + "
        f"k0 * {meta['sa_k']}, {cm(a_cm)}, {a_stride});"
        for i in range(u.fm)
    ] + [
        f"      let r{j} = {ops['ld_rb']}({b}, ob + k0 * {meta['sb_k']} + "
        f"(n0 + {j * u.n}u) * {meta['sb_n']}, {cm(b_cm)}, {b_stride});"
        for j in range(u.fn)
    ]


def _store(u: MatrixUnit, ops: dict, pairs, half_out: bool, direct: bool) -> list[str]:
    """An f32 result of a direct product: the builtin stores each fragment. Otherwise each
    fragment in turn is parked in ``so`` and the lanes store it, guarded and rounded (the
    barriers make the slot's values visible to every lane)."""
    if direct and not half_out:
        o = ops["arg"].format("o_w0")
        return [
            f"  {ops['st_o']}({o}, oc + (m0 + {i * u.m}u) * N + n0 + {j * u.n}u, c{i}_{j}, "
            "false, N);"
            for i, j in pairs
        ]
    so, cast, out = ops["arg"].format("so"), ("f16" if half_out else ""), []
    for i, j in pairs:
        out += [
            f"  {ops['st']}({so}, 0u, c{i}_{j}, false, {u.n}u);",
            "  workgroupBarrier();",
            f"  for (var e = li; e < {u.m * u.n}u; e += {u.subgroup}u) {{",
            f"    let r = m0 + {i * u.m}u + e / {u.n}u; let c = n0 + {j * u.n}u + e % {u.n}u;",
            f"    if (r < M && c < N) {{ st_o(oc + r * N + c, {cast}(so[e])); }}",
            "  }",
            "  workgroupBarrier();",
        ]
    return out


# each call's first argument is the array (``arg``): the builtins take a pointer; WGSL
# functions may not, so the emulated ones name their array themselves and take a dummy.
# ld_l / ld_r load staged fragments, ld_la / ld_rb fragments of the operands' buffers;
# st stores into the workgroup's slot, st_o into the result's buffer
_BUILTIN_OPS = {
    "ld_l": "subgroupMatrixLoad<UL>", "ld_r": "subgroupMatrixLoad<UR>",
    "ld_la": "subgroupMatrixLoad<UL>", "ld_rb": "subgroupMatrixLoad<UR>",
    "mma": "subgroupMatrixMultiplyAccumulate", "st": "subgroupMatrixStore",
    "st_o": "subgroupMatrixStore", "arg": "&{}",
}  # fmt: skip
_EMULATED_OPS = {"ld_l": "u_ld_l", "ld_r": "u_ld_r", "ld_la": "u_ld_la", "ld_rb": "u_ld_rb",
                 "mma": "u_mma", "st": "u_st", "st_o": "u_st_o", "arg": "0u"}  # fmt: skip


def _types(u: MatrixUnit) -> str:
    return f"""alias UL = subgroup_matrix_left<f16, {u.k}, {u.m}>;
alias UR = subgroup_matrix_right<f16, {u.n}, {u.k}>;
alias UC = subgroup_matrix_result<f32, {u.n}, {u.m}>;"""


def _emulated(u: MatrixUnit, direct: bool, half_out: bool) -> str:
    """The fragment types and builtins as plain WGSL: a fragment is a row-major array in
    each invocation. Each function names the array it reads or writes (``arr`` a dummy:
    WGSL functions may not take pointers to workgroup or storage memory)."""

    def load(name: str, arr: str, rows: int, cols: int, ty: str, read: str) -> str:
        return f"""fn {name}(arr: u32, at: u32, cm: bool, stride: u32) -> {ty} {{
  var v: {ty};
  for (var r = 0u; r < {rows}u; r++) {{ for (var c = 0u; c < {cols}u; c++) {{
    let e = select(at + r * stride + c, at + c * stride + r, cm);
    v[r * {cols}u + c] = f32({read.format(arr=arr)}); }} }}
  return v;
}}"""

    fns = [
        f"alias UL = array<f32, {u.m * u.k}>;",
        f"alias UR = array<f32, {u.k * u.n}>;",
        f"alias UC = array<f32, {u.m * u.n}>;",
        f"""fn u_mma(l: UL, r: UR, acc: UC) -> UC {{
  var v = acc;
  for (var i = 0u; i < {u.m}u; i++) {{ for (var j = 0u; j < {u.n}u; j++) {{
    var s = v[i * {u.n}u + j];
    for (var q = 0u; q < {u.k}u; q++) {{ s += l[i * {u.k}u + q] * r[q * {u.n}u + j]; }}
    v[i * {u.n}u + j] = s; }} }}
  return v;
}}""",
    ]
    if not direct:
        fns.append(load("u_ld_l", "sa", u.m, u.k, "UL", "{arr}[e]"))
        fns.append(load("u_ld_r", "sb", u.k, u.n, "UR", "{arr}[e]"))
    if not (direct and not half_out):
        fns.append(f"""fn u_st(arr: u32, at: u32, v: UC, cm: bool, stride: u32) {{
  for (var r = 0u; r < {u.m}u; r++) {{ for (var c = 0u; c < {u.n}u; c++) {{
    so[at + r * stride + c] = v[r * {u.n}u + c]; }} }}
}}""")
    if direct:  # the operands' scalar accessors (a direct product binds them so)
        fns.append(load("u_ld_la", "a", u.m, u.k, "UL", "ld_{arr}(e)"))
        fns.append(load("u_ld_rb", "b", u.k, u.n, "UR", "ld_{arr}(e)"))
    if direct and not half_out:
        fns.append(f"""fn u_st_o(arr: u32, at: u32, v: UC, cm: bool, stride: u32) {{
  for (var r = 0u; r < {u.m}u; r++) {{ for (var c = 0u; c < {u.n}u; c++) {{
    st_o(at + r * stride + c, v[r * {u.n}u + c]); }} }}
}}""")
    return "\n".join(fns)
