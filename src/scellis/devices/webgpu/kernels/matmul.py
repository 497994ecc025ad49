"""Batched matmul in WGSL (devices layer): shared-memory tiles with register blocking.

A workgroup of ``wg`` x ``wg`` invocations computes one ``bm`` x ``bm`` output tile
(``bm`` = ``wg * r``), each invocation an ``r`` x ``r`` block held in vec4 registers
(rows ``4*ty + 4*wg*i``, columns ``4*tx + 4*wg*j``: contiguous vec4 stores,
conflict-free workgroup reads). K advances in blocks of ``bk`` = 16: each block of A and
B is fetched into registers while the previous one is multiplied (one workgroup buffer,
two barriers per block), then stashed in workgroup memory. Tiles: ``t128`` (16x16
invocations, 8x8 outputs each, 16 KiB), ``t64`` (16x16, 4x4, 8 KiB), ``t32`` / ``t16``
(8x8 / 4x4 invocations, 4x4 each); the largest that fits
``maxComputeInvocationsPerWorkgroup`` and ``maxComputeWorkgroupStorageSize`` and still
gives enough workgroups is used (``choose_tile``; ``attrs["_tile"]`` forces one, for
benchmarks and tests).

Operands are read through their strides: transposed views cost no copy. Each operand is
fetched along its stride-1 dim (``Side.along``: "t" = its M/N dim, e.g. B row-major or A
transposed; "k" = K, e.g. A row-major or B transposed) so that neighbouring invocations
read neighbouring addresses, as vec4 when that dim is a multiple of 4 and the offset and
other strides are 4-aligned (bound as ``array<vec4<T>>``, windows included). A is staged
in the direction it is read; B is always staged [k][n] (transposed as it is stored when
read along K). The output is stored as vec4 when N is a multiple of 4. Sizes, strides
and offsets are meta words, so one pipeline serves every shape of a variant (tile, two
fetch directions, vec flags, dtype, window counts). Leading batch dims (any number, any
strides, 0 for broadcast) are merged where contiguous with each other and walked with
div/mod from meta; the workgroup index is linear over (batch, tile row, tile column) and
folded into a 2-D or 3-D grid past ``maxComputeWorkgroupsPerDimension``.

Large products (M, N, K >= 64 and M*N*K >= 2^27; ``choose_reg``) take the ``REGS``
kernel instead (``_rmain``, ``Reg``): 8x8 outputs per invocation, A and B both staged
[k][m] / [k][n], two workgroup buffers so one barrier per K-block, the inner K loop
unrolled, ``fma``; 128 x 128 tiles where that gives REG_WORKGROUPS workgroups, else
128 x 64: with a K of at least DEEP_K, 8 x 4 outputs per invocation (256 of them), else
8 x 8 with two K groups per workgroup (``ks``); else 64 x 64 with four K groups. A 2-D product
whose output has too few tiles for its K (a weight gradient: 384 x 8192 x 1152) is split
along K (``choose_split``): the parts run as one batched product of views of A and B into
scratch storage, on smaller tiles (``SPLIT_TILES``), then a second launch sums the parts
in order. Smaller products keep the ``TILES`` kernel, so their results (and the small
models' losses) are unchanged. Where the caller allows another order
(``attrs["_order"] == "split_k"``: the prod and fast tiers' training steps, see
``devices.kernel_choice``), a tall-K product of the ``TILES`` sizes is split the same
way (``choose_reordered_split``): more, shorter sums in flight, other rounding than
the one sequential sum ``debug`` keeps.

f16 operands can also multiply in f16 (the ``half_math`` REGS tiles, ``HALF_MATH``):
each K-block's 16 products are summed in f16 registers, the block sums in f32, so an
output's error is at most (16 u16 + K u32) |A|@|B| to first order (u16 = 2^-11).

Accuracy (the bound the tests check): each output of the ``TILES`` kernel is one f32 dot
product accumulated in a fixed order over k = 0..K-1, so with unit roundoff u = 2^-24 and
exact f32 inputs, ``|C - A@B| <= gamma_K (|A|@|B|)``, gamma_K = K u / (1 - K u). The
``REGS`` kernel's K groups and the K split sum ordered partial sums in a fixed order:
every product still passes through at most K roundings, so the same bound holds. The
tests allow ``|C - A@B| <= K * eps_f32 * (|A|@|B|)`` elementwise, eps_f32 = 2^-23 (twice
gamma_K to first order). f16 inputs widen to f32 and accumulate in f32; an f16 result
adds its own rounding, ``eps_f16 / 2 * |C|``. No atomics, and every order is fixed by
the shape: results are bitwise reproducible on one adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ....base.errors import LimitError
from ...base import View
from .common import Source
from .matmul_units import ALIGN, takes_units, units_main
from .matmul_units import TILE_NAME as UNITS
from .reduce import reduce_kernel


@dataclass(frozen=True)
class Side:
    """How one operand's tile is read: ``along`` "t" (its M/N dim has stride 1) or "k"
    (K has stride 1), the dim that neighbouring invocations walk; ``vec`` when those
    reads can be vec4."""

    along: str
    vec: bool


@dataclass(frozen=True)
class Tile:
    wg: int  # the workgroup is wg x wg invocations
    r: int  # each invocation computes r x r outputs (r a multiple of 4)
    bk: int  # K-step staged in workgroup memory (a multiple of 4)

    @property
    def bm(self) -> int:
        return self.wg * self.r

    @property
    def threads(self) -> int:
        return self.wg * self.wg

    @property
    def shared_bytes(self) -> int:
        return 2 * self.bk * self.bm * 4

    def fits(self, limits: dict) -> bool:
        return (
            self.threads <= limits["max_compute_invocations_per_workgroup"]
            and self.wg <= limits.get("max_compute_workgroup_size_x", 256)
            and self.shared_bytes <= limits["max_compute_workgroup_storage_size"]
        )


TILES = {
    "t128": Tile(16, 8, 16),
    "t64": Tile(16, 4, 16),
    "t32": Tile(8, 4, 16),
    "t16": Tile(4, 4, 16),
}
# the big tile needs this many workgroups to pay off; below MIN_WORKGROUPS a smaller
# tile buys parallelism (a deep, narrow product would otherwise sit on a few cores)
BIG_TILE_MIN_WORKGROUPS = 256
MIN_WORKGROUPS = 16


def choose_tile(m: int, n: int, batch: int, limits: dict, want: str | None = None) -> str:
    """The tile for an ``m`` x ``n`` output (times ``batch``): ``want`` if given, else the
    largest that fits the limits and still yields enough workgroups."""
    if want is not None:
        if not TILES[want].fits(limits):
            raise LimitError(f"matmul tile {want} does not fit this device's limits")
        return want
    fitting = [name for name, t in TILES.items() if t.fits(limits)]
    if not fitting:
        raise LimitError("no matmul tile fits this device's workgroup limits")
    for name in fitting:
        bm = TILES[name].bm
        need = BIG_TILE_MIN_WORKGROUPS if name == "t128" else MIN_WORKGROUPS
        if _cdiv(m, bm) * _cdiv(n, bm) * batch >= need:
            return name
    return fitting[-1]


def choose_side(t: int, k: int, st: int, sk: int, offset: int, batch_strides) -> Side:
    """Staging of an operand whose tile dim has size ``t`` and stride ``st``."""
    if sk == 1 and k > 1:
        along = "k"
    elif st == 1 or t == 1:
        along = "t"
    else:
        along = "t" if st <= sk else "k"
    size, stride, other = (t, st, sk) if along == "t" else (k, sk, st)
    aligned = offset % 4 == 0 and other % 4 == 0 and all(s % 4 == 0 for s in batch_strides)
    return Side(along, stride == 1 and size % 4 == 0 and aligned)


def merge_batch(shape, sa, sb) -> list[tuple[int, int, int]]:
    """(size, stride_a, stride_b) of the batch dims, size-1 dims dropped, contiguous runs
    merged; innermost first (the order the kernel peels them off the batch index)."""
    dims: list[list[int]] = []
    for size, a, b in zip(shape, sa, sb):
        if size == 1:
            continue
        if dims and dims[-1][1] == a * size and dims[-1][2] == b * size:
            dims[-1] = [dims[-1][0] * size, a, b]
        else:
            dims.append([size, a, b])
    return [tuple(d) for d in reversed(dims)]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def fold_grid(groups: int, limits: dict) -> tuple[int, int, int]:
    """A grid of at least ``groups`` workgroups, each dim under the per-dimension cap."""
    cap = limits["max_compute_workgroups_per_dimension"]
    x = min(groups, cap)
    y = _cdiv(groups, x)
    if y <= cap:
        return x, y, 1
    z = _cdiv(y, cap)
    if z > cap:
        raise LimitError(f"{groups} workgroups exceed maxComputeWorkgroupsPerDimension^3")
    return x, cap, z


# meta word indices
_M, _N, _K, _TN, _TM, _GROUPS, _OA, _OB, _SA_T, _SA_K, _SB_T, _SB_K, _OC, _NB = range(14)


def layout(name: str, side: Side) -> str:
    """Workgroup-memory layout of a staged tile: "t" = [bk][bt/4] vec4 of M/N values,
    "k" = [bt][bk/4] vec4 of K values. A keeps the direction it is read in (its rows are
    read by ``ty``, a broadcast within a warp, so either is conflict-free); B is always
    "t", since neighbouring ``tx`` read neighbouring vec4 of it, and a B read along K is
    transposed as it is stored."""
    return side.along if name == "a" else "t"


def _load(name: str, tile: Tile, side: Side, widen: str) -> tuple[str, str, str]:
    """(setup, fetch, stash) for operand ``name``: fetch reads the K-block at ``kf``
    into registers ``<name><pass>v``, stash stores them into ``sh_<name>``.

    Every invocation moves 4 consecutive elements along the stride-1 dim per pass, so
    neighbouring invocations read neighbouring addresses. Bounds guards join their two
    tests with the non-short-circuit ``&`` (both sides are cheap and side-effect free):
    ``&&`` is lowered to a branch of its own per guard, and with scalar reads of both
    operands (64 guards) SwiftShader's compiler never finished the t16 pipeline.
    """
    st, sk = (f"mt[{i}u]" for i in ((_SA_T, _SA_K) if name == "a" else (_SB_T, _SB_K)))
    size, t0 = ("M", "m0") if name == "a" else ("N", "n0")
    bt4, bk4 = tile.bm // 4, tile.bk // 4
    passes = tile.bk * tile.bm // (4 * tile.threads)
    setup, body, stash = [], [], []
    for p in range(passes):
        v, idx = f"{name}{p}", f"(lid + {p * tile.threads}u)"
        if side.along == "t":
            setup.append(f"  let {v}k = {idx} / {bt4}u; let {v}l = {idx} % {bt4}u;")
            setup.append(f"  let {v}t = {t0} + {v}l * 4u;")
        else:
            setup.append(f"  let {v}l = {idx} / {bk4}u; let {v}k = ({idx} % {bk4}u) * 4u;")
            setup.append(f"  let {v}t = {t0} + {v}l;")
        setup.append(f"  let {v}e = o{name} + {v}t * {st};")
        gk = f"(kf + {v}k)"
        setup.append(f"  var {v}v = vec4<f32>(0.0);")
        body.append(f"    {v}v = vec4<f32>(0.0);")
        if side.vec:
            body.append(
                f"    if (({v}t < {size}) & ({gk} < K)) {{"
                f" {v}v = {widen}(ld_{name}(({v}e + {gk} * {sk}) / 4u)); }}"
            )
        for j in range(0 if side.vec else 4):
            if side.along == "t":
                ok, e = f"({v}t + {j}u < {size}) & ({gk} < K)", f"{v}e + {j}u * {st} + {gk} * {sk}"
            else:
                ok, e = f"({v}t < {size}) & ({gk} + {j}u < K)", f"{v}e + ({gk} + {j}u) * {sk}"
            body.append(f"    if ({ok}) {{ {v}v[{j}] = f32(ld_{name}({e})); }}")
        if side.along == "t":
            stash.append(f"    sh_{name}[{v}k * {bt4}u + {v}l] = {v}v;")
        elif layout(name, side) == "k":
            stash.append(f"    sh_{name}[{v}l * {bk4}u + {v}k / 4u] = {v}v;")
        else:
            for j in range(4):
                stash.append(
                    f"    sh_{name}[({v}k + {j}u) * {bt4}u + {v}l / 4u][{v}l & 3u] = {v}v[{j}];"
                )
    return "\n".join(setup), "\n".join(body), "\n".join(stash)


def _compute(tile: Tile, a: Side) -> str:
    """Outer products over one staged K-block, four k at a time (kk); accumulator
    c<row>_<group> is a vec4 of 4 output columns. Every output sums k = 0..K-1 in order."""
    q, bt4, bk4 = tile.r // 4, tile.bm // 4, tile.bk // 4
    lines = [f"    for (var kk = 0u; kk < {bk4}u; kk++) {{"]
    for i in range(q):
        for ii in range(4):
            if layout("a", a) == "k":  # one vec4 = 4 k of output row (i, ii)
                row = f"{i * tile.wg * 4 + ii}u + ty * 4u"
                lines.append(f"      let a{i}r{ii} = sh_a[({row}) * {bk4}u + kk];")
    for c in range(4):
        k = f"(kk * 4u + {c}u)"
        for j in range(q):
            lines.append(f"      let b{j}_{c} = sh_b[{k} * {bt4}u + {j * tile.wg}u + tx];")
        for i in range(q):
            if layout("a", a) == "t":  # one vec4 = 4 output rows at this k
                lines.append(f"      let a{i}_{c} = sh_a[{k} * {bt4}u + {i * tile.wg}u + ty];")
            for ii in range(4):
                av = f"a{i}r{ii}[{c}]" if layout("a", a) == "k" else f"a{i}_{c}[{ii}]"
                for j in range(q):
                    lines.append(f"      c{i * 4 + ii}_{j} += {av} * b{j}_{c};")
    lines.append("    }")
    return "\n".join(lines)


def _store(tile: Tile, vec: bool, half: bool) -> str:
    q = tile.r // 4
    cast = ("vec4<f16>" if vec else "f16") if half else ""
    lines = []
    for i in range(q):
        for ii in range(4):
            row = f"m0 + {i * tile.wg * 4 + ii}u + ty * 4u"
            lines.append(f"  if ({row} < M) {{ let ro = oc + ({row}) * N;")
            for j in range(q):
                col = f"n0 + {j * tile.wg * 4}u + tx * 4u"
                acc = f"c{i * 4 + ii}_{j}"
                if vec:
                    lines.append(
                        f"    if ({col} < N) {{ st_o((ro + {col}) / 4u, {cast}({acc})); }}"
                    )
                    continue
                for c in range(4):
                    lines.append(
                        f"    if ({col} + {c}u < N) {{ st_o(ro + {col} + {c}u, "
                        f"{cast}({acc}[{c}])); }}"
                    )
            lines.append("  }")
    return "\n".join(lines)


# A band keeps a product to the part of a causal (lower-triangular) operand that can be
# nonzero, where the caller guarantees that the rest it would read holds zeros:
# "lower": skip the output tiles wholly above the diagonal (no column <= a tile row);
# "from_row": sum k from the tile's first row (A's rows i < k are zero);
# "to_row": sum k up to the tile's last row (A's columns k > i are zero).
# Adding those zero products would not change a sum's bits, so only time changes.
BANDS = (None, "lower", "from_row", "to_row")


def _band(bm: int, band: str | None) -> tuple[str, str, str]:
    """WGSL of a tile's K (where its k range ends) and first k under ``band``, and its
    early exit."""
    if band is None:
        return f"mt[{_K}u]", "0u", ""
    if band == "lower":
        return f"mt[{_K}u]", "0u", f"  if (n0 > m0 + {bm - 1}u) {{ return; }}\n"
    if band == "from_row":
        return f"mt[{_K}u]", f"min(m0, mt[{_K}u])", ""
    return f"min(mt[{_K}u], m0 + {bm}u)", "0u", ""


def _header(bm: int, bn: int, band: str | None = None) -> str:
    """The workgroup's tile (m0, n0), batch offsets and sizes from its linear index; K is
    where its k range ends and K0 where it starts (``_band``)."""
    k_end, k_start, leave = _band(bm, band)
    return f"""  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (g >= mt[{_GROUPS}u]) {{ return; }}
  let M = mt[{_M}u]; let N = mt[{_N}u];
  let tn = g % mt[{_TN}u]; let g2 = g / mt[{_TN}u];
  let tm = g2 % mt[{_TM}u]; let bi = g2 / mt[{_TM}u];
  var oa = mt[{_OA}u]; var ob = mt[{_OB}u]; var rest = bi;
  for (var d = 0u; d < mt[{_NB}u]; d++) {{
    let at = {_NB + 1}u + 3u * d; let s = mt[at]; let q = rest % s; rest = rest / s;
    oa += q * mt[at + 1u]; ob += q * mt[at + 2u];
  }}
  let oc = mt[{_OC}u] + bi * M * N;
  let tx = l3.x; let ty = l3.y;
  let m0 = tm * {bm}u; let n0 = tn * {bn}u;
{leave}  let K = {k_end}; let K0 = {k_start};"""


@lru_cache(maxsize=256)  # pure in its arguments; rebuilding it dominated a call's host time
def _main(
    tile: Tile, a: Side, b: Side, out_vec: bool, half: bool, half_out: bool | None = None
) -> str:
    """``half``: f16 operands (widened to f32); ``half_out``: an f16 result (default: half)."""
    half_out = half if half_out is None else half_out
    widen = "vec4<f32>" if half else ""
    a_setup, a_fetch, a_stash = _load("a", tile, a, widen)
    b_setup, b_fetch, b_stash = _load("b", tile, b, widen)
    q = tile.r // 4
    accs = "\n".join(f"  var c{r}_{j} = vec4<f32>(0.0);" for r in range(tile.r) for j in range(q))
    n_shared = tile.bk * tile.bm // 4
    return f"""var<workgroup> sh_a: array<vec4<f32>, {n_shared}>;
var<workgroup> sh_b: array<vec4<f32>, {n_shared}>;
@compute @workgroup_size({tile.wg}, {tile.wg}, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) l3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
{_header(tile.bm, tile.bm)}
{a_setup}
{b_setup}
{accs}
  var kf = 0u;
{a_fetch}
{b_fetch}
  // the next K-block's global reads are in flight while this one is multiplied
  for (var k0 = 0u; k0 < K; k0 += {tile.bk}u) {{
    workgroupBarrier();
{a_stash}
{b_stash}
    workgroupBarrier();
    kf = k0 + {tile.bk}u;
{a_fetch}
{b_fetch}
{_compute(tile, a)}
  }}
{_store(tile, out_vec, half_out)}
}}
"""


# -- the register-tiled kernel for large products --


@dataclass(frozen=True)
class Reg:
    """A workgroup of ``bn/tn`` x ``bm/tm`` invocations computes one ``bm`` x ``bn`` tile,
    each invocation ``tm`` x ``tn`` outputs (rows ``4*ty + 4*(bm/tm)*i``, columns
    ``4*tx + 4*(bn/tn)*j``). A and B are both staged [k][m] / [k][n] as vec4, in two
    workgroup buffers: block i+1 is stashed into one while block i is read from the
    other, one barrier per block. Products use ``fma``, so results differ in rounding
    from the ``TILES`` kernel. With ``ks`` > 1 the workgroup is ``ks`` such groups
    (``local_invocation_id.z``), group g taking K-blocks g, g + ks, ...; their partial
    tiles are then added in group order through workgroup memory (a fixed order, so
    still bitwise reproducible): more invocations per output tile where the output has
    few tiles and K is long. With ``ks`` = 1 each output sums k = 0..K-1 in order."""

    bm: int
    bn: int
    tm: int
    tn: int
    bk: int
    unroll: int = 1  # k steps per iteration of the inner loop
    ks: int = 1  # K-split groups inside the workgroup
    # f16 operands stay f16 in registers and workgroup memory, widened to f32 as the
    # inner loop reads them (``ks`` = 1 only); f32 operands run as without it
    half_shared: bool = False
    # f16 operands also multiply in f16: each K-block's products are summed in f16
    # registers (packed half FMAs, twice the f32 lanes' rate on GPUs that have them) and
    # that block sum is then added to the f32 accumulator; implies ``half_shared``
    half_math: bool = False

    @property
    def wgx(self) -> int:
        return self.bn // self.tn

    @property
    def wgy(self) -> int:
        return self.bm // self.tm

    @property
    def group(self) -> int:
        return self.wgx * self.wgy

    @property
    def threads(self) -> int:
        return self.group * self.ks

    @property
    def shared_bytes(self) -> int:
        # a partial tile is passed through sh_a, which holds it when bn <= 2 * ks * bk
        assert self.ks == 1 or self.bn <= 2 * self.ks * self.bk
        return 2 * self.ks * self.bk * (self.bm + self.bn) * 4

    def fits(self, limits: dict) -> bool:
        return (
            self.threads <= limits["max_compute_invocations_per_workgroup"]
            and self.wgx <= limits.get("max_compute_workgroup_size_x", 256)
            and self.shared_bytes <= limits["max_compute_workgroup_storage_size"]
        )


REGS = {
    "r128": Reg(128, 128, 8, 8, 16, unroll=8),
    "r128k8": Reg(128, 128, 8, 8, 8, unroll=8),  # where workgroup memory is 16 KiB
    "r128x64s2": Reg(128, 64, 8, 8, 16, unroll=4, ks=2),
    "r64s4": Reg(64, 64, 8, 8, 8, unroll=4, ks=4),
    "r64": Reg(64, 64, 8, 8, 16, unroll=4),
    "r128x64": Reg(128, 64, 8, 8, 16, unroll=8),  # a K split's parts (SPLIT_TILES)
    # 8 x 4 outputs per invocation: 256 invocations on a 128 x 64 tile without the K
    # groups' final sum through workgroup memory. On an H100, for deep products (K of
    # 1152-1536, N 384) 1.05-1.07x r128x64s2's TFLOP/s; for K = 384, 0.87-0.93x
    # (bench/matmul.py, bench/RESULTS.md): so taken from DEEP_K on
    "r128x64t4": Reg(128, 64, 8, 4, 16, unroll=8),
    # the whole K-block unrolled: tried in benchmarks only until it proves faster
    "r128u16": Reg(128, 128, 8, 8, 16, unroll=16),
    # 4 x 8 outputs per invocation: twice the invocations per tile, for a K split's parts
    # where 8 x 8 leaves the adapter short of invocations; benchmarks only until measured
    "r64t4": Reg(64, 64, 4, 8, 16, unroll=4),
    "r32x64t4": Reg(32, 64, 4, 8, 16, unroll=4),
    # f16 operands staged as f16 (half the workgroup memory traffic, a widening per read
    # in the inner loop): benchmarks only until measured faster than their f32-staged twins
    "r128h": Reg(128, 128, 8, 8, 16, unroll=8, half_shared=True),
    "r128x64h": Reg(128, 64, 8, 8, 16, unroll=8, half_shared=True),
    "r64h": Reg(64, 64, 8, 8, 16, unroll=4, half_shared=True),
    # f16 operands multiplied in f16, summed per K-block then in f32 (``half_math``)
    "r128hm": Reg(128, 128, 8, 8, 16, unroll=8, half_math=True),
    "r128x64hm": Reg(128, 64, 8, 8, 16, unroll=8, half_math=True),
    "r64hm": Reg(64, 64, 8, 8, 16, unroll=4, half_math=True),
}
# with HALF_MATH on, where the step allows another rounding (``_order``: the prod and
# fast tiers) and the adapter is hardware, a product of f16 operands takes its tile's
# f16-math twin; a software adapter emulates f16 arithmetic, so there it would only
# cost time. On an H100 the mixed_f16 prod step ran 2.8-4.3% faster with it (2x256
# LSTM 7.73 against 8.08 ms, d384 Transformer 31.55 against 32.46), first losses 6e-6
# and 1.1e-5 from f32's against the declared 5e-3 (bench/RESULTS.md). Set it False to
# keep f32 products for f16 operands on every tier. A 128 x 128 tile's twin is the
# 128 x 64 one: forced on an H100, r128x64hm ran 40.7 / 35.5 / 28.2 TFLOP/s on 4096^3,
# 8192x384x1152 and 8192x384x384 where r128hm ran 33.3 / 30.0 / 22.3 (bench/matmul.py).
HALF_MATH = True
HALF_MATH_TWINS = {
    "r128": "r128x64hm",
    "r128x64s2": "r128x64hm",
    "r128x64t4": "r128x64hm",
    "r128x64": "r128x64hm",
    "r64s4": "r64hm",
    "r64": "r64hm",
}
# products at least this big (M*N*K, with M, N, K >= REG_MIN_DIM) take a REGS tile
REG_MIN_WORK = 1 << 27
REG_MIN_DIM = 64
# the tile size that fills the adapter: enough workgroups of 128 x 128 (or 128 x 64)
REG_WORKGROUPS = 256
DEEP_K = 1024  # from this K on, a 128 x 64 tile takes r128x64t4 (see REGS)
SPLIT_WORKGROUPS = 1024  # workgroups over all parts of a K split
SPLIT_MIN_K = 256  # each K-split part sums at least this many products
SPLIT_MAX = 32
# the parts' tiles, larger first: one K group each, small enough that the parts give
# SPLIT_WORKGROUPS; with few parts of 128 x 128 tiles the last wave of workgroups ran
# nearly empty (0.41-0.53 of cuBLAS against 0.54-0.63 with these, on the H200)
SPLIT_TILES = ("r128x64", "r64")


def choose_reg(m: int, n: int, k: int, batch: int, limits: dict) -> str | None:
    """The REGS tile for a large product, or None (the ``TILES`` kernel then runs):
    128 x 128 where N > 64 and that makes REG_WORKGROUPS workgroups, else 128 x 64 (8 x 4
    outputs per invocation from DEEP_K on, else two K groups), else 64 x 64 (four K
    groups); the first of those that fits the limits."""
    if min(m, n, k) < REG_MIN_DIM or m * n * k * batch < REG_MIN_WORK:
        return None
    # an output of at most 64 columns would leave half of every 128-column tile idle
    wide = n > 64 and _cdiv(m, 128) * _cdiv(n, 128) * batch >= REG_WORKGROUPS
    order = ["r128", "r128k8"] if wide else []
    if _cdiv(m, 128) * _cdiv(n, 64) * batch >= REG_WORKGROUPS:
        order += ["r128x64t4", "r128x64s2"] if k >= DEEP_K else ["r128x64s2"]
    for name in order + ["r64s4", "r64"]:
        if REGS[name].fits(limits):
            return name
    return None


def choose_split(m: int, n: int, k: int, batch: int, limits: dict) -> tuple[int, str | None]:
    """(parts, tile) for a large 2-D product with too few output tiles for its K (a weight
    gradient: M x N small, K = tokens): K splits into the smallest power of two of parts
    that gives SPLIT_WORKGROUPS workgroups (at most SPLIT_MAX, each part's K a multiple of
    4 and at least SPLIT_MIN_K long), on the first of SPLIT_TILES that reaches that many
    (else the last that fits). (1, None) = no split."""
    if batch != 1 or choose_reg(m, n, k, 1, limits) not in ("r64s4", "r64"):
        return 1, None
    best = (1, None)
    for name in SPLIT_TILES:
        tile = REGS[name]
        if not tile.fits(limits):
            continue
        tiles, s = _cdiv(m, tile.bm) * _cdiv(n, tile.bn), 1
        while tiles * s < SPLIT_WORKGROUPS and k % (8 * s) == 0 and k // (2 * s) >= SPLIT_MIN_K:
            s *= 2
            if s == SPLIT_MAX:
                break
        best = (s, name) if s > 1 else best
        if tiles * s >= SPLIT_WORKGROUPS:
            break
    return best


# the reordered K split (``attrs["_order"] == "split_k"``, the prod and fast tiers): a
# tall-K product below the REGS sizes (a small model's weight gradient, K = tokens)
# whose output has few TILES workgroups is cut into parts of at least REORDER_MIN_K
ORDER_SPLIT_MIN_K = 128  # K at least this long, and at least 4x the output's sides
REORDER_MIN_K = 64
REORDER_WORKGROUPS = 64  # workgroups over all parts the split aims at


def choose_reordered_split(m: int, n: int, k: int, limits: dict, software=False) -> int:
    """Parts of the reordered K split of an ``m`` x ``n`` x ``k`` product (1: none): the
    smallest power of two that gives REORDER_WORKGROUPS workgroups of the tile the parts
    take, each part's K a multiple of 4 and at least REORDER_MIN_K long. None on a
    software adapter (lavapipe): its parallelism is a few CPU cores, which the unsplit
    kernel already fills, and the split's second launch made those steps slower."""
    if software or k < ORDER_SPLIT_MIN_K or k < 4 * max(m, n):
        return 1
    parts = 1
    while parts < SPLIT_MAX and k % (8 * parts) == 0 and k // (2 * parts) >= REORDER_MIN_K:
        bm = TILES[choose_tile(m, n, 2 * parts, limits)].bm
        if _cdiv(m, bm) * _cdiv(n, bm) * parts >= REORDER_WORKGROUPS:
            break
        parts *= 2
    return parts


def _split(src: Source, a, b, out, parts: int, attrs: dict) -> list:
    """C = sum over p of A[:, Kp] @ B[Kp, :]: the parts as one batched product (views of
    A and B, no copy) into scratch [parts, M, N], then a sum over the parts in order
    (reduce.py's short path). Two launches, no atomics: bitwise reproducible."""
    m, k = a.shape
    n = b.shape[1]
    kc = k // parts
    (sa_m, sa_k), (sb_k, sb_n) = a.strides, b.strides
    pa = View(a.buf, (parts, m, kc), (kc * sa_k, sa_m, sa_k), a.offset, a.dtype)
    pb = View(b.buf, (parts, kc, n), (kc * sb_k, sb_k, sb_n), b.offset, b.dtype)
    flat = src.scratch(parts * m * n)
    part = View(flat.buf, (parts, m, n), (m * n, n, 1), 0, flat.dtype)
    sub = {key: v for key, v in attrs.items() if key not in ("_split", "_order")}
    if _half_math(src, a, attrs):  # the parts multiply as the whole product would have
        sub["_half_math"] = True
    grid = matmul_kernel(src, "matmul", [pa, pb], [part], sub)
    red = src.sibling()
    return [(src, grid), (red, reduce_kernel(red, "sum", [part], [out], {"axes": (0,)}))]


def _rload(name: str, r: Reg, side: Side, widen: str, reg: str = "f32") -> tuple[str, str, str]:
    """(setup, fetch, stash) of one operand for the REGS kernel (see ``_load``); the
    stash writes the buffer at vec4 offset ``sw``, transposing a read along K. ``reg``:
    the type the fetched values are held and stashed in (f16: as stored, no ``widen``)."""
    st, sk = (f"mt[{i}u]" for i in ((_SA_T, _SA_K) if name == "a" else (_SB_T, _SB_K)))
    size, t0, bt = ("M", "m0", r.bm) if name == "a" else ("N", "n0", r.bn)
    bt4, bk4 = bt // 4, r.bk // 4
    setup, body, stash = [f"  let {name}st = {st}; let {name}sk = {sk};"], [], []
    for p in range(bt * r.bk // (4 * r.group)):
        v, idx = f"{name}{p}", f"(li + {p * r.group}u)"
        if side.along == "t":
            setup.append(f"  let {v}k = {idx} / {bt4}u; let {v}l = {idx} % {bt4}u;")
            setup.append(f"  let {v}t = {t0} + {v}l * 4u;")
        else:
            setup.append(f"  let {v}l = {idx} / {bk4}u; let {v}k = ({idx} % {bk4}u) * 4u;")
            setup.append(f"  let {v}t = {t0} + {v}l;")
        setup.append(f"  let {v}e = o{name} + {v}t * {name}st; var {v}v = vec4<{reg}>(0.0);")
        gk = f"(kf + {v}k)"
        body.append(f"    {v}v = vec4<{reg}>(0.0);")
        if side.vec:
            body.append(
                f"    if (({v}t < {size}) & ({gk} < K)) {{"
                f" {v}v = {widen}(ld_{name}(({v}e + {gk} * {name}sk) / 4u)); }}"
            )
        for j in range(0 if side.vec else 4):
            if side.along == "t":
                ok = f"({v}t + {j}u < {size}) & ({gk} < K)"
                e = f"{v}e + {j}u * {name}st + {gk} * {name}sk"
            else:
                ok, e = f"({v}t < {size}) & ({gk} + {j}u < K)", f"{v}e + ({gk} + {j}u) * {name}sk"
            body.append(f"    if ({ok}) {{ {v}v[{j}] = {reg}(ld_{name}({e})); }}")
        if side.along == "t":
            stash.append(f"    sh_{name}[sw * {bt4}u + {v}k * {bt4}u + {v}l] = {v}v;")
        else:
            for j in range(4):
                stash.append(
                    f"    sh_{name}[(sw + {v}k + {j}u) * {bt4}u + {v}l / 4u][{v}l & 3u]"
                    f" = {v}v[{j}];"
                )
    return "\n".join(setup), "\n".join(body), "\n".join(stash)


@lru_cache(maxsize=256)
def _rmain(
    r: Reg,
    a: Side,
    b: Side,
    out_vec: bool,
    half: bool,
    half_out: bool,
    b_load=None,
    band: str | None = None,
) -> str:
    """``b_load``: (setup, fetch, stash) of a B operand that is not a plain tensor (a
    quantised weight, decoded as it is fetched); it stashes as ``_rload`` does. ``band``:
    see ``BANDS``."""
    half_staged = r.half_shared or r.half_math
    staged = "f16" if half and half_staged and r.ks == 1 and b_load is None else "f32"
    f16_math = staged == "f16" and r.half_math
    widen = "vec4<f32>" if half and staged == "f32" else ""
    a_setup, a_fetch, a_stash = _rload("a", r, a, widen, staged)
    b_setup, b_fetch, b_stash = b_load or _rload("b", r, b, widen, staged)

    def read(e: str) -> str:  # the inner loop widens what an f16 stage holds
        return f"vec4<f32>({e})" if staged == "f16" and not f16_math else e

    qm, qn, bm4, bn4 = r.tm // 4, r.tn // 4, r.bm // 4, r.bn // 4
    accs = "\n".join(f"  var c{i}_{j} = vec4<f32>(0.0);" for i in range(r.tm) for j in range(qn))
    dot = []
    for u in range(r.unroll):  # fragments a<i>_<u> / b<j>_<u> of k = kk + u
        row = f"(sr + kk + {u}u)" if u else "(sr + kk)"
        dot += [
            f"      let a{i}_{u} = {read(f'sh_a[{row} * {bm4}u + {i * r.wgy}u + ty]')};"
            for i in range(qm)
        ]
        dot += [
            f"      let b{j}_{u} = {read(f'sh_b[{row} * {bn4}u + {j * r.wgx}u + tx]')};"
            for j in range(qn)
        ]
        for i in range(qm):
            for ii in range(4):
                for j in range(qn):
                    c, bv = f"c{i * 4 + ii}_{j}", f"b{j}_{u}"
                    c, lane = (f"p{c[1:]}", "f16") if f16_math else (c, "f32")
                    av = f"vec4<{lane}>(a{i}_{u}[{ii}])"
                    dot.append(f"      {c} = fma({av}, {bv}, {c});")
    cast = ("vec4<f16>" if out_vec else "f16") if half_out else ""
    store = []
    for i in range(qm):
        for ii in range(4):
            store.append(f"  let m{i}_{ii} = m0 + {i * r.wgy * 4 + ii}u + ty * 4u;")
            store.append(f"  if (m{i}_{ii} < M) {{ let ro = oc + m{i}_{ii} * N;")
            for j in range(qn):
                col, acc = f"n0 + {j * r.wgx * 4}u + tx * 4u", f"c{i * 4 + ii}_{j}"
                if out_vec:
                    store.append(
                        f"    if ({col} < N) {{ st_o((ro + {col}) / 4u, {cast}({acc})); }}"
                    )
                    continue
                for c in range(4):
                    store.append(
                        f"    if ({col} + {c}u < N) {{"
                        f" st_o(ro + {col} + {c}u, {cast}({acc}[{c}])); }}"
                    )
            store.append("  }")
    dot_s, store_s = "\n".join(dot), "\n".join(store)
    block_start = block_end = ""
    if f16_math:  # one K-block's products summed in f16, then added to the f32 sum
        names = [f"{i}_{j}" for i in range(r.tm) for j in range(qn)]
        block_start = "\n".join(f"    var p{c} = vec4<f16>(0.0);" for c in names)
        block_end = "\n".join(f"    c{c} += vec4<f32>(p{c});" for c in names)
    if r.ks == 1:
        start, toggle, reduce = "  let li = lid; var kf = K0; var sw = 0u;", f"{r.bk}u - sw", ""
    else:  # group kg stages into rows [kg * 2bk, kg * 2bk + 2bk) of sh_a / sh_b
        start = f"  let kg = l3.z; let li = lid % {r.group}u; var kf = K0 + kg * {r.bk}u;"
        start += f" var sw = kg * {2 * r.bk}u;\n  let gt = kg * {4 * r.bk}u + {r.bk}u;"
        toggle, parts = "gt - sw", []
        accs_n = [(f"c{i}_{j}", i * qn + j) for i in range(r.tm) for j in range(qn)]
        for g in range(1, r.ks):
            put = " ".join(f"sh_a[{q * r.group}u + li] = {c};" for c, q in accs_n)
            add = " ".join(f"{c} += sh_a[{q * r.group}u + li];" for c, q in accs_n)
            parts.append(f"  workgroupBarrier();\n  if (kg == {g}u) {{ {put} }}")
            parts.append(f"  workgroupBarrier();\n  if (kg == 0u) {{ {add} }}")
        reduce = "\n".join(parts)
        store_s = f"  if (kg == 0u) {{\n{store_s}\n  }}"
    return f"""var<workgroup> sh_a: array<vec4<{staged}>, {2 * r.ks * r.bk * bm4}>;
var<workgroup> sh_b: array<vec4<{staged}>, {2 * r.ks * r.bk * bn4}>;
@compute @workgroup_size({r.wgx}, {r.wgy}, {r.ks})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) l3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
{_header(r.bm, r.bn, band)}
{start}
{a_setup}
{b_setup}
{accs}
{a_fetch}
{b_fetch}
{a_stash}
{b_stash}
  workgroupBarrier();
  for (var k0 = K0; k0 < K; k0 += {r.ks * r.bk}u) {{
    let sr = sw; sw = {toggle}; kf += {r.ks * r.bk}u;
    // the next block's global reads are in flight while this one is multiplied
{a_fetch}
{b_fetch}
{block_start}
    for (var kk = 0u; kk < {r.bk}u; kk += {r.unroll}u) {{
{dot_s}
    }}
{block_end}
{a_stash}
{b_stash}
    workgroupBarrier();
  }}
{reduce}
{store_s}
}}
"""


def _half_math(src: Source, a, attrs: dict) -> bool:
    """Whether a product of ``a`` (and an operand of its dtype) may multiply in f16."""
    if a.dtype.name != "f16" or not HALF_MATH or src.software:
        return False
    return attrs.get("_half_math", False) or attrs.get("_order") == "split_k"


def _on_units(src: Source, a, b, m: int, n: int, k: int, attrs: dict) -> bool:
    """Whether a product runs on the matrix units (kernels/matmul_units.py): f16 operands
    where the order may change (as ``_half_math``), or forced by ``_tile``."""
    want = attrs.get("_tile")
    if want not in (None, UNITS) or attrs.get("_band") or b.dtype != a.dtype:
        return False
    if src.matrix is None or not src.matrix.fits(src.limits) or a.dtype.name != "f16":
        return False
    if want == UNITS:  # any shape runs; the rule below keeps small ones off the units
        return True
    return takes_units(m, n, k) and _half_math(src, a, attrs)


def _product_meta(src: Source, a, b, out, mnk, tile: tuple[int, int], batch_dims) -> int:
    """Write a product's meta words (the ``_header`` layout) for ``tile`` (bm, bn) output
    tiles; returns the workgroup count."""
    m, n, k = mnk
    tn, tm = _cdiv(n, tile[1]), _cdiv(m, tile[0])
    groups = tn * tm
    for size, _, _ in batch_dims:
        groups *= size
    sa_m, sa_k = a.strides[-2:]
    sb_k, sb_n = b.strides[-2:]
    src.add_meta(m, n, k, tn, tm, groups, a.offset, b.offset, sa_m, sa_k, sb_n, sb_k, out.offset)
    src.add_meta(len(batch_dims))
    for dim in batch_dims:
        src.add_meta(*dim)
    return groups


def _units(src: Source, a, b, out, mnk, batch_dims, sides):
    unit = src.matrix
    groups = _product_meta(src, a, b, out, mnk, (unit.bm, unit.bn), batch_dims)
    direct = _direct_units(unit, a, b, out, mnk, batch_dims)
    side_a, side_b = sides
    src.operand("a", a, lanes=4 if side_a.vec and not direct else 1)
    src.operand("b", b, lanes=4 if side_b.vec and not direct else 1)
    src.operand("o", out, write=True)
    words = {"sa_m": f"mt[{_SA_T}u]", "sa_k": f"mt[{_SA_K}u]", "sb_n": f"mt[{_SB_T}u]",
             "sb_k": f"mt[{_SB_K}u]"}  # fmt: skip
    half_out = out.dtype.name == "f16"
    header = _header(unit.bm, unit.bn)
    src.body = units_main(unit, header, words, sides, half_out, direct)
    return fold_grid(groups, src.limits)


def _direct_units(unit, a, b, out, mnk, batch_dims) -> bool:
    """Whether the unit's fragments may load straight from the operands' buffers: whole
    tiles, each operand in one binding window, contiguous along one of its two dims, and
    every offset and stride aligned (kernels/matmul_units.py ``ALIGN``)."""
    m, n, k = mnk
    if m % unit.bm or n % unit.bn or k % unit.k:
        return False
    views = (a, b, out)
    if any(len(v.buf.handle.windows()) != 1 for v in views):
        return False
    if 1 not in a.strides[-2:] or 1 not in b.strides[-2:]:
        return False
    words = [v.offset for v in views] + [s for v in (a, b) for s in v.strides[-2:] if s != 1]
    words += [s for _, sa, sb in batch_dims for s in (sa, sb)] + [n]
    return all(w % ALIGN == 0 for w in words)


def matmul_kernel(src: Source, op: str, ins, outs, attrs):
    a, b = ins
    out = outs[0]
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if src.scratch is not None and len(a.shape) == len(b.shape) == 2:
        parts, tile_name = attrs.get("_split"), attrs.get("_tile")
        if not parts and tile_name is None:
            parts, tile_name = choose_split(m, n, k, 1, src.limits)
        if parts in (None, 1) and tile_name is None and attrs.get("_order") == "split_k":
            parts = choose_reordered_split(m, n, k, src.limits, src.software)
        if parts and parts > 1 and k % (4 * parts) == 0:
            sub = attrs | ({"_tile": tile_name} if tile_name else {})
            return _split(src, a, b, out, parts, sub)
    batch_dims = merge_batch(a.shape[:-2], a.strides[:-2], b.strides[:-2])
    batch = 1
    for size, _, _ in batch_dims:
        batch *= size
    sa_m, sa_k = a.strides[-2:]
    sb_k, sb_n = b.strides[-2:]
    side_a = choose_side(m, k, sa_m, sa_k, a.offset, [d[1] for d in batch_dims])
    side_b = choose_side(n, k, sb_n, sb_k, b.offset, [d[2] for d in batch_dims])
    want = attrs.get("_tile")
    if _on_units(src, a, b, m, n, k, attrs):
        return _units(src, a, b, out, (m, n, k), batch_dims, (side_a, side_b))
    reg = want if want in REGS else None
    if want is None:
        reg = choose_reg(m, n, k, batch, src.limits)
    # a tile a K split chose for its parts (``_half_math`` set) takes its twin too
    if reg is not None and (want is None or attrs.get("_half_math")):
        if b.dtype == a.dtype and _half_math(src, a, attrs):
            reg = HALF_MATH_TWINS.get(reg, reg)
    if reg is not None:
        tile = REGS[reg]
        if not tile.fits(src.limits):
            raise LimitError(f"matmul tile {reg} does not fit this device's limits")
        bm, bn = tile.bm, tile.bn
    else:
        tile = TILES[choose_tile(m, n, batch, src.limits, want)]
        bm = bn = tile.bm
    out_vec = n % 4 == 0 and out.offset % 4 == 0
    groups = _product_meta(src, a, b, out, (m, n, k), (bm, bn), batch_dims)
    src.operand("a", a, lanes=4 if side_a.vec else 1)
    src.operand("b", b, lanes=4 if side_b.vec else 1)
    src.operand("o", out, write=True, lanes=4 if out_vec else 1)
    half, half_out = a.dtype.name == "f16", out.dtype.name == "f16"
    band = attrs.get("_band")
    if band not in BANDS or (band and reg is None):
        raise LimitError(f"matmul band {band!r} needs a REGS tile")  # a caller's slip
    if reg is not None:
        src.body = _rmain(tile, side_a, side_b, out_vec, half, half_out, band=band)
    else:
        src.body = _main(tile, side_a, side_b, out_vec, half, half_out)
    return fold_grid(groups, src.limits)


KERNELS = {"matmul": matmul_kernel}
