"""The tab's GPU memory budget (webapp layer): the user's word for what their GPU holds.

WebGPU tells a page nothing about memory size, so a plan in the tab is held to a declared
4 GiB (``ir.limits.of_backend``) unless the user says more. The page keeps the budget the
user typed (text such as ``8 GiB``) and passes it to every command that plans or trains;
it is read here with the CLI's own ``parse_bytes`` (``--budget``), and the plan names it
as set in this tab, so a verdict never passes off the user's declaration as a measurement.
"""

from __future__ import annotations

from ..ir.limits import Budget, human, parse_bytes
from .commands import command


def _short(n: int) -> str:
    """``8 GiB`` rather than ``8.00 GiB``: the size as a person would type it."""
    text = human(n)
    return text.replace(".00 ", " ")


def tab_budget(text: str | None) -> Budget | None:
    """The budget of the page's text, or None (blank: the device's declared one). Text
    that is not a size is one ScellisError (``parse_bytes``' message)."""
    if text is None or not str(text).strip():
        return None
    n = parse_bytes(str(text))
    return Budget(n, f"budget {_short(n)}, set in this tab")


@command(writes_store=False)
def parse_budget(text: str) -> dict:
    """The page's check of a typed budget: ``{bytes, text, source}`` (all None when
    blank), or the ScellisError the plan would raise, for one line beside the box."""
    b = tab_budget(text)
    if b is None:
        return {"bytes": None, "text": None, "source": None}
    return {"bytes": b.bytes, "text": _short(b.bytes), "source": b.source}
