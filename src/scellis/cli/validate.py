"""``scellis validate FILE...`` (cli layer): check SML records against the catalog.

Prints ``FILE: ok`` for a valid record (exit 0), otherwise one ``file:line:col:
message`` line per problem (exit 2). Unreadable files and bad text are problems
too, never a traceback. ``--extensions PATH`` loads user entries first; a record's
own ``extensions:`` section is loaded (relative to its folder) before it is checked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import click

from ..base.errors import Diagnostic, ScellisError
from ..base.files import read_file
from ..catalog.extensions import validate_record
from ..sml import parse
from ..sml.loader import MAX_BYTES
from .common import extensions_option, load_cli_extensions


def check_file(path: str) -> list[Diagnostic]:
    """Every problem of one file, located; [] when it is a valid record."""
    try:
        raw = read_file(path, head=MAX_BYTES * 4 + 1)
    except ScellisError as e:
        return [Diagnostic(str(e).removeprefix(f"{path}: "), path, 1, 1)]
    try:
        return validate_record(parse(raw, path), Path(path).parent, trusted=True)
    except Diagnostic as d:
        return [d]
    except ScellisError as e:
        return [Diagnostic(str(e), path, 1, 1)]


def run(args) -> int:
    load_cli_extensions(args.extensions)
    bad = False
    for path in args.files:
        problems = check_file(path)
        bad = bad or bool(problems)
        if args.json:
            rows = [
                {"file": d.file, "line": d.line, "col": d.col, "message": d.message, "fix": d.fix}
                for d in problems
            ]
            print(json.dumps({"file": path, "ok": not problems, "problems": rows}))
        elif problems:
            for d in problems:
                print(d, file=sys.stderr)
        else:
            print(f"{path}: ok")
    return 2 if bad else 0


@click.command("validate", help="Check SML model files; file:line:col per problem.")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "json_", is_flag=True, help="one JSON object per file")
@extensions_option
def command(files, json_, extensions):
    return run(SimpleNamespace(files=list(files), json=json_, extensions=list(extensions)))
