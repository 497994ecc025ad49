"""The record's ``finetune:`` section as SML checks it (sml layer): shape of the data only.

``swap_head`` maps block paths to the fields that change (checked against the block's
own fields when the path is a top-level block); ``adapters`` is a list of catalog
entries of kind ``peft`` (``{block_id: peft/lora, ...}``), which ``validate`` checks
like any entry; ``freeze`` and ``train`` are name patterns; ``quantize_base`` is a
format (``nf4``, ``int8``) or ``{format: nf4, block_size: 64}``. Whether a pattern matches
a parameter is known only once the model is built, so the catalog checks that.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..base.quant import DEFAULT_BLOCK, FORMATS, check_format
from .document import Document
from .registry import Registry
from .schema import hint

KEYS = ("swap_head", "adapters", "freeze", "train", "quantize_base")
QUANT_KEYS = ("format", "block_size", "double_quant")


def _quantize(doc: Document, v, out: list) -> None:
    path = ("finetune", "quantize_base")
    fmt, block, at = v, DEFAULT_BLOCK, path
    if isinstance(v, dict):
        for k in v:
            if k not in QUANT_KEYS:
                out.append(
                    doc.diag(
                        path + (k,),
                        f"unknown quantize_base key {k!r}",
                        hint(k, QUANT_KEYS),
                        key=True,
                    )  # fmt: skip
                )
                return
        fmt, block = v.get("format", "nf4"), v.get("block_size", DEFAULT_BLOCK)
        double = v.get("double_quant", False)
        bad_fmt = fmt not in FORMATS
        at = path + (("format",) if bad_fmt and "format" in v else ("block_size",))
        if not bad_fmt and "double_quant" in v and (fmt != "nf4" or not isinstance(double, bool)):
            at = path + ("double_quant",)
    else:
        double = False
    try:
        check_format(fmt, block, double)
    except ScellisError as e:
        out.append(
            doc.diag(
                at,
                str(e),
                "e.g. quantize_base: nf4, or {format: nf4, block_size: 64, double_quant: true}",
            )
        )


def _patterns(doc: Document, key: str, v, out: list) -> None:
    items = [v] if isinstance(v, str) else v
    path = ("finetune", key)
    if not isinstance(items, list):
        out.append(doc.diag(path, f"finetune.{key} is a name pattern or a list of them"))
        return
    for i, p in enumerate(items):
        if not isinstance(p, str) or not p:
            at = path if isinstance(v, str) else path + (i,)
            out.append(doc.diag(at, f"a name pattern must be a non-empty string, got {p!r}"))


def _heads(doc: Document, heads, reg: Registry, out: list) -> None:
    path = ("finetune", "swap_head")
    if not isinstance(heads, dict):
        out.append(
            doc.diag(
                path,
                "swap_head maps a block path to the fields that change",
                "e.g. swap_head: {head: {n_classes: 3}}",
            )
        )
        return
    for name, fields in heads.items():
        p = path + (name,)
        top = str(name).split(".")[0]
        if top not in doc.blocks:
            out.append(
                doc.diag(
                    p,
                    f"swap_head names {name!r}, which is no block",
                    hint(top, list(doc.blocks)),
                    key=True,
                )
            )
            continue
        if not isinstance(fields, dict) or not fields:
            out.append(doc.diag(p, f"swap_head.{name} must map field names to new values"))
            continue
        spec = doc.blocks[top]
        bid = spec.get("block_id") if isinstance(spec, dict) else None
        if name != top or not isinstance(bid, str) or reg.kind_of(bid) != "block":
            continue
        known = [f.name for f in reg.fields(bid)]
        for k in fields:
            if k not in known:
                out.append(
                    doc.diag(p + (k,), f"unknown field {k!r} of {bid}", hint(k, known), key=True)
                )


def check_finetune(doc: Document, reg: Registry, out: list) -> list[tuple]:
    """Diagnostics of the section's structure; returns the paths of its adapter entries."""
    sec = doc.data.get("finetune")
    if not isinstance(sec, dict):
        out.append(
            doc.diag(("finetune",), "finetune must be a mapping", f"its keys: {', '.join(KEYS)}")
        )
        return []
    for k in sec:
        if k not in KEYS:
            out.append(
                doc.diag(("finetune", k), f"unknown finetune key {k!r}", hint(k, KEYS), key=True)
            )
    for k in ("freeze", "train"):
        if k in sec:
            _patterns(doc, k, sec[k], out)
    if "swap_head" in sec:
        _heads(doc, sec["swap_head"], reg, out)
    if "quantize_base" in sec:
        _quantize(doc, sec["quantize_base"], out)
    adapters = sec.get("adapters", [])
    if not isinstance(adapters, list):
        out.append(
            doc.diag(
                ("finetune", "adapters"),
                "adapters is a list of peft entries",
                "e.g. - {block_id: peft/lora, target_modules: [q, v], rank: 4}",
            )
        )
        return []
    return [("finetune", "adapters", i) for i in range(len(adapters))]
