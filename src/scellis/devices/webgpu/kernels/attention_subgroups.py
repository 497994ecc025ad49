"""The tiled flash kernels' row reductions through subgroups (devices layer): prod, fast.

In ``attention_tiles`` each row of a score block (and of the backward's dO . O) is
reduced by TPR consecutive invocations, through workgroup memory and a barrier: the
forward's running max, then its sum of exponentials, once per key tile. Here those TPR
partials meet by a butterfly of ``subgroupShuffleXor`` (offsets 1, 2, ..., TPR/2)
instead, which needs no barrier and leaves every lane of a row with the same bits (each
level adds or compares the same two values on both sides).

A butterfly stays inside a row only where each row's TPR invocations form one aligned
run of a subgroup, with ``subgroup_invocation_id`` in ``local_invocation_index``'s order.
Common hardware lays subgroups out that way, but WebGPU does not promise it, so each
kernel checks at its start (every lane compares the invocation index a shuffle brings it
with its own) and the workgroup takes the barrier path wherever one lane disagrees,
or where a subgroup is narrower than TPR. Both paths are in the kernel; the choice is
uniform over the workgroup (``workgroupUniformLoad``).
"""

from __future__ import annotations

FLAG = "sg_rows_bad"  # workgroup word: 1 when some row's lanes are not one subgroup run


def applies(src, tpr: int, floats: int) -> bool:
    """Whether a tiled kernel of ``floats`` f32 words of workgroup memory with ``tpr``
    lanes per row takes the butterfly: subgroups allowed (kernels/variants.py), a row
    spread over several lanes, and room for the check's one word."""
    room = src.limits["max_compute_workgroup_storage_size"] // 4
    return src.subgroups and tpr > 1 and floats + 1 <= room


def declare(src) -> None:
    src.decls.append(f"var<workgroup> {FLAG}: u32;")


def check(tpr: int) -> str:
    """WGSL binding ``rows_sg``: whether every row's lanes are one subgroup run. Workgroup
    memory is not zeroed on every host, so the flag is cleared first; each shuffle is
    its own statement so that all run in uniform control flow."""
    offsets = _offsets(tpr)
    got = "".join(f"  let sg_x{o} = subgroupShuffleXor(lid, {o}u);\n" for o in offsets)
    wrong = " || ".join(f"sg_x{o} != (lid ^ {o}u)" for o in offsets)
    return (
        f"  if (lid == 0u) {{ {FLAG} = 0u; }}\n"
        "  workgroupBarrier();\n"
        f"{got}"
        f"  if ({wrong}) {{ {FLAG} = 1u; }}\n"
        f"  let rows_sg = workgroupUniformLoad(&{FLAG}) == 0u;\n"
    )


def butterfly(var: str, tpr: int, op: str, indent: str) -> str:
    """WGSL folding ``var`` over each row's TPR lanes (``op``: "max" or "+")."""
    lines = []
    for o in _offsets(tpr):
        other = f"subgroupShuffleXor({var}, {o}u)"
        step = f"max({var}, {other})" if op == "max" else f"{var} + {other}"
        lines.append(f"{indent}{var} = {step};\n")
    return "".join(lines)


def _offsets(tpr: int) -> list[int]:
    out, o = [], 1
    while o < tpr:
        out.append(o)
        o *= 2
    return out


def either(sub: str, tree: str) -> str:
    """The butterfly path where ``rows_sg``, else the barrier path (both in uniform
    control flow: the condition is the workgroup's)."""
    return f"    if (rows_sg) {{\n{sub}    }} else {{\n{tree}    }}\n"
