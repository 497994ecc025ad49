"""Time series (data layer): a CSV column, chronological split, windows, normalisation.

Normalisation statistics come from the training split only, so validation never
leaks into training. Everything is plain Python lists; tensors are made by the loop.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from dataclasses import dataclass

from ..base.errors import ScellisError
from .text import read_text


def read_csv_column(path, column: str) -> list[float]:
    """The float values of ``column``; a missing or non-numeric cell is refused by row."""
    text = read_text(path)  # a regular UTF-8 file, or refused with the position
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise ScellisError(f"{path}: bad CSV: {e}") from None
    if not rows or column not in rows[0]:
        have = ", ".join(map(repr, rows[0])) if rows else "no columns"
        raise ScellisError(f"{path}: no column {column!r} (found: {have:.300})")
    out = []
    for i, row in enumerate(rows, start=2):
        try:
            v = float(row[column])
        except (TypeError, ValueError):
            raise ScellisError(f"{path}:{i}: {column!r} is {row[column]!r}, not a number") from None
        if not math.isfinite(v):
            raise ScellisError(f"{path}:{i}: {column!r} is not finite")
        out.append(v)
    return out


@dataclass
class Windows:
    """Inputs [N, length, 1] and targets [N, horizon] as nested lists, plus the split."""

    x_train: list
    y_train: list
    x_val: list
    y_val: list
    mean: float
    std: float
    digest: str  # sha256 of the series' canonical text: the dataset version

    def denormalise(self, v: float) -> float:
        return v * self.std + self.mean


def window_series(
    values: list[float], length: int, horizon: int = 1, val_fraction=0.2, stride: int = 1
) -> Windows:
    """Chronological split, then sliding windows inside each part (none straddles it)."""
    if length < 1 or horizon < 1 or stride < 1:
        raise ScellisError("window length, horizon and stride must be >= 1")
    cut = int(round(len(values) * (1 - val_fraction)))
    train, val = values[:cut], values[cut:]
    if len(train) < length + horizon or len(val) < length + horizon:
        raise ScellisError(f"{len(values)} values are too few for windows of {length}+{horizon}")
    mean = sum(train) / len(train)
    std = math.sqrt(sum((v - mean) ** 2 for v in train) / len(train)) or 1.0

    def cut_windows(part):
        z = [(v - mean) / std for v in part]
        xs, ys = [], []
        for s in range(0, len(z) - length - horizon + 1, stride):
            xs.append([[v] for v in z[s : s + length]])
            ys.append(z[s + length : s + length + horizon])
        return xs, ys

    canon = "\n".join(repr(float(v)) for v in values).encode()
    return Windows(
        *cut_windows(train), *cut_windows(val), mean, std, hashlib.sha256(canon).hexdigest()
    )
