"""How a run's figures and its resume command read in a terminal (cli layer).

Shared by the commands that drive a run and those that only list stored ones; kept apart
from the driving (``runner``) so a listing starts without loading the engine.
"""

from __future__ import annotations

from pathlib import Path


def resume_command(root: Path, rid: str) -> str:
    store = "" if Path(root) == Path(".scellis") else f" --store {root}"
    return f"scellis resume {rid}{store}"


def baseline_text(baselines: dict, name: str) -> str:
    """`` (persistence 0.40, seasonal naive 0.48)``: the baselines' values of ``name``."""
    parts = [f"{b.replace('_', ' ')} {fmt_metric(v[name])}" for b, v in baselines.items()
             if v.get(name) is not None]  # fmt: skip
    return f" ({', '.join(parts)})" if parts else ""


def fmt_metric(v) -> str:
    return "n/a" if v is None else f"{v:.4g}"
