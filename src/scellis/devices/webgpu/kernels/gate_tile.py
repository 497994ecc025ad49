"""A small tiled product for the recurrent step kernels (devices layer).

``out[b, g, k] = sum_j A(b, j) * W(g, j, k)`` for ``g`` < G gate blocks, computed by a
grid of workgroups, each owning a ``bb`` x ``bk`` block of (b, k) outputs for all G
gates at once, so a gate epilogue (the LSTM/GRU cell maths) runs on registers. The
workgroup is ``tb`` x ``tk`` invocations; an invocation owns ``rb`` rows b (``tb``
apart) times ``rk`` columns k (``tk`` apart), i.e. G * rb * rk accumulators. The
contraction advances in chunks of ``kc``: A's chunk [bb][kc] is staged in workgroup
memory as vec4 along j (a row read is a broadcast within a warp, since neighbouring
invocations share b), W's chunk [G][kc][bk] with k fastest (neighbouring invocations
read neighbouring words). Each output sums j = 0, 1, ... in order: one f32 dot
product, as the reference's matmul, to rounding.

The caller supplies WGSL functions ``tile_a(b, j) -> f32`` and ``tile_w(g, j, k) ->
f32`` that return 0 outside the operand (they bound-check), the contraction length, and
the epilogue, which sees ``b``, ``k`` (in range) and ``a0`` .. ``a{G-1}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .matmul import fold_grid


@dataclass(frozen=True)
class GateTile:
    tb: int  # invocations along b
    tk: int  # invocations along k
    rb: int  # rows b per invocation
    rk: int  # columns k per invocation
    kc: int  # contraction chunk staged per pass (a multiple of 4)
    ks: int = 1  # groups of tb x tk invocations sharing the contraction (see tiled_main)

    @property
    def bb(self) -> int:
        return self.tb * self.rb

    @property
    def bk(self) -> int:
        return self.tk * self.rk

    @property
    def group(self) -> int:
        return self.tb * self.tk

    @property
    def threads(self) -> int:
        return self.group * self.ks

    def shared_bytes(self, gates: int) -> int:
        return 4 * self.ks * (self.bb * self.kc + gates * self.kc * self.bk)

    def fits(self, limits: dict, gates: int) -> bool:
        return (
            self.threads <= limits["max_compute_invocations_per_workgroup"]
            and self.tk <= limits.get("max_compute_workgroup_size_x", 256)
            and self.shared_bytes(gates) <= limits["max_compute_workgroup_storage_size"]
        )

    def grid(self, b: int, h: int, limits: dict) -> tuple[int, int, int]:
        return fold_grid(-(-b // self.bb) * -(-h // self.bk), limits)


def _stage_w(tile: GateTile, gates: int, w_fast: str) -> str:
    """Lines copying W's chunk into ``sh_w[(g * kc + j) * bk + k]``; ``w_fast`` names the
    operand's stride-1 dim ("j" or "k"), walked by neighbouring invocations."""
    kc, bk, n = tile.kc, tile.bk, gates * tile.kc * tile.bk
    if w_fast == "j":
        split = f"let jl = e % {kc}u; let r = e / {kc}u; let kl = r % {bk}u; let g = r / {bk}u;"
    else:
        split = f"let kl = e % {bk}u; let r = e / {bk}u; let jl = r % {kc}u; let g = r / {kc}u;"
    return (
        f"    for (var e = li; e < {n}u; e += {tile.group}u) {{\n"
        f"      {split}\n"
        f"      sh_w[wz + (g * {kc}u + jl) * {bk}u + kl] = tile_w(g, j0 + jl, k0 + kl);\n"
        "    }"
    )


def _stage_a(tile: GateTile) -> str:
    kc4 = tile.kc // 4
    return (
        f"    for (var e = li; e < {tile.bb * kc4}u; e += {tile.group}u) {{\n"
        f"      let bl = e / {kc4}u; let j = j0 + (e % {kc4}u) * 4u; let bg = b0 + bl;\n"
        "      sh_a[az + e] = vec4<f32>(tile_a(bg, j), tile_a(bg, j + 1u), tile_a(bg, j + 2u),"
        " tile_a(bg, j + 3u));\n"
        "    }"
    )


def _acc(g: int, r: int, q: int) -> str:
    return f"acc{g}_{r}_{q}"


def _multiply(tile: GateTile, gates: int) -> str:
    """One staged chunk: per 4 j, rb vec4 reads of A and G * rk reads of W per j."""
    kc, kc4, bk = tile.kc, tile.kc // 4, tile.bk
    lines = [f"    for (var j4 = 0u; j4 < {kc4}u; j4++) {{"]
    for r in range(tile.rb):
        lines.append(f"      let av{r} = sh_a[az + (tb + {tile.tb * r}u) * {kc4}u + j4];")
    for jj in range(4):
        for g in range(gates):
            for q in range(tile.rk):
                w = f"w{g}_{q}_{jj}"
                at = f"wz + ({g * kc}u + j4 * 4u + {jj}u) * {bk}u + tk + {tile.tk * q}u"
                lines.append(f"      let {w} = sh_w[{at}];")
                for r in range(tile.rb):
                    acc = _acc(g, r, q)
                    lines.append(f"      {acc} = fma(av{r}[{jj}], {w}, {acc});")
    lines.append("    }")
    return "\n".join(lines)


def _combine(tile: GateTile, accs: list[str]) -> str:
    """Group 0 adds the other groups' partial sums to its own, group by group (a fixed
    order, so results repeat bit for bit), through ``sh_w``, which holds one partial
    set when bb <= ks * kc (checked by ``tiled_main``)."""
    put = " ".join(f"sh_w[{n * tile.group}u + li] = {a};" for n, a in enumerate(accs))
    add = " ".join(f"{a} += sh_w[{n * tile.group}u + li];" for n, a in enumerate(accs))
    lines = []
    for z in range(1, tile.ks):
        lines.append(f"  workgroupBarrier();\n  if (z == {z}u) {{ {put} }}")
        lines.append(f"  workgroupBarrier();\n  if (z == 0u) {{ {add} }}")
    return "\n".join(lines)


def tiled_main(tile: GateTile, gates: int, length: str, w_fast: str, epilogue: str) -> str:
    """The entry point: staging, the chunk loop, then ``epilogue`` per owned output.

    ``length`` is the WGSL contraction length; ``B`` and ``H`` are mt[1] and mt[2]. No
    invocation returns early: every one reaches every barrier (out-of-range tiles and
    outputs stage zeros and skip their stores). With ``ks`` > 1 the workgroup is ``ks``
    groups of tb x tk invocations; group z takes chunks z, z + ks, ... of the
    contraction into its own staging arrays, and the partial sums meet in group 0, which
    runs the epilogue: ks times the invocations per output, so a step's short product
    has more warps to hide its memory waits, and each invocation a ks-th of the chunks."""
    accs = [_acc(g, r, q) for g in range(gates) for r in range(tile.rb) for q in range(tile.rk)]
    assert tile.ks == 1 or tile.bb <= tile.ks * tile.kc, "sh_w cannot hold a partial set"
    outs = []
    for r in range(tile.rb):
        for q in range(tile.rk):
            names = "".join(f" let a{g} = {_acc(g, r, q)};" for g in range(gates))
            outs.append(
                f"  {{ let b = b0 + tb + {tile.tb * r}u; let k = k0 + tk + {tile.tk * q}u;\n"
                f"    if (z == 0u && b < B && k < H) {{{names}\n{epilogue}\n    }} }}"
            )
    a_size, w_size = tile.bb * tile.kc // 4, gates * tile.kc * tile.bk
    return f"""var<workgroup> sh_a: array<vec4<f32>, {tile.ks * a_size}>;
var<workgroup> sh_w: array<f32, {tile.ks * w_size}>;
@compute @workgroup_size({tile.threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let B = mt[1]; let H = mt[2]; let t = mt[3];
  let L = {length};
  let ktiles = (H + {tile.bk - 1}u) / {tile.bk}u;
  let wgi = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let b0 = (wgi / ktiles) * {tile.bb}u; let k0 = (wgi % ktiles) * {tile.bk}u;
  let z = lid / {tile.group}u; let li = lid % {tile.group}u;
  let az = z * {a_size}u; let wz = z * {w_size}u;
  let tb = li / {tile.tk}u; let tk = li % {tile.tk}u;
  {" ".join(f"var {a} = 0.0;" for a in accs)}
  for (var c0 = 0u; c0 < L; c0 += {tile.ks * tile.kc}u) {{
    let j0 = c0 + z * {tile.kc}u;
{_stage_a(tile)}
{_stage_w(tile, gates, w_fast)}
    workgroupBarrier();
{_multiply(tile, gates)}
    workgroupBarrier();
  }}
{_combine(tile, accs)}
{chr(10).join(outs)}
}}
"""
