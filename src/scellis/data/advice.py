"""Data options chosen from a series (data layer): what ``scellis init --data`` writes.

A CSV's layout (``sniff``: delimiter, header, date pattern), value column, dates and
their spacing, the season, an input window, and the normalisation, each with the
reason in one line (the record's comment). A strong season that moves
(``season_test`` on the training rows) is seasonally differenced (``season``): the
network predicts the change from one season back, so it starts from the
seasonal-naive forecast. A season moves when the value one season back forecasts at
least as well as the mean of the last two seasons' values: its level drifts or its
shape evolves, so the latest season is the one to start from. A season that holds
still is left to ``window``: there the network averages the noise of several seasons
away, which differencing would double. Otherwise the normalisation comes from a trend
test on the whole file: a series whose level drifts (a straight line explains much of
its variance, or its last part leaves the range of the earlier rows) is framed by each
window's last value (``change``), which carries a trend on. So is a noisy level
(``noise_test``: on the training rows, a window's mean forecasts the next row better
than its last row does, with no strong season to explain why): framed by its mean and
spread, such a window's targets are the noise itself, which a network can only
memorise (a yearly river flow of 80 training rows: validation error falling for 20
epochs, then doubling), while framed by its last value they hold the pull back to the
level, which its inputs show. Any other series, a level that holds and moves smoothly,
is framed by each window's mean and spread (``window``). All are scale-free: nothing
the network sees depends on the level the series has reached.
"""

from __future__ import annotations

import csv
import math

from ..base.errors import ScellisError
from .csvsource import split_point
from .frequency import calendar_season, frequency
from .season import detect_season, naive_mae, seasonal_strength
from .sniff import delimiter_of, holds_data, is_number, rows_of, time_format
from .table import MISSING, read_table
from .text import read_text

VAL_FRACTION = 0.2
DRIFT_R2 = 0.5  # a straight line explains at least this share of the variance
DRIFT_OUTSIDE = 0.1  # or at least this share of the last rows leaves the earlier range
# a season explaining at least this share of the detrended variation is strong (the
# level the time-series feature literature calls strong); it must also repeat better
# than the last row does, or differencing by it only adds the noise of a second row
SEASON_STRENGTH = 0.6


def _numeric(cells: list[str]) -> bool:
    seen = False
    for c in cells:
        if c.strip().lower() in MISSING:
            continue
        if not is_number(c):
            return False
        seen = True
    return seen


def columns_of(path, column: str | None = None) -> tuple[str, str | None, str | None, str]:
    """(value column, datetime column or None, its format, the delimiter) of a CSV with
    a header (``sniff``): the value is ``column`` or the first numeric column that is
    neither a time nor a row index."""
    text = read_text(path)
    delimiter = delimiter_of(text)
    try:
        rows = rows_of(text, delimiter)
    except csv.Error as e:
        raise ScellisError(f"{path}: bad CSV: {e}") from None
    if len(rows) < 2:
        raise ScellisError(f"{path}: expected a header row and data rows")
    header = [h.strip() for h in rows[0]]
    if holds_data(header):
        raise ScellisError(
            f"{path}:1: the first row ({delimiter.join(header)[:80]}) holds values, not column "
            "names: add a header row naming the columns (e.g. date,value)"
        )
    cols = {h: [r[i] if i < len(r) else "" for r in rows[1:]] for i, h in enumerate(header)}
    dated = _time_axis(path, cols)
    numeric = [h for h, c in cols.items() if h != dated[0] and _numeric(c)]
    if column is None:
        if not numeric:
            raise ScellisError(_no_number(path, cols, dated[0], header))
        column = next((h for h in numeric if not _counter(cols[h])), numeric[0])
    elif column not in numeric:
        raise ScellisError(f"{path}: column {column!r} is not numeric (numeric: {numeric})")
    return column, dated[0], dated[1], delimiter


def _time_axis(path, cols: dict) -> tuple[str | None, str | None]:
    """(the first column that reads as increasing times, its format), or (None, None).
    A column of whole numbers counting up in ones is years only beside another number
    column (alone it is the value); one that reads as times only backwards is refused."""
    numbers = {h for h, c in cols.items() if _numeric(c)}
    found = [(h, f) for h, cells in cols.items() if (f := time_format(cells))]
    # a column of dates over one of whole numbers that could be years: a data frame's
    # row index (1, 2, 3...) reads as years too
    for h, fmt in sorted(found, key=lambda hf: hf[1] == "year"):
        if not (fmt == "year" and numbers <= {h}):
            return h, fmt
    for h, cells in cols.items():
        fmt = time_format(cells[::-1])
        if fmt and not (fmt == "year" and numbers <= {h}):
            # read as it stands, the series would be learned backwards in time
            raise ScellisError(f"{path}: {h!r} lists the newest first: sort the file oldest first")
    return None, None


def _counter(cells: list[str]) -> bool:
    """Whether a column counts rows (0, 1, 2, ... or any whole numbers in even steps):
    a spreadsheet's or a data frame's row index, which says nothing to forecast."""
    try:
        values = [float(c) for c in cells]
    except ValueError:
        return False  # a gap: no index has one
    steps = {b - a for a, b in zip(values, values[1:])}
    return len(values) > 2 and len(steps) == 1 and all(v.is_integer() for v in values)


def _no_number(path, cols: dict, dated: str | None, header: list[str]) -> str:
    """Why no column reads as numbers, at the first cell that is not one."""
    for line, cells in enumerate(zip(*cols.values()), start=2):
        for name, cell in zip(cols, cells):
            if name != dated and cell.strip().lower() not in MISSING and not is_number(cell):
                # a spreadsheet's "1,234.5" or "12,5": numbers are read as Python writes them
                hint = " (write numbers without thousands separators or decimal commas)"
                return (f"{path}:{line}: no numeric column to forecast: {name!r} is {cell!r}"
                        f"{hint if ',' in cell else ''} (columns: {header})")  # fmt: skip
    return f"{path}: no numeric column to forecast (columns: {header})"


def drift(values: list[float], val_fraction: float = VAL_FRACTION) -> tuple[float, float]:
    """(share of the variance a straight line explains, share of the rows after the
    split outside the range of those before it): the trend test's two numbers."""
    n = len(values)
    t_mean, v_mean = (n - 1) / 2, math.fsum(values) / n
    stt = math.fsum((t - t_mean) ** 2 for t in range(n))
    svv = math.fsum((v - v_mean) ** 2 for v in values)
    stv = math.fsum((t - t_mean) * (v - v_mean) for t, v in enumerate(values))
    r2 = stv * stv / (stt * svv) if stt and svv else 0.0
    cut = split_point(n, val_fraction)
    before, after = values[:cut], values[cut:]
    lo, hi = min(before), max(before)
    outside = sum(not lo <= v <= hi for v in after) / len(after) if after else 0.0
    return r2, outside


def advise(path, column: str | None = None, horizon: int = 1, window: int | None = None) -> dict:
    """The data options for the CSV at ``path``: ``{data: {...}, why: {key: reason},
    rows, frequency, season}`` (see the module note); ``window`` is the input length a
    record already has (the seasonal difference needs one that holds a season)."""
    column, dt, fmt, delimiter = columns_of(path, column)
    table = read_table(path, [column], dt, fmt or "iso", delimiter)
    values = [v for v in table.columns[column] if v is not None]
    rows = len(table)
    if len(values) < 8:
        raise ScellisError(f"{path}: {len(values)} values in {column!r} are too few to forecast")
    data: dict = {"column": column}
    why: dict = {
        "column": "the first numeric column that is no row index"
        + (f", after the dates ({dt})" if dt else "")
    }
    if delimiter != ",":
        data["delimiter"] = delimiter
        why["delimiter"] = f"fields are separated by {delimiter!r}"
    if dt:
        data.update(datetime=dt, datetime_format=fmt)
    if len(values) < rows:
        data["missing"] = "ffill"
        why["missing"] = "some cells are empty: each repeats the value before it"
    freq = frequency(table.times or [])
    cut = split_point(rows, VAL_FRACTION)
    season = detect_season(values[:cut], table.times)
    if freq:
        why["datetime"] = f"rows are {freq['name']}"
    why["season"] = _season_why(season, freq, calendar_season(table.times) == season)
    data["window"], why["window"] = _window(season, rows, horizon)
    data["horizon"] = horizon
    data["val_fraction"] = VAL_FRACTION
    why["val_fraction"] = "the most recent 20% validates, never shuffled into training"
    r2, outside = drift(values)
    seasonal = season_test(values[:cut], season, window or data["window"])
    noisy = noise_test(values[:cut], window or data["window"], season)
    if seasonal:
        data["normalise"], data["season"] = "season", season
        why["normalise"], why["season"] = seasonal, why["season"] + " (differenced by it)"
    elif noisy and r2 < DRIFT_R2 and outside < DRIFT_OUTSIDE:
        data["normalise"], why["normalise"] = "change", noisy
    elif r2 >= DRIFT_R2 or outside >= DRIFT_OUTSIDE:
        data["normalise"] = "change"
        why["normalise"] = (
            f"the level drifts (a line explains {r2:.0%} of the variance, {outside:.0%} of the "
            "last rows leave the earlier range): each window is framed by its last value, "
            "so the network predicts the change and a trend carries on"
        )
    else:
        data["normalise"] = "window"
        why["normalise"] = (
            f"the level holds (a line explains {r2:.0%} of the variance, {outside:.0%} of the "
            "last rows leave the earlier range): each window is scaled by its own mean "
            "and spread"
        )
    return {"data": data, "why": why, "rows": rows, "frequency": freq, "season": season}


def season_test(train: list[float], season: int | None, window: int) -> str | None:
    """Why the training rows ``train`` are seasonally differenced, in one line; None
    when they should not be: no season, a window that cannot hold one season and the
    rows before it, a weak season, one that repeats worse than the last row, or one
    that holds still (see the module note)."""
    if season is None or window <= season:
        return None
    strength = seasonal_strength(train, season)
    back, last, two = naive_mae(train, season), naive_mae(train, 1), _two_seasons_mae(train, season)
    if strength < SEASON_STRENGTH or None in (back, two) or not last or back >= last:
        return None
    if back > two:
        return None
    return (
        f"a strong season that moves (it explains {strength:.0%} of the detrended variation; "
        f"one season back errs {back / last:.0%} as much as the last row, {back / two:.0%} as "
        "much as two seasons' mean): the network predicts the change from one season back"
    )


def noise_test(train: list[float], window: int, season: int | None = None) -> str | None:
    """Why the training rows ``train`` are a noisy level, in one line (see the module
    note); None when the last row forecasts the next at least as well as the mean of the
    ``window`` rows before it, or when a strong ``season`` moves the rows: the last row
    is then far from the next by the cycle, not by noise, and the window's mean wins
    for that reason alone."""
    if season is not None and seasonal_strength(train, season) >= SEASON_STRENGTH:
        return None
    pairs = [(train[t], train[t - 1], math.fsum(train[t - window : t]) / window)
             for t in range(window, len(train))]  # fmt: skip
    if not pairs:
        return None
    last = math.fsum(abs(v - p) for v, p, _ in pairs)
    mean = math.fsum(abs(v - m) for v, _, m in pairs)
    if not last or mean >= last:
        return None
    return (
        f"the level is noisy (a window's mean forecasts the next row with {mean / last:.0%} of "
        "the last row's error): each window is framed by its last value, so the targets "
        "hold the pull back to the level rather than the noise"
    )


def _two_seasons_mae(values: list[float], season: int) -> float | None:
    """The mean absolute error of forecasting each row by the mean of its values one
    and two seasons back."""
    errs = [abs(v - (values[t - season] + values[t - 2 * season]) / 2)
            for t, v in enumerate(values) if t >= 2 * season]  # fmt: skip
    return math.fsum(errs) / len(errs) if errs else None


def _season_why(season: int | None, freq: dict | None, calendar: bool) -> str:
    """Where the season came from, in one line (the seasonal-naive baseline uses it)."""
    if season is None:
        return "no season shows: the seasonal-naive baseline is left out"
    if freq and calendar:
        return f"rows are {freq['name']}: a cycle of {season} {freq['unit']}s"
    return f"the autocorrelation repeats every {season} rows"


def _window(season: int | None, rows: int, horizon: int) -> tuple[int, str]:
    """An input length: two seasons (at least 16 rows), cut to what both parts hold."""
    if season and 2 * season >= 16:
        want, why = 2 * season, f"two seasons of {season} rows"
    elif season:
        want, why = 16, f"16 rows: two or more seasons of {season}"
    else:
        # without a season nothing asks for a long context, while each window overlaps
        # the next in all but one row: a tenth of the training rows (8 at least) keeps
        # ten windows' worth of rows that no two windows share
        want = min(16, max(8, split_point(rows, VAL_FRACTION) // 10))
        why = f"{want} rows (no season shows" + (
            ")" if want == 16 else "; a tenth of the training rows: many windows apart)"
        )
    val_rows = rows - split_point(rows, VAL_FRACTION)
    most = min(val_rows - horizon, split_point(rows, VAL_FRACTION) // 4)
    if most < 2:
        raise ScellisError(
            f"{rows} rows are too few to forecast: each part needs a few windows of inputs "
            f"and {horizon} target(s)"
        )
    if want > most:
        return most, f"{why} would leave too few validation windows: {most} rows"
    return want, why
