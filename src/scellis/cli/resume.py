"""``scellis resume RUN`` (cli layer): continue a run from its latest usable checkpoint.

The run session (``run.session.resume_run``) takes the record from the store, writes
the run's kept data files back out and checks their hash, and drives the run with the
options it was started with (``RunOptions``; a flag given here replaces the stored
value). On the device, adapter and tier it ran on, a ``debug``-tier run continues
bitwise; anywhere else it continues, and says that bitwise continuation is not
promised. A checkpoint whose objects are missing or corrupt is skipped (named) for
the one before it. ``--step N`` resumes from the checkpoint at step N; one older than
the run's last starts a new run branching off there (its parent ``RUN@N``), so the
later history of the run stays.
"""

from __future__ import annotations

import click

from ..base.errors import ScellisError
from ..run.prepare import RecordProblems
from ..run.recording import adapter_of
from ..run.session import RunSession, StoreSeams, resume_run
from .common import pick_device
from .run_options import options_given, run_options
from .runner import Output, drive


def resume(ref, store=".scellis", to_step=None, device=None, json_=False, print_every=20,
           fault=None, writer=None, tier=None, options: dict | None = None,
           step: int | None = None) -> int:  # fmt: skip
    """Continue run ``ref``; ``options`` are the run options given on the command line
    (the rest stay as stored); ``to_step`` is ``--max-steps``' older name."""
    overrides = dict(options or {})
    if to_step is not None:
        overrides["max_steps"] = to_step
    name, why = pick_device(device) if device else (None, "")
    try:
        s = resume_run(store, ref, overrides=overrides, device=name, why=why, tier=tier,
                       step=step, seams=StoreSeams(fault, writer))  # fmt: skip
    except RecordProblems as e:
        raise ScellisError(e.listing()) from None
    out = Output(json_, print_every, s.total_steps)
    _say_where(s, out)
    return drive(s, out)


def _say_where(s: RunSession, out: Output) -> None:
    c, m, dev = s.restored.checkpoint, s.restored.manifest, s.prep.device
    for line in s.restored.skipped:
        out.info(f"skipped {line}")
    if s.restored.parent:
        out.info(
            f"{s.restored.parent} is older than the run's last checkpoint: a new run "
            f"{s.rid} branches off there (the later history stays)",
            run=s.rid, parent=s.restored.parent,
        )  # fmt: skip
    out.info(
        f"scellis resume {s.rid}: from step {c['step']} (epoch {c['epoch']}, batch "
        f"{c['batch']}) on {dev.name}" + (f" ({s.prep.why})" if s.prep.why else ""),
        run=s.rid, step=c["step"], manifest=c["manifest"],
    )  # fmt: skip
    here = (dev.name, adapter_of(dev), s.prep.tier)
    if (m.get("device"), m.get("adapter"), m["tier"]) != here:
        out.info(
            f"note: the checkpoint was written on {m.get('device')} ({m.get('adapter')}, "
            f"{m['tier']} tier) and this resume runs on {dev.name} ({here[1]}, {here[2]} "
            "tier): it continues, but bitwise continuation is not promised",
            bitwise=False,
        )
    elif s.prep.tier != "debug":
        out.info(
            f"note: the {s.prep.tier} tier continues within its tolerance; only debug "
            "promises a bitwise continuation",
            bitwise=False,
        )


@click.command("resume", help="Continue a run from its latest checkpoint.")
@click.argument("run", metavar="RUN")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--to-step", type=click.IntRange(min=1), default=None,
              help="stop at this step (the same as --max-steps)")  # fmt: skip
@click.option("--step", type=click.IntRange(min=0), default=None,
              help="from the checkpoint at this step (an older one than the last: a new "
              "branch run)")  # fmt: skip
@click.option("--device", default=None, help="auto | reference | webgpu (default: the run's)")
@click.option("--tier", default=None, help="debug | prod | fast (default: the run's)")
@run_options("resume")
@click.option("--print-every", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "json_", is_flag=True, help="one JSON object per event")
def command(run, store, to_step, step, device, tier, print_every, json_, **params):
    return resume(run, store, to_step, device, json_, print_every, tier=tier,
                  options=options_given(params, "resume"), step=step)  # fmt: skip
