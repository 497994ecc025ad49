"""``scellis`` entry point (cli layer): a click group of sub-commands.

Each sub-command lives in its own module and exposes ``command`` (a click command or
group); it is registered here with one line. Bad input is one clear line and exit 2,
never a traceback (a file system refusal the command did not word itself included);
Ctrl-C is exit 130.
"""

from __future__ import annotations

import contextlib
import signal
import sys

import click

from .. import ScellisError, __version__
from ..base.interrupt import raise_interrupt
from . import (
    catalog,
    compare,
    compile,
    demo,
    devices,
    evaluate,
    export,
    generate,
    import_,
    init,
    models,
    plan,
    predict,
    profile,
    resume,
    runs,
    serve,
    site,
    train,
    validate,
)


@click.group(
    name="scellis",
    help="Train neural networks on your GPU.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="scellis", message="%(prog)s %(version)s")
def cli() -> None:
    pass


for _mod in (
    demo,
    init,
    devices,
    catalog,
    validate,
    train,
    plan,
    compile,
    resume,
    runs,
    compare,
    evaluate,
    predict,
    profile,
    generate,
    models,
    import_,
    export,
    site,
    serve,
):
    cli.add_command(_mod.command)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    with terminate_as_interrupt():
        return _main(argv)


@contextlib.contextmanager
def terminate_as_interrupt():
    """SIGTERM (a kill, a closing session) ends any command as Ctrl-C does: the work
    stops where it is, files being written are removed (their writers clean up on
    KeyboardInterrupt) and the exit is 130. ``train`` installs its own handler inside,
    which stops at a step boundary instead."""
    try:
        previous = signal.signal(signal.SIGTERM, raise_interrupt)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> int:
    try:
        rv = cli.main(args=argv, prog_name="scellis", standalone_mode=False)
    except click.exceptions.Exit as e:  # --help, --version
        return int(e.exit_code or 0)
    except click.UsageError as e:
        # one line, as every other refusal: what is wrong, then where the help is
        where = e.ctx.command_path if e.ctx else "scellis"
        _refuse(f"{e.format_message()} (see {where} --help)")
        return 2
    except click.Abort:
        print("scellis: interrupted", file=sys.stderr)
        return 130
    except click.ClickException as e:
        _refuse(e.format_message())
        return 2
    except ScellisError as e:
        _refuse(str(e))
        return 2
    except OSError as e:  # the file system refused (a missing file, a read-only folder)
        where = f"{e.filename}: " if e.filename else ""
        _refuse(f"{where}{e.strerror or e}")
        return 2
    except ValueError as e:
        if "null byte" not in str(e):
            raise
        _refuse("a path or name holds a NUL byte, which no file name can")
        return 2
    except KeyboardInterrupt:
        print("scellis: interrupted", file=sys.stderr)
        return 130
    return int(rv or 0) if isinstance(rv, int) else 0


LINE = 300  # characters of one message line: a name a user typed may be 100,000 long


def _refuse(text: str) -> None:
    """The refusal on stderr, each line (a listing of record problems has several) cut
    to LINE characters in its middle, so both what and where stay readable."""
    lines = [ln if len(ln) <= LINE else f"{ln[:LINE - 80]} ... {ln[-70:]}" for ln in
             text.splitlines() or [""]]  # fmt: skip
    print("scellis: error: " + "\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
