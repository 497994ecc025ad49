"""How much a dataset's windows may hold (data layer): counted before any is cut.

Windows are plain lists, each a copy of its rows. Windows that overlap (a stride
shorter than the window) hold every value many times over, so a file of a few
hundred kilobytes with a window of thousands of rows and stride 1 would take
gigabytes and minutes to cut. The total is checked from the counts first.
"""

from __future__ import annotations

from ..base.errors import ScellisError

# values (floats or ids) all windows of a dataset may hold together: about 2 GiB of
# Python lists at worst, far beyond what the engine trains on in one process
MAX_WINDOW_VALUES = 1 << 25


def window_count(n: int, span: int, stride: int) -> int:
    """How many windows of ``span`` rows, every ``stride`` rows, fit in ``n`` rows."""
    return len(range(0, n - span + 1, stride))


def check_window_values(windows: int, each: int, where: str) -> None:
    """Refuse ``windows`` windows of ``each`` values when together they are too many."""
    total = windows * each
    if total > MAX_WINDOW_VALUES:
        raise ScellisError(
            f"{where}: {windows} windows of {each} values would hold {total} values "
            f"(at most {MAX_WINDOW_VALUES}); use a larger stride or a shorter window"
        )
