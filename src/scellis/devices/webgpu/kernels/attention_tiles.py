"""Flash-attention kernels on register micro-tiles (devices layer): variants ``tile*``.

The maths is ``attention_rows``' (online softmax forward; a dq pass walking key tiles
and a dk/dv pass walking query tiles in the backward, no float atomics), arranged as
a matmul kernel arranges it, so that every value read from workgroup memory feeds
several multiply-adds:

- Tiles of q, k, v (and dO) are staged in workgroup memory as rows of ceil(D / 4)
  vec4 (zero padded), one vector more per row so that neighbouring rows start in other
  memory banks. Arrays are indexed [row][vec4 column] and the short inner loops are
  written out whole: the columns are constants, which the compiler folds into each
  read's address after one row offset, and where an index check guards every read (in
  the browser) it is on the row alone (4-8% faster on an H100 than one flat index per
  read).
- A score block (a BQ x BK tile of q kᵀ, or of dO vᵀ alongside it in the backward) is
  shared among the invocations as SR x SC register micro-tiles: per step of 4 columns
  an invocation reads SR + SC vectors and does 4 * SR * SC multiply-adds.
- The softmax of a score block runs in workgroup memory, TPR invocations per row
  reducing through it (on prod and fast, through subgroup shuffles where the device
  has them: ``attention_subgroups``); each row's running max and sum live in those
  invocations.
- Products with the probabilities (P v, dS k, Pᵀ dO, dSᵀ q) give each invocation RT
  rows x one vec4 column group of the result, held in registers across all tiles.

Tile sizes are the largest of a fixed list whose arrays fit the adapter's workgroup
storage; a variant may cap them (smaller tiles: less storage, more workgroups per
core). A shape that fits none is left to the row kernels (``fits`` says which).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import attention_subgroups
from .attention_common import addr, grid, head, new_source
from .common import Source

MASKED = "-3.0e38"  # a score no kept key reaches: exp(MASKED - m) is 0
# (query rows, key rows) per tile, best first; for dkv the pair is (query tile, keys)
FORWARD_TILES = ((64, 64), (64, 32), (32, 32), (32, 16), (16, 16), (16, 8), (8, 8))
DQ_TILES = ((64, 32), (32, 32), (32, 16), (16, 16), (16, 8), (8, 8))
DKV_TILES = ((32, 64), (32, 32), (16, 32), (16, 16), (8, 16), (8, 8))
MICRO = ((4, 4), (4, 2), (2, 2), (2, 1), (1, 1))  # score micro-tiles, largest first
MAX_RT = 8  # result rows an invocation may hold (RT vec4 registers per result)
LANES = 32  # invocations that run in step (an NVIDIA warp); only speed depends on it


def _padded(n4s: int) -> int:
    """Row stride, in vec4, of a score block whose rows hold ``n4s`` vec4: one more, so
    that consecutive rows start 4 banks apart and a row-wise pass over the block (the
    softmax, a transposed store) does not hit one bank from every row."""
    return n4s + 1


@dataclass(frozen=True)
class Cap:
    """A variant's bounds: tile rows and invocations per workgroup."""

    rows: int = 64
    threads: int = 256  # the WebGPU default limit


@dataclass(frozen=True)
class Plan:
    """One kernel's geometry (see the module docstring for the names)."""

    wg: int
    bq: int
    bk: int
    d: int
    sr: int
    sc: int
    rt: int  # result rows per invocation, over the ``acc_rows`` rows of the result
    tpr: int  # invocations per row in a row reduction

    @property
    def cg(self) -> int:  # vec4 column groups
        return -(-self.d // 4)

    @property
    def cgp(self) -> int:  # vec4 row stride in workgroup memory (one of padding)
        return self.cg + 1


def _micro(rows: int, cols: int, wg: int) -> tuple[int, int]:
    for sr, sc in MICRO:
        if rows % sr == 0 and cols % sc == 0 and (rows // sr) * (cols // sc) >= wg:
            return sr, sc
    return 1, 1


def _result_rows(rows: int, cg: int, wg: int) -> int | None:
    for rt in (1, 2, 4, 8):
        if rt <= MAX_RT and rows % rt == 0 and (rows // rt) * cg <= wg:
            return rt
    return None


def _pow2_at_most(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def _plan(src: Source, d: int, tiles, cap: Cap, kind: str) -> Plan | None:
    """The first tile pair of ``tiles`` (rows <= cap.rows) whose kernel fits ``src``'s limits."""
    wg = min(cap.threads, src.limits["max_compute_invocations_per_workgroup"])
    room = src.limits["max_compute_workgroup_storage_size"] // 4
    for bq, bk in tiles:
        if max(bq, bk) > cap.rows or bq > wg:
            continue
        acc_rows = bk if kind == "dkv" else bq
        rt = _result_rows(acc_rows, -(-d // 4), wg)
        if rt is None:
            continue
        tpr = _pow2_at_most(min(wg // bq, bk if kind == "forward" else wg))
        sr, sc = _micro(bq, bk, wg)
        p = Plan(wg, bq, bk, d, sr, sc, rt, tpr)
        if _floats(p, kind) <= room:
            return p
    return None


def _floats(p: Plan, kind: str) -> int:
    """Workgroup storage of ``kind``'s kernel, in f32 words."""
    vec_rows = {"forward": p.bq + 2 * p.bk, "dq": 2 * p.bq + 2 * p.bk, "dkv": 2 * p.bq + 2 * p.bk}
    blocks = {"forward": 1, "dq": 1, "dkv": 2}[kind]
    rows = {"forward": 2 * p.bq * p.tpr + p.bq, "dq": p.bq * p.tpr + 2 * p.bq}
    rows["dkv"] = rows["dq"]
    padded = p.bq * (p.bk + 4) if kind != "dkv" else p.bk * (p.bq + 4)
    return vec_rows[kind] * p.cgp * 4 + blocks * padded + rows[kind]


def fits(src: Source, d: int, cap: Cap) -> bool:
    """Whether all three tiled kernels fit ``src``'s limits for head size ``d``."""
    return all(
        _plan(src, d, tiles, cap, kind) is not None
        for tiles, kind in ((FORWARD_TILES, "forward"), (DQ_TILES, "dq"), (DKV_TILES, "dkv"))
    )


# -- WGSL pieces --


def _decl(src: Source, name: str, ty: str, n: int) -> None:
    src.decls.append(f"var<workgroup> {name}: array<{ty}, {n}>;")


def _decl_rows(src: Source, name: str, rows: int, cols: int) -> None:
    """A workgroup array of ``rows`` rows of ``cols`` vec4, indexed [row][column]: with
    the column a constant (unrolled loops), a read's address is one row offset, the
    same along the loop, plus a constant (the module docstring says why)."""
    src.decls.append(f"var<workgroup> {name}: array<array<vec4<f32>, {cols}>, {rows}>;")


@dataclass(frozen=True)
class Operand:
    """One operand staged into workgroup memory: its array there, its accessor, its meta
    position, and whether it is read as vec4 (bound as ``array<vec4<T>>``: d a multiple
    of 4 with stride 1, its offset and other strides 4-aligned; ``vec4_views``)."""

    shared: str
    name: str
    at: int
    vec: bool


def vec4_views(views: dict, d: int, names=("q", "k", "v")) -> set:
    """The views of ``names`` that can be read four elements at a time."""
    return {
        n
        for n in names
        if d % 4 == 0
        and views[n].strides[3] == 1
        and views[n].offset % 4 == 0
        and all(st % 4 == 0 for st in views[n].strides[:3])
    }


def _operands(at: dict, vec: set, pairs) -> tuple:
    return tuple(Operand(shared, name, at[name], name in vec) for shared, name in pairs)


@dataclass(frozen=True)
class Staging:
    """A tile of ``rows`` rows of each operand, read in two steps: ``fetch(base)`` issues
    the global reads of the rows from ``base`` into registers, ``stash`` stores them into
    workgroup memory (rows at or past ``limit``, and the padding columns, as zeros).
    Consecutive invocations read consecutive columns (coalesced when d's stride is 1).
    A loop stashes tile i, passes a barrier, then fetches tile i + 1 before it multiplies
    tile i, so the reads' latency hides behind the arithmetic instead of stalling every
    invocation at the top of each iteration."""

    p: Plan
    rows: int
    limit: str
    operands: tuple

    def _units(self, o: Operand) -> int:  # reads per row
        return self.p.cg if o.vec else 4 * self.p.cg

    def _passes(self, o: Operand):
        """(pass, WGSL that sets e, ii, c: the read, its row and its column unit)."""
        u, wg = self._units(o), self.p.wg
        for n in range(-(-self.rows * u // wg)):
            yield n, f"let e = lid + {n * wg}u; let ii = e / {u}u; let c = e - ii * {u}u;"

    @property
    def decl(self) -> str:
        out = []
        for o in self.operands:
            zero = "vec4<f32>(0.0)" if o.vec else "0.0"
            out += [f"  var f_{o.shared}{n} = {zero};" for n, _ in self._passes(o)]
        return "\n".join(out) + "\n"

    def fetch(self, base: str) -> str:
        out = []
        for o in self.operands:
            n_units = self.rows * self._units(o)
            for n, at in self._passes(o):
                f = f"f_{o.shared}{n}"
                out.append(f"    {{ {at} let i = {base} + ii;")
                if o.vec:
                    read = f"vec4<f32>(ld_{o.name}({addr(o.at, 'i', 'c * 4u')} / 4u))"
                    out.append(
                        f"      {f} = vec4<f32>(0.0); "
                        f"if (e < {n_units}u && i < {self.limit}) {{ {f} = {read}; }} }}"
                    )
                else:
                    ok = f"e < {n_units}u && i < {self.limit} && c < {self.p.d}u"
                    read = f"ld_{o.name}({addr(o.at, 'i', 'c')})"
                    out.append(f"      {f} = 0.0; if ({ok}) {{ {f} = {read}; }} }}")
        return "\n".join(out) + "\n"

    @property
    def stash(self) -> str:
        out = []
        for o in self.operands:
            n_units = self.rows * self._units(o)
            slot = f"{o.shared}[ii][c]" if o.vec else f"{o.shared}[ii][c / 4u][c & 3u]"
            out += [
                f"    {{ {at} if (e < {n_units}u) {{ {slot} = f_{o.shared}{n}; }} }}"
                for n, at in self._passes(o)
            ]
        return "\n".join(out) + "\n"


def _load(p: Plan, rows: int, base: str, limit: str, operands) -> str:
    """A tile staged at once (read, then stored), for a tile read once per workgroup."""
    st = Staging(p, rows, limit, operands)
    return "  {\n" + st.decl + st.fetch(base) + st.stash + "  }\n"


def _prefetch(fetch, var: str, step: int, end: str) -> str:
    """The next iteration's tile (``fetch(base)``), read now; none past the loop's end
    (a test uniform across the workgroup)."""
    head = f"    let {var}n = {var} + {step}u;\n    if ({var}n < {end}) {{\n"
    return head + fetch(var + "n") + "    }\n"


def _lanes(index: str, nx: int, ny: int, y: str, x: str) -> str:
    """WGSL setting ``y`` < ny and ``x`` < nx from ``index`` < nx * ny, so that each run of
    ``LANES`` consecutive invocations covers a block of about 8 x 4 (x, y) pairs rather
    than a strip of 2 rows: a step of a micro-tiled product then reads fewer distinct
    rows of each operand per subgroup, which workgroup memory serves in fewer passes.
    Only which invocation computes which element changes, never an element's sums."""
    bx = min(8, nx)
    by = LANES // bx
    if nx % bx or ny % by:
        return f"let {y} = {index} / {nx}u; let {x} = {index} - {y} * {nx}u;"
    nbx = nx // bx
    return (
        f"let lb_ = {index} / {LANES}u; let ll_ = {index} - lb_ * {LANES}u; "
        f"let {x} = (lb_ % {nbx}u) * {bx}u + ll_ % {bx}u; "
        f"let {y} = (lb_ / {nbx}u) * {by}u + ll_ / {bx}u;"
    )


FULL_UNROLL = 32  # inner loops at most this long are written out whole


def _unroll(n: int) -> int:
    """Steps of a loop of ``n`` written out per iteration: all of them for a short loop
    (constant column indices), else 8, 4, 2 or 1 (the matmul kernel's inner loop gained
    30% from unrolling on an H200)."""
    if n <= FULL_UNROLL:
        return n
    return next(u for u in (8, 4, 2, 1) if n % u == 0)


def _step(var: str, n: int, un: int, u: int) -> str:
    """WGSL of step ``u`` of an unrolled loop over ``var``: a constant where the loop
    is written out whole."""
    if un == n:
        return f"{u}u"
    return f"{var} + {u}u" if u else var


def _loop(var: str, n: int, un: int) -> tuple[str, str]:
    """The head and tail of a loop of ``n`` steps over ``var``, ``un`` per iteration
    (none where it is written out whole)."""
    if un == n:
        return "{", "}"
    return f"for (var {var} = 0u; {var} < {n}u; {var} += {un}u) {{", "}"


def _fma_chain(acc: str, factors) -> str:
    """WGSL: ``acc`` plus the products of the (a, b) ``factors``, added in order as fused
    multiply-adds (fewer instructions and roundings than ``acc += dot(...)``)."""
    expr = acc
    for a, b in factors:
        expr = f"fma({a}, {b}, {expr})"
    return f"{acc} = {expr};"


def _scores(p: Plan, pairs, epilogue) -> str:
    """For each (li, lj) of the BQ x BK block, the dot products of row li of ``a`` with
    row lj of ``b`` for each (a, b) of ``pairs`` (``s0``, ``s1``, ... in ``epilogue``),
    summed in order over d. Invocation rows and columns are strided (li = ty + r * BQ/SR)
    so that neighbours read neighbouring rows."""
    nx, ry = p.bk // p.sc, p.bq // p.sr
    items = ry * nx
    rs = [(r, s) for r in range(p.sr) for s in range(p.sc)]
    un = _unroll(p.cg)
    out = [
        f"    for (var g = lid; g < {items}u; g += {p.wg}u) {{",
        "      " + _lanes("g", nx, ry, "ty", "tx"),
    ]
    out += [f"      let ra{r} = ty + {r * ry}u;" for r in range(p.sr)]
    out += [f"      let rb{s} = tx + {s * nx}u;" for s in range(p.sc)]
    out += [f"      var a{k}_{r}_{s} = 0.0;" for k in range(len(pairs)) for r, s in rs]
    top, end = _loop("c0", p.cg, un)
    out.append("      " + top)
    for u in range(un):
        c = _step("c0", p.cg, un, u)
        out.append("        {")
        for k, (a, b) in enumerate(pairs):
            out += [f"          let {a}{r} = {a}[ra{r}][{c}];" for r in range(p.sr)]
            out += [f"          let {b}{s} = {b}[rb{s}][{c}];" for s in range(p.sc)]
            for r, s in rs:
                pairs_xyzw = [(f"{a}{r}.{x}", f"{b}{s}.{x}") for x in "xyzw"]
                out.append(f"          {_fma_chain(f'a{k}_{r}_{s}', pairs_xyzw)}")
        out.append("        }")
    out.append("      " + end)
    for r, s in rs:
        names = "".join(f" let s{k} = a{k}_{r}_{s};" for k in range(len(pairs)))
        out.append(f"      {{ let li = ty + {r * ry}u; let lj = tx + {s * nx}u;{names}")
        out.append(epilogue)
        out.append("      }")
    out.append("    }")
    return "\n".join(out) + "\n"


def _product(p: Plan, rows: int, n4s: int, terms) -> str:
    """acc_<name>_r += sum over n of ``weights``[row r, n] * ``vecs``[n] for each (name,
    weights array, vecs array) of ``terms`` (weights as rows of ``n4s`` vec4, stored
    ``_padded(n4s)`` apart), summed in order over n; an invocation owns result rows
    og + r * rows/RT of vec4 column ocg."""
    ry = rows // p.rt
    un = _unroll(n4s)
    out = [f"    if (lid < {ry * p.cg}u) {{"]
    out += [f"      let rw{r} = og + {r * ry}u;" for r in range(p.rt)]
    top, end = _loop("m4", n4s, un)
    out.append("      " + top)
    for step in range(un):
        n4 = _step("m4", n4s, un, step)
        out.append("        {")
        for name, w, vecs in terms:
            out += [f"          let {vecs}{u} = {vecs}[{n4} * 4u + {u}u][ocg];" for u in range(4)]
            for r in range(p.rt):
                out.append(f"          let {w}{r} = {w}[rw{r}][{n4}];")
                terms_xyzw = [
                    (f"vec4<f32>({w}{r}.{x})", f"{vecs}{u}") for u, x in enumerate("xyzw")
                ]
                out.append(f"          {_fma_chain(f'acc_{name}{r}', terms_xyzw)}")
        out.append("        }")
    out += ["      " + end, "    }"]
    return "\n".join(out) + "\n"


def _accumulators(p: Plan, names, rows: int) -> str:
    ry = rows // p.rt
    out = ["  " + _lanes("lid", p.cg, ry, "og", "ocg") + f"  // result rows og + r*{ry}"]
    out += [f"  var acc_{n}{r} = vec4<f32>(0.0);" for n in names for r in range(p.rt)]
    return "\n".join(out) + "\n"


def _store(p: Plan, rows: int, name: str, index: str, limit: str, factor: str) -> str:
    """Store the live components of acc_<name>_r * ``factor`` at ``index`` (WGSL of li, c)."""
    ry = rows // p.rt
    out = [f"  if (lid < {ry * p.cg}u) {{"]
    for r in range(p.rt):
        out.append(f"    {{ let li = og + {r * ry}u; let i = r0 + li;")
        out.append(f"      if (i < {limit}) {{ let f = {factor};")
        for u, x in enumerate("xyzw"):
            out.append(
                f"        if (ocg * 4u + {u}u < {p.d}u) {{ "
                f"let c = ocg * 4u + {u}u; st_o({index}, acc_{name}{r}.{x} * f); }}"
            )
        out.append("      }")
        out.append("    }")
    out.append("  }")
    return "\n".join(out) + "\n"


def _row_stats(p: Plan, base: str, at: dict, sub: bool = False) -> str:
    """Stage each tile row's logsumexp and delta = dO . O - g_lse (rows at or past T: 0),
    TPR invocations per row summing strided columns, then one finishing each row (or,
    ``sub``, where the rows' lanes form subgroup runs, a butterfly and a barrier)."""
    if not sub:
        return _row_stats_tree(p, base, at)
    row = f"""      let ri = lid / {p.tpr}u; let part = lid - ri * {p.tpr}u; let i = {base} + ri;
      let mine = lid < {p.bq * p.tpr}u;
      var pd = 0.0;
      if (mine && i < T) {{
        for (var c = part; c < {p.d}u; c += {p.tpr}u) {{
          pd += ld_gy({addr(at["gy"], "i", "c")}) * ld_y({addr(at["y"], "i", "c")});
        }}
      }}
"""
    finish = f"""      if (mine && part == 0u) {{
        var dl = 0.0; var ls = 0.0;
        if (i < T) {{
          dl = pd - ld_gy({addr(at["gy"], "i", f"{p.d}u")});
          ls = ld_y({addr(at["y"], "i", f"{p.d}u")});
        }}
        lse[ri] = ls; dlt[ri] = dl;
      }}
      workgroupBarrier();
"""
    sub_text = row + attention_subgroups.butterfly("pd", p.tpr, "+", "      ") + finish
    return attention_subgroups.either(sub_text, _row_stats_tree(p, base, at))


def _row_stats_tree(p: Plan, base: str, at: dict) -> str:
    return f"""    if (lid < {p.bq * p.tpr}u) {{
      let ri = lid / {p.tpr}u; let part = lid - ri * {p.tpr}u; let i = {base} + ri;
      var pd = 0.0;
      if (i < T) {{
        for (var c = part; c < {p.d}u; c += {p.tpr}u) {{
          pd += ld_gy({addr(at["gy"], "i", "c")}) * ld_y({addr(at["y"], "i", "c")});
        }}
      }}
      red[lid] = pd;
    }}
    workgroupBarrier();
    if (lid < {p.bq}u) {{
      let i = {base} + lid;
      var dl = 0.0; var ls = 0.0;
      if (i < T) {{
        for (var u = 0u; u < {p.tpr}u; u++) {{ dl += red[lid * {p.tpr}u + u]; }}
        dl -= ld_gy({addr(at["gy"], "i", f"{p.d}u")});
        ls = ld_y({addr(at["y"], "i", f"{p.d}u")});
      }}
      lse[lid] = ls; dlt[lid] = dl;
    }}
"""


_STATS_DECL = "  var f_dl = 0.0; var f_ls = 0.0;\n"
_STATS_STASH = "    if (lid < {bq}u) {{ lse[lid] = f_ls; dlt[lid] = f_dl; }}\n"


def _stats_fetch(p: Plan, base: str, at: dict) -> str:
    """``_row_stats``' results for the tile of rows at ``base``, read into registers: the
    logsumexp from the forward's output, delta from the dq pass's scratch (rows at or
    past T: 0); ``_STATS_STASH`` stores them."""
    return f"""    if (lid < {p.bq}u) {{
      let i = {base} + lid; f_dl = 0.0; f_ls = 0.0;
      if (i < T) {{ f_dl = ld_s(bh * T + i); f_ls = ld_y({addr(at["y"], "i", f"{p.d}u")}); }}
    }}
"""


# -- forward --


def forward(base: Source, ins, outs, attrs, cap: Cap):
    q, k, v = ins
    b, h, t, d = q.shape
    s = k.shape[2]
    p = _plan(base, d, FORWARD_TILES, cap, "forward")
    views = {"q": q, "k": k, "v": v}
    vec = vec4_views(views, d)
    src, at = new_source(base, views, outs[0], b, h, t, s, d, attrs, vec)
    bk4 = p.bk // 4
    sst = _padded(bk4)  # the score block's row stride
    for name, n in (("qs", p.bq), ("ks", p.bk), ("vs", p.bk)):
        _decl_rows(src, name, n, p.cgp)
    _decl_rows(src, "ss", p.bq, sst)  # scores, then probabilities
    _decl(src, "red", "f32", p.bq * p.tpr)  # partial maxima
    _decl(src, "rsum", "f32", p.bq * p.tpr)  # partial sums
    _decl(src, "corr", "f32", p.bq)  # each row's rescale this tile; at the end, its sum
    sub = attention_subgroups.applies(src, p.tpr, _floats(p, "forward"))
    if sub:
        attention_subgroups.declare(src)
    out_at = src.add_meta(outs[0].offset)  # a fresh contiguous [B, H, T, D+1]
    keys = Staging(p, p.bk, "S", _operands(at, vec, [("ks", "k"), ("vs", "v")]))
    score = f"""        let i = r0 + li; let j = j0 + lj;
        let keep = j < S && (!causal || j <= i);
        ss[li][lj / 4u][lj & 3u] = select({MASKED}, s0 * scale, keep);"""
    src.body = (
        head(p.wg, p.bq)
        + _load(p, p.bq, "r0", "T", _operands(at, vec, [("qs", "q")]))
        + _accumulators(p, ["o"], p.bq)
        + (attention_subgroups.check(p.tpr) if sub else "")
        + f"""  // the softmax lanes: TPR per row, each keeping the row's running max and sum
  let srow = lid / {p.tpr}u; let part = lid - srow * {p.tpr}u;
  let soft = lid < {p.bq * p.tpr}u;
  var m = {MASKED}; var l = 0.0;
  // keys any row of this workgroup may see: all, or up to its last row when causal
  var kend = S;
  if (causal) {{ kend = min(S, min(T, r0 + {p.bq}u)); }}
"""
        + keys.decl
        + keys.fetch("0u")
        + f"""  for (var j0 = 0u; j0 < kend; j0 += {p.bk}u) {{
"""
        + keys.stash
        + "    workgroupBarrier();\n"
        + _prefetch(keys.fetch, "j0", p.bk, "kend")
        + _scores(p, [("qs", "ks")], score)
        + "    workgroupBarrier();\n"
        + _softmax(p, sub)
        + _rescale(p)
        + _product(p, p.bq, bk4, [("o", "ss", "vs")])
        + """    workgroupBarrier();
  }
"""
        + f"""  let ob = mt[{out_at}u] + (b * H + h) * T * {d + 1}u;
  if (soft && part == 0u) {{
    corr[srow] = l;
    if (r0 + srow < T) {{ st_o(ob + (r0 + srow) * {d + 1}u + {d}u, m + sc_log(l)); }}
  }}
  workgroupBarrier();
"""
        + _store(p, p.bq, "o", f"ob + i * {d + 1}u + c", "T", "1.0 / corr[li]")
        + "}\n"
    )
    return [(src, grid(src, -(-t // p.bq), b * h))]


def _softmax(p: Plan, sub: bool) -> str:
    """One key tile's softmax step on the staged scores: each row's new max, its
    exponentials (in place) and their sum into l, its rescale factor into corr."""
    if not sub:
        return _softmax_tree(p)
    return attention_subgroups.either(_softmax_butterfly(p), _softmax_tree(p))


def _softmax_butterfly(p: Plan) -> str:
    """``_softmax_tree`` with the row's lanes meeting through subgroup shuffles: no
    workgroup memory between them, one barrier (before the rescale reads corr)."""
    fold = attention_subgroups.butterfly
    return (
        f"""      var pm = {MASKED};
      if (soft) {{
        for (var j = part; j < {p.bk}u; j += {p.tpr}u) {{ pm = max(pm, ss[srow][j / 4u][j & 3u]); }}
      }}
"""
        + fold("pm", p.tpr, "max", "      ")
        + f"""      let mn = max(m, pm);
      var ps = 0.0;
      if (soft) {{
        for (var j = part; j < {p.bk}u; j += {p.tpr}u) {{
          let e = sc_exp(ss[srow][j / 4u][j & 3u] - mn);
          ss[srow][j / 4u][j & 3u] = e;
          ps += e;
        }}
      }}
"""
        + fold("ps", p.tpr, "+", "      ")
        + """      if (soft) {
        let cr = sc_exp(m - mn);
        if (part == 0u) { corr[srow] = cr; }
        l = l * cr + ps;
        m = mn;
      }
      workgroupBarrier();
"""
    )


def _softmax_tree(p: Plan) -> str:
    """``_softmax`` with the row's lanes meeting in workgroup memory (red, rsum)."""
    return f"""    if (soft) {{
      var pm = {MASKED};
      for (var j = part; j < {p.bk}u; j += {p.tpr}u) {{
        pm = max(pm, ss[srow][j / 4u][j & 3u]);
      }}
      red[lid] = pm;
    }}
    workgroupBarrier();
    if (soft) {{
      var mn = m;
      for (var u = 0u; u < {p.tpr}u; u++) {{ mn = max(mn, red[srow * {p.tpr}u + u]); }}
      var ps = 0.0;
      for (var j = part; j < {p.bk}u; j += {p.tpr}u) {{
        let e = sc_exp(ss[srow][j / 4u][j & 3u] - mn);
        ss[srow][j / 4u][j & 3u] = e;
        ps += e;
      }}
      rsum[lid] = ps;
      let cr = sc_exp(m - mn);
      if (part == 0u) {{ corr[srow] = cr; }}
      l = l * cr;
      m = mn;
    }}
    workgroupBarrier();
    if (soft) {{ for (var u = 0u; u < {p.tpr}u; u++) {{ l += rsum[srow * {p.tpr}u + u]; }} }}
"""


def _rescale(p: Plan) -> str:
    ry = p.bq // p.rt
    lines = [f"    if (lid < {ry * p.cg}u) {{"]
    lines += [f"      acc_o{r} = acc_o{r} * corr[og + {r * ry}u];" for r in range(p.rt)]
    lines.append("    }")
    return "\n".join(lines) + "\n"


# -- backward --

_BACKWARD_VIEWS = ("q", "k", "v", "y", "gy")


def _backward_source(base: Source, ins, out, attrs, p: Plan):
    q, k = ins[0], ins[1]
    b, h, t, d = q.shape
    s = k.shape[2]
    views = dict(zip(_BACKWARD_VIEWS, ins))
    vec = vec4_views(views, d)
    src, at = new_source(base, views, out, b, h, t, s, d, attrs, vec)
    for name, n in (("qs", p.bq), ("gs", p.bq), ("ks", p.bk), ("vs", p.bk)):
        _decl_rows(src, name, n, p.cgp)
    _decl(src, "red", "f32", p.bq * p.tpr)  # partial sums of dO . O
    _decl(src, "lse", "f32", p.bq)
    _decl(src, "dlt", "f32", p.bq)
    return src, at, vec


def _stats_subgroups(src: Source, p: Plan, kind: str) -> bool:
    """Whether a backward kernel that sums dO . O itself takes the butterfly (and then
    declares its check's flag)."""
    sub = attention_subgroups.applies(src, p.tpr, _floats(p, kind))
    if sub:
        attention_subgroups.declare(src)
    return sub


def _prob(i: str, j: str) -> str:
    """WGSL: p and ds of one score (s0 = q . k, s1 = dO . v) of query row li."""
    return f"""        let keep = {i} < T && {j} < S && (!causal || {j} <= {i});
        let p = select(0.0, sc_exp(s0 * scale - lse[li]), keep);
        let ds = p * (s1 - dlt[li]);"""


def _dq(base: Source, ins, out, attrs, cap: Cap, delta=None):
    b, h, t, d = ins[0].shape
    p = _plan(base, d, DQ_TILES, cap, "dq")
    src, at, vec = _backward_source(base, ins, out, attrs, p)
    sub = _stats_subgroups(src, p, "dq")
    keep = ""
    if delta is not None:  # each row's delta, for the dk/dv pass (``backward``)
        src.operand("s", delta, write=True)
        keep = f"  if (lid < {p.bq}u && r0 + lid < T) {{ st_s(bh * T + r0 + lid, dlt[lid]); }}\n"
    bk4 = p.bk // 4
    sst = _padded(bk4)
    _decl_rows(src, "dss", p.bq, sst)
    out_at = src.add_meta(out.offset)
    score = _prob("(r0 + li)", "(j0 + lj)") + "\n        dss[li][lj / 4u][lj & 3u] = ds;"
    rows = [("qs", "q"), ("gs", "gy")]
    keys = Staging(p, p.bk, "S", _operands(at, vec, [("ks", "k"), ("vs", "v")]))
    src.body = (
        head(p.wg, p.bq)
        + _load(p, p.bq, "r0", "T", _operands(at, vec, rows))
        + (attention_subgroups.check(p.tpr) if sub else "")
        + _row_stats(p, "r0", at, sub)
        + keep
        + _accumulators(p, ["q"], p.bq)
        + f"""  var kend = S;
  if (causal) {{ kend = min(S, min(T, r0 + {p.bq}u)); }}
"""
        + keys.decl
        + keys.fetch("0u")
        + f"""  for (var j0 = 0u; j0 < kend; j0 += {p.bk}u) {{
"""
        + keys.stash
        + "    workgroupBarrier();\n"
        + _prefetch(keys.fetch, "j0", p.bk, "kend")
        + _scores(p, [("qs", "ks"), ("gs", "vs")], score)
        + "    workgroupBarrier();\n"
        + _product(p, p.bq, bk4, [("q", "dss", "ks")])
        + "    workgroupBarrier();\n  }\n"
        + f"  let ob = mt[{out_at}u] + (b * H + h) * T * {d}u;\n"
        + _store(p, p.bq, "q", f"ob + i * {d}u + c", "T", "scale")
        + "}\n"
    )
    return src, grid(src, -(-t // p.bq), b * h)


def _dkv(base: Source, ins, out, attrs, cap: Cap, delta=None):
    b, h, t, d = ins[0].shape
    s = ins[1].shape[2]
    p = _plan(base, d, DKV_TILES, cap, "dkv")
    src, at, vec = _backward_source(base, ins, out, attrs, p)
    queries = Staging(p, p.bq, "T", _operands(at, vec, [("qs", "q"), ("gs", "gy")]))
    fetch, decl = queries.fetch, queries.decl
    if delta is not None:  # the stats are read a tile ahead with the queries
        src.operand("s", delta)
        stats = _STATS_STASH.format(bq=p.bq)

        def fetch(base: str) -> str:
            return queries.fetch(base) + _stats_fetch(p, base, at)

        decl += _STATS_DECL
    else:
        sub = _stats_subgroups(src, p, "dkv")
        stats = _row_stats(p, "q0", at, sub)
        decl = (attention_subgroups.check(p.tpr) if sub else "") + decl
    bq4 = p.bq // 4
    sst = _padded(bq4)
    _decl_rows(src, "pt", p.bk, sst)  # probabilities, [key][query]
    _decl_rows(src, "dst", p.bk, sst)  # score gradients, [key][query]
    nq, nk = b * h * t * d, b * h * s * d
    out_at = src.add_meta(out.offset + nq, out.offset + nq + nk)
    # the score block's rows are the tile's queries, its columns this workgroup's keys
    score = (
        _prob("(q0 + li)", "(r0 + lj)")
        + """
        pt[lj][li / 4u][li & 3u] = p;
        dst[lj][li / 4u][li & 3u] = ds;"""
    )
    src.body = (
        head(p.wg, p.bk)
        + _load(p, p.bk, "r0", "S", _operands(at, vec, [("ks", "k"), ("vs", "v")]))
        + _accumulators(p, ["k", "v"], p.bk)
        + """  // queries that may see a key of this workgroup: all, or from its first key on
  var i0 = 0u;
  if (causal) { i0 = r0; }
"""
        + decl
        + fetch("i0")
        + f"""  for (var q0 = i0; q0 < T; q0 += {p.bq}u) {{
"""
        + queries.stash
        + stats
        + "    workgroupBarrier();\n"
        + _prefetch(fetch, "q0", p.bq, "T")
        + _scores(p, [("qs", "ks"), ("gs", "vs")], score)
        + "    workgroupBarrier();\n"
        + _product(p, p.bk, bq4, [("v", "pt", "gs"), ("k", "dst", "qs")])
        + "    workgroupBarrier();\n  }\n"
        + f"  let kb = (b * H + h) * S * {d}u;\n"
        + _store(p, p.bk, "k", f"mt[{out_at}u] + kb + i * {d}u + c", "S", "scale")
        + _store(p, p.bk, "v", f"mt[{out_at + 1}u] + kb + i * {d}u + c", "S", "1.0")
        + "}\n"
    )
    return src, grid(src, -(-s // p.bk), b * h)


def backward(base: Source, ins, outs, attrs, cap: Cap):
    """The dq pass, then the dk/dv pass. Where the backend lends scratch storage and the
    bindings allow one more, the dq pass stores each row's delta there and the dk/dv
    pass reads it instead of summing dO . O again for every key tile that meets the row
    (the same sum, so the results are unchanged bit for bit)."""
    b, h, t, _ = ins[0].shape
    if base.scratch is not None:
        delta = base.scratch(b * h * t)
        launches = [
            _dq(base, ins, outs[0], attrs, cap, delta),
            _dkv(base, ins, outs[0], attrs, cap, delta),
        ]
        limit = base.limits["max_storage_buffers_per_shader_stage"]
        if all(len(src.bindings) + 1 <= limit for src, _ in launches):
            return launches
    return [_dq(base, ins, outs[0], attrs, cap), _dkv(base, ins, outs[0], attrs, cap)]
