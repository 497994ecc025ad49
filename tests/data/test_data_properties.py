"""Properties of the CSV connector: no window straddles the split; stats come from train only."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from scellis.data import CSVConfig, load_csv

_DIR = Path(tempfile.mkdtemp(prefix="scellis-data-prop-"))

# never zero, so no file is all zeros
values = st.one_of(st.floats(1e-3, 1e6), st.floats(-1e6, -1e-3))


def _file(name: str, cols: dict[str, list[float]]) -> str:
    p = _DIR / name
    names = list(cols)
    rows = zip(*cols.values())
    p.write_text(",".join(names) + "\n" + "".join(",".join(map(repr, r)) + "\n" for r in rows))
    return str(p)


@st.composite
def series(draw):
    length, horizon = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    n = draw(st.integers(2 * (length + horizon) + 2, 60))
    frac = draw(st.floats(0.2, 0.6))
    cut = int(round(n * (1 - frac)))
    if cut < length + horizon or n - cut < length + horizon:
        frac = 0.5
    a = draw(st.lists(values, min_size=n, max_size=n))
    b = draw(st.lists(values, min_size=n, max_size=n))
    return dict(
        length=length,
        horizon=horizon,
        stride=draw(st.integers(1, 4)),
        val_fraction=frac,
        normalise=draw(st.sampled_from(["zscore", "minmax"])),
    ), {"a": a, "b": b}


@settings(max_examples=60, deadline=None)
@given(series(), st.lists(values, min_size=60, max_size=60))
def test_windows_stay_in_their_part_and_stats_ignore_validation(case, other):
    opts, cols = case
    need = opts["length"] + opts["horizon"]
    ds = load_csv(CSVConfig(_file("p.csv", cols), ("a", "b"), "b", **opts))
    for s in ds.train_starts:
        assert 0 <= s and s + need <= ds.cut
    for s in ds.val_starts:
        assert ds.cut <= s and s + need <= ds.rows
    assert len(ds.x_train) == len(ds.train_starts) > 0 and len(ds.x_val) == len(ds.val_starts) > 0
    # stats are those of the training rows alone
    for k, v in cols.items():
        train = v[: ds.cut]
        if opts["normalise"] == "minmax":
            assert ds.stats[k] == (min(train), (max(train) - min(train)) or 1.0)
        else:
            assert math.isclose(ds.stats[k][0], math.fsum(train) / len(train), rel_tol=1e-9)
    # changing every validation value changes neither the stats nor the training windows
    changed = {k: v[: ds.cut] + other[: len(v) - ds.cut] for k, v in cols.items()}
    ds2 = load_csv(CSVConfig(_file("q.csv", changed), ("a", "b"), "b", **opts))
    assert ds2.stats == ds.stats
    assert ds2.x_train == ds.x_train and ds2.y_train == ds.y_train
