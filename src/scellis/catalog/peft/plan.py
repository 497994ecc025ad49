"""A record's ``finetune:`` section applied to a built model, and its description (catalog layer).

The section (all keys optional)::

    finetune:
      swap_head: {head: {n_classes: 3}}        # block path -> fields to change
      adapters:                                # catalog entries of kind peft
        - {block_id: peft/lora, target_modules: [q, v], rank: 4, alpha: 8}
      freeze: ["*"]                            # patterns over the pre-trained parameters
      train: [ln_f.*]                          # patterns taken back out of freeze
      quantize_base: nf4                       # or int8, or {format: nf4, block_size: 64}

Steps run in that order, after the pre-trained weights are loaded. ``freeze`` and
``train`` look only at the parameters the model had before (new parameters, the
adapters' and a swapped head's, are always trained); ``freeze`` defaults to every
old parameter when there are adapters, to none otherwise. New parameters are drawn
from Philox streams of the record's seed (``head`` for swapped heads, ``peft`` for
adapters), so a fine-tuning run is as reproducible as a training run. Last,
``quantize_base`` stores every weight that ended up frozen in a dense block as int8 or
NF4 codes (QLoRA; see ``quant``): the adapters train in the run's precision on top.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ...base.errors import ScellisError
from ...base.quant import DEFAULT_BLOCK, check_format
from ...base.rng import Generator
from ..module import Module
from ..registry import entries, lookup
from .freeze import swap_head
from .quant import QUANT_PARAMS
from .quantize import quantize_base, quantized_bytes
from .select import as_patterns, select

KEYS = ("swap_head", "adapters", "freeze", "train", "quantize_base")
QUANT_KEYS = ("format", "block_size", "double_quant")


@dataclass
class FinetunePlan:
    """What ``apply_finetune`` did: adapters per entry, swapped heads, and who trains."""

    adapters: list[tuple[str, list[str]]]  # (block_id, the paths it adapted)
    swapped: list[str]
    frozen: list[str]
    trainable: list[str]
    quantized: list[str] = dataclasses.field(default_factory=list)  # block paths


def quantize_options(spec) -> tuple[str, int, bool]:
    """(format, block size, double quantisation) of a ``quantize_base`` value: ``nf4``
    or a mapping."""
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(QUANT_KEYS))
        if unknown:
            raise ScellisError(
                f"finetune.quantize_base has no key {unknown[0]!r}; its keys are "
                f"{', '.join(QUANT_KEYS)}"
            )
        spec_fmt, block = spec.get("format", "nf4"), spec.get("block_size", DEFAULT_BLOCK)
        double = spec.get("double_quant", False)
    else:
        spec_fmt, block, double = spec, DEFAULT_BLOCK, False
    check_format(spec_fmt, block, double)
    return spec_fmt, block, double


def adapter_config(spec: Mapping, where: str = "adapter"):
    """(entry, Config) of one ``{block_id: peft/..., fields}`` mapping."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("block_id"), str):
        raise ScellisError(f"{where}: an adapter is a mapping with a block_id (e.g. peft/lora)")
    entry = lookup(spec["block_id"], "peft")
    known = {f.name for f in dataclasses.fields(entry.config)}
    values = {}
    for k, v in spec.items():
        if k == "block_id":
            continue
        if k not in known:
            raise ScellisError(f"{where}: {entry.id} has no field {k!r}")
        values[k] = tuple(v) if isinstance(v, list) else v
    try:
        return entry, entry.config(**values)
    except TypeError as e:
        raise ScellisError(f"{where}: {e}") from None


def apply_adapter(model: Module, spec, gen: Generator | None = None) -> list[str]:
    """Attach one adapter (a Config instance or its mapping); the paths it adapted."""
    if isinstance(spec, Mapping):
        entry, cfg = adapter_config(spec)
    else:
        from_cfg = [e for e in entries("peft") if e.config is type(spec)]
        if not from_cfg:
            raise ScellisError(f"{type(spec).__name__} is no registered peft config")
        entry, cfg = from_cfg[0], spec
    return entry.impl(model, cfg, gen=gen)


def apply_finetune(
    model: Module, section: Mapping | None, *, seed: int = 0, encoded: dict | None = None
) -> FinetunePlan:
    """Apply a ``finetune:`` section to ``model`` in place (see the module doc).
    ``encoded``: base weights already quantised while the model was built (see
    ``quantize_base``)."""
    section = dict(section or {})
    unknown = sorted(set(section) - set(KEYS))
    if unknown:
        raise ScellisError(f"unknown finetune key {unknown[0]!r}; the keys are {', '.join(KEYS)}")
    old = {id(p): n for n, p in model.named_parameters()}
    heads = section.get("swap_head") or {}
    if not isinstance(heads, Mapping):
        raise ScellisError("finetune.swap_head maps a block path to the fields to change")
    head_gen = Generator(seed, "head")
    for path, fields in heads.items():
        if not isinstance(fields, Mapping):
            raise ScellisError(f"finetune.swap_head.{path} must map field names to new values")
        swap_head(model, path, head_gen, **dict(fields))
    adapters = section.get("adapters") or []
    if not isinstance(adapters, list):
        raise ScellisError("finetune.adapters is a list of {block_id: peft/..., ...}")
    gen, done = Generator(seed, "peft"), []
    for i, spec in enumerate(adapters):
        entry, cfg = adapter_config(spec, f"finetune.adapters[{i}]")
        done.append((entry.id, entry.impl(model, cfg, gen=gen)))
    params = dict(model.named_parameters())
    pre = [n for n, p in params.items() if id(p) in old]
    freeze = as_patterns(section.get("freeze", ["*"] if adapters else []))
    for n in select(pre, freeze, "pre-trained parameter") if freeze else []:
        params[n].requires_grad = False
    train = as_patterns(section.get("train", []))
    for n in select(pre, train, "pre-trained parameter") if train else []:
        params[n].requires_grad = True
    quantized = []
    if section.get("quantize_base") is not None:
        params = None  # each f32 weight is let go of as it is quantised
        quantized = quantize_base(
            model, *quantize_options(section["quantize_base"]), encoded=encoded
        )
        params = dict(model.named_parameters())
    return FinetunePlan(
        adapters=done,
        swapped=list(heads),
        frozen=[n for n, p in params.items() if not p.requires_grad],
        trainable=[n for n, p in params.items() if p.requires_grad],
        quantized=quantized,
    )


def adapters_of(model: Module) -> list[tuple[str, Module]]:
    """The adapter modules in the tree (anything with a peft ``kind`` and a lowering)."""
    return [(p, m) for p, m in model.named_modules() if getattr(m, "lowering", None)]


def describe(model: Module) -> str:
    """Adapters, their lowering (graph or eager) and the trainable share, as text."""
    params = list(model.named_parameters())
    specs = [m.quant for _, m in model.named_modules() if getattr(m, "quant", None)]
    # a quantised weight counts as the weights it stands for, not its words and scales
    stored = sum(p.numel for n, p in params if not n.endswith(QUANT_PARAMS))
    total = stored + sum(q.numel for q in specs)
    train = sum(p.numel for _, p in params if p.requires_grad)
    frozen = sum(1 for _, p in params if not p.requires_grad)
    found = adapters_of(model)
    share = 100.0 * train / total if total else 0.0
    lines = [
        f"peft: {len(found)} adapted block(s); trainable {train:,} of {total:,} parameters "
        f"({share:.2f}%); {frozen} frozen tensor(s)"
    ]
    qbytes = quantized_bytes(model)
    if qbytes:
        f32_bytes = sum(4 * q.numel for q in specs)
        lines.append(
            f"  base quantised: {len(specs)} weight(s) as {specs[0].fmt}, {qbytes:,} bytes of "
            f"codes and scales (f32: {f32_bytes:,})"
        )
    width = max((len(p) for p, _ in found), default=0)
    for path, m in found:
        how = (
            "lowered: op graph"
            if m.lowering == "graph"
            else "eager path (Python per call; not in the compiled forward)"
        )
        lines.append(f"  {path:<{width}}  {m.kind:<11} {m.describe():<32} {how}")
    return "\n".join(lines)
