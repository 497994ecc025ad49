"""``scellis compile FILE --emit RUNG`` (cli layer): print one rung of the IR ladder.

Rungs: blocks (the record resolved, shapes inferred), ops (the traced primitives; for
``--mode training`` the whole step: forward, loss, backward tape, optimizer), kernels
(the WGSL kernel each op lowers to; the inference forward is fused unless
``--no-fuse``), schedule (ordered dispatches, buffers in slots by liveness) and wgsl
(every pipeline's source). Every rung is verified; a problem exits 2.
"""

from __future__ import annotations

import json
import sys

import click

from ..devices.adapters import list_adapters
from ..ir.ladder import RUNGS, emit
from ..ir.limits import PROFILES, resolve
from ..ir.record import load_record
from .common import extensions_option, load_cli_extensions


@click.command(
    "compile",
    help="Print one rung of the compiler's IR ladder for an SML record. Training "
    "backward stays eager (unfused); fusion applies to the inference forward. "
    "Exit 0, or 2 when the record is invalid or a rung fails verification.",
)
@click.argument("file", metavar="FILE")
@click.option("--emit", "rung", type=click.Choice(RUNGS), default="ops", show_default=True)
@click.option(
    "--mode", type=click.Choice(["inference", "training"]), default="inference", show_default=True
)
@click.option("--batch", type=int, default=None, help="batch size (default: the record's)")
@click.option(
    "--target",
    default="webgpu-spec",
    show_default=True,
    help=f"limits to lower for: {' | '.join(PROFILES)} | adapter (this machine's WebGPU)",
)
@click.option("--no-fuse", is_flag=True, help="one kernel per op (what eager execution runs)")
@extensions_option
@click.option("--json", "json_", is_flag=True, help="one JSON object: text, problems, counts")
def command(file, rung, mode, batch, target, no_fuse, json_, extensions):
    load_cli_extensions(extensions)
    record = load_record(file)
    tgt = resolve("webgpu" if target == "adapter" else target, adapters=list_adapters)
    out = emit(record, rung, tgt, mode=mode, batch=batch, fused=not no_fuse)
    if json_:
        print(
            json.dumps(
                {
                    "rung": rung,
                    "mode": mode,
                    "limits_source": tgt.limits_source,
                    "dispatches": out.dispatches,
                    "dispatches_unfused": out.dispatches_unfused,
                    "problems": out.problems,
                    "text": out.text,
                }
            )
        )
    else:
        sys.stdout.write(out.text)
        for p in out.problems:
            print(f"scellis compile: {p}", file=sys.stderr)
    return 2 if out.problems else 0
