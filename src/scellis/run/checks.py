"""Checks between a record and its data before step 0 (run layer).

Validation sees the record alone; some mistakes only show against the data it names.
A text model whose vocabulary is smaller than the text's alphabet would fail at its
first step with an out-of-range gather (and leave a run behind that cannot resume);
a window the record's inputs declare that differs from the data's would silently
train on the data's. A forecaster whose input declares another number of features than
the data's columns would fail at its first step, and one whose outputs per window differ
from ``data.horizon`` would train on silently broadcast targets. All are refused here,
with the numbers and where to change them.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.peft import apply_finetune
from ..data.csvsource import SeriesDataset
from ..data.text import TextDataset
from ..model.build import RecordModel
from ..model.param_groups import GROUPS, matches, unmatched
from ..runtime.creation import zeros
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
    if isinstance(dataset, SeriesDataset) and dataset.x_train:
        _check_features(record, dataset, where)
        _check_outputs(record, dataset, where)


def _single_input(record: dict):
    """(name, declared shape) of a record's one input, else None."""
    inputs = record.get("inputs") or {}
    if len(inputs) != 1:
        return None
    ((name, spec),) = inputs.items()
    shape = spec.get("shape") if isinstance(spec, dict) else None
    return (name, shape) if isinstance(shape, list) else None


def _check_features(record: dict, dataset: SeriesDataset, where) -> None:
    found = _single_input(record)
    if found is None or len(found[1]) != 3 or not isinstance(found[1][2], int):
        return
    (name, shape), columns = found, dataset.config.features
    if shape[2] != len(columns):
        raise ScellisError(
            f"{where(('inputs', name))}: inputs.{name} declares {shape[2]} features per step "
            f"but the data gives {len(columns)} ({', '.join(columns)}); make them agree"
        )


def _check_outputs(record: dict, dataset: SeriesDataset, where) -> None:
    """The model's outputs per window, from a shapes-only run, against ``data.horizon``."""
    found = _single_input(record)
    outputs = record.get("outputs") or []
    if found is None or len(outputs) != 1:
        return
    x = dataset.x_train[0]
    out = RecordModel(record, device="null")(zeros([2, len(x), len(x[0])], "f32", "null"))
    per_window = list(out.shape[1:])
    horizon = len(dataset.y_train[0])
    if per_window != [horizon]:
        at = ("data", "horizon") if "horizon" in (record.get("data") or {}) else ("data",)
        raise ScellisError(
            f"{where(('blocks', outputs[0]))}: block {outputs[0]!r} gives {per_window} per "
            f"window but data.horizon is {horizon} ({where(at)}): the targets are "
            f"[batch, {horizon}]; make them agree"
        )


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
