"""A record's ``data`` section to a dataset: the bundled examples and a user CSV."""

from __future__ import annotations

import random

import pytest

from scellis.base.errors import ScellisError
from scellis.data import read_csv_column, window_series
from scellis.data.record import load_data


def test_the_forecaster_example_matches_the_series_helper():
    data = {
        "source": "bundled:sunspots_yearly.csv",
        "format": "csv",
        "column": "sunspots",
        "window": 20,
        "horizon": 1,
        "stride": 1,
        "val_fraction": 0.2,
        "normalise": "standard",
    }
    ds = load_data(data)
    values = read_csv_column(ds.config.path, "sunspots")
    w = window_series(values, 20)
    # the helper sums in order, the connector with math.fsum: equal to rounding
    assert ds.stats["sunspots"] == pytest.approx((w.mean, w.std), rel=1e-12)
    assert len(ds.x_train) == len(w.x_train) and len(ds.y_val) == len(w.y_val)
    flat = [v for win in ds.x_train for (v,) in win]
    assert flat == pytest.approx([v for win in w.x_train for (v,) in win], abs=1e-12)
    assert sum(ds.y_val, []) == pytest.approx(sum(w.y_val, []), abs=1e-12)


def test_the_char_example():
    data = {"source": "bundled:python_help_topics.txt", "format": "text", "tokenizer": "char"}
    ds = load_data({**data, "context": 32, "stride": 16, "max_chars": 6000, "val_fraction": 0.1})
    assert all(len(x) == 32 for x in ds.x_train) and len(ds.vocab) > 20
    assert ds.cut == 5400 and len(ds.digest) == 64


def test_a_user_csv_relative_to_the_record(tmp_path):
    rng = random.Random(3)
    rows = "".join(f"2024-01-{d:02d},{rng.uniform(1, 9)!r},\n" for d in range(1, 29))
    (tmp_path / "s.csv").write_text("day,v,w\n" + rows)
    data = {"source": "s.csv", "features": ["v"], "target": "v", "datetime": "day", "window": 3}
    ds = load_data(data, base_dir=tmp_path)
    assert ds.rows == 28 and ds.times[-1].day == 28
    with pytest.raises(ScellisError, match="'w' is missing"):
        load_data({**data, "features": ["v", "w"]}, base_dir=tmp_path)


def test_errors():
    with pytest.raises(ScellisError, match="no bundled file 'nope.csv'"):
        load_data({"source": "bundled:nope.csv"})
    src = "bundled:sunspots_yearly.csv"
    with pytest.raises(ScellisError, match="data.windo: not a csv data option; did you mean"):
        load_data({"source": src, "column": "sunspots", "windo": 3})
    with pytest.raises(ScellisError, match="column, or features and target"):
        load_data({"source": src})
    with pytest.raises(ScellisError, match="data.format must be csv or text"):
        load_data({"source": src, "format": "parquet"})
    with pytest.raises(ScellisError, match="'bpe' is neither char nor a tokenizer.json"):
        load_data({"source": "bundled:python_help_topics.txt", "tokenizer": "bpe"})
