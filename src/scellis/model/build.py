"""Record -> module tree (model layer): instantiate an SML record's blocks from the catalog.

Each block becomes a child named as in the record (so parameter paths are
``<block>.<param>``, e.g. ``lstm.weight_ih_l0``); ``forward`` evaluates the blocks in
dependency order, feeding each what its ``in:`` names (a record input or a block).
"""

from __future__ import annotations

import dataclasses

from ..base.errors import ScellisError
from ..base.rng import Generator
from ..catalog.checkpoint import checkpoint
from ..catalog.module import Module
from ..catalog.registry import lookup

# record keys beside a block's fields; activation_checkpointing is the block's (else the
# record's) choice: a block whose Config has that field (a transformer stack)
# rematerialises layer by layer, any other block is rematerialised as a whole
REMAT = "activation_checkpointing"
RESERVED = ("block_id", "in", REMAT)


def config_of(entry, fields: dict, where: str):
    """The entry's Config from record fields (lists become tuples for tuple fields)."""
    known = {f.name: f for f in dataclasses.fields(entry.config)}
    values = {}
    for k, v in fields.items():
        if k in RESERVED:
            continue
        if k not in known:
            raise ScellisError(f"{where}: {entry.id} has no field {k!r}")
        values[k] = tuple(v) if isinstance(v, list) else v
    try:
        return entry.config(**values)
    except TypeError as e:
        raise ScellisError(f"{where}: {e}") from None


def entry_object(section: dict, kind: str, *args):
    """The catalog object a record section names (``block_id`` + fields) of ``kind``
    (optimizer, loss, scheduler), built with ``args`` (the model, the optimizer)."""
    entry = lookup(section.get("block_id", ""), kind)
    cfg = config_of(entry, section, kind)
    return entry.impl(*args, config=cfg) if args else entry.impl(config=cfg)


def _inputs_of(spec) -> list[str]:
    src = spec.get("in")
    return [src] if isinstance(src, str) else list(src or [])


def _order(blocks: dict, inputs: set) -> list[str]:
    """The blocks in waves: first those that read only the record's inputs, then those
    that read only those, and so on, each wave in the record's order (the order blocks
    are built in, so their initial weights' draws depend on it). Computed in one pass
    over the wiring (Kahn's algorithm), since a record of thousands of blocks must not
    take the square of that."""
    readers: dict[str, list[str]] = {}
    waiting = {}
    for b in blocks:
        needs = {s for s in _inputs_of(blocks[b]) if s not in inputs}
        waiting[b] = len(needs)
        for s in needs:
            readers.setdefault(s, []).append(b)
    wave = {b: 0 for b, n in waiting.items() if n == 0}
    todo = list(wave)
    while todo:
        b = todo.pop()
        for r in readers.get(b, ()):
            wave[r] = max(wave.get(r, 0), wave[b] + 1)
            waiting[r] -= 1
            if waiting[r] == 0:
                todo.append(r)
    pending = [b for b in blocks if waiting[b]]
    if pending:
        raise ScellisError(
            f"blocks {', '.join(pending)} read each other in a cycle or "
            "read something that does not exist"
        )
    index = {b: i for i, b in enumerate(blocks)}
    return sorted(blocks, key=lambda b: (wave[b], index[b]))


class RecordModel(Module):
    """The module tree of one record; call it with the record's inputs in order."""

    incremental = True  # a container: its blocks are checked on their own

    def __init__(self, record: dict, *, device=None, dtype=None, gen: Generator | None = None):
        super().__init__()
        blocks = record.get("blocks") or {}
        if not isinstance(blocks, dict) or not blocks:
            raise ScellisError("the record has no blocks")
        object.__setattr__(self, "input_names", list((record.get("inputs") or {}).keys()))
        object.__setattr__(self, "order", _order(blocks, set(self.input_names)))
        object.__setattr__(self, "wiring", {b: _inputs_of(blocks[b]) for b in self.order})
        outs = record.get("outputs") or [self.order[-1]]
        object.__setattr__(self, "output_names", [outs] if isinstance(outs, str) else list(outs))
        gen = gen or Generator(int(record.get("seed", 0) or 0), "init")
        object.__setattr__(self, "remat", set())
        for name in self.order:
            spec = blocks[name]
            entry = lookup(spec.get("block_id", ""), "block")
            cfg = config_of(entry, spec, f"block {name!r}")
            if bool(spec.get(REMAT, record.get(REMAT, False))):
                if REMAT in {f.name for f in dataclasses.fields(cfg)}:
                    cfg = dataclasses.replace(cfg, **{REMAT: True})
                else:
                    self.remat.add(name)
            setattr(self, name, entry.impl(cfg, device=device, dtype=dtype, gen=gen))
        for name in self.order:  # a language-model head may reuse an embedding's weight
            mod = getattr(self, name)
            tie = getattr(mod.config, "tie_to", "")
            if tie:
                mod.tie(getattr(self, tie))

    def forward(self, *args):
        if len(args) != len(self.input_names):
            raise ScellisError(
                f"the model takes {len(self.input_names)} inputs "
                f"({', '.join(self.input_names)}), got {len(args)}"
            )
        values = dict(zip(self.input_names, args))
        for name in self.order:
            args = [values[s] for s in self.wiring[name]]
            mod = getattr(self, name)
            values[name] = (
                checkpoint(mod, *args) if name in self.remat and self.training else mod(*args)
            )
        outs = [values[o] for o in self.output_names]
        return outs[0] if len(outs) == 1 else tuple(outs)
