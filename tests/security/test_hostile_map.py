"""Hostile ``--map`` rules: too many of them, sides of too many names, names that
repeat; each one line and exit 2 at once. A long valid map still maps quickly."""

from __future__ import annotations

import time

from folders import hf_folder
from hostile import refuse

from scellis.cli.main import main
from scellis.codecs import tensor_map
from scellis.codecs.weights import resolve


def test_a_hundred_thousand_rules_are_refused_at_once(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m")
    rules = tmp_path / "rules.txt"
    rules.write_text("".join(f"a{i}.=b{i}.\n" for i in range(100_000)))
    argv = ["import", folder, "--store", tmp_path / "s", "--map", rules]
    refuse(capsys, argv, "over 10000 rules", seconds=3)
    many = [x for i in range(100_000) for x in ("--map", f"a{i}=b{i}")]
    refuse(
        capsys,
        ["import", folder, "--store", tmp_path / "s", *many],
        "arguments; at most",
        seconds=5,
    )


def test_huge_sides_and_repeats_are_one_message(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m")
    base = ["import", folder, "--store", tmp_path / "s", "--map"]
    wide = "w=" + ",".join(f"p{i}" for i in range(100_000))
    refuse(capsys, [*base, wide], "over 1024 names", seconds=2)
    same = "w=" + ",".join(["p"] * 1000)
    refuse(capsys, [*base, same], "named twice", seconds=2)
    refuse(capsys, [*base, "x" * 1_000_000], "OLD=NEW", seconds=2)
    line = refuse(capsys, [*base, "w=a:" + "9" * 5000 + ",b:1"], "positive integer", seconds=2)
    assert "9" * 200 not in line


def test_prefix_matching_is_linear_in_the_map():
    rules = tensor_map.parse([f"m{i}.=n{i}." for i in range(9_999)])
    names = [f"m{i}.layer.{j}.weight" for i in range(0, 9_999, 10) for j in range(10)]
    t0 = time.perf_counter()
    hits = resolve(names, [f"n{i}.layer.0.weight" for i in range(0, 9_999, 10)], rules.renames)
    assert time.perf_counter() - t0 < 1.0
    assert hits["n10.layer.0.weight"] == "m10.layer.0.weight"
    # the longest prefix wins, as before
    assert resolve(["a.b.c"], ["x.c", "y.b.c"], {"a.": "y.", "a.b.": "x."}) == {"x.c": "a.b.c"}


def test_ten_thousand_rules_given_one_by_one_are_counted(tmp_path, capsys):
    folder = hf_folder(tmp_path / "m")
    many = [x for i in range(10_001) for x in ("--map", f"a{i}=b{i}")]
    base = ["import", str(folder), "--store", str(tmp_path / "s")]
    t0 = time.perf_counter()
    assert main([*base, *many[:20_000]]) == 0  # 10,000 renames of absent names: a no-op
    assert time.perf_counter() - t0 < 5
    refuse(capsys, [*base, *many], "over 10000 rules", seconds=5)
