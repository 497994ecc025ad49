"""Model View and data panel entry points (webapp layer): placeholder until webui's lands.

The ``webui`` branch owns this module (projections, edits, data); it replaces this file.
"""

from __future__ import annotations

from ..data.record import BUNDLED

EXAMPLES = ("lstm_forecaster", "char_transformer")


def bundled_files() -> list[str]:
    """The data files shipped in the package (``bundled:NAME`` sources)."""
    return sorted(p.name for p in BUNDLED.iterdir() if p.suffix != ".md")
