"""The run options as click options (cli layer), made from ``run.options.RunOptions``.

``run_options("train")`` decorates a command with one click option per field shown on
that surface, with the field's doc, default and bounds; ``options_of(params)`` reads
them back into a ``RunOptions``. On ``resume`` every default is "as the run was
started", so a flag that is not given keeps the stored value.
"""

from __future__ import annotations

import click

from ..run.options import RESUME, RunOptions, kind_of


def flag_of(f) -> str:
    return f.metadata["flag"] or "--" + f.name.replace("_", "-")


def _click_type(f):
    kind, low, above = kind_of(f), f.metadata["low"], f.metadata["above"]
    if kind == "int":
        return click.IntRange(min=low) if low is not None else int
    if kind == "float":
        if above is not None:
            return click.FloatRange(min=above, min_open=True)
        return click.FloatRange(min=low) if low is not None else float
    return str


def _option(f, surface: str):
    kind, doc = kind_of(f), f.metadata["doc"]
    keep = surface == RESUME  # a resume keeps what the run was started with
    default = None if keep else getattr(RunOptions.defaults(surface), f.name)
    flag = flag_of(f)
    if kind == "bool":
        off = "--no-" + flag[2:]
        return click.option(f"{flag}/{off}", f.name, default=default,
                            show_default=not keep, help=doc)  # fmt: skip
    if kind == "list":
        metavar = "PATH=VALUE" if f.name == "set" else "PATH"
        return click.option(flag, f.name, multiple=True, metavar=metavar, help=doc)
    return click.option(flag, f.name, type=_click_type(f), default=default,
                        show_default=default is not None, help=doc)  # fmt: skip


def run_options(surface: str):
    """A decorator adding the options of ``surface`` (train or resume) to a command."""

    def wrap(fn):
        for f in reversed(RunOptions.on(surface)):
            fn = _option(f, surface)(fn)
        return fn

    return wrap


def options_given(params: dict, surface: str) -> dict:
    """The run options among a command's parsed ``params`` that the user gave."""
    out = {}
    for f in RunOptions.on(surface):
        value = params.get(f.name)
        if kind_of(f) == "list":
            value = list(value or ())
            if not value:
                continue
        if value is not None:
            out[f.name] = value
    return out


def options_of(params: dict, surface: str = "train") -> RunOptions:
    """A ``RunOptions`` from a command's parsed click ``params``."""
    return RunOptions.from_mapping(options_given(params, surface), surface=surface,
                                   where=f"scellis {surface}")  # fmt: skip
