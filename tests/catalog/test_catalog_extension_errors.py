"""Failures in user catalog extensions: one ScellisError naming the file and line."""

from __future__ import annotations

import sys

import pytest

from scellis.base.errors import ScellisError
from scellis.catalog import lookup
from scellis.catalog.extensions import load_extensions

GOOD = """\
from dataclasses import dataclass
from scellis.catalog import field, register
from scellis.catalog.losses import MSELoss


@dataclass(frozen=True)
class HalfMSEConfig:
    \"\"\"Half the mean squared error.\"\"\"

    weight: float = field(0.5, doc="factor", min=0.0)


register("user/loss/{name}", "loss", HalfMSEConfig, MSELoss)
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_file_by_path_registers_and_leaves_sys_path_alone(tmp_path):
    path_before, mods_before = list(sys.path), set(sys.modules)
    p = _write(tmp_path, "half.py", GOOD.format(name="half_mse_a"))
    (mod,) = load_extensions([str(p)])
    assert sys.path == path_before
    assert lookup("user/loss/half_mse_a", "loss").config.__module__ == mod.__name__
    assert set(sys.modules) - mods_before == {mod.__name__}


def test_a_dotted_module(tmp_path, monkeypatch):
    pkg = tmp_path / "my_ext_pkg"
    pkg.mkdir()
    _write(pkg, "__init__.py", "")
    _write(pkg, "losses.py", GOOD.format(name="half_mse_b"))
    monkeypatch.syspath_prepend(str(tmp_path))
    load_extensions("my_ext_pkg.losses")
    assert not lookup("user/loss/half_mse_b").builtin


def test_an_exception_names_the_file_and_line(tmp_path):
    p = _write(tmp_path, "bad.py", "x = 1\n\ny = 1 / 0\n")
    with pytest.raises(ScellisError, match=rf"^{p}:3: in catalog extension: ZeroDivisionError"):
        load_extensions([p])


def test_a_syntax_error_names_the_file_and_line(tmp_path):
    p = _write(tmp_path, "syn.py", "a = 1\nb = (\n")
    with pytest.raises(ScellisError, match=rf"^{p}:2: in catalog extension"):
        load_extensions([tmp_path])


def test_a_refused_registration_names_the_calling_line(tmp_path):
    p = _write(tmp_path, "dup.py", GOOD.format(name="dup").replace("user/loss/dup", "nn/linear"))
    with pytest.raises(ScellisError, match=rf"^{p}:13: .*'nn/linear' is registered twice"):
        load_extensions([p])
    bad_kind = GOOD.format(name="k").replace('"loss", Half', '"lossy", Half')
    p2 = _write(tmp_path, "kind.py", bad_kind)
    with pytest.raises(
        ScellisError, match=rf"^{p2}:13: in catalog extension: unknown catalog kind 'lossy'"
    ):
        load_extensions([p2])


def test_a_failed_file_is_not_half_loaded(tmp_path):
    p = _write(tmp_path, "late.py", GOOD.format(name="late") + "raise RuntimeError('boom')\n")
    with pytest.raises(ScellisError, match="RuntimeError: boom"):
        load_extensions([p])
    assert not [m for m in sys.modules if m.endswith("_late")]
    with pytest.raises(ScellisError, match="unknown loss id 'user/loss/late'"):
        lookup("user/loss/late", "loss")
    p.write_text(GOOD.format(name="late"))  # fixed: now it loads
    load_extensions([p])
    assert lookup("user/loss/late", "loss").kind == "loss"


def test_missing_paths_and_modules(tmp_path):
    with pytest.raises(ScellisError, match="no such catalog extension"):
        load_extensions([str(tmp_path / "nope.py")])
    with pytest.raises(ScellisError, match="no catalog extension module named 'no_such_mod_x'"):
        load_extensions(["no_such_mod_x"])
    with pytest.raises(ScellisError, match="no catalog extension module named"):
        load_extensions(["scellis.no_such_child"])
