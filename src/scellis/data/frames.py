"""Per-window normalisation (data layer): every window in its own frame of reference.

A global z-score fitted on the training rows cannot extrapolate a trend: the later
(validation) values lie outside everything the network saw, and it forecasts a level
it knows. In a per-window mode each window is scaled by numbers read from its own
inputs only (what a forecast knows at that time), and its targets in the same frame,
so a series that drifts looks the same to the network at every level:

* ``window``: shift by the window's mean, scale by its spread (RevIN, PatchTST);
* ``change``: shift by the window's last observed value and scale by the size of its
  steps (root mean square of one-row changes): the network predicts the change from
  the last value, so an output of zero is the persistence forecast;
* ``season``: the targets are seasonal differences, each step less the value one season
  before it (``y[t+h] - y[t+h-s]``, the last whole season repeated for steps past one
  season), scaled by the window's robust spread of seasonal differences (the median
  absolute one, as a normal spread): an output of zero is the seasonal-naive forecast.
  The lagged values are read inside the input window, so the window must hold more
  than one season (``length > s``: the last season gives the shifts, the rows before
  it the spread). The inputs are framed as in ``window`` (their own mean and spread):
  the seasonal shape stays visible to the network at a size it handles well.

A window's scale never goes below a floor fitted on the training rows (a tenth of the
size of their one-row changes), so a flat window cannot blow its targets up. A frame
``(shift, scale)`` maps the target's normalised values back: ``v * scale + shift``;
in ``season`` mode ``shift`` is the window's last season (a tuple), and step ``k``
(from 0) of a forecast is shifted by its item ``k % s`` (``frame_shift``).
"""

from __future__ import annotations

import math

WINDOW_NORMALISERS = ("window", "change", "season")
NORMAL_MAD = 0.6744897501960817  # the median absolute value of a standard normal


def spread_floor(values: list[float]) -> float:
    """The smallest scale a window of this column may have (see the module note)."""
    steps = [b - a for a, b in zip(values, values[1:])]
    rms = math.sqrt(math.fsum(d * d for d in steps) / len(steps)) if steps else 0.0
    return 0.1 * rms or 1.0


def column_frame(values: list[float], how: str, floor: float) -> tuple[float, float]:
    """(shift, scale) of one column's values in a window's input rows (``season``
    frames only the target: see ``season_frame``)."""
    n = len(values)
    if how == "change":
        steps = [b - a for a, b in zip(values, values[1:])]
        spread = math.sqrt(math.fsum(d * d for d in steps) / len(steps)) if steps else 0.0
        return values[-1], max(spread, floor)
    mean = math.fsum(values) / n
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    return mean, max(spread, floor)


def season_frame(values: list[float], season: int, floor: float) -> tuple[tuple, float]:
    """(the last season of ``values``, the robust spread of their seasonal differences)."""
    diffs = sorted(abs(b - a) for a, b in zip(values, values[season:]))
    mid = len(diffs) // 2
    median = diffs[mid] if len(diffs) % 2 else (diffs[mid - 1] + diffs[mid]) / 2
    return tuple(values[-season:]), max(median / NORMAL_MAD, floor)


def frame_shift(frame: tuple, step: int) -> float:
    """The shift of forecast step ``step`` (from 0) in ``frame`` (see the module note)."""
    shift = frame[0]
    return shift[step % len(shift)] if isinstance(shift, tuple) else shift


def framed_window(columns: dict, features, target: str, start: int, length: int,
                  horizon: int, how: str, stats: dict,
                  season: int | None = None) -> tuple[list, list, tuple]:  # fmt: skip
    """(inputs [length, features], targets [<= horizon], the target's frame) of the
    window whose first input row is ``start``; ``stats[column][1]`` is its floor.
    Targets past the end of the columns are left out (a forecast has none)."""
    end = start + length
    inputs = "window" if how == "season" else how
    frames = {
        k: column_frame(columns[k][start:end], inputs, stats[k][1])
        for k in dict.fromkeys([*features, target])
    }
    frame = frames[target]
    if how == "season":
        frame = season_frame(columns[target][start:end], season, stats[target][1])
    x = [[(columns[k][t] - frames[k][0]) / frames[k][1] for k in features]
         for t in range(start, end)]  # fmt: skip
    stop = min(end + horizon, len(columns[target]))
    y = [(columns[target][t] - frame_shift(frame, t - end)) / frame[1] for t in range(end, stop)]
    return x, y, frame
