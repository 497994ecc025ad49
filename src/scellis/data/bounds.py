"""How much a dataset's windows may hold (data layer): counted before any is cut.

Windows are plain lists, each a copy of its rows. Windows that overlap (a stride
shorter than the window) hold every value many times over, so a file of a few
hundred kilobytes with a window of thousands of rows and stride 1 would take
gigabytes and minutes to cut. The total is checked from the counts first: any
dataset may hold ``MAX_WINDOW_VALUES`` values in its windows, and a large one up to
``MAX_GROWTH`` times the values its file has (a window of 20 rows at stride 1 over a
file of millions of rows is ordinary; a window of thousands over a small file is not).
"""

from __future__ import annotations

from ..base.errors import ScellisError

MAX_WINDOW_VALUES = 1 << 25
MAX_GROWTH = 128


def window_count(n: int, span: int, stride: int) -> int:
    """How many windows of ``span`` rows, every ``stride`` rows, fit in ``n`` rows."""
    return len(range(0, n - span + 1, stride))


def check_window_values(windows: int, each: int, source_values: int, where: str) -> None:
    """Refuse ``windows`` windows of ``each`` values, cut from a file of
    ``source_values`` values, when together they would hold too many."""
    total = windows * each
    cap = max(MAX_WINDOW_VALUES, MAX_GROWTH * source_values)
    if total > cap:
        raise ScellisError(
            f"{where}: {windows} windows of {each} values would hold {total} values "
            f"(at most {cap}); use a larger stride or a shorter window"
        )
