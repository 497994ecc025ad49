"""The whole ladder in one call (ir layer): record -> the text of any rung, verified.

``emit`` is what ``scellis compile`` prints and what the golden files hold. Every rung
is verified on the way: a problem in any rung below the one asked for is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import ScellisError
from ..catalog.peft import describe
from .blocks import block_graph
from .fusion import fuse
from .graph import op_graph
from .kernels import lower
from .limits import Target
from .schedule import schedule
from .trace import trace
from .wgsl import verify_wgsl, wgsl_text

RUNGS = ("blocks", "ops", "kernels", "schedule", "wgsl")


@dataclass
class Emitted:
    rung: str
    text: str
    problems: list[str]
    dispatches: int | None = None
    dispatches_unfused: int | None = None


def emit(
    record: dict,
    rung: str,
    target: Target,
    *,
    mode: str = "inference",
    batch: int | None = None,
    fused: bool = True,
) -> Emitted:
    if rung not in RUNGS:
        raise ScellisError(f"--emit takes one of {', '.join(RUNGS)}, not {rung!r}")
    bg = block_graph(record)
    if rung == "blocks":
        tr = trace(record, mode="inference", batch=batch, supports_f16=target.has_f16)
        text = _peft_header(record, tr) + bg.text()
        return Emitted(rung, text, bg.verify(tr.block_shapes, tr.batch))
    tr = trace(record, mode=mode, batch=batch, supports_f16=target.has_f16)
    out = _rung(rung, bg, tr, target, mode, fused)
    out.text = _peft_header(record, tr, "//" if rung == "wgsl" else "#") + out.text
    return out


def _peft_header(record: dict, tr, mark: str = "#") -> str:
    """A record with a ``finetune`` section: its adapters as comment lines, each saying
    whether it is lowered with the op graph or runs on the eager path."""
    if not record.get("finetune"):
        return ""
    return "".join(f"{mark} {line}\n" for line in describe(tr.keep[0]).splitlines())


def _rung(rung: str, bg, tr, target: Target, mode: str, fused: bool) -> Emitted:
    problems = bg.verify(tr.block_shapes, tr.batch) if mode == "inference" else bg.verify()
    g = op_graph(tr)
    problems += g.verify()
    if rung == "ops":
        return Emitted(rung, g.text(), problems)
    plain = lower(g, target)
    kg = fuse(plain) if fused and mode == "inference" else plain
    problems += kg.verify()
    counts = dict(dispatches=kg.dispatches, dispatches_unfused=plain.dispatches)
    if rung == "kernels":
        return Emitted(rung, kg.text(), problems, **counts)
    if rung == "wgsl":
        return Emitted(rung, wgsl_text(kg), problems + verify_wgsl(kg), **counts)
    sc = schedule(kg)
    return Emitted(rung, sc.text(), problems + sc.verify(), **counts)
