"""The block-graph rung (ir layer): the record resolved against the catalog, with print + verify.

Each block: its catalog entry, its fields with the catalog's defaults filled in, what
it reads, its output shape (from the catalog's shape rules, symbolic dims kept) and
its parameters (from the module tree built on the null device: no data). ``verify``
checks the wiring and, on a traced forward, that every block's real output shape is
the inferred one with the batch set.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..base.rng import Generator
from ..catalog.registry import lookup
from ..catalog.sml_shapes import infer_shape
from ..devices.null import NullBackend
from ..model.build import RecordModel, config_of


@dataclass
class Block:
    name: str
    block_id: str
    reads: list[str]
    fields: dict
    shape: list | None
    params: list[tuple[str, tuple, str]]  # (name, shape, dtype)
    quiet: tuple[str, ...] = ()  # fields left out of the print (quiet, at their default)


@dataclass
class BlockGraph:
    model: str
    inputs: dict[str, tuple[list, str]]
    blocks: list[Block]
    outputs: list[str]
    pipeline: dict

    @property
    def n_params(self) -> int:
        total = 0
        for b in self.blocks:
            for _, shape, _ in b.params:
                n = 1
                for d in shape:
                    n *= d
                total += n
        return total

    def text(self) -> str:
        lines = [f"# block graph: {self.model}, {self.n_params} parameters", "inputs:"]
        for name, (shape, dt) in self.inputs.items():
            lines.append(f"  {name}: {dt}{_shape(shape)}")
        lines.append("blocks:")
        for b in self.blocks:
            n = sum(_numel(s) for _, s, _ in b.params)
            lines.append(
                f"  {b.name}: {b.block_id} <- {', '.join(b.reads)} -> {_shape(b.shape)}"
                f"  ({n} parameters)"
            )
            shown = sorted((k, v) for k, v in b.fields.items() if k not in b.quiet)
            fields = ", ".join(f"{k}={_v(v)}" for k, v in shown)
            lines.append(f"      fields: {fields}")
            for pname, shape, dt in b.params:
                lines.append(f"      param {pname}: {dt}{_shape(list(shape))}")
        lines.append("outputs: " + ", ".join(self.outputs))
        lines.append("pipeline:")
        for k, v in self.pipeline.items():
            lines.append(f"  {k}: {_v(v)}")
        return "\n".join(lines) + "\n"

    def verify(self, block_shapes: dict | None = None, batch: int | None = None) -> list[str]:
        problems = []
        known = set(self.inputs)
        for b in self.blocks:
            for r in b.reads:
                if r not in known:
                    problems.append(f"block {b.name!r} reads {r!r}, which is not defined before it")
            known.add(b.name)
        for o in self.outputs:
            if o not in known:
                problems.append(f"output {o!r} is no block or input")
        for b in self.blocks if block_shapes is not None else ():
            got = block_shapes.get(b.name)
            if b.shape is None or got is None:
                continue
            want = tuple(batch if isinstance(d, str) else d for d in b.shape)
            if tuple(got) != want:
                problems.append(f"block {b.name!r}: inferred {want}, the forward made {got}")
        return problems


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _shape(shape) -> str:
    return "[?]" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def _v(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_v(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_v(x) for x in v) + "]"
    return str(v)


def block_graph(record: dict) -> BlockGraph:
    model = RecordModel(record, device=NullBackend(), gen=Generator(0, "init"))
    inputs = {
        n: (list(spec.get("shape", [])), spec.get("dtype", "f32"))
        for n, spec in (record.get("inputs") or {}).items()
    }
    shapes = {n: s for n, (s, _) in inputs.items()}
    blocks = []
    for name in model.order:
        spec = record["blocks"][name]
        entry = lookup(spec.get("block_id", ""), "block")
        fields = dataclasses.asdict(config_of(entry, spec, f"block {name!r}"))
        reads = model.wiring[name]
        ins = [shapes.get(r) for r in reads]
        shape = infer_shape(entry.id, fields, ins) if all(s is not None for s in ins) else None
        shapes[name] = shape
        params = [(p, t.shape, str(t.dtype)) for p, t in getattr(model, name).named_parameters()]
        quiet = tuple(
            f.name
            for f in dataclasses.fields(entry.config)
            if f.metadata.get("quiet") and fields[f.name] == f.default
        )
        blocks.append(Block(name, entry.id, reads, fields, shape, params, quiet))
    pipeline = {
        k: record[k]
        for k in (
            "optimizer", "scheduler", "loss", "epochs", "batch_size", "grad_clip",
            "precision", "determinism_tier", "seed",
        )
        if k in record
    }  # fmt: skip
    return BlockGraph(record.get("model", "?"), inputs, blocks, list(model.output_names), pipeline)
