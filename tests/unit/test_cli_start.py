"""The command line starts light: what ``--help``, ``validate`` and ``runs`` load.

Timing is left to ``bench/cli_start.py``; here the guard is the set of modules a fresh
interpreter holds after a command, which does not vary with the machine's load.
"""

import json
import os
import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import pytest

import scellis.cli
from scellis.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "examples" / "lstm_forecaster.sml"

# what no listing or check needs: the GPU, NumPy, the compiler, the training loop, runs
ENGINE = ["numpy", "wgpu", "scellis.devices.webgpu", "scellis.devices.reference",
          "scellis.ir", "scellis.train", "scellis.run.session", "scellis.nn"]  # fmt: skip
# --help also goes without the catalog and everything under it
HELP_ONLY = ["scellis.catalog", "scellis.sml", "scellis.runtime", "scellis.ops",
             "scellis.autograd", "scellis.codecs", "scellis.store", "asyncio"]  # fmt: skip
# validate needs the SML checker and the catalog (blocks, optimizers...), not the codecs
VALIDATE_NEEDS = ["scellis.sml", "scellis.catalog"]


def loaded_after(*argv: str, cwd: Path = ROOT) -> tuple[int, set[str]]:
    """The exit status of ``scellis ARGV`` in a fresh interpreter, and its module names."""
    code = (
        "import contextlib, io, json, sys\n"
        "from scellis.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main({list(argv)!r})\n"
        "print(json.dumps([rc, sorted(sys.modules)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_RUNTIME_DIR": tempfile.mkdtemp()}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rc, modules = json.loads(r.stdout.splitlines()[-1])
    return rc, set(modules)


def absent(modules: set[str], names: list[str]) -> list[str]:
    """Those of ``names`` loaded, as packages (a name or anything under it)."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


def test_help_loads_no_command_and_no_engine():
    rc, modules = loaded_after("--help")
    assert rc == 0
    assert absent(modules, ENGINE + HELP_ONLY) == []
    commands = {f"scellis.cli.{m}" for m, _ in cli_main.COMMANDS.values()}
    assert modules & commands == set()


def test_validate_loads_the_checker_and_catalog_only():
    rc, modules = loaded_after("validate", str(RECORD))
    assert rc == 0
    assert absent(modules, ENGINE + ["scellis.codecs"]) == []
    assert absent(modules, VALIDATE_NEEDS) == VALIDATE_NEEDS  # the check itself ran


def test_runs_listing_loads_the_store_not_the_engine(tmp_path):
    rc, modules = loaded_after("runs", "--store", str(tmp_path))
    assert rc == 2  # no store there: the refusal, after the command loaded
    assert "scellis.cli.runs" in modules
    assert absent(modules, ENGINE + ["scellis.catalog", "scellis.codecs", "scellis.runtime"]) == []


def test_models_listing_loads_the_store_not_the_engine(tmp_path):
    rc, modules = loaded_after("models", "list", "--store", str(tmp_path))
    assert rc == 0 and "scellis.cli.models" in modules
    assert absent(modules, ENGINE + ["scellis.catalog", "scellis.codecs", "scellis.runtime"]) == []


def test_import_scellis_loads_only_dtypes_errors_and_version():
    code = "import json, sys, scellis\nprint(json.dumps([*sys.modules]))"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    loaded = {m for m in json.loads(r.stdout) if m.startswith("scellis")}
    assert loaded <= {"scellis", "scellis.base", "scellis.base.dtypes", "scellis.base.errors",
                      "scellis.version"}, loaded  # fmt: skip


def eager_group() -> click.Group:
    """The group as click builds it with every command loaded: the listing to match."""
    group = click.Group(name="scellis", help=cli_main.cli.help)
    group.params = cli_main.cli.params
    group.context_settings = cli_main.cli.context_settings
    for name in cli_main.COMMANDS:
        group.add_command(cli_main.cli.get_command(None, name), name)
    return group


@pytest.mark.parametrize("width", [80, 56])
def test_help_lists_what_the_commands_themselves_say(width):
    from click.testing import CliRunner

    lazy = CliRunner().invoke(cli_main.cli, ["--help"], terminal_width=width)
    eager = CliRunner().invoke(eager_group(), ["--help"], terminal_width=width)
    assert lazy.exit_code == eager.exit_code == 0
    assert lazy.output == eager.output
    assert "  validate   Check SML model files" in lazy.output  # a real listing, not empty


def test_every_command_module_is_listed_under_its_own_name():
    table = {module: name for name, (module, _) in cli_main.COMMANDS.items()}
    for info in pkgutil.iter_modules(scellis.cli.__path__):
        module = __import__(f"scellis.cli.{info.name}", fromlist=["command"])
        command = getattr(module, "command", None)
        if isinstance(command, click.Command):
            assert table.get(info.name) == command.name, info.name


def test_unknown_command_is_still_one_line_and_exit_2():
    r = subprocess.run([sys.executable, "-m", "scellis.cli.main", "no-such"], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "scellis: error: No such command 'no-such'. (see scellis --help)"
    ), r.stderr


def test_every_public_name_of_scellis_resolves():
    import scellis

    missing = [n for n in scellis.__all__ if not hasattr(scellis, n)]
    assert missing == []
    assert scellis.functional.cat is scellis.cat and scellis.exp.__name__ == "exp"
    with pytest.raises(AttributeError):
        scellis.no_such_name  # noqa: B018
