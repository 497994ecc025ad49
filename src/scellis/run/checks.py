"""Checks between a record and its data before step 0 (run layer).

Validation sees the record alone; some mistakes only show against the data it names.
A text model whose vocabulary is smaller than the text's alphabet would fail at its
first step with an out-of-range gather (and leave a run behind that cannot resume);
a window the record's inputs declare that differs from the data's would silently
train on the data's. Both are refused here, with the numbers and where to change them.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.peft import apply_finetune
from ..data.text import TextDataset
from ..model.build import RecordModel
from ..model.param_groups import GROUPS, matches, unmatched
from ..sml import parse


def locator(text: bytes | str, label: str):
    """``where(path)``: a record path's ``file:line:col`` in ``text``."""
    doc = parse(text, label)

    def where(path: tuple) -> str:
        line, col = doc.where(path)
        return f"{label}:{line}:{col}"

    return where


def check_data_fits(record: dict, dataset, where) -> None:
    """Refuse a record whose inputs or vocabulary do not fit ``dataset``; ``where(path)``
    names a record path's place (``file:line:col``)."""
    _check_window(record, dataset, where)
    if isinstance(dataset, TextDataset):
        _check_vocabulary(record, len(dataset.vocab), where)


def _check_window(record: dict, dataset, where) -> None:
    inputs = record.get("inputs") or {}
    if len(inputs) != 1 or not dataset.x_train:
        return
    ((name, spec),) = inputs.items()
    shape = spec.get("shape") if isinstance(spec, dict) else None
    if not isinstance(shape, list) or len(shape) < 2 or not isinstance(shape[1], int):
        return
    have = len(dataset.x_train[0])
    if shape[1] != have:
        key = "context" if isinstance(dataset, TextDataset) else "window"
        raise ScellisError(
            f"{where(('data', key))}: data.{key} makes windows of {have} steps but "
            f"inputs.{name} declares {shape[1]} ({where(('inputs', name))}); make them agree"
        )


def _check_vocabulary(record: dict, alphabet: int, where) -> None:
    for bname, block in (record.get("blocks") or {}).items():
        if not isinstance(block, dict):
            continue
        for key in ("num_embeddings", "vocab_size"):
            size = block.get(key)
            if isinstance(size, int) and size < alphabet:
                raise ScellisError(
                    f"{where(('blocks', bname, key))}: {key} is {size}, but the text has "
                    f"{alphabet} distinct characters; set it to at least {alphabet}"
                )


def param_group_problems(doc) -> list:
    """``optimizer.groups`` whose pattern no trainable parameter falls into, located at the
    pattern:
    the parameter names come from the record's model built on the null device (shapes
    only), so this costs no memory and runs before the plan."""
    opt = doc.data.get("optimizer")
    groups = opt.get(GROUPS) if isinstance(opt, dict) else None
    if not groups:
        return []
    model = RecordModel(doc.data, device="null")
    if doc.data.get("finetune"):  # adapters add parameters; frozen ones join no group
        apply_finetune(model, doc.data["finetune"], seed=0)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    shown = ", ".join(names[:8]) + (f" ... ({len(names)} in all)" if len(names) > 8 else "")
    return [
        doc.diag(
            ("optimizer", GROUPS, i, "params"),
            f"{groups[i]['params']!r} matches no parameter"
            + (" that an earlier group did not take" if _matches_any(groups[i], names) else ""),
            f"the parameters are {shown}",
        )
        for i in unmatched(groups, names)
    ]


def _matches_any(group: dict, names: list[str]) -> bool:
    return any(matches(str(group["params"]), n) for n in names)
