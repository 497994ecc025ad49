"""Numbers a record may hold: finite floats in their ranges, integers that fit in 63 bits.

Each refusal is one diagnostic at the value's line:col, whichever section holds it: a
catalog field (its Config's bounds), a pipeline scalar, or the data/precision options.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scellis.catalog.sml_registry import catalog_registry
from scellis.cli.main import main
from scellis.sml import parse, validate

REG = catalog_registry()
TEXT = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()


def _problems(old: str, new: str) -> list[str]:
    assert old in TEXT
    doc = parse(TEXT.replace(old, new, 1), "r.sml")
    return [str(d) for d in validate(doc, REG)]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        ("lr: 0.01", "lr: .nan", "r.sml:24:53: lr must be a finite number, got nan"),
        ("lr: 0.01", "lr: .inf", "r.sml:24:53: lr must be a finite number, got inf"),
        ("lr: 0.01", "lr: -.inf", "r.sml:24:53: lr must be a finite number, got -inf"),
        ("lr: 0.01", "lr: 1e400", "r.sml:24:53: lr must be a finite number, got inf"),
        ("lr: 0.01", "lr: " + "9" * 400, "r.sml:24:53: lr must fit in 63 bits"),
        ("epochs: 60", "epochs: 0", "r.sml:26:9: epochs must be a positive integer, got 0"),
        ("epochs: 60", "epochs: " + "9" * 30, "r.sml:26:9: epochs must fit in 63 bits"),
        ("seed: 0", "seed: 9223372036854775808", "r.sml:29:7: seed must fit in 63 bits"),
        ("seed: 0", "seed: -1", "r.sml:29:7: seed must be a non-negative integer"),
        ("val_fraction: 0.2", "val_fraction: 1.5", "r.sml:38:17: val_fraction must be < 1"),
        ("val_fraction: 0.2", "val_fraction: 0", "r.sml:38:17: val_fraction must be > 0"),
        ("val_fraction: 0.2", "val_fraction: .nan", "r.sml:38:17: val_fraction must be a fin"),
        ("window: 20 ", "window: 99999999999999999999 ", "r.sml:35:11: window must fit in 63"),
        ("hidden_size: 32", "hidden_size: " + "1" * 25, "r.sml:13:18: hidden_size must fit"),
        (
            "epochs: 60",
            "epochs: 60\ngrad_clip: {max_norm: .inf}",
            "r.sml:27:23: max_norm must be a fin",
        ),
        (
            "epochs: 60",
            "epochs: 60\nprecision: {policy: mixed_f16, backoff_factor: 1.0}",
            "backoff_factor must be < 1",
        ),
        (
            "epochs: 60",
            "epochs: 60\nprecision: {policy: mixed_f16, init_scale: -.inf}",
            "init_scale must be a finite number",
        ),
    ],
)
def test_out_of_range_numbers_are_located(old, new, want):
    got = _problems(old, new)
    assert len(got) == 1 and (got[0].startswith(want) or want in got[0]), got


def test_the_largest_seed_is_accepted():
    assert _problems("seed: 0", f"seed: {2**63 - 1}") == []


def test_the_cli_refuses_with_exit_2(tmp_path, capsys):
    p = tmp_path / "r.sml"
    p.write_text(TEXT.replace("lr: 0.01", "lr: .nan"))
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr()
    assert "lr must be a finite number" in err.out + err.err
    assert "Traceback" not in err.out + err.err
