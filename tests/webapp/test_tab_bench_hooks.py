"""The tab's benchmark commands live outside the shipped package: the scellis wheel has
none, a site build carries them as their own wheel, and importing them registers them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from scellis.cli.main import main
from scellis.cli.site_build import write_package_wheel, write_scellis_wheel

ROOT = Path(__file__).resolve().parents[2]
TAB_BENCH = ROOT / "bench" / "tab" / "tabbench"


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def test_the_shipped_wheel_has_no_bench_code_and_the_hooks_wheel_has_it(tmp_path):
    shipped = _members(write_scellis_wheel(tmp_path))
    assert "scellis/webapp/api.py" in shipped
    assert not [m for m in shipped if "bench" in m.rsplit("/", 1)[-1]]
    hooks = _members(write_package_wheel(TAB_BENCH, tmp_path))
    assert {"tabbench/__init__.py", "tabbench/api.py", "tabbench/models.py"} <= set(hooks)
    assert not [m for m in hooks if m.startswith("scellis/")]


def test_importing_the_hooks_makes_them_read_only_worker_commands():
    # a fresh interpreter: this process's registry stays the shipped one
    script = (
        "import json, scellis.webapp.api as api\n"
        "from scellis.webapp import commands\n"
        "before = set(api.commands())\n"
        "import tabbench\n"
        "print(json.dumps([sorted(set(api.commands()) - before), commands.read_only()]))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{TAB_BENCH.parent}"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    added, read_only = json.loads(out.stdout.strip().splitlines()[-1])
    assert added == ["bench_device_memory", "bench_keep_limit", "bench_kept_uploads",
                     "bench_load_paced", "bench_quantize", "bench_split_train",
                     "bench_train_step"]  # fmt: skip
    assert set(added) <= set(read_only)


def test_a_folder_that_is_no_package_is_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "site"
    argv = ["site", "build", "--out", str(out), "--extra-package", str(tmp_path)]
    assert main(argv) == 2
    assert "is not a Python package folder (no __init__.py)" in capsys.readouterr().err
    assert not out.exists()
