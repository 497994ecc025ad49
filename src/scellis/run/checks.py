"""Checks between a record and its data before step 0 (run layer).

Validation sees the record alone; some mistakes only show against the data it names.
A text model whose vocabulary is smaller than the text's alphabet would fail at its
first step with an out-of-range gather (and leave a run behind that cannot resume);
a window the record's inputs declare that differs from the data's would silently
train on the data's. Both are refused here, with the numbers and where to change them.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..data.text import TextDataset


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
