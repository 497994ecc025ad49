"""``scellis train FILE|MODEL_ID`` (cli layer): run a record's pipeline, recorded in a store.

The run is a ``run.session.RunSession``: the record (with ``--set`` and the
shorthands applied: the run records that effective record) is validated (exit 2 with
``file:line:col`` messages), planned (a red plan refuses before anything is
allocated), registered in the store (default ``./.scellis``) with a copy of the data
file it names, and trained with metrics and checkpoints recorded. The options come
from ``run.options.RunOptions``; this module adds the terminal's own (device, store,
budget, output). Ctrl-C stops at the next step boundary after saving a checkpoint
(exit 130) and prints the command that resumes the run.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..base.errors import ScellisError
from ..run.options import RunOptions
from ..run.prepare import RecordProblems
from ..run.session import RunSession, StoreSeams, start_run
from .common import pick_device
from .run_options import options_of, run_options
from .runner import Output, drive, resolve_record


def start(ref, *, device="auto", store=".scellis", options: RunOptions | dict | None = None,
          json_=False, print_every=20, budget=None, tier=None, argv=("scellis", "train"),
          fault=None, writer=None) -> int:  # fmt: skip
    """Train ``ref`` (a file or a stored model id); ``fault`` and ``writer`` are the
    store's fault-injection seams (tests). Returns the exit status."""
    root = Path(store)
    if not isinstance(options, RunOptions):
        options = RunOptions.from_mapping(options or {}, where="scellis train")
    raw, label, base_dir, trusted = resolve_record(ref, root)
    name, why = pick_device(device)
    try:
        s = start_run(raw, label, options=options, device=name, why=why, base_dir=base_dir,
                      trusted=trusted,
                      store=root, budget=budget, tier=tier, argv=list(argv),
                      seams=StoreSeams(fault, writer))  # fmt: skip
    except RecordProblems as e:
        raise ScellisError(e.listing()) from None
    out = Output(json_, print_every, s.total_steps)
    out.info(_opening(s, label), run=s.rid, dataset=s.prep.digest, device=s.prep.device.name,
             store=str(root))  # fmt: skip
    return drive(s, out)


def _opening(s: RunSession, label: str) -> str:
    p = s.prep
    edits = f" with {', '.join(s.edits)}" if s.edits else ""
    epochs = f"{p.epochs} epoch" + ("" if p.epochs == 1 else "s")
    return (
        f"scellis train {label}{edits}: {p.record.get('model')} on {p.device.name}"
        + (f" ({p.why})" if p.why else "")
        + f", {epochs}, {p.tier} tier, dataset {(p.digest or '-')[:12]}, "
        f"run {s.rid} in {s.root}"
    )


@click.command(
    "train", help="Train the pipeline an SML record (a file or a stored model id) carries."
)
@click.argument("file", metavar="FILE|MODEL_ID")
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--budget", default=None, help="memory budget for the plan, e.g. 4GiB")
@click.option("--tier", default=None, help="debug | prod | fast (default: the record's)")
@run_options("train")
@click.option(
    "--print-every", type=click.IntRange(min=1), default=20, show_default=True,
    help="steps between printed lines when not on a terminal",
)  # fmt: skip
@click.option("--json", "json_", is_flag=True, help="one JSON object per event")
def command(file, device, store, budget, tier, print_every, json_, **params):
    return start(file, device=device, store=store, options=options_of(params, "train"),
                 json_=json_, print_every=print_every, budget=budget, tier=tier,
                 argv=_argv())  # fmt: skip


def _argv() -> list[str]:
    """The command as typed, rebuilt from click's parsed parameters."""
    ctx = click.get_current_context()
    out = [*ctx.command_path.split(), str(ctx.params["file"])]
    for k, v in ctx.params.items():
        typed = ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE
        if k == "file" or not typed or v is None or v == ():
            continue
        flag = "--" + k.rstrip("_").replace("_", "-")
        if isinstance(v, bool):
            out.append(flag if v else "--no-" + flag[2:])
        elif isinstance(v, tuple):
            for item in v:
                out += [flag, str(item)]
        else:
            out += [flag, str(v)]
    return out
