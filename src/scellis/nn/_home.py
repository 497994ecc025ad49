"""Where a torch-shaped constructor puts its parameters (nn layer).

torch's constructors take ``device=`` and ``dtype=`` keywords; ``"cpu"`` names the
reference device here. ``generator=`` picks the Philox stream the weights are drawn
from (by default the eager ``init`` stream, as the catalog blocks do).
"""

from __future__ import annotations

from ..base.errors import ScellisError


def block_args(device=None, dtype=None, generator=None) -> dict:
    """The keyword arguments a catalog block takes, from torch's."""
    return {"device": device, "dtype": dtype, "gen": generator}


def unsupported(what: str, layer: str) -> ScellisError:
    """The error for a torch option the catalog block does not implement yet."""
    return ScellisError(f"{layer}: {what} is not supported yet")
