"""Workgroup folds through subgroup operations (devices layer): the prod and fast tiers'
replacement for the workgroup-memory trees of ``reduce`` and ``norm``.

A fold of one value per invocation over a 1-D workgroup of L invocations (L a power of
two): every invocation writes its value to slot ``lid`` of workgroup memory, then every
subgroup folds all L slots by itself (its n active invocations take slots rank, rank +
n, rank + 2n, ... in order, then one subgroup operation folds their n partials) and
each invocation returns its subgroup's result. One barrier instead of log2(L) levels.

Nothing here assumes a subgroup size or which invocations form a subgroup: n and the
rank come from ``subgroupAdd(1u)`` and ``subgroupExclusiveAdd(1u)``, so any size from 1
to L (lavapipe picks 8, NVIDIA 32, and a subgroup wider than the workgroup is a partial
one) and any mapping of ``local_invocation_index`` to subgroups fold every slot once.
Subgroups of one size do the same operations in the same order, so they return the same
bits. Callers are in workgroup-uniform control flow (the barriers and subgroup
operations need it), as the trees' callers already are.

Max and min propagate NaN as the trees do: ``subgroupMax`` may drop one, so the largest
bit pattern among the partials that are NaN (0 where none is) puts one back. (A NaN
constant would be shorter, but WGSL refuses one: constants are evaluated exactly.)
"""

from __future__ import annotations

# the in-lane fold of a partial and a slot, and the subgroup operation, by reduction
_OPS = {"sum": ("{a} + {b}", "subgroupAdd"), "max": ("cmb({a}, {b})", "subgroupMax"),
        "min": ("cmb({a}, {b})", "subgroupMin")}  # fmt: skip


def fold_fn(name: str, lanes: int, op: str = "sum", ty: str = "f32") -> str:
    """WGSL ``fn name(lid: u32, v: ty) -> ty``: the workgroup's ``op`` of v (``ty`` f32 or
    vec2<f32> for sums; max and min need the reduce kernels' ``cmb`` and ``sc_isnan``)."""
    step, group = _OPS[op]
    fold = step.format(a="acc", b=f"{name}_s[j]")
    result = f"{group}(acc)"
    nan = ""
    if op != "sum":  # a NaN among the partials is the result, as in the trees
        nan = "  let nan_bits = subgroupMax(select(0u, bitcast<u32>(acc), sc_isnan(acc)));\n"
        result = f"select({result}, bitcast<f32>(nan_bits), nan_bits != 0u)"
    return (
        f"var<workgroup> {name}_s: array<{ty}, {lanes}>;\n"
        f"fn {name}(lid: u32, v: {ty}) -> {ty} {{\n"
        f"  {name}_s[lid] = v;\n"
        "  workgroupBarrier();\n"
        "  let n = subgroupAdd(1u);\n"
        "  let rank = subgroupExclusiveAdd(1u);\n"
        f"  var acc = {name}_s[rank];\n"
        f"  for (var j = rank + n; j < {lanes}u; j += n) {{ acc = {fold}; }}\n"
        f"{nan}  let r = {result};\n"
        # the next fold's writes wait until every subgroup has read this one's slots
        "  workgroupBarrier();\n"
        "  return r;\n}\n"
    )


def norm_folds(lanes: int, pairs: bool) -> str:
    """The row norms' ``fold(lid, v)`` and (``pairs``) ``fold2(lid, a, b)`` sums, with the
    signatures of ``norm._folds``' trees."""
    text = fold_fn("fold", lanes)
    if pairs:
        text += fold_fn("fold_v2", lanes, ty="vec2<f32>") + (
            "fn fold2(lid: u32, a: f32, b: f32) -> vec2<f32> {"
            " return fold_v2(lid, vec2<f32>(a, b)); }\n"
        )
    return text
