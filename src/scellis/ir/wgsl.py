"""The WGSL rung (ir layer): every distinct pipeline a kernel graph compiles; print + verify.

The text is exactly what the webgpu backend hands to ``createShaderModule`` (the same
builders made it); each pipeline is headed by its key and the kernels that use it.
"""

from __future__ import annotations

from .kernels import KernelGraph


def wgsl_text(kg: KernelGraph) -> str:
    users: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    for i, k in enumerate(kg.kernels):
        for la in k.launches:
            texts.setdefault(la.key, la.text)
            if f"k{i}" not in users.setdefault(la.key, []):
                users[la.key].append(f"k{i}")
    lines = [f"// wgsl: {kg.graph.title}", f"// {len(texts)} pipelines"]
    for key, text in texts.items():
        names = {kg.kernels[int(u[1:])].name for u in users[key]}
        lines.append(f"// ---- pipeline {key}: {', '.join(sorted(names))}; {' '.join(users[key])}")
        lines.append(text.rstrip("\n"))
    return "\n".join(lines) + "\n"


def verify_wgsl(kg: KernelGraph) -> list[str]:
    """Structural checks (a real compile is the device's job): one entry point, balanced
    braces, every binding declared once."""
    problems = []
    for key, text in kg.pipelines().items():
        if text.count("@compute") != 1:
            problems.append(f"pipeline {key}: expected one @compute entry point")
        if text.count("{") != text.count("}"):
            problems.append(f"pipeline {key}: unbalanced braces")
        bindings = [ln.split("@binding(")[1].split(")")[0] for ln in text.splitlines()
                    if "@binding(" in ln]  # fmt: skip
        if len(bindings) != len(set(bindings)):
            problems.append(f"pipeline {key}: a binding is declared twice")
    return problems
