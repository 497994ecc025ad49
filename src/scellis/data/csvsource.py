"""The CSV connector (data layer): columns -> filled, split, normalised, windowed series.

Steps, in order: read the selected columns (``table.read_table``); apply the missing
policy (``error`` refuses, ``ffill`` repeats the last value, ``mean`` fills with the
training part's mean, ``drop`` removes the row); split chronologically (the first
``1 - val_fraction`` of the rows train, the rest validate); fit the normalisation
(``zscore`` | ``minmax`` | ``none``) per column on the training rows only; cut
windows of ``length`` inputs and ``horizon`` targets every ``stride`` rows inside
each part, so no window straddles the split. The per-window modes (``window`` |
``change`` | ``season``, ``frames.py``) scale each window by its own inputs instead;
the training rows then give only each column's smallest scale, and every window keeps
its frame. ``season`` (the rows of one cycle) is given with ``season`` mode only.

The dataset version, ``digest``, is the sha256 of a canonical UTF-8 JSON text (keys
sorted, separators ``,`` and ``:``, floats as Python's shortest repr):
``{"format": "scellis.csv/1", "config": <the config without path>,
"columns": {name: [parsed values, null for missing]}, "times": [ISO texts] | null}``;
a config without a season leaves the key out (so versions from before it stay).
Values are taken after parsing and before filling, so the same content under any
file name, spacing or number spelling ("1.0", "1") has the same version.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass

from ..base.errors import ScellisError
from .bounds import check_window_values, window_count
from .frames import WINDOW_NORMALISERS, frame_shift, framed_window, spread_floor
from .shuffle import shuffled_order
from .table import Table, read_table

MISSING_POLICIES = ("error", "ffill", "mean", "drop")
NORMALISERS = ("zscore", "minmax", "none")


@dataclass(frozen=True)
class CSVConfig:
    """Where the series is and how it becomes training windows."""

    path: str
    features: tuple[str, ...]
    target: str
    datetime: str | None = None
    datetime_format: str = "iso"
    missing: str = "error"
    length: int = 16
    horizon: int = 1
    stride: int = 1
    val_fraction: float = 0.2
    normalise: str = "zscore"
    delimiter: str = ","
    season: int | None = None

    def check(self) -> None:
        if isinstance(self.features, str) or not self.features:
            raise ScellisError("features must be a non-empty list of column names")
        if self.missing not in MISSING_POLICIES:
            raise ScellisError(f"missing must be one of {', '.join(MISSING_POLICIES)}")
        if self.normalise not in NORMALISERS + WINDOW_NORMALISERS:
            modes = ", ".join(NORMALISERS + WINDOW_NORMALISERS)
            raise ScellisError(f"normalise must be one of {modes}")
        if min(self.length, self.horizon, self.stride) < 1:
            raise ScellisError("length, horizon and stride must be >= 1")
        if not 0.0 < self.val_fraction < 1.0:
            raise ScellisError(f"val_fraction must lie in (0, 1), got {self.val_fraction}")
        if (self.normalise == "season") != (self.season is not None):
            raise ScellisError(
                "normalise: season and season (the rows of one cycle, e.g. 12 "
                "for monthly rows) go together: give both or neither"
            )
        if self.season is not None and not (
                isinstance(self.season, int) and 1 < self.season < self.length):  # fmt: skip
            raise ScellisError(
                f"season must be a whole number of rows from 2 to window - 1 (the window "
                f"holds the season before each forecast and more), got {self.season!r} "
                f"with window {self.length}"
            )


@dataclass
class SeriesDataset:
    """Windows as nested lists: x [N, length, features], y [N, horizon], plus provenance."""

    config: CSVConfig
    x_train: list
    y_train: list
    x_val: list
    y_val: list
    train_starts: list[int]  # row index of each window's first input
    val_starts: list[int]
    cut: int  # rows [0, cut) train, [cut, rows) validate
    rows: int
    # column -> (shift, scale): z = (v - shift) / scale; a per-window mode's floor scale
    stats: dict[str, tuple[float, float]]
    digest: str
    times: list | None = None
    target_z: list | None = None  # the whole target column, normalised (baselines read it)
    target_values: list | None = None  # the same in the data's own units (missing filled)
    features_z: list | None = None  # every row's normalised features (predictions read it)
    # a per-window mode's target frame (shift, scale) of each window; None: global stats
    train_frames: list | None = None
    val_frames: list | None = None
    columns: dict | None = None  # every column in the data's units, missing filled

    def denormalise(self, v: float, column: str | None = None, frame=None, step: int = 0) -> float:
        """``v`` in the data's units: by ``frame`` (a window's own; ``step`` is the
        forecast step ``v`` is, from 0) or the global stats."""
        frame = frame or self.stats[column or self.config.target]
        return v * frame[1] + frame_shift(frame, step)

    @property
    def framed(self) -> bool:
        """Whether each window has its own frame (a per-window normalisation)."""
        return self.train_frames is not None

    def train_order(self, seed: int, epoch: int) -> list[int]:
        """The training windows' order of ``epoch`` from the Philox ``shuffle`` stream."""
        return shuffled_order(len(self.x_train), seed, epoch)


def canonical_text(cfg: CSVConfig, table: Table) -> str:
    conf = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "path"}
    conf["features"] = list(cfg.features)
    if cfg.season is None:
        del conf["season"]
    doc = {
        "format": "scellis.csv/1",
        "config": conf,
        "columns": table.columns,
        "times": None if table.times is None else [t.isoformat() for t in table.times],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


def dataset_digest(cfg: CSVConfig, table: Table) -> str:
    return hashlib.sha256(canonical_text(cfg, table).encode("utf-8")).hexdigest()


def split_point(rows: int, val_fraction: float) -> int:
    return int(round(rows * (1.0 - val_fraction)))


def fill_missing(table: Table, policy: str, val_fraction: float) -> Table:
    """A copy of ``table`` with no None left, by ``policy``; ``error`` names the first gap."""
    cols = {k: list(v) for k, v in table.columns.items()}
    gaps = [(r, k) for k, v in cols.items() for r, x in enumerate(v) if x is None]
    if not gaps:
        return table
    row, name = min(gaps)
    if policy == "error":
        raise ScellisError(
            f"{table.where(row)}: {name!r} is missing (set missing: ffill, mean or drop to fill)"
        )
    if policy == "drop":
        keep = [r for r in range(len(table)) if all(v[r] is not None for v in cols.values())]
        times = None if table.times is None else [table.times[r] for r in keep]
        kept = {k: [v[r] for r in keep] for k, v in cols.items()}
        return Table(table.path, kept, [table.lines[r] for r in keep], times)
    cut = split_point(len(table), val_fraction)
    for k, v in cols.items():
        if policy == "ffill":
            if v[0] is None:
                raise ScellisError(f"{table.where(0)}: {k!r} is missing and has no value before")
            for r in range(1, len(v)):
                v[r] = v[r - 1] if v[r] is None else v[r]
        else:  # mean of the training rows only
            seen = [x for x in v[:cut] if x is not None]
            if not seen:
                raise ScellisError(f"{table.path}: {k!r} has no training value to average")
            m = math.fsum(seen) / len(seen)
            cols[k] = [m if x is None else x for x in v]
    return Table(table.path, cols, list(table.lines), table.times)


def fit_stats(values: list[float], how: str) -> tuple[float, float]:
    """(shift, scale) from ``values`` (the training rows); a flat column gets scale 1."""
    if how == "none":
        return 0.0, 1.0
    if how in WINDOW_NORMALISERS:  # windows scale themselves; the floor of their scale
        return 0.0, spread_floor(values)
    if how == "minmax":
        lo, hi = min(values), max(values)
        return lo, (hi - lo) or 1.0
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return mean, std or 1.0


def windows(n: int, length: int, horizon: int, stride: int) -> list[int]:
    """Start indices of the windows of ``length + horizon`` rows inside ``n`` rows."""
    return list(range(0, n - length - horizon + 1, stride))


def load_csv(cfg: CSVConfig, stats: dict | None = None) -> SeriesDataset:
    """Read, fill, split, normalise and window the CSV series ``cfg`` describes. With
    ``stats`` (a trained model's normalisation, fitted on its own training split) the
    whole file is windowed for validation with those statistics: a model is judged on
    another file exactly as it saw its own."""
    cfg.check()
    names = list(dict.fromkeys([*cfg.features, cfg.target]))
    raw = read_table(cfg.path, names, cfg.datetime, cfg.datetime_format, cfg.delimiter)
    digest = dataset_digest(cfg, raw)
    table = fill_missing(raw, cfg.missing, cfg.val_fraction)
    rows = len(table)
    cut = split_point(rows, cfg.val_fraction) if stats is None else 0
    need = cfg.length + cfg.horizon
    if stats is not None and rows < need:
        raise ScellisError(
            f"{cfg.path}: {rows} rows are too few for one window of {cfg.length}+{cfg.horizon}"
        )
    if stats is None and (cut < need or rows - cut < need):
        raise ScellisError(
            f"{cfg.path}: {rows} rows split {cut}/{rows - cut} are too few for windows of "
            f"{cfg.length}+{cfg.horizon} in both parts"
        )
    if stats is None:
        stats = {k: fit_stats(table.columns[k][:cut], cfg.normalise) for k in names}
    z = {k: [(v - stats[k][0]) / stats[k][1] for v in table.columns[k]] for k in names}
    feats = [list(row) for row in zip(*(z[k] for k in cfg.features))]

    framed = cfg.normalise in WINDOW_NORMALISERS
    count = window_count(cut, need, cfg.stride) + window_count(rows - cut, need, cfg.stride)
    each = cfg.length * len(cfg.features) + cfg.horizon
    check_window_values(count, each, rows * len(names), cfg.path)

    def part(lo: int, hi: int):
        starts = [lo + s for s in windows(hi - lo, cfg.length, cfg.horizon, cfg.stride)]
        if framed:
            cut_ = [framed_window(table.columns, cfg.features, cfg.target, s, cfg.length,
                                  cfg.horizon, cfg.normalise, stats, cfg.season)
                    for s in starts]  # fmt: skip
            return [c[0] for c in cut_], [c[1] for c in cut_], starts, [c[2] for c in cut_]
        xs = [[list(feats[t]) for t in range(s, s + cfg.length)] for s in starts]
        ys = [z[cfg.target][s + cfg.length : s + need] for s in starts]
        return xs, ys, starts, None

    xt, yt, st, ft = part(0, cut)
    xv, yv, sv, fv = part(cut, rows)
    return SeriesDataset(cfg, xt, yt, xv, yv, st, sv, cut, rows, stats, digest, table.times,
                         z[cfg.target], list(table.columns[cfg.target]), feats,
                         ft, fv, table.columns)  # fmt: skip
