"""The CSV connector against hand-computed windows and a csv-module reference."""

from __future__ import annotations

import csv
import math
import random
from datetime import date, timedelta

import pytest

from scellis.base.errors import ScellisError
from scellis.data import CSVConfig, load_csv, shuffled_order


def _write(tmp_path, text, name="s.csv"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


SMALL = "date,a,b\n" + "".join(f"2020-01-{d:02d},{d},{10 * d}\n" for d in range(1, 11))


def test_hand_computed_windows_and_stats(tmp_path):
    p = _write(tmp_path, SMALL)
    cfg = CSVConfig(p, ("a", "b"), "b", datetime="date", length=2, horizon=1, val_fraction=0.3)
    ds = load_csv(cfg)
    assert (ds.cut, ds.rows) == (7, 10)
    # z-score of a over its training rows 1..7: mean 4, population std 2
    assert ds.stats["a"] == (4.0, 2.0) and ds.stats["b"] == (40.0, 20.0)
    assert ds.train_starts == [0, 1, 2, 3, 4] and ds.val_starts == [7]
    assert ds.x_train[0] == [[-1.5, -1.5], [-1.0, -1.0]]
    assert ds.y_train[0] == [-0.5]
    assert ds.x_val == [[[2.0, 2.0], [2.5, 2.5]]] and ds.y_val == [[3.0]]
    assert ds.denormalise(3.0) == 100.0
    assert ds.times[0].isoformat() == "2020-01-01T00:00:00"


def test_minmax_horizon_and_stride(tmp_path):
    p = _write(tmp_path, "a\n" + "".join(f"{i}\n" for i in range(1, 21)))
    cfg = CSVConfig(p, ("a",), "a", length=3, horizon=2, stride=2, val_fraction=0.5)
    ds = load_csv(CSVConfig(**{**cfg.__dict__, "normalise": "minmax"}))
    assert ds.cut == 10 and ds.stats["a"] == (1.0, 9.0)
    assert ds.train_starts == [0, 2, 4] and ds.val_starts == [10, 12, 14]
    assert ds.y_train[1] == [pytest.approx(5 / 9), pytest.approx(6 / 9)]
    assert ds.x_val[0] == [[pytest.approx(k / 9)] for k in (10, 11, 12)]
    with pytest.raises(ScellisError, match="split 18/2 are too few for windows of 3\\+2"):
        load_csv(CSVConfig(p, ("a",), "a", length=3, horizon=2, val_fraction=0.1))


def _reference(path, feats, target, length, horizon, stride, val_fraction):
    """The same pipeline with the csv module and no missing values: z-score on train."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = {k: [float(r[k]) for r in rows] for k in {*feats, target}}
    cut = int(round(len(rows) * (1 - val_fraction)))
    z = {}
    for k, v in cols.items():
        m = sum(v[:cut]) / cut
        s = math.sqrt(sum((x - m) ** 2 for x in v[:cut]) / cut) or 1.0
        z[k] = [(x - m) / s for x in v]
    out = []
    for lo, hi in ((0, cut), (cut, len(rows))):
        s = lo
        xs, ys = [], []
        while s + length + horizon <= hi:
            xs.append([[z[k][t] for k in feats] for t in range(s, s + length)])
            ys.append(z[target][s + length : s + length + horizon])
            s += stride
        out += [xs, ys]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_files_match_the_csv_module_reference(tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(30, 80)
    text = "t,x,y,z\n" + "".join(
        f"{1900 + i},{rng.uniform(-5, 5)!r},{rng.gauss(3, 2)!r},{rng.randint(-9, 9)}\n"
        for i in range(n)
    )
    p = _write(tmp_path, text)
    length, horizon, stride = rng.randint(1, 5), rng.randint(1, 3), rng.randint(1, 3)
    cfg = CSVConfig(
        p,
        ("x", "z"),
        "y",
        "t",
        "year",
        length=length,
        horizon=horizon,
        stride=stride,
        val_fraction=0.25,
    )
    ds = load_csv(cfg)
    want = _reference(p, ["x", "z"], "y", length, horizon, stride, 0.25)
    for got, exp in zip((ds.x_train, ds.y_train, ds.x_val, ds.y_val), want):
        assert len(got) == len(exp) > 0
        assert np_close(got, exp)


def np_close(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(np_close(x, y) for x, y in zip(a, b))
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


MISS = "a,b\n1,5\n,6\n3,\n5,8\n7,9\n9,10\n11,11\n13,12\n15,13\n17,14\n"


def test_missing_policies(tmp_path):
    p = _write(tmp_path, MISS)
    base = dict(features=("a", "b"), target="b", length=2, val_fraction=0.4, normalise="none")
    with pytest.raises(ScellisError, match=rf"^{p}:3: 'a' is missing \(set missing"):
        load_csv(CSVConfig(p, **base))
    ff = load_csv(CSVConfig(p, **base, missing="ffill"))
    assert ff.x_train[0] == [[1.0, 5.0], [1.0, 6.0]] and ff.x_train[1][1] == [3.0, 6.0]
    mean = load_csv(CSVConfig(p, **base, missing="mean"))
    # training rows are the first 6; their known a: 1,3,5,7,9 -> 5; b: 5,6,8,9,10 -> 7.6
    assert mean.x_train[0][1] == [5.0, 6.0] and mean.x_train[1][1] == [3.0, 7.6]
    drop = load_csv(CSVConfig(p, **base, missing="drop"))
    assert drop.rows == 8 and drop.x_train[0] == [[1.0, 5.0], [5.0, 8.0]]
    f = _write(tmp_path, "a,b\n1,\n2,3\n", "f.csv")
    with pytest.raises(ScellisError, match=rf"^{f}:2: 'b' is missing and has no value before"):
        load_csv(CSVConfig(f, **base, missing="ffill"))


def test_datetimes_must_increase(tmp_path):
    p = _write(tmp_path, "when,v\n2021-01-01,1\n2021-01-03,2\n2021-01-02,3\n")
    with pytest.raises(ScellisError, match=rf"^{p}:4: 'when' 2021-01-02T00:00:00 is not after"):
        load_csv(CSVConfig(p, ("v",), "v", datetime="when", length=1))
    p = _write(tmp_path, "when,v\n2021-01-01,1\n2021-01-01,2\n", "dup.csv")
    with pytest.raises(ScellisError, match=rf"{p}:3: .* is not after .*\({p}:2\)"):
        load_csv(CSVConfig(p, ("v",), "v", datetime="when", length=1))
    p = _write(tmp_path, "when,v\n01/02/2021,1\nsoon,2\n", "fmt.csv")
    with pytest.raises(ScellisError, match=rf"^{p}:3: 'when' is 'soon', not a datetime"):
        load_csv(CSVConfig(p, ("v",), "v", datetime="when", datetime_format="%d/%m/%Y"))
    p = _write(tmp_path, "when,v\n2021,1\n,2\n", "gap.csv")
    with pytest.raises(ScellisError, match=rf"^{p}:3: 'when' is missing"):
        load_csv(CSVConfig(p, ("v",), "v", datetime="when", datetime_format="year"))


def test_bad_files_name_their_lines(tmp_path):
    p = _write(tmp_path, "a,b\n1,2\n3,x\n")
    with pytest.raises(ScellisError, match=rf"^{p}:3: 'b' is 'x', not a number"):
        load_csv(CSVConfig(p, ("a", "b"), "b"))
    with pytest.raises(ScellisError, match=rf"^{p}:1: no column 'c' \(found: 'a', 'b'\)"):
        load_csv(CSVConfig(p, ("c",), "a"))
    p = _write(tmp_path, "a,b\n1,2\n3\n", "short.csv")
    with pytest.raises(ScellisError, match=rf"^{p}:3: 1 fields; the header needs 2"):
        load_csv(CSVConfig(p, ("b",), "b"))
    p = _write(tmp_path, "a\n1\ninf\n", "inf.csv")
    with pytest.raises(ScellisError, match=rf"^{p}:3: 'a' is 'inf', not a finite number"):
        load_csv(CSVConfig(p, ("a",), "a"))
    with pytest.raises(ScellisError, match="cannot read"):
        load_csv(CSVConfig(str(tmp_path / "none.csv"), ("a",), "a"))
    bad = tmp_path / "bytes.csv"
    bad.write_bytes(b"a\n1\n2\xff\n")
    with pytest.raises(ScellisError, match=rf"^{bad}:3:2: not UTF-8"):
        load_csv(CSVConfig(str(bad), ("a",), "a"))
    with pytest.raises(ScellisError, match="missing must be one of"):
        load_csv(CSVConfig(p, ("a",), "a", missing="zero"))


def test_digest_is_the_canonical_content(tmp_path):
    rng = random.Random(7)
    vals = [rng.randint(1, 99) for _ in range(40)]
    a = _write(tmp_path, "v,w\n" + "".join(f"{v},{v % 7}\n" for v in vals), "a.csv")
    b = _write(tmp_path, "w ,v\n" + "".join(f"{v % 7}, {v}.0\n" for v in vals), "b.csv")
    cfg = dict(features=("v",), target="v", length=3)
    da, db = load_csv(CSVConfig(a, **cfg)).digest, load_csv(CSVConfig(b, **cfg)).digest
    assert da == db and len(da) == 64
    assert load_csv(CSVConfig(a, **{**cfg, "length": 4})).digest != da
    c = _write(tmp_path, "v\n" + "".join(f"{v}\n" for v in vals[:-1]) + "100\n", "c.csv")
    assert load_csv(CSVConfig(c, **cfg)).digest != da


def test_shuffle_is_the_philox_stream_and_train_reuses_it(tmp_path):
    from scellis.train import data as train_data

    assert train_data.shuffled_order is shuffled_order
    ds = load_csv(CSVConfig(_write(tmp_path, SMALL), ("a",), "a", length=2, val_fraction=0.3))
    order = ds.train_order(seed=3, epoch=1)
    assert sorted(order) == list(range(len(ds.x_train)))
    assert order == shuffled_order(len(ds.x_train), 3, 1) != ds.train_order(3, 2)


def test_spreadsheet_habits_are_named_with_the_fix(tmp_path):
    p = _write(tmp_path, 'month,revenue\n1,"1,204.50"\n2,"1,310.25"\n', "thousands.csv")
    with pytest.raises(ScellisError, match=rf"^{p}:2: 'revenue' is '1,204.50', not a number "
                       r"\(write numbers without thousands separators"):  # fmt: skip
        load_csv(CSVConfig(p, ("revenue",), "revenue"))
    p = _write(tmp_path, "Zeit; Temperatur (°C)\n0;15,5\n1;16\n", "semi.csv")
    with pytest.raises(ScellisError, match=r"found: 'Zeit; Temperatur \(°C\)'\); set data"
                       r"\.delimiter: ';'$"):  # fmt: skip
        load_csv(CSVConfig(p, ("Temperatur (°C)",), "Temperatur (°C)"))
    p = _write(tmp_path, "a\tb\n1\t2\n", "tabs.csv")
    with pytest.raises(ScellisError, match=r"set data\.delimiter: '\\t'$"):
        load_csv(CSVConfig(p, ("b",), "b"))
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("a\n1\n2\n# café\n".encode("latin-1"))
    with pytest.raises(ScellisError, match=rf"^{bad}:4:6: not UTF-8 .*save the file as UTF-8"):
        load_csv(CSVConfig(str(bad), ("a",), "a"))


def test_dates_newest_first_or_in_another_format_name_the_fix(tmp_path):
    rows = [f"{d:%d/%m/%Y},{v}" for d, v in zip(
        [date(2023, 5, 1) - timedelta(weeks=k) for k in range(6)], range(6))]  # fmt: skip
    p = _write(tmp_path, "\n".join(["when,v", *rows]) + "\n", "newest_first.csv")
    with pytest.raises(ScellisError, match=r"times must increase; the file lists the newest "
                       r"first: sort it oldest first$"):  # fmt: skip
        load_csv(CSVConfig(p, ("v",), "v", datetime="when", datetime_format="%d/%m/%Y"))
    with pytest.raises(ScellisError, match=rf"^{p}:2: 'when' is '01/05/2023', not a datetime "
                       r"\(iso\); set data\.datetime_format"):  # fmt: skip
        load_csv(CSVConfig(p, ("v",), "v", datetime="when"))
    late = _write(tmp_path, "when,v\n2021-01-01,1\n2021-01-03,2\n2021-01-02,3\n", "late.csv")
    with pytest.raises(ScellisError, match=r"times must increase$"):  # no hint mid-file
        load_csv(CSVConfig(late, ("v",), "v", datetime="when", length=1))


def test_a_byte_order_mark_as_spreadsheets_write_it_is_no_part_of_the_data(tmp_path):
    rng = random.Random(3)
    body = "day,flow\n" + "".join(f"{k},{rng.uniform(-5, 5):.3f}\n" for k in range(40))
    plain = _write(tmp_path, body, "plain.csv")
    marked = tmp_path / "marked.csv"
    marked.write_bytes(body.encode("utf-8-sig"))  # what Excel's "CSV UTF-8" saves
    want = load_csv(CSVConfig(plain, ("day", "flow"), "flow", length=3))
    got = load_csv(CSVConfig(str(marked), ("day", "flow"), "flow", length=3))
    assert got.x_train == want.x_train and got.y_val == want.y_val
    assert got.digest == want.digest
    with open(marked, encoding="utf-8-sig", newline="") as f:  # the csv module's reading
        assert got.rows == len(list(csv.DictReader(f)))
