"""A run started as `scellis train` starts it, with the device's primitives watched: the
per-step logged losses and the (op, first input's dtype) pairs the device ran."""

from __future__ import annotations

import asyncio
from pathlib import Path


def spied_run(raw: bytes, name: str, opts, device: str, base_dir: Path, **start):
    """(logged losses, {(op, dtype name)}) of the run of record ``raw``; ``start`` goes to
    ``start_run`` (a tier, say). Every step must log: a missing one fails here."""
    from scellis.devices import get_device
    from scellis.run.session import start_run

    dev, seen = get_device(device), set()
    inner = dev.run

    def spy(op, inputs, outputs, attrs):
        seen.add((op, inputs[0].dtype.name if inputs else ""))
        return inner(op, inputs, outputs, attrs)

    async def drive():
        session = start_run(raw, name, options=opts, device=device, base_dir=base_dir, **start)
        return [e.to_dict() async for e in session.events()]

    dev.run = spy
    try:
        events = asyncio.run(drive())
    finally:
        del dev.run
    losses = [e["loss"] for e in events if e["kind"] == "log"]
    assert len(losses) == opts.max_steps, [e for e in events if e["kind"] in ("error", "end")]
    return losses, seen
