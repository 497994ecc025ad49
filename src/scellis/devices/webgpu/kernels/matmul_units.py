"""Matmul on the GPU's matrix units (devices layer): WGSL subgroup matrices.

Where the device was opened with ``chromium-experimental-subgroup-matrix`` (Dawn: the
tab, or the native host with ``SCELLIS_NATIVE=dawn``) and the adapter lists an f16 x f16
-> f32 configuration (``MatrixUnit``), a product of two f16 operands that may take
another summation order (the prod and fast tiers, as ``HALF_MATH``) runs here: a
workgroup of ``sy`` x ``sx`` subgroups computes a ``bm`` x ``bn`` tile, each subgroup
``fm`` x ``fn`` result fragments of the unit's M x N. Every K-block of ``bk`` is staged
through workgroup memory by the whole workgroup, read through the operands' strides
(transposed views cost no copy; four f16 at a time along a contiguous dim) with zeros
past the edges, so any shape and any strides run; the fragments multiply from there. At
the end each subgroup parks one f32 fragment at a time in workgroup memory, and its
lanes store it with the edges guarded, rounded to an f16 result where that is the type.

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
    # the tile: sy x sx subgroups, each fm x fn fragments; K staged bk at a time
    fm: int = 2
    fn: int = 2
    sy: int = 2
    sx: int = 2
    bk: int = 32

    @property
    def bm(self) -> int:
        return self.sy * self.fm * self.m

    @property
    def bn(self) -> int:
        return self.sx * self.fn * self.n

    @property
    def subgroups(self) -> int:
        return self.sx * self.sy

    @property
    def threads(self) -> int:
        return self.subgroup * self.subgroups

    def shared_bytes(self) -> int:
        # the staged f16 blocks, and one f32 fragment per subgroup for the store
        return 2 * self.bk * (self.bm + self.bn) + 4 * self.subgroups * self.m * self.n

    def fits(self, limits: dict) -> bool:
        return (
            self.threads <= limits["max_compute_invocations_per_workgroup"]
            and self.subgroup * self.sx <= limits.get("max_compute_workgroup_size_x", 256)
            and self.shared_bytes() <= limits["max_compute_workgroup_storage_size"]
            and self.bk % self.k == 0
        )


def choose_unit(configs: list[dict]) -> MatrixUnit | None:
    """The configuration used, from the adapter's list (dicts with ``m``, ``n``, ``k``,
    ``component_type``, ``result_component_type``, ``min_subgroup_size``,
    ``max_subgroup_size``): f16 operands, an f32 result, fragments that divide the staged
    block, the largest such. Only at a fixed subgroup size: the kernel maps invocations to
    subgroups by their index."""
    for c in sorted(configs, key=lambda c: -(c["m"] * c["n"] * c["k"])):
        sizes = c.get("min_subgroup_size"), c.get("max_subgroup_size")
        if (c["component_type"], c["result_component_type"]) != ("f16", "f32"):
            continue
        if sizes[0] and sizes[0] == sizes[1] and 32 % c["k"] == 0 and max(c["m"], c["n"]) <= 32:
            return MatrixUnit(c["m"], c["n"], c["k"], sizes[1])
    return None


def takes_units(unit: MatrixUnit, m: int, n: int, k: int) -> bool:
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


def units_main(unit: MatrixUnit, header: str, meta: dict, sides, half_out: bool) -> str:
    """The kernel body. ``header`` sets m0, n0, oa, ob, oc, M, N, K, K0 (matmul's
    ``_header``); ``meta`` names the stride words: sa_m, sa_k, sb_k, sb_n. ``sides``: how
    A and B are read (matmul's ``Side``: the stride-1 dim, "t" for M / N or "k", and
    whether that is read as vec4, the operand then bound so)."""
    u, t = unit, unit.threads
    bm, bn, bk, frag = u.bm, u.bn, u.bk, u.m * u.n
    ops = _EMULATED_OPS if u.emulated else _BUILTIN_OPS
    pairs = [(i, j) for i in range(u.fm) for j in range(u.fn)]
    side_a, side_b = sides
    stage_a = _stage("sa", "a", (bm, bk), ("m0", "k0"), ("M", "K"), (meta["sa_m"], meta["sa_k"]),
                     "oa", side_a.along == "t", side_a.vec, t)  # fmt: skip
    stage_b = _stage("sb", "b", (bk, bn), ("k0", "n0"), ("K", "N"), (meta["sb_k"], meta["sb_n"]),
                     "ob", side_b.along == "k", side_b.vec, t)  # fmt: skip
    sa, sb, so = (ops["arg"].format(x) for x in ("sa", "sb", "so"))
    loads = [
        f"      let l{i} = {ops['ld_l']}({sa}, (sr + {i * u.m}u) * {bk}u + kk, false, {bk}u);"
        for i in range(u.fm)
    ] + [
        f"      let r{j} = {ops['ld_r']}({sb}, kk * {bn}u + sc + {j * u.n}u, false, {bn}u);"
        for j in range(u.fn)
    ]
    mma = [f"      c{i}_{j} = {ops['mma']}(l{i}, r{j}, c{i}_{j});" for i, j in pairs]
    # each fragment in turn: the subgroup parks it in its slot of ``so``, then its lanes
    # store it, guarded and rounded (the barriers make the slot's values visible)
    cast = "f16" if half_out else ""
    store = []
    for i, j in pairs:
        store += [
            f"  {ops['st']}({so}, slot, c{i}_{j}, false, {u.n}u);",
            "  workgroupBarrier();",
            f"  for (var e = lane; e < {frag}u; e += {u.subgroup}u) {{",
            f"    let r = m0 + sr + {i * u.m}u + e / {u.n}u; "
            f"let c = n0 + sc + {j * u.n}u + e % {u.n}u;",
            f"    if (r < M && c < N) {{ st_o(oc + r * N + c, {cast}(so[slot + e])); }}",
            "  }",
            "  workgroupBarrier();",
        ]
    accs = "\n".join(f"  var c{i}_{j} = UC();" for i, j in pairs)
    nl = "\n"
    return f"""{_emulated(u) if u.emulated else _types(u)}
var<workgroup> sa: array<f16, {bm * bk}>;
var<workgroup> sb: array<f16, {bk * bn}>;
var<workgroup> so: array<f32, {u.subgroups * frag}>;
@compute @workgroup_size({u.subgroup * u.sx}, {u.sy}, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) l3: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
{header}
  // this subgroup's fragments: rows sr.., columns sc.. of the tile
  let sg = l3.x / {u.subgroup}u; let lane = l3.x % {u.subgroup}u;
  let sr = l3.y * {u.fm * u.m}u; let sc = sg * {u.fn * u.n}u;
  let slot = (l3.y * {u.sx}u + sg) * {frag}u;
{accs}
  for (var k0 = K0; k0 < K; k0 += {bk}u) {{
{stage_a}
{stage_b}
    workgroupBarrier();
    for (var kk = 0u; kk < {bk}u; kk += {u.k}u) {{
{nl.join(loads)}
{nl.join(mma)}
    }}
    workgroupBarrier();
  }}
{nl.join(store)}
}}
"""


_BUILTIN_OPS = {"ld_l": "subgroupMatrixLoad<UL>", "ld_r": "subgroupMatrixLoad<UR>", "arg": "&{}",
                "mma": "subgroupMatrixMultiplyAccumulate", "st": "subgroupMatrixStore"}  # fmt: skip
_EMULATED_OPS = {"ld_l": "u_ld_l", "ld_r": "u_ld_r", "mma": "u_mma", "st": "u_st", "arg": "0u"}


def _types(u: MatrixUnit) -> str:
    return f"""alias UL = subgroup_matrix_left<f16, {u.k}, {u.m}>;
alias UR = subgroup_matrix_right<f16, {u.n}, {u.k}>;
alias UC = subgroup_matrix_result<f32, {u.n}, {u.m}>;"""


def _emulated(u: MatrixUnit) -> str:
    """The fragment types and builtins as plain WGSL: a fragment is a row-major array in
    each invocation (the builtins' row-major forms, ``col_major`` false)."""
    return f"""alias UL = array<f32, {u.m * u.k}>;
alias UR = array<f32, {u.k * u.n}>;
alias UC = array<f32, {u.m * u.n}>;
fn u_ld_l(arr: u32, at: u32, cm: bool, stride: u32) -> UL {{
  var v: UL;
  for (var r = 0u; r < {u.m}u; r++) {{ for (var c = 0u; c < {u.k}u; c++) {{
    v[r * {u.k}u + c] = f32(sa[at + r * stride + c]); }} }}
  return v;
}}
fn u_ld_r(arr: u32, at: u32, cm: bool, stride: u32) -> UR {{
  var v: UR;
  for (var r = 0u; r < {u.k}u; r++) {{ for (var c = 0u; c < {u.n}u; c++) {{
    v[r * {u.n}u + c] = f32(sb[at + r * stride + c]); }} }}
  return v;
}}
fn u_mma(l: UL, r: UR, acc: UC) -> UC {{
  var v = acc;
  for (var i = 0u; i < {u.m}u; i++) {{ for (var j = 0u; j < {u.n}u; j++) {{
    var s = v[i * {u.n}u + j];
    for (var q = 0u; q < {u.k}u; q++) {{ s += l[i * {u.k}u + q] * r[q * {u.n}u + j]; }}
    v[i * {u.n}u + j] = s; }} }}
  return v;
}}
fn u_st(arr: u32, at: u32, v: UC, cm: bool, stride: u32) {{
  for (var r = 0u; r < {u.m}u; r++) {{ for (var c = 0u; c < {u.n}u; c++) {{
    so[at + r * stride + c] = v[r * {u.n}u + c]; }} }}
}}"""
