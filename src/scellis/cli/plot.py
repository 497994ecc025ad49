"""A small terminal plot of loss curves (cli layer): characters on a grid, no dependencies."""

from __future__ import annotations

import importlib.util
import math

from ..base.errors import ScellisError
from ..base.files import output_file

MARKS = "ab"


def curves(series: list[list[tuple[int, float]]], width: int = 60, height: int = 12) -> str:
    """Plot each series of (step, value) with its own mark ('a', 'b'; '*' where they meet)."""
    pts = [[(s, v) for s, v in ser if v is not None and math.isfinite(v)] for ser in series]
    flat = [p for ser in pts for p in ser]
    if not flat:
        return "(no finite values to plot)"
    s0, s1 = min(s for s, _ in flat), max(s for s, _ in flat)
    v0, v1 = min(v for _, v in flat), max(v for _, v in flat)
    if v1 == v0:
        v0, v1 = v0 - 0.5, v1 + 0.5
    grid = [[" "] * width for _ in range(height)]
    for mark, ser in zip(MARKS, pts):
        for s, v in ser:
            x = 0 if s1 == s0 else round((s - s0) / (s1 - s0) * (width - 1))
            y = round((v1 - v) / (v1 - v0) * (height - 1))
            cell = grid[y][x]
            grid[y][x] = mark if cell in (" ", mark) else "*"
    lines = []
    for i, row in enumerate(grid):
        label = f"{v1:9.4f} " if i == 0 else (f"{v0:9.4f} " if i == height - 1 else " " * 10)
        lines.append(label + "|" + "".join(row))
    lines.append(" " * 10 + "+" + "-" * width)
    lines.append(" " * 11 + f"step {s0}".ljust(width - len(f"step {s1}")) + f"step {s1}")
    return "\n".join(lines)


def write_png(fig, path: str, *, replace: bool, **savefig) -> None:
    """A matplotlib figure as the PNG ``path``, whole or not at all (``output_file``: a
    temporary name renamed into place, never through a link); the figure is closed."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - optional: only --png needs it

    try:
        with output_file(path, replace=replace) as f:
            fig.savefig(f, format="png", **savefig)
    finally:
        plt.close(fig)


def save_png(path: str, series: dict, title: str, xlabel: str = "", *,
             replace: bool = False) -> None:  # fmt: skip
    """Draw each ``{label: [(x, y), ...]}`` line into a PNG (matplotlib, optional); an
    existing ``path`` is replaced only with ``replace``."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ScellisError(
            f"{path}: drawing a PNG needs matplotlib (pip install 'scellis[plot]'); without "
            "--png the terminal shows a text chart"
        )
    import matplotlib  # optional: only --png needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for label, points in series.items():
        xs = [x for x, y in points if y is not None]
        ax.plot(xs, [y for _, y in points if y is not None], label=label)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.legend()
    fig.autofmt_xdate()
    write_png(fig, path, replace=replace, dpi=100, bbox_inches="tight")
