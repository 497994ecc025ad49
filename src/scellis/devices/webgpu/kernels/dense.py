"""The fused dense layer in WGSL (devices layer): ``dense_act`` and its backward core.

``dense_act``: the matmul kernel (``matmul.matmul_kernel``, x times w read transposed
through its strides, no copy) whose store adds the bias and applies the activation to
each accumulator, writing the activation to slot 0 and the pre-activation to slot 1
of the packed [2, M, N] result: one launch where the unfused layer takes a matmul, a
bias add and an activation. Never split along K: the epilogue needs the whole sum.

``dense_act_backward``: one launch. Each workgroup owns ``BACK_COLUMNS`` adjacent
columns and splits their rows among ``BACK_LANES`` row lanes: the invocation at
(lane, column) walks rows lane, lane + BACK_LANES, ..., writes d = g * act'(pre) and
sums its d; then the workgroup adds its lanes' sums in lane order, the bias gradient.
One launch where the unfused backward takes an activation gradient and a column sum,
with 16x the invocations of one walk per column (which left a GPU mostly idle on a
narrow layer over many rows). The order is fixed by the shape (no atomics), so
repeated runs are bitwise equal.
"""

from __future__ import annotations

from ....base.dtypes import f32
from ....ops.dense import ACTIVATION_GRAD_OPS
from ...base import View
from .common import Source, grid_1d
from .elementwise import expression
from .matmul import matmul_kernel

# the activation's elementwise op (elementwise.py's expression of ``a``)
_FORWARD = {
    "gelu": "gelu_erf",
    "gelu_tanh": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
    "tanh": "tanh",
}
# the derivative times the cotangent, b, at the pre-activation, a: elementwise.py's
# gradient op where there is one (ops.dense.ACTIVATION_GRAD_OPS), else inline (y = the
# activation)
_BACKWARD_INLINE = {
    "tanh": "b * (1.0 - y * y)",  # from the activation, as tanh's own VJP takes it
}
# the backward's workgroup: adjacent columns (consecutive addresses in a row), and the
# row lanes that split each column's rows
BACK_COLUMNS, BACK_LANES = 16, 16
# matmul.py's meta words: M, N and the output's offset
_M, _N, _OC = 0, 1, 12


class _D:
    """What elementwise.expression reads of an operand: its dtype."""

    dtype = f32


def _act_fn(src: Source, act: str) -> None:
    expr = expression(src, _FORWARD[act], [_D()], _D(), {})
    src.helpers(expr)
    src.fns.append(f"fn sc_act(a: f32) -> f32 {{ return {expr}; }}")


def dense_act(src: Source, op: str, ins, outs, attrs):
    x, w, b = ins
    out = outs[0]
    m, n = out.shape[1:]
    wt = View(w.buf, (w.shape[1], n), (w.strides[1], w.strides[0]), w.offset, w.dtype)
    act_out = View(out.buf, (m, n), (n, 1), out.offset, out.dtype)
    scratch, src.scratch = src.scratch, None  # no K split: the store needs the whole sum
    grid = matmul_kernel(src, "matmul", [x, wt], [act_out], {})
    src.scratch = scratch
    for i, fn in enumerate(src.fns):
        if fn.startswith("fn st_o("):
            src.fns[i] = "fn st_mm(" + fn[len("fn st_o(") :]
    src.operand("bias", b)
    bo = src.add_meta(b.offset)
    if attrs["act"] == "none":  # the bias added in the store, one slot
        vec = n % 4 == 0 and out.offset % 4 == 0
        ty, idx = ("vec4<f32>", "e * 4u") if vec else ("f32", "e")
        loads = [f"ld_bias(mt[{bo}u] + c + {lane}u)" for lane in range(4)]
        bias = f"vec4<f32>({', '.join(loads)})" if vec else f"ld_bias(mt[{bo}u] + c)"
        src.fns.append(
            f"fn st_o(e: u32, acc: {ty}) {{\n"
            f"  let c = ({idx} - mt[{_OC}u]) % mt[{_N}u];\n"
            f"  st_mm(e, acc + {bias});\n}}"
        )
        return grid
    _act_fn(src, attrs["act"])
    col = f"(e - mt[{_OC}u]) % mt[{_N}u]"
    slot = f"mt[{_M}u] * mt[{_N}u]"
    if n % 4 == 0 and out.offset % 4 == 0:  # the matmul stores vec4 (matmul_kernel's rule)
        src.fns.append(
            "fn st_o(e: u32, acc: vec4<f32>) {\n"
            f"  let c = (e * 4u - mt[{_OC}u]) % mt[{_N}u];\n"
            "  var pre = acc; var y = acc;\n"
            "  for (var l = 0u; l < 4u; l++) {\n"
            f"    pre[l] = acc[l] + ld_bias(mt[{bo}u] + c + l); y[l] = sc_act(pre[l]);\n"
            "  }\n"
            f"  st_mm(e, y); st_mm(e + {slot} / 4u, pre);\n}}"
        )
    else:
        src.fns.append(
            "fn st_o(e: u32, acc: f32) {\n"
            f"  let pre = acc + ld_bias(mt[{bo}u] + {col});\n"
            f"  st_mm(e, sc_act(pre)); st_mm(e + {slot}, pre);\n}}"
        )
    return grid


def dense_act_backward(src: Source, op: str, ins, outs, attrs):
    g, y = ins
    out = outs[0]
    m, n = y.shape[1:]
    src.add_meta(n)
    src.operand("g", g)
    src.operand("y", y)
    src.operand("o", out, write=True)
    at = src.add_meta(m, n, g.offset, y.offset, out.offset)
    act = attrs["act"]
    expr = _BACKWARD_INLINE.get(act) or expression(
        src, ACTIVATION_GRAD_OPS[act], [_D(), _D()], _D(), {}
    )
    src.helpers(expr)
    src.fns.append(f"fn sc_dact(a: f32, b: f32, y: f32) -> f32 {{ return {expr}; }}")
    src.decls.append(f"var<workgroup> lane_sums: array<f32, {BACK_COLUMNS * BACK_LANES}>;")
    src.body = f"""@compute @workgroup_size({BACK_COLUMNS * BACK_LANES})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let M = mt[{at}u]; let N = mt[{at + 1}u]; let mn = M * N;
  let og = mt[{at + 2}u]; let oy = mt[{at + 3}u]; let oo = mt[{at + 4}u];
  let c = lid % {BACK_COLUMNS}u; let lane = lid / {BACK_COLUMNS}u;
  let i = (wid.x + wid.y * nwg.x) * {BACK_COLUMNS}u + c;
  var s = 0.0;
  if (i < N) {{
    for (var r = lane; r < M; r += {BACK_LANES}u) {{
      let e = r * N + i;
      let d = sc_dact(ld_y(oy + mn + e), ld_g(og + e), ld_y(oy + e));
      st_o(oo + e, d);
      s += d;
    }}
  }}
  lane_sums[lid] = s;
  workgroupBarrier();
  if (lane == 0u && i < N) {{
    var t = 0.0;
    for (var k = 0u; k < {BACK_LANES}u; k++) {{ t += lane_sums[k * {BACK_COLUMNS}u + c]; }}
    st_o(oo + mn + i, t);
  }}
}}
"""
    return grid_1d(n, src.limits, BACK_COLUMNS)


KERNELS = {"dense_act": dense_act, "dense_act_backward": dense_act_backward}
