"""``scellis`` entry point (cli layer): a click group of sub-commands.

Each sub-command lives in its own module and exposes ``command`` (a click command or
group); it is registered here with one line of ``COMMANDS``, and its module is imported
only when it runs. Bad input is one clear line and exit 2, never a traceback (a file
system refusal the command did not word itself included); Ctrl-C is exit 130. A message
is cut to a screenful of short lines, so a refusal that quotes its input can never flood
the terminal. What slips past every check (a bug of ours) still ends in one line, exit
2, naming the error and where to report it; the traceback is shown only when
``SCELLIS_TRACEBACK=1`` asks for it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import signal
import sys
import traceback

import click

from ..base.errors import ScellisError
from ..base.interrupt import raise_interrupt
from ..version import __version__

# Each command's module loads only when that command runs (most pull in the engine);
# ``scellis --help`` lists the commands from here instead. name -> (module in this
# package, the first sentence of the command's help: what the listing shortens).
COMMANDS = {
    "demo": ("demo", "Train the LSTM forecaster on the bundled sunspot series."),
    "init": ("init", "Write a commented starter SML record (default: model.sml)."),
    "devices": ("devices", "List WebGPU adapters, their limits and features."),
    "catalog": ("catalog", "List the catalog: blocks, optimizers, schedulers, losses."),
    "validate": ("validate", "Check SML model files; file:line:col per problem."),
    "train": ("train", "Train the pipeline an SML record (a file or a stored model id) "
              "carries."),
    "plan": ("plan", "Plan the memory of a record's training step before anything runs."),
    "compile": ("compile", "Print one rung of the compiler's IR ladder for an SML record."),
    "resume": ("resume", "Continue a run from its latest checkpoint."),
    "runs": ("runs", "List the store's runs, or those the filters select (or show one)."),
    "share": ("share", "Print a link that reproduces a run (open it in the tab, or with "
              "scellis reproduce)."),
    "reproduce": ("reproduce", "Reproduce a run from its link (scellis share RUN) and check "
                  "its losses bit for bit."),
    "compare": ("compare", "Two runs side by side: what differs, metrics, loss curves."),
    "evaluate": ("evaluate", "A trained run's metrics on its validation data or a file."),
    "predict": ("predict", "Predictions over a series and a forecast past its end."),
    "profile": ("profile", "Where one training step's time goes, op by op."),
    "generate": ("generate", "Continue a text with a trained language model (a run)."),
    "models": ("models", "Versioned model records in the store."),
    "import": ("import_", "Import ONNX / safetensors / PyTorch files, TF.js model.json or "
               "Hugging Face folders as a record + weights."),
    "export": ("export", "Export a record's or a run's model: PyTorch module, safetensors, "
               ".pt, ONNX, HF."),
    "site": ("site", "Build the static site of the browser app."),
    "serve": ("serve", "Build the site if needed and serve it on localhost."),
}  # fmt: skip


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, listed from ``COMMANDS``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        return importlib.import_module(f".{COMMANDS[name][0]}", __package__).command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, each line shortened by click's own rule, from stand-ins
        that carry only the help sentence, so that no command module loads."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, click.Command(n, help=COMMANDS[n][1]).get_short_help_str(limit))
                for n in names]  # fmt: skip
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    name="scellis",
    cls=LazyGroup,
    help="Train neural networks on your GPU.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="scellis", message="%(prog)s %(version)s")
def cli() -> None:
    pass


LINE_CHARS = 300  # a message line longer than this is cut: inputs are never echoed whole
LINES = 24  # a listing of problems longer than this says how many more there are


# control characters other than the line breaks a listing is made of: a message may
# quote text from a file or a record, and an escape sequence in it would reach the
# user's terminal (retitle it, clear it, write the clipboard) rather than be shown
_CONTROL = re.compile(r"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def _visible(text: str) -> str:
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def short(message: str) -> str:
    """``message`` cut to at most ``LINES`` lines of at most ``LINE_CHARS`` characters,
    each long line in its middle, so both what and where stay readable; control
    characters in it are shown as escapes."""
    lines = _visible(str(message).replace("\r\n", "\n")).splitlines() or [""]
    cut = [x if len(x) <= LINE_CHARS else f"{x[: LINE_CHARS - 80]} ... {x[-70:]}"
           for x in lines[:LINES]]  # fmt: skip
    if len(lines) > LINES:
        cut.append(f"... and {len(lines) - LINES} more lines")
    return "\n".join(cut)


def _unexpected(e: BaseException) -> int:
    """The last line of defence: an error no check worded, as one line."""
    if os.environ.get("SCELLIS_TRACEBACK") == "1":
        traceback.print_exc()
    if isinstance(e, RecursionError):
        what = "the input nests too deeply to process"
    elif isinstance(e, MemoryError):
        what = "the input needs more memory than this machine has"
    else:
        first = (str(e).splitlines() or [""])[0]
        what = (
            f"unexpected {type(e).__name__}: {first[:160]} (a bug in scellis: please report "
            "it, see SECURITY.md; SCELLIS_TRACEBACK=1 shows where)"
        )
    _refuse(what)
    return 2


MAX_ARGS = 25_000  # far past any real command line; 10,000 --map rules fit in a file


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    n = len(sys.argv[1:] if argv is None else argv)
    if n > MAX_ARGS:  # click takes each argument off the front of a list: quadratic time
        _refuse(f"{n} arguments; at most {MAX_ARGS} (put long lists in a file)")
        return 2
    with terminate_as_interrupt():
        try:
            return _main(argv)
        except Exception as e:  # noqa: BLE001 - see _unexpected
            return _unexpected(e)


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


def _refuse(text: str) -> None:
    """The refusal on stderr, cut short (see ``short``)."""
    print("scellis: error: " + short(text), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
